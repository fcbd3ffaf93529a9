"""The GPU check's Python steps, each a thin call into graphlab.bench (scripts/gpu_check.sh runs
each under its own timeout, so a hung step costs only its own time).

    sweep:   python scripts/gpu_bench.py sweep --out DIR [--suite full] [--device auto]
                 [--preset 1b] latency graph_memory
             bench.run_bench of the named sweeps of a suite, the suite's preset replaced when
             --preset is given; writes DIR/<sweep>.csv as each sweep finishes.
    report:  python scripts/gpu_bench.py report --out DIR --small 100m --large 1b
             the target table (runner.summarize_targets) from DIR/<small>/ and DIR/<large>/,
             written to DIR/targets.csv, and the speculative-decoding headline from
             DIR/<small>/spec_decode.csv; prints both. A missing CSV is reported, not fatal.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from graphlab import bench
from graphlab.export import write_csv_atomic
from graphlab.runner import summarize_targets

HEADLINE = ["policy", "max_num_seqs", "num_speculative_tokens", "tokens_per_s",
            "scorer_graph_fraction", "num_target_graphs", "target_graph_MiB", "memory_kind",
            "mean_acceptance_length"]


def run_sweeps(args) -> None:
    suite = bench.get_suite(args.suite)
    if args.preset:
        suite = bench.replace_suite(suite, preset=args.preset)
    start = time.perf_counter()
    paths = bench.run_bench(suite, args.device, args.out, sweeps=args.sweeps, progress=False)
    print(bench.summary(paths))
    print(f"{', '.join(args.sweeps)} ({suite.name} suite) in {time.perf_counter() - start:.1f} s")


def _read(out: Path, name: str) -> pd.DataFrame | None:
    if (out / name).is_file():
        return pd.read_csv(out / name)
    print(f"missing: {name} (its step failed or timed out; see steps.tsv and logs/)")
    return None


def report(args) -> int:
    """Print the target table and the speculative-decoding headline; 1 when anything is missing."""
    status = 0
    latency, memory = [], []
    for preset in dict.fromkeys((args.small, args.large)):
        for name, rows in (("latency", latency), ("graph_memory", memory)):
            frame = _read(args.out, f"{preset}/{name}.csv")
            if frame is None:
                status = 1
            else:
                rows += frame.to_dict("records")
    if status == 0:
        targets = pd.DataFrame(summarize_targets(latency, memory, args.small, args.large))
        write_csv_atomic(targets, args.out / "targets.csv")
        print("== targets (DESIGN.md §6)")
        print(targets.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    spec = _read(args.out, f"{args.small}/spec_decode.csv")
    if spec is None:
        return 1
    spec["target_graph_MiB"] = spec["target_graph_memory_bytes"] / 2**20
    print(f"== speculative decoding, guard (vllm-0.6.0) vs adaptive: {args.small} "
          f"{spec['dtype'].iloc[0]}, {spec['backend'].iloc[0]} on {spec['device'].iloc[0]}")
    print(spec[HEADLINE].to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    return status


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    sweep = steps.add_parser("sweep", help="run sweeps of a bench suite")
    sweep.add_argument("--out", type=Path, required=True, help="folder for the CSVs")
    sweep.add_argument("--suite", default="full", help="a graphlab.bench suite (default full)")
    sweep.add_argument("--device", default="auto", help="auto | cuda | cpu")
    sweep.add_argument("--preset", help="model preset replacing the suite's (e.g. 1b)")
    sweep.add_argument("sweeps", nargs="+", choices=bench.SWEEPS)
    summary = steps.add_parser("report", help="target table and speculative-decoding headline")
    summary.add_argument("--out", type=Path, required=True, help="folder holding <preset>/")
    summary.add_argument("--small", default="100m", help="preset of the launch-bound targets")
    summary.add_argument("--large", default="1b", help="preset held against the bandwidth floor")
    args = parser.parse_args()
    if args.step == "sweep":
        run_sweeps(args)
        return 0
    return report(args)


if __name__ == "__main__":
    raise SystemExit(main())
