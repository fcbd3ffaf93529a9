"""The planner's result against the engine's default: the fewest graphs that beat it (the plan on
the default's own terms is `Plan.same_footing`), and the price of an eager step in padding tokens
read off measured latency curves, which lets plans of different coverage be compared."""

from __future__ import annotations

import numpy as np

from graphlab.errors import BadInput
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import SizingPolicy, get_engine
from graphlab.sizing.planner.inputs import SizeTable, Workload
from graphlab.sizing.planner.optimum import Budget
from graphlab.sizing.planner.plan import PlanRequest, plan_for
from graphlab.sizing.planner.result import Plan


def fewest_graphs(
    engine: str | SizingPolicy,
    cfg: SizingConfig,
    workload: Workload | None = None,
    latency: tuple[SizeTable, SizeTable] | None = None,
    eager_penalty: float | None = None,
) -> Plan | None:
    """The plan with the fewest graphs that costs less than the engine's default, with fewer
    graphs than the default's FULL uniform-decode graphs (its capture sizes when it has none);
    None when no such count does.

    Cost: mean step latency with latency, padding plus eager_penalty per eager step with one,
    else padding at the default's coverage (no graph above its largest size: an eager step would
    count as free). The optimum's cost never rises with more graphs, so a bisection finds it.
    """
    policy = get_engine(engine)

    def planned(count: int, cap: int | None = None) -> Plan:
        return plan_for(
            PlanRequest(
                policy,
                cfg,
                workload,
                Budget(count),
                latency=latency,
                max_capture_size=cap,
                eager_penalty=eager_penalty,
            )
        )

    first = planned(1)
    graphs = len(first.default_full_sizes or first.default.capture_sizes)
    cap = None
    if latency is None and eager_penalty is None and first.default.capture_sizes:
        cap = first.default.capture_sizes[-1]

    def beating(count: int) -> Plan | None:
        result = planned(count, cap)
        return result if result.objective(result.plan) < result.objective(result.default) else None

    low, high, best = 1, graphs - 1, None
    while low <= high:
        middle = (low + high) // 2
        found = beating(middle)
        if found is None:
            low = middle + 1
        else:
            best, high = found, middle - 1
    return best


def eager_penalty_tokens(latency: tuple[SizeTable, SizeTable]) -> float:
    """The padding tokens an eager step costs on measured curves: the median over the eager
    sizes inside the graph table of (eager ms - graph ms at the same size) / the graph curve's
    ms per token (a least-squares slope). GraphlabError when the curves give no such price."""
    graph_ms, eager_ms = latency
    inside = (eager_ms.sizes >= graph_ms.sizes[0]) & (eager_ms.sizes <= graph_ms.sizes[-1])
    sizes = eager_ms.sizes[inside]
    slope = np.polyfit(graph_ms.sizes, graph_ms.values, 1)[0] if len(graph_ms.sizes) > 1 else 0.0
    if not len(sizes) or slope <= 0:
        raise BadInput(
            f"{graph_ms.what}: no eager penalty in tokens: it needs graph latency that grows with "
            "size and eager rows inside the graph rows' sizes"
        )
    return float(np.median((eager_ms(sizes) - graph_ms(sizes)) / slope))
