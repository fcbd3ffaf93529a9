"""The crash map figure: a heatmap over (max_num_seqs, num_speculative_tokens) per engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from graphlab.errors import check_choice
from graphlab.views.style import WIDTH_IN, require_columns, single_value

_CRASH_MAP_VALUES = {
    "num_crash": ("batch sizes that crash (count)", "Reds"),
    "first_crash_n": ("smallest batch size that crashes (rows)", "magma_r"),
    "graph_fraction": ("reachable batch sizes with a graph (fraction)", "viridis"),
}


def plot_crash_map(df: pd.DataFrame, value: str = "num_crash", note: str = "") -> Figure:
    """Heatmap over (max_num_seqs, num_speculative_tokens), one panel per distinct map.

    value: "num_crash", "first_crash_n" (blank where nothing crashes) or "graph_fraction".
    Engines with the same map share a panel ("a = b"); for the crash values, engines that never
    crash on the grid get no panel, and the title names them. `note`: one more line of title, e.g.
    why two maps agree. The map is computed from the engines' sizing rules, not measured; the
    title says so.
    """
    check_choice("value", value, _CRASH_MAP_VALUES)
    require_columns(df, ("engine", "max_num_seqs", "num_speculative_tokens", value))
    label, cmap = _CRASH_MAP_VALUES[value]
    engines = list(dict.fromkeys(df["engine"]))
    grids = {
        e: df[df["engine"] == e]
        .pivot(index="max_num_seqs", columns="num_speculative_tokens", values=value)
        .astype(float)
        for e in engines
    }
    finite = np.concatenate([g.to_numpy().ravel() for g in grids.values()])
    never = (
        []
        if value == "graph_fraction"
        else [e for e, g in grids.items() if not (np.nan_to_num(g.to_numpy()) > 0).any()]
    )
    panels: dict[str, pd.DataFrame] = {}  # title -> grid; identical maps share one panel
    for engine, grid in grids.items():
        if engine in never and len(never) < len(grids):
            continue
        same = next((t for t, g in panels.items() if g.equals(grid)), None)
        if same is None:
            panels[engine] = grid
        else:
            panels[f"{same} = {engine}"] = panels.pop(same)
    ncols = min(len(panels), 3)
    nrows = -(-len(panels) // ncols)
    fig = Figure(figsize=(WIDTH_IN, 2.9 * nrows + 0.9), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).ravel()
    for ax in axes[len(panels) :]:
        ax.set_visible(False)
    axes = axes[: len(panels)]
    finite = finite[np.isfinite(finite)]
    vmin, vmax = (0.0, 1.0) if value == "graph_fraction" else (0.0, max(1.0, finite.max(initial=0)))
    image = None
    for ax, (title, grid) in zip(axes, panels.items()):
        image = ax.imshow(
            grid.to_numpy(),
            origin="lower",
            aspect="auto",
            cmap=cmap,
            vmin=vmin,
            vmax=vmax,
            interpolation="nearest",
        )
        ax.set_xticks(range(grid.shape[1]), [str(k) for k in grid.columns])
        step = max(1, len(grid.index) // 12)
        ax.set_yticks(range(0, len(grid.index), step), [str(s) for s in grid.index[::step]])
        if grid.size <= 120:  # small maps: print each cell's value
            for (i, j), v in np.ndenumerate(grid.to_numpy()):
                text = (
                    ""
                    if not np.isfinite(v)
                    else (f"{v:.2f}" if value == "graph_fraction" else f"{v:.0f}")
                )
                ax.text(j, i, text, ha="center", va="center", fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("num_speculative_tokens k")
        ax.set_ylabel("max_num_seqs S")
    fig.colorbar(image, ax=list(axes), label=label, shrink=0.9)
    where = ""
    if "backend" in df.columns and "device" in df.columns:
        where = f" (rows: {single_value(df, 'backend')} on {single_value(df, 'device')})"
    blank = "; blank: no crash" if value == "first_crash_n" else ""
    lines = [f"Crash map: {label}", f"computed from the sizing rules, not measured{where}{blank}"]
    if never and len(never) < len(grids):
        lines.append(f"no crash anywhere on this grid, so no panel: {', '.join(never)}")
    if any(" = " in t for t in panels):
        lines.append(
            "a panel titled a = b: the two engines' maps are identical"
            + (f" ({note})" if note else "")
        )
    elif note:
        lines.append(note)
    fig.suptitle("\n".join(lines), fontsize=9)
    return fig
