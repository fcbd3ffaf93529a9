"""The verdicts of measured rows, as values (graphlab.views.verdicts words them): eager over graph
mode counted per path of latency_rows, speculative decoding's time per token, and the guard's
price pooled and counted. Each verdict is graphlab.stats' (slower / faster / no difference
beyond noise, from the interval).
"""

from __future__ import annotations

import pandas as pd

from graphlab.bench.costs import POOLED_WINDOW, guard_run_cost
from graphlab.sizing.dispatch import BatchPath, RunMode
from graphlab.stats import (
    CONFIDENCE,
    NO_DIFFERENCE,
    VERDICTS,
    Comparison,
    compare,
)


def verdict_counts(verdicts: pd.Series) -> dict[str, int]:
    """How many entries give each verdict, in VERDICTS' order, zeros included."""
    counts = verdicts.value_counts()
    return {v: int(counts.get(v, 0)) for v in VERDICTS}


def mode_counts(rows: pd.DataFrame) -> pd.DataFrame:
    """Per (engine, path) of latency_rows' graph-mode rows: the `sizes`, their fewest `repeats`,
    how many eager-over-graph intervals give each verdict (`counts`, each from its own interval)
    and how many exclude 1 (`crossed`)."""
    graph_mode = rows[rows["mode"] == RunMode.GRAPH]
    found = []
    for (engine, path), part in graph_mode.groupby(["engine", "path"], sort=False):
        counts = verdict_counts(part.eager_over_verdict)
        crossed = len(part) - counts[NO_DIFFERENCE]
        found.append(
            dict(engine=engine, path=path, sizes=len(part), repeats=part.repeats.min(),
                 counts=counts, crossed=crossed)
        )  # fmt: skip
    return pd.DataFrame(found, columns=["engine", "path", "sizes", "repeats", "counts", "crossed"])


def throughput_comparisons(
    spec: pd.DataFrame, confidence: float = CONFIDENCE
) -> list[tuple[tuple[int, int], Comparison, str, str]]:
    """Per (max_num_seqs, k) of repeated spec_decode runs (a `run` column; the engines of one
    run measured back to back), each engine's time per token over that of the engine with the
    highest median throughput, paired by run, at `confidence`: ((max_num_seqs, k), Comparison,
    engine, fastest engine)."""
    found = []
    for (seqs, k), cell in spec.groupby(["max_num_seqs", "num_speculative_tokens"]):
        ms = cell.assign(ms_per_token=1e3 / cell.tokens_per_s).pivot(
            index="run", columns="engine", values="ms_per_token"
        )
        best = ms.median().idxmin()
        for other in ms.columns.drop(best):
            comparison = compare(ms[other].to_numpy(), ms[best].to_numpy(), confidence)
            found.append(((seqs, k), comparison, other, best))
    return found


def guard_summary(samples: pd.DataFrame, price: pd.DataFrame, window=POOLED_WINDOW) -> dict:
    """The guard's price (eager_ratio of guard_cost's samples) summed up: `load`, the machine's
    load while timing (machine_load's dict); `pooled_sizes`, the eager sizes in `window`,
    and `pooled`, guard_run_cost over them, each size once (None without such sizes); the
    per-size verdict counts at the `eager` sizes and, as a control for noise, where both
    engines replay the same padded graph (`control`), each as (sizes, counts)."""
    eager = price[price.path == BatchPath.EAGER]
    sizes = [n for n in window if n in eager.index]
    pooled = None
    if sizes:
        pooled = guard_run_cost(samples, dict.fromkeys(sizes, 1))
    control = price[price.graph_size.notna() & price.graph_size.eq(price.covering_graph_size)]
    return dict(
        load=dict(load_avg_1m=samples.load_avg_1m.max(), cpus=int(samples.cpus.iloc[0])),
        pooled_sizes=sizes,
        pooled=pooled,
        eager=(len(eager), verdict_counts(eager.guard_over_verdict)),
        control=(len(control), verdict_counts(control.guard_over_verdict)),
    )
