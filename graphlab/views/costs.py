"""Figures of what the fixes cost: a run's decode steps coloured by path (the guard's price), and
adaptive sizing's coverage, graphs, capture time and graph memory over k (adaptive's price).

Takes the frames of graphlab.bench (a run's steps with provenance columns); titles name the
backend and device as graphlab.views.style does.
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from graphlab.sizing.dispatch import BatchPath
from graphlab.sizing.engines import MIB
from graphlab.views.style import (
    PATH_COLORS,
    PATH_MARKERS,
    WIDTH_IN,
    provenance_title,
    require_columns,
    single_value,
)
from graphlab.views.verdicts import sentence


def plot_step_timeline(steps: pd.DataFrame, limit: int | None = None) -> Figure:
    """Each decode step's scorer time (top) and scorer batch size (bottom) in step order,
    coloured by the path it took; `limit` draws the graph limit on the batch-size panel."""
    require_columns(steps, ("step", "kind", "path", "batch_size", "scorer_ms"))
    decode = steps[steps["kind"] == "decode"]
    fig = Figure(figsize=(WIDTH_IN, 5.5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    for path, color in PATH_COLORS.items():
        marker = PATH_MARKERS[path]
        part = decode[decode["path"] == path]
        if part.empty:
            continue
        median = part["scorer_ms"].median()
        top.scatter(
            part["step"],
            part["scorer_ms"],
            color=color,
            marker=marker,
            s=14,
            label=f"{path}: {len(part)} steps, median {median:.3f} ms",
        )
        bottom.scatter(part["step"], part["batch_size"], color=color, marker=marker, s=10)
    if limit is not None:
        bottom.axhline(limit, color="grey", ls="--", lw=1, label=f"graph limit {limit}")
        bottom.legend(fontsize=8)
    top.set_ylabel("scorer step time (ms)")
    top.set_ylim(bottom=0)
    top.legend(fontsize=8)
    bottom.set_xlabel("decode step")
    bottom.set_ylabel("scorer batch (rows)")
    fig.suptitle(
        provenance_title(steps, "Decode steps of the run, by path").replace("; ", "\n", 1),
        fontsize=10,
    )
    return fig


# (column, y label, scale) of each panel of plot_adaptive_price, in reading order.
_PRICE_PANELS = (
    ("graph_fraction", "reachable batches on a graph", 1),
    ("num_graphs", "graphs captured", 1),
    ("capture_ms", "capture time (ms),\nafter a warm-up capture", 1),
    ("memory_bytes", "graph memory (MiB)", MIB),
)
_ENGINE_MARKERS = ("o", "s", "^", "D")


def plot_adaptive_price(price: pd.DataFrame) -> Figure:
    """Per engine, against k: coverage (graph fraction), graphs captured, their capture time
    and graph memory (adaptive_price's frame): what covering the expanded batch costs."""
    require_columns(
        price,
        ("engine", "num_speculative_tokens", "max_num_seqs", "memory_kind")
        + tuple(column for column, _, _ in _PRICE_PANELS),
    )
    fig = Figure(figsize=(WIDTH_IN, 5.6), layout="constrained")
    axes = fig.subplots(2, 2, sharex=True).ravel()
    engines = list(dict.fromkeys(price["engine"]))
    for ax, (column, label, scale) in zip(axes, _PRICE_PANELS):
        for engine, marker in zip(engines, _ENGINE_MARKERS):
            rows = price[price["engine"] == engine].sort_values("num_speculative_tokens")
            ax.plot(
                rows["num_speculative_tokens"], rows[column] / scale, marker=marker, label=engine
            )
        ax.set_ylabel(
            label if column != "memory_bytes" else f"{label},\n{single_value(price, 'memory_kind')}"
        )
        ax.set_ylim(bottom=0)
    for ax in axes[2:]:
        ax.set_xlabel("k (num_speculative_tokens)")
    axes[0].legend(fontsize=8)
    what = f"Adaptive sizing's price over k, max_num_seqs = {single_value(price, 'max_num_seqs')}"
    # The device's long name and the memory note on lines of their own: the title fits.
    fig.suptitle(provenance_title(price, what).replace("; ", "\n", 1), fontsize=10)
    return fig


def guard_price_line(cost: dict) -> str:
    """Two lines for a run's guard cost (graphlab.bench.costs.guard_run_cost's dict): its
    milliseconds with their interval, then the comparison's sentence, verdict included."""
    low, high = cost["ms_ci_low"], cost["ms_ci_high"]
    # Decimals enough that a bound off 0 does not print as +0.0 (its side is the verdict's).
    digits = next((d for d in range(1, 4) if all(b == 0 or round(b, d) for b in (low, high))), 4)
    return (
        f"guard cost over the run's {cost['steps']} decode steps: {cost['ms']:+.{digits}f} ms "
        f"(95% CI {low:+.{digits}f}..{high:+.{digits}f});\n"
        + sentence(cost["comparison"], "the guard's step, weighted by the steps met,", "adaptive's")
    )


def plot_guard_price(price: pd.DataFrame, steps_met, cost: dict) -> Figure:
    """Per scorer batch size (eager_ratio's frame): the guard's step (orange where it ran
    eagerly) and adaptive's replayed step, medians with their intervals (top); the decode steps
    the run met at each size (bottom); the title gives the run's total (guard_price_line)."""
    require_columns(
        price,
        ("path", "guard_ms", "guard_ci_low", "guard_ci_high", "covering_ms")
        + ("covering_ci_low", "covering_ci_high", "backend", "device"),
    )
    fig = Figure(figsize=(WIDTH_IN, 5.6), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    sizes = price.index.to_numpy()

    def bars(rows, prefix, **style):
        errors = (
            [rows[f"{prefix}_ms"] - rows[f"{prefix}_ci_low"]],
            [rows[f"{prefix}_ci_high"] - rows[f"{prefix}_ms"]],
        )
        # the guard's markers a quarter step right: both intervals stay readable
        x = rows.index + (0.25 if prefix == "guard" else 0)
        top.errorbar(x, rows[f"{prefix}_ms"], yerr=errors[0] + errors[1], **style)

    bars(
        price,
        "covering",
        fmt="o",
        ms=4,
        capsize=2,
        color=PATH_COLORS["graph"],
        label="adaptive: replayed step",
    )
    for path in (BatchPath.GRAPH, BatchPath.EAGER):
        rows = price[price["path"] == path]
        if not rows.empty:
            bars(
                rows,
                "guard",
                fmt=PATH_MARKERS[path],
                ms=4,
                capsize=2,
                mfc="none",
                color=PATH_COLORS[path],
                label=f"guard: {path} step",
            )
    top.set_ylabel("step time (ms), median\nand 95% bootstrap interval")
    top.set_ylim(bottom=0)
    top.legend(fontsize=8)
    met = pd.Series(steps_met, dtype=float).reindex(sizes, fill_value=0)
    bottom.bar(sizes, met.to_numpy(), color=[PATH_COLORS[p] for p in price["path"]], width=0.8)
    bottom.set_xlabel("scorer batch size (rows)")
    bottom.set_ylabel("decode steps\nthe run met")
    what = "The guard's price per scorer batch size\n" + guard_price_line(cost)
    fig.suptitle(provenance_title(price, what), fontsize=9)
    return fig


def priced_table(priced: pd.DataFrame, reference: str = "adaptive") -> pd.DataFrame:
    """graphlab.bench.priced.priced_sizing's frame in five narrow columns, each interval beside its
    figure, so the table fits a notebook's width."""
    require_columns(priced, ("graph_fraction", "mean_padding_waste", "mean_step_ms"))

    def interval(value, low, high, verdict=""):
        if pd.isna(value):
            return ""
        shown = f"{value:.3f}" if pd.isna(low) else f"{value:.3f} ({low:.3f}-{high:.3f})"
        return f"{shown} {verdict}".strip() if isinstance(verdict, str) else shown

    column = priced.get  # absent columns: a frame priced without samples has no intervals
    empty = pd.Series(index=priced.index, dtype=float)
    ci = (column("mean_step_ci_low", empty), column("mean_step_ci_high", empty))
    ratio = [column(f"over_reference_{part}", empty) for part in ("ratio", "ci_low", "ci_high")]
    verdicts = column("over_reference_verdict", pd.Series("", index=priced.index))
    return pd.DataFrame(
        {
            "graph fraction": priced["graph_fraction"].round(3),
            "mean padding": priced["mean_padding_waste"].round(3),
            "mean step ms (95% interval)": list(map(interval, priced["mean_step_ms"], *ci)),
            f"over {reference}'s (95% interval)": list(map(interval, *ratio, verdicts)),
        },
        index=priced.index,
    )
