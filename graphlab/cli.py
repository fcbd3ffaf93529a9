"""Command line: `python -m graphlab <command>`.

Each command is one `add_<cmd>_parser(subparsers)` that registers its arguments and sets
`handler`; a handler takes the parsed args and returns the exit status. Bad input raises
GraphlabError, which `main` prints on one line (exit status 2, no traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
from pathlib import Path

from graphlab.engine.device import DEVICES
from graphlab.errors import GraphlabError, check_int
from graphlab.sizing.audit import MAX_AUDIT_BATCH_SIZES
from graphlab.sizing.crash_maps import CRASH_MAP_MAX_BATCH_SIZES
from graphlab.sizing.engines import ENGINES, SizingConfig, get_engine
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
    check_limits,
)


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors become GraphlabError, so every bad input reads the same way."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A negative range such as -1:4 is a value (refused by its type, by name), not an option.
        self._negative_number_matcher = re.compile(r"^-\d+(:-?\d+)?$|^-\d*\.\d+$")

    def error(self, message):
        raise GraphlabError(message)


def _engine(value: str) -> str:
    try:
        get_engine(value)
    except GraphlabError as error:
        # argparse keeps an ArgumentTypeError's own message (it would replace a ValueError's).
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


# repro's and crash-map's upper bounds (S, k and T: graphlab.sizing.engines's), so a huge value fails at once.
REPRO_MAX_NUM_SEQS_LIMIT = 1024      # repro runs the model: S sequences of KV cache
# A repro decodes about num_requests x max_model_len tokens on the CPU (~1 ms each): keep it to seconds.
REPRO_MAX_NUM_REQUESTS = 256
REPRO_MAX_MODEL_LEN = 1024           # KV cache positions per sequence
REPRO_MAX_TOKENS = 2**14             # num_requests x max_model_len
CRASH_MAP_MAX_NUM_SEQS = 4096        # a crash map sweeps every S in its range: keep it to seconds


def _int_in(minimum: int, maximum: int | None = None):
    """An argparse type: an integer in [minimum, maximum] (no upper bound when maximum is None)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = value  # not an integer: check_int refuses the text as typed
        try:
            return check_int("", number, minimum, maximum)
        except GraphlabError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def _int_range(minimum: int, maximum: int | None = None):
    """'A:B' -> range(A, B + 1), both ends inclusive, within [minimum, maximum]."""
    bound = f"{minimum} <= START <= END" + (f" <= {maximum}" if maximum is not None else "")

    def parse(value: str) -> range:
        parts = value.split(":")
        try:
            bounds = [_int_in(minimum, maximum)(part) for part in parts] if len(parts) == 2 else None
        except argparse.ArgumentTypeError:
            bounds = None
        if bounds is None or bounds[0] > bounds[1]:
            raise argparse.ArgumentTypeError(f"must be START:END with {bound}, got {value!r}")
        return range(bounds[0], bounds[1] + 1)

    return parse


@contextlib.contextmanager
def _writing_out(path):
    """An OSError while writing --out is bad input (missing folder, no permission), not a crash."""
    try:
        yield
    except OSError as error:
        raise GraphlabError(f"cannot write --out {path!r}: {error.strerror or error}") from None


def _check_writable(folder: Path, path) -> None:
    """GraphlabError unless folder is a writable folder or can be created (path: the --out given)."""
    existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise GraphlabError(f"cannot create --out {str(path)!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GraphlabError(f"cannot write --out {str(path)!r}: {str(existing)!r} is not writable")


def _check_out_folder(path) -> Path:
    """--out as a folder: an existing writable folder, or one that can be created. Checked before work."""
    if not str(path):
        raise GraphlabError("--out is empty; give a folder for the CSVs")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise GraphlabError(f"--out {str(path)!r} is an existing file; give a folder for the CSVs")
    _check_writable(out, path)
    return out


def _check_out_file(path) -> Path:
    """--out as a CSV file in a writable folder (created when missing). Checked before work."""
    if not str(path):
        raise GraphlabError("--out is empty; give a CSV file path")
    out = Path(path)
    if out.is_dir():
        raise GraphlabError(f"--out {str(path)!r} is a folder; give a CSV file path")
    _check_writable(out.parent, path)
    return out


def _add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-num-batched-tokens",
        type=_int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        help=f"token budget per step; only the vLLM V1 engines read it (default 8192, at most "
             f"{MAX_NUM_BATCHED_TOKENS_LIMIT})",
    )
    _add_cudagraph_mode(parser)


