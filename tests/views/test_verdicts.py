"""The sentences words put on measured comparisons: what each frame's numbers support, with the
interval they came from, and a control where both sides ran the same step."""

from __future__ import annotations

import numpy as np
import pandas as pd
from helpers import verdict_problems

from graphlab.bench.sampling import comparison_columns
from graphlab.bench.verdicts import throughput_comparisons
from graphlab.stats import compare
from graphlab.views.verdicts import comparison_of, sentence, step_lines, throughput_lines


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


def test_throughput_is_compared_per_cell_against_its_fastest_engine():
    # Five paired runs per (max_num_seqs, k): adaptive at half the guard's time per token.
    rng = np.random.default_rng(3)
    rows = [
        dict(run=run, max_num_seqs=seqs, num_speculative_tokens=k, engine=engine,
             tokens_per_s=speed * rng.lognormal(0, 0.01), backend="cpu-compiled")
        for run in range(5)
        for seqs, k in ((8, 2), (32, 4))
        for engine, speed in (("vllm-0.6.0", 100.0), ("adaptive", 200.0))
    ]  # fmt: skip
    spec = pd.DataFrame(rows)
    comparisons = throughput_comparisons(spec)
    assert [(cell, other, best) for cell, _, other, best in comparisons] == [
        ((8, 2), "vllm-0.6.0", "adaptive"),
        ((32, 4), "vllm-0.6.0", "adaptive"),
    ]
    cell = spec[spec.max_num_seqs == 8].pivot(index="run", columns="engine", values="tokens_per_s")
    assert comparisons[0][1] == compare(
        (1e3 / cell["vllm-0.6.0"]).to_numpy(), (1e3 / cell["adaptive"]).to_numpy()
    )
    first = throughput_lines(spec, comparisons)[0]
    assert first == (
        "S=8, k=2, time per token: "
        + sentence(comparisons[0][1], "vllm-0.6.0", "adaptive")
        + "; backend cpu-compiled"
    )
