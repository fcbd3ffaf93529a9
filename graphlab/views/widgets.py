"""An explorer of capture sizes: pick an engine and a config, see every decode batch's fate.

    from graphlab.views.widgets import explorer
    explorer()                       # the last expression of a notebook cell

Controls: engine (the nine), max_num_seqs S, num_speculative_tokens k, max_num_batched_tokens T
(enabled only for the engines that read it: vLLM V1) and the crash-map value. The figure shows a
strip of every reachable batch size n, drawn at n and coloured graph / eager / crash, above it the
size each n is padded to (a crash at the key it looked up and never captured), and the crash map
of the engine over (S, k) with the selected cell marked; beside it the summary
(graph fraction, first crash and its exception, mean padding waste) and the captured sizes. All of
it comes from `graphlab.sizing.audit` (the sizing rules), no device involved.

In a live notebook the explorer is an ipywidgets box; where no widget can render (papermill, a
saved notebook, nbconvert) the same output carries a PNG of the state it was displayed in.
"""

from __future__ import annotations

import base64
import html
import io
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from graphlab.errors import check_choice, check_int
from graphlab.sizing.audit import AuditReport, audit, headline
from graphlab.sizing.crash_maps import crash_map
from graphlab.sizing.engines import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    ENGINES,
    PATHS,
    SizingConfig,
    get_engine,
)
from graphlab.views.plots import PATH_COLORS

MAX_NUM_SEQS = 512  # the slider's range, and the crash map's S axis
MAX_K = 8
MAX_NUM_BATCHED_TOKENS = 16384
MAP_VALUES = {"graph fraction": "graph_fraction", "crashing sizes": "num_crash"}
# White: sizes between the smallest and largest n that no batch reaches.
_STRIP = ListedColormap([PATH_COLORS[p] for p in PATHS]).with_extremes(bad="white")


@dataclass(frozen=True)
class ExplorerState:
    """What the controls select. max_num_batched_tokens: None for the engine's default."""

    engine: str = "vllm-0.5.5"
    max_num_seqs: int = 8
    num_speculative_tokens: int = 4
    max_num_batched_tokens: int | None = None
    map_value: str = "graph fraction"

    def __post_init__(self):
        get_engine(self.engine)
        check_int("max_num_seqs", self.max_num_seqs, 1, MAX_NUM_SEQS)
        check_int("num_speculative_tokens", self.num_speculative_tokens, 0, MAX_K)
        if self.max_num_batched_tokens is not None:  # the slider's range
            check_int(
                "max_num_batched_tokens (or None)",
                self.max_num_batched_tokens,
                1,
                MAX_NUM_BATCHED_TOKENS,
            )
        check_choice("map_value", self.map_value, MAP_VALUES)

    @property
    def config(self) -> SizingConfig:
        return SizingConfig(
            self.max_num_seqs, self.num_speculative_tokens, self.max_num_batched_tokens
        )


def reads_max_num_batched_tokens(engine: str) -> bool:
    """Whether the engine sizes with max_num_batched_tokens (vLLM V1 does; V0 and the peers do
    not)."""
    return get_engine(engine).effective_max_num_batched_tokens(SizingConfig(1)) is not None


@lru_cache(maxsize=32)
def _crash_grid(engine: str, max_num_batched_tokens: int | None, value: str) -> np.ndarray:
    """The crash map of one engine as an array [S - 1, k] over S 1..512, k 0..8 (cached: ~0.5 s)."""
    frame = crash_map(
        engine, range(1, MAX_NUM_SEQS + 1), range(0, MAX_K + 1), max_num_batched_tokens
    )
    grid = frame.pivot(index="max_num_seqs", columns="num_speculative_tokens", values=value)
    return grid.to_numpy(dtype=float)


