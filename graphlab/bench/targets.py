"""The GPU check's targets and what its CSVs say against them: the target table, replay checked
against eager, the graph-memory predictor's accuracy, the V1 cliff, and which expected rows a run
left out (so a step that timed out reads incomplete, not a short table).

Read by scripts/gpu_check.sh's report (scripts/gpu_bench.py) from latency.csv, graph_memory.csv
and the other sweep CSVs.
"""

from __future__ import annotations

import functools

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


def clock_lines(clocks: pd.DataFrame | None, steps: pd.DataFrame) -> list[str]:
    """Per step of steps.tsv (start_unix, end_unix): the GPU's SM and memory clocks sampled
    while it ran (clocks.csv: unix_s, sm_mhz, mem_mhz), median (min-max) MHz, so a slow step
    can be told from a throttled one."""
    if clocks is None or clocks.empty:
        return ["== GPU clocks: not sampled (no nvidia-smi here)"]
    clocks = clocks.apply(pd.to_numeric, errors="coerce")  # "[N/A]" where a field is unsupported
    lines = ["== GPU clocks while each step ran, MHz, median (min-max) of 0.5 s samples"]
    for step in steps.dropna(subset=["start_unix", "end_unix"]).itertuples():
        during = clocks[clocks["unix_s"].between(step.start_unix, step.end_unix)]
        if during.empty:
            continue
        sm, mem = during["sm_mhz"], during["mem_mhz"]
        lines.append(
            f"{step.step}: SM {sm.median():.0f} ({sm.min():.0f}-{sm.max():.0f}), memory "
            f"{mem.median():.0f} ({mem.min():.0f}-{mem.max():.0f}), {len(during)} samples"
        )
    return lines


class ReplayMismatch(ValueError):
    """The graph row's first replay missed the eager logits beyond its tolerance."""


def replay_lines(latency: pd.DataFrame) -> list[str]:
    """Per (model, engine): graph-path rows checked against eager, the worst diff / tolerance,
    and the batch sizes beyond tolerance, named loudly."""
    if "max_abs_logit_diff" not in latency.columns:
        return ["== replay vs eager: no max_abs_logit_diff in latency.csv"]
    checked = latency[latency["max_abs_logit_diff"].notna()]
    lines = []
    for (model, engine), rows in checked.groupby(["model", "engine"], sort=False):
        ratio = rows["max_abs_logit_diff"] / rows["logit_tolerance"]
        bad = rows.loc[ratio > 1, "batch_size"].tolist()
        lines.append(
            f"== replay vs eager ({model}, {engine}): {len(rows)} graph-path sizes, "
            f"worst diff {ratio.max():.3g} x tolerance; "
            + (f"BEYOND TOLERANCE at batch sizes {bad}" if bad else "all within")
        )
    return lines or ["== replay vs eager: no graph-path rows in latency.csv"]


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


def v1_cliff(latency: pd.DataFrame) -> list[str]:
    """Per (model, V1 engine): the largest captured token count and the graph-mode step just
    below (at) it and just above it, where the verify step leaves the graphs."""
    if "batch_unit" not in latency.columns:
        return []
    rows = latency[(latency["batch_unit"] == BatchUnit.TOKENS) & (latency["mode"] == RunMode.GRAPH)]
    lines = []
    for (model, engine), group in rows.groupby(["model", "engine"], sort=False):
        limit = int(group["graph_limit"].iloc[0])
        below, above = group[group["batch_size"] <= limit], group[group["batch_size"] > limit]
        sides = [
            f"{int(r['batch_size'])} tokens ({r['path']}) {r['median_ms']:.3g} ms"
            for r in (
                below.loc[below["batch_size"].idxmax()] if len(below) else None,
                above.loc[above["batch_size"].idxmin()] if len(above) else None,
            )
            if r is not None
        ]
        k, backend = int(group["num_speculative_tokens"].iloc[0]), group["backend"].iloc[0]
        lines.append(
            f"== V1 cliff ({engine}, {model}, k={k}, {backend}): largest captured "
            f"{limit} tokens; median step {' -> '.join(sides)}"
        )
    return lines


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


def missing_rows(sweep: str, frame: pd.DataFrame | None, engines: tuple[str, ...]) -> list[str]:
    """What a sweep's CSV lacks of the rows its step writes when it runs to the end: the file,
    any row, an engine's rows, or an engine's rows of one mode (latency) or pool (graph memory).
    A step timed out after its first engine leaves a CSV that exists but is not complete."""
    if frame is None:
        return [f"{sweep}.csv missing"]
    if frame.empty:
        return [f"{sweep}.csv has no rows"]
    gaps = []
    for engine in engines:
        rows = frame[frame["engine"] == engine]
        if rows.empty:
            gaps.append(f"{sweep}.csv has no {engine} rows")
        elif sweep in EXPECTED_SPLIT:
            column, values = EXPECTED_SPLIT[sweep]
            gaps += [
                f"{sweep}.csv has no {engine} rows with {column} {value}"
                for value in values
                if value not in set(rows[column])
            ]
    return gaps
