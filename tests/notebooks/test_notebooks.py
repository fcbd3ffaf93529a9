"""The notebooks: committed without outputs, parameterised for papermill, and each runs headless.

Execution uses scripts/run_notebooks.py's own function with the CI parameters, then checks that
every notebook wrote what it promises and that the files say what the story says.
"""

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import numpy as np
import pandas as pd
import pytest
import run_notebooks  # scripts/run_notebooks.py, loaded by conftest.py

from helpers import ROOT, verdict_problems
from graphlab.stats import MIN_SAMPLES, VERDICTS, compare


NAMES = run_notebooks.notebook_names()


def test_every_notebook_has_promised_outputs_listed():
    assert NAMES == sorted(run_notebooks.EXPECTED)


@pytest.mark.parametrize("name", NAMES)
def test_notebook_is_committed_clean_and_parameterised(name):
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    nbformat.validate(nb)
    assert nb.metadata["kernelspec"]["name"] == "python3"
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "strip the outputs"
    tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
    assert len(tagged) == 1
    assert "ci = False" in tagged[0].source and "out_dir = " in tagged[0].source


# A notebook that runs the model or records provenance (torch_threads): its setup cell pins
# torch's threads before anything is timed or recorded.
RUNS_A_MODEL = ("build_model(", "run_speculative(", "run_bench(", "_sweep(", "provenance(")


