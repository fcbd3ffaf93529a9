"""The explorer (graphlab.views.widgets): its callbacks driven directly, as a slider move would."""

import base64
import io

import matplotlib.colors
import numpy as np
import PIL.Image
import PIL.ImageColor
import pytest

pytest.importorskip("ipywidgets")

from helpers import ROOT

from graphlab.errors import GraphlabError  # noqa: E402
from graphlab.sizing.audit import audit  # noqa: E402
from graphlab.sizing.config import SizingConfig  # noqa: E402
from graphlab.sizing.engines import TABLE_ENGINES  # noqa: E402
from graphlab.views.style import PATH_COLORS  # noqa: E402
from graphlab.views.widgets import (
    ExplorerState,
    StaticExplorer,
    explorer,  # noqa: E402
    reads_max_num_batched_tokens,
)


@pytest.fixture(scope="module")
def ex():
    return explorer()


def png_size(data: bytes) -> tuple[int, int]:
    return PIL.Image.open(io.BytesIO(data)).size


def test_default_state_shows_the_v0_crash(ex):
    assert ex.state == ExplorerState("vllm-0.5.5", 8, 4)
    assert "first crash at n = 9: <b>KeyError: 16</b>" in ex.summary.value
    assert "captured sizes (4): 1, 2, 4, 8" in ex.summary.value
    assert "graph fraction 0.235" in ex.summary.value  # 8 of the 34 reachable rows
    # The first decode step of 8 requests sends 8 * 5 = 40 scorer rows: the scorer fails first.
    assert (
        "fails first: the scorer (target model), KeyError: 40 on the first decode step"
        in ex.summary.value
    )
    assert (
        "fails next: the proposer (draft model), KeyError: 16 at n = 9..16 draft rows"
        in ex.summary.value
    )
    assert ex.png.startswith(b"\x89PNG") and png_size(ex.png)[0] > 400
    assert bytes(ex.image.value) == ex.png


def test_slider_move_updates_summary_and_image(ex):
    before = ex.png
    ex.controls["max_num_seqs"].value = 16  # the callback a slider move triggers
    report = audit("vllm-0.5.5", SizingConfig(16, 4))
    assert ex.state.max_num_seqs == 16
    assert f"first crash at n = {report.summary.first_crash_n}" in ex.summary.value
    assert "captured sizes (5): 1, 2, 4, 8, 16" in ex.summary.value
    assert ex.png != before
    ex.controls["num_speculative_tokens"].value = 0
    assert "no crash" in ex.summary.value and "graph fraction 1.000" in ex.summary.value


def test_engine_switch_enables_the_token_budget_only_for_v1(ex):
    t = ex.controls["max_num_batched_tokens"]
    ex.set(engine="vllm-0.6.0", max_num_seqs=8, num_speculative_tokens=4)
    assert t.disabled and ex.state.max_num_batched_tokens is None
    assert "0 crash" in ex.summary.value and "max_num_batched_tokens" not in ex.summary.value
    ex.controls["engine"].value = "vllm-0.33.0"
    assert not t.disabled and ex.controls["engine"].value == "vllm-0.33.0"
    t.value = 16
    assert ex.state.max_num_batched_tokens == 16
    expected = audit("vllm-0.33.0", SizingConfig(8, 4, 16))
    assert f"captured sizes ({len(expected.capture_sizes)})" in ex.summary.value
    assert "max_num_batched_tokens = 16" in ex.summary.value
    # FULL graphs at 5 and 10 tokens; 3 requests (15 tokens) find none and run PIECEWISE at 16.
    assert "2 full, 1 piecewise, 0 eager" in ex.summary.value
    ex.controls["engine"].value = "nano-vllm"
    assert t.disabled and ex.state.max_num_batched_tokens is None


@pytest.mark.parametrize("engine", list(TABLE_ENGINES))
def test_every_engine_renders_its_audit(engine):
    ex = explorer(engine, max_num_seqs=100, num_speculative_tokens=2)
    s = audit(engine, SizingConfig(100, 2)).summary
    assert f"{s.num_reachable} reachable" in ex.summary.value
    assert f"graph fraction {s.graph_fraction:.3f}" in ex.summary.value
    assert reads_max_num_batched_tokens(engine) == (
        engine in ("vllm-0.12.0", "vllm-0.13.0", "vllm-0.33.0")
    )


