"""The sentences printed from measured comparisons (graphlab.bench's frames and values): eager
over graph mode per size and per path, steps against a reference step, mean steps against a
reference engine, captures, speculative decoding's time per token, and the guard's price. Where
both sides ran the same step (no graph at a size, the same capture list), the interval is printed
as a control for noise, with no verdict.
"""

from __future__ import annotations

import math

import pandas as pd

from graphlab.sizing.dispatch import BatchPath, BatchUnit, RunMode
from graphlab.stats import EFFECT, MIN_SAMPLES, NO_DIFFERENCE, Comparison, busy


def sentence(comparison: Comparison, subject: str, reference: str) -> str:
    """'<subject> is slower than <reference>: 1.42x (95% CI 1.30-1.55, 20 pairs)', or 'shows
    no difference beyond noise from' when the interval holds 1, with what that means: the largest
    difference the interval leaves (its end farthest from 1, rounded up to a whole percent; the
    sampling stopped with the interval within +-EFFECT of its ratio), or that this machine cannot
    decide (the interval is wider, or pairs are too few)."""
    if comparison.verdict != NO_DIFFERENCE:
        return f"{subject} is {comparison.verdict} than {reference}: {comparison.interval}"
    if comparison.num_samples < MIN_SAMPLES:
        why = f"fewer than {MIN_SAMPLES} pairs: too few to call a direction"
    elif comparison.decided:
        bound = max(1 - comparison.low, comparison.high - 1)
        why = f"any difference is under +-{math.ceil(bound * 100 + 1e-9)}%"
    else:
        why = f"this machine cannot decide it: the interval is wider than +-{EFFECT:.0%}"
    return (
        f"{subject} shows no difference beyond noise from {reference}: "
        f"{comparison.interval} ({why})"
    )


def load_warning(load: dict) -> str | None:
    """A WARNING line when the machine was busy while timing (graphlab.stats.busy), else None."""
    if not busy(load):
        return None
    return (
        f"WARNING: load average {load['load_avg_1m']:.2f} on {load['cpus']} CPUs while timing:"
        " other work shares the cores, so intervals are wide and small differences read as"
        " noise"
    )


def comparison_of(row, prefix: str, pairs: int) -> Comparison:
    """The Comparison behind a row's prefix_ratio, prefix_ci_low and prefix_ci_high columns
    (graphlab.bench.sampling.comparison_columns), over `pairs` paired samples."""
    return Comparison(
        row[f"{prefix}_ratio"], row[f"{prefix}_ci_low"], row[f"{prefix}_ci_high"], int(pairs)
    )


def step_lines(rows: pd.DataFrame) -> list[str]:
    """One line per step of graphlab.bench.sampling.compared_steps' rows but the reference (the
    row with no over_ref_ratio): its time over the reference step's, verdict included."""
    reference = rows[rows.over_ref_ratio.isna()].iloc[0]
    said = f"the {reference.step} step ({reference.path})"
    return [
        sentence(comparison_of(row, "over_ref", row.samples), f"the {row.step} step ({row.path})",
                 said)
        for _, row in rows[rows.over_ref_ratio.notna()].iterrows()
    ]  # fmt: skip


def priced_lines(priced: pd.DataFrame) -> list[str]:
    """One line per engine of graphlab.bench.priced.priced_sizing's table priced against its
    reference (the priced engine with no over_reference_ratio): its mean step over the
    reference's, verdict included."""
    if "over_reference_ratio" not in priced:
        return []
    compared = priced.over_reference_ratio.notna()
    reference = priced.index[~compared & priced.mean_step_ms.notna()][0]
    return [
        sentence(
            comparison_of(row, "over_reference", row.over_reference_pairs),
            f"{engine}'s mean step",
            f"{reference}'s",
        )
        for engine, row in priced[compared].iterrows()
    ]


def capture_line(price: pd.DataFrame, engine: str, k: int) -> str:
    """An engine's capture time at k against the first engine of graphlab.bench.costs.
    adaptive_price's frame; where both capture the same sizes, the interval as a control."""
    rows = price[price.num_speculative_tokens == k]
    row, first = rows[rows.engine == engine].iloc[0], rows.engine.iloc[0]
    versus = comparison_of(row, "capture_over_first", row.repeats)
    if row.same_sizes_as_first:
        return (
            f"both capture the same {row.num_graphs} sizes, a control for noise: {versus.interval}"
        )
    return sentence(versus, f"{engine}'s capture", f"{first}'s")


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {verdict}" for verdict, n in counts.items())