def _add_cudagraph_mode(parser: argparse.ArgumentParser) -> None:
    from graphlab.sizing.engines import CUDAGRAPH_MODES

    parser.add_argument(
        "--cudagraph-mode", choices=CUDAGRAPH_MODES, default=None,
        help="vLLM's compilation_config.cudagraph_mode (vLLM V1 engines only; default: the "
             "version's, FULL_AND_PIECEWISE)",
    )


# --- audit ----------------------------------------------------------------------------------------

# Exit status of `audit` when the engine would refuse to start with the config.
EXIT_REFUSED = 3


def _capture_sizes(value: str) -> tuple[int, ...]:
    """'1,2,4,8' -> (1, 2, 4, 8), in the given order."""
    try:
        sizes = tuple(int(part) for part in value.split(","))
    except ValueError:
        sizes = ()
    if not sizes or min(sizes) < 1 or max(sizes) > MAX_NUM_BATCHED_TOKENS_LIMIT:
        raise argparse.ArgumentTypeError(
            f"must be comma-separated integers in 1..{MAX_NUM_BATCHED_TOKENS_LIMIT}, got {value!r}")
    return sizes


def add_audit_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="which decode batches get a graph, run eagerly, or crash, for one config",
        description=(
            "Which decode batches get a CUDA graph, run eagerly, or crash, for one engine and config. "
            "Prints the captured sizes, then every batch size the decode steps can produce "
            "(batch-expansion rows, V1 uniform-decode tokens or requests, per engine) with its path "
            "(graph with its padded size, eager, or crash with the exception the engine raises), "
            "then a summary. For V0 engines with speculation the draft runner (proposer) too."
        ),
        epilog=(
            f"exit status: 0 audited; 2 bad input; {EXIT_REFUSED} the engine refuses to start with this "
            "config (the reason is printed first; the JSON's startup_error holds it)."
        ),
    )
    parser.add_argument("--engine", required=True, type=_engine, help=f"one of: {', '.join(ENGINES)}")
    parser.add_argument(
        "--max-num-seqs", type=_int_in(1, MAX_NUM_SEQS_LIMIT), default=None,
        help=f"S, the most sequences scheduled per step (1..{MAX_NUM_SEQS_LIMIT}); required unless "
             f"--vllm-args. An audit lists at most {MAX_AUDIT_BATCH_SIZES} batch sizes (V0: S*(1+k))",
    )
    parser.add_argument(
        "--num-speculative-tokens", type=_int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT), default=None,
        help="k, draft tokens per step (default 0: no speculative decoding)",
    )
    _add_config_arguments(parser)
    parser.add_argument(
        "--cudagraph-capture-sizes", type=_capture_sizes, default=None, metavar="N,N,...",
        help="vLLM's compilation_config.cudagraph_capture_sizes (vLLM V1 engines only)",
    )
    parser.add_argument(
        "--max-cudagraph-capture-size", type=_int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT), default=None, metavar="N",
        help="vLLM's compilation_config.max_cudagraph_capture_size (vLLM V1 engines only)",
    )
    parser.add_argument(
        "--vllm-args", default=None, metavar='"..."',
        help="a `vllm serve` command line: its sizing options (max_num_seqs, max_num_batched_tokens, "
             "speculative_config, capture sizes) are read with the installed vLLM's own parser; "
             "not combinable with the options above",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(handler=run_audit)


def _audit_config(args) -> SizingConfig:
    flags = {
        "max_num_seqs": args.max_num_seqs, "num_speculative_tokens": args.num_speculative_tokens,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "cudagraph_capture_sizes": args.cudagraph_capture_sizes,
        "max_cudagraph_capture_size": args.max_cudagraph_capture_size,
        "cudagraph_mode": args.cudagraph_mode,
    }
    given = [f"--{name.replace('_', '-')}" for name, value in flags.items() if value is not None]
    if args.vllm_args is not None:
        if given:
            raise GraphlabError(f"--vllm-args already sets the config; drop {', '.join(given)}")
        from graphlab.against_vllm.serve_args import config_from_vllm_args

        cfg = config_from_vllm_args(args.vllm_args)
        try:  # the flags' own bounds, which vLLM's parser does not know
            return check_limits(cfg)
        except GraphlabError as error:
            raise GraphlabError(f"--vllm-args: {error}") from None
    if args.max_num_seqs is None:
        raise GraphlabError("--max-num-seqs is required (or give --vllm-args)")
    return check_limits(SizingConfig(**{**flags, "num_speculative_tokens": args.num_speculative_tokens or 0}))


def run_audit(args) -> int:
    from graphlab.sizing.audit import audit

    report = audit(args.engine, _audit_config(args))
    print(json.dumps(report.to_dict()) if args.json else report.format_table())
    return EXIT_REFUSED if report.startup_error else 0


# --- crash-map ------------------------------------------------------------------------------------


def add_crash_map_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "crash-map",
        help="for which (max_num_seqs, k) an engine crashes, and how much of the workload gets graphs",
        description=(
            "Sweeps max_num_seqs x num_speculative_tokens and writes one CSV row per cell: first "
            "crashing batch size and its error, crash count, graph fraction, mean padding waste."
        ),
    )
    parser.add_argument(
        "--engine", default="all", type=lambda v: v if v == "all" else _engine(v),
        help=f"one of: all, {', '.join(ENGINES)} (default all)",
    )
    parser.add_argument(
        "--max-num-seqs-range", type=_int_range(1, CRASH_MAP_MAX_NUM_SEQS), default=range(1, 513),
        help=f"START:END, inclusive (default 1:512, at most {CRASH_MAP_MAX_NUM_SEQS}); the sweep covers at "
             f"most {CRASH_MAP_MAX_BATCH_SIZES} batch sizes, engines x sum of S x sum of (1+k), so that it "
             "ends in seconds",
    )
    parser.add_argument(
        "--k-range", type=_int_range(0, NUM_SPECULATIVE_TOKENS_LIMIT), default=range(0, 9),
        help="num_speculative_tokens START:END, inclusive (default 0:8)",
    )
    _add_config_arguments(parser)
    parser.add_argument("--out", required=True,
                        help="CSV path, written atomically (missing folders are created); rows carry provenance")
    parser.set_defaults(handler=run_crash_map)


