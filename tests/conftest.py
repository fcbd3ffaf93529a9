"""Fixtures shared by several test modules, and the order files start in.

`make test` runs the files on two workers, one file per worker at a time (pytest-xdist's
`--dist loadfile`: a module's fixtures, such as the executed notebooks or the GPU check's dry run,
are built once) in the order collected (`--no-loadscope-reorder`). The slowest files are moved
to the front so they do not start last, when the other worker has nothing left to run.
"""

import pytest
import torch

# The slowest files first, slowest first (`pytest --durations`, 2-core VM; see the Makefile).
SLOWEST_FILES = ("test_notebooks.py", "test_browser.py", "test_gpu_check.py")


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
        return SLOWEST_FILES.index(name) if name in SLOWEST_FILES else len(SLOWEST_FILES)

    items.sort(key=rank)  # stable: each file's own order is kept
