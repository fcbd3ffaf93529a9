"""The sentences notebooks print from measured rows, each reading its verdict from
graphlab.bench.stats (slower / faster / no difference beyond noise, from the interval): eager over
graph mode per size of latency_rows and per path, and speculative decoding's time per token.
Where both sides ran the same step (no graph at a size), the interval is printed as a control for
noise, with no verdict.
"""

from __future__ import annotations

import pandas as pd

from graphlab.bench.stats import FASTER, NO_DIFFERENCE, SLOWER, Comparison, compare


def mode_lines(rows: pd.DataFrame) -> list[str]:
    """One line per graph-mode row of latency_rows: its size, the graph it replayed, and the
    sentence of eager mode over graph mode, verdict and interval included; a size with no graph
    (both modes eager) gives its interval as a control, with no verdict."""
    lines = []
    for _, row in rows[rows["mode"] == "graph"].iterrows():
        unit = "tokens" if row.get("batch_unit") == "tokens" else "rows"
        comparison = Comparison(
            row.eager_over_ratio, row.eager_over_ci_low, row.eager_over_ci_high, row.repeats
        )
        if row.path == "eager":  # the same eager step twice: any direction would be chance
            lines.append(
                f"{row.batch_size} {unit}, no graph: both modes run the eager step, a control "
                f"for noise: {comparison.interval}"
            )
            continue
        where = f"{row.batch_size} {unit} on the {int(row.graph_size)}-{unit[:-1]} graph"
        lines.append(f"{where} ({row.path}): {comparison.sentence('eager mode', 'graph mode')}")
    return lines


def mode_summary(rows: pd.DataFrame) -> list[str]:
    """Per (engine, path) of latency_rows' graph-mode rows: how many sizes' eager-over-graph
    intervals say slower, faster or no difference beyond noise (each from its own interval); off
    the graphs, where both modes run the eager step, how many intervals exclude 1 by chance."""
    graph_mode = rows[rows["mode"] == "graph"]
    lines = []
    for (engine, path), part in graph_mode.groupby(["engine", "path"], sort=False):
        counts = part.eager_over_verdict.value_counts()
        if path == "eager":  # both modes ran the same eager step: a control, not a comparison
            crossed = len(part) - counts.get(NO_DIFFERENCE, 0)
            lines.append(
                f"{engine}, {len(part)} sizes with no graph, where both modes run the eager step "
                f"(a control for noise): {crossed} of {len(part)} intervals exclude 1 (chance "
                "alone: about 1 in 20)"
            )
            continue
        lines.append(
            f"{engine}, graph mode {path} at {len(part)} sizes, eager mode against it (95% "
            f"intervals, {part.repeats.min()}+ pairs each): "
            + ", ".join(f"{v} at {counts.get(v, 0)}" for v in (SLOWER, FASTER, NO_DIFFERENCE))
        )
    return lines


def throughput_comparisons(spec: pd.DataFrame) -> list[tuple[str, Comparison, str]]:
    """Per (max_num_seqs, k) of repeated spec_decode runs (a `run` column; the engines of one
    run measured back to back), each engine's time per token over that of the engine with the
    highest median throughput, paired by run: (cell label, Comparison, sentence)."""
    found = []
    for (seqs, k), cell in spec.groupby(["max_num_seqs", "num_speculative_tokens"]):
        ms = cell.assign(ms_per_token=1e3 / cell.tokens_per_s).pivot(
            index="run", columns="engine", values="ms_per_token"
        )
        best = ms.median().idxmin()
        for other in ms.columns.drop(best):
            comparison = compare(ms[other].to_numpy(), ms[best].to_numpy())
            found.append((f"S={seqs}, k={k}", comparison, comparison.sentence(other, best)))
    return found


def throughput_lines(spec: pd.DataFrame) -> list[str]:
    """throughput_comparisons as lines: the cell, time per token's sentence, backend and clock."""
    backend = spec.backend.iloc[0]
    clock = f", clock {spec.clock.iloc[0]}" if "clock" in spec else ""
    return [
        f"{cell}, time per token: {sentence}; backend {backend}{clock}"
        for cell, _, sentence in throughput_comparisons(spec)
    ]
