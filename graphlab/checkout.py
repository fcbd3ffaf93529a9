"""The kit itself: its version, its commit, its reference data, and where a notebook writes (its
`out_dir` parameter, a relative one read from the repository root).

Jupyter runs a notebook in notebooks/, `papermill notebooks/X.ipynb out.ipynb` in whatever folder
the user is in: a path relative to the kernel's working directory (the old "../build/...") lands
outside the checkout in the second case. A relative out_dir therefore names a folder under the
repository root whatever the working directory; an absolute one (scripts/run_notebooks.py's) is
kept as given.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

# graphlab's only version: pyproject.toml reads it from here (setuptools' dynamic `attr`), rows
# record it as graphlab_version.
VERSION = "0.1.0"
# graphlab/checkout.py -> the folder holding the package: the repository root in a checkout.
PACKAGE_PARENT = Path(__file__).resolve().parents[1]
# Written by setup.py into a built package (wheel, sdist): the commit it was built from.
BUILD_COMMIT = Path(__file__).resolve().parent / "BUILD_COMMIT"
# The reference CSVs a built package carries (setup.py copies the checkout's data/ there).
SHIPPED_DATA = Path(__file__).resolve().parent / "data"
# What git_commit records when graphlab is not a checkout of its own repository (an installed copy).
NOT_A_CHECKOUT = "none"


def repository_root() -> Path:
    """The checkout's root (the folder holding graphlab/ and notebooks/); for an installed copy,
    which has no notebooks beside it, the working directory."""
    return PACKAGE_PARENT if (PACKAGE_PARENT / "notebooks").is_dir() else Path.cwd()


def out_folder(out_dir) -> Path:
    """A notebook's out_dir as a path: absolute as given, relative from the repository root."""
    path = Path(out_dir).expanduser()
    return path if path.is_absolute() else repository_root() / path


def data_folder() -> Path:
    """The committed reference CSVs: the checkout's data/, or the copy an installed package
    carries (graphlab/data)."""
    checkout = PACKAGE_PARENT / "data"
    return checkout if checkout.is_dir() or not SHIPPED_DATA.is_dir() else SHIPPED_DATA


def reference_file(path):
    """An input path as given; a relative data/... one that does not exist here (an installed
    kit run outside its checkout: `plan --latency data/cpu/latency.csv`) from data_folder()."""
    given = Path(path)
    if given.exists() or given.is_absolute() or given.parts[:1] != ("data",):
        return path
    shipped = data_folder().joinpath(*given.parts[1:])
    return shipped if shipped.exists() else path


def _git(repo: Path, *args: str, timeout: float = 10) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, timeout=timeout)


def git_commit(repo: Path = PACKAGE_PARENT) -> str:
    """HEAD of the kit's own checkout, '+dirty' when tracked content differs from HEAD;
    GRAPHLAB_GIT_COMMIT overrides (copies of the tree without .git: the lent GPU machine); an
    installed package, the commit recorded when it was built (BUILD_COMMIT).

    Only when `repo` is the top of its git worktree and tracks graphlab/__init__.py: graphlab
    installed inside another repository (a venv in a project's tree) records its BUILD_COMMIT or
    NOT_A_CHECKOUT, not that repository's HEAD. Content, not `git status`: a notebook run in
    place is listed by status until `git add`, though the strip filter makes its content equal
    HEAD's.
    """
    if os.environ.get("GRAPHLAB_GIT_COMMIT"):
        return os.environ["GRAPHLAB_GIT_COMMIT"]
    built = BUILD_COMMIT.read_text().strip() if BUILD_COMMIT.is_file() else None
    try:
        top = _git(repo, "rev-parse", "--show-toplevel")
        head = _git(repo, "rev-parse", "--short=12", "HEAD")
        if top.returncode != 0 or head.returncode != 0:
            return built or "unknown"
        ours = _git(repo, "ls-files", "--error-unmatch", "graphlab/__init__.py")
        if Path(top.stdout.strip()).resolve() != Path(repo).resolve() or ours.returncode != 0:
            return built or NOT_A_CHECKOUT
        diff = subprocess.run(
            ["git", "diff", "--quiet", "HEAD", "--"], cwd=repo, capture_output=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return built or "unknown"
    return head.stdout.strip() + ("+dirty" if diff.returncode != 0 else "")