def run_crash_map(args) -> int:
    from pathlib import Path

    from graphlab.bench.export import write_csv_atomic
    from graphlab.bench.provenance import computed_provenance, with_provenance
    from graphlab.sizing.crash_maps import crash_map

    _check_out_file(args.out)
    frame = crash_map(
        args.engine, args.max_num_seqs_range, args.k_range, args.max_num_batched_tokens,
        progress=args.engine == "all", cudagraph_mode=args.cudagraph_mode,
    )
    # Computed from the sizing rules, not measured: no backend, dtype or model to name.
    frame = with_provenance(frame, computed_provenance(suite="crash-map"))
    with _writing_out(args.out):
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_csv_atomic(frame, args.out)
    print(f"wrote {len(frame)} rows to {args.out}")
    return 0


# --- repro ----------------------------------------------------------------------------------------


def add_repro_parser(subparsers) -> None:
    from graphlab.sizing.engines import V0_ENGINES
    from graphlab.sizing.engines import V1_ENGINES as v1_engines

    parser = subparsers.add_parser(
        "repro",
        help="speculative decoding on the tiny model: vllm-0.5.5 ends in the V0 KeyError",
        description=(
            "Runs speculative decoding (draft proposals, batch-expansion or MQA scoring, rejection "
            "sampling) over a seeded load with continuous batching, on graphlab's V0-shaped runner "
            "or, for the V1 engines, its V1-shaped runner (graphs keyed by token count, one verify "
            "forward of 1+k tokens per request). With vllm-0.5.5 the first step with all "
            "max_num_seqs sequences speculating sends max_num_seqs*(k+1) rows and the graph lookup "
            "raises KeyError (traceback, exit 1); the other engines finish and print a per-step "
            "table and acceptance metrics (vLLM V1's counts and V0's rates), or with --json one "
            "object: engine, capture_sizes and each decode step's num_tokens, path, graph_size."
        ),
    )
    parser.add_argument("--engine", choices=V0_ENGINES + v1_engines, default="vllm-0.5.5",
                        help="the target's sizing, default vllm-0.5.5")
    parser.add_argument("--proposer-engine", choices=V0_ENGINES, default=None,
                        help="the draft runner's sizing (default: the same as --engine; vllm-0.6.0 "
                             "under a V1 engine)")
    parser.add_argument("--max-num-seqs", type=_int_in(1, REPRO_MAX_NUM_SEQS_LIMIT), default=8, help="default 8")
    parser.add_argument("--num-speculative-tokens", type=_int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT), default=4, help="k, default 4")
    # Checked by graphlab.specdec.engine (importing it here would load torch for every command).
    parser.add_argument("--draft", default="truncated", help="truncated (default), target or random")
    parser.add_argument("--scorer", default=None,
                        help="batch-expansion (default with V0 engines; what vLLM 0.5.5 and 0.6.0 "
                             "ran) or mqa (first in vLLM 0.6.3, which uses it only without CUDA "
                             "graphs: not part of vllm-0.5.5 or 0.6.0; the only one, and the "
                             "default, with V1 engines)")
    parser.add_argument("--max-num-batched-tokens", type=_int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT), default=None,
                        help="V1 engines' token budget for sizing (default: vLLM's 8192)")
    _add_cudagraph_mode(parser)
    parser.add_argument("--num-requests", type=_int_in(1, REPRO_MAX_NUM_REQUESTS), default=16,
                        help=f"default 16, at most {REPRO_MAX_NUM_REQUESTS}; num-requests x max-model-len "
                             f"at most {REPRO_MAX_TOKENS}, so that a run takes seconds")
    parser.add_argument("--max-tokens", type=_int_in(1, REPRO_MAX_MODEL_LEN), default=32,
                        help="longest output of the even-numbered requests (default 32); the "
                             "odd-numbered ones run to --max-model-len")
    parser.add_argument("--max-model-len", type=_int_in(2, REPRO_MAX_MODEL_LEN), default=64,
                        help="KV cache positions per sequence (default 64); no proposals once "
                             "seq_len + k >= max_model_len")
    parser.add_argument("--temperature", type=float, default=0.0,
                        help="0 (default) is greedy; else 0.01..2, the range vLLM's SamplingParams "
                             "samples at (checked by graphlab.specdec.SpecDecodeConfig)")
    parser.add_argument("--seed", type=_int_in(0, 2**32 - 1), default=0, help="default 0")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="default auto")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (engine, capture_sizes, decode steps) instead")
    parser.set_defaults(handler=run_repro)


