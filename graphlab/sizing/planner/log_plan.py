"""Capture sizes for the traffic a vLLM log recorded, planned per graph family as vLLM dispatches
its steps and judged by replaying the logged steps through the kit's dispatch.

One capture list serves both of V1's families (graphlab.sizing.families): under a mode with
separate FULL decode graphs a uniform decode step of n = m(1+k) tokens replays the smallest FULL
size >= n (the capture sizes rounded up to multiples of q = 1+k, up to min(largest size, S*q));
every other step the smallest capture size >= n (PIECEWISE; none under FULL_DECODE_ONLY). The log
does not say which steps were uniform: a step vLLM ran FULL under such a mode is one, every other
step is planned as the mixed batch vLLM ran it as.

The cost is padding tokens, each step weighed by its logged count. A step is served by the
smallest chosen size c at or above its threshold: a mixed step of n tokens by c >= n, padding
c - n; a uniform one by c >= n - q + 1 (then round_up(c, q) >= n), padding round_up(c, q) - n
(c - n on the PIECEWISE graph where round_up(c, q) is above S*q, which has no FULL graph).
Both grow with c, so the thresholds and the step sizes (the largest graph decides which steps
run eagerly) are candidates enough, and the interval programme of graphlab.sizing.planner.optimum is
exact. Engines that round the whole list at start-up (0.12, 0.13) and FULL_DECODE_ONLY are planned
on multiples of q only. A step above the largest size runs eagerly: by default the plan may leave
no more steps without a graph than the current sizes do (least padding among those);
`eager_penalty` instead charges each eager step that many padding tokens, trading coverage
against padding.

The plan is replayed beside the current sizes; one that the replay finds worse on the logged
traffic (more padding, or more steps without a graph) is never the headline: the best list
capturing no more graphs than the current sizes is, else the current sizes themselves.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.errors import BadInput, check_int
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import PATH_CODES, CUDAGraphMode
from graphlab.sizing.engines import SizingPolicy, round_up
from graphlab.sizing.families import families_for
from graphlab.sizing.planner.optimum import Budget, optimum
from graphlab.sizing.planner.result import vllm_flag
from graphlab.sizing.planner.split_plan import log_compilation

FAMILIES = ("uniform", "mixed")  # uniform decode steps (FULL graphs), every other step
# Candidates above this are merged onto a coarser grid (the programme holds candidates^2 cells).
MAX_LOG_CANDIDATES = 1500


@dataclass(frozen=True)
class LoggedTraffic:
    """Logged steps per family: token counts (ascending, unique) and step counts."""

    uniform_sizes: np.ndarray
    uniform_counts: np.ndarray
    mixed_sizes: np.ndarray
    mixed_counts: np.ndarray
    source: str

    @classmethod
    def from_frame(cls, frame, mode: CUDAGraphMode | str, source: str) -> LoggedTraffic:
        """graphlab.sizing.log_reader's `VllmLog.frame()` (engines summed): FULL rows under a mode
        with separate FULL decode graphs are uniform decode steps, the rest mixed."""
        separate = CUDAGraphMode(mode).separate_routine()
        uniform = (frame.runtime_mode == CUDAGraphMode.FULL) & separate
        parts = []
        for rows in (frame[uniform], frame[~uniform]):
            counts = rows.groupby("unpadded_tokens")["count"].sum()
            parts += [counts.index.to_numpy(np.int64), counts.to_numpy(np.int64)]
        return cls(*parts, source)

    @property
    def steps(self) -> int:
        return int(self.uniform_counts.sum() + self.mixed_counts.sum())


@dataclass(frozen=True)
class FamilyReplay:
    """One family's logged steps dispatched on one capture list."""

    steps: int
    tokens: int
    padding_tokens: int
    steps_without_graph: int

    def to_dict(self) -> dict:
        return dict(vars(self))


