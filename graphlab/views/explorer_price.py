"""What the explorer's config costs in time: its reachable decode steps priced with measured step
latencies (a bench run's latency.csv), a graph step at its padded size's graph time and an eager
step at its eager time, where the padding waste counts an eager step as zero."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from graphlab.errors import GraphlabError
from graphlab.sizing.audit import AuditReport
from graphlab.sizing.plan import uniform_workload
from graphlab.sizing.plan_inputs import SizeTable, read_latency
from graphlab.sizing.plan_result import evaluate


@lru_cache(maxsize=8)
def curves(path: str, batch_unit: str) -> tuple[SizeTable, SizeTable] | None:
    """(graph ms, eager ms) of the one engine `path` measured in batch_unit (rows: a V0 engine,
    tokens: a V1 engine); None when it holds no such rows, or rows of several engines."""
    frame = pd.read_csv(path, usecols=["engine", "batch_unit"])
    engines = frame.engine[frame.batch_unit == batch_unit].unique()
    return read_latency(path, engine=engines[0]) if len(engines) == 1 else None


def price_line(report: AuditReport, latency) -> str:
    """One sentence: the mean step of the config's uniform decode workload priced on `latency`
    (a latency.csv path; None: no sentence), or why it cannot be priced there."""
    if latency is None:
        return ""
    source = f"{Path(latency).parent.name}/{Path(latency).name}"
    if report.startup_error:
        return f"not priced on {source}: the engine refuses this config"
    if report.summary.num_crash:
        return f"not priced on {source}: a config that crashes has no step time"
    tables = curves(str(latency), report.batch_unit)
    if tables is None:
        return f"not priced: {source} holds no {report.batch_unit} rows of one engine"
    if report.summary.num_reachable == 0:
        return f"not priced on {source}: no decode step of this config is reachable"
    graph_ms, eager_ms = tables
    workload = uniform_workload(report.engine, report.config)
    try:
        outcome = evaluate(
            report.engine, report.config, report.capture_sizes, workload, latency=tables
        )
    except GraphlabError:  # a step outside the measured sizes
        return (
            f"not priced: {source} measured n = {eager_ms.sizes[0]}..{eager_ms.sizes[-1]} "
            f"{report.batch_unit} (graphs up to {graph_ms.sizes[-1]}); this config reaches "
            f"n = {int(workload.sizes.max())}"
        )
    return (
        f"mean step {outcome.mean_step_ms:.3f} ms on {source} ({graph_ms.kind}): a graph step "
        "at its padded size's time, an eager step at its eager time"
    )
