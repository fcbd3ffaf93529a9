"""The sentences printed from measured verdicts (graphlab.bench.verdicts' values): eager over
graph mode per size and per path, speculative decoding's time per token, and the guard's price.
Where both sides ran the same step (no graph at a size), the interval is printed as a control for
noise, with no verdict.
"""

from __future__ import annotations

import pandas as pd

from graphlab.sizing.dispatch import BatchPath


def _counted(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {verdict}" for verdict, n in counts.items())


def mode_lines(comparisons: pd.DataFrame) -> list[str]:
    """One line per row of graphlab.bench.verdicts.mode_comparisons: its size, the graph it
    replayed, and the sentence of eager mode over graph mode, verdict and interval included; a
    size with no graph (both modes eager) gives its interval as a control, with no verdict."""
    lines = []
    for _, row in comparisons.iterrows():
        if row.path == BatchPath.EAGER:  # the same eager step twice: any direction would be chance
            lines.append(
                f"{row.batch_size} {row.unit}, no graph: both modes run the eager step, a control "
                f"for noise: {row.interval}"
            )
            continue
        where = f"{row.batch_size} {row.unit} on the {int(row.graph_size)}-{row.unit[:-1]} graph"
        lines.append(f"{where} ({row.path}): {row.sentence}")
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
    """graphlab.bench.verdicts.throughput_comparisons(spec) as lines: the cell, time per token's
    sentence, backend and clock."""
    backend = spec.backend.iloc[0]
    clock = f", clock {spec.clock.iloc[0]}" if "clock" in spec else ""
    return [
        f"{cell}, time per token: {sentence}; backend {backend}{clock}"
        for cell, _, sentence in comparisons
    ]


def guard_report(summary: dict) -> list[str]:
    """graphlab.bench.verdicts.guard_summary as lines: a load warning when the machine was busy,
    the pooled comparison at the eager sizes, and the per-size verdicts counted, at the eager
    sizes and, as a control for noise, where both engines replay the same padded graph."""
    lines = [summary["warning"]]
    sizes = summary["pooled_sizes"]
    if summary["pooled"] is not None:
        lines.append(f"n = {sizes[0]}..{sizes[-1]}, pooled: {summary['pooled']['sentence']}")
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
