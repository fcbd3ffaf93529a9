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
import sys
from pathlib import Path

from graphlab.errors import GraphlabError
from graphlab.sizing import ENGINES, SizingConfig, get_policy


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors become GraphlabError, so every bad input reads the same way."""

    def error(self, message):
        raise GraphlabError(message)


def _engine(value: str) -> str:
    try:
        get_policy(value)
    except GraphlabError as error:
        # argparse keeps an ArgumentTypeError's own message (it would replace a ValueError's).
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


# Upper bounds, so a huge value fails at once instead of sweeping for minutes or allocating GBs.
MAX_NUM_SEQS_LIMIT = 65536           # sizing commands (audit, crash-map): S
NUM_SPECULATIVE_TOKENS_LIMIT = 64    # k
MAX_NUM_BATCHED_TOKENS_LIMIT = 2**20  # T
REPRO_MAX_NUM_SEQS_LIMIT = 1024      # repro runs the model: S sequences of KV cache


def _int_in(minimum: int, maximum: int | None = None):
    """An argparse type: an integer in [minimum, maximum] (no upper bound when maximum is None)."""
    allowed = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < minimum or (maximum is not None and number > maximum):
            raise argparse.ArgumentTypeError(f"must be an integer {allowed}, got {value!r}")
        return number

    return parse


def _int_at_least(minimum: int):
    return _int_in(minimum)


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


def _check_out_folder(path) -> Path:
    """--out as a folder: an existing writable folder, or one that can be created. Checked before work."""
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise GraphlabError(f"--out {str(path)!r} is an existing file; give a folder for the CSVs")
    existing = next(p for p in (out, *out.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise GraphlabError(f"cannot create --out {str(path)!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GraphlabError(f"cannot write --out {str(path)!r}: {str(existing)!r} is not writable")
    return out


def _add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-num-batched-tokens",
        type=_int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        help=f"token budget per step; only the vLLM V1 engines read it (default 8192, at most "
             f"{MAX_NUM_BATCHED_TOKENS_LIMIT})",
    )


# --- audit ----------------------------------------------------------------------------------------


def add_audit_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="which decode batches get a graph, run eagerly, or crash, for one config",
        description=(
            "Which decode batches get a CUDA graph, run eagerly, or crash, for one engine and config. "
            "Prints the captured sizes, then every batch size the decode steps can produce "
            "(batch-expansion rows, V1 uniform-decode tokens or requests, per engine) with its path "
            "(graph with its padded size, eager, or crash with the exception the engine raises), "
            "then a summary."
        ),
    )
    parser.add_argument("--engine", required=True, type=_engine, help=f"one of: {', '.join(ENGINES)}")
    parser.add_argument(
        "--max-num-seqs", required=True, type=_int_at_least(1),
        help="S, the most sequences scheduled per step (>= 1)",
    )
    parser.add_argument(
        "--num-speculative-tokens", type=_int_at_least(0), default=0,
        help="k, draft tokens per step (default 0: no speculative decoding)",
    )
    _add_config_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.set_defaults(handler=run_audit)


def _runs(outcomes):
    """Consecutive outcomes with the same path, padded size and error, as (first, last, outcome)."""
    runs = []
    for d in outcomes:
        if runs and (runs[-1][2].path, runs[-1][2].graph_size, runs[-1][2].error) == (d.path, d.graph_size, d.error):
            runs[-1][1] = d.batch_size
        else:
            runs.append([d.batch_size, d.batch_size, d])
    return runs


def _format_audit(report) -> str:
    s = report.summary
    lines = [
        f"engine {report.engine}: max_num_seqs={report.config.max_num_seqs} "
        f"num_speculative_tokens={report.config.num_speculative_tokens} "
        f"max_num_batched_tokens={report.max_num_batched_tokens}",
        *([f"startup error (the engine refuses this config): {report.startup_error}"] if report.startup_error else []),
        f"capture_sizes ({len(report.capture_sizes)}): {', '.join(map(str, report.capture_sizes))}",
        f"batch size ({report.batch_unit})  path   graph_size / error",
    ]
    for first, last, d in _runs(report.outcomes):
        span = str(first) if first == last else f"{first}-{last}"
        detail = d.graph_size if d.path == "graph" else (d.error or "")
        lines.append(f"  {span:>16}  {d.path:<5}  {detail}")
    lines.append(
        f"summary: {s.num_reachable} reachable, {s.num_graph} graph, {s.num_eager} eager, "
        f"{s.num_crash} crash; graph fraction {s.graph_fraction:.3f}; "
        f"mean padding waste {s.mean_padding_waste:.2f}; "
        + (f"first crash at n={s.first_crash_n} ({s.first_crash_error})" if s.first_crash_n else "no crash")
    )
    return "\n".join(lines)


def run_audit(args) -> int:
    from graphlab.audit import audit

    cfg = SizingConfig(args.max_num_seqs, args.num_speculative_tokens, args.max_num_batched_tokens)
    report = audit(args.engine, cfg)
    print(json.dumps(report.to_dict()) if args.json else _format_audit(report))
    return 0


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
        "--max-num-seqs-range", type=_int_range(1), default=range(1, 513),
        help="START:END, inclusive (default 1:512)",
    )
    parser.add_argument(
        "--k-range", type=_int_range(0), default=range(0, 9),
        help="num_speculative_tokens START:END, inclusive (default 0:8)",
    )
    _add_config_arguments(parser)
    parser.add_argument("--out", required=True, help="CSV path, written atomically")
    parser.set_defaults(handler=run_crash_map)


def run_crash_map(args) -> int:
    from graphlab.audit import crash_map
    from graphlab.export import write_csv_atomic

    frame = crash_map(
        args.engine, args.max_num_seqs_range, args.k_range, args.max_num_batched_tokens,
        progress=args.engine == "all",
    )
    with _writing_out(args.out):
        write_csv_atomic(frame, args.out)
    print(f"wrote {len(frame)} rows to {args.out}")
    return 0


# --- repro ----------------------------------------------------------------------------------------


def add_repro_parser(subparsers) -> None:
    from graphlab.sizing import V0_POLICIES

    parser = subparsers.add_parser(
        "repro",
        help="speculative decoding on the tiny model: vllm-0.5.5 ends in the V0 KeyError",
        description=(
            "Runs speculative decoding (draft proposals, batch-expansion or MQA scoring, rejection "
            "sampling) over a seeded load with continuous batching, on graphlab's V0-shaped runner. "
            "With vllm-0.5.5 the first step with all max_num_seqs sequences speculating sends "
            "max_num_seqs*(k+1) rows and the graph lookup raises KeyError (traceback, exit 1); "
            "vllm-0.6.0 and adaptive finish and print a per-step table and acceptance metrics."
        ),
    )
    parser.add_argument("--policy", choices=V0_POLICIES, default="vllm-0.5.5", help="default vllm-0.5.5")
    parser.add_argument("--max-num-seqs", type=_int_at_least(1), default=8, help="default 8")
    parser.add_argument("--num-speculative-tokens", type=_int_at_least(0), default=4, help="k, default 4")
    # Checked by graphlab.spec_decode (importing it here would load torch for every command).
    parser.add_argument("--draft", default="truncated", help="truncated (default), target or random")
    parser.add_argument("--scorer", default="batch-expansion", help="batch-expansion (default) or mqa")
    parser.add_argument("--num-requests", type=_int_at_least(1), default=16, help="default 16")
    parser.add_argument("--max-tokens", type=_int_at_least(1), default=32,
                        help="longest output of the even-numbered requests (default 32); the "
                             "odd-numbered ones run to --max-model-len")
    parser.add_argument("--max-model-len", type=_int_at_least(2), default=64,
                        help="KV cache positions per sequence (default 64); no proposals once "
                             "seq_len + k >= max_model_len")
    parser.add_argument("--temperature", type=float, default=0.0, help="0 (default) is greedy")
    parser.add_argument("--seed", type=_int_at_least(0), default=0, help="default 0")
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="default auto")
    parser.set_defaults(handler=run_repro)


def run_repro(args) -> int:
    import traceback

    from graphlab.spec_decode import format_report, run_speculative

    try:
        _, output = run_speculative(
            args.policy, args.max_num_seqs, args.num_speculative_tokens, args.draft,
            args.num_requests, args.max_tokens, args.max_model_len, args.seed, args.device,
            args.scorer, args.temperature, log=print)
    except KeyError:
        # The runner's own failed graph lookup (vllm-0.5.5): show it as the engine would.
        traceback.print_exc()
        return 1
    print(format_report(output))
    return 0


# --- bench ----------------------------------------------------------------------------------------


def add_bench_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="sweep batch sizes and write tidy CSVs (latency, graph memory, spec decode, crash map)",
        description=(
            "Runs the benchmark sweeps of a suite and writes latency.csv, graph_memory.csv, "
            "spec_decode.csv, spec_decode_steps.csv and crash_map.csv under --out, each atomically "
            "and as soon as its sweep ends. Every row carries provenance (device, backend cuda-graph|cpu-emulated, versions, "
            "dtype, model, git commit, timestamp); columns in data/README.md."
        ),
    )
    parser.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto", help="default auto")
    parser.add_argument("--suite", choices=("quick", "full"), default="quick",
                        help="quick: seconds on a CPU; full: V0's whole capture list (default quick)")
    parser.add_argument("--out", default="build/bench", help="folder for the CSVs (default build/bench)")
    parser.set_defaults(handler=run_bench)


def _csv_stamps(out: Path, names) -> dict:
    return {name: (out / f"{name}.csv").stat().st_mtime_ns if (out / f"{name}.csv").is_file() else None
            for name in names}


def run_bench(args) -> int:
    from graphlab import bench

    out = _check_out_folder(args.out)
    before = _csv_stamps(out, bench.SWEEPS)
    try:
        with _writing_out(args.out):
            paths = bench.run_bench(args.suite, args.device, out)
    except KeyboardInterrupt:
        # Each CSV is replaced atomically when its sweep ends: the ones this run replaced are whole.
        after = _csv_stamps(out, bench.SWEEPS)
        done = [f"{name}.csv" for name in bench.SWEEPS if after[name] not in (None, before[name])]
        print(f"interrupted: complete CSVs under {out}: {', '.join(done) if done else 'none'}",
              file=sys.stderr)
        return 130
    print(bench.summary(paths))
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
