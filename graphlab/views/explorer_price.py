"""What the explorer's config costs in time: its reachable decode steps priced with measured step
latencies (a bench run's latency.csv), a graph step at its padded size's graph time and an eager
step at its eager time, where the padding waste counts an eager step as zero."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd

from graphlab.errors import GraphlabError
from graphlab.sizing.audit import AuditReport
from graphlab.sizing.planner.inputs import SizeTable, read_latency
from graphlab.sizing.planner.plan import uniform_workload
from graphlab.sizing.planner.result import evaluate


@lru_cache(maxsize=8)
def curves(path: str, batch_unit: str) -> tuple[SizeTable, SizeTable] | None:
    """(graph ms, eager ms) of the one engine `path` measured in batch_unit (rows: a V0 engine,
    tokens: a V1 engine); None when it holds no such rows, or rows of several engines."""
    frame = pd.read_csv(path, usecols=["engine", "batch_unit"])
    engines = frame.engine[frame.batch_unit == batch_unit].unique()
    return read_latency(path, engine=engines[0]) if len(engines) == 1 else None


def _outside(report: AuditReport, workload, tables, source: str) -> str:
    """Which of the config's steps lie outside the measured sizes: graph steps at their padded
    size against the measured graphs, eager steps at n against the measured eager steps."""
    batches = report.policy.dispatch_batches(workload.sizes, report.config, report.capture_sizes)
    on_graph = batches.replays
    unit = report.batch_unit
    for kind, table, sizes in (
        ("graph", tables[0], batches.graph_size[on_graph]),
        ("eager", tables[1], workload.sizes[~on_graph]),
    ):
        lo, hi = int(table.sizes[0]), int(table.sizes[-1])
        out = sizes[(sizes < lo) | (sizes > hi)]
        if len(out):
            first, last = int(out.min()), int(out.max())
            return (
                f"{source} measured {kind} steps at n = {lo}..{hi} {unit}; this config's "
                f"{kind} steps also need n = {first}" + (f"..{last}" if last > first else "")
            )
    return f"{source} does not cover this config's steps"


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
    graph_ms = tables[0]
    policy = report.policy
    workload = uniform_workload(policy, report.config)
    try:
        outcome = evaluate(policy, report.config, report.capture_sizes, workload, latency=tables)
    except GraphlabError:  # a step outside the measured sizes: say which
        return f"not priced: {_outside(report, workload, tables, source)}"
    return (
        f"mean step {outcome.mean_step_ms:.3f} ms on {source} ({graph_ms.kind}): a graph step "
        "at its padded size's time, an eager step at its eager time"
    )
