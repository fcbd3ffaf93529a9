"""The figures of one reference run of the benchmarks (a folder of bench CSVs)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from matplotlib.figure import Figure

from graphlab.views.latency import plot_latency
from graphlab.views.memory import plot_graph_memory
from graphlab.views.spec_decode import plot_spec_decode


def reference_figures(folder) -> list[tuple[str, Figure]]:
    """The figures of one reference run (a folder of bench CSVs, e.g. data/cpu): latency and graph
    memory per model, then speculative decoding; names like 'latency_tiny'. Missing CSVs are
    skipped. Each title starts 'Reference data/<folder>:', so it never reads as a live figure's."""
    folder = Path(folder)
    figures = []
    for stem, plot in (("latency", plot_latency), ("graph_memory", plot_graph_memory)):
        if (folder / f"{stem}.csv").is_file():
            for model, rows in pd.read_csv(folder / f"{stem}.csv").groupby("model"):
                figures.append((f"{stem}_{model}", plot(rows)))
    if (folder / "spec_decode.csv").is_file():
        figures.append(("spec_decode", plot_spec_decode(pd.read_csv(folder / "spec_decode.csv"))))
    for _, fig in figures:
        title = fig._suptitle
        title.set_text(f"Reference data/{folder.name}: {title.get_text()}")
    return figures
