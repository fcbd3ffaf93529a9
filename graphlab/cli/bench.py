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
            "--out, each atomically and as soon as its sweep ends. latency.csv and "
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


def _csv_stamps(out: Path, names) -> dict:
    return {
        name: (out / f"{name}.csv").stat().st_mtime_ns if (out / f"{name}.csv").is_file() else None
        for name in names
    }


def run(args) -> int:
    from graphlab import bench

    out = check_out_folder(args.out)
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
        raise GraphlabError(
            f"cannot write {failed} under --out {str(args.out)!r}: "
            f"{error.strerror or error}; complete CSVs: {complete()}"
        ) from None
    print(bench.summary(paths))
    return 0
