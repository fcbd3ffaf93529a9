"""What the fixes cost: adaptive sizing's price over k and the guard's step timeline, as frames
and as the figures notebooks 03 and 04 show.

Reference lists: vLLM V0 captures `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in
range(1, 1025)]` up to `pad0(max_num_seqs)` (vllm/worker/model_runner.py, v0.6.0), so S = 8 gives
the guard 1, 2, 4, 8 at every k, and adaptive up to pad0(8 * (1 + k)). These tests run
cpu-emulated (fast); the cpu-compiled run is in test_compiled.py.
"""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from helpers import fits_a_notebook, verdict_problems

from graphlab.bench.costs import (
    adaptive_price,
    eager_ratio,
    guard_run_cost,
    reference_ratio,
)
from graphlab.bench.priced import priced_sizing
from graphlab.bench.verdicts import guard_summary, mode_counts
from graphlab.engine.device import BACKEND_VALUES
from graphlab.engine.model import build_model
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.stats import Comparison
from graphlab.views.costs import plot_adaptive_price, plot_guard_price, plot_step_timeline
from graphlab.views.verdicts import (
    capture_line,
    guard_report,
    mode_lines,
    mode_summary,
    priced_lines,
)

KS = (0, 1, 4, 8)
EMULATED = BACKEND_VALUES["cpu-emulated"]
V0_SIZES = [1, 2, 4] + [8 * i for i in range(1, 1025)]


@pytest.fixture(scope="module")
def price(one_thread):
    model = build_model("tiny", seed=0)
    model.allocate_kv_cache(1, 32)  # captures write only the pad slot
    return adaptive_price(model, 8, EMULATED, KS, repeats=1, preset="tiny")


def test_adaptive_covers_every_scorer_batch_with_the_graphs_vllm_would_capture(price):
    adaptive = price[price.engine == "adaptive"].set_index("num_speculative_tokens")
    guard = price[price.engine == "vllm-0.6.0"].set_index("num_speculative_tokens")
    for k in KS:
        sizes = [s for s in V0_SIZES if s <= 8 * (1 + k)]
        assert adaptive.loc[k, "num_graphs"] == len(sizes)
        assert adaptive.loc[k, "largest_size"] == sizes[-1]
    assert guard["num_graphs"].tolist() == [4] * len(KS)
    assert (adaptive["graph_fraction"] == 1).all() and (adaptive["eager_fraction"] == 0).all()
    # The guard's coverage falls as k grows; what it loses runs eagerly.
    assert guard["graph_fraction"].is_monotonic_decreasing and guard.loc[8, "graph_fraction"] < 0.5
    assert (guard["graph_fraction"] + guard["eager_fraction"]).tolist() == pytest.approx([1.0] * 4)


def test_price_rows_say_how_they_were_measured(price):
    assert set(price.backend) == {"cpu-emulated"} and set(price.memory_kind) == {"predicted"}
    assert (price.capture_ms > 0).all() and (price.warmup_capture_ms > 0).all()
    assert set(price.compile_cache) == {"none"} and set(price.model) == {"tiny"}
    # Shared pool, predicted: adaptive's graphs hold at least the guard's, more once k > 0.
    memory = price.pivot(index="num_speculative_tokens", columns="engine", values="memory_bytes")
    assert memory.loc[0, "adaptive"] == memory.loc[0, "vllm-0.6.0"]
    assert (memory.loc[1:, "adaptive"] > memory.loc[1:, "vllm-0.6.0"]).all()


def test_price_figure_names_the_backend_and_plots_each_value_by_k(price):
    fig = plot_adaptive_price(price)
    title = fig.get_suptitle()
    assert "cpu-emulated" in title and "not a GPU measurement" in title
    assert "max_num_seqs = 8" in title and "PREDICTED" in title
    fits_a_notebook("adaptive price", fig)
    coverage, graphs, capture, memory = fig.axes
    assert "predicted" in memory.get_ylabel() and "warm-up" in capture.get_ylabel()
    for ax, column, scale in (
        (coverage, "graph_fraction", 1),
        (graphs, "num_graphs", 1),
        (capture, "capture_ms", 1),
        (memory, "memory_bytes", 2**20),
    ):
        for line in ax.lines:
            rows = price[price.engine == line.get_label()]
            assert list(line.get_xdata()) == list(KS)
            assert list(line.get_ydata()) == pytest.approx((rows[column] / scale).tolist())


