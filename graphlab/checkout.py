"""The kit itself: its version, and where a notebook writes (its `out_dir` parameter, a relative
one read from the repository root).

Jupyter runs a notebook in notebooks/, `papermill notebooks/X.ipynb out.ipynb` in whatever folder
the user is in: a path relative to the kernel's working directory (the old "../build/...") lands
outside the checkout in the second case. A relative out_dir therefore names a folder under the
repository root whatever the working directory; an absolute one (scripts/run_notebooks.py's) is
kept as given.
"""

from __future__ import annotations

from pathlib import Path

# graphlab's version (pyproject.toml's), which rows record as graphlab_version.
VERSION = "0.1.0"
# graphlab/checkout.py -> the folder holding the package: the repository root in a checkout.
PACKAGE_PARENT = Path(__file__).resolve().parents[1]


def repository_root() -> Path:
    """The checkout's root (the folder holding graphlab/ and notebooks/); for an installed copy,
    which has no notebooks beside it, the working directory."""
    return PACKAGE_PARENT if (PACKAGE_PARENT / "notebooks").is_dir() else Path.cwd()


def out_folder(out_dir) -> Path:
    """A notebook's out_dir as a path: absolute as given, relative from the repository root."""
    path = Path(out_dir).expanduser()
    return path if path.is_absolute() else repository_root() / path


def data_folder() -> Path:
    """The committed reference CSVs (data/), found from the repository root like out_folder."""
    return repository_root() / "data"
