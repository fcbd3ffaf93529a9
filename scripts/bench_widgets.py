#!/usr/bin/env python
"""How long the explorer takes to answer a slider move (graphlab.views.widgets), for S <= 512,
k <= 8.

    python scripts/bench_widgets.py [--moves 200] [--seed 0]

A move is what a slider's callback does: audit the new config, redraw the strip, move the box on
the crash map, encode the PNG and set the summary. The crash map of each engine is computed once
(the first display of that engine, ~0.5 s) and is not part of a move. Prints the machine, then
median, p90 and max per engine over random (S, k) moves.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import time

from graphlab.engine.device import cpu_name
from graphlab.sizing.engines import ENGINES
from graphlab.views.widgets import MAX_K, MAX_NUM_SEQS, explorer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--moves", type=int, default=200, help="slider moves per engine (default 200)"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    ex = explorer()
    print(
        f"machine: {cpu_name()}, python {platform.python_version()}; "
        f"{args.moves} moves per engine, "
        f"S in 1..{MAX_NUM_SEQS}, "
        f"k in 0..{MAX_K}"
    )
    print(f"{'engine':<12} {'median ms':>9} {'p90 ms':>7} {'max ms':>7}")
    worst = 0.0
    for engine in ENGINES:
        ex.controls["engine"].value = engine  # computes this engine's crash map once
        times = []
        for _ in range(args.moves):
            control, value = rng.choice(
                [
                    ("max_num_seqs", rng.randint(1, MAX_NUM_SEQS)),
                    ("num_speculative_tokens", rng.randint(0, MAX_K)),
                ]
            )
            start = time.perf_counter()
            ex.controls[control].value = value
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        worst = max(worst, statistics.median(times))
        print(
            f"{engine:<12} {statistics.median(times):9.1f} {times[int(0.9 * len(times))]:7.1f} "
            f"{times[-1]:7.1f}"
        )
    print(f"slowest engine's median move: {worst:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
