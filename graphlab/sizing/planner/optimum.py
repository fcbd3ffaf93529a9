"""The capture-size planner's budget and its exact optimum, by dynamic programming over the
candidate sizes.

`Budget` bounds the graphs and/or their memory; `interval_costs` gives the cost of serving the
workload sizes between two chosen sizes with the upper one; `optimum` picks at most G sizes (or,
under a memory budget, sizes within it) that minimise the total (graphlab.sizing.planner.plan's
docstring says why the candidates suffice); `best_sizes` runs the whole programme for a workload:
candidates, the budget's limits, the costs and the optimum.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.errors import BadInput, check_choice, check_int
from graphlab.sizing.engines import GRAPH_POOLS, MIB, round_up
from graphlab.sizing.planner.inputs import SizeTable, Workload

# 2048 candidates: cost tables of 32 MiB each.
MAX_CANDIDATES = 2048
# The programme's work, graphs x candidates^2 table cells: ~2**28 is a few seconds on 2 CPU cores.
MAX_PROGRAMME_CELLS = 2**28


@dataclass(frozen=True)
class Budget:
    """At most max_graphs graphs and/or memory_mib MiB of graph memory (shared pool: the largest
    graph dominates; separate pools: the sum)."""

    max_graphs: int | None = None
    memory_mib: float | None = None
    graph_pool: str = "shared"

    def __post_init__(self) -> None:
        if self.max_graphs is not None:
            check_int("max_graphs", self.max_graphs, 1)
        memory = self.memory_mib
        real = isinstance(memory, (int, float, np.integer, np.floating)) and not isinstance(
            memory, bool
        )
        if memory is not None and not (real and 0 < memory < np.inf):
            raise BadInput(
                f"memory budget must be a finite number > 0 MiB, got {str(self.memory_mib)!r}"
            )
        check_choice("graph_pool", self.graph_pool, GRAPH_POOLS)


def interval_costs(
    candidates: np.ndarray, workload: Workload, graph_ms: SizeTable | None
) -> np.ndarray:
    """cost[i, j]: weighted cost of the workload n in (candidates[i-1], candidates[j]] on graph j
    (i = 0: from 0)."""
    covered = np.searchsorted(workload.sizes, candidates, side="right")
    weight = np.concatenate(([0.0], np.cumsum(workload.weights)))[covered]
    tokens = np.concatenate(([0.0], np.cumsum(workload.weights * workload.sizes)))[covered]
    weight, tokens = np.concatenate(([0.0], weight)), np.concatenate(([0.0], tokens))
    span_w = weight[1:][None, :] - weight[:-1][:, None]
    if graph_ms is None:
        cost = candidates[None, :] * span_w - (tokens[1:][None, :] - tokens[:-1][:, None])
    else:
        cost = graph_ms(candidates)[None, :] * span_w
    return np.where(np.triu(np.ones_like(cost, dtype=bool)), cost, np.inf)  # i must lie below j


def _best_by_count(cost: np.ndarray, max_graphs: int) -> tuple[np.ndarray, np.ndarray]:
    """best[g-1, j]: least cost covering up to candidate j with exactly g graphs, j the largest;
    parents."""
    m = cost.shape[1]
    best = np.full((max_graphs, m), np.inf)
    parent = np.zeros((max_graphs, m), dtype=np.int64)
    best[0] = cost[0]
    for g in range(1, max_graphs):
        total = (
            best[g - 1][:-1, None] + cost[1:]
        )  # row i: previous largest graph i; column: next graph
        parent[g] = np.argmin(total, axis=0)
        best[g] = total[parent[g], np.arange(m)]
    return best, parent


def _walk_back(parent: np.ndarray, g: int, j: int) -> list[int]:
    chosen = [j]
    for level in range(g, 0, -1):
        chosen.append(int(parent[level, chosen[-1]]))
    return chosen[::-1]


def _best_by_memory(
    cost: np.ndarray, own: np.ndarray, tail: np.ndarray, max_graphs: int, budget: float
) -> list[int]:
    """Exact optimum with the sum of graph memory <= budget (separate pools).

    Per number of graphs, every state (largest graph j, memory, cost) on the Pareto front of memory
    against cost; a state at j keeps only the memory that still lets a plan end at a final j
    (finite tail) within the budget. Returns the chosen candidate indices.
    """
    m = cost.shape[1]
    final = np.isfinite(tail)
    least_final_above = np.minimum.accumulate(np.where(final, own, np.inf)[::-1])[::-1]
    room = np.where(final, budget, budget - np.concatenate((least_final_above[1:], [np.inf])))
    js = np.flatnonzero(own <= room)
    levels = [
        (js, own[js], cost[0, js], np.full(len(js), -1))
    ]  # (j, memory, cost, parent index) by j
    for _ in range(1, max_graphs):
        prev_j, prev_mem, prev_cost, _ = levels[-1]
        below = np.searchsorted(prev_j, np.arange(m))  # states with a largest graph below j
        parts = []
        for j in np.flatnonzero(below):
            n = below[j]
            mem, total = prev_mem[:n] + own[j], prev_cost[:n] + cost[prev_j[:n] + 1, j]
            fits = np.flatnonzero(mem <= room[j])
            order = fits[np.lexsort((total[fits], mem[fits]))]
            ordered = total[order]
            # Pareto: keep a state only when it costs less than every state needing no more memory.
            keep = (
                order[np.concatenate(([True], ordered[1:] < np.minimum.accumulate(ordered)[:-1]))]
                if len(order)
                else order
            )
            parts.append((np.full(len(keep), j), mem[keep], total[keep], keep))
        if not parts:
            break
        levels.append(tuple(np.concatenate(column) for column in zip(*parts)))
    values = [
        (float(c + tail[j]), g, i)
        for g, (j_, _, c_, _) in enumerate(levels)
        for i, (j, c) in enumerate(zip(j_, c_))
        if np.isfinite(tail[j])
    ]
    _, g, i = min(values)
    chosen = []
    for level in range(g, -1, -1):
        chosen.append(int(levels[level][0][i]))
        i = int(levels[level][3][i])
    return chosen[::-1]


def optimum(candidates, cost, tail, own, budget: Budget) -> list[int]:
    """Candidate indices of an optimal plan: least cost + tail, fewest graphs among equals."""
    m = len(candidates)
    max_graphs = min(budget.max_graphs or m, m)
    if budget.graph_pool == "separate" and budget.memory_mib is not None:
        return _best_by_memory(cost, own, tail, max_graphs, budget.memory_mib * MIB)
    best, parent = _best_by_count(cost, max_graphs)
    total = best + tail[None, :]
    least = total.min()
    g, j = map(int, np.argwhere(total <= least + 1e-9 * max(1.0, abs(least)))[0])
    return _walk_back(parent, g, j)


def _candidates(workload: Workload, q: int, ceiling: int, bound: str) -> np.ndarray:
    """The kept sizes c(n) (n rounded up to a multiple of q) at most ceiling, the value of the
    setting `bound` names; graphlab.sizing.planner.plan's docstring says why they suffice."""
    candidates = np.unique(round_up(workload.sizes, q))
    if candidates[0] > ceiling:
        raise BadInput(
            f"{bound}={ceiling} is below the smallest graph the workload "
            f"can use ({candidates[0]} tokens, a multiple of 1+k={q})"
        )
    # A multiple of q above T: only the steps above it are lost.
    candidates = candidates[candidates <= ceiling]
    if len(candidates) > MAX_CANDIDATES:  # the programme holds candidates x candidates cost tables
        raise BadInput(
            f"{len(candidates)} candidate graph sizes; plan handles at most {MAX_CANDIDATES} "
            "(lower max_num_seqs, max_num_batched_tokens or max_capture_size)"
        )
    return candidates


