"""The sentences words put on measured comparisons: what each frame's numbers support, with the
interval they came from, and a control where both sides ran the same step."""

from __future__ import annotations

import numpy as np
import pandas as pd
from helpers import verdict_problems

from graphlab.bench.sampling import comparison_columns
from graphlab.stats import compare
from graphlab.views.verdicts import comparison_of, sentence, step_lines


def _steps_frame(rng) -> tuple[pd.DataFrame, dict]:
    """Rows as graphlab.bench.sampling.compared_steps writes them: a reference step and two others,
    one clearly slower, one the same."""
    base = rng.lognormal(0.0, 0.05, 20)
    times = {"uniform": base, "mixed": base * 1.5, "eager": base * rng.lognormal(0, 0.01, 20)}
    paths = {"uniform": "full", "mixed": "piecewise", "eager": "eager"}
    rows, comparisons = [], {}
    for step, t in times.items():
        row = dict(step=step, path=paths[step], samples=len(t))
        if step != "uniform":
            comparisons[step] = compare(t, base)
            row |= comparison_columns(comparisons[step], "over_ref")
        rows.append(row)
    return pd.DataFrame(rows), comparisons


def test_step_lines_name_both_steps_and_say_what_each_interval_supports():
    frame, comparisons = _steps_frame(np.random.default_rng(5))
    mixed, eager = step_lines(frame)
    assert mixed == sentence(
        comparisons["mixed"], "the mixed step (piecewise)", "the uniform step (full)"
    )
    assert mixed.startswith("the mixed step (piecewise) is slower than the uniform step (full): 1.")
    assert eager.startswith("the eager step (eager) shows no difference beyond noise from")
    assert "(any difference is under +-" in eager and verdict_problems(eager) == []


def test_a_row_gives_back_the_comparison_it_was_written_from():
    rng = np.random.default_rng(6)
    comparison = compare(rng.lognormal(0, 0.1, 12), rng.lognormal(0, 0.1, 12))
    row = pd.Series(comparison_columns(comparison, "over_ref"))
    assert comparison_of(row, "over_ref", 12) == comparison