def summary_html(report: AuditReport) -> str:
    """The summary line and the captured sizes, as the explorer shows them."""
    s = report.summary
    crash = (
        f"first crash at n = {s.first_crash_n}: <b>{html.escape(s.first_crash_error)}</b>"
        if s.first_crash_n
        else "no crash"
    )
    first = headline(report)  # which runner the first decode step breaks, and which breaks next
    crash += f"<br>{html.escape(first)}" if first else ""
    startup = (
        f"<br>the engine refuses this config: {html.escape(report.startup_error)}"
        if report.startup_error
        else ""
    )
    t = (
        f", max_num_batched_tokens = {report.max_num_batched_tokens}"
        if report.max_num_batched_tokens is not None
        else ""
    )
    sizes = ", ".join(map(str, report.capture_sizes)) or "none"
    graphs = (
        f"{s.num_graph - s.num_piecewise} full, {s.num_piecewise} piecewise"
        if report.cudagraph_mode is not None
        else f"{s.num_graph} graph"
    )
    return (
        f"<b>{report.engine}</b>: max_num_seqs = {report.config.max_num_seqs}, "
        f"k = {report.config.num_speculative_tokens}{t}<br>"
        f"{s.num_reachable} reachable batch sizes ({report.batch_unit}): {graphs}, "
        f"{s.num_eager} eager, {s.num_crash} crash; graph fraction {s.graph_fraction:.3f}; "
        f"mean padding waste {s.mean_padding_waste:.2f} {report.batch_unit}; {crash}{startup}<br>"
        f"captured sizes ({len(report.capture_sizes)}): {sizes}"
    )


