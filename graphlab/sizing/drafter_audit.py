"""The audit of vLLM V1's draft side (graphlab.sizing.drafter): each kind of draft step's batch
dispatched for every request count a decode step can have, summarised as the target's runner is
(graphlab.sizing.runner_audit); `audit` prints it as its second table and the crash map counts
its graph fraction."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.sizing.config import SizingConfig
from graphlab.sizing.drafter import drafter
from graphlab.sizing.policy import SizingPolicy
from graphlab.sizing.runner_audit import RunnerAudit, summarize


@dataclass(frozen=True)
class DraftStepAudit:
    """One kind of vLLM V1 draft step (graphlab.sizing.drafter): the graphs its dispatcher keeps
    and the outcome of its batch for each request count a decode step can have."""

    name: str
    repeats: int  # steps of this kind per decode step
    query_len: int  # tokens per request
    cudagraph_mode: str  # the mode its dispatcher or cudagraph manager runs
    full_sizes: tuple[int, ...]  # FULL graphs of uniform batches (V2 draft prefill, draft decode)
    runner: RunnerAudit  # capture_sizes: every graph it keeps; outcomes: one per request count
    source: str  # the vLLM function that decides it
    requests: tuple[int, int] | None = None  # the request counts it covers (one k of a schedule)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "repeats": self.repeats,
            "query_len": self.query_len,
            "cudagraph_mode": self.cudagraph_mode,
            "full_sizes": list(self.full_sizes),
            "source": self.source,
            "requests": None if self.requests is None else list(self.requests),
            **self.runner.to_dict(),
        }

    def format_lines(self) -> list[str]:
        tokens = f"{self.query_len} token{'s' if self.query_len > 1 else ''} per request"
        full = f", FULL uniform graphs: {', '.join(map(str, self.full_sizes))}"
        head = (
            f"{self.name} ({self.repeats} per decode step, {tokens}; {self.cudagraph_mode}"
            f"{full if self.full_sizes else ''}):"
        )
        lines = [head, f"  vLLM: {self.source}"]
        return lines + ["  " + line for line in self.runner.format_lines("tokens")]


@dataclass(frozen=True)
class DrafterAudit:
    """vLLM V1's draft side of a config with k > 0 (graphlab.sizing.drafter): one line on the
    rules and each kind of draft step, none where nothing is captured or modelled."""

    method: str | None
    model_runner: str | None
    note: str
    steps: tuple[DraftStepAudit, ...]

    def to_dict(self) -> dict:
        return {
            "speculative_method": self.method,
            "model_runner": self.model_runner,
            "note": self.note,
            "steps": [step.to_dict() for step in self.steps],
        }

    @property
    def graph_fraction(self) -> float:
        """The share of the draft model's forward passes that replay a graph, over every
        reachable decode step (each kind of step counted `repeats` times); NaN without steps."""
        passes = sum(step.repeats * step.runner.summary.num_reachable for step in self.steps)
        graphs = sum(step.repeats * step.runner.summary.num_graph for step in self.steps)
        return graphs / passes if passes else float("nan")

    def format_lines(self) -> list[str]:
        method = "" if self.method is None else f" (speculative method {self.method!r})"
        lines = [f"drafter{method}: {self.note}"]
        for step in self.steps:
            lines += step.format_lines()
        return lines


def drafter_audit(
    policy: SizingPolicy, cfg: SizingConfig, requests: np.ndarray, outcomes: bool = True
):
    """The drafter of cfg on a vLLM V1 engine with k > 0, each step's batch audited for every
    request count in `requests` (None for other engines and k = 0; outcomes=False keeps the
    summaries only)."""
    found = drafter(policy, cfg)
    if found is None:
        return None
    steps = []
    for step in found.steps:
        counts = requests
        if step.requests is not None:
            first, last = step.requests
            counts = requests[(requests >= first) & (requests <= last)]
        batches = step.families.dispatch_batches(
            counts * step.query_len,
            step.uniform_decode,
            np.full(len(counts), step.query_len) if step.uniform_decode else None,
        )
        sizes = sorted(set(step.families.full_sizes) | set(step.families.mixed_sizes))
        runner = RunnerAudit(
            tuple(sizes), batches.outcomes() if outcomes else (), summarize(batches)
        )
        mode = step.families.cudagraph_mode
        steps.append(
            DraftStepAudit(
                step.name,
                step.repeats,
                step.query_len,
                mode,
                step.families.full_sizes,
                runner,
                step.source,
                step.requests,
            )
        )
    return DrafterAudit(found.method, found.model_runner, found.note, tuple(steps))
