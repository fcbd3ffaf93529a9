"""The padding staircase: the size each batch of one engine runs at, from its sizing rule.

A view of `graphlab.sizing.audit`'s outcomes, no device involved: the figure of a rule, not of a
measured frame; plots.py gathers it with the others.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from graphlab.sizing.dispatch import REPLAYS, BatchPath
from graphlab.views.style import (
    PATH_COLORS,
    PATH_MARKERS,
    WIDTH_IN,
    batch_unit_of,
    require_columns,
)


def plot_padding(df: pd.DataFrame, engine: str) -> Figure:
    """The padding staircase of one engine: each batch size n against the size it runs at.

    df: `batch_size`, `path`, `graph_size` per n (`pd.DataFrame([vars(d) for d in report.outcomes])`
    of `graphlab.sizing.audit`). Graph rows step up to their captured size (shaded: the padding
    waste), eager rows run at n, crashes sit on the x axis. Computed from the sizing rule.
    """
    require_columns(df, ("batch_size", "path", "graph_size"))
    rows, unit = df.sort_values("batch_size"), batch_unit_of(df)
    n, graphed = rows["batch_size"].to_numpy(), rows[rows["path"].isin(REPLAYS)]
    padded = graphed["graph_size"].astype(float)
    fig = Figure(figsize=(WIDTH_IN, 3.6), layout="constrained")
    ax = fig.add_subplot()
    ax.fill_between(
        graphed["batch_size"],
        graphed["batch_size"],
        padded,
        step="mid",
        color=PATH_COLORS["graph"],
        alpha=0.2,
        lw=0,
        label="padding waste",
    )
    ax.step(
        graphed["batch_size"],
        padded,
        where="mid",
        color=PATH_COLORS["graph"],
        label="graph: padded size",
    )
    for path, label in (
        (BatchPath.EAGER, "eager: runs at n, no graph"),
        (BatchPath.CRASH, "crash"),
    ):
        hits = rows[rows["path"] == path]
        if not hits.empty:
            ax.scatter(
                hits["batch_size"],
                hits["batch_size"] * (path is BatchPath.EAGER),
                color=PATH_COLORS[path],
                marker=PATH_MARKERS[path],
                s=16,
                zorder=3,
                label=label,
            )
    ax.plot(n, n, ":", color="black", lw=0.8, label="no padding (n)")
    ax.set(
        xlabel=f"batch size n ({unit} per decode step)",
        ylabel=f"size it runs at ({unit})",
        xlim=(n[0] - 0.5, n[-1] + 0.5),
        ylim=(0, None),
    )
    ax.legend(fontsize=8, loc="upper left")
    sizes = ", ".join(str(int(s)) for s in sorted(padded.unique())) or "none"
    fig.suptitle(
        f"Padding under {engine}: captured sizes {sizes}\ncomputed from the engine's "
        "sizing rule, not measured on any device",
        fontsize=10,
    )
    return fig
