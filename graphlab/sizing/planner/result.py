"""What a set of capture sizes costs on a workload (`evaluate`, the same for a plan and the engine's
default), and the planner's result side by side with the default (`Plan`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import DEFAULT_GRAPH_CEILING, MIB, SizingPolicy
from graphlab.sizing.families import GraphFamilies
from graphlab.sizing.planner.inputs import SizeTable, Workload
from graphlab.sizing.planner.optimum import Budget

if TYPE_CHECKING:  # split_plan builds on this module's compilation_with_sizes
    from graphlab.sizing.planner.split_plan import SplitProposal

# --- evaluation (the same for the plan and the engine's default) ----------------------------------


@dataclass(frozen=True)
class Outcome:
    """A set of capture sizes on a workload: per-n padded size (0 when eager) and the means."""

    capture_sizes: tuple[int, ...]
    padded: np.ndarray
    mean_padding_waste: float  # eager steps count 0 (graphlab.sizing.audit's definition)
    graph_fraction: float  # weighted share of steps replaying a graph
    mean_step_ms: float | None
    memory_bytes: float | None


def evaluate(
    policy: SizingPolicy,
    cfg: SizingConfig,
    sizes,
    workload: Workload,
    memory: SizeTable | None = None,
    graph_pool: str = "shared",
    latency: tuple[SizeTable, SizeTable] | None = None,
    own: bool = False,
) -> Outcome:
    """Dispatch every workload n on `sizes` with the engine's own rule and average the costs;
    `own`: cfg itself sets the sizes (vLLM 0.34.0's settings), so dispatch on cfg's graphs."""
    capture = np.asarray(sorted(set(int(s) for s in sizes)), dtype=np.int64)
    batches = policy.dispatch_batches(workload.sizes, cfg, None if own else capture)
    on_graph, graph_size = batches.replays, batches.graph_size
    waste = np.where(on_graph, graph_size - workload.sizes, 0)
    step_ms = None
    if latency is not None:
        graph_ms, eager_ms = latency
        per_step = np.where(
            on_graph,
            graph_ms(np.where(on_graph, graph_size, graph_ms.sizes[0])),
            eager_ms(np.where(on_graph, eager_ms.sizes[0], workload.sizes)),
        )
        step_ms = float(workload.weights @ per_step)
    memory_bytes = None
    if memory is not None:
        own = memory(capture)
        memory_bytes = float(own.max(initial=0.0) if graph_pool == "shared" else own.sum())
    return Outcome(
        tuple(capture.tolist()),
        graph_size,
        float(workload.weights @ waste),
        float(workload.weights[on_graph].sum()),
        step_ms,
        memory_bytes,
    )


def default_outcome(
    policy: SizingPolicy,
    cfg: SizingConfig,
    workload: Workload,
    memory: SizeTable | None = None,
    graph_pool: str = "shared",
    latency: tuple[SizeTable, SizeTable] | None = None,
) -> tuple[Outcome, tuple[str, ...]]:
    """`evaluate` of the engine's default sizing, and notes saying what could not be computed."""
    sizes, notes = policy.capture_sizes(cfg), []
    try:
        default = evaluate(policy, cfg, sizes, workload, memory, graph_pool, latency)
    except GraphlabError as missing:
        # The default's sizes may lie outside a table the plan stays within.
        default = evaluate(policy, cfg, sizes, workload)
        notes.append(f"default's memory/latency not computed: {missing}")
    if not default.capture_sizes:
        notes.append(
            f"the engine's default sizing refuses to start here: {policy.startup_error(cfg)}"
        )
    return default, tuple(notes)


def compilation_with_sizes(user: dict | None, cudagraph_mode: str | None, sizes) -> dict:
    """The user's compilation_config with only the capture sizes changed (and a user-set
    max_cudagraph_capture_size moved to the largest, which vLLM requires to agree); without a
    user's config, the cudagraph_mode when one is set."""
    sizes = [int(s) for s in sizes]
    out = dict(user or {})
    if user is None and cudagraph_mode is not None:
        out["cudagraph_mode"] = cudagraph_mode
    if "max_cudagraph_capture_size" in out:
        out["max_cudagraph_capture_size"] = sizes[-1]
    return out | {"cudagraph_capture_sizes": sizes}


def vllm_flag(compilation: dict) -> str:
    """One --compilation-config flag holding the whole compilation config: vLLM keeps the last of
    a repeated flag (logging "Found duplicate keys"), so a flag of sizes alone would drop the
    user's other settings."""
    return f"--compilation-config '{json.dumps(compilation)}'"


# --- the planner's result -------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    policy: SizingPolicy
    config: SizingConfig
    max_num_batched_tokens: int
    workload: Workload
    budget: Budget
    cost: str
    plan: Outcome
    default: Outcome
    eager_sizes: tuple[int, ...]  # workload sizes left without a graph
    eager_reason: str | None
    memory_kind: str | None
    # The latency.csv's backend: cpu-emulated steps are no GPU measurement.
    latency_backend: str | None
    default_families: GraphFamilies  # of the engine's default sizing at this config
    notes: tuple[str, ...] = field(default=())
    # The user's compilation_config (a `vllm serve` line's, as JSON values), which the flag keeps;
    # None: no line, so the flag names the config's cudagraph_mode itself.
    compilation_config: dict | None = None
    eager_penalty: float | None = None  # padding tokens an eager step costs; None: free
    # vLLM 0.34.0's own settings for the plan (graphlab.sizing.planner.split_plan); None before
    split: SplitProposal | None = None
    # The plan at the default's FULL graph count and coverage, where asked (PlanRequest.
    # same_footing) and the default has FULL graphs sized in tokens; None elsewhere
    same_footing: Outcome | None = None

    def objective(self, outcome: Outcome) -> float:
        """What the plan minimised, for the plan or the default: mean step latency (latency
        cost), else the mean padding plus the eager penalty per eager step."""
        if self.cost == "latency":
            return outcome.mean_step_ms
        return self.mean_cost(outcome)

    def mean_cost(self, outcome: Outcome, eager_penalty: float | None = None) -> float:
        """Mean padding waste plus the eager penalty (the plan's, or the one given) per eager
        step; the waste alone without a penalty."""
        penalty = self.eager_penalty if eager_penalty is None else eager_penalty
        eager = max(0.0, 1.0 - outcome.graph_fraction)
        return outcome.mean_padding_waste + (penalty or 0.0) * eager

    @property
    def engine(self) -> str:
        return self.policy.name

    @property
    def capture_sizes(self) -> tuple[int, ...]:
        return self.plan.capture_sizes

    @property
    def default_full_sizes(self) -> tuple[int, ...]:
        """The FULL uniform-decode graphs of the engine's default (its capture sizes rounded up to
        multiples of 1 + k, graphlab.sizing.families): the graphs `default` replays."""
        return self.default_families.full_sizes

    @property
    def above_ceiling(self) -> tuple[int, ...]:
        """Planned sizes above the engine's default ceiling (DEFAULT_GRAPH_CEILING tokens)."""
        return tuple(s for s in self.capture_sizes if s > DEFAULT_GRAPH_CEILING)

    @property
    def compilation(self) -> dict:
        """`compilation_with_sizes` of the user's config, the config's mode and the plan (on
        0.34.0 its own settings instead)."""
        if self.split is not None:
            return self.split.compilation
        return compilation_with_sizes(
            self.compilation_config, self.config.cudagraph_mode, self.capture_sizes
        )

    @property
    def vllm_flag(self) -> str:
        return vllm_flag(self.compilation)

    @property
    def warnings(self) -> tuple[str, ...]:
        """What a user must not miss: a workload of one step size plans one graph."""
        if len(self.workload.sizes) != 1:
            return ()
        n, top = int(self.workload.sizes[0]), self.capture_sizes[-1]
        if self.split is not None and self.split.decode:  # 0.34.0: the prefill graphs stay
            return (
                f"every step of the workload is {n} tokens, so the plan captures ONE decode "
                f"graph, of {top // self.config.decode_query_len} requests ({top} tokens); with "
                "this flag every other uniform decode step replays a prefill graph or runs "
                "eagerly; if real traffic varies, plan a workload that shows it (--batch-sizes "
                "with counts, --steps, or none for every reachable step)",
            )
        return (
            f"every step of the workload is {n} tokens, so the plan captures ONE graph, of {top} "
            f"tokens; with this flag every batch above {top} tokens (a larger decode step, a "
            "prefill, a mixed batch) runs EAGERLY, each kernel launched from the CPU with no "
            f"graph, and every smaller batch pads up to {top} tokens; if real traffic varies, "
            "plan a workload that shows it (--batch-sizes with counts, --steps, or none for every "
            "reachable step)",
        )

    def to_dict(self) -> dict:
        """A JSON-ready dict: the plan, the engine's default at the same config, and the flag."""
        out = {
            "engine": self.engine,
            "max_num_seqs": self.config.max_num_seqs,
            "num_speculative_tokens": self.config.num_speculative_tokens,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "cudagraph_mode": self.policy.cudagraph_mode(self.config),
            "workload": self.workload.source,
            "cost": self.cost,
            "eager_penalty": self.eager_penalty,
            "max_graphs": self.budget.max_graphs,
            "memory_budget_mib": self.budget.memory_mib,
            "graph_pool": self.budget.graph_pool,
            "memory_kind": self.memory_kind,
            "latency_backend": self.latency_backend,
        }
        for prefix, outcome in (("", self.plan), ("default_", self.default)):
            out |= {
                f"{prefix}capture_sizes": list(outcome.capture_sizes),
                f"{prefix}num_graphs": len(outcome.capture_sizes),
                f"{prefix}mean_padding_waste": outcome.mean_padding_waste,
                f"{prefix}graph_fraction": outcome.graph_fraction,
                f"{prefix}mean_cost": self.mean_cost(outcome),
                f"{prefix}mean_step_ms": outcome.mean_step_ms,
                f"{prefix}memory_mib": None
                if outcome.memory_bytes is None
                else outcome.memory_bytes / MIB,
            }
        if self.split is not None and self.split.decode:  # 0.34.0: graphs in requests at q
            q = self.config.decode_query_len
            out |= {
                "default_num_graphs": len(self.default_full_sizes),
                "decode_request_sizes": [n // q for n in self.capture_sizes],
                "default_decode_request_sizes": [n // q for n in self.default_full_sizes],
            }
        return out | {
            "default_full_sizes": list(self.default_full_sizes),
            "above_ceiling": list(self.above_ceiling),
            "eager_batch_sizes": list(self.eager_sizes),
            "eager_reason": self.eager_reason,
            "compilation_config": self.compilation,
            "vllm_flag": self.vllm_flag,
            "warnings": list(self.warnings),
            "notes": list(self.notes),
        }
