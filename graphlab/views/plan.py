"""The capture size plan figure: padding waste per decode step size, default against plan."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from graphlab.views.style import WIDTH_IN


def plot_plan(result) -> Figure:
    """A graphlab.sizing.plan_result.Plan: padding waste per decode step size, the engine's
    default against the plan; ticks mark the captured sizes (default below, plan above) and
    crosses the steps that run eagerly."""
    fig = Figure(figsize=(WIDTH_IN, 4.4), layout="constrained")
    ax = fig.add_subplot()
    ns = result.workload.sizes
    for label, outcome, color in (
        ("default", result.default, "tab:orange"),
        ("plan", result.plan, "tab:blue"),
    ):
        on_graph = outcome.padded > 0
        summary = (
            f"{label}: {len(outcome.capture_sizes)} graphs, "
            f"mean waste {outcome.mean_padding_waste:.2f}, "
            f"graph fraction {outcome.graph_fraction:.3f}"
            + (
                f", {outcome.mean_step_ms:.3f} ms/step ({result.latency_backend})"
                if outcome.mean_step_ms is not None
                else ""
            )
        )
        ax.plot(
            ns[on_graph],
            (outcome.padded - ns)[on_graph],
            ".",
            markersize=4,
            color=color,
            label=summary,
        )
        ax.plot(
            ns[~on_graph],
            np.zeros((~on_graph).sum()),
            "x",
            color=color,
            label=f"{label}: eager steps (drawn at 0, not free)",
        )
        ymin, ymax = (0.0, 0.04) if label == "default" else (0.96, 1.0)
        for size in outcome.capture_sizes:
            ax.axvline(size, ymin=ymin, ymax=ymax, color=color, linewidth=0.8)
    ax.set_xlabel(f"decode step size n (tokens; {result.workload.source} workload)")
    ax.set_ylabel("padding waste: padded size - n (tokens)")
    cfg = result.config
    fig.suptitle(
        f"{result.engine}, max_num_seqs={cfg.max_num_seqs}, k={cfg.num_speculative_tokens}, "
        f"max_num_batched_tokens={result.max_num_batched_tokens}:\ncapture sizes, default vs "
        f"plan ({result.cost} cost)",
        fontsize=10,
    )
    # Below the axes, off the data: the summaries are long.
    priced = result.plan.mean_step_ms is not None  # longer labels: one per line
    fig.legend(
        *ax.get_legend_handles_labels(),
        loc="outside lower center",
        fontsize=8,
        ncols=1 + (not priced),
    )
    return fig
