"""How long the explorer (graphlab.views.widgets) takes to answer a slider move, per engine.

A move is what a slider's callback does: audit the new config, redraw the strip, move the box on
the crash map, encode the PNG and set the summary. The crash map of each engine is computed once
(the first display of that engine, ~0.5 s) and is not part of a move. One of the figures of
``python -m graphlab.bench.timings``.
"""

from __future__ import annotations

import random
import statistics
import time

from graphlab.sizing.engines import TABLE_ENGINES
from graphlab.views.widgets import MAX_K, MAX_NUM_SEQS, explorer


def median_move_ms(quick: bool = False, seed: int = 0) -> list[tuple[str, float, str]]:
    """(engine, median wall time of 200 random (max_num_seqs, k) slider moves, "ms"); quick: 5."""
    moves = 5 if quick else 200
    rng = random.Random(seed)
    ex = explorer()
    times = []
    for engine in TABLE_ENGINES:
        ex.controls["engine"].value = engine  # computes this engine's crash map once
        taken = []
        for _ in range(moves):
            control, value = rng.choice(
                [
                    ("max_num_seqs", rng.randint(1, MAX_NUM_SEQS)),
                    ("num_speculative_tokens", rng.randint(0, MAX_K)),
                ]
            )
            start = time.perf_counter()
            ex.controls[control].value = value
            taken.append((time.perf_counter() - start) * 1000)
        times.append((engine, statistics.median(taken), "ms"))
    return times
