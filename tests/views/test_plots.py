"""Plots on small hand-made frames: a Figure comes back, and its text names backend, device and
units."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
from helpers import ROOT, fits_a_notebook
from matplotlib.figure import Figure

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.crash_maps import crash_map
from graphlab.sizing.engines import get_engine
from graphlab.views import plots

CPU = {"backend": "cpu-emulated", "device": "cpu: Test CPU (2 cores)"}
# The longest provenance a CPU run stamps: the compiled backend's label and a real device string.
COMPILED = {
    "backend": "cpu-compiled",
    "device": "cpu: AMD EPYC 9654 96-Core Processor (2 cores, 1 torch thread)",
}
GPU = {"backend": "cuda-graph", "device": "NVIDIA H200"}


def _texts(fig: Figure) -> str:
    """Every title, axis label, tick-free text and legend entry in the figure, joined."""
    parts = [fig.get_suptitle(), fig.get_supxlabel()]
    for ax in fig.axes:
        parts += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        legend = ax.get_legend()
        if legend is not None:
            parts += [t.get_text() for t in legend.get_texts()]
    for legend in fig.legends:  # legends placed off the axes
        parts += [t.get_text() for t in legend.get_texts()]
    return "\n".join(parts)


def latency_frame(engine="vllm-0.6.0", prov=CPU) -> pd.DataFrame:
    policy, cfg = get_engine(engine), SizingConfig(8, 4)
    rows = []
    for n in range(1, 41):
        rows.append(
            dict(
                engine=engine,
                batch_size=n,
                mode="eager",
                path="eager",
                graph_size=np.nan,
                median_ms=1 + 0.05 * n,
                p90_ms=1.1 + 0.05 * n,
            )
        )
        d = policy.dispatch(n, cfg)
        ms = {"graph": 0.3 + 0.01 * (d.graph_size or 0), "eager": 1 + 0.05 * n}.get(d.path, np.nan)
        rows.append(
            dict(
                engine=engine,
                batch_size=n,
                mode="graph",
                path=d.path,
                graph_size=d.graph_size,
                median_ms=ms,
                p90_ms=ms * 1.1,
            )
        )
    return pd.DataFrame(rows).assign(**prov)


def memory_frame(kind="predicted", prov=CPU) -> pd.DataFrame:
    rows = []
    for pool in ("shared", "separate"):
        total = 0
        for size in (1, 2, 4, 8):
            b = size * 2**20 if pool == "separate" else (8 * 2**20 if size == 8 else 0)
            total += b
            rows.append(
                dict(
                    engine="vllm-0.6.0",
                    graph_pool=pool,
                    capture_size=size,
                    memory_bytes=b,
                    cumulative_bytes=total,
                    capture_ms=10.0 + size,
                    memory_kind=kind,
                )
            )
    return pd.DataFrame(rows).assign(**prov)


def test_latency_figure_names_backend_device_and_units():
    fig = plots.plot_latency(latency_frame())
    text = _texts(fig)
    assert isinstance(fig, Figure)
    assert "cpu-emulated" in text and "Test CPU" in text and "not a GPU measurement" in text
    assert "(ms)" in text and "(rows" in text
    # The largest captured size (8 for max_num_seqs=8) is marked: the eager cliff starts above it.
    assert "largest captured size 8" in "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_latency_marks_the_crashes_of_vllm_055():
    fig = plots.plot_latency(latency_frame("vllm-0.5.5"))
    assert "graph mode: KeyError" in _texts(fig)


def test_latency_on_gpu_does_not_claim_emulation():
    text = _texts(plots.plot_latency(latency_frame(prov=GPU)))
    assert "cuda-graph" in text and "NVIDIA H200" in text
    assert "emulated" not in text


def test_memory_figure_spells_out_predicted():
    fig = plots.plot_graph_memory(memory_frame())
    text = _texts(fig)
    assert "PREDICTED" in text and "cpu-emulated" in text
    assert "(MiB)" in text and "capture time (ms)" in text
    assert "shared pool" in text and "separate pool" in text


def test_memory_figure_measured_on_gpu():
    text = _texts(plots.plot_graph_memory(memory_frame("measured", GPU)))
    assert "measured" in text and "PREDICTED" not in text


@pytest.mark.parametrize("value", ["num_crash", "first_crash_n", "graph_fraction"])
def test_crash_map_heatmap_per_engine(value):
    df = crash_map(["vllm-0.5.5", "vllm-0.6.0"], range(1, 9), range(0, 5))
    fig = plots.plot_crash_map(df, value)
    titles = [ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()]
    # vllm-0.6.0 only turns 0.5.5's crashes eager: no crash of its own (no panel, named in the
    # title), the same graph fraction (one panel for both).
    assert (
        titles
        == {
            "num_crash": ["vllm-0.5.5"],
            "first_crash_n": ["vllm-0.5.5"],
            "graph_fraction": ["vllm-0.5.5 = vllm-0.6.0"],
        }[value]
    )
    assert "vllm-0.6.0" in fig.get_suptitle() or value == "graph_fraction"
    assert "not measured" in fig.get_suptitle()
    assert "max_num_seqs" in _texts(fig) and "num_speculative_tokens" in _texts(fig)
    # The 0.5.5 panel's image is the crash count grid itself (max_num_seqs rows by k columns).
    if value == "num_crash":
        image = fig.axes[0].images[0].get_array()
        assert image.shape == (8, 5)
        assert image[7, 4] > 0 and image[7, 0] == 0  # crashes need speculation


def test_mixed_backends_are_refused():
    mixed = pd.concat([latency_frame(), latency_frame(prov=GPU)])
    with pytest.raises(GraphlabError, match="mixes backend"):
        plots.plot_latency(mixed)


def test_missing_columns_are_named():
    with pytest.raises(GraphlabError, match="median_ms"):
        plots.plot_latency(latency_frame().drop(columns="median_ms"))
    with pytest.raises(GraphlabError, match="value"):
        plots.plot_crash_map(crash_map("vllm-0.5.5", range(1, 3), range(0, 2)), "latency")


def spec_frame(prov=CPU) -> pd.DataFrame:
    rows = []
    for seqs, k in ((8, 2), (8, 4)):
        for engine, fraction, memory in (("vllm-0.6.0", 0.3, 2**20), ("adaptive", 1.0, 5 * 2**20)):
            rows.append(
                dict(
                    engine=engine,
                    max_num_seqs=seqs,
                    num_speculative_tokens=k,
                    tokens_per_s=100.0 * k,
                    scorer_graph_fraction=fraction,
                    target_graph_memory_bytes=memory,
                    mean_acceptance_length=1.5 + k / 8,
                    draft_acceptance_rate=0.25,
                    memory_kind="predicted",
                )
            )
    return pd.DataFrame(rows).assign(**prov)


def test_spec_decode_figure_compares_engines_per_config():
    fig = plots.plot_spec_decode(spec_frame())
    text = _texts(fig)
    assert "vllm-0.6.0" in text and "adaptive" in text
    assert "(tokens/s)" in text and "(MiB)" in text and "(fraction)" in text
    assert "PREDICTED" in text and "cpu-emulated" in text
    throughput = fig.axes[0]
    # Two configs x two engines: four bars; adaptive's graph fraction bars reach 1.
    assert len(throughput.patches) == 4
    heights = sorted(p.get_height() for p in fig.axes[1].patches)
    assert heights == [0.3, 0.3, 1.0, 1.0]
    labels = [t.get_text() for t in throughput.get_xticklabels()]
    # Acceptance in V1's vocabulary where the frame has it, named so.
    assert labels[0] == "S=8, k=2\naccept. len 1.75" and labels[1] == "S=8, k=4\naccept. len 2.00"
    assert "accept. len: mean acceptance length (vLLM V1)" in fig.get_supxlabel()


def test_spec_decode_figure_falls_back_to_v0_rate():
    frame = spec_frame().drop(columns="mean_acceptance_length")
    fig = plots.plot_spec_decode(frame)
    assert "accept. rate: draft_acceptance_rate (vLLM V0)" in fig.get_supxlabel()
    assert fig.axes[0].get_xticklabels()[0].get_text() == "S=8, k=2\naccept. rate 0.250"
    with pytest.raises(GraphlabError, match="acceptance column"):
        plots.plot_spec_decode(frame.drop(columns="draft_acceptance_rate"))


def test_latency_of_v1_rows_counts_tokens():
    frame = latency_frame().assign(batch_unit="tokens")
    text = _texts(plots.plot_latency(frame))
    assert "verify batch (tokens per decode step)" in text and "padded size (tokens)" in text
    assert "Verify-step latency against tokens" in text
    mixed = pd.concat([latency_frame(), frame.assign(engine="vllm-0.33.0")])
    fig = plots.plot_latency(mixed)  # V0 and V1 columns side by side, each in its own unit
    assert [ax.get_xlabel() for ax in fig.axes[2:]] == [
        "batch size (rows per decode step)",
        "verify batch (tokens per decode step)",
    ]
    assert fig.get_suptitle().startswith("Decode latency against batch size")


def test_make_figures_prefers_gpu_csvs_and_falls_back_to_cpu(tmp_path):
    import importlib.util
    import sys

    script = ROOT / "scripts" / "make_figures.py"
    spec = importlib.util.spec_from_file_location("make_figures", script)
    make_figures = importlib.util.module_from_spec(spec)
    sys.modules["make_figures"] = make_figures
    spec.loader.exec_module(make_figures)

    cpu, h200 = tmp_path / "data" / "cpu", tmp_path / "data" / "h200"
    cpu.mkdir(parents=True)
    h200.mkdir()
    model = {"model": "tiny", "dtype": "float32"}
    latency_frame(prov=GPU).assign(**model).to_csv(h200 / "latency.csv", index=False)
    memory_frame().assign(**model).to_csv(cpu / "graph_memory.csv", index=False)
    spec_frame().assign(**model).to_csv(cpu / "spec_decode.csv", index=False)
    crash_map(["vllm-0.5.5", "vllm-0.6.0", "adaptive"], range(1, 5), range(0, 3)).to_csv(
        cpu / "crash_map.csv", index=False
    )
    out = tmp_path / "figures"
    assert make_figures.main(["--data", str(tmp_path / "data"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"{n}.png"
        for n in ("latency", "graph_memory", "spec_decode", "crash_map", "graph_fraction")
    )
    assert make_figures.source(tmp_path / "data", "latency.csv") == h200 / "latency.csv"
    assert make_figures.source(tmp_path / "data", "spec_decode.csv") == cpu / "spec_decode.csv"


def test_inline_shows_figures_as_images_under_agg():
    """display(fig) in IPython with MPLBACKEND=Agg: a PNG and a title line, never
    `<Figure size ...>`."""
    pytest.importorskip("matplotlib_inline")
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    fig = Figure()
    fig.add_subplot().plot([1, 2])
    fig.suptitle("Decode latency\nbackend: cpu-emulated")
    before, _ = shell.display_formatter.format(fig)
    assert "image/png" not in before and before["text/plain"].startswith("<Figure size")
    plots.inline()
    data, _ = shell.display_formatter.format(fig)
    assert data["image/png"] and data["text/plain"] == "[figure: Decode latency]"
    plots.inline("svg")
    assert "<svg" in shell.display_formatter.format(fig)[0]["image/svg+xml"]


def test_plan_figure_is_a_staircase_over_cumulative_padding():
    from graphlab.sizing.planner.plan import Budget, plan

    result = plan("vllm-0.33.0", SizingConfig(256, 4), budget=Budget(8))
    fig = plots.plot_plan(result)
    text = _texts(fig)
    assert fig.get_suptitle().startswith("vllm-0.33.0, max_num_seqs=256, k=4")
    sizes = len(result.default.capture_sizes)
    assert f"default: {sizes} capture sizes" in text and "plan: 8 capture sizes" in text
    top, bottom = fig.axes
    # the staircase: each step of n tokens at the graph it replays, never below n
    stairs = {line.get_label().split(":")[0]: line for line in top.lines}
    for side in ("default", "plan"):
        x, y = stairs[side].get_xdata(), stairs[side].get_ydata()
        assert (y[np.isfinite(y)] >= x[np.isfinite(y)]).all()
    # the cumulative padding ends at each side's mean padding waste
    ends = [line.get_ydata()[-1] for line in bottom.lines]
    means = [result.default.mean_padding_waste, result.plan.mean_padding_waste]
    assert ends == pytest.approx(means)
    # the default stops at 512 tokens: its eager steps are a band, labelled as not free
    assert "default: eager from 515 tokens (60% of steps; not free)" in text


def _every_figure():
    from graphlab.sizing.planner.plan import Budget, plan
    from graphlab.views.padding import plot_padding

    outcomes = [get_engine("vllm-0.6.0").dispatch(n, SizingConfig(32)) for n in range(1, 41)]
    yield "padding", plot_padding(pd.DataFrame([vars(d) for d in outcomes]), "vllm-0.6.0")
    yield "eager ratio", plots.plot_eager_ratio(latency_frame().assign(model="tiny"), 9, 40)
    yield "latency", plots.plot_latency(latency_frame())
    yield "memory", plots.plot_graph_memory(memory_frame())
    yield "spec", plots.plot_spec_decode(spec_frame())
    yield (
        "latency, compiled",
        plots.plot_latency(latency_frame(prov=COMPILED).assign(model="tiny", dtype="float32")),
    )
    yield "spec, compiled", plots.plot_spec_decode(spec_frame(prov=COMPILED))
    yield (
        "crash map",
        plots.plot_crash_map(crash_map("all", range(1, 33), range(0, 9)), "num_crash"),
    )
    yield "plan", plots.plot_plan(plan("vllm-0.33.0", SizingConfig(256, 4), budget=Budget(8)))


@pytest.mark.parametrize(
    "name, fig", list(_every_figure()), ids=lambda v: v if isinstance(v, str) else ""
)
def test_figures_fit_a_notebook_and_their_text_reads(name, fig):
    fits_a_notebook(name, fig)


def test_padding_staircase_steps_to_the_captured_sizes():
    from graphlab.views.padding import plot_padding

    outcomes = [get_engine("vllm-0.6.0").dispatch(n, SizingConfig(32)) for n in range(1, 41)]
    fig = plot_padding(pd.DataFrame([vars(d) for d in outcomes]), "vllm-0.6.0")
    # vLLM 0.6.0 captures 1, 2, 4, 8, 16, 24, 32 for max_num_seqs 32 (pad0 steps of 8).
    assert "captured sizes 1, 2, 4, 8, 16, 24, 32" in fig.get_suptitle()
    step = fig.axes[0].lines[0]
    assert dict(zip(step.get_xdata(), step.get_ydata()))[17] == 24
    eager = fig.axes[0].collections[1].get_offsets()
    assert sorted(eager[:, 0]) == list(range(33, 41))  # above 32: eager, drawn at n
    assert "not measured" in fig.get_suptitle()


def test_eager_ratio_figure_divides_the_medians():
    frame = latency_frame().assign(model="tiny")
    fig = plots.plot_eager_ratio(frame, 9, 32)
    line = fig.axes[0].lines[0]
    rows = frame[frame.batch_size == 16].set_index("mode").median_ms
    assert dict(zip(line.get_xdata(), line.get_ydata()))[16] == pytest.approx(
        rows["eager"] / rows["graph"]
    )
    assert "cpu-emulated (not a GPU measurement)" in fig.get_suptitle()
    with pytest.raises(GraphlabError, match="no latency rows"):
        plots.plot_eager_ratio(frame, 100, 200)
