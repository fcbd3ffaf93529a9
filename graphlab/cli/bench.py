"""`bench`: the benchmark sweeps of a suite, each written as a tidy CSV under --out."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphlab.cli.arguments import check_out_folder

# Names only (torch-free); argparse's error for a name outside them is one line.
from graphlab.engine.device import BACKENDS, DEVICES
from graphlab.errors import GraphlabError


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "bench",
        help="sweep batch sizes and write tidy CSVs (copy bandwidth, latency, graph memory, spec "
        "decode, crash map)",
        description=(
            "Runs the benchmark sweeps of a suite and writes copy_bandwidth.csv, latency.csv, "
            "graph_memory.csv, spec_decode.csv, spec_decode_steps.csv and crash_map.csv under "
            "--out, each atomically and as soon as its sweep ends; rows of a sweep still running "
            "go to <name>.partial.csv, so an interrupted run never replaces a complete CSV. One "
            "run per --out: a second run on a folder in use is refused. latency.csv and "
            "graph_memory.csv hold the V0 guard's rows (engine vllm-0.6.0, batch_unit rows) and a "
            "V1 engine's (vllm-0.33.0, batch_unit tokens: 1 + k per request, past its largest "
            "graph). Every row carries provenance (device, backend, "
            "versions, dtype, model, git commit, timestamp); columns in data/README.md."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  %(prog)s --suite quick --out build/bench\n"
            "  %(prog)s --suite full --device cuda --out build/h200"
        ),
    )
    parser.add_argument("--device", choices=DEVICES, default="auto", help="default auto")
    parser.add_argument(
        "--suite",
        choices=("quick", "full"),
        default="quick",
        help="quick: seconds on a CPU; full: V0's whole capture list and the V1 "
        "cliff at S=256, k=3 (default quick)",
    )
    parser.add_argument(
        "--out", default="build/bench", help="folder for the CSVs (default build/bench)"
    )
    parser.add_argument(
        "--backend",
        choices=("auto",) + BACKENDS,
        default="auto",
        help="auto (default): cuda-graph on a GPU, cpu-compiled on a CPU "
        "(torch.compile'd steps, not CUDA graphs); "
        "compiled-cuda-graph adds compiled-graph latency rows beside "
        "cuda-graph ones; cpu-emulated runs every step eagerly (logic only)",
    )
    parser.set_defaults(handler=run)


def _stamps(out: Path) -> dict:
    """(inode, mtime) of each CSV under out: a file replaced by this run gets a new inode."""
    return {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.glob("*.csv")}


def _outcome(out: Path, before: dict, where: str = "") -> str:
    """The CSVs this run wrote, complete (final names) apart from partial (checkpoints)."""
    from graphlab.bench.export import PARTIAL_SUFFIX

    now = _stamps(out)
    new = sorted(name for name, stamp in now.items() if before.get(name) != stamp)
    partial = [name for name in new if name.endswith(PARTIAL_SUFFIX)]
    complete = [name for name in new if name not in partial]
    text = f"complete CSVs{where}: {', '.join(complete) or 'none'}"
    return text + (
        f"; partial (rows so far, not a whole sweep): {', '.join(partial)}" if partial else ""
    )


def run(args) -> int:
    from graphlab.bench.export import check_unlocked, written_files

    out = check_out_folder(args.out)
    check_unlocked(out)  # before torch's import (tens of seconds): a second run is told at once
    from graphlab.bench import sweeps
    from graphlab.views.report import written_summary

    before = _stamps(out) if out.is_dir() else {}
    try:
        paths = sweeps.run_bench(args.suite, args.device, out, backend=args.backend)
    except KeyboardInterrupt:
        print(f"interrupted: {_outcome(out, before, f' under {out}')}", file=sys.stderr)
        return 130
    except OSError as error:  # a full disk, a folder removed meanwhile: bad ground, not a crash
        failed = Path(error.filename).name if error.filename else "a CSV"
        raise GraphlabError(
            f"cannot write {failed} under --out {str(args.out)!r}: "
            f"{error.strerror or error}; {_outcome(out, before)}"
        ) from None
    print(written_summary(written_files(paths)))
    return 0
