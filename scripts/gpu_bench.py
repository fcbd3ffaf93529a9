"""The GPU check's sweeps: decode latency and graph memory per preset, CSVs and a target table.

On the H200: `PYTHONPATH=. python scripts/gpu_bench.py --out $OUT` (bf16, presets 100m and 1b).
Dry run anywhere: `--device cpu --small` (tiny preset, few sizes; rows say cpu-emulated and the
memory is predicted). Writes latency.csv, graph_memory.csv, targets.csv and targets.txt under --out.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd

from graphlab.export import write_csv_atomic
from graphlab.runner import measure_graph_memory, measure_latency, summarize_targets

FULL = dict(presets=("100m", "1b"), batch_sizes=(1, 2, 3, 4, 8, 12, 16, 32, 64, 100, 128, 256),
            repeats=50, warmup=5, max_num_seqs=256, max_seq_len=256)
SMALL = dict(presets=("tiny",), batch_sizes=(1, 3, 8), repeats=3, warmup=1, max_num_seqs=16,
             max_seq_len=32)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder for the CSVs")
    parser.add_argument("--device", default="auto", help="auto | cuda | cpu")
    parser.add_argument("--dtype", default="bfloat16", help="float32 | bfloat16")
    parser.add_argument("--small", action="store_true", help="tiny preset, few sizes (dry run)")
    args = parser.parse_args()
    plan = SMALL if args.small else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    latency, memory = [], []
    for preset in plan["presets"]:
        start = time.perf_counter()
        latency += measure_latency(preset, args.dtype, args.device, plan["batch_sizes"],
                                   plan["repeats"], plan["warmup"], plan["max_seq_len"])
        memory += measure_graph_memory(preset, args.dtype, args.device, plan["max_num_seqs"],
                                       plan["max_seq_len"])
        print(f"{preset}: sweeps done in {time.perf_counter() - start:.1f} s", flush=True)
    latency_df, memory_df = pd.DataFrame(latency), pd.DataFrame(memory)
    write_csv_atomic(latency_df, args.out / "latency.csv")
    write_csv_atomic(memory_df, args.out / "graph_memory.csv")
    # The launch-bound targets use the first preset, the bandwidth floor the last.
    targets = pd.DataFrame(summarize_targets(latency, memory, plan["presets"][0],
                                             plan["presets"][-1]))
    write_csv_atomic(targets, args.out / "targets.csv")
    columns = ["batch_size", "mode", "path", "graph_size", "median_ms", "p90_ms"]
    print(latency_df[["model"] + columns].to_string(index=False))
    table = targets.to_string(index=False, float_format=lambda v: f"{v:.3g}")
    (args.out / "targets.txt").write_text(table + "\n")
    print(table)


if __name__ == "__main__":
    main()