def mode_lines(rows: pd.DataFrame) -> list[str]:
    """One line per graph-mode row of graphlab.bench.measurements.latency_rows: its size, the
    graph it replayed, and eager mode over graph mode, verdict and interval included; a size
    with no graph (both modes eager) gives its interval as a control, with no verdict."""
    lines = []
    for _, row in rows[rows["mode"] == RunMode.GRAPH].iterrows():
        # V1 rows count tokens; V0 rows count rows or leave the column empty (style.batch_unit_of)
        unit = BatchUnit.TOKENS if row.get("batch_unit") == BatchUnit.TOKENS else BatchUnit.ROWS
        versus = comparison_of(row, "eager_over", row.repeats)
        if row.path == BatchPath.EAGER:  # the same eager step twice: any direction would be chance
            lines.append(
                f"{row.batch_size} {unit}, no graph: both modes run the eager step, a control "
                f"for noise: {versus.interval}"
            )
            continue
        where = f"{row.batch_size} {unit} on the {int(row.graph_size)}-{unit[:-1]} graph"
        lines.append(f"{where} ({row.path}): {sentence(versus, 'eager mode', 'graph mode')}")
    return lines


def mode_summary(counts: pd.DataFrame) -> list[str]:
    """One line per row of graphlab.bench.verdicts.mode_counts: how many sizes' eager-over-graph
    intervals say each verdict; off the graphs, where both modes run the eager step, how many
    intervals exclude 1 by chance."""
    lines = []
    for _, row in counts.iterrows():
        engine, path, sizes = row.engine, row.path, row.sizes
        if (
            path == BatchPath.EAGER
        ):  # both modes ran the same eager step: a control, not a comparison
            lines.append(
                f"{engine}, {sizes} sizes with no graph, where both modes run the eager step "
                f"(a control for noise): {row.crossed} of {sizes} intervals exclude 1 (chance "
                "alone: about 1 in 20)"
            )
            continue
        lines.append(
            f"{engine}, graph mode {path} at {sizes} sizes, eager mode against it (95% "
            f"intervals, {row.repeats}+ pairs each): "
            + ", ".join(f"{verdict} at {n}" for verdict, n in row.counts.items())
        )
    return lines


def throughput_lines(spec: pd.DataFrame, comparisons) -> list[str]:
    """graphlab.bench.verdicts.throughput_comparisons(spec) as lines: the cell, time per token
    against the fastest engine's, backend and clock."""
    backend = spec.backend.iloc[0]
    clock = f", clock {spec.clock.iloc[0]}" if "clock" in spec else ""
    return [
        f"S={seqs}, k={k}, time per token: {sentence(comparison, other, best)}; backend "
        f"{backend}{clock}"
        for (seqs, k), comparison, other, best in comparisons
    ]


def guard_report(summary: dict) -> list[str]:
    """graphlab.bench.verdicts.guard_summary as lines: a load warning when the machine was busy,
    the pooled comparison at the eager sizes, and the per-size verdicts counted, at the eager
    sizes and, as a control for noise, where both engines replay the same padded graph."""
    lines = [load_warning(summary["load"])]
    sizes = summary["pooled_sizes"]
    if summary["pooled"] is not None:
        pooled = sentence(
            summary["pooled"]["comparison"],
            "the guard's step, each size once,",
            "adaptive's at the same sizes",
        )
        lines.append(f"n = {sizes[0]}..{sizes[-1]}, pooled: {pooled}")
    eager, counts = summary["eager"]
    lines.append(
        f"per size, at the {eager} eager sizes (95% intervals; about 1 size in 20 crosses "
        f"by chance): {_counted(counts)}"
    )
    control, counts = summary["control"]
    if control:
        lines.append(
            f"as a control, at the {control} sizes where both replay the same graph (95% "
            f"intervals): {_counted(counts)}"
        )
    return [line for line in lines if line]
