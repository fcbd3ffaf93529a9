"""What the fixes cost: adaptive sizing's price over k and the guard's step timeline, as frames
and as the figures notebooks 03 and 04 show.

Reference lists: vLLM V0 captures `_BATCH_SIZES_TO_CAPTURE = [1, 2, 4] + [8 * i for i in
range(1, 1025)]` up to `pad0(max_num_seqs)` (vllm/worker/model_runner.py, v0.6.0), so S = 8 gives
the guard 1, 2, 4, 8 at every k, and adaptive up to pad0(8 * (1 + k)). These tests run
cpu-emulated (fast); the cpu-compiled run is in test_compiled.py.
"""

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest
from test_plots import (
    test_figures_fit_a_notebook_and_their_text_reads as fits_a_notebook,
)

from graphlab.bench.costs import adaptive_price
from graphlab.engine.model import build_model
from graphlab.errors import GraphlabError
from graphlab.views.costs import plot_adaptive_price, plot_step_timeline

KS = (0, 1, 4, 8)
V0_SIZES = [1, 2, 4] + [8 * i for i in range(1, 1025)]


@pytest.fixture(scope="module")
def price(one_thread):
    model = build_model("tiny", seed=0)
    model.allocate_kv_cache(1, 32)  # captures write only the pad slot
    return adaptive_price(model, 8, KS, backend="cpu-emulated", repeats=1, preset="tiny")


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
        adaptive_price(None, 8, repeats=0)


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
