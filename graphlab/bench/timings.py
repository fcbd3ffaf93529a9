"""The benchmark figures, each beside its target, on this machine (named first).

    python -m graphlab.bench.timings [--only crash_map plan ...] [--quick] [--out timings.csv]

Not part of `make test` (timings are measured here, never asserted by a test; the project's rule
4). A figure is one row of FIGURES: what it measures, its target (None: shown, no stated goal)
and its measuring function, named "module:function" and imported only when the figure runs, so
each figure loads only what it needs (the explorer's ipywidgets, transformers for a comparison).
A measuring function takes `quick` (the smallest sizes, for a smoke run) and returns
(case, value, unit) readings; those in the figure's unit are held against its target.
"""

from __future__ import annotations

import argparse
import importlib
import os
import platform
import statistics
import time
from dataclasses import dataclass
from functools import partial

import pandas as pd
import torch

from graphlab.bench.export import write_csv_atomic
from graphlab.bench.vs_transformers import GOALS
from graphlab.engine.device import cpu_name


@dataclass(frozen=True)
class Figure:
    what: str
    measure: str  # "module:function", function(quick: bool) -> [(case, value, unit)]
    unit: str
    target: float | None = None  # None: no stated goal; the figure is shown for comparison
    at_least: bool = False  # the target is a floor (a speed-up), not a ceiling (a time)
    source: str = ""  # where the target is stated

    def met(self, value: float, unit: str) -> bool | None:
        if self.target is None or unit != self.unit:
            return None
        return value >= self.target if self.at_least else value <= self.target

    def target_text(self) -> str:
        if self.target is None:
            return "no stated target"
        sign = ">=" if self.at_least else "<="
        return f"{sign} {self.target:g} {self.unit}" + (f" ({self.source})" if self.source else "")


# Each figure with its target. A ratio's target is held against its interval's lower end.
FIGURES = {
    "crash_map": Figure(
        "the crash map of every engine over max_num_seqs 1..512 x k 0..8 (sizing rules, one core)",
        "graphlab.bench.timings:crash_map_seconds",
        "s CPU",
        2.0,
    ),
    "plan": Figure(
        "graphlab.sizing.planner.plan for S=256, k=8, T=8192 (V1 tokens): G=40, a shared-pool "
        "memory budget, and the separate-pool memory DP (median of repeats)",
        "graphlab.bench.timings:plan_ms",
        "ms",
    ),
    "explorer": Figure(
        "the explorer's answer to a control's move (audit, strip, crash-map box, PNG, summary), "
        "median per engine of random S and k moves, T moves and a switch to it; a new crash "
        "map follows from a worker thread ('map ready', not held to the target)",
        "graphlab.views.explorer_timing:median_move_ms",
        "ms",
        500.0,
        source="a control answers within half a second",
    ),
    "compiled": Figure(
        "the decoder step eager / through the cpu-compiled backend's torch.compile'd step, "
        "per preset and batch, and the first call's compile time",
        "graphlab.bench.timings:compiled_speedup",
        "x",
        1.0,
        at_least=True,
    ),
    "decode_eager": Figure(
        "graphlab's eager decode step against transformers' on the same checkpoint: "
        "transformers / graphlab per preset and batch (graphlab.bench.vs_transformers)",
        "graphlab.bench.vs_transformers:eager_readings",
        "x CI low",
        GOALS["eager"],
        at_least=True,
    ),
    "decode_compiled": Figure(
        "the same through torch.compile: graphlab's cpu-compiled step against transformers' "
        "StaticCache + torch.compile",
        "graphlab.bench.vs_transformers:compiled_readings",
        "x CI low",
        GOALS["compiled"],
        at_least=True,
    ),
    "ops": Figure(
        "aten ops and kernel-launching ops of one eager decode step, per decoder layer "
        "(graphlab.bench.kernels): the launches one graph replay stands in for",
        "graphlab.bench.timings:ops_per_layer",
        "ops",
    ),
}


def _median_ms(fn, repeats: int, warmup: int = 3) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def crash_map_seconds(quick: bool):
    """Wall and CPU seconds of one crash map (run it first: the policies cache capture sizes)."""
    from graphlab.sizing.crash_maps import crash_map

    seqs = range(1, 65 if quick else 513)
    wall, cpu = time.perf_counter(), time.process_time()
    frame = crash_map("all", seqs, range(0, 9))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    case = f"{len(frame)} cells, S 1..{seqs[-1]}"
    return [(case, wall, "s wall"), (case, cpu, "s CPU")]


