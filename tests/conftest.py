"""Fixtures shared by several test modules, and the order files start in.

`make test` runs the files on two workers, one file per worker at a time (pytest-xdist's
`--dist loadfile`: a module's fixtures, such as the GPU check's dry run, are built once) in the
order collected (`--no-loadscope-reorder`). The slowest files are moved to the front so they do
not start last, when the other worker has nothing left to run; the browser test goes last, as it
opens the notebooks the first file executed (`executed_notebooks`, one run per session).
"""

import fcntl
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]
# The slowest files first, slowest first (`pytest --durations`, 2-core VM; see the Makefile).
SLOWEST_FILES = ("test_notebooks.py", "test_gpu_check.py")
LAST_FILES = ("test_browser.py",)

# scripts/run_notebooks.py as the module `run_notebooks` (test files `import run_notebooks`).
_spec = importlib.util.spec_from_file_location(
    "run_notebooks", ROOT / "scripts" / "run_notebooks.py"
)
run_notebooks = importlib.util.module_from_spec(_spec)
sys.modules["run_notebooks"] = run_notebooks  # dataclasses look their module up there
_spec.loader.exec_module(run_notebooks)


@pytest.fixture(autouse=True)
def _sizing_caches_empty_under_mutmut():
    # mutmut collects which tests reach a function, then forks each mutant's run from a process
    # that has run the tests: a size list another test cached would answer for the rule that
    # computes it, and hide both the test that reaches it and the mutant. Not in normal runs.
    if "MUTANT_UNDER_TEST" in os.environ:
        from graphlab.sizing import batches, capture_settings, engines

        for policy in engines.ENGINES.values():
            policy._cache.clear()
        batches._batch_expansion_sizes.cache_clear()
        capture_settings.token_grid.cache_clear()


@pytest.fixture(scope="session")
def executed_notebooks(tmp_path_factory):
    """(out, {name: Result}): every notebook run once with the CI parameters, as `make notebooks
    --ci` would. The run is shared by the session's xdist workers: the first to ask runs it under
    a lock beside their common temporary folder, the others read its results."""
    shared = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = shared.parent  # one folder above every worker's own
    out = shared / "executed_notebooks"
    done = out / "results.json"
    with open(shared / "executed_notebooks.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.is_file():
            results = run_notebooks.run_notebooks(out, ci=True)
            done.write_text(json.dumps([vars(r) for r in results]))
        results = [run_notebooks.Result(**r) for r in json.loads(done.read_text())]
    return out, {r.notebook: r for r in results}


@pytest.fixture(scope="module")
def one_thread():
    # Tiny steps gain nothing from threads, and OpenMP threads stall on a busy machine.
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


def pytest_collection_modifyitems(items):
    def rank(item):
        name = item.path.name
        if name in LAST_FILES:
            return len(SLOWEST_FILES) + 1 + LAST_FILES.index(name)
        return SLOWEST_FILES.index(name) if name in SLOWEST_FILES else len(SLOWEST_FILES)

    items.sort(key=rank)  # stable: each file's own order is kept
