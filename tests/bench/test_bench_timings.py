"""The benchmark entry point: its help names every figure and its target, and a quick run of the
cheap figures gives readings held against those targets (the numbers themselves are measured by
running it, never asserted here)."""

import importlib

import pandas as pd
import pytest

from graphlab.bench import timings
from graphlab.sizing.engines import TABLE_ENGINES


def test_help_names_every_figure_with_its_target(capsys):
    with pytest.raises(SystemExit) as exit_:
        timings.main(["--help"])
    assert exit_.value.code == 0
    shown = capsys.readouterr().out
    for name, figure in timings.FIGURES.items():
        assert f"  {name:10} {figure.what}" in shown
        assert f"target: {figure.target_text()}" in shown
    assert "target: <= 2 s CPU" in shown and "target: >= 1 x" in shown


def test_every_figure_names_a_function_that_exists():
    for figure in timings.FIGURES.values():
        module, function = figure.measure.split(":")
        assert callable(getattr(importlib.import_module(module), function)), figure.measure


def test_a_quick_run_holds_readings_in_the_figures_unit_against_its_target(tmp_path, capsys):
    out = tmp_path / "timings.csv"
    assert timings.main(["--quick", "--only", "crash_map", "ops", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.startswith("machine: ") and "1 torch thread(s)" in printed
    frame = pd.read_csv(out)
    crash = frame[frame["figure"] == "crash_map"].set_index("unit")
    cells = len(TABLE_ENGINES) * 64 * 9  # every engine x S 1..64 x k 0..8
    assert list(crash.index) == ["s wall", "s CPU"]
    assert crash.loc["s CPU", "case"] == f"{cells} cells, S 1..64"
    assert crash.loc["s CPU", "met"] == (crash.loc["s CPU", "value"] <= 2.0)
    assert pd.isna(crash.loc["s wall", "met"]) and pd.isna(crash.loc["s wall", "target"])
    ops = frame[frame["figure"] == "ops"]
    assert list(ops["case"]) == ["tiny, per layer", "tiny, kernels per layer"]
    assert (ops["value"] > 0).all() and ops["met"].isna().all()
    assert ops["value"].iloc[1] <= ops["value"].iloc[0]  # kernel ops are a subset of all ops


def test_a_target_is_a_ceiling_or_a_floor():
    ceiling = timings.Figure("t", "m:f", "ms", 80.0)
    floor = timings.Figure("s", "m:f", "x", 1.0, at_least=True)
    assert ceiling.met(80.0, "ms") and not ceiling.met(80.1, "ms")
    assert floor.met(1.0, "x") and not floor.met(0.99, "x")
    assert ceiling.met(1e9, "s first call") is None  # another unit: shown, not held
    assert timings.Figure("n", "m:f", "ops").met(3, "ops") is None


def test_the_transformers_comparison_holds_its_interval_not_its_median(monkeypatch):
    """A ratio figure is met only when its whole interval clears the goal (the lower end)."""
    from graphlab.bench import vs_transformers

    frame = pd.DataFrame([dict(preset="tiny", batch=1, ratio=1.2, ratio_low=1.05, ratio_high=1.3)])
    monkeypatch.setattr(vs_transformers, "measure", lambda **kwargs: frame)
    rows = timings.run(["decode_eager"], quick=True).set_index("unit")
    assert list(rows.index) == ["x median", "x CI low", "x CI high"]
    assert rows.loc["x CI low", "met"] in (False,)  # 1.05 < 1.1: not met, and not None
    assert rows["met"].drop("x CI low").isna().all()  # the median alone decides nothing
    frame.loc[0, "ratio_low"] = 1.1
    assert timings.run(["decode_eager"], quick=True).set_index("unit").loc["x CI low", "met"]
