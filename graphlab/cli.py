"""Command line: `python -m graphlab <command>`.

Each command is one `add_<cmd>_parser(subparsers)` that registers its arguments and sets
`handler`; a handler takes the parsed args and returns the exit status. Bad input raises
GraphlabError, which `main` prints on one line (exit status 2, no traceback).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

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


def _int_at_least(minimum: int):
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or number < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value!r}")
        return number

    return parse


def _int_range(minimum: int):
    """'A:B' -> range(A, B + 1), both ends inclusive and >= minimum."""

    def parse(value: str) -> range:
        parts = value.split(":")
        try:
            bounds = [_int_at_least(minimum)(part) for part in parts] if len(parts) == 2 else None
        except argparse.ArgumentTypeError:
            bounds = None
        if bounds is None or bounds[0] > bounds[1]:
            raise argparse.ArgumentTypeError(f"must be START:END with {minimum} <= START <= END, got {value!r}")
        return range(bounds[0], bounds[1] + 1)

    return parse


@contextlib.contextmanager
def _writing_out(path):
    """An OSError while writing --out is bad input (missing folder, no permission), not a crash."""
    try:
        yield
    except OSError as error:
        raise GraphlabError(f"cannot write --out {path!r}: {error.strerror or error}") from None


def _add_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--max-num-batched-tokens",
        type=_int_at_least(1),
        default=None,
        help="token budget per step; only the vLLM V1 engines read it (default 8192)",
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

    # graphlab.v1_runner.V1_ENGINES without importing it (that loads torch): engines in tokens.
    v1_engines = tuple(name for name, engine in ENGINES.items() if engine.batch_unit == "tokens")

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
    parser.add_argument("--engine", choices=V0_POLICIES + v1_engines, default="vllm-0.5.5",
                        help="the target's sizing, default vllm-0.5.5")
    parser.add_argument("--proposer-engine", choices=V0_POLICIES, default=None,
                        help="the draft runner's sizing (default: the same as --engine; vllm-0.6.0 "
                             "under a V1 engine)")
    parser.add_argument("--max-num-seqs", type=_int_at_least(1), default=8, help="default 8")
    parser.add_argument("--num-speculative-tokens", type=_int_at_least(0), default=4, help="k, default 4")
    # Checked by graphlab.spec_decode (importing it here would load torch for every command).
    parser.add_argument("--draft", default="truncated", help="truncated (default), target or random")
    parser.add_argument("--scorer", default=None,
                        help="batch-expansion (default with V0 engines; what vLLM 0.5.5 and 0.6.0 "
                             "ran) or mqa (first in vLLM 0.6.3, which uses it only without CUDA "
                             "graphs: not part of vllm-0.5.5 or 0.6.0; the only one, and the "
                             "default, with V1 engines)")
    parser.add_argument("--max-num-batched-tokens", type=_int_at_least(1), default=None,
                        help="V1 engines' token budget for sizing (default: vLLM's 8192)")
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
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object (engine, capture_sizes, decode steps) instead")
    parser.set_defaults(handler=run_repro)


def run_repro(args) -> int:
    import traceback

    from graphlab.spec_decode import SpecDecodeConfig, run_speculative
    from graphlab.workload import RequestLoad

    config = SpecDecodeConfig(
        max_num_seqs=args.max_num_seqs, num_speculative_tokens=args.num_speculative_tokens,
        engine=args.engine, proposer_engine=args.proposer_engine, scorer=args.scorer,
        temperature=args.temperature, max_model_len=args.max_model_len, seed=args.seed,
        max_num_batched_tokens=args.max_num_batched_tokens)
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
    q = config.num_speculative_tokens + 1
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


def run_bench(args) -> int:
    from graphlab import bench

    with _writing_out(args.out):
        paths = bench.run_bench(args.suite, args.device, args.out)
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
