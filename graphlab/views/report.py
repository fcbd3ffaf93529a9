"""The lines a bench run and the GPU check print, worded from graphlab.bench's frames and values:
the CSVs a run wrote, the V1 cliff, replay checked against eager, the GPU clocks per step, the
rows a step left out, and the backend and device a run measures on.

Takes values only (no bench import: views sit beside the engine), so the text a notebook, a
script or the command line prints is made here once.
"""

from __future__ import annotations

import pandas as pd


def describe(prov: dict[str, str]) -> str:
    """One line for a printout: the backend and the device of a provenance block."""
    return f"{prov['backend']} on {prov['device']}"


def _joined(values) -> str:
    return "/".join(values)


def written_summary(files) -> str:
    """graphlab.bench.export.written_files as lines: one per written CSV (name, rows, backend,
    device and, where the CSV has the column, memory kind), then one per manifest beside them."""
    lines = []
    for row in files.csvs.itertuples():
        kinds = "" if row.memory_kinds is None else f", memory {_joined(row.memory_kinds)}"
        lines.append(
            f"{row.path}: {row.rows} rows, {_joined(row.backends)} on {_joined(row.devices)}{kinds}"
        )
    lines += [
        f"{row.path}: run {row.run_id} {row.state}, {row.run_files} CSVs of this run"
        f" of {row.files} in the folder"
        for row in files.manifests.itertuples()
    ]
    return "\n".join(lines)


def v1_cliff_lines(cliff: pd.DataFrame) -> list[str]:
    """graphlab.bench.targets.v1_cliff as one line per (model, V1 engine): the largest captured
    token count and the median graph-mode step on each side of it."""
    if cliff.empty:
        return ["== V1 cliff: no V1 rows in latency.csv"]
    lines = []
    for row in cliff.itertuples():
        sides = [
            f"{int(getattr(row, f'{side}_batch_size'))} tokens ({getattr(row, f'{side}_path')}) "
            f"{getattr(row, f'{side}_median_ms'):.3g} ms"
            for side in ("below", "above")
            if pd.notna(getattr(row, f"{side}_batch_size"))
        ]
        lines.append(
            f"== V1 cliff ({row.engine}, {row.model}, k={row.num_speculative_tokens}, "
            f"{row.backend}): largest captured {row.graph_limit} tokens; median step "
            f"{' -> '.join(sides)}"
        )
    return lines


def replay_lines(check: pd.DataFrame | None) -> list[str]:
    """graphlab.bench.targets.replay_check as one line per (model, engine): the graph-path
    sizes checked, the worst diff over tolerance, and the sizes beyond tolerance, named loudly."""
    if check is None:
        return ["== replay vs eager: no max_abs_logit_diff in latency.csv"]
    lines = [
        f"== replay vs eager ({row.model}, {row.engine}): {row.sizes} graph-path sizes, "
        f"worst diff {row.worst:.3g} x tolerance; "
        + (f"BEYOND TOLERANCE at batch sizes {row.beyond}" if row.beyond else "all within")
        for row in check.itertuples()
    ]
    return lines or ["== replay vs eager: no graph-path rows in latency.csv"]


def clock_lines(clocks: pd.DataFrame | None) -> list[str]:
    """graphlab.bench.targets.step_clocks as a heading and one line per step: SM and memory
    clocks, median (min-max) MHz, and the samples they come from."""
    if clocks is None:
        return ["== GPU clocks: not sampled (no nvidia-smi here)"]
    return ["== GPU clocks while each step ran, MHz, median (min-max) of 0.5 s samples"] + [
        f"{row.step}: SM {row.sm_median:.0f} ({row.sm_min:.0f}-{row.sm_max:.0f}), memory "
        f"{row.mem_median:.0f} ({row.mem_min:.0f}-{row.mem_max:.0f}), {row.samples} samples"
        for row in clocks.itertuples()
    ]


def gap_line(gap) -> str:
    """A graphlab.bench.targets.Gap in words: what the sweep's CSV lacks."""
    if not gap.found:
        return f"{gap.sweep}.csv missing"
    if gap.engine is None:
        return f"{gap.sweep}.csv has no rows"
    split = f" with {gap.column} {gap.value}" if gap.column is not None else ""
    return f"{gap.sweep}.csv has no {gap.engine} rows{split}"
