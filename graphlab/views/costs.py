"""Figures of what the paths cost: a run's decode steps over time, coloured by path.

Takes the frames of graphlab.bench (a run's steps with provenance columns); titles name the
backend and device as graphlab.views.plots does.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from graphlab.views.plots import _PATH_STYLE, _require, provenance_title


def plot_step_timeline(steps: pd.DataFrame, limit: int | None = None) -> Figure:
    """Each decode step's scorer time (top) and scorer batch size (bottom) in step order,
    coloured by the path it took; `limit` draws the graph limit on the batch-size panel."""
    _require(steps, ("step", "kind", "path", "batch_size", "scorer_ms"))
    decode = steps[steps["kind"] == "decode"]
    fig = Figure(figsize=(9, 5.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    for path, (color, marker) in _PATH_STYLE.items():
        part = decode[decode["path"] == path]
        if part.empty:
            continue
        median = part["scorer_ms"].median()
        top.scatter(part["step"], part["scorer_ms"], color=color, marker=marker, s=14,
                    label=f"{path}: {len(part)} steps, median {median:.3f} ms")
        bottom.scatter(part["step"], part["batch_size"], color=color, marker=marker, s=10)
    if limit is not None:
        bottom.axhline(limit, color="grey", ls="--", lw=1, label=f"graph limit {limit}")
        bottom.legend(fontsize=7)
    top.set_ylabel("scorer step time (ms)")
    top.set_ylim(bottom=0)
    top.legend(fontsize=7)
    bottom.set_xlabel("decode step")
    bottom.set_ylabel("scorer batch (rows)")
    fig.suptitle(provenance_title(steps, "Decode steps of the run, by path"), fontsize=10)
    return fig
