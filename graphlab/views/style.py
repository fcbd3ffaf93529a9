"""What every figure shares: its width, path colours and markers, provenance titles, checks.

Titles always name the backend and the device, and say "cpu-emulated" / "predicted" in words where
that applies, so an emulated or predicted number is never mistaken for a GPU measurement.
"""

from __future__ import annotations

import textwrap

import pandas as pd
from matplotlib.figure import Figure

from graphlab.errors import BadInput
from graphlab.sizing.dispatch import BatchUnit

# A notebook's output area is about 850 px wide and figures are drawn at 100 dpi: at most this many
# inches wide, they are shown at their own size, so 8-point text stays 11 px on screen.
WIDTH_IN = 8.4
# One colour and marker per path in every figure and widget: matplotlib's tab: colours, in hex so
# PIL reads them too. V1 rows replay FULL (whole-step, as V0's graphs) or PIECEWISE graphs
# (attention eager between).
PATH_COLORS = {
    "graph": "#1f77b4",
    "full": "#1f77b4",
    "piecewise": "#2ca02c",
    "eager": "#ff7f0e",
    "crash": "#d62728",
}
PATH_MARKERS = {"graph": "o", "full": "o", "piecewise": "D", "eager": "s", "crash": "X"}
# Latency modes: graph mode blue, eager mode orange, compiled graphs green.
MODE_COLORS = {
    "eager": PATH_COLORS["eager"],
    "graph": PATH_COLORS["graph"],
    "compiled-graph": PATH_COLORS["piecewise"],
}


def inline(*formats: str) -> None:
    """Show Figures as images in a notebook (PNG unless formats say e.g. "svg"), whatever the
    backend.

    Under MPLBACKEND=Agg (the Makefile's) IPython registers no image formatter, so display(fig)
    printed only `<Figure size ...>`. This registers matplotlib_inline's formatter for Figure, and
    for text-only frontends a text/plain line naming the figure by its title. Outside IPython:
    nothing to do.
    """
    try:
        from IPython import get_ipython
        from matplotlib_inline.backend_inline import set_matplotlib_formats
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    set_matplotlib_formats(*(formats or ("png",)))
    shell.display_formatter.formatters["text/plain"].for_type(
        Figure, lambda fig, printer, cycle: printer.text(_figure_text(fig))
    )


def _figure_text(fig: Figure) -> str:
    title = fig._suptitle.get_text().splitlines()[0] if fig._suptitle else "untitled"
    return f"[figure: {title}]"


def single_value(df: pd.DataFrame, column: str) -> str:
    """The single value of a provenance column; mixing machines in one figure would mislead."""
    if column not in df.columns:
        raise BadInput(f"frame has no {column!r} column; plots need the provenance columns")
    values = sorted(df[column].dropna().astype(str).unique())
    if len(values) != 1:
        raise BadInput(f"frame mixes {column} values {values}; plot one {column} at a time")
    return values[0]


# Characters of 10-pt text that fit across a notebook-width figure (WIDTH_IN at 100 dpi).
SUBTITLE_CHARS = 110


def provenance_title(df: pd.DataFrame, what: str) -> str:
    """'<what>' over a subtitle naming backend, device, model and how memory was obtained (one
    line where it fits, else wrapped)."""
    backend, device = single_value(df, "backend"), single_value(df, "device")
    emulated = {
        "cpu-emulated": " (not a GPU measurement)",
        "cpu-compiled": " (torch.compile'd on CPU: not a CUDA graph, not a GPU measurement)",
    }.get(backend, "")
    parts = [f"{backend}{emulated} on {device}"]
    if "model" in df.columns and "dtype" in df.columns:
        parts.append(f"model {single_value(df, 'model')}, {single_value(df, 'dtype')}")
    if "memory_kind" in df.columns:
        parts.append(
            "graph memory "
            + ("PREDICTED" if single_value(df, "memory_kind") == "predicted" else "measured")
        )
    # One subtitle line where it fits the notebook's width; longer provenance wraps.
    return "\n".join([what, *textwrap.wrap("; ".join(parts), SUBTITLE_CHARS)])


def require_columns(df: pd.DataFrame, columns: tuple[str, ...]) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise BadInput(f"frame lacks columns {missing}; see data/README.md for the schema")
    if df.empty:
        raise BadInput("frame is empty: nothing to plot")


def batch_unit_of(rows: pd.DataFrame) -> BatchUnit:
    """V1 rows count tokens (batch_unit "tokens"); V0 rows count rows or leave the column empty."""
    tokens = "batch_unit" in rows.columns and bool((rows["batch_unit"] == BatchUnit.TOKENS).all())
    return BatchUnit.TOKENS if tokens else BatchUnit.ROWS