@pytest.mark.parametrize("name", NAMES)
def test_notebooks_that_run_a_model_pin_one_torch_thread_first(name):
    nb = nbformat.read(ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    runs = any(call in source for source in code for call in RUNS_A_MODEL)
    assert ("pin_threads()" in code[1]) == runs, name


@pytest.fixture(scope="module")
def executed(executed_notebooks):
    return executed_notebooks


@pytest.mark.notebooks
@pytest.mark.parametrize("name", NAMES)
def test_notebook_runs_and_writes_what_it_promises(executed, name):
    out, results = executed
    result = results[name]
    assert result.status == "ok", f"{name}: {result.status}: {result.detail}"
    assert (out / "notebooks" / f"{name}.ipynb").is_file()
    for promised in run_notebooks.promised(name).outputs:
        assert (out / name / promised).stat().st_size > 0, promised


# A cell that makes a figure: the notebooks show each one with display(fig) or the explorer.
FIGURE_CALLS = ("display(fig)", "explorer(")


@pytest.mark.notebooks
@pytest.mark.parametrize("name", NAMES)
def test_figures_render_inline(executed, name):
    """What a reader sees: every figure cell holds an image, none prints `<Figure size ...>`."""
    out, _ = executed
    nb = nbformat.read(out / "notebooks" / f"{name}.ipynb", as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    for cell in code:
        text = json.dumps(cell.outputs)
        assert "<Figure size" not in text, cell.source
        assert "np.int64(" not in text and "np.float64(" not in text, cell.source
        assert "Triton is installed" not in text, cell.source
        if any(call in cell.source for call in FIGURE_CALLS):
            assert run_notebooks.images(cell) >= 1, f"no inline image from:\n{cell.source}"
    assert sum(run_notebooks.images(c) for c in code) == run_notebooks.expected_figures(name)
    assert nb.cells[-1].cell_type == "markdown" and nb.cells[-1].source.startswith("## Try next")


@pytest.mark.notebooks
def test_the_explorer_shows_its_default_state(executed):
    out, _ = executed
    nb = nbformat.read(out / "notebooks" / "02_the_crash.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if "explorer(" in c.source]
    (bundle,) = [o.data for o in cell.outputs if "image/png" in o.get("data", {})]
    assert "application/vnd.jupyter.widget-view+json" in bundle  # live in JupyterLab
    assert "ExplorerState(engine='vllm-0.5.5', max_num_seqs=8" in bundle["text/plain"]
    # The summary is the widget's state, which the executed notebook keeps in its metadata.
    assert "not priced on cpu/latency.csv: a config that crashes" in json.dumps(nb.metadata)


@pytest.mark.notebooks
def test_the_crash_notebook_catches_keyerror_40(executed):
    out, _ = executed
    crash = json.loads((out / "02_the_crash" / "crash.json").read_text())
    assert crash["error"] == "KeyError: 40"
    # The smallest crashing batch is another one: 9 rows pad to 16, which 0.5.5 never captured.
    assert (crash["first_crash_n"], crash["first_crash_error"]) == (9, "KeyError: 16")
    assert "graph_runners[padded]" in (out / "02_the_crash" / "traceback.txt").read_text()


def _printed(nb, marker: str) -> str:
    """The stdout of the one code cell whose source contains `marker`."""
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and marker in c.source]
    return "".join(o.get("text", "") for o in cell.outputs if o.get("name") == "stdout")


@pytest.mark.notebooks
def test_the_v1_chapter_computes_the_cliff_and_issue_54933(executed):
    out, _ = executed
    nb = nbformat.read(out / "notebooks" / "04b_vllm_v1_today.ipynb", as_version=4)
    verify = _printed(nb, "verify_batches(v1_engine, v1_cfg)")
    # CI: 160 requests x 4 tokens; the FULL graphs stop at vLLM's 512-token ceiling.
    assert "FULL decode graphs: 49 token counts, 4..512" in verify
    assert (
        "32 of 160 verify batch sizes leave the graphs: 129..160 requests (516..640 tokens)"
        in verify
    )
    cliff = _printed(nb, "latency_rows(model, v1_engine")
    assert "512 tokens on the 512-token graph" in cliff and "516 tokens, no graph" in cliff
    # The counts under the lines: 125..128 requests on the 512-token graph; 129..131 and S off it.
    assert "vllm-0.33.0, graph mode full at 4 sizes, eager mode against it" in cliff
    assert "vllm-0.33.0, 4 sizes with no graph, where both modes run the eager step" in cliff
    from graphlab.engine.device import resolve_backend, resolve_device

    costs = resolve_backend("auto", resolve_device("auto"), "costs")
    mixed = _printed(nb, "piecewise_cost(")
    assert ("the PIECEWISE pieces run eagerly" in mixed) != costs.captures_graphs
    assert cliff.startswith("cpu-emulated") == ("cpu-emulated: a 'graph' step" in cliff)
    issue = _printed(nb, "max_cudagraph_capture_size=42)")
    explicit, default = issue.split("default sizing:")
    assert "WARNING 'Truncating max_cudagraph_capture_size to 40'" in explicit
    assert "42 tokens, has no graph and runs eagerly" in explicit
    assert "no warning" in default and "replays the 42-token FULL graph" in default


@pytest.mark.notebooks
def test_the_planner_headline_pads_less_than_the_default_at_fewer_graphs(executed):
    out, _ = executed
    nb = nbformat.read(out / "notebooks" / "06_capture_size_planner.ipynb", as_version=4)
    text = _printed(nb, "headline = fewest_graphs(")
    found = re.search(
        r"headline: (\d+) graphs pad ([\d.]+) tokens per step against the default's ([\d.]+) "
        r"with its (\d+) FULL graphs \((\d+) capture sizes\)",
        text,
    )
    assert found, text
    graphs, waste, default_waste, full, sizes = (float(v) for v in found.groups())
    assert graphs < full <= sizes and waste < default_waste
    # the memory budget binds: it is below what the unconstrained plan needs
    memory = _printed(nb, "small = SizingConfig(6, 3)")
    needed, budget = map(float, re.findall(r"([\d.]+) MiB", memory)[:2])
    assert budget < needed


@pytest.mark.notebooks
def test_adaptive_price_text_is_computed_from_its_frame(executed):
    out, _ = executed
    price = pd.read_csv(out / "04_adaptive_sizing" / "adaptive_price.csv")
    assert set(price.backend) <= {"cpu-compiled", "cpu-emulated", "cuda-graph"}
    assert json.loads((out / "00_setup_check" / "setup.json").read_text())["torch_threads"] == 1
    assert set(price.torch_threads) == {1}
    by = price.set_index(["num_speculative_tokens", "engine"])
    g, a = by.loc[(8, "vllm-0.6.0")], by.loc[(8, "adaptive")]
    nb = nbformat.read(out / "notebooks" / "04_adaptive_sizing.ipynb", as_version=4)
    text = _printed(nb, "price.set_index(")
    assert (
        f"k = 8: guard {g.num_graphs} graphs, {g.graph_fraction:.0%} of reachable batches on "
        f"a graph ({g.eager_fraction:.0%} eager); adaptive {a.num_graphs} graphs"
    ) in text
    assert f"capture {g.capture_ms:.1f} ms vs {a.capture_ms:.1f} ms" in text
    assert (a.graph_fraction, a.num_graphs, g.num_graphs) == (1.0, 12, 4)


@pytest.mark.notebooks
def test_the_guard_notebook_runs_the_expanded_steps_eagerly(executed):
    out, _ = executed
    steps = pd.read_csv(out / "03_the_guard_fix" / "guard_steps.csv")
    decode = steps[steps.kind == "decode"]
    assert set(decode.path) == {"graph", "eager"}
    assert (decode[decode.path == "eager"].batch_size > 8).all()


@pytest.mark.notebooks
def test_the_benchmark_notebook_exports_csvs_with_provenance(executed):
    out, _ = executed
    for name in ("latency", "graph_memory", "spec_decode", "crash_map"):
        frame = pd.read_csv(out / "05_latency_and_memory" / f"{name}.csv")
        assert {"backend", "device", "git_commit", "timestamp"} <= set(frame.columns)


def test_runner_reports_an_unknown_notebook():
    with pytest.raises(SystemExit, match="unknown notebook"):
        run_notebooks.run_notebooks(Path("unused"), only=["99_nope"])


def test_summary_table_lists_status_and_detail():
    table = run_notebooks.summary(
        [
            run_notebooks.Result("00_setup_check", 1.25, "ok"),
            run_notebooks.Result("02_the_crash", 3.0, "failed", "KeyError"),
        ]
    )
    lines = table.splitlines()
    assert lines[0].split() == ["notebook", "seconds", "status"]
    assert lines[1].split() == ["00_setup_check", "1.2", "ok"]
    assert lines[2].endswith("failed: KeyError")


def _nbstrip():
    spec = importlib.util.spec_from_file_location("nbstrip", ROOT / "scripts" / "nbstrip.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("name", NAMES)
def test_committed_notebook_is_what_the_filter_stores(name):
    """Otherwise `git status` would call the committed notebook modified as soon as the filter is
    on."""
    text = (ROOT / "notebooks" / f"{name}.ipynb").read_text()
    stripped = _nbstrip().strip(json.loads(text))
    assert json.dumps(stripped, indent=1, sort_keys=True, ensure_ascii=False) + "\n" == text
    assert stripped["metadata"]["language_info"]["pygments_lexer"] == "ipython3"  # JupyterLab's


def _git(cwd, *args):
    return subprocess.run(
        ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
    ).stdout


@pytest.mark.notebooks
def test_running_a_notebook_in_place_leaves_the_tree_clean(tmp_path):
    """A fresh clone with the filter `make env` configures; run a notebook where it lies, as
    JupyterLab would.

    `git diff` (what provenance's "+dirty" should read) compares the filtered content: empty. `git
    status` compares file sizes first and lists the notebook until `git add` refreshes its stat,
    which stages nothing: the stored blob is the same.
    """
    import papermill

    clone = tmp_path / "clone"
    _git(tmp_path, "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone))
    _git(clone, "config", "filter.nbstrip.clean", f"{sys.executable} scripts/nbstrip.py")
    notebook = clone / "notebooks" / "00_setup_check.ipynb"
    papermill.execute_notebook(
        str(notebook),
        str(notebook),
        parameters={"ci": True, "out_dir": str(tmp_path / "out")},
        kernel_name="python3",
        cwd=str(notebook.parent),
        progress_bar=False,
        extra_arguments=run_notebooks.KERNEL_ARGS,
    )
    executed = nbformat.read(notebook, as_version=4)
    assert any(c.get("outputs") for c in executed.cells) and "papermill" in executed.metadata
    assert _git(clone, "diff", "--name-only", "HEAD") == ""
    _git(clone, "add", "-A")
    assert _git(clone, "status", "--porcelain") == ""
    # The filter hides what running adds, not what an author writes.
    executed.cells[0].source += "\nAn edit."
    nbformat.write(executed, notebook)
    assert _git(clone, "diff", "--name-only", "HEAD").split() == ["notebooks/00_setup_check.ipynb"]


def test_the_verdict_check_reads_what_compare_prints():
    rng = np.random.default_rng(0)
    slow = compare(rng.normal(2, 0.1, 20), rng.normal(1, 0.1, 20))
    noise = compare(rng.normal(1, 0.5, 8), rng.normal(1, 0.5, 8))
    few = compare([3.0, 3.1], [1.0, 1.1])
    from graphlab.views.verdicts import sentence

    lines = [sentence(c, "eager", "graph") for c in (slow, noise, few)]
    assert verdict_problems("\n".join(lines)) == []
    flipped = lines[0].replace("is slower than", "is faster than")
    assert verdict_problems(flipped) == [flipped]
    # A bound the interval's far end exceeds: 1.041x (0.999-1.096) is no difference under 10%,
    # not under 5% (notebook 04b printed the latter).
    wide = "x shows no difference beyond noise from y: 1.041x (95% CI 0.999-1.096, 8 pairs)"
    assert verdict_problems(wide + " (any difference is under +-5%)") != []
    assert verdict_problems(wide + " (any difference is under +-10%)") == []
    # notebook 04b once printed a far end that rounds to the bound: 1.02 is within +-2%
    at = "x shows no difference beyond noise from y: 1.01x (95% CI 0.99-1.02, 8 pairs)"
    assert verdict_problems(at + " (any difference is under +-2%)") == []
    assert verdict_problems(at + " (any difference is under +-1%)") != []
    assert verdict_problems("the guard's steps are slower here.") != []


@pytest.mark.notebooks
@pytest.mark.parametrize("name", NAMES)
def test_printed_verdicts_follow_the_intervals_printed_with_them(executed, name):
    out, _ = executed
    nb = nbformat.read(out / "notebooks" / f"{name}.ipynb", as_version=4)
    text = "\n".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs
    )
    assert verdict_problems(text) == []


@pytest.mark.notebooks
def test_the_guard_price_comes_with_intervals_or_says_it_cannot_resolve(executed):
    out, _ = executed
    price = pd.read_csv(out / "03_the_guard_fix" / "guard_price.csv")
    assert (price.guard_ci_low <= price.guard_ms).all() and (
        price.guard_ms <= price.guard_ci_high
    ).all()
    samples = pd.read_csv(out / "03_the_guard_fix" / "guard_latency.csv")
    assert {"engine", "batch_size", "sample", "time_ms", "load_avg_1m"} <= set(samples.columns)
    assert set(samples.model) == {"tiny"}  # the preset's name, not "custom"
    nb = nbformat.read(out / "notebooks" / "03_the_guard_fix.ipynb", as_version=4)
    text = _printed(nb, "guard_report(")
    (pooled,) = [line for line in text.splitlines() if line.startswith("n = 9..16, pooled:")]
    assert ("cannot resolve" in text) == ("no difference beyond noise" in pooled)
    # It counts every pair it pooled, as guard_price.csv counts them per size.
    pooled_sizes = price[price.path.eq("eager") & price.batch_size.between(9, 16)]
    assert pooled.endswith(f", {pooled_sizes.samples.sum()} pairs)")
    # The control: the sizes where both engines replay the same padded graph, from the CSV.
    same = price[price.graph_size.notna() & price.graph_size.eq(price.covering_graph_size)]
    (control,) = [line for line in text.splitlines() if line.startswith("as a control")]
    counts = same.guard_over_verdict.value_counts()
    assert control == (
        f"as a control, at the {len(same)} sizes where both replay the same graph (95% "
        "intervals): " + ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    )
    assert 3 in set(same.batch_size)  # both pad 3 rows to the 4-row graph


def test_the_readme_table_gives_each_notebooks_figure_count():
    """The README's notebook table against EXPECTED, which every executed run is checked by."""
    from graphlab.views.plots import reference_figures

    readme = (ROOT / "README.md").read_text()
    rows = re.findall(
        r"^\| `(\d\db?_\w+)` \| .* \| (\d+)"
        r"(?: \+ the reference runs' \((\d+) for `data/cpu`\))? \|$",
        readme,
        re.M,
    )
    assert sorted(name for name, _, _ in rows) == NAMES
    for name, count, reference in rows:
        assert int(count) == run_notebooks.EXPECTED[name].figures, name
        if run_notebooks.EXPECTED[name].reference_figures:
            assert int(reference) == len(reference_figures(ROOT / "data" / "cpu")), name


def test_the_readme_quotes_the_recorded_notebook_times():
    """The README's `make notebooks` time is docs/notebook_times.json's, which
    scripts/run_notebooks.py wrote on the machine it names, for every notebook."""
    record = json.loads((ROOT / "docs" / "notebook_times.json").read_text())
    assert sorted(record["seconds"]) == NAMES and set(record["status"].values()) == {"ok"}
    assert record["ci"] is False  # what `make notebooks` runs
    total = record["total_seconds"]
    assert total == pytest.approx(sum(record["seconds"].values()), abs=0.5)
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"{int(total // 60)} min {round(total % 60)} s" in readme
    assert record["machine"] in readme
    slowest = max(record["seconds"], key=record["seconds"].get)
    assert f"{slowest} {record['seconds'][slowest]:.0f} s" in readme


def test_a_notebook_that_needs_vllm_promises_nothing_without_it(monkeypatch):
    # A CUDA machine's `make notebooks` installs no vllm: 07 then says so and must not fail.
    import importlib.util

    find_spec = importlib.util.find_spec
    assert (
        run_notebooks.promised("07_your_deployment") == run_notebooks.EXPECTED["07_your_deployment"]
    )
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "vllm" else find_spec(name, *a),
    )
    assert run_notebooks.promised("07_your_deployment") == run_notebooks.Expected(0)
    assert run_notebooks.expected_figures("07_your_deployment") == 0
    assert run_notebooks.promised("02_the_crash") == run_notebooks.EXPECTED["02_the_crash"]


# ---- an executed notebook is written whole or not at all (issue 50) ----------------------------

FIRST = NAMES[1]  # 01_cuda_graphs_first_principles


def _papermill_that(monkeypatch, then):
    """papermill.execute_notebook writing its output as papermill does (a first save, before the
    cells end), then `then()`: an interrupt, a failing cell, or nothing."""
    import papermill

    def execute(source, output, **kwargs):
        Path(output).write_text('{"cells": "3 of 9 run"}')
        then()

    monkeypatch.setattr(papermill, "execute_notebook", execute)


def _previous_run(out):
    executed = out / "notebooks" / f"{FIRST}.ipynb"
    executed.parent.mkdir(parents=True)
    executed.write_text('{"cells": "all 9 run"}')
    return executed


def test_an_interrupted_run_leaves_the_previous_notebook_and_says_so_in_one_line(
    tmp_path, monkeypatch, capsys
):
    executed = _previous_run(tmp_path)

    def interrupt():
        raise KeyboardInterrupt

    _papermill_that(monkeypatch, interrupt)
    assert run_notebooks.main(["--out", str(tmp_path), "--only", FIRST]) == 130
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and err.startswith("interrupted: ") and "Traceback" not in err
    assert executed.read_text() == '{"cells": "all 9 run"}'
    assert sorted(p.name for p in executed.parent.iterdir()) == [executed.name]
    assert not (tmp_path / ".graphlab.lock").exists()


def test_a_failed_run_is_kept_beside_the_last_complete_one(tmp_path, monkeypatch):
    executed = _previous_run(tmp_path)

    def fail():
        raise RuntimeError("KeyError: 40")

    _papermill_that(monkeypatch, fail)
    result = run_notebooks.run_notebooks(tmp_path, only=[FIRST])[0]
    assert (result.status, result.detail) == ("failed", "KeyError: 40")
    assert executed.read_text() == '{"cells": "all 9 run"}'
    failed = executed.with_name(f"{FIRST}.failed.ipynb")
    assert failed.read_text() == '{"cells": "3 of 9 run"}'
    _papermill_that(monkeypatch, lambda: None)  # the next run ends: its notebook takes the name
    run_notebooks.run_notebooks(tmp_path, only=[FIRST])
    assert executed.read_text() == '{"cells": "3 of 9 run"}' and not failed.exists()


def test_a_second_runner_on_one_out_is_refused(tmp_path, monkeypatch, capsys):
    from graphlab.bench.export import locked_folder

    _papermill_that(monkeypatch, lambda: pytest.fail("a second runner executed a notebook"))
    with locked_folder(tmp_path):
        assert run_notebooks.main(["--out", str(tmp_path), "--only", FIRST]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {str(tmp_path)!r} is in use by another run" in err
