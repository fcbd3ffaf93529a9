"""Figures from the tidy benchmark frames (the only module that imports matplotlib).

Each function takes a DataFrame shaped like one of the CSVs in data/ (columns in data/README.md)
and returns a matplotlib Figure. Titles always name the backend and the device, and say
"cpu-emulated" / "predicted" in words where that applies, so an emulated or predicted number is
never mistaken for a GPU measurement.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from graphlab.errors import GraphlabError, check_choice
from graphlab.sizing.engines import MIB

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
_GRAPH_PATHS = ("graph", "full", "piecewise")
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
        raise GraphlabError(f"frame has no {column!r} column; plots need the provenance columns")
    values = sorted(df[column].dropna().astype(str).unique())
    if len(values) != 1:
        raise GraphlabError(f"frame mixes {column} values {values}; plot one {column} at a time")
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
        raise GraphlabError(f"frame lacks columns {missing}; see data/README.md for the schema")
    if df.empty:
        raise GraphlabError("frame is empty: nothing to plot")


def batch_unit_of(rows: pd.DataFrame) -> str:
    """V1 rows count tokens (batch_unit "tokens"); V0 rows count rows or leave the column empty."""
    tokens = "batch_unit" in rows.columns and bool((rows["batch_unit"] == "tokens").all())
    return "tokens" if tokens else "rows"


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
        for mode in ("eager", "graph", "compiled-graph"):
            part = rows[(rows["mode"] == mode) & (rows["path"] != "crash")]
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
        in_graph_mode = rows[rows["mode"] == "graph"]
        for path, color in PATH_COLORS.items():
            hits = in_graph_mode[in_graph_mode["path"] == path]
            if hits.empty:
                continue
            # A crashed step has no latency: mark it on the x axis.
            y = hits["median_ms"] if path != "crash" else np.zeros(len(hits))
            top.scatter(
                hits["batch_size"],
                y,
                color=color,
                marker=PATH_MARKERS[path],
                s=18,
                zorder=3,
                label=f"graph mode, ran {path}" if path != "crash" else "graph mode: KeyError",
            )
        graphed = in_graph_mode[in_graph_mode["path"].isin(_GRAPH_PATHS)]
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
            if unit == "tokens"
            else "batch size (rows per decode step)"
        )
        bottom.set_ylabel(f"padded size ({unit})")
        top.legend(fontsize=8)
        bottom.legend(fontsize=8)
    fig.suptitle(
        provenance_title(
            df,
            "Verify-step latency against tokens"
            if batch_unit_of(df) == "tokens"
            else "Decode latency against batch size",
        ),
        fontsize=9,
    )
    return fig


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
        lines.append("a = b: identical maps" + (f" ({note})" if note else ""))
    elif note:
        lines.append(note)
    fig.suptitle("\n".join(lines), fontsize=9)
    return fig


# What a "capture" is on the backends that record no CUDA graph.
CAPTURE_TITLES = {
    "cpu-emulated": "emulated capture: one eager\nstep, no graph recorded",
    "cpu-compiled": "compiled capture: one compiled\nstep (the first pays the compile)",
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
    fig.suptitle(provenance_title(df, "CUDA graph memory against batch size"), fontsize=9)
    return fig


# Acceptance in the vocabulary of the engine whose metric it is (vllm/v1/spec_decode/metrics.py,
# vllm/spec_decode/metrics.py); the first column present is shown.
# The last field names the number on each tick label.
_ACCEPTANCE = (
    ("mean_acceptance_length", "mean acceptance length (vLLM V1)", ".2f", "accept. len"),
    ("draft_acceptance_rate", "draft_acceptance_rate (vLLM V0)", ".3f", "accept. rate"),
)


def plot_spec_decode(df: pd.DataFrame) -> Figure:
    """Speculative decoding per engine, one bar group per (max_num_seqs, k).

    Panels: decode tokens per second, the share of scorer steps that replayed a graph, and the
    target model's graph memory. Acceptance does not depend on the engine's sizing (same load,
    same models); it is printed under each group, as vLLM V1's mean acceptance length where the
    frame has it, else as V0's draft_acceptance_rate, named so.
    """
    require_columns(
        df,
        (
            "engine",
            "max_num_seqs",
            "num_speculative_tokens",
            "tokens_per_s",
            "scorer_graph_fraction",
            "target_graph_memory_bytes",
            "memory_kind",
        ),
    )
    present = [a for a in _ACCEPTANCE if a[0] in df.columns]
    if not present:
        raise GraphlabError(
            f"frame lacks an acceptance column (one of "
            f"{[a[0] for a in _ACCEPTANCE]}); see data/README.md for the schema"
        )
    acceptance, acceptance_label, fmt, tick_name = present[0]
    configs = (
        df[["max_num_seqs", "num_speculative_tokens"]]
        .drop_duplicates()
        .sort_values(["max_num_seqs", "num_speculative_tokens"])
        .to_records(index=False)
    )
    engines = list(dict.fromkeys(df["engine"]))
    width = 0.8 / len(engines)
    fig = Figure(figsize=(WIDTH_IN, 4.0), layout="constrained")
    axes = fig.subplots(1, 3)
    panels = (
        ("tokens_per_s", 1.0, "decode throughput (tokens/s)"),
        ("scorer_graph_fraction", 1.0, "scorer steps on a graph (fraction)"),
        ("target_graph_memory_bytes", 1 / MIB, "target graph memory (MiB)"),
    )
    labels = []
    for seqs, k in configs:
        cell = df[(df["max_num_seqs"] == seqs) & (df["num_speculative_tokens"] == k)]
        labels.append(f"S={seqs}, k={k}\n{tick_name} {format(cell[acceptance].mean(), fmt)}")
    x = np.arange(len(configs))
    for i, engine in enumerate(engines):
        rows = df[df["engine"] == engine].set_index(["max_num_seqs", "num_speculative_tokens"])
        for ax, (column, scale, _) in zip(axes, panels):
            values = [rows[column].get((s, k), np.nan) * scale for s, k in configs]
            ax.bar(x + (i - (len(engines) - 1) / 2) * width, values, width, label=engine)
    for ax, (_, _, label) in zip(axes, panels):
        ax.set_xticks(x, labels, fontsize=8)
        ax.set_ylabel(label, fontsize=9)
        ax.set_ylim(0, ax.get_ylim()[1] * 1.25)  # room for the legend above the bars
    axes[0].legend(fontsize=8, loc="upper left")  # one legend: the same engines in every panel
    fig.supxlabel(
        f"S = max_num_seqs, k = num_speculative_tokens; {tick_name}: {acceptance_label}", fontsize=9
    )
    axes[1].set_ylim(0, 1.3)
    scorers = sorted(df["scorer"].dropna().unique()) if "scorer" in df.columns else []
    fig.suptitle(
        provenance_title(
            df,
            "Speculative decoding per engine, scorer: " + (", ".join(scorers) or "batch-expansion"),
        ),
        fontsize=9,
    )
    return fig


def reference_figures(folder) -> list[tuple[str, Figure]]:
    """The figures of one reference run (a folder of bench CSVs, e.g. data/cpu): latency and graph
    memory per model, then speculative decoding; names like 'latency_tiny'. Missing CSVs are
    skipped."""
    from pathlib import Path

    folder = Path(folder)
    figures = []
    for stem, plot in (("latency", plot_latency), ("graph_memory", plot_graph_memory)):
        if (folder / f"{stem}.csv").is_file():
            for model, rows in pd.read_csv(folder / f"{stem}.csv").groupby("model"):
                figures.append((f"{stem}_{model}", plot(rows)))
    if (folder / "spec_decode.csv").is_file():
        figures.append(("spec_decode", plot_spec_decode(pd.read_csv(folder / "spec_decode.csv"))))
    return figures


def plot_plan(result) -> Figure:
    """A graphlab.sizing.plan.Plan: padding waste per decode step size, the engine's default against
    the plan; ticks mark the captured sizes (default below, plan above) and crosses the steps that
    run eagerly."""
    fig = Figure(figsize=(WIDTH_IN, 4.4), layout="constrained")
    ax = fig.add_subplot()
    ns = result.workload.sizes
    for label, outcome, color in (
        ("default", result.default, "tab:orange"),
        ("plan", result.plan, "tab:blue"),
    ):
        on_graph = outcome.padded > 0
        summary = (
            f"{label}: {len(outcome.capture_sizes)} graphs, "
            f"mean waste {outcome.mean_padding_waste:.2f}, "
            f"graph fraction {outcome.graph_fraction:.3f}"
            + (
                f", {outcome.mean_step_ms:.3f} ms/step ({result.latency_backend})"
                if outcome.mean_step_ms is not None
                else ""
            )
        )
        ax.plot(
            ns[on_graph],
            (outcome.padded - ns)[on_graph],
            ".",
            markersize=4,
            color=color,
            label=summary,
        )
        ax.plot(
            ns[~on_graph],
            np.zeros((~on_graph).sum()),
            "x",
            color=color,
            label=f"{label}: eager steps",
        )
        ymin, ymax = (0.0, 0.04) if label == "default" else (0.96, 1.0)
        for size in outcome.capture_sizes:
            ax.axvline(size, ymin=ymin, ymax=ymax, color=color, linewidth=0.8)
    ax.set_xlabel(f"decode step size n (tokens; {result.workload.source} workload)")
    ax.set_ylabel("padding waste: padded size - n (tokens)")
    cfg = result.config
    fig.suptitle(
        f"{result.engine}, max_num_seqs={cfg.max_num_seqs}, k={cfg.num_speculative_tokens}, "
        f"max_num_batched_tokens={result.max_num_batched_tokens}:\ncapture sizes, default vs "
        f"plan ({result.cost} cost)",
        fontsize=10,
    )
    # Below the axes, off the data: the summaries are long.
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", fontsize=8, ncols=2)
    return fig


def plot_eager_ratio(df: pd.DataFrame, smallest: int, largest: int) -> Figure:
    """Eager over graph median step latency at batch sizes smallest..largest, one line per model.

    df: a latency CSV of one backend and device. Above 1, replaying a graph was faster; on a
    cpu-emulated run both paths are eager forwards, and the title says so.
    """
    require_columns(df, ("model", "batch_size", "mode", "median_ms"))
    near = df[(df["batch_size"] >= smallest) & (df["batch_size"] <= largest)]
    if near.empty:
        raise GraphlabError(f"no latency rows at batch sizes {smallest}..{largest}")
    table = near.pivot_table(index=["model", "batch_size"], columns="mode", values="median_ms")
    fig = Figure(figsize=(WIDTH_IN, 3.4), layout="constrained")
    ax = fig.add_subplot()
    for model, part in (table["eager"] / table["graph"]).groupby(level="model"):
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
