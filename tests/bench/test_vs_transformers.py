"""The transformers comparison benchmark in its CI form: --help, bad input, a two-pair smoke run."""

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from graphlab.bench.vs_transformers import main, verdict
from graphlab.stats import median_ci

pytest.importorskip("transformers")


def test_help_explains_the_routes_and_the_ratio():
    out = subprocess.run(
        [sys.executable, "-m", "graphlab.bench.vs_transformers", "--help"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--routes" in out and "eager, compiled" in out and "ratio above 1" in out


@pytest.mark.parametrize(
    "argv, named",
    [
        (["--presets", "huge"], "preset 'huge' is not one of tiny, 100m, 1b"),
        (["--routes", "graph"], "route 'graph' is not one of eager, compiled"),
        (["--context", "8", "--max-seq-len", "8"], "max-seq-len must be an integer >= 9, got 8"),
        (["--batches", "0"], "batch must be an integer >= 1, got 0"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, argv, named):
    csv = tmp_path / "rows.csv"
    assert main([*argv, "--csv", str(csv)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {named}\n" and not csv.exists()


def test_eager_smoke_run_compares_equal_logits_and_writes_its_rows(capsys, tmp_path):
    csv = tmp_path / "rows.csv"
    argv = ["--presets", "tiny", "--batches", "1", "3", "--routes", "eager", "--pairs", "3"]
    assert main([*argv, "--context", "5", "--csv", str(csv)]) == 0
    rows = pd.read_csv(csv)
    assert list(zip(rows.batch, rows.route)) == [(1, "eager"), (3, "eager")]
    # Same weights, same position: the two models' logits agree (the comparison is fair).
    assert (rows.max_abs_logit_diff < 1e-4).all()
    assert (rows.ratio_low <= rows.ratio).all() and (rows.ratio <= rows.ratio_high).all()
    assert list(rows.verdict) == [
        verdict(lo, hi, 1.1) for lo, hi in zip(rows.ratio_low, rows.ratio_high)
    ]
    out = capsys.readouterr().out
    assert out.startswith("machine: cpu: ") and "1 torch thread" in out and "max_seq_len 6" in out


def test_compiled_smoke_run_compares_equal_logits(tmp_path):
    # Both models compiled on the same tokens: ours marks its inputs' sizes unbacked, so
    # transformers must get its own (it reads the query length as a plain bool).
    from graphlab.engine.device import compile_unavailable

    if compile_unavailable():
        pytest.skip(compile_unavailable())
    csv = tmp_path / "rows.csv"
    argv = ["--presets", "tiny", "--batches", "2", "--routes", "compiled", "--pairs", "2"]
    assert main([*argv, "--context", "5", "--csv", str(csv)]) == 0
    rows = pd.read_csv(csv)
    assert list(zip(rows.batch, rows.route)) == [(2, "compiled")]
    assert (rows.max_abs_logit_diff < 1e-4).all()


def test_interval_and_verdict():
    assert median_ci([1.3] * 7) == (1.3, 1.3, 1.3)
    median, low, high = median_ci(np.linspace(1.0, 1.4, 41))
    assert median == pytest.approx(1.2) and 1.1 < low < median < high < 1.3
    assert [verdict(1.12, 1.3, 1.1), verdict(0.9, 1.05, 1.1), verdict(1.05, 1.2, 1.1)] == [
        "meets",
        "misses",
        "unresolved",
    ]
