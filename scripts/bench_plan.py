"""Time `graphlab.sizing.plan.plan` on one core: S = 256, k = 8, T = 8192 (V1 tokens), G = 40.

Usage: OMP_NUM_THREADS=1 python scripts/bench_plan.py [--repeats 20]
Prints the machine, the median and best wall time of a whole plan (workload, DP, default
comparison), and the same with a shared-pool memory budget and with the separate-pool memory DP.
"""

import argparse
import os
import statistics
import time

import numpy as np

from graphlab.engine.device import cpu_name
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.plan import MIB, Budget, SizeTable, plan


def _time(repeats: int, **kwargs) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        plan("vllm-0.33.0", SizingConfig(256, 8, 8192), **kwargs)
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    print(f"machine: {cpu_name()}, OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}")
    # Illustrative per-graph memory growing linearly with size (bytes); any table over 1..2304 does.
    sizes = np.arange(1, 2305)
    memory = SizeTable(sizes, 1e6 + 2e4 * sizes, "linear memory", "predicted")
    cases = {
        "G=40": dict(budget=Budget(40)),
        "G=40, shared pool <= 30 MiB": dict(budget=Budget(40, 30.0), memory=memory),
        "G=10, separate pools <= 100 MiB": dict(
            budget=Budget(10, 100.0, "separate"), memory=memory
        ),
    }
    for name, kwargs in cases.items():
        repeats = args.repeats if "separate" not in name else max(1, args.repeats // 10)
        median, best = _time(repeats, **kwargs)
        print(
            f"S=256 k=8 T=8192 {name}: median {median * 1e3:.1f} ms, "
            f"best {best * 1e3:.1f} ms over {repeats} runs"
        )
    print(f"(1 MiB = {MIB} bytes)")


if __name__ == "__main__":
    main()
