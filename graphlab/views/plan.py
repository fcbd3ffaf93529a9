"""The capture size plan figure: a staircase of the graph each decode step replays, default against
plan, over the padding each accumulates across the workload."""

from __future__ import annotations

import numpy as np
from matplotlib.figure import Figure

from graphlab.views.style import WIDTH_IN

SIDES = (("default", "tab:orange"), ("plan", "tab:blue"))


def _summary(result, label: str, outcome) -> str:
    text = (
        f"{label}: {len(outcome.capture_sizes)} capture sizes, mean padding "
        f"{outcome.mean_padding_waste:.2f} tokens/step, graph fraction {outcome.graph_fraction:.3f}"
    )
    if result.eager_penalty is not None:
        text += f", mean cost {result.mean_cost(outcome):.2f}"
    if outcome.mean_step_ms is not None:
        text += f", {outcome.mean_step_ms:.3f} ms/step ({result.latency_backend})"
    return text


def plot_plan(result) -> Figure:
    """A graphlab.sizing.planner.result.Plan. Top: the graph size each decode step of n tokens
    replays, a staircase per side up to the largest graph (the rise above the dotted diagonal is
    its padding). Bottom: over the whole workload, the padding accumulated in tokens per step as n
    grows (with an eager penalty each eager step adds it: the cost the plan minimised); a shaded
    band marks each side's eager steps."""
    fig = Figure(figsize=(WIDTH_IN, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=(3, 2))
    ns, weights = result.workload.sizes, result.workload.weights
    # The staircase where graphs are: beyond the largest graph there are no stairs to see.
    reach = max(int(getattr(result, label).padded.max()) for label, _ in SIDES) or int(ns[-1])
    shown = ns <= reach
    top.plot(ns[shown], ns[shown], ":", color="0.5", linewidth=0.9, label="graph size = step size")
    for label, color in SIDES:
        outcome = getattr(result, label)
        on_graph = outcome.padded > 0
        padded = np.where(on_graph, outcome.padded, np.nan).astype(float)
        top.plot(
            ns[shown],
            padded[shown],
            drawstyle="steps-pre",
            color=color,
            linewidth=1.4,
            label=_summary(result, label, outcome),
        )
        cost = np.where(on_graph, outcome.padded - ns, result.eager_penalty or 0.0)
        bottom.plot(ns, np.cumsum(weights * cost), drawstyle="steps-post", color=color)
        if not on_graph.all():
            first = int(ns[~on_graph][0])
            share = float(weights[~on_graph].sum())
            bottom.axvspan(
                first,
                ns[-1],
                ymin=0.0 if label == "default" else 0.5,
                ymax=0.5 if label == "default" else 1.0,
                color=color,
                alpha=0.12,
                label=f"{label}: eager from {first} tokens ({share:.0%} of steps; not free)",
            )
    top.set(
        xlabel="decode step size n (tokens), up to the largest graph",
        ylabel="graph size replayed (tokens)",
    )
    what = (
        "padding" if result.eager_penalty is None else f"padding + {result.eager_penalty:g}/eager"
    )
    bottom.set(
        xlabel=f"decode step size n (tokens; {result.workload.source} workload)",
        ylabel=f"cumulative {what}\n(tokens per step)",
    )
    cfg = result.config
    fig.suptitle(
        f"{result.engine}, max_num_seqs={cfg.max_num_seqs}, k={cfg.num_speculative_tokens}, "
        f"max_num_batched_tokens={result.max_num_batched_tokens}:\nthe graph each step replays, "
        f"default vs plan ({result.cost} cost)",
        fontsize=10,
    )
    handles, labels = top.get_legend_handles_labels()
    more = bottom.get_legend_handles_labels()
    fig.legend(handles + more[0], labels + more[1], loc="outside lower center", fontsize=8)
    return fig
