"""The explorer's figure: the padded size and path of every batch size, and the engine's crash map.

Built once and updated in place per state (`ExplorerFigure.update`), drawn to PNG without the
ipywidgets that graphlab.views.widgets wraps around it. All of it comes from
`graphlab.sizing.audit` (the sizing rules), no device involved.
"""

from __future__ import annotations

import io
import threading
from dataclasses import dataclass, field

import numpy as np
import PIL.Image
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure

from graphlab.errors import check_choice, check_int
from graphlab.sizing.audit import AuditReport, audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.crash_maps import crash_map
from graphlab.sizing.dispatch import BatchPath
from graphlab.sizing.engines import SizingPolicy, get_engine
from graphlab.views.style import PATH_COLORS

MAX_NUM_SEQS = 512  # the slider's range, and the crash map's S axis
MAX_K = 8
MAX_NUM_BATCHED_TOKENS = 16384
MAP_VALUES = {"graph fraction": "graph_fraction", "crashing sizes": "num_crash"}
# What the explorer draws: a V1 batch's FULL or PIECEWISE graph shows as a graph.
PATHS = (BatchPath.GRAPH, BatchPath.EAGER, BatchPath.CRASH)
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
    policy: SizingPolicy = field(init=False, repr=False, compare=False)  # the engine's rules

    def __post_init__(self):
        object.__setattr__(self, "policy", get_engine(self.engine))  # the control's name enters
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


_MAPS_KEPT = 32  # crash maps kept, most recent first out last: ~0.4 MB each
_maps: dict[tuple[str, int | None], object] = {}
_maps_lock = threading.Lock()


def has_crash_map(engine: str, max_num_batched_tokens: int | None) -> bool:
    """Whether `crash_grid` answers for this engine and budget without computing."""
    return (engine, max_num_batched_tokens) in _maps