def test_crash_map_toggle_and_headless_image(ex):
    ex.set(engine="vllm-0.5.5", max_num_seqs=8, num_speculative_tokens=4)
    before = ex.png
    ex.controls["map_value"].value = "crashing sizes"
    assert ex.state.map_value == "crashing sizes" and ex.png != before
    bundle = ex._repr_mimebundle_()
    # The widget view for a live frontend and the PNG for papermill / a saved notebook.
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert base64.b64decode(bundle["image/png"]) == ex.png == bytes(ex.image.value)


def test_static_explorer_without_widgets():
    static = StaticExplorer(ExplorerState("nano-vllm", 100, 0))
    bundle = static._repr_mimebundle_()
    assert (
        base64.b64decode(bundle["image/png"]).startswith(b"\x89PNG")
        and "StopIteration" in bundle["text/html"]
    )


@pytest.mark.parametrize(
    "bad",
    [
        dict(max_num_seqs=0),
        dict(max_num_seqs=513),
        dict(num_speculative_tokens=9),
        dict(engine="vllm-9"),
        dict(map_value="nope"),
    ],
)
def test_out_of_range_state_is_refused(bad):
    with pytest.raises(GraphlabError):
        ExplorerState(**bad)


def _strip_row(image: PIL.Image.Image) -> tuple[int, list[tuple[int, int, int]]]:
    """The row of the figure's upper half with the most strip-coloured pixels, and its pixels."""
    colours = {PIL.ImageColor.getrgb(c) for c in PATH_COLORS.values()}
    rgb = image.convert("RGB")
    rows = [[rgb.getpixel((x, y)) for x in range(rgb.width)] for y in range(rgb.height // 2)]
    y = max(range(len(rows)), key=lambda i: sum(p in colours for p in rows[i]))
    return y, rows[y]


def test_the_strip_draws_each_batch_at_its_size_and_crashes_at_their_key():
    ex = StaticExplorer(ExplorerState("vllm-0.5.5", 8, 4))
    pixels = _strip_row(PIL.Image.open(io.BytesIO(ex.view.png())))[1]
    blue, red = (PIL.ImageColor.getrgb(PATH_COLORS[p]) for p in ("graph", "crash"))
    coloured = [x for x, p in enumerate(pixels) if p in (blue, red)]
    left, right = coloured[0], coloured[-1] + 1  # the strip spans n = 0.5 .. 40.5
    last_blue = max(x for x, p in enumerate(pixels) if p == blue) + 1
    # Graphs end at n = 8 of the 40 on the axis (34 reachable sizes: 29, 33, 34 never occur).
    assert abs(last_blue - (left + (right - left) * 8 / 40)) <= 2
    assert pixels[round(left + (right - left) * 28.5 / 40)] == (255, 255, 255)  # n = 29: none
    crash = ex.view.lines["crash"].get_ydata()
    # Each crash is vLLM 0.5.5's lookup of pad0(n): 16, 24, 32, 40, never captured (largest 8).
    assert sorted({int(v) for v in crash if v == v}) == [16, 24, 32, 40]
    assert ex.view.largest.get_ydata()[0] == 8


def test_the_selected_cell_is_marked_larger_than_a_cell():
    ex = StaticExplorer(ExplorerState("vllm-0.5.5", 100, 2))
    vline, hline, ring = ex.view.cell
    assert vline.get_xdata()[0] == 100 and hline.get_ydata()[0] == 2
    assert ring.get_markersize() * ex.view.figure.dpi / 72 >= 10  # pixels across, not 1.5


@pytest.mark.parametrize("map_value", ["graph fraction", "crashing sizes"])
def test_the_selected_cell_stands_out_on_either_colour_map(map_value):
    ex = StaticExplorer(ExplorerState("vllm-0.5.5", 100, 2, map_value=map_value))
    vline, hline, ring = ex.view.cell
    edge = np.array(matplotlib.colors.to_rgb(ring.get_markeredgecolor()))
    assert matplotlib.colors.same_color(vline.get_color(), edge)
    assert matplotlib.colors.same_color(hline.get_color(), edge)
    # RGB distance to every colour of the map, its maximum included (a red ring on Reds: 0.25).
    cmap = ex.view.map_image.get_cmap()
    colours = cmap(np.linspace(0, 1, 256))[:, :3]
    assert np.linalg.norm(colours - edge, axis=1).min() > 0.5
    assert not matplotlib.colors.same_color(cmap(1.0), edge)


def test_the_crash_map_title_clears_the_strip_label():
    ex = StaticExplorer(ExplorerState())
    ex.view.png()
    renderer = ex.view.canvas.get_renderer()
    label = ex.view.strip.xaxis.label.get_window_extent(renderer)
    title = ex.view.map.title.get_window_extent(renderer)
    # Display y grows upwards. The upper half is redrawn opaque on every move: the title must lie
    # wholly below it, not only below the label.
    assert title.y1 <= ex.view.top.bbox.y0 and title.y1 <= label.y0


def test_notebook_02_states_the_audit_headline():
    """Notebook 02's opening says which runner fails first and next, as audit's headline does."""
    import json

    from graphlab.sizing.audit import headline

    line = headline(audit("vllm-0.5.5", SizingConfig(8, 4)))
    nb = ROOT / "notebooks" / "02_the_crash.ipynb"
    opening = " ".join("".join(json.loads(nb.read_text())["cells"][0]["source"]).split())
    for part in (
        "fails first: the scorer (target model), `KeyError: 40` on the first decode step",
        "fails next: the proposer (draft model), `KeyError: 16` at n = 9..16 draft rows",
    ):
        assert part.replace("`", "") in line and part in opening


def test_crash_map_follows_the_token_budget_and_scales_to_its_largest_value():
    from graphlab.sizing.crash_maps import crash_map

    def expected(engine, t, value):
        frame = crash_map(engine, range(1, 513), range(0, 9), t)
        return frame.pivot(
            index="max_num_seqs", columns="num_speculative_tokens", values=value
        ).to_numpy(float)

    ex = explorer("vllm-0.33.0", max_num_seqs=8, num_speculative_tokens=4)

    def shown():  # [S - 1, k]
        return np.asarray(ex.view.map_image.get_array(), dtype=float).T

    maps = []
    for t in (8192, 64):  # a smaller token budget leaves large batches without a graph
        ex.set(max_num_batched_tokens=t)
        maps.append(shown())
        assert np.array_equal(
            maps[-1], expected("vllm-0.33.0", t, "graph_fraction"), equal_nan=True
        )
        assert ex.view.map_image.get_clim() == (0, 1.0)
    assert not np.array_equal(*maps, equal_nan=True)
    ex.set(engine="vllm-0.5.5", max_num_batched_tokens=None, map_value="crashing sizes")
    crashes = expected("vllm-0.5.5", None, "num_crash")
    assert np.array_equal(shown(), crashes, equal_nan=True)
    assert ex.view.map_image.get_clim() == (0, np.nanmax(crashes)) and np.nanmax(crashes) > 1


def test_slider_ends_are_accepted_and_values_past_them_refused():
    ex = explorer(
        "vllm-0.33.0", max_num_seqs=512, num_speculative_tokens=8, max_num_batched_tokens=16384
    )
    assert ex.state.max_num_seqs == ex.controls["max_num_seqs"].max == 512
    assert ex.controls["max_num_batched_tokens"].value == ex.state.max_num_batched_tokens == 16384
    for bad in (100000, 0):
        with pytest.raises(
            GraphlabError,
            match=r"max_num_batched_tokens \(or None\) must be an integer in 1..16384",
        ):
            explorer("vllm-0.33.0", max_num_batched_tokens=bad)


def test_a_token_budget_below_max_num_seqs_shows_the_refusal_and_later_controls_answer():
    ex = explorer("vllm-0.33.0", 8, 4)
    ex.controls["max_num_batched_tokens"].value = 4  # T < S: vLLM V1 refuses to start
    refusal = "max_num_batched_tokens (4) must be greater than or equal to max_num_seqs (8)"
    assert refusal in ex.summary.value and refusal in ex.view.padded.get_title()
    assert "refuses to start" in ex.view.padded.get_title()
    assert ex.png.startswith(b"\x89PNG")
    ex.controls["max_num_batched_tokens"].value = 64  # a later control still answers
    assert ex.state.max_num_batched_tokens == 64 and "refuses" not in ex.summary.value
    assert "8 reachable" in ex.summary.value and "refuses" not in ex.view.padded.get_title()


@pytest.mark.parametrize("k, t", [(7, 7), (4, 1)])
def test_a_config_that_does_not_run_draws_only_why(k, t):
    # (S 8, T 7): vLLM V1 refuses to start; T = 1 passes S only when S = 1, and then no request's
    # 1 + k tokens fit: neither has a graph fraction to show, nor a crash map cell.
    ex = explorer("vllm-0.33.0", 8 if t == 7 else 1, k, t)
    title, summary = ex.view.padded.get_title(), ex.summary.value
    assert "nan" not in title + summary and "graph fraction" not in title + summary
    assert not ex.view.map.get_visible() and ex.png.startswith(b"\x89PNG")
    assert all(not line.get_xydata().size for line in ex.view.lines.values())
    said = "refuses to start" if t == 7 else "no decode batch is reachable"
    assert said in title and f"T = {t}" in title
    ex.controls["max_num_batched_tokens"].value = 2048  # a config that runs: the map is back
    assert ex.view.map.get_visible() and "graph fraction" in ex.summary.value


def test_the_strip_names_its_unreachable_sizes():
    ex = StaticExplorer(ExplorerState("vllm-0.5.5", 8, 4))
    assert "no batch reaches n (white)" in ex.view.strip.get_xlabel()


def _latency_csv(path, eager_ms: float, graph_ms: float):
    """A latency.csv of one V0 engine (rows 1..32, graphs 1..24) and one V1 engine (tokens
    4..64): every eager step eager_ms, every graph step graph_ms."""
    import pandas as pd

    common = dict(model="tiny", dtype="float32", backend="cpu-compiled")
    rows = []
    for engine, unit, k, ns, graphs in (
        ("vllm-0.6.0", "rows", 0, range(1, 33), (1, 2, 4, 8, 16, 24)),
        ("vllm-0.33.0", "tokens", 3, range(4, 65, 4), (4, 8, 16, 24, 32, 64)),
    ):
        base = dict(common, engine=engine, batch_unit=unit, num_speculative_tokens=k)
        rows += [
            dict(base, mode="eager", batch_size=n, path="eager", median_ms=eager_ms) for n in ns
        ]
        family = "graph" if unit == "rows" else "full"
        rows += [
            dict(base, mode="graph", batch_size=g, path=family, graph_size=g, median_ms=graph_ms)
            for g in graphs
        ]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_the_explorer_prices_eager_steps_at_their_eager_time(tmp_path):
    """Waste counts an eager step as 0; the price in time charges it: the guard, with fewer
    graphs and eager steps, pays more per step than adaptive, which covers every batch."""
    from graphlab.views.explorer_price import price_line

    latency = _latency_csv(tmp_path / "latency.csv", eager_ms=10.0, graph_ms=1.0)
    cfg = SizingConfig(4, 4)  # up to 4 x 5 = 20 rows; the guard's graphs stop at 4
    guard, adaptive = audit("vllm-0.6.0", cfg), audit("adaptive", cfg)
    assert guard.summary.mean_padding_waste < adaptive.summary.mean_padding_waste
    s = guard.summary  # each reachable n once: graph steps 1 ms, eager steps 10 ms
    assert s.num_eager > 0 and s.num_graph + s.num_eager == s.num_reachable
    expected = (s.num_graph * 1.0 + s.num_eager * 10.0) / s.num_reachable
    assert price_line(guard, latency).startswith(f"mean step {expected:.3f} ms on ")
    assert price_line(adaptive, latency).startswith("mean step 1.000 ms on ")
    assert "(cpu-compiled)" in price_line(adaptive, latency)
    # V1 token rows price a V1 engine: 2 requests x 4 tokens = 4, 8 tokens, both on FULL graphs.
    assert price_line(audit("vllm-0.33.0", SizingConfig(2, 3)), latency).startswith(
        "mean step 1.000 ms"
    )
    far = price_line(audit("vllm-0.6.0", SizingConfig(8, 4)), latency)
    # Its eager steps run at n = 9..40: the reachable ones past the measured 32 are named.
    assert far == (
        f"not priced: {tmp_path.name}/latency.csv measured eager steps at n = 1..32 rows; this "
        "config's eager steps also need n = 35..40"
    )
    # A V1 config whose smallest FULL graph (2 tokens, k = 1) lies below the measured 4..64.
    low = price_line(audit("vllm-0.33.0", SizingConfig(2, 1)), latency)
    assert low.startswith(f"not priced: {tmp_path.name}/latency.csv measured graph steps at n")
    assert low.endswith("this config's graph steps also need n = 2")
    assert "crashes" in price_line(audit("vllm-0.5.5", SizingConfig(8, 4)), latency)
    assert "refuses" in price_line(audit("vllm-0.33.0", SizingConfig(9, 4, 4)), latency)
    # T = 4 below one request's 1 + k = 5 tokens: nothing to price, and nothing raised (the
    # explorer's next move must still answer).
    assert "no decode step of this config is reachable" in price_line(
        audit("vllm-0.33.0", SizingConfig(3, 4, 4)), latency
    )
    assert price_line(guard, None) == ""


def test_the_explorer_shows_its_price_and_follows_the_sliders(tmp_path):
    import html

    from graphlab.views.explorer_price import price_line

    latency = _latency_csv(tmp_path / "latency.csv", eager_ms=10.0, graph_ms=1.0)
    moved = explorer("vllm-0.6.0", 4, 4, latency=latency)
    guard = price_line(audit("vllm-0.6.0", SizingConfig(4, 4)), latency)
    assert guard.startswith("mean step ") and html.escape(guard) in moved.summary.value
    moved.set(engine="adaptive")
    assert "mean step 1.000 ms on " in moved.summary.value
    # The browser test's path: a V1 engine, T = 4, S down to 3 (no step fits), then back.
    moved.set(engine="vllm-0.33.0", max_num_batched_tokens=4, max_num_seqs=3)
    # Nothing runs, so nothing is priced: the summary says why, and only that.
    assert "max_num_seqs = 3," in moved.summary.value and "mean step" not in moved.summary.value
    assert "no decode batch of this config is reachable" in moved.summary.value
    moved.set(max_num_batched_tokens=64)
    assert "mean step 1.000 ms on " in moved.summary.value
    static = StaticExplorer(ExplorerState("vllm-0.6.0", 4, 4), latency)
    assert html.escape(guard) in static._repr_mimebundle_()["text/html"]


def test_a_token_budget_move_answers_before_its_crash_map_which_follows():
    from graphlab.sizing.crash_maps import crash_map

    ex = explorer("vllm-0.33.0", 8, 4)
    before = ex.png
    ex.controls["max_num_batched_tokens"].value = 1234  # a budget no other test draws
    # Answered: the summary and the strip are the new config's, the map is flagged as on its way.
    assert "max_num_batched_tokens = 1234" in ex.summary.value and ex.png != before
    assert ex.view.map_pending and "being computed" in ex.view.map.get_title()
    assert ex.view.map_image.get_alpha() == 0.25
    pending = ex.png
    ex.wait()
    expected = crash_map("vllm-0.33.0", range(1, 513), range(0, 9), 1234).pivot(
        index="max_num_seqs", columns="num_speculative_tokens", values="graph_fraction"
    )
    shown = np.asarray(ex.view.map_image.get_array(), dtype=float).T
    assert np.array_equal(shown, expected.to_numpy(float), equal_nan=True)
    assert not ex.view.map_pending and "being computed" not in ex.view.map.get_title()
    assert ex.view.map_image.get_alpha() is None
    assert ex.png != pending and bytes(ex.image.value) == ex.png


def test_a_map_computed_for_a_state_already_left_draws_the_latest_state():
    ex = explorer("vllm-0.13.0", 8, 2)
    ex.controls["max_num_batched_tokens"].value = 1500
    ex.controls["max_num_batched_tokens"].value = 1501  # moved on before the first map is ready
    ex.controls["max_num_seqs"].value = 9
    ex.wait()
    assert ex.state.max_num_batched_tokens == 1501 and not ex.view.map_pending
    assert "max_num_seqs = 9" in ex.summary.value
    title = ex.view.map.get_title()
    assert title.startswith("crash map of vllm-0.13.0") and "being computed" not in title
    assert ex.view._map_key == ("vllm-0.13.0", 1501, "graph_fraction")


def test_a_crash_map_that_fails_on_the_worker_says_so_in_its_title(monkeypatch):
    import graphlab.views.widgets as widgets

    ex = explorer("vllm-0.33.0", 8, 4)

    def failing(*args):
        raise MemoryError("no room for the map")

    monkeypatch.setattr(widgets, "crash_grid", failing)
    ex.controls["max_num_batched_tokens"].value = 1236  # a budget no other test draws
    ex.wait()
    title = ex.view.map.get_title()
    assert "could not be computed (MemoryError: no room for the map)" in title
    assert "being computed" not in title and not ex.view.map_pending
    assert ex.view.map_image.get_alpha() == 0.25 and bytes(ex.image.value) == ex.png
