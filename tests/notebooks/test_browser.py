"""The notebooks in JupyterLab, in a real (headless) Chromium driven by Playwright.

A server on a loopback port with a token serves the notebooks as the session's CI run executed
them (conftest's `executed_notebooks`: papermill, the CI parameters, the kernel JupyterLab
starts); each is opened and checked for what a reader sees after Run All: no error output, the
expected number of rendered images, no table or figure wider than its cell. Notebook 02 is run
again live, with "Run All" in the browser, for its explorer widget, whose summary and picture
change after a slider move, whose strip shows the chosen config's graphs ending at their n, and
which shows vLLM's refusal of an illegal budget and answers the next move.
Chromium is Debian's (`apt-get install chromium`; .ci/run installs it), Playwright comes from the
dev extra; without either the test is skipped with the reason. Every wait is bounded; the server is
stopped at the end.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import PIL.ImageColor
import pytest

CHROMIUM = os.environ.get("GRAPHLAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
if importlib.util.find_spec("jupyterlab") is None or importlib.util.find_spec("papermill") is None:
    pytest.skip(
        "jupyterlab or papermill is not installed (the notebooks extra)", allow_module_level=True
    )
if importlib.util.find_spec("playwright") is None:
    pytest.skip("playwright is not installed (pip install -e '.[dev]')", allow_module_level=True)
if not os.access(CHROMIUM, os.X_OK):
    pytest.skip(f"no Chromium at {CHROMIUM} (apt-get install chromium)", allow_module_level=True)

import run_notebooks  # noqa: E402  (scripts/run_notebooks.py, loaded by conftest.py)

from helpers import ROOT
from graphlab.views.style import PATH_COLORS  # noqa: E402

pytestmark = pytest.mark.notebooks
SERVER_START_S = 90
RUN_ALL_S = 120  # notebook 02, all cells, live
# Run live in the browser: the explorer widget needs its kernel. The others are opened as run.
LIVE = ("02_the_crash",)
UI_S = 60  # a page, a widget, an update
# A kernel's start: past 60 s on the 2-core VM at load 7 (every kernel of the lab at once).
KERNEL_START_S = 180
# Inspects the open notebook's model: errors, cells not yet run, kernel state, rendered images.
STATE_JS = """() => {
  if (!window.jupyterapp) return null;
  const panel = window.jupyterapp.shell.currentWidget;
  if (!panel || !panel.content || !panel.sessionContext) return null;
  const cells = panel.content.widgets.filter(c => c.model.type === 'code');
  const errors = [];
  let pending = 0;
  for (const c of cells) {
    for (const o of c.model.outputs.toJSON()) {
      if (o.output_type === 'error') errors.push(`${o.ename}: ${o.evalue}`);
    }
    if (c.model.executionCount === null) pending += 1;
  }
  const imgs = [...panel.node.querySelectorAll('.jp-OutputArea-output img')];
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  return {errors, pending, status: kernel ? kernel.status : 'none',
          images: imgs.filter(i => i.complete && i.naturalWidth > 0).length};
}"""
# What a reader sees at this width: tables wider than their output cell (a sideways scroll bar)
# and images shrunk below their own width (their text shrunk with them), with the cell's width.
FIT_JS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const wide = [];
  for (const table of panel.node.querySelectorAll('.jp-OutputArea-output table')) {
    const cell = table.closest('.jp-OutputArea-output');
    if (table.getBoundingClientRect().width > cell.clientWidth + 1) {
      const width = Math.round(table.getBoundingClientRect().width);
      wide.push(`table ${width} px in ${cell.clientWidth} px`);
    }
  }
  for (const img of panel.node.querySelectorAll('.jp-OutputArea-output img')) {
    const cell = img.closest('.jp-OutputArea-output');
    const shown = img.getBoundingClientRect().width;
    if (img.naturalWidth > cell.clientWidth + 1 || shown > cell.clientWidth + 1) {
      wide.push(`image ${img.naturalWidth} px in ${cell.clientWidth} px`);
    }
  }
  return wide;
}"""
# Along the explorer's strip (the row of its upper half with the most path colours): the first
# and last coloured pixel and the last blue one, read from the picture the browser shows.
STRIP_JS = """(img, colours) => {
  const canvas = document.createElement('canvas');
  canvas.width = img.naturalWidth; canvas.height = img.naturalHeight;
  const ctx = canvas.getContext('2d');
  ctx.drawImage(img, 0, 0);
  const data = ctx.getImageData(0, 0, canvas.width, canvas.height / 2).data;
  const near = (i, c) =>
    Math.abs(data[i] - c[0]) + Math.abs(data[i + 1] - c[1]) + Math.abs(data[i + 2] - c[2]) < 12;
  let best = null;
  for (let y = 0; y < canvas.height / 2; y++) {
    const xs = [], blue = [];
    for (let x = 0; x < canvas.width; x++) {
      const i = 4 * (y * canvas.width + x);
      if (colours.some(c => near(i, c))) xs.push(x);
      if (near(i, colours[0])) blue.push(x);
    }
    if (!best || xs.length > best.count) {
      best = {count: xs.length, left: xs[0], right: xs[xs.length - 1] + 1,
              lastBlue: blue[blue.length - 1] + 1};
    }
  }
  return best;
}"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _prepare(root: Path, executed: Path) -> None:
    """The server's folder: copies of the executed notebooks (executed/), fresh copies of the
    LIVE ones with the CI parameters filled in (live/, writing under out/), and JupyterLab's
    settings: every cell in the DOM (no windowed rendering), so images can be counted."""
    import papermill

    (root / "executed").mkdir()
    for copy in (executed / "notebooks").glob("*.ipynb"):
        shutil.copy(copy, root / "executed")
    (root / "live").mkdir()
    for name in LIVE:
        papermill.execute_notebook(
            str(ROOT / "notebooks" / f"{name}.ipynb"),
            str(root / "live" / f"{name}.ipynb"),
            parameters={"ci": True, "out_dir": str(root / "out" / name)},
            prepare_only=True,
            kernel_name="python3",
            progress_bar=False,
        )
    settings = root / "settings" / "@jupyterlab" / "notebook-extension"
    settings.mkdir(parents=True)
    (settings / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory, executed_notebooks):
    root = tmp_path_factory.mktemp("lab")
    _prepare(root, executed_notebooks[0])
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        **run_notebooks.KERNEL_ENV,
        "MPLBACKEND": "Agg",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "JUPYTER_CONFIG_DIR": str(root / "config"),
        "JUPYTER_RUNTIME_DIR": str(root / "runtime"),
    }
    # the server holds its own copy of the log's file descriptor
    with open(root / "server.log", "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                "--allow-root",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={token}",
                f"--ServerApp.root_dir={root}",
                f"--LabApp.user_settings_dir={root / 'settings'}",
                f"--LabApp.workspaces_dir={root / 'workspaces'}",
                "--LabApp.expose_app_in_browser=True",
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=root,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5).read()
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"jupyter lab did not start: {(root / 'server.log').read_text()[-2000:]}"
                    )
                time.sleep(0.5)
        yield base, token, root
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(
            executable_path=CHROMIUM,
            headless=True,
            args=["--no-sandbox", "--disable-dev-shm-usage"],
        )
        try:
            yield chromium
        finally:
            chromium.close()


def _wait(page, predicate, timeout_s: float, what: str):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        state = page.evaluate(STATE_JS)
        if state is not None and predicate(state):
            return state
        page.wait_for_timeout(500)
    pytest.fail(f"timed out after {timeout_s:.0f} s waiting for {what}; last state {state}")


@pytest.mark.parametrize("name", run_notebooks.notebook_names())
def test_notebook_runs_in_jupyterlab(lab, browser, executed_notebooks, name):
    base, token, root = lab
    run = executed_notebooks[1][name]
    assert name in LIVE or run.ok, f"{name}: {run.status}: {run.detail}"
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(UI_S * 1000)
    try:
        folder = "live" if name in LIVE else "executed"
        page.goto(f"{base}/lab/tree/{folder}/{name}.ipynb?token={token}")
        _wait(page, lambda s: s["status"] == "idle", KERNEL_START_S, "the kernel to start")
        if name in LIVE:
            page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
        state = _wait(
            page,
            lambda s: s["errors"] or (s["pending"] == 0 and s["status"] == "idle"),
            RUN_ALL_S if name in LIVE else UI_S,
            "Run All to finish" if name in LIVE else "the run's outputs",
        )
        assert state["errors"] == [], f"{name}: error output {state['errors']}"
        expected = run_notebooks.expected_figures(name)
        state = _wait(page, lambda s: s["images"] >= expected, UI_S, f"{expected} images")
        assert state["images"] == expected
        assert page.evaluate(FIT_JS) == [], f"{name}: outputs wider than the notebook"
        if name == "02_the_crash":
            _move_the_explorer(page)
    finally:
        with contextlib.suppress(Exception):  # a failure above is the one to report
            page.evaluate(
                "() => window.jupyterapp && window.jupyterapp.shell.currentWidget"
                " && window.jupyterapp.shell.currentWidget.sessionContext.shutdown()"
            )
        page.close()


def _move_the_explorer(page) -> None:
    summary = page.locator(".widget-html-content", has_text="reachable batch sizes")
    summary.wait_for()
    assert "max_num_seqs = 8," in summary.inner_text() and "KeyError: 16" in summary.inner_text()
    # Priced on the committed CPU run: a crashing config has no step time, and says so.
    assert "not priced on cpu/latency.csv: a config that crashes" in summary.inner_text()
    picture = page.locator("img.widget-image")
    # vllm-0.5.5, S = 8, k = 4: batches n = 1..40 on the strip's axis, graphs up to n = 8, so
    # blue ends 8/40 of the way along (drawn by position in the list, it ended at 8/34).
    colours = [PIL.ImageColor.getrgb(PATH_COLORS[p]) for p in ("graph", "eager", "crash")]
    strip = picture.evaluate(STRIP_JS, colours)
    expected = strip["left"] + (strip["right"] - strip["left"]) * 8 / 40
    assert abs(strip["lastBlue"] - expected) <= 2, strip
    before = picture.get_attribute("src")
    handle = page.locator(".widget-slider", has_text="max_num_seqs S").locator(".noUi-handle")
    handle.focus()
    page.keyboard.press("ArrowRight")  # S: 8 -> 9, as a reader's slider move
    page.locator(".widget-html-content", has_text="max_num_seqs = 9,").wait_for()
    page.wait_for_function(
        "before => document.querySelector('img.widget-image').src !== before",
        arg=before,
        timeout=UI_S * 1000,
    )
    _refuse_and_recover(page)


def _refuse_and_recover(page) -> None:
    """A V1 engine and a token budget below max_num_seqs: the refusal shows, nothing breaks,
    and the next move answers (the explorer froze on an IndexError before)."""
    engine = page.locator(".widget-dropdown", has_text="engine").locator("select")
    engine.select_option("vllm-0.33.0")
    page.locator(".widget-html-content", has_text="vllm-0.33.0").wait_for()
    readout = page.locator(".widget-slider", has_text="max_num_batched_tokens T").locator(
        ".widget-readout"
    )
    readout.click()
    page.keyboard.press("Control+A")
    page.keyboard.type("4")
    page.keyboard.press("Enter")  # T = 4 < S = 9: vLLM V1 refuses to start
    page.locator(".widget-html-content", has_text="must be greater than or equal").wait_for()
    handle = page.locator(".widget-slider", has_text="max_num_seqs S").locator(".noUi-handle")
    handle.focus()
    for _ in range(6):
        page.keyboard.press("ArrowLeft")  # S: 9 -> 3, then T = 4 >= S: answered again
    page.locator(".widget-html-content", has_text="max_num_seqs = 3,").wait_for()
    assert "refuses" not in page.locator(".widget-html-content", has_text="reachable").inner_text()
    state = page.evaluate(STATE_JS)
    assert state["errors"] == [], state["errors"]