def run_repro(args) -> int:
    import traceback

    from graphlab.specdec.engine import SpecDecodeConfig, run_speculative
    from graphlab.specdec.requests import RequestLoad

    if args.num_requests * args.max_model_len > REPRO_MAX_TOKENS:
        raise GraphlabError(f"--num-requests {args.num_requests} x --max-model-len {args.max_model_len} = "
                            f"{args.num_requests * args.max_model_len} tokens; at most {REPRO_MAX_TOKENS}")
    sizing = SizingConfig(args.max_num_seqs, args.num_speculative_tokens,
                          args.max_num_batched_tokens, cudagraph_mode=args.cudagraph_mode)
    config = SpecDecodeConfig(
        sizing, engine=args.engine, proposer_engine=args.proposer_engine, scorer=args.scorer,
        temperature=args.temperature, max_model_len=args.max_model_len, seed=args.seed)
    load = RequestLoad(kind="mixed", num_requests=args.num_requests, max_tokens=args.max_tokens,
                       seed=args.seed)
    try:
        engine, output = run_speculative(config, load, draft=args.draft, device=args.device,
                                         log=None if args.json else print)
    except KeyError:
        # A runner's own failed graph lookup (vllm-0.5.5): show it as the engine would.
        traceback.print_exc()
        return 1
    if not args.json:
        print(output.format_report())
        return 0
    # Tokens the target scores, 1 + k per speculating sequence and 1 per other, whatever the scorer.
    q = sizing.decode_query_len
    steps = [{"num_tokens": s.num_speculating * q + s.num_seqs - s.num_speculating,
              "path": s.path, "graph_size": s.graph_size}
             for s in output.steps if s.kind == "decode"]
    print(json.dumps({"engine": config.engine, "capture_sizes": list(engine.runner.capture_sizes),
                      "steps": steps}))
    return 0