def crash_grid(engine: str, max_num_batched_tokens: int | None, value: str) -> np.ndarray:
    """One column of an engine's crash map as an array [S - 1, k] over S 1..512, k 0..8. The map
    (4,608 audits, ~1.5 s on 2 cores) is computed once per engine and budget, for every value."""
    key = (engine, max_num_batched_tokens)
    frame = _maps.get(key)
    if frame is None:
        frame = crash_map(
            engine, range(1, MAX_NUM_SEQS + 1), range(0, MAX_K + 1), max_num_batched_tokens
        )
        with _maps_lock:  # the explorer computes maps on a worker thread
            _maps[key] = frame
            while len(_maps) > _MAPS_KEPT:
                del _maps[next(iter(_maps))]
    grid = frame.pivot(index="max_num_seqs", columns="num_speculative_tokens", values=value)
    return grid.to_numpy(dtype=float)


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
        self.map_pending = False  # the map shown is not the state's: its map is being computed
        self._background = None  # the whole figure without the selected-cell box, after a full draw
        # Place the axes once, with room for the widest labels (5-digit sizes, titles); solving the
        # layout again on every move would cost ~40% of a redraw.
        self.padded.set_ylim(0, 10 * MAX_NUM_SEQS * (MAX_K + 1))
        self.padded.set_title("title")
        self.strip.set_xlabel("label")
        self.map.set_title("crash map title", fontsize=9)  # its room: clear of the strip's label
        self.canvas.draw()
        self.figure.set_layout_engine("none")

    def update(self, state: ExplorerState, map_now: bool = True) -> AuditReport:
        """Show `state`. map_now False: where its crash map is not computed yet, keep the map
        shown, faded and titled as such, and set `map_pending` (the caller computes it with
        `crash_grid` and updates again)."""
        report = audit(state.policy, state.config)
        refused = report.startup_error is not None or not report.outcomes
        self._show_map(not refused)
        self.map_pending = False
        if refused:  # refused (T < S in vLLM V1) or nothing fits: the refusal alone
            self._refused(report, state)
            return report
        if map_now or has_crash_map(state.engine, state.max_num_batched_tokens):
            self._update_map(state)
        else:
            self._pending_map(state)
        vline, hline, ring = self.cell
        vline.set_xdata([state.max_num_seqs] * 2)
        hline.set_ydata([state.num_speculative_tokens] * 2)
        ring.set_data([state.max_num_seqs], [state.num_speculative_tokens])
        ns = np.array([d.batch_size for d in report.outcomes])
        # The key each n looks up: a crash is the lookup of a padded size that was never captured.
        batches = state.policy.dispatch_batches(ns, state.config)
        path = np.select([batches.replays, batches.takes(BatchPath.EAGER)], [0, 1], 2)
        keys = batches.key
        padded = np.where(path == PATHS.index(BatchPath.EAGER), ns, np.where(keys > 0, keys, ns))
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
            "(blue) / eager (orange) / crash (red) / no batch reaches n (white)"
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
        return report

    def _refused(self, report: AuditReport, state: ExplorerState) -> None:
        """No batch to draw: empty lines and strip, no crash map, and as the title the engine's
        refusal (the line `python -m graphlab audit` prints first) or that no batch is
        reachable, on one line (the title's room was laid out for one)."""
        for line in (*self.lines.values(), self.diagonal):
            line.set_data([], [])
        self.largest.set_ydata([0, 0])
        self.strip_image.set_data(np.ma.masked_all((1, 1)))
        self.strip.set_xlabel(
            "no batch size: the engine does not start"
            if report.startup_error
            else "no batch size: one request's 1 + k tokens exceed max_num_batched_tokens"
        )
        t = state.max_num_batched_tokens
        said = (
            f"the engine refuses to start: {report.startup_error}"
            if report.startup_error
            else "no decode batch is reachable"
        )
        self.padded.set_title(
            f"{report.engine}, S = {state.max_num_seqs}, k = {state.num_speculative_tokens}"
            + (f", T = {t}" if t is not None else "")
            + f": {said}",
            fontsize=9,
        )

    def _show_map(self, shown: bool) -> None:
        """Show or hide the crash map and its colour bar (hidden for a config that does not
        run); a change redraws the whole figure once."""
        if self.map.get_visible() != shown:
            self.map.set_visible(shown)
            self.colorbar.ax.set_visible(shown)
            self._background = None

    def _pending_map(self, state: ExplorerState) -> None:
        """The previous map, faded, under a title saying whose map is on its way."""
        self.map_pending = True
        self._map_key = None
        self._background = None
        self.map_image.set_alpha(0.25)
        t = state.max_num_batched_tokens
        self.map.set_title(
            f"crash map of {state.engine}"
            + (f" at T = {t}" if t is not None else "")
            + ": being computed (4,608 configs); the faded map is the previous one",
            fontsize=9,
        )

    def map_failed(self, state: ExplorerState, error: Exception) -> None:
        """The previous map stays faded; the title says this state's map failed, and why."""
        self.map_pending = False
        t = state.max_num_batched_tokens
        self.map.set_title(
            f"crash map of {state.engine}"
            + (f" at T = {t}" if t is not None else "")
            + f" could not be computed ({type(error).__name__}: {error}); the faded map is the"
            " previous one",
            fontsize=9,
        )

    def _update_map(self, state: ExplorerState) -> None:
        key = (state.engine, state.max_num_batched_tokens, MAP_VALUES[state.map_value])
        if key == self._map_key:
            return
        self._map_key = key
        self._background = None
        self.map_image.set_alpha(None)
        grid = crash_grid(*key)
        finite = grid[np.isfinite(grid)]
        fraction = key[2] == "graph_fraction"
        vmax = 1.0 if fraction else max(1.0, float(finite.max(initial=0)))
        self.map_image.set_data(grid.T)
        self.map_image.set_cmap("viridis" if fraction else "Reds")
        self.map_image.set_clim(0, vmax)
        colour = "red" if fraction else "blue"  # far from every colour of viridis / of Reds
        for artist in self.cell:
            artist.set_color(colour)
        self.cell[2].set_markeredgecolor(colour)  # set_color leaves the ring's edge as it was
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
        if self.map.get_visible():
            for artist in self.cell:
                self.map.draw_artist(artist)
        image = PIL.Image.frombuffer(
            "RGBA", self.canvas.get_width_height(), self.canvas.buffer_rgba()
        )
        buffer = io.BytesIO()
        image.save(buffer, format="png", compress_level=1)  # zlib's default level 6 costs ~3x
        return buffer.getvalue()
