"""The GPU check works the first time: its modules import and its CPU dry run passes on a machine
shaped like the lent GPU machine (no tqdm, safetensors, vllm, papermill or transformers)."""

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pandas as pd
import pytest
import torch

from graphlab import bench

ROOT = Path(__file__).resolve().parents[1]
BLOCKED = ("tqdm", "safetensors", "vllm", "papermill", "transformers")
# Loaded first by site: every import of a blocked package (or its submodules) fails.
SITECUSTOMIZE = f"""
import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {BLOCKED!r}:
            raise ImportError(f"{{name}} is not installed here (gpu-check test)")

sys.meta_path.insert(0, _Blocked())
"""
TARGET_NAMES = ("replay speedup at batch 1", "graph step at batch 1 / copy-bandwidth floor",
                "slowest capture (ms)", "shared pool / largest graph's own pool")


@pytest.fixture(scope="module")
def stripped_env(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
    return os.environ | {"PYTHON": sys.executable, "PYTHONPATH": f"{site}{os.pathsep}{ROOT}",
                         "GRAPHLAB_GIT_COMMIT": "dryrun123", "OMP_NUM_THREADS": "1"}


def python(code: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_the_blocker_blocks(stripped_env):
    for name in BLOCKED:
        done = python(f"import {name}", stripped_env)
        assert done.returncode != 0 and "not installed here" in done.stderr, name


def test_every_module_the_check_uses_imports_without_optional_packages(stripped_env):
    code = ("import importlib.util, sys\n"
            "spec = importlib.util.spec_from_file_location('gpu_bench', 'scripts/gpu_bench.py')\n"
            "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
            "import graphlab.bench.sweeps, graphlab.engine.model, graphlab.engine.runner, graphlab.sizing.engines\n"
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('graphlab'))))")
    done = python(code, stripped_env)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert {f"graphlab.{m}" for m in (
        "sizing.audit", "sizing.engines", "bench.sweeps", "bench.export", "bench.provenance",
        "bench.spec_decode", "engine.graphs", "engine.memory", "engine.model", "engine.runner",
        "engine.v0_runner", "engine.v1_runner", "progress", "specdec.engine")} <= loaded


@pytest.fixture(scope="module")
def dry_run(stripped_env, tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    done = subprocess.run(["bash", "scripts/gpu_check.sh", "--device", "cpu", "--small"],
                          cwd=ROOT, env=stripped_env | {"OUT": str(out)}, capture_output=True,
                          text=True, timeout=300)
    return done, out


def test_dry_run_passes_and_packs_every_csv_into_one_archive(dry_run):
    done, out = dry_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The device tool brings back at most 8 files: everything else travels in the archive.
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.tar.gz", "summary.txt"]
    with tarfile.open(out / "gpu_check.tar.gz") as archive:
        names = set(archive.getnames())
        csvs = {sweep: pd.read_csv(archive.extractfile(f"gpu_check/tiny/{sweep}.csv"))
                for sweep in bench.SWEEPS}
        environment = archive.extractfile("gpu_check/environment.txt").read().decode()
    assert {f"gpu_check/{name}" for name in ("targets.csv", "steps.tsv", "summary.txt",
                                             "logs/gpu_tests.log")} <= names
    assert all(len(frame) > 0 for frame in csvs.values())
    latency = csvs["latency"]
    assert set(latency["git_commit"]) == {"dryrun123"}
    for engine in (bench.LATENCY_ENGINE, "vllm-0.33.0"):  # each engine's cliff is in the sweep
        rows = latency[(latency["engine"] == engine) & (latency["mode"] == "graph")]
        assert set(rows["path"]) == {"graph", "eager"}, engine
    v1 = latency[latency["engine"] == "vllm-0.33.0"]
    assert set(v1["batch_unit"]) == {"tokens"} and v1["batch_size"].max() > 512
    assert set(csvs["graph_memory"]["engine"]) == {bench.LATENCY_ENGINE, "vllm-0.33.0"}
    assert "cudnn" in environment and "sdpa" in environment and "chosen" in environment


def test_summary_ends_with_the_target_table_and_is_printed_last(dry_run):
    done, out = dry_run
    summary = (out / "summary.txt").read_text()
    assert "adaptive" in summary and "copy bandwidth" in summary
    assert "graph memory, predicted / measured" in summary
    cliff = [line for line in summary.splitlines() if line.startswith("== V1 cliff")]
    assert len(cliff) == 1 and "(vllm-0.33.0, tiny, k=3, cpu-emulated)" in cliff[0]
    assert "largest captured 512 tokens" in cliff[0]
    assert "512 tokens (graph)" in cliff[0] and "516 tokens (eager)" in cliff[0]
    table = summary.rstrip().split("\n== targets\n")[-1].splitlines()
    assert table[0].split()[:2] == ["target", "model"]
    assert [name for name in TARGET_NAMES for line in table[1:] if name in line] == list(
        TARGET_NAMES) and len(table) == 1 + len(TARGET_NAMES)
    assert done.stdout.rstrip().endswith(summary.rstrip())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_without_cuda_and_without_flags_the_check_refuses_in_one_line(stripped_env, tmp_path):
    done = subprocess.run(["bash", "scripts/gpu_check.sh"], cwd=ROOT, capture_output=True,
                          env=stripped_env | {"OUT": str(tmp_path / "out")}, text=True,
                          timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--device cpu --small" in done.stderr
    assert not (tmp_path / "out").exists()


def test_targets_are_the_guards_whatever_v1_rows_the_csvs_hold(dry_run):
    # V1 rows count tokens: its 512-token captures must not become "the slowest capture" or the
    # largest graph of the pool ratio.
    import importlib.util

    spec = importlib.util.spec_from_file_location("gpu_bench", ROOT / "scripts" / "gpu_bench.py")
    gpu_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gpu_bench)
    with tarfile.open(dry_run[1] / "gpu_check.tar.gz") as archive:
        latency, memory = (pd.read_csv(archive.extractfile(f"gpu_check/tiny/{name}.csv"))
                           for name in ("latency", "graph_memory"))
    slow = memory.assign(capture_ms=memory["capture_ms"].where(
        memory["engine"] == bench.LATENCY_ENGINE, 1e6))  # V1 captures made absurdly slow
    targets = gpu_bench.summarize_targets(latency, slow, "tiny", "tiny").set_index("target")
    guard = memory[(memory["engine"] == bench.LATENCY_ENGINE) & (memory["graph_pool"] == "shared")]
    assert targets.loc["slowest capture (ms)", "value"] == guard["capture_ms"].max()
    separate = memory[(memory["engine"] == bench.LATENCY_ENGINE)
                      & (memory["graph_pool"] == "separate")]
    largest = separate.loc[separate["capture_size"].idxmax(), "memory_bytes"]
    assert targets.loc["shared pool / largest graph's own pool", "value"] == pytest.approx(
        guard["memory_bytes"].sum() / largest)