def test_price_rejects_bad_repeats():
    with pytest.raises(GraphlabError, match="repeats=0 must be an integer >= 1"):
        adaptive_price(None, 8, EMULATED, repeats=0)


def test_step_timeline_counts_each_path_and_names_the_backend():
    steps = pd.DataFrame(
        {
            "step": range(6),
            "kind": ["prefill"] + ["decode"] * 5,
            "path": ["eager", "graph", "graph", "eager", "eager", "graph"],
            "batch_size": [8, 4, 8, 20, 40, 8],
            "scorer_ms": [9.0, 1.0, 1.2, 3.0, 5.0, 1.1],
            "backend": "cpu-compiled",
            "device": "cpu: Test CPU (2 cores)",
        }
    )
    fig = plot_step_timeline(steps, limit=8)
    fits_a_notebook("step timeline", fig)
    assert "cpu-compiled" in fig.get_suptitle() and "not a CUDA graph" in fig.get_suptitle()
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["graph: 3 steps, median 1.100 ms", "eager: 2 steps, median 4.000 ms"]


def _guard_samples(eager_ms=2.0, replayed_ms=1.0, pairs=12, seed=0):
    """guard_cost's long format, synthetic: sizes 1..16, the guard eager above 8."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(1, 17):
        for i in range(pairs):
            guard = eager_ms if n > 8 else replayed_ms
            # V0's padding: the guard's list stops at 8, adaptive's (1, 2, 4, 8, 16) covers 16.
            padded = next(size for size in (1, 2, 4, 8, 16) if size >= n)
            for engine, ms, path, graph in (
                ("vllm-0.6.0", guard, "eager" if n > 8 else "graph", padded if n <= 8 else None),
                ("adaptive", replayed_ms, "graph", padded),
            ):
                rows.append(
                    dict(engine=engine, batch_size=n, sample=i, path=path, graph_size=graph,
                         time_ms=ms * rng.lognormal(0, 0.05), load_avg_1m=0.5, cpus=2,
                         backend="cpu-compiled", device="cpu: Test CPU (2 cores)",
                         model="tiny", dtype="float32")
                )  # fmt: skip
    return pd.DataFrame(rows)


def test_the_guard_price_is_read_from_interleaved_samples_with_intervals():
    samples = _guard_samples()
    price = eager_ratio(samples)
    assert list(price.index) == list(range(1, 17))
    eager = price[price.path == "eager"]
    assert list(eager.index) == list(range(9, 17))
    assert (eager.guard_over_verdict == "slower").all()
    assert eager.guard_over_ratio.tolist() == pytest.approx([2.0] * 8, rel=0.1)
    met = {4: 3, 12: 5, 16: 2}
    cost = guard_run_cost(samples, met)
    # 7 eager steps each ~1 ms dearer; the size-4 steps replay on both sides.
    assert cost["steps"] == 10 and cost["ms"] == pytest.approx(7.0, rel=0.15)
    assert cost["ms_ci_low"] > 0 and cost["guard_over_verdict"] == "slower"
    fig = plot_guard_price(price, met, cost)
    fits_a_notebook("guard price", fig)
    said = "the guard's step, weighted by the steps met, is slower than adaptive's: "
    assert said in fig.get_suptitle() and "not a CUDA graph" in fig.get_suptitle()
    bars = fig.axes[1].patches
    assert [b.get_height() for b in bars if b.get_height()] == [3, 5, 2]
    report = guard_report(guard_summary(samples, price))
    assert report[0].startswith("n = 9..16, pooled: the guard's step, each size once, is slower")
    assert report[0].endswith(", 96 pairs)")  # every pair of the eight sizes, 12 each
    # Sizes 1..8 replay the same padded graph on both sides (3 pads to 4, 5..7 to 8).
    assert report[-1].startswith("as a control, at the 8 sizes where both replay the same graph")


def test_the_run_cost_prints_a_bound_near_zero_on_its_side():
    from graphlab.views.costs import guard_price_line

    near = dict(
        steps=5, ms=1.234, ms_ci_low=0.02, ms_ci_high=2.5, comparison=Comparison(1, 1, 1, 9)
    )
    assert "(95% CI +0.02..+2.50)" in guard_price_line(near)  # not "+0.0..+2.5"
    assert "(95% CI +0.2..+2.5)" in guard_price_line(near | dict(ms_ci_low=0.2))


def test_the_guard_report_says_when_the_machine_cannot_decide_it():
    samples = _guard_samples(eager_ms=1.0)
    samples.loc[:, "load_avg_1m"] = 7.0
    report = guard_report(guard_summary(samples, eager_ratio(samples)))
    assert report[0].startswith("WARNING: load average 7.00 on 2 CPUs")
    assert "shows no difference beyond noise" in report[1]
    # The same steps on both sides: the interval is within +-5% of 1, which decides it.
    assert "(any difference is under +-" in report[1] and verdict_problems(report[1]) == []


def test_the_reference_ratio_keeps_v0_rows_that_replayed():
    rows = []
    for unit, engine in (("rows", "vllm-0.6.0"), ("tokens", "vllm-0.33.0")):
        for n in (8, 16, 24):
            graph_path = "eager" if n == 24 else "graph"  # 24: past the reference's graphs
            for mode, path, ms in (("eager", "eager", 2.0), ("graph", graph_path, 1.0)):
                rows.append(dict(model="tiny", batch_unit=unit, engine=engine, batch_size=n,
                                 mode=mode, path=path, median_ms=ms))  # fmt: skip
    table = reference_ratio(pd.DataFrame(rows), 9, 40)
    assert table.index.get_level_values("batch_size").tolist() == [16]
    assert table["eager / graph"].tolist() == [2.0]


def test_padding_priced_in_time_charges_eager_steps():
    rows = [
        dict(mode=mode, path=path, batch_size=n, graph_size=None if path == "eager" else n,
             median_ms=ms, backend="cpu-compiled")
        for n in range(1, 41)
        for mode, path, ms in (("eager", "eager", 2.0), ("graph", "graph", 1.0))
    ]  # fmt: skip
    cfg = SizingConfig(8, 4)
    priced = priced_sizing(["vllm-0.5.5", "vllm-0.6.0", "adaptive"], cfg, pd.DataFrame(rows))
    guard, adaptive = priced.loc["vllm-0.6.0"], priced.loc["adaptive"]
    assert np.isnan(priced.loc["vllm-0.5.5", "mean_step_ms"])  # it crashes: no price
    # Every graph step costs 1 ms and every eager one 2 ms: the mean follows the graph fraction.
    assert guard.mean_step_ms == pytest.approx(2 - guard.graph_fraction)
    assert adaptive.mean_step_ms == pytest.approx(1.0)
    assert guard.mean_padding_waste < adaptive.mean_padding_waste  # waste alone says the reverse


def _priced_with_samples(eager_ms, pairs=12, seed=0):
    """latency_rows' frame and samples, synthetic: n = 1..40, each mode replaying or running
    eagerly at n, lognormal noise of 5%."""
    rng, samples, rows = np.random.default_rng(seed), [], []
    for n in range(1, 41):
        for mode, path, ms in (("eager", "eager", eager_ms), ("graph", "graph", 1.0)):
            times = ms * rng.lognormal(0, 0.05, pairs)
            samples += [
                dict(mode=mode, num_reqs=n, sample=i, time_ms=t) for i, t in enumerate(times)
            ]
            rows.append(dict(mode=mode, path=path, num_reqs=n, batch_size=n, backend="cpu-compiled",
                             graph_size=None if path == "eager" else n,
                             median_ms=float(np.median(times))))  # fmt: skip
    engines, cfg = ["vllm-0.5.5", "vllm-0.6.0", "adaptive"], SizingConfig(8, 4)
    return priced_sizing(engines, cfg, pd.DataFrame(rows), pd.DataFrame(samples), resamples=200)


def test_the_priced_mean_step_comes_with_its_interval_and_verdict():
    priced = _priced_with_samples(eager_ms=2.0)
    guard, adaptive = priced.loc["vllm-0.6.0"], priced.loc["adaptive"]
    for engine in (guard, adaptive):
        assert engine.mean_step_ci_low < engine.mean_step_ms < engine.mean_step_ci_high
    assert np.isnan(priced.loc["vllm-0.5.5", "mean_step_ci_low"])  # it crashes: no price
    assert np.isnan(adaptive.over_reference_ratio)  # the reference itself
    # Eager steps cost twice a replay: the guard's mean is 2 - graph fraction times adaptive's.
    assert guard.over_reference_ratio == pytest.approx(2 - guard.graph_fraction, rel=0.03)
    assert guard.over_reference_verdict == "slower" and guard.over_reference_ci_low > 1
    said = priced_lines(priced)
    assert len(said) == 1 and said[0].startswith(
        "vllm-0.6.0's mean step is slower than adaptive's: 1."
    )
    # No difference in truth: the interval holds 1 and lies within +-5%, which decides it.
    same_priced = _priced_with_samples(eager_ms=1.0, seed=1)
    same = same_priced.loc["vllm-0.6.0"]
    assert same.over_reference_ci_low < 1 < same.over_reference_ci_high
    said = priced_lines(same_priced)[0]
    assert "(any difference is under +-" in said and verdict_problems(said) == []


def test_the_priced_table_shows_each_interval_beside_its_figure():
    from graphlab.views.costs import priced_table

    priced = _priced_with_samples(eager_ms=2.0)
    shown = priced_table(priced)
    assert list(shown.columns) == [
        "graph fraction",
        "mean padding",
        "mean step ms (95% interval)",
        "over adaptive's (95% interval)",
    ]
    guard = priced.loc["vllm-0.6.0"]
    assert shown.loc["vllm-0.6.0", "over adaptive's (95% interval)"] == (
        f"{guard.over_reference_ratio:.3f} ({guard.over_reference_ci_low:.3f}-"
        f"{guard.over_reference_ci_high:.3f}) slower"
    )
    assert shown.loc["vllm-0.5.5", "mean step ms (95% interval)"] == ""  # it crashes: no price
    assert max(len(str(cell)) for cell in shown.to_numpy().ravel()) <= 30  # a notebook's width


def test_capture_times_are_compared_with_their_interval(price):
    adaptive, guard = price[price.engine == "adaptive"], price[price.engine == "vllm-0.6.0"]
    assert guard.capture_over_first_ratio.isna().all()  # the first engine: nothing to compare
    # One capture per engine and k here: too few pairs for a direction, whatever the times.
    assert (adaptive.capture_over_first_verdict == "no difference beyond noise").all()
    by_k = pd.Series(
        {k: capture_line(price, "adaptive", k) for k in adaptive.num_speculative_tokens}
    )
    # k = 0: both capture 1, 2, 4, 8, the same work twice, so no direction is read into it.
    assert by_k[0].startswith("both capture the same 4 sizes, a control for noise: ")
    assert by_k.drop(0).str.startswith("adaptive's capture shows no difference").all()


def test_sizes_off_the_graphs_are_a_control_with_no_direction():
    # Graph mode fell back to eager at 40: the same step twice, whatever its interval says.
    rows = pd.DataFrame(
        [
            dict(
                mode="graph",
                batch_size=n,
                batch_unit="rows",
                path=path,
                graph_size=size,
                engine="vllm-0.6.0",
                repeats=10,
                eager_over_ratio=ratio,
                eager_over_ci_low=low,
                eager_over_ci_high=high,
                eager_over_verdict=verdict,
            )
            for n, path, size, ratio, low, high, verdict in (
                (8, "graph", 8, 1.5, 1.4, 1.6, "slower"),
                (40, "eager", None, 0.95, 0.91, 0.98, "faster"),
                (48, "eager", None, 1.01, 0.97, 1.05, "no difference beyond noise"),
            )
        ]
    )
    graph, *control = mode_lines(rows)
    assert graph.startswith("8 rows on the 8-row graph (graph): eager mode is slower than graph")
    assert control == [
        "40 rows, no graph: both modes run the eager step, a control for noise: 0.95x (95% CI "
        "0.91-0.98, 10 pairs)",
        "48 rows, no graph: both modes run the eager step, a control for noise: 1.01x (95% CI "
        "0.97-1.05, 10 pairs)",
    ]
    summary = mode_summary(mode_counts(rows))
    assert summary[0].endswith("slower at 1, faster at 0, no difference beyond noise at 0")
    assert summary[1] == (
        "vllm-0.6.0, 2 sizes with no graph, where both modes run the eager step (a control for "
        "noise): 1 of 2 intervals exclude 1 (chance alone: about 1 in 20)"
    )
    assert not any(word in line for line in control + summary[1:] for word in ("faster", "slower"))
