"""The speculative decoding figure: throughput, scorer graph share and graph memory per engine."""

from __future__ import annotations

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from graphlab.errors import BadInput
from graphlab.sizing.engines import MIB
from graphlab.views.style import WIDTH_IN, provenance_title, require_columns

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
    target model's graph memory; with a `run` column, each bar is the median of the runs and
    the throughput bar's whisker their min-max. Acceptance does not depend on the engine's
    sizing (same load, same models); it is printed under each group, as vLLM V1's mean
    acceptance length where the frame has it, else as V0's draft_acceptance_rate, named so.
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
        raise BadInput(
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
    runs = df["run"].nunique() if "run" in df.columns else 1
    keys = [(int(s), int(k)) for s, k in configs]
    for i, engine in enumerate(engines):
        grouped = df[df["engine"] == engine].groupby(["max_num_seqs", "num_speculative_tokens"])
        for ax, (column, scale, _) in zip(axes, panels):
            at = (grouped[column].agg(["median", "min", "max"]) * scale).reindex(keys)
            values = at["median"].to_numpy()
            # Several runs: the bar is their median, the whisker their min-max (throughput only)
            spread = runs > 1 and column == "tokens_per_s"
            errors = [values - at["min"].to_numpy(), at["max"].to_numpy() - values]
            ax.bar(
                x + (i - (len(engines) - 1) / 2) * width,
                values,
                width,
                yerr=errors if spread else None,
                capsize=3,
                label=engine,
            )
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
            "Speculative decoding per engine, scorer: "
            + (", ".join(scorers) or "batch-expansion")
            + (
                f"; median of {runs} runs, whiskers min-max"
                if runs > 1
                else "; one run: no spread, no verdict"
            ),
        ),
        fontsize=9,
    )
    return fig