# --- bench ----------------------------------------------------------------------------------------


def add_bench_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="sweep batch sizes and write tidy CSVs (copy bandwidth, latency, graph memory, spec "
             "decode, crash map)",
        description=(
            "Runs the benchmark sweeps of a suite and writes copy_bandwidth.csv, latency.csv, "
            "graph_memory.csv, spec_decode.csv, spec_decode_steps.csv and crash_map.csv under "
            "--out, each atomically and as soon as its sweep ends. latency.csv and "
            "graph_memory.csv hold the V0 guard's rows (engine vllm-0.6.0, batch_unit rows) and a "
            "V1 engine's (vllm-0.33.0, batch_unit tokens: 1 + k per request, past its largest "
            "graph). Every row carries provenance (device, backend, "
            "versions, dtype, model, git commit, timestamp); columns in data/README.md."
        ),
    )
    parser.add_argument("--device", choices=DEVICES, default="auto", help="default auto")
    parser.add_argument("--suite", choices=("quick", "full"), default="quick",
                        help="quick: seconds on a CPU; full: V0's whole capture list and the V1 "
                             "cliff at S=256, k=3 (default quick)")
    parser.add_argument("--out", default="build/bench", help="folder for the CSVs (default build/bench)")
    # Names only (graphlab.engine.device.BACKENDS, torch-free); argparse's error is one line.
    from graphlab.engine.device import BACKENDS

    parser.add_argument("--backend", choices=("auto",) + BACKENDS, default="auto",
                        help="auto (default): cuda-graph on a GPU, cpu-compiled on a CPU (torch.compile'd steps, not CUDA graphs); "
                             "compiled-cuda-graph adds compiled-graph latency rows beside "
                             "cuda-graph ones; cpu-emulated runs every step eagerly (logic only)")
    parser.set_defaults(handler=run_bench)


def _csv_stamps(out: Path, names) -> dict:
    return {name: (out / f"{name}.csv").stat().st_mtime_ns if (out / f"{name}.csv").is_file() else None
            for name in names}


def run_bench(args) -> int:
    from graphlab import bench

    out = _check_out_folder(args.out)
    before = _csv_stamps(out, bench.SWEEPS)

    def complete() -> str:
        # Each CSV is replaced atomically when its sweep ends: the ones this run replaced are whole.
        after = _csv_stamps(out, bench.SWEEPS)
        done = [f"{name}.csv" for name in bench.SWEEPS if after[name] not in (None, before[name])]
        return ", ".join(done) if done else "none"

    try:
        paths = bench.run_bench(args.suite, args.device, out, backend=args.backend)
    except KeyboardInterrupt:
        print(f"interrupted: complete CSVs under {out}: {complete()}", file=sys.stderr)
        return 130
    except OSError as error:  # a full disk, a folder removed meanwhile: bad ground, not a crash
        failed = Path(error.filename).name if error.filename else "a CSV"
        raise GraphlabError(f"cannot write {failed} under --out {str(args.out)!r}: {error.strerror or error}; "
                            f"complete CSVs: {complete()}") from None
    print(bench.summary(paths))
    return 0


# --- plan -----------------------------------------------------------------------------------------


