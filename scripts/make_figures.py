#!/usr/bin/env python
"""Regenerate the README's figures (docs/figures/*.png) from the reference CSVs in data/.

    python scripts/make_figures.py [--data data] [--out docs/figures]

Measured figures (latency, graph memory, speculative decoding) come from data/h200/ where it
holds the CSV, else from data/cpu/; each figure's title carries the backend, device and model of
its rows, so a cpu-emulated or predicted figure says so. The crash-map figures are computed from
the sizing rules and come from data/cpu/crash_map.csv.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import pandas as pd  # noqa: E402

from graphlab.sizing.engines import V0_ENGINES  # noqa: E402
from graphlab.views import plots  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def source(data: Path, csv_name: str) -> Path:
    """The CSV from the GPU run when committed, else from the CPU run."""
    for folder in ("h200", "cpu"):
        if (data / folder / csv_name).is_file():
            return data / folder / csv_name
    raise SystemExit(
        f"no {csv_name} under {data}/h200 or {data}/cpu: run `python -m graphlab bench`"
    )


def first_model(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of the first model in the file (the GPU sweep holds 100m then 1b)."""
    return frame[frame["model"] == frame["model"].iloc[0]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=ROOT / "data")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "figures")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    plot_from = {
        "latency": lambda f: plots.plot_latency(first_model(f)),
        "graph_memory": lambda f: plots.plot_graph_memory(first_model(f)),
        "spec_decode": plots.plot_spec_decode,
    }
    figures = {}
    for name, plot in plot_from.items():
        path = source(args.data, f"{name}.csv")
        figures[name] = (plot(pd.read_csv(path)), path)
    # Computed from the sizing rules: any machine's will do.
    path = args.data / "cpu" / "crash_map.csv"
    grid = pd.read_csv(path)
    grid = grid[grid["engine"].isin(list(V0_ENGINES))]
    figures["crash_map"] = (plots.plot_crash_map(grid, "num_crash"), path)
    figures["graph_fraction"] = (
        plots.plot_crash_map(
            grid,
            "graph_fraction",
            note="the guard runs 0.5.5's crashing batches eagerly and captures no more graphs",
        ),
        path,
    )
    for name, (fig, csv) in figures.items():
        target = args.out / f"{name}.png"
        fig.savefig(target, dpi=100)
        print(f"wrote {target} from {csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