@dataclass(frozen=True)
class Replay:
    """The logged steps dispatched on one capture list by the kit's rule, per family."""

    capture_sizes: tuple[int, ...]
    full_sizes: tuple[int, ...]  # FULL uniform-decode graphs the list gives
    mixed_sizes: tuple[int, ...]  # the mixed family's graphs (PIECEWISE), () when none
    families: dict  # "uniform" | "mixed" -> FamilyReplay
    # (path, graph size) -> steps it served, e.g. ("full", 36): 120
    served: dict

    @property
    def num_graphs(self) -> int:
        """Graphs vLLM captures for the list: FULL decode graphs plus the mixed family's."""
        return len(self.full_sizes) + len(self.mixed_sizes)

    @property
    def padding_tokens(self) -> int:
        return sum(f.padding_tokens for f in self.families.values())

    @property
    def steps_without_graph(self) -> int:
        return sum(f.steps_without_graph for f in self.families.values())

    def worse_than(self, other: Replay) -> bool:
        """More padding or more steps without a graph than `other` on the same traffic."""
        return (
            self.padding_tokens > other.padding_tokens
            or self.steps_without_graph > other.steps_without_graph
        )

    def to_dict(self) -> dict:
        return {
            "capture_sizes": list(self.capture_sizes),
            "num_sizes": len(self.capture_sizes),
            "num_graphs": self.num_graphs,
            "full_sizes": list(self.full_sizes),
            "mixed_sizes": list(self.mixed_sizes),
            "padding_tokens": self.padding_tokens,
            "steps_without_graph": self.steps_without_graph,
            "families": {name: f.to_dict() for name, f in self.families.items()},
            "served": [
                {"path": path, "graph_size": size, "steps": steps}
                for (path, size), steps in sorted(self.served.items(), key=lambda i: i[0][1])
            ],
        }


def replay(policy: SizingPolicy, cfg: SizingConfig, traffic: LoggedTraffic, sizes) -> Replay:
    """Every logged step dispatched on the capture list `sizes` (as given to vLLM; a rounding
    engine rounds it as at start-up), by graphlab.sizing.families' rule."""
    families = families_for(policy, cfg, sizes)
    per_family, served = {}, {}
    for name, ns, counts in (
        ("uniform", traffic.uniform_sizes, traffic.uniform_counts),
        ("mixed", traffic.mixed_sizes, traffic.mixed_counts),
    ):
        batches = families.dispatch_batches(ns, uniform_decode=name == "uniform")
        path, size = [PATH_CODES[c] for c in batches.path], batches.key
        on_graph = size > 0
        per_family[name] = FamilyReplay(
            int(counts.sum()),
            int(counts @ ns),
            int(counts[on_graph] @ (size - ns)[on_graph]),
            int(counts[~on_graph].sum()),
        )
        for p, s, c in zip(path, size.tolist(), counts.tolist()):
            if s:
                served[(p, s)] = served.get((p, s), 0) + c
    return Replay(
        tuple(sorted({int(s) for s in sizes})),
        families.full_sizes,
        families.mixed_sizes,
        per_family,
        served,
    )


@dataclass(frozen=True)
class _Steps:
    """The steps the programme prices: threshold, tokens, count, uniform (FULL-rounded cost)."""

    threshold: np.ndarray
    n: np.ndarray
    count: np.ndarray
    uniform: np.ndarray


def _steps(policy, cfg: SizingConfig, traffic: LoggedTraffic) -> tuple[_Steps, bool]:
    """The priced steps and whether candidates are multiples of q only."""
    mode, q = policy.cudagraph_mode(cfg), cfg.decode_query_len
    decode_only = mode is CUDAGraphMode.FULL_DECODE_ONLY
    multiples = policy.rounds_capture_sizes(cfg) or decode_only
    reach = 0 if multiples or not mode.separate_routine() else q - 1
    u, m = traffic.uniform_sizes, traffic.mixed_sizes
    if decode_only:  # mixed steps run eagerly whatever the sizes
        m = m[:0]
    n = np.concatenate((u, m))
    count = np.concatenate((traffic.uniform_counts, traffic.mixed_counts[: len(m)]))
    uniform = np.concatenate((np.ones(len(u), bool), np.zeros(len(m), bool)))
    threshold = np.maximum(1, n - np.where(uniform, reach, 0))
    order = np.lexsort((n, threshold))
    steps = _Steps(threshold[order], n[order], count[order].astype(float), uniform[order])
    return steps, multiples


