"""How long the explorer (graphlab.views.widgets) takes to answer a control's move, per engine.

A move is what a control's callback does: audit the new config, redraw the strip, move the box on
the crash map, encode the PNG and set the summary. A max_num_batched_tokens move (and an engine
switch) also needs that engine's crash map at the new budget: the move answers without it, and
the map follows from a worker thread, timed apart ("map ready"). One of the figures of
``python -m graphlab.bench.timings``.
"""

from __future__ import annotations

import random
import statistics
import time

from graphlab.sizing.engines import TABLE_ENGINES
from graphlab.views.widgets import MAX_K, MAX_NUM_SEQS, explorer, reads_max_num_batched_tokens


def median_move_ms(quick: bool = False, seed: int = 0) -> list[tuple[str, float, str]]:
    """Per engine, the median wall time of random (max_num_seqs, k) moves (200; quick: 5), and
    the median answer to a max_num_batched_tokens move ("T move", V1 engines; 5, quick: 2) and to
    a switch to the engine, with the time until its crash map is drawn ("map ready")."""
    moves, t_moves = (5, 2) if quick else (200, 5)
    rng = random.Random(seed)
    ex = explorer(TABLE_ENGINES[-1])  # every engine of the loop is then a switch
    readings = []

    def timed(control, value) -> tuple[float, float]:
        start = time.perf_counter()
        ex.controls[control].value = value
        answered = time.perf_counter()
        ex.wait()
        return (answered - start) * 1000, (time.perf_counter() - start) * 1000

    for engine in TABLE_ENGINES:
        switch, switch_ready = timed("engine", engine)
        taken = []
        for _ in range(moves):
            control, value = rng.choice(
                [
                    ("max_num_seqs", rng.randint(1, MAX_NUM_SEQS)),
                    ("num_speculative_tokens", rng.randint(0, MAX_K)),
                ]
            )
            taken.append(timed(control, value)[0])
        readings += [
            (engine, statistics.median(taken), "ms"),
            (f"{engine}, switch to it", switch, "ms"),
            (f"{engine}, switch to it, map ready", switch_ready, "ms wall"),
        ]
        if reads_max_num_batched_tokens(engine):
            t = [timed("max_num_batched_tokens", rng.randint(512, 16384)) for _ in range(t_moves)]
            readings += [
                (f"{engine}, T move", statistics.median(a for a, _ in t), "ms"),
                (f"{engine}, T move, map ready", statistics.median(r for _, r in t), "ms wall"),
            ]
    return readings
