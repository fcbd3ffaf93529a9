"""The GPU check's targets and what its CSVs say against them, as frames and values
(graphlab.views.report words them): the target table, replay checked against eager, the
graph-memory predictor's accuracy, the V1 cliff, the GPU clocks per step, and which expected rows
a run left out (so a step that timed out reads incomplete, not a short table).

Read by scripts/gpu_check.sh's report (scripts/gpu_bench.py) from latency.csv, graph_memory.csv
and the other sweep CSVs.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import pandas as pd

from graphlab.bench.suites import Suite
from graphlab.bench.sweeps import LATENCY_ENGINE
from graphlab.sizing.dispatch import BatchUnit, RunMode

# name -> (threshold, whether the value must reach it from above). The project's goals:
TARGETS = {
    # A ~100M model at batch 1 is launch-bound: one replay replaces hundreds of launches.
    "replay speedup at batch 1 (eager / graph)": (4.0, True),
    # At batch 1 a step reads every weight once; the floor uses this device's copy bandwidth.
    "graph step at batch 1 / copy-bandwidth floor": (1.6, False),
    # A capture records one step's launches: far under a second even for V0's 35 sizes.
    "slowest capture (ms)": (50.0, False),
    # Captured largest first, smaller graphs reuse the largest one's blocks.
    "shared pool / largest graph's own pool": (1.25, False),
}


REPLAY_MISMATCH = "replay differs from eager"


# Per GPU clock of clocks.csv: the statistics step_clocks gives each step, in its columns' order.
CLOCKS = ("sm", "mem")
CLOCK_STATS = ("median", "min", "max")


def step_clocks(clocks: pd.DataFrame | None, steps: pd.DataFrame) -> pd.DataFrame | None:
    """Per step of steps.tsv (start_unix, end_unix): the GPU's SM and memory clocks sampled
    while it ran (clocks.csv: unix_s, sm_mhz, mem_mhz), median, min and max MHz and the sample
    count, so a slow step can be told from a throttled one; None where nothing was sampled."""
    if clocks is None or clocks.empty:
        return None
    clocks = clocks.apply(pd.to_numeric, errors="coerce")  # "[N/A]" where a field is unsupported
    rows = []
    for step in steps.dropna(subset=["start_unix", "end_unix"]).itertuples():
        during = clocks[clocks["unix_s"].between(step.start_unix, step.end_unix)]
        if during.empty:
            continue
        stats = {
            f"{clock}_{stat}": getattr(during[f"{clock}_mhz"], stat)()
            for clock in CLOCKS
            for stat in CLOCK_STATS
        }
        rows.append(dict(step=step.step, **stats, samples=len(during)))
    columns = ["step", *(f"{c}_{s}" for c in CLOCKS for s in CLOCK_STATS), "samples"]
    return pd.DataFrame(rows, columns=columns)


class ReplayMismatch(ValueError):
    """The graph row's first replay missed the eager logits beyond its tolerance."""


def replay_check(latency: pd.DataFrame) -> pd.DataFrame | None:
    """Per (model, engine): how many graph-path rows were checked against eager (`sizes`), the
    worst diff over its tolerance (`worst`) and the batch sizes beyond tolerance (`beyond`);
    None where latency.csv has no max_abs_logit_diff column."""
    if "max_abs_logit_diff" not in latency.columns:
        return None
    checked = latency[latency["max_abs_logit_diff"].notna()]
    rows = []
    for (model, engine), part in checked.groupby(["model", "engine"], sort=False):
        ratio = part["max_abs_logit_diff"] / part["logit_tolerance"]
        rows.append(
            dict(
                model=model,
                engine=engine,
                sizes=len(part),
                worst=ratio.max(),
                beyond=part.loc[ratio > 1, "batch_size"].tolist(),
            )
        )
    return pd.DataFrame(rows, columns=["model", "engine", "sizes", "worst", "beyond"])