def plan_ms(quick: bool):
    import numpy as np

    from graphlab.sizing.config import SizingConfig
    from graphlab.sizing.planner.plan import Budget, SizeTable, plan
    from graphlab.sizing.versions import DEFAULT_POLICY

    # Illustrative per-graph memory growing linearly with size (bytes); any table over 1..2304 does.
    sizes = np.arange(1, 2305)
    memory = SizeTable(sizes, 1e6 + 2e4 * sizes, "linear memory", "predicted")
    cases = {
        "G=40": (dict(budget=Budget(40)), 20),
        "G=40, shared pool <= 30 MiB": (dict(budget=Budget(40, 30.0), memory=memory), 20),
        "G=10, separate pools <= 100 MiB": (
            dict(budget=Budget(10, 100.0, "separate"), memory=memory),
            2,
        ),
    }
    config = SizingConfig(256, 8, 8192)
    return [
        (
            name,
            _median_ms(partial(plan, DEFAULT_POLICY, config, **kwargs), 1 if quick else n, 0),
            "ms",
        )
        for name, (kwargs, n) in cases.items()
    ]


def compiled_speedup(quick: bool):
    """Per preset and batch: eager / compiled step time, and the first (compiling) call."""
    from graphlab.engine.compiled import compiled_step
    from graphlab.engine.graphs import StaticBuffers
    from graphlab.engine.model import build_model

    batches = {"tiny": (1,)} if quick else {"tiny": (1, 8), "100m": (1, 8, 32)}
    repeats = 3 if quick else 50
    readings = []
    for preset, sizes in batches.items():
        model = build_model(preset)
        model.allocate_kv_cache(max(sizes), 128)
        buffers = StaticBuffers(model, max(sizes))
        step = compiled_step(model)
        with torch.no_grad():
            for n in sorted(sizes, reverse=True):  # largest first, as capture does
                start = time.perf_counter()
                buffers.run(model, n, step.compile)
                compile_s = time.perf_counter() - start
                eager = _median_ms(partial(buffers.run, model, n), repeats)
                compiled = _median_ms(partial(buffers.run, model, n, step), repeats)
                case = f"{preset} batch {n} (inductor cache {step.cache_state})"
                readings += [(case, eager / compiled, "x"), (case, compile_s, "s first call")]
    return readings


def ops_per_layer(quick: bool):
    from graphlab.bench.kernels import ops_rows

    rows = ops_rows(("tiny",) if quick else ("tiny", "100m"), device="cpu")
    return [
        (f"{row.preset}, {label}", getattr(row, column), "ops")
        for row in rows.itertuples()
        for label, column in (
            ("per layer", "ops_per_layer"),
            ("kernels per layer", "kernel_ops_per_layer"),
        )
    ]


def machine() -> str:
    return (
        f"{cpu_name()}, python {platform.python_version()}, torch {torch.__version__}, "
        f"{torch.get_num_threads()} torch thread(s), OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )


def run(names, quick: bool = False) -> pd.DataFrame:
    """Every named figure's readings, one row each, with its target and whether it is met."""
    rows = []
    for name in names:
        figure = FIGURES[name]
        module, function = figure.measure.split(":")
        for case, value, unit in getattr(importlib.import_module(module), function)(quick):
            rows.append(
                dict(
                    figure=name,
                    case=case,
                    value=float(value),
                    unit=unit,
                    target=figure.target_text() if unit == figure.unit else "",
                    met=figure.met(value, unit),
                )
            )
            print(f"{name:10} {case:52} {value:10.4g} {unit:13} {_verdict(rows[-1])}", flush=True)
    return pd.DataFrame(rows)


def _verdict(row: dict) -> str:
    if row["met"] is None:
        return row["target"]
    return f"{'met' if row['met'] else 'NOT MET'}: target {row['target']}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m graphlab.bench.timings",
        description=__doc__.split("\n\n")[0],
        epilog="figures:\n"
        + "\n".join(
            f"  {name:10} {figure.what}\n  {'':10} target: {figure.target_text()}"
            for name, figure in FIGURES.items()
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--only", nargs="+", choices=list(FIGURES), default=list(FIGURES))
    parser.add_argument("--quick", action="store_true", help="smallest sizes: a smoke run")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--out", help="also write the readings to this CSV")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"machine: {machine()}")
    frame = run(args.only, args.quick)
    if args.out:
        write_csv_atomic(frame, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