def _candidates(steps: _Steps, current, q: int, multiples: bool, tokens: int) -> np.ndarray:
    """The thresholds, the step sizes (a largest graph below a uniform step's n leaves it eager)
    and the current sizes (multiples of q where only those serve), at most `tokens`; on a coarser
    grid when there are more than MAX_LOG_CANDIDATES."""
    given = np.asarray(current, np.int64)
    candidates = np.unique(np.concatenate((steps.threshold, steps.n, given)))
    if multiples:
        candidates = np.unique(round_up(candidates, q))
    candidates = candidates[candidates <= tokens]
    if len(candidates) > MAX_LOG_CANDIDATES:  # keep the current sizes exactly: they stay feasible
        stride = q * -(-int(candidates[-1]) // (q * MAX_LOG_CANDIDATES))
        coarse = np.unique(round_up(candidates, stride))
        candidates = np.union1d(coarse[coarse <= tokens], given)
    return candidates


def _costs(candidates: np.ndarray, steps: _Steps, q: int, full_limit: int) -> np.ndarray:
    """cost[i, j]: padding of the steps with thresholds in (candidates[i-1], candidates[j]] on
    candidates[j] (i = 0: from 0); uniform steps pad to round_up(candidates[j], q), or to
    candidates[j] itself (PIECEWISE) where that FULL size is above full_limit = S*q."""
    covered = np.searchsorted(steps.threshold, candidates, side="right")

    def ranges(values):
        total = np.concatenate(([0.0], np.cumsum(values)))[covered]
        total = np.concatenate(([0.0], total))
        return total[1:][None, :] - total[:-1][:, None]

    mixed_w = ranges(steps.count * ~steps.uniform)
    uniform_w = ranges(steps.count * steps.uniform)
    tokens = ranges(steps.count * steps.n)
    full = round_up(candidates, q)
    uniform_pad = np.where(full <= full_limit, full, candidates)
    cost = candidates[None, :] * mixed_w + uniform_pad[None, :] * uniform_w - tokens
    return np.where(np.triu(np.ones_like(cost, dtype=bool)), cost, np.inf)


@dataclass(frozen=True)
class LogPlan:
    """The plan for a logged traffic beside the current sizes, both replayed."""

    engine: str
    config: SizingConfig
    traffic: LoggedTraffic
    max_graphs: int
    eager_penalty: float | None
    current: Replay
    plan: Replay  # the best of at most max_graphs sizes
    same_count: Replay  # the best capturing no more graphs than the current sizes

    @property
    def headline_kind(self) -> str:
        """ "plan" unless the replay finds it worse than the current sizes; then "same_count"
        (no more graphs than the current sizes) unless that is worse too; then "current"."""
        for kind in ("plan", "same_count"):
            if not self._worse(getattr(self, kind)):
                return kind
        return "current"

    @property
    def headline(self) -> Replay:
        return getattr(self, self.headline_kind)

    def _worse(self, replayed: Replay) -> bool:
        if self.eager_penalty is None:
            return replayed.worse_than(self.current)
        return self.cost(replayed) > self.cost(self.current)

    def cost(self, replayed: Replay) -> float:
        """Padding tokens plus the eager penalty per step without a graph (0 without one)."""
        return replayed.padding_tokens + (self.eager_penalty or 0.0) * replayed.steps_without_graph


def plan_for_log(
    policy: SizingPolicy,
    cfg: SizingConfig,
    traffic: LoggedTraffic,
    current_sizes,
    max_graphs: int | None = None,
    eager_penalty: float | None = None,
) -> LogPlan:
    """The capture list of at most max_graphs sizes with the least padding on the logged traffic,
    leaving no more steps without a graph than current_sizes (the list vLLM captured) do (or, with
    eager_penalty, the least padding plus penalty per eager step), and the best capturing no more
    graphs than current_sizes (the plan too when max_graphs is None); see the module docstring."""
    current = tuple(sorted({int(s) for s in current_sizes}))
    if not current:
        raise BadInput("the log's deployment captured no graph: there are no sizes to plan")
    if max_graphs is not None:
        check_int("max_graphs", max_graphs, 1)
    if eager_penalty is not None and not (0 <= eager_penalty < np.inf):
        raise BadInput(f"eager_penalty must be a finite number >= 0, got {eager_penalty!r}")
    current_replay = replay(policy, cfg, traffic, current)

    def best(graphs: int) -> Replay:
        sizes = _optimal_sizes(policy, cfg, traffic, current, current_replay, graphs, eager_penalty)
        return replay(policy, cfg, traffic, sizes)

    # FULL and PIECEWISE graphs of one size are two graphs: fewer sizes until the count fits
    same = best(len(current))
    for fewer in range(len(current) - 1, 0, -1):
        if same.num_graphs <= current_replay.num_graphs:
            break
        same = best(fewer)
    graphs = max_graphs or len(same.capture_sizes)
    chosen = same if max_graphs is None else best(graphs)
    return LogPlan(policy.name, cfg, traffic, graphs, eager_penalty, current_replay, chosen, same)


def _optimal_sizes(policy, cfg, traffic, current, current_replay, graphs, eager_penalty):
    q, tokens = cfg.decode_query_len, policy.effective_max_num_batched_tokens(cfg)
    steps, multiples = _steps(policy, cfg, traffic)
    if not len(steps.n):  # nothing a graph can serve: the current sizes stand
        return current
    candidates = _candidates(steps, current, q, multiples, tokens)
    cost = _costs(candidates, steps, q, cfg.max_num_seqs * q)
    # Steps above the largest size run eagerly (a uniform step between its threshold and n
    # too, which the cost priced at 0 padding: round_up(c, q) = n there).
    eager_steps = np.concatenate((np.cumsum(steps.count[np.argsort(-steps.n)])[::-1], [0.0]))
    eager = eager_steps[np.searchsorted(np.sort(steps.n), candidates, side="right")]
    if eager_penalty is not None:
        tail = eager_penalty * eager
    else:
        # FULL_DECODE_ONLY's mixed steps are eager whatever the sizes: not priced, not counted
        priced = (
            ("uniform",)
            if policy.cudagraph_mode(cfg) is CUDAGraphMode.FULL_DECODE_ONLY
            else FAMILIES
        )
        allowed = sum(current_replay.families[name].steps_without_graph for name in priced)
        tail = np.where(eager <= allowed, 0.0, np.inf)
        if not np.isfinite(tail).any():
            return current
    chosen = optimum(candidates, cost, tail, np.zeros(len(candidates)), Budget(graphs))
    return tuple(int(s) for s in candidates[chosen])


def log_plan_report(
    log,
    policy: SizingPolicy,
    cfg: SizingConfig,
    notes=(),
    user_compilation: dict | None = None,
    max_graphs: int | None = None,
    eager_penalty: float | None = None,
) -> tuple[LogPlan, dict]:
    """plan_for_log of a read vLLM log (graphlab.sizing.log_reader) beside what vLLM logged, and
    its report: the replays, the headline and the compilation config to set (user_compilation's
    other keys kept); a note first where the kit's replay of the current sizes differs from the
    logged padding. What `plan --vllm-log` prints and vLLM's stat logger plugin writes."""
    error = policy.startup_error(cfg)
    if error:
        raise BadInput(f"{policy.name} refuses the log's config: {error}")
    current = log.value("capture_sizes") or policy.capture_sizes(cfg)
    frame = log.frame()
    traffic = LoggedTraffic.from_frame(frame, policy.cudagraph_mode(cfg), log.source)
    logged = {
        "padding_tokens": int((frame.num_paddings * frame["count"]).sum()),
        "steps_without_graph": int(frame["count"][frame.runtime_mode == CUDAGraphMode.NONE].sum()),
    }
    result = plan_for_log(policy, cfg, traffic, current, max_graphs, eager_penalty)
    replayed = {key: getattr(result.current, key) for key in logged}
    if replayed != logged:  # the kit's rules are not what this vLLM ran: say so before the plan
        notes = (
            f"the kit's replay of the current sizes ({replayed['padding_tokens']} padding tokens, "
            f"{replayed['steps_without_graph']} steps without a graph) differs from what vLLM "
            f"logged ({logged['padding_tokens']}, {logged['steps_without_graph']}); "
            "`audit --vllm-log` shows the rows",
            *notes,
        )
    kind = result.headline_kind
    compilation = None
    if kind != "current":
        sizes = result.headline.capture_sizes
        compilation = log_compilation(policy, cfg, user_compilation, sizes)  # 0.34.0: its own
    data = {
        "source": log.source,
        "vllm_version": log.value("vllm_version"),
        "engine": policy.name,
        "max_num_seqs": cfg.max_num_seqs,
        "num_speculative_tokens": cfg.num_speculative_tokens,
        "max_num_batched_tokens": policy.effective_max_num_batched_tokens(cfg),
        "cudagraph_mode": policy.cudagraph_mode(cfg),
        "steps": traffic.steps,
        "logged": logged,
        "max_graphs": result.max_graphs,
        "eager_penalty": result.eager_penalty,
        "current": result.current.to_dict(),
        "plan": result.plan.to_dict(),
        "same_count": result.same_count.to_dict(),
        "headline_kind": kind,
        "headline": result.headline.to_dict(),
        "compilation_config": compilation,
        "vllm_flag": None if compilation is None else vllm_flag(compilation),
        "notes": list(notes),
    }
    return result, data
