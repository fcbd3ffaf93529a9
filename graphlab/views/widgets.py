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
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import replace

from graphlab.sizing.audit import AuditReport, headline
from graphlab.sizing.engines import DEFAULT_MAX_NUM_BATCHED_TOKENS, TABLE_ENGINES, get_engine
from graphlab.views.explorer_figure import (
    MAP_VALUES,
    MAX_K,
    MAX_NUM_BATCHED_TOKENS,
    MAX_NUM_SEQS,
    ExplorerFigure,
    ExplorerState,
    crash_grid,
)
from graphlab.views.explorer_price import price_line


def reads_max_num_batched_tokens(engine: str) -> bool:
    """Whether the engine sizes with max_num_batched_tokens (vLLM V1 does; V0 and the peers do
    not): the engine control's name enters here."""
    return get_engine(engine).uses_max_num_batched_tokens


def summary_html(report: AuditReport, price: str = "") -> str:
    """The summary line, the price in time (explorer_price.price_line) and the captured sizes,
    as the explorer shows them."""
    s = report.summary
    t = (
        f", max_num_batched_tokens = {report.max_num_batched_tokens}"
        if report.max_num_batched_tokens is not None
        else ""
    )
    config = (
        f"<b>{report.engine}</b>: max_num_seqs = {report.config.max_num_seqs}, "
        f"k = {report.config.num_speculative_tokens}{t}<br>"
    )
    if report.startup_error:  # nothing runs: the refusal alone, no fractions of nothing
        return config + f"the engine refuses this config: {html.escape(report.startup_error)}"
    if not s.num_reachable:
        return config + (
            "no decode batch of this config is reachable: one request's 1 + k tokens exceed "
            "max_num_batched_tokens"
        )
    crash = (
        f"first crash at n = {s.first_crash_n}: <b>{html.escape(s.first_crash_error)}</b>"
        if s.first_crash_n
        else "no crash"
    )
    first = headline(report)  # which runner the first decode step breaks, and which breaks next
    crash += f"<br>{html.escape(first)}" if first else ""
    sizes = ", ".join(map(str, report.capture_sizes)) or "none"
    graphs = (
        f"{s.num_graph - s.num_piecewise} full, {s.num_piecewise} piecewise"
        if report.cudagraph_mode is not None
        else f"{s.num_graph} graph"
    )
    return (
        config + f"{s.num_reachable} reachable batch sizes ({report.batch_unit}): {graphs}, "
        f"{s.num_eager} eager, {s.num_crash} crash; graph fraction {s.graph_fraction:.3f}; "
        f"mean padding waste {s.mean_padding_waste:.2f} {report.batch_unit} (an eager step "
        f"counts 0: not a cost in time); {crash}<br>"
        + (f"{html.escape(price)}<br>" if price else "")
        + f"captured sizes ({len(report.capture_sizes)}): {sizes}"
    )


class Explorer:
    """The controls, the figure and the summary; `state` is what they select now.

    A control answers at once: the strip and the summary follow the move, and a crash map not yet
    computed (a new engine or token budget: 4,608 audits) is computed on a worker thread and
    shown when ready, the previous map faded meanwhile. `set(**changes)` answers with the map;
    `wait()` waits for a map a control move left pending.
    """

    def __init__(self, state: ExplorerState, latency=None):
        import ipywidgets as w

        self.view = ExplorerFigure()
        self.state = state
        self.latency = latency  # a latency.csv that prices each state in time, or None
        engine_reads_t = state.policy.uses_max_num_batched_tokens
        slider = dict(
            continuous_update=False,
            layout=w.Layout(width="420px"),
            style={"description_width": "190px"},
        )
        self.controls = {
            "engine": w.Dropdown(
                options=list(TABLE_ENGINES),
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
        self._lock = threading.RLock()  # one render at a time: the figure is not thread-safe
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="graphlab-crash-map")
        self._pending: Future | None = None
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
            self.set(engine=value, max_num_batched_tokens=t, wait=False)
        elif name == "max_num_batched_tokens":
            self.set(
                max_num_batched_tokens=value
                if self.state.policy.uses_max_num_batched_tokens
                else None,
                wait=False,
            )
        else:
            self.set(**{name: value}, wait=False)

    def set(self, wait: bool = True, **changes) -> AuditReport:
        """Select new values (the controls follow) and redraw; returns the new audit report.
        wait False (a control's move): a crash map not computed yet follows on the worker."""
        with self._lock:
            self.state = replace(self.state, **changes)
            self._syncing = True
            try:
                for name, control in self.controls.items():
                    value = getattr(self.state, name)
                    if value is not None:
                        control.value = value
            finally:
                self._syncing = False
            return self._render(wait)

    def wait(self) -> None:
        """Return once the crash map of the state shown is drawn (a control's move computes it
        on the worker thread)."""
        while (pending := self._pending) is not None:
            pending.result()
            if pending is self._pending:
                return

    def _render(self, wait: bool = True) -> AuditReport:
        with self._lock:
            report = self.view.update(self.state, map_now=wait)
            self.summary.value = summary_html(report, price_line(report, self.latency))
            self.png = self.view.png()
            self.image.value = self.png
            if self.view.map_pending:
                self._pending = self._worker.submit(self._draw_map, self.state)
            return report

    def _draw_map(self, state: ExplorerState) -> None:
        try:
            crash_grid(state.engine, state.max_num_batched_tokens, MAP_VALUES[state.map_value])
        except Exception as error:  # on the worker nobody would see it: the figure says it
            with self._lock:
                if self.state == state:
                    self.view.map_failed(state, error)
                    self.png = self.view.png()
                    self.image.value = self.png
            return
        with self._lock:
            if self.state == state:  # a later move has its own map on the way
                self._render(wait=False)

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

    def __init__(self, state: ExplorerState, latency=None):
        self.view = ExplorerFigure()
        self.state = state
        self.report = self.view.update(state)
        self.price = price_line(self.report, latency)

    def _repr_mimebundle_(self, include=None, exclude=None):
        return {
            "image/png": base64.b64encode(self.view.png()).decode("ascii"),
            "text/html": summary_html(self.report, self.price),
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
    latency=None,
):
    """The explorer at this state: interactive with ipywidgets, else a static figure. `latency`:
    a bench run's latency.csv (e.g. data/cpu/latency.csv) to price each state's steps in time."""
    state = ExplorerState(
        engine, max_num_seqs, num_speculative_tokens, max_num_batched_tokens, map_value
    )
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return StaticExplorer(state, latency)
    return Explorer(state, latency)
