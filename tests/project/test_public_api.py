"""The package's public face: every exported name resolves, and the sizing half never loads
torch."""

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import graphlab


def test_every_listed_name_resolves():
    # dir() is what a reader's tab completion offers: each name must load (a renamed or moved
    # function breaks here, not in a user's notebook).
    assert set(dir(graphlab)) == set(graphlab.__all__)
    for name in graphlab.__all__:
        assert getattr(graphlab, name) is not None, name
    assert importlib.import_module("graphlab.views.plots") is graphlab.views.plots  # submodules too


def test_the_front_door_is_narrow_and_typed():
    # A dozen reader-facing names (the README's examples); everything else from its module.
    assert len(graphlab.__all__) <= 15
    # The TYPE_CHECKING imports (what an IDE sees) name exactly the lazy exports, from the same
    # modules, so a moved name cannot leave a stale type behind.
    tree = ast.parse(Path(graphlab.__file__).read_text())
    typed = {
        alias.name: node.module.removeprefix("graphlab.")
        for guard in tree.body
        if isinstance(guard, ast.If) and ast.unparse(guard.test) == "TYPE_CHECKING"
        for node in guard.body
        for alias in node.names
    }
    assert typed == graphlab._EXPORTS
    assert (Path(graphlab.__file__).parent / "py.typed").is_file()


def test_unknown_attribute_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_thing"):
        graphlab.no_such_thing  # noqa: B018


def _imported_modules(code: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", f"import sys\n{code}\nprint(' '.join(sys.modules))"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return set(done.stdout.split())


def test_sizing_half_of_the_public_face_does_not_import_torch():
    modules = _imported_modules(
        "import graphlab\n"
        "graphlab.audit('vllm-0.5.5', graphlab.SizingConfig(8, 4))\n"
        "graphlab.plan('vllm-0.33.0', graphlab.SizingConfig(8, 4))\n"
        "graphlab.crash_map('vllm-0.5.5', range(1, 9), range(0, 3))"
    )
    assert "torch" not in modules


@pytest.mark.parametrize(
    "argv",
    [
        ["audit", "--engine", "vllm-0.5.5", "--max-num-seqs", "8", "--num-speculative-tokens", "4"],
        ["plan", "--max-num-seqs", "8", "--num-speculative-tokens", "4", "--json"],
    ],
)
def test_sizing_commands_do_not_import_torch(argv):
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "graphlab", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-500:]
    imported = {
        line.split("|")[-1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "graphlab.sizing.engines" in imported and "torch" not in imported


def test_crash_map_command_does_not_import_torch(tmp_path):
    code = (
        "from graphlab.cli import main\n"
        f"assert main(['crash-map', '--engine', 'vllm-0.5.5', '--max-num-seqs-range', '1:8', "
        f"'--out', r'{tmp_path / 'map.csv'}']) == 0"
    )
    assert "torch" not in _imported_modules(code)