class ExplorerFigure:
    """The explorer's figure, built once; `update(state)` moves its artists and returns the
    report."""

    def __init__(self, dpi: int = 80):
        self.figure = Figure(figsize=(10, 5.2), dpi=dpi, layout="constrained")
        self.canvas = FigureCanvasAgg(self.figure)
        top, bottom = self.figure.subfigures(2, 1, height_ratios=(1.1, 1))
        top.set_facecolor("white")  # opaque: redrawing it alone covers the previous strip
        self.top = top
        self.padded, self.strip = top.subplots(2, 1, sharex=True, height_ratios=(4, 1))
        self.map = bottom.subplots(1, 1)
        # One step line per path (NaN elsewhere): markers for thousands of n render too slowly.
        labels = {
            "graph": "graph: padded size",
            "eager": "eager: n",
            "crash": "crash: key looked up, never captured",
        }
        self.lines = {
            p: self.padded.plot(
                [], [], color=PATH_COLORS[p], lw=2, drawstyle="steps-mid", label=labels[p]
            )[0]
            for p in PATHS
        }
        self.diagonal = self.padded.plot([], [], ":", color="black", lw=0.8, label="no padding")[0]
        self.largest = self.padded.axhline(
            0, color="grey", ls="--", lw=0.8, label="largest captured"
        )
        self.padded.legend(fontsize=9, loc="upper left", ncols=3)
        self.padded.set_ylabel("padded size")
        self.strip_image = self.strip.imshow(
            np.zeros((1, 1)), cmap=_STRIP, vmin=0, vmax=2, aspect="auto", interpolation="nearest"
        )
        self.strip.set_yticks([])
        self.map_image = self.map.imshow(
            np.zeros((MAX_NUM_SEQS, MAX_K + 1)).T,
            origin="lower",
            aspect="auto",
            interpolation="nearest",
            cmap="viridis",
            extent=(0.5, MAX_NUM_SEQS + 0.5, -0.5, MAX_K + 0.5),
        )
        self.colorbar = self.figure.colorbar(self.map_image, ax=self.map, pad=0.01)
        # A cell is 1 of 512 columns, under 2 pixels: a cross-hair and a ring make it findable.
        self.cell = [
            self.map.axvline(0, color="red", lw=0.8),
            self.map.axhline(0, color="red", lw=0.8),
            self.map.plot([0], [0], "o", ms=14, mfc="none", mec="red", mew=2)[0],
        ]
        self.map.set_xlabel("max_num_seqs S")
        self.map.set_ylabel("k")
        self.map.set_yticks(range(MAX_K + 1))
        self._map_key = None
        self._background = None  # the whole figure without the selected-cell box, after a full draw
        # Place the axes once, with room for the widest labels (5-digit sizes, titles); solving the
        # layout again on every move would cost ~40% of a redraw.
        self.padded.set_ylim(0, 10 * MAX_NUM_SEQS * (MAX_K + 1))
        self.padded.set_title("title")
        self.strip.set_xlabel("label")
        self.map.set_title("crash map title", fontsize=9)  # its room: clear of the strip's label
        self.canvas.draw()
        self.figure.set_layout_engine("none")

    def update(self, state: ExplorerState) -> AuditReport:
        report = audit(state.engine, state.config)
        ns = np.array([d.batch_size for d in report.outcomes])
        # The key each n looks up: a crash is the lookup of a padded size that was never captured.
        path, _, keys = get_engine(state.engine).dispatch_array(ns, state.config)
        padded = np.where(path == PATHS.index("eager"), ns, np.where(keys > 0, keys, ns))
        for i, p in enumerate(PATHS):
            self.lines[p].set_data(ns, np.where(path == i, padded, np.nan))
        self.diagonal.set_data([ns[0], ns[-1]], [ns[0], ns[-1]])
        self.largest.set_ydata([max(report.capture_sizes, default=0)] * 2)
        self.padded.set_xlim(ns[0] - 0.5, ns[-1] + 0.5)
        self.padded.set_ylim(0, max(int(padded.max()), 1) * 1.25)  # room for the legend
        # One strip cell per n from the smallest to the largest reachable, blank where none lands.
        strip = np.full(ns[-1] - ns[0] + 1, np.nan)
        strip[ns - ns[0]] = path
        self.strip_image.set_data(np.ma.masked_invalid(strip)[None, :])
        self.strip_image.set_extent((ns[0] - 0.5, ns[-1] + 0.5, 0, 1))
        self.strip.set_xlabel(
            f"batch size n ({report.batch_unit} per decode step); strip: graph "
            "(blue) / eager (orange) / crash (red)"
        )
        s = report.summary
        self.padded.set_title(
            f"{report.engine}, S = {state.max_num_seqs}, k = "
            f"{state.num_speculative_tokens}: graph fraction {s.graph_fraction:.3f}, "
            + (
                f"first crash n = {s.first_crash_n} ({s.first_crash_error})"
                if s.first_crash_n
                else "no crash"
            ),
            fontsize=10,
        )
        self._update_map(state)
        vline, hline, ring = self.cell
        vline.set_xdata([state.max_num_seqs] * 2)
        hline.set_ydata([state.num_speculative_tokens] * 2)
        ring.set_data([state.max_num_seqs], [state.num_speculative_tokens])
        return report

    def _update_map(self, state: ExplorerState) -> None:
        key = (state.engine, state.max_num_batched_tokens, MAP_VALUES[state.map_value])
        if key == self._map_key:
            return
        self._map_key = key
        self._background = None
        grid = _crash_grid(*key)
        finite = grid[np.isfinite(grid)]
        vmax = 1.0 if key[2] == "graph_fraction" else max(1.0, float(finite.max(initial=0)))
        self.map_image.set_data(grid.T)
        fraction = key[2] == "graph_fraction"
        self.map_image.set_cmap("viridis" if fraction else "Reds")
        self.map_image.set_clim(0, vmax)
        for artist in self.cell:  # visible on either colormap
            artist.set_color("red" if fraction else "blue")
        self.cell[2].set_markerfacecolor("none")
        self.colorbar.set_label(state.map_value)
        self.map.set_title(
            f"crash map of {state.engine} (computed from its sizing rule): "
            f"{state.map_value}; ring: the selected (S, k)",
            fontsize=9,
        )

    def png(self) -> bytes:
        """The figure as PNG. Only the strip half is redrawn while the crash map stays the same."""
        if self._background is None:
            for artist in self.cell:
                artist.set_visible(False)
            self.canvas.draw()
            self._background = self.canvas.copy_from_bbox(self.figure.bbox)
            for artist in self.cell:
                artist.set_visible(True)
        else:
            self.canvas.restore_region(self._background)
            self.top.draw(self.canvas.get_renderer())
        for artist in self.cell:
            self.map.draw_artist(artist)
        image = PIL.Image.frombuffer(
            "RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba()
        )
        buffer = io.BytesIO()
        image.save(buffer, format="png", compress_level=1)  # zlib's default level 6 costs ~3x
        return buffer.getvalue()


