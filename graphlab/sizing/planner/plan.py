"""Which CUDA graph sizes a vLLM V1 deployment should capture, for a workload and a budget.

The batches are uniform decode steps: B requests of q = 1 + k tokens each, n = B*q tokens, never
more than max_num_batched_tokens (T). A step of n tokens replays the smallest captured size >= n
(padding it) or runs eagerly above the largest (vllm/v1/cudagraph_dispatcher.py). A workload gives
weights over n; `plan` picks at most G sizes (and/or sizes within a graph-memory budget) that
minimise the expected cost, exactly, by dynamic programming:

- padded tokens (default): cost of a step = padded size - n, 0 when eager. Coverage comes first:
  the largest chosen size is the largest candidate the budget allows, so every batch up to it has a
  graph; among those plans the mean padding waste is minimal.
- step latency: graph latency at the padded size, eager latency above the largest chosen size.

Sizes vLLM keeps: a user-given `cudagraph_capture_sizes` is deduplicated, sorted and cut at T
(`VllmConfig._set_cudagraph_sizes`, vllm/config/vllm.py, vllm 0.33.0); when speculating each size
is rounded up to a multiple of q (`CompilationConfig.adjust_cudagraph_sizes_for_spec_decode`, and
0.12/0.13's model runner at start-up). So the planner proposes multiples of q up to T only.
vLLM 0.34.0 deprecates that list: there the plan is proposed in 0.34.0's own settings, decode
graphs in requests per query length (graphlab.sizing.planner.split_plan).

Candidates: the kept size c(n) = n rounded up to a multiple of q, for each workload n, suffice.
A chosen size s serves the workload sizes in (previous chosen size, s]; the largest of them, n*,
has c(n*) <= s serving the same set, with no more padding on each step (and, when graph latency
and memory do not decrease with size, no more latency or memory), so some optimum uses only c(n).
A plan holds at least one graph (vLLM asserts a non-empty list) and no graph that no step replays.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from graphlab.errors import BadInput, check_instance, check_int, check_json_object
from graphlab.sizing.batches import reachable_batch_sizes
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchUnit, CUDAGraphMode
from graphlab.sizing.drafter import planned_sizes_notes
from graphlab.sizing.engines import (
    GRAPH_POOLS,
    MIB,
    V1_ENGINES,
    SizingPolicy,
    get_engine,
)
from graphlab.sizing.families import families_for

# Inputs and their readers live in `inputs`; re-exported as the planner's API.
from graphlab.sizing.planner.inputs import (
    SizeTable,
    Workload,
    read_batch_sizes,
    read_graph_memory,
    read_latency,
    read_spec_decode_steps,
)
from graphlab.sizing.planner.optimum import (
    MAX_CANDIDATES,
    MAX_PROGRAMME_CELLS,
    Budget,
    best_sizes,
)
from graphlab.sizing.planner.result import Outcome, Plan, default_outcome, evaluate
from graphlab.sizing.planner.split_plan import planned_graphs, split_proposal

# Why `plan` has no sizes for cudagraph_mode NONE (-O0, --enforce-eager set it too).
NO_GRAPHS = (
    "cudagraph_mode NONE: vLLM captures no CUDA graphs (its capture list is empty), so there are "
    "no capture sizes to plan and no flag to print; every step runs eagerly. Plan with another "
    "mode (drop -O0, --enforce-eager or cudagraph_mode NONE) to size graphs"
)
__all__ = [
    "GRAPH_POOLS",
    "MAX_CANDIDATES",
    "MAX_PROGRAMME_CELLS",
    "MIB",
    "V1_ENGINES",
    "Budget",
    "PlanRequest",
    "SizeTable",
    "Workload",
    "plan",
    "plan_for",
    "read_batch_sizes",
    "read_graph_memory",
    "read_latency",
    "read_spec_decode_steps",
    "uniform_workload",
]


@dataclass(frozen=True)
class PlanRequest:
    """What the planner is asked, its engine resolved (`plan` says what each field means);
    GraphlabError naming the first field of the wrong type or value."""

    policy: SizingPolicy
    config: SizingConfig
    workload: Workload | None = None
    budget: Budget = Budget()  # frozen: the shared default cannot change
    memory: SizeTable | None = None
    latency: tuple[SizeTable, SizeTable] | None = None
    max_capture_size: int | None = None
    compilation_config: dict | None = None
    eager_penalty: float | None = None
    same_footing: bool = False  # also plan on the default's terms (`Plan.same_footing`)

    def __post_init__(self) -> None:
        check_instance("policy", self.policy, SizingPolicy)
        check_instance("cfg", self.config, SizingConfig)
        if self.config.num_speculative_tokens_per_batch_size is not None:
            # the planner rounds FULL graphs for one query length; audit models the tiers
            raise BadInput("plan does not model num_speculative_tokens_per_batch_size; use audit")
        check_instance("budget", self.budget, Budget)
        for name, kind in (("workload", Workload), ("memory", SizeTable)):
            if getattr(self, name) is not None:
                check_instance(name, getattr(self, name), kind)
        latency, eager_penalty = self.latency, self.eager_penalty
        if latency is not None:
            pair = isinstance(latency, tuple) and len(latency) == 2
            if not pair or not all(isinstance(table, SizeTable) for table in latency):
                raise BadInput(
                    f"latency must be a (graph, eager) pair of SizeTables (read_latency), "
                    f"got {type(latency).__name__}"
                )
        if self.max_capture_size is not None:  # 0 would read as no cap, 12.5 as a cap of 12
            check_int("max_capture_size", self.max_capture_size, 1)
        if eager_penalty is not None:
            real = isinstance(eager_penalty, (int, float, np.integer, np.floating))
            if isinstance(eager_penalty, bool) or not (real and 0 <= eager_penalty < np.inf):
                raise BadInput(
                    f"eager_penalty must be a finite number >= 0 (tokens), got {eager_penalty!r}"
                )
            if latency is not None:
                raise BadInput(
                    "give latency or eager_penalty, not both: latency prices an eager step from "
                    "the eager curve, eager_penalty in padding tokens"
                )
        check_json_object("compilation_config", self.compilation_config)
        check_instance("same_footing", self.same_footing, bool)


def uniform_workload(policy: SizingPolicy, cfg: SizingConfig) -> Workload:
    """Every uniform decode step B*(1+k) tokens, B = 1..max_num_seqs, that fits in
    max_num_batched_tokens, once."""
    sizes = reachable_batch_sizes(policy, cfg)
    if len(sizes) == 0:
        raise BadInput(
            f"no decode batch is reachable: one request's 1+k = {cfg.decode_query_len} tokens "
            f"exceed max_num_batched_tokens={policy.effective_max_num_batched_tokens(cfg)}"
        )
    return Workload(sizes, np.full(len(sizes), 1 / len(sizes)), "uniform")


def _checked_workload(
    policy, cfg: SizingConfig, workload: Workload | None, budget: Budget, memory: SizeTable | None
) -> Workload:
    """The workload to plan for (uniform when None); GraphlabError for what vLLM or the budget
    refuses."""
    if policy.batch_unit is not BatchUnit.TOKENS:
        raise BadInput(
            f"plan supports the vLLM V1 engines {', '.join(V1_ENGINES)}, got {policy.name!r}"
        )
    error = policy.startup_error(cfg)
    if error and "max_num_batched_tokens" in error:
        raise BadInput(f"vLLM refuses this config: {error}")
    if budget.memory_mib is not None and memory is None:
        raise BadInput("a memory budget needs per-size graph memory (a graph_memory.csv)")
    workload = uniform_workload(policy, cfg) if workload is None else workload
    tokens = policy.effective_max_num_batched_tokens(cfg)
    if workload.sizes[-1] > tokens:
        raise BadInput(
            f"workload batch of {workload.sizes[-1]} tokens exceeds max_num_batched_tokens={tokens}"
        )
    return workload


def plan(
    engine: str | SizingPolicy,
    cfg: SizingConfig,
    workload: Workload | None = None,
    budget: Budget = Budget(),  # noqa: B008 (a frozen dataclass: the shared default cannot change)
    memory: SizeTable | None = None,
    latency: tuple[SizeTable, SizeTable] | None = None,
    max_capture_size: int | None = None,
    compilation_config: dict | None = None,
    eager_penalty: float | None = None,
) -> Plan:
    """The capture sizes minimising the workload's mean cost within the budget (see the module
    docstring).

    memory: per-size graph memory, needed for a memory budget; latency: (graph, eager) tables, which
    make the cost the mean step latency instead of the mean padding waste. Without a graph or
    memory budget, the plan may capture as many graphs as the engine's default does.
    max_capture_size: no graph above it (e.g. the default's largest size, to compare at equal
    coverage). compilation_config: the user's (JSON values), which the plan's flag keeps whole
    (None: no user line; the flag then names cfg's cudagraph_mode). eager_penalty: the padding
    tokens an eager step costs, so that coverage is bought only where it pays (None: coverage
    first, eager steps free).
    GraphlabError for cudagraph_mode NONE, where vLLM captures no graph to plan.
    """
    request = PlanRequest(
        get_engine(engine),
        cfg,
        workload,
        budget,
        memory,
        latency,
        max_capture_size,
        compilation_config,
        eager_penalty,
    )
    return plan_for(request)


def plan_for(request: PlanRequest) -> Plan:
    """`plan` of a request whose engine is resolved."""
    policy, cfg, memory, latency = request.policy, request.config, request.memory, request.latency
    if policy.batch_unit is BatchUnit.TOKENS and policy.cudagraph_mode(cfg) is CUDAGraphMode.NONE:
        raise BadInput(NO_GRAPHS)
    workload = _checked_workload(policy, cfg, request.workload, request.budget, memory)
    budget = request.budget
    drafter_notes = planned_sizes_notes(policy, cfg)  # the deployment's, whatever the plan
    families = families_for(policy, cfg)  # the default's graphs, resolved once
    default_graphs, graph_tokens = planned_graphs(policy, cfg, families)
    if budget.max_graphs is None and budget.memory_mib is None:  # compare like with like by default
        budget = replace(budget, max_graphs=default_graphs)
    tokens = policy.effective_max_num_batched_tokens(cfg)
    chosen, reason = best_sizes(
        workload,
        cfg.decode_query_len,
        tokens,
        budget,
        memory,
        latency,
        request.max_capture_size,
        request.eager_penalty,
        graph_tokens,
    )
    split = None
    if policy.splits_capture_sizes:  # 0.34.0: its own settings, dispatched as it resolves them
        split = split_proposal(policy, cfg, request.compilation_config, chosen)
    plan_outcome = evaluate(
        policy, split.config if split else cfg, chosen, workload, memory, budget.graph_pool,
        latency, own=split is not None,
    )  # fmt: skip
    on_graph = plan_outcome.padded > 0 if split else workload.sizes <= chosen[-1]
    eager = tuple(int(n) for n in workload.sizes[~on_graph])
    default, default_notes = default_outcome(
        policy, cfg, workload, memory, budget.graph_pool, latency
    )
    notes = [table.note for table in (memory, *(latency or ())) if table is not None and table.note]
    notes = list(dict.fromkeys(notes))  # graph and eager latency share their rows' note
    notes += [*drafter_notes, *default_notes]
    if latency is not None:
        notes.append(
            "latency: graph latency at the padded size, eager latency above the largest graph; "
            "candidates are exact while graph latency and memory grow with size"
        )
    result = Plan(
        policy,
        cfg,
        tokens,
        workload,
        budget,
        "latency" if latency else "padding" if request.eager_penalty is None else "padding+eager",
        plan_outcome,
        default,
        eager,
        reason if eager else None,
        memory.kind if memory is not None else None,
        latency[0].kind if latency is not None else None,
        families,
        tuple(notes),
        None if request.compilation_config is None else dict(request.compilation_config),
        request.eager_penalty,
        split,
    )
    if request.same_footing and result.default_full_sizes and not (split and split.decode):
        result = replace(result, same_footing=_at_default_footing(result))
    return result


def _at_default_footing(result: Plan) -> Outcome:
    """The plan on the default's terms: as many graphs as the default has FULL uniform-decode
    graphs, none above its largest capture size (the same coverage: a uniform step no FULL graph
    holds still replays a PIECEWISE one up to there)."""
    request = PlanRequest(
        result.policy,
        result.config,
        result.workload,
        Budget(len(result.default_full_sizes), graph_pool=result.budget.graph_pool),
        max_capture_size=result.default.capture_sizes[-1],
    )
    return plan_for(request).plan