def summarize_targets(
    latency: pd.DataFrame, memory: pd.DataFrame, small: str, large: str
) -> pd.DataFrame:
    """One row per target from latency.csv and graph_memory.csv rows of both presets.

    `small` names the preset of the launch-bound targets (100m on the GPU check), `large` the
    one held against the copy-bandwidth floor (1b); the shared-pool ratio is given for both.
    Memory compares pool_bytes where measured, the predictions otherwise (memory_kind says
    which). A target whose rows are missing (its step failed) gets an empty value, not met.
    The targets are the V0 guard's (LATENCY_ENGINE): V1 rows count tokens, not rows.
    A graph row whose first replay's logits missed the eager step's (replay_matches_eager
    False) gives no speed-up and no floor ratio: its backend reads REPLAY_MISMATCH.
    """
    latency, memory = (
        frame[frame["engine"] == LATENCY_ENGINE] if "engine" in frame else frame
        for frame in (latency, memory)
    )

    def at_batch_1(preset, mode):
        rows = latency[(latency["model"] == preset) & (latency["mode"] == mode)]
        row = rows[rows["batch_size"] == 1].iloc[0]
        if str(row.get("replay_matches_eager")) == "False":  # a wrong replay is no speed-up
            raise ReplayMismatch(preset)
        return row

    def captures(preset, pool):
        return memory[(memory["model"] == preset) & (memory["graph_pool"] == pool)]

    def speedup():
        graph, eager = at_batch_1(small, "graph"), at_batch_1(small, "eager")
        return eager["median_ms"] / graph["median_ms"], graph["backend"], None

    def floor_ratio():
        graph = at_batch_1(large, "graph")
        return graph["median_ms"] / graph["bandwidth_floor_ms"], graph["backend"], None

    def slowest_capture():
        shared = captures(small, "shared")
        return shared["capture_ms"].max(), shared["backend"].iloc[0], None

    def pool_ratio(preset):
        shared, separate = captures(preset, "shared"), captures(preset, "separate")
        kind = shared["memory_kind"].iloc[0]
        key = "pool_bytes" if kind == "measured" else "memory_bytes"
        largest = separate.loc[separate["capture_size"].idxmax()]
        return shared[key].sum() / largest[key], shared["backend"].iloc[0], kind

    values = {
        "replay speedup at batch 1 (eager / graph)": [(small, speedup)],
        "graph step at batch 1 / copy-bandwidth floor": [(large, floor_ratio)],
        "slowest capture (ms)": [(small, slowest_capture)],
        "shared pool / largest graph's own pool": [
            (preset, functools.partial(pool_ratio, preset))
            for preset in dict.fromkeys((small, large))
        ],
    }
    rows = []
    for name, results in values.items():
        threshold, at_least = TARGETS[name]
        for preset, compute in results:
            try:
                value, backend, kind = compute()
            except ReplayMismatch:
                value, backend, kind = float("nan"), REPLAY_MISMATCH, None
            except (IndexError, KeyError, ValueError):
                value, backend, kind = float("nan"), "missing", None
            met = value >= threshold if at_least else value <= threshold
            rows.append(
                dict(
                    target=name,
                    model=preset,
                    value=float(value),
                    threshold=threshold,
                    met=bool(met),
                    backend=backend,
                    memory_kind=kind,
                )
            )
    return pd.DataFrame(rows)


def predictor_accuracy(memory: pd.DataFrame) -> pd.DataFrame | None:
    """Per (model, engine, pool): predicted / measured graph memory, all graphs and per size."""
    measured = memory[memory["predicted_over_measured"].notna()]
    if measured.empty:
        return None
    groups = measured.groupby(["model", "engine", "graph_pool"], sort=False)[
        "predicted_over_measured"
    ]
    return pd.DataFrame(
        {
            "all_graphs": groups.last(),
            "min_over_sizes": groups.min(),
            "max_over_sizes": groups.max(),
        }
    ).reset_index()