class Explorer:
    """The controls, the figure and the summary; `state` is what they select now.

    `set(**changes)` is what every control calls; tests and scripts call it too.
    """

    def __init__(self, state: ExplorerState):
        import ipywidgets as w

        self.view = ExplorerFigure()
        self.state = state
        engine_reads_t = reads_max_num_batched_tokens(state.engine)
        slider = dict(
            continuous_update=False,
            layout=w.Layout(width="420px"),
            style={"description_width": "190px"},
        )
        self.controls = {
            "engine": w.Dropdown(
                options=list(ENGINES),
                value=state.engine,
                description="engine",
                style=slider["style"],
            ),
            "max_num_seqs": w.IntSlider(
                state.max_num_seqs, 1, MAX_NUM_SEQS, description="max_num_seqs S", **slider
            ),
            "num_speculative_tokens": w.IntSlider(
                state.num_speculative_tokens,
                0,
                MAX_K,
                description="num_speculative_tokens k",
                **slider,
            ),
            "max_num_batched_tokens": w.IntSlider(
                state.max_num_batched_tokens or DEFAULT_MAX_NUM_BATCHED_TOKENS,
                1,
                MAX_NUM_BATCHED_TOKENS,
                disabled=not engine_reads_t,
                description="max_num_batched_tokens T",
                **slider,
            ),
            "map_value": w.ToggleButtons(
                options=list(MAP_VALUES), value=state.map_value, description="crash map"
            ),
        }
        self.image = w.Image(format="png")
        self.summary = w.HTML()
        self._syncing = False  # set while set() moves the controls: their callbacks then do nothing
        for name, control in self.controls.items():
            control.observe(
                lambda change, name=name: self._on_change(name, change["new"]), names="value"
            )
        self.widget = w.VBox(
            [
                w.HBox(
                    [
                        w.VBox(list(self.controls.values())[:3]),
                        w.VBox(list(self.controls.values())[3:]),
                    ]
                ),
                self.summary,
                self.image,
            ]
        )
        self._render()

    def _on_change(self, name: str, value) -> None:
        if self._syncing:
            return
        if name == "engine":
            reads = reads_max_num_batched_tokens(value)
            self.controls["max_num_batched_tokens"].disabled = not reads
            t = self.controls["max_num_batched_tokens"].value if reads else None
            self.set(engine=value, max_num_batched_tokens=t)
        elif name == "max_num_batched_tokens":
            self.set(
                max_num_batched_tokens=value
                if reads_max_num_batched_tokens(self.state.engine)
                else None
            )
        else:
            self.set(**{name: value})

    def set(self, **changes) -> AuditReport:
        """Select new values (the controls follow) and redraw; returns the new audit report."""
        self.state = replace(self.state, **changes)
        self._syncing = True
        try:
            for name, control in self.controls.items():
                value = getattr(self.state, name)
                if value is not None:
                    control.value = value
        finally:
            self._syncing = False
        return self._render()

    def _render(self) -> AuditReport:
        report = self.view.update(self.state)
        self.summary.value = summary_html(report)
        self.png = self.view.png()
        self.image.value = self.png
        return report

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = self.widget._repr_mimebundle_(include=include, exclude=exclude) or {}
        # Where the widget cannot render (papermill, a saved notebook), this image stands in for it.
        return {
            **bundle,
            "image/png": base64.b64encode(self.png).decode("ascii"),
            "text/plain": f"graphlab explorer: {self.state}",
        }


class StaticExplorer:
    """The explorer's figure and summary without ipywidgets (a bare GPU machine has none)."""

    def __init__(self, state: ExplorerState):
        self.view = ExplorerFigure()
        self.state = state
        self.report = self.view.update(state)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            "image/png": base64.b64encode(self.view.png()).decode("ascii"),
            "text/html": summary_html(self.report),
            "text/plain": (
                f"graphlab explorer (static; install ipywidgets to move it): {self.state}"
            ),
        }


def explorer(
    engine: str = "vllm-0.5.5",
    max_num_seqs: int = 8,
    num_speculative_tokens: int = 4,
    max_num_batched_tokens: int | None = None,
    map_value: str = "graph fraction",
):
    """The explorer at this state: interactive with ipywidgets, else a static figure."""
    state = ExplorerState(
        engine, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, map_value
    )
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return StaticExplorer(state)
    return Explorer(state)
