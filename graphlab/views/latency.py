"""Figures of measured decode latency: latency and padded size against batch size, and the eager
over graph ratio near the largest captured size."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from graphlab.errors import BadInput
from graphlab.sizing.dispatch import REPLAYS, BatchPath, BatchUnit, RunMode
from graphlab.views.style import (
    MODE_COLORS,
    PATH_COLORS,
    PATH_MARKERS,
    WIDTH_IN,
    batch_unit_of,
    provenance_title,
    require_columns,
)


def plot_latency(df: pd.DataFrame) -> Figure:
    """Latency and padded size against batch size (rows; tokens in V1 rows), one column per engine.

    Top: median decode-step latency (p90 as a band) in eager mode and in graph mode; graph-mode
    batches that found no graph are drawn as eager/crash markers, and a dashed line marks the
    largest captured size (the eager cliff lies above it). Bottom: the padded size each batch was
    run at; over densely swept sizes, a staircase above the diagonal.
    """
    require_columns(
        df, ("engine", "batch_size", "mode", "path", "graph_size", "median_ms", "p90_ms")
    )
    engines = list(dict.fromkeys(df["engine"]))
    fig = Figure(figsize=(WIDTH_IN, 6.5), layout="constrained")
    axes = fig.subplots(2, len(engines), squeeze=False, sharex="col", height_ratios=(2, 1))
    for col, engine in enumerate(engines):
        rows = df[df["engine"] == engine].sort_values("batch_size")
        unit = batch_unit_of(rows)
        top, bottom = axes[0, col], axes[1, col]
        for mode in RunMode:
            part = rows[(rows["mode"] == mode) & (rows["path"] != BatchPath.CRASH)]
            if part.empty:
                continue
            top.plot(
                part["batch_size"],
                part["median_ms"],
                color=MODE_COLORS[mode],
                lw=1.2,
                label=f"{mode} mode (median)",
            )
            top.fill_between(
                part["batch_size"],
                part["median_ms"],
                part["p90_ms"],
                color=MODE_COLORS[mode],
                alpha=0.2,
                lw=0,
            )
        in_graph_mode = rows[rows["mode"] == RunMode.GRAPH]
        for path, color in PATH_COLORS.items():
            hits = in_graph_mode[in_graph_mode["path"] == path]
            if hits.empty:
                continue
            # A crashed step has no latency: mark it on the x axis.
            y = hits["median_ms"] if path != BatchPath.CRASH else np.zeros(len(hits))
            top.scatter(
                hits["batch_size"],
                y,
                color=color,
                marker=PATH_MARKERS[path],
                s=18,
                zorder=3,
                label=f"graph mode, ran {path}"
                if path != BatchPath.CRASH
                else "graph mode: KeyError",
            )
        graphed = in_graph_mode[in_graph_mode["path"].isin(REPLAYS)]
        if not graphed.empty:
            largest = int(graphed["graph_size"].max())
            for ax in (top, bottom):
                ax.axvline(largest, color="grey", ls="--", lw=1)
            top.annotate(
                f"largest captured size {largest}",
                (largest, top.get_ylim()[1]),
                rotation=90,
                va="top",
                ha="right",
                fontsize=8,
                color="grey",
            )
            # Markers only: between two swept sizes the padded size is unknown to the plot.
            bottom.plot(
                graphed["batch_size"],
                graphed["graph_size"],
                "o",
                ms=3,
                color="tab:blue",
                label="padded size (graph key)",
            )
        bottom.plot(
            rows["batch_size"],
            rows["batch_size"],
            color="black",
            lw=0.8,
            ls=":",
            label="no padding (n)",
        )
        top.set_title(engine)
        top.set_ylabel("decode step latency (ms)")
        top.set_ylim(bottom=0)
        bottom.set_xlabel(
            "verify batch (tokens per decode step)"
            if unit is BatchUnit.TOKENS
            else "batch size (rows per decode step)"
        )
        bottom.set_ylabel(f"padded size ({unit})")
        top.legend(fontsize=8)
        bottom.legend(fontsize=8)
    fig.suptitle(
        provenance_title(
            df,
            "Verify-step latency against tokens"
            if batch_unit_of(df) is BatchUnit.TOKENS
            else "Decode latency against batch size",
        ),
        fontsize=9,
    )
    return fig


def plot_eager_ratio(df: pd.DataFrame, smallest: int, largest: int) -> Figure:
    """Eager over graph median step latency at batch sizes smallest..largest, one line per model.

    df: a latency CSV of one backend and device. Above 1, replaying a graph was faster; on a
    cpu-emulated run both paths are eager forwards, and the title says so.
    """
    require_columns(df, ("model", "batch_size", "mode", "median_ms"))
    near = df[(df["batch_size"] >= smallest) & (df["batch_size"] <= largest)]
    if near.empty:
        raise BadInput(f"no latency rows at batch sizes {smallest}..{largest}")
    table = near.pivot_table(index=["model", "batch_size"], columns="mode", values="median_ms")
    fig = Figure(figsize=(WIDTH_IN, 3.4), layout="constrained")
    ax = fig.add_subplot()
    for model, part in (table[RunMode.EAGER] / table[RunMode.GRAPH]).groupby(level="model"):
        ax.plot(
            part.index.get_level_values("batch_size"),
            part.to_numpy(),
            "o-",
            ms=3,
            label=f"model {model}",
        )
    ax.axhline(1, color="black", ls=":", lw=0.8, label="1: no difference")
    unit = batch_unit_of(near)
    ax.set(
        xlabel=f"batch size n ({unit} per decode step)",
        ylabel="eager / graph (median)",
        ylim=(0, None),
    )
    ax.legend(fontsize=8, loc="lower right")
    what = f"Eager over graph step latency at n = {smallest}..{largest} {unit}"
    fig.suptitle(
        provenance_title(near.drop(columns=["model", "dtype"], errors="ignore"), what), fontsize=9
    )
    return fig