def _positive_float(value: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = None
    if number is None or not 0 < number < float("inf"):  # inf and nan too: a budget is a finite amount
        raise argparse.ArgumentTypeError(f"must be a finite number > 0, got {value!r}")
    return number


def add_plan_parser(subparsers) -> None:
    from graphlab.sizing.engines import GRAPH_POOLS, V1_ENGINES
    from graphlab.sizing.plan import MAX_CANDIDATES, MAX_PROGRAMME_CELLS

    parser = subparsers.add_parser(
        "plan",
        help="the capture sizes a vLLM V1 deployment should set, and the flag that sets them",
        description=(
            "Chooses cudagraph_capture_sizes for uniform decode steps of B*(1+k) tokens (B = 1..max_num_seqs, "
            "at most max_num_batched_tokens) under a budget of graphs and/or graph memory, minimising the "
            "mean padding waste (or, with --latency, the mean step latency) exactly, and compares it with "
            "the engine's default sizing at the same config. Without a budget the plan may capture as many "
            f"graphs as the default. Limits, so that a plan takes seconds: at most {MAX_CANDIDATES} candidate "
            f"sizes (multiples of 1+k the workload uses) and graphs x candidates^2 <= {MAX_PROGRAMME_CELLS}."
        ),
    )
    parser.add_argument("--engine", default="vllm-0.33.0", choices=V1_ENGINES, help="default vllm-0.33.0")
    parser.add_argument("--max-num-seqs", required=True, type=_int_in(1, MAX_NUM_SEQS_LIMIT),
                        help=f"S (1..{MAX_NUM_SEQS_LIMIT})")
    parser.add_argument("--num-speculative-tokens", type=_int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT), default=0,
                        help="k (default 0)")
    _add_config_arguments(parser)
    workload = parser.add_mutually_exclusive_group()
    workload.add_argument("--batch-sizes", metavar="CSV",
                          help="observed tokens per decode step: a batch_size column (one step per row) "
                               "and optionally count (default workload: every reachable step once)")
    workload.add_argument("--steps", metavar="CSV",
                          help="a spec_decode_steps.csv; its decode steps as num_seqs + num_speculating*k tokens")
    parser.add_argument("--max-graphs", type=_int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT), default=None, help="at most this many graphs")
    parser.add_argument("--memory-mib", type=_positive_float, default=None,
                        help="graph memory budget in MiB (needs --graph-memory)")
    parser.add_argument("--max-capture-size", type=_int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT), default=None,
                        help="no graph above this many tokens (e.g. the default's largest, to compare at equal coverage)")
    parser.add_argument("--graph-memory", metavar="CSV", help="a graph_memory.csv: bytes per graph size")
    parser.add_argument("--graph-pool", choices=GRAPH_POOLS, default="shared",
                        help="shared (vLLM's; the largest graph dominates) or separate (the sum)")
    parser.add_argument("--latency", metavar="CSV",
                        help="a latency.csv: minimise mean step latency instead of padding waste")
    rows = parser.add_argument_group("bench rows", "which run of a --latency/--graph-memory/--steps CSV holding "
                                     "several to read (runs are never mixed)")
    rows.add_argument("--model", help="the model column's value (e.g. 1b)")
    rows.add_argument("--dtype", help="the dtype column's value (e.g. float16)")
    rows.add_argument("--bench-engine", metavar="ENGINE", help="the engine that measured the latency/memory rows")
    rows.add_argument("--bench-k", type=_int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT), metavar="K",
                      help="the num_speculative_tokens of the latency/memory rows")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(handler=run_plan)


def _same_footing_lines(result, d) -> list[str]:
    """Plan vs default at the default's FULL graph count and largest FULL size, then what the flag
    does to the PIECEWISE graphs and any planned size above vLLM's default ceiling."""
    from graphlab.sizing.plan import DEFAULT_GRAPH_CEILING, at_default_footing

    full, raw = d["default_full_sizes"], d["default_capture_sizes"]
    lines = []
    if full:
        same = at_default_footing(result).plan
        lines += [f"same graph count and coverage ({len(full)} FULL graphs, up to {raw[-1]} tokens): "
                  f"plan mean padding waste {same.mean_padding_waste:.3f} tokens, default "
                  f"{result.default.mean_padding_waste:.3f}; graph fraction {same.graph_fraction:.3f} vs "
                  f"{result.default.graph_fraction:.3f}",
                  f"  plan sizes: {', '.join(map(str, same.capture_sizes))}",
                  f"  default FULL sizes (capture sizes rounded up to multiples of 1+k): "
                  f"{', '.join(map(str, full))}"]
    if raw:
        lines.append(f"PIECEWISE graphs (prefill and mixed batches): the flag replaces the default's {len(raw)} "
                     f"sizes up to {raw[-1]} tokens with the plan's {d['num_graphs']} up to "
                     f"{d['capture_sizes'][-1]}; such a batch pads to the next planned size, and above "
                     "the largest it runs eagerly")
    if d["above_ceiling"]:
        lines.append(f"above vLLM's default ceiling of {DEFAULT_GRAPH_CEILING} tokens: "
                     f"{', '.join(map(str, d['above_ceiling']))}; PR 50488's default sizes above it "
                     "(2176, 6400 tokens) ran H200 CI out of memory and PR 54418 clamped the default "
                     "to 512: check graph memory before capturing them")
    return lines