def loop_memory(memory: pd.DataFrame) -> pd.DataFrame:
    """Per (model, engine, pool): the whole capture loop's free-memory drop in GiB beside the
    sum of the per-graph drops (the sum misses what the loop keeps between captures)."""
    groups = memory.groupby(["model", "engine", "graph_pool", "memory_kind"], sort=False)
    frame = pd.DataFrame(
        {
            "capture_loop_GiB": groups["capture_loop_bytes"].first() / 2**30,
            "per_graph_sum_GiB": groups["memory_bytes"].sum() / 2**30,
        }
    )
    return frame.reset_index()


# What v1_cliff gives of the graph-mode row on each side of the largest captured token count.
CLIFF_SIDE = ("batch_size", "path", "median_ms")


def v1_cliff(latency: pd.DataFrame) -> pd.DataFrame:
    """Per (model, V1 engine): k, backend, the largest captured token count (graph_limit) and
    the graph-mode step just below (at) it and just above it (below_* and above_*: empty where
    the sweep has no such size), where the verify step leaves the graphs."""
    sides = [f"{side}_{field}" for side in ("below", "above") for field in CLIFF_SIDE]
    columns = ["model", "engine", "num_speculative_tokens", "backend", "graph_limit", *sides]
    if "batch_unit" not in latency.columns:
        return pd.DataFrame(columns=columns)
    rows = latency[(latency["batch_unit"] == BatchUnit.TOKENS) & (latency["mode"] == RunMode.GRAPH)]
    found = []
    for (model, engine), group in rows.groupby(["model", "engine"], sort=False):
        limit = int(group["graph_limit"].iloc[0])
        below, above = group[group["batch_size"] <= limit], group[group["batch_size"] > limit]
        row = dict(
            model=model,
            engine=engine,
            num_speculative_tokens=int(group["num_speculative_tokens"].iloc[0]),
            backend=group["backend"].iloc[0],
            graph_limit=limit,
        )
        for side, part, nearest in (("below", below, "idxmax"), ("above", above, "idxmin")):
            if len(part):
                at = part.loc[getattr(part["batch_size"], nearest)()]
                row |= {f"{side}_{field}": at[field] for field in CLIFF_SIDE}
        found.append(row)
    return pd.DataFrame(found, columns=columns)


# Per sweep CSV: the column whose every value each expected engine must have rows for.
EXPECTED_SPLIT = {
    "latency": ("mode", ("eager", "graph")),
    "graph_memory": ("graph_pool", ("shared", "separate")),
}


def expected_engines(suite: Suite, sweep: str, with_v1: bool = True) -> tuple[str, ...]:
    """The engines whose rows `sweep` of `suite` writes (empty: rows carry no engine)."""
    if sweep in EXPECTED_SPLIT:
        v1 = (suite.v1_engine,) if with_v1 and suite.v1_sizing is not None else ()
        return (LATENCY_ENGINE, *v1)
    if sweep in ("spec_decode", "spec_decode_steps"):
        return tuple(suite.spec_engines)
    return ()


class Gap(NamedTuple):
    """Rows a sweep's CSV lacks: the file (`found` False), any row (no `engine`), an engine's
    rows, or an engine's rows with one `value` of `column` (EXPECTED_SPLIT)."""

    sweep: str
    found: bool = True
    engine: str | None = None
    column: str | None = None
    value: str | None = None


def missing_rows(sweep: str, frame: pd.DataFrame | None, engines: tuple[str, ...]) -> list[Gap]:
    """What a sweep's CSV lacks of the rows its step writes when it runs to the end: the file,
    any row, an engine's rows, or an engine's rows of one mode (latency) or pool (graph memory).
    A step timed out after its first engine leaves a CSV that exists but is not complete."""
    if frame is None:
        return [Gap(sweep, found=False)]
    if frame.empty:
        return [Gap(sweep)]
    gaps = []
    for engine in engines:
        rows = frame[frame["engine"] == engine]
        if rows.empty:
            gaps.append(Gap(sweep, engine=engine))
        elif sweep in EXPECTED_SPLIT:
            column, values = EXPECTED_SPLIT[sweep]
            gaps += [
                Gap(sweep, engine=engine, column=column, value=value)
                for value in values
                if value not in set(rows[column])
            ]
    return gaps
