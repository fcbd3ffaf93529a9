"""Interleaved sampling: the one way graphlab times steps it compares.

`interleaved_steps` takes the compared steps (runners' execute_model) in turn, the order rotated
each round (AB BA..., ABC BCA CAB...), after warm-up rounds, so a round's samples share the
machine's load of its moment and no step always takes one place, and samples sequentially: more
rounds until the ratio is decided (its bootstrap interval excludes 1 or lies within +-precision of
it: graphlab.stats.Comparison.decided) or a cap is reached, each look's interval at the level that
keeps all looks together at 95% (graphlab.stats.interim_confidence); `runs_until_decided` does
the same with whole runs; `sample_rows` keeps every sample (long format); `compared_steps` turns
one batch's samples into rows with medians, intervals and the verdict of graphlab.stats.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphlab.engine.device import Backend
from graphlab.errors import BadInput, check_float, check_int
from graphlab.stats import (
    EFFECT,
    MIN_SAMPLES,
    compare,
    decided,
    interim_confidence,
    machine_load,
    median_ci,
)


@dataclass(frozen=True)
class Timing:
    """How a bench times the steps it compares, settled at the entry point: on `backend` (a
    resolved Backend: graphlab.engine.device.resolve_backend), `repeats` rounds after `warmup`
    untimed ones, then, with `precision`, more rounds until decided or `max_repeats` (None:
    4 x repeats); precision None: exactly `repeats` rounds."""

    backend: Backend
    repeats: int = 10
    warmup: int = 3
    precision: float | None = EFFECT
    max_repeats: int | None = None

    def __post_init__(self):
        if not isinstance(self.backend, Backend):
            raise BadInput(
                f"Timing's backend must be a resolved Backend "
                f"(graphlab.engine.device.resolve_backend), got {self.backend!r}"
            )
        check_int("repeats", self.repeats, 1)
        check_int("warmup", self.warmup, 0)
        if self.precision is not None:
            check_float("precision (or None)", self.precision, 0.0, 1.0)
        if self.max_repeats is not None:
            check_int("max_repeats (or None)", self.max_repeats, self.repeats)


def interleaved_steps(steps: dict, batch, timing: Timing) -> dict[str, list]:
    """{label: StepRecords} of each step function (a runner's execute_model, or one with its
    num_scheduled_tokens bound) on one batch, taken in turn after `timing.warmup` rounds, the
    order rotated each round (AB BA AB...): `timing.repeats` rounds, then, with a precision,
    more rounds until every other step's median over the first's is decided (its bootstrap
    interval excludes 1, or lies within +-precision of the ratio) or max_repeats rounds are
    taken."""
    repeats, precision = timing.repeats, timing.precision
    for _ in range(timing.warmup):
        for step in steps.values():
            step(*batch)
    records = {label: [] for label in steps}
    first, *others = list(records) or [None]

    order = list(steps.items())

    def rounds(n: int) -> None:
        for _ in range(n):
            # Rotated each round (AB BA, ABC BCA CAB): whatever a place in the round gains or
            # loses, each step's samples get it equally.
            start = len(next(iter(records.values()), [])) % max(len(order), 1)
            for label, step in order[start:] + order[:start]:
                records[label].append(step(*batch)[1])

    rounds(repeats)
    limit, more = timing.max_repeats or 4 * repeats, max(repeats // 2, 1)
    level = interim_confidence(1 + -(-(limit - repeats) // more))  # one look per batch of rounds
    while (
        precision is not None
        and others
        and len(records[first]) < limit
        and not all(
            decided(compare(step_times(records[k]), step_times(records[first]), level), precision)
            for k in others
        )
    ):
        rounds(min(more, limit - len(records[first])))
    return records


def runs_until_decided(run, comparisons, first=None, min_runs: int = MIN_SAMPLES, max_runs=None):
    """Whole runs sampled sequentially, for comparisons whose pairs are runs (one run measures
    every side back to back): [frame of run 0, 1, ...], `first` as run 0 when given, then calls
    of run() until `comparisons(frames, confidence)` (a list of Comparisons at that level) are
    all decided (stats.decided) after at least min_runs, or max_runs (default 2 x min_runs) are
    taken; one look per run from min_runs on (stats.interim_confidence)."""
    frames = [first] if first is not None else []
    limit = max_runs or 2 * min_runs
    level = interim_confidence(max(limit - min_runs + 1, 1))
    while len(frames) < limit and (
        len(frames) < min_runs or not all(decided(c) for c in comparisons(frames, level))
    ):
        frames.append(run())
    return frames


def step_times(steps) -> list[float]:
    return [step.time_ms for step in steps]


def sample_rows(steps: dict[str, list], label: str, **fixed) -> list[dict]:
    """Long format: one row per timed step, `label` naming its runner, `sample` its round,
    `graph_size` the graph it replayed (None: eager), time_ms on `clock` and wall_ms."""
    return [
        dict(
            fixed,
            **{label: name},
            sample=i,
            path=step.path,
            graph_size=step.graph_size,
            time_ms=step.time_ms,
            wall_ms=step.wall_ms,
            clock=step.clock,
        )
        for name, records in steps.items()
        for i, step in enumerate(records)
    ]


def compared_steps(steps: dict, batch, reference: str, timing: Timing) -> list[dict]:
    """One row per step function of interleaved_steps(steps, batch, timing): its step's size,
    path, graph size, median with interval, the load, and (every step but `reference`) its time
    over the reference's (over_ref_*: ratio, interval, verdict; `samples` pairs)."""
    load = machine_load()
    steps = interleaved_steps(steps, batch, timing)
    base = step_times(steps[reference])
    rows = []
    for label, records in steps.items():
        times = step_times(records)
        median, low, high = median_ci(times)
        versus = compare(times, base) if label != reference else None
        rows.append(
            dict(
                step=label,
                num_tokens=records[0].batch_size,
                path=records[0].path,
                graph_size=records[0].graph_size,
                median_ms=median,
                ci_low_ms=low,
                ci_high_ms=high,
                samples=len(times),
                **(comparison_columns(versus, "over_ref") if versus else {}),
                backend=records[0].backend,
                clock=records[0].clock,
                **load,
            )
        )
    return rows


def comparison_columns(comparison, prefix: str) -> dict:
    """A comparison's ratio, interval and verdict as row columns named prefix_*
    (graphlab.views.verdicts.comparison_of reads them back)."""
    return {
        f"{prefix}_ratio": comparison.ratio,
        f"{prefix}_ci_low": comparison.low,
        f"{prefix}_ci_high": comparison.high,
        f"{prefix}_verdict": comparison.verdict,
    }