def _format_plan(result) -> str:
    d = result.to_dict()
    mib = lambda v: "n/a" if v is None else f"{v:.3f} MiB ({d['memory_kind']})"
    ms = lambda v: "" if v is None else f", mean step {v:.4f} ms ({d['latency_backend']})"
    lines = [f"engine {d['engine']}: max_num_seqs={d['max_num_seqs']} num_speculative_tokens="
             f"{d['num_speculative_tokens']} max_num_batched_tokens={d['max_num_batched_tokens']}; workload "
             f"{d['workload']}; cost {d['cost']}; budget: {d['max_graphs']} graphs, "
             f"{'no' if d['memory_budget_mib'] is None else d['memory_budget_mib']} MiB ({d['graph_pool']} pool)"]
    lines += _same_footing_lines(result, d)
    for label, p in (("plan   ", ""), ("default", "default_")):  # at the budget asked for
        lines.append(f"{label}: {d[p + 'num_graphs']} graphs, mean padding waste {d[p + 'mean_padding_waste']:.3f} "
                     f"tokens, graph fraction {d[p + 'graph_fraction']:.3f}, memory {mib(d[p + 'memory_mib'])}"
                     f"{ms(d[p + 'mean_step_ms'])}")
        lines.append(f"  sizes: {', '.join(map(str, d[p + 'capture_sizes']))}")
    if d["eager_batch_sizes"]:
        lines.append(f"eager: {len(d['eager_batch_sizes'])} batch sizes from {d['eager_batch_sizes'][0]} tokens "
                     f"({d['eager_reason']})")
    lines += [f"note: {note}" for note in d["notes"]]
    return "\n".join(lines + [f"vllm: {d['vllm_flag']}"])


def run_plan(args) -> int:
    from graphlab.sizing import plan

    cfg = SizingConfig(args.max_num_seqs, args.num_speculative_tokens, args.max_num_batched_tokens,
                       cudagraph_mode=args.cudagraph_mode)
    if args.memory_mib is not None and args.graph_memory is None:
        raise GraphlabError("--memory-mib needs --graph-memory CSV (bytes per graph size)")
    pick = dict(model=args.model, dtype=args.dtype, engine=args.bench_engine, num_speculative_tokens=args.bench_k)
    workload = (plan.read_batch_sizes(args.batch_sizes) if args.batch_sizes else
                plan.read_spec_decode_steps(args.steps, cfg, args.model, args.dtype) if args.steps else None)
    result = plan.plan(
        args.engine, cfg, workload, plan.Budget(args.max_graphs, args.memory_mib, args.graph_pool),
        memory=plan.read_graph_memory(args.graph_memory, **pick) if args.graph_memory else None,
        latency=plan.read_latency(args.latency, **pick) if args.latency else None, max_capture_size=args.max_capture_size)
    print(json.dumps(result.to_dict()) if args.json else _format_plan(result))
    return 0


# --- entry point ----------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="python -m graphlab",
        description="CUDA graphs and speculative decoding: capture sizes, crashes and coverage per engine.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_audit_parser(subparsers)
    add_crash_map_parser(subparsers)
    add_repro_parser(subparsers)
    add_bench_parser(subparsers)
    add_plan_parser(subparsers)
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser().parse_args(argv)
        return args.handler(args)
    except GraphlabError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # bench names its finished CSVs itself
        print("interrupted", file=sys.stderr)
        return 130
