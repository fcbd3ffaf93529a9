"""The graph memory figure: memory per captured size and cumulative, per pool; capture time."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from graphlab.sizing.engines import MIB
from graphlab.views.style import (
    WIDTH_IN,
    batch_unit_of,
    provenance_title,
    require_columns,
    single_value,
)

# What a "capture" is on the backends that record no CUDA graph.
CAPTURE_TITLES = {
    "cpu-emulated": "emulated capture: one eager\nstep, no graph recorded",
    "cpu-compiled": "compiled capture: one compiled\nstep (compile in a warm-up before)",
}


def plot_graph_memory(df: pd.DataFrame) -> Figure:
    """Graph memory per captured size and cumulative, shared vs separate pools; capture time.

    `memory_bytes` is what each capture adds (measured: the free-memory drop; predicted: the
    growth of the predicted pool), so in a shared pool captured largest first the smaller graphs
    add little. Captures run largest first: the cumulative value at size s covers s and every
    larger size.
    """
    require_columns(
        df,
        (
            "graph_pool",
            "capture_size",
            "memory_bytes",
            "cumulative_bytes",
            "capture_ms",
            "memory_kind",
        ),
    )
    # One row of panels per engine: V0 graphs count rows, V1 graphs count tokens.
    engines = list(dict.fromkeys(df["engine"])) if "engine" in df.columns else [None]
    fig = Figure(figsize=(WIDTH_IN, 3.3 * len(engines) + 0.6), layout="constrained")
    for axes, engine in zip(fig.subplots(len(engines), 3, squeeze=False), engines):
        part = df if engine is None else df[df["engine"] == engine]
        per_graph, cumulative, capture = axes
        # V1 captures two families (FULL, PIECEWISE) into one pool: one line per pool and family.
        families = (
            part["family"].fillna("") if "family" in part.columns else pd.Series("", part.index)
        )
        lines = part.groupby([part["graph_pool"], families], sort=True)
        for ((pool, family), rows), marker in zip(lines, "os^vD<"):
            rows = rows.sort_values("capture_size")
            label = f"{pool} pool" + (f", {family}" if family else "")
            style = dict(marker=marker, ms=4, lw=1, label=label)
            per_graph.plot(rows["capture_size"], rows["memory_bytes"] / MIB, **style)
            cumulative.plot(rows["capture_size"], rows["cumulative_bytes"] / MIB, **style)
            capture.plot(rows["capture_size"], rows["capture_ms"], **style)
        prefix = "" if engine is None else f"{engine}: "
        per_graph.set_title(f"{prefix}memory each\ncapture adds", fontsize=9)
        per_graph.set_ylabel("graph memory (MiB)")
        cumulative.set_title("this size and all larger\n(captured largest first)", fontsize=9)
        cumulative.set_ylabel("cumulative graph memory (MiB)")
        capture.set_title(
            CAPTURE_TITLES.get(single_value(df, "backend"), "capture time of each graph"),
            fontsize=9,
        )
        capture.set_ylabel("capture time (ms)")
        for ax in axes:
            ax.set_xlabel(f"captured batch size ({batch_unit_of(part)})", fontsize=9)
            ax.set_ylim(bottom=0)
            ax.legend(fontsize=8)
    # Only a cuda-graph run holds CUDA graphs; other backends' memory is the graphs' prediction.
    what = "CUDA graph memory" if single_value(df, "backend") == "cuda-graph" else "Graph memory"
    fig.suptitle(provenance_title(df, f"{what} against batch size"), fontsize=9)
    return fig
