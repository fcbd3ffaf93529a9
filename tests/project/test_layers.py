"""The package's layers, read from its imports: nothing imports a layer above its own, the sizing
layer never imports torch, every layer says what it is, and no module grows past one concept."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

PACKAGE = ROOT / "graphlab"
# Each layer may import its own and those of a lower rank; views stand beside the engine.
RANKS = {
    "errors": 0,
    "progress": 0,
    "lazy": 0,
    "checkout": 0,
    "stats": 0,
    "sizing": 1,
    "engine": 2,
    "specdec": 3,
    "bench": 4,
    "against_vllm": 4,
    "cli": 5,
    "__main__": 6,
    "__init__": 6,
}
VIEWS_MAY_IMPORT = {"errors", "progress", "lazy", "stats", "sizing", "views"}
SUBPACKAGES = ("sizing", "engine", "specdec", "bench", "views", "against_vllm", "cli")
MAX_LINES = 400


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def layer(path: Path) -> str:
    """'sizing' for graphlab/sizing/planner/plan.py, 'errors' for graphlab/errors.py."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return parts[0]


def imported_layers(path: Path) -> set[tuple[str, int]]:
    """(layer, line) of every graphlab import in the module, at top level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "graphlab":  # from graphlab import bench: the subpackage
                names = [f"graphlab.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "graphlab":
                target = parts[1] if len(parts) > 1 else "__init__"
                found.add(
                    (target if target in RANKS or target == "views" else "__init__", node.lineno)
                )
    return found


def test_the_layers_import_only_downwards():
    wrong = []
    for path in modules():
        own = layer(path)
        for target, line in imported_layers(path):
            if own == "views":
                allowed = target in VIEWS_MAY_IMPORT
            elif target == "views":
                allowed = own in ("views", "cli", "__main__")
            else:
                allowed = RANKS[target] < RANKS[own] or target == own
            if not allowed:
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {target}")
    assert not wrong, wrong


def test_bench_and_against_vllm_stay_apart():
    crossing = [
        f"{p.relative_to(PACKAGE.parent)}:{line}"
        for p in modules()
        for target, line in imported_layers(p)
        if {layer(p), target} == {"bench", "against_vllm"}
    ]
    assert not crossing, crossing


def test_sizing_never_imports_torch():
    sizing = sorted((PACKAGE / "sizing").rglob("*.py"))  # the planner subpackage too
    for path in sizing:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                assert not any(a.name.split(".")[0] == "torch" for a in node.names), path
            elif isinstance(node, ast.ImportFrom):
                assert (node.module or "").split(".")[0] != "torch", path
    names = [".".join(p.relative_to(PACKAGE.parent).with_suffix("").parts) for p in sizing]
    code = (
        "import importlib, sys\n"
        f"for name in {names!r}: importlib.import_module(name)\n"
        "import graphlab\n"
        "graphlab.SizingConfig, graphlab.audit, graphlab.plan\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=PACKAGE.parent,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_every_layer_says_what_it_is_and_may_import(name):
    doc = ast.get_docstring(ast.parse((PACKAGE / name / "__init__.py").read_text()))
    assert doc and "may import" in doc.lower(), name


def test_no_module_past_one_concept():
    sizes = {str(p.relative_to(PACKAGE)): len(p.read_text().splitlines()) for p in modules()}
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def test_no_private_name_imported_across_modules():
    private = []
    for path in [*modules(), *(ROOT / "tests").rglob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("graphlab"):
                private += [
                    f"{path.name}:{node.lineno} {alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
    assert not private, private