def _check_work(num_candidates: int, budget: Budget) -> None:
    """GraphlabError when the programme (graphs x candidates^2 cells) would run for minutes."""
    graphs = min(budget.max_graphs or num_candidates, num_candidates)
    if graphs * num_candidates**2 > MAX_PROGRAMME_CELLS:
        most = max(1, MAX_PROGRAMME_CELLS // num_candidates**2)
        raise BadInput(
            f"{graphs} graphs over {num_candidates} candidate sizes is too large a programme; "
            f"with {num_candidates} candidates plan handles at most {most} graphs "
            "(lower max_graphs, max_num_seqs or max_num_batched_tokens)"
        )


def _affordable(
    candidates: np.ndarray, own: np.ndarray, budget: Budget
) -> tuple[np.ndarray, np.ndarray, str | None]:
    """The candidates a memory budget leaves (all in a separate pool), their memory, and why some
    are eager."""
    if budget.memory_mib is None:
        return candidates, own, None
    affordable = own <= budget.memory_mib * MIB
    if not affordable.any():
        raise BadInput(
            f"memory budget {budget.memory_mib} MiB is below the smallest graph the workload uses "
            f"({candidates[0]} tokens: {own[0] / MIB:.3f} MiB)"
        )
    reason = None
    if not affordable.all():
        reason = (
            f"memory budget {budget.memory_mib} MiB: a graph of {int(candidates[~affordable][0])} "
            f"tokens needs {own[~affordable][0] / MIB:.3f} MiB"
        )
    if budget.graph_pool == "shared":  # the pool holds the largest graph: drop graphs over budget
        return candidates[affordable], own[affordable], reason
    return candidates, own, reason


def _chosen_sizes(
    candidates: np.ndarray,
    own: np.ndarray,
    workload: Workload,
    budget: Budget,
    latency: tuple[SizeTable, SizeTable] | None,
    eager_penalty: float | None = None,
) -> np.ndarray:
    """The optimal capture sizes among the candidates, by padding waste (eager steps free, or
    each costing eager_penalty tokens) or by step latency."""
    graph_ms, eager_ms = latency if latency is not None else (None, None)
    cost = interval_costs(candidates, workload, graph_ms)
    if eager_penalty is not None:  # each eager step costs the penalty in padding tokens
        covered = np.searchsorted(workload.sizes, candidates, side="right")
        above = np.concatenate((np.cumsum(workload.weights[::-1])[::-1], [0.0]))[covered]
        tail = eager_penalty * above
    elif latency is None:
        # Coverage first: the largest affordable candidate is the top graph; eager steps waste 0.
        top = int(np.flatnonzero(own <= (budget.memory_mib or np.inf) * MIB)[-1])
        candidates, cost, own = candidates[: top + 1], cost[: top + 1, : top + 1], own[: top + 1]
        tail = np.full(len(candidates), np.inf)
        tail[-1] = 0.0
    else:
        covered = np.searchsorted(workload.sizes, candidates, side="right")
        eager_step = eager_ms(workload.sizes) * workload.weights
        tail = np.concatenate((np.cumsum(eager_step[::-1])[::-1], [0.0]))[covered]
    return candidates[optimum(candidates, cost, tail, own, budget)]


def best_sizes(
    workload: Workload,
    q: int,
    tokens: int,
    budget: Budget,
    memory: SizeTable | None = None,
    latency: tuple[SizeTable, SizeTable] | None = None,
    max_capture_size: int | None = None,
    eager_penalty: float | None = None,
    graph_tokens: int | None = None,
) -> tuple[np.ndarray, str]:
    """(the optimal capture sizes for the workload's steps of 1+k = q tokens per request, at most
    `tokens` (max_num_batched_tokens), graph_tokens (0.34.0's decode graphs' token limit) and
    max_capture_size, within the budget; why steps above the largest run eagerly)."""
    top = graph_tokens or tokens
    ceiling = min(top, max_capture_size or top)
    bound = (
        "max_capture_size"
        if ceiling == max_capture_size
        else "max_num_batched_tokens"
        if ceiling == tokens
        else "the decode graphs' token limit"
    )
    candidates = _candidates(workload, q, ceiling, bound)
    _check_work(len(candidates), budget)
    own = memory(candidates) if memory is not None else np.zeros(len(candidates))
    candidates, own, reason = _affordable(candidates, own, budget)
    chosen = _chosen_sizes(candidates, own, workload, budget, latency, eager_penalty)
    return chosen, reason or (
        "eager steps are faster than a graph padded over them"
        if latency is not None
        else f"an eager step costs {eager_penalty:g} tokens, less than the padding a graph "
        "over it adds"
        if eager_penalty is not None
        else f"no graph above {bound}={ceiling}"
        if ceiling < tokens
        else f"a graph above {tokens} tokens exceeds max_num_batched_tokens"
    )
