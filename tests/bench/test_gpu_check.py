"""The GPU check works the first time: its modules import and its CPU dry run passes on a machine
shaped like the lent GPU machine (no vllm or papermill; it has tqdm, safetensors and transformers),
with a
PYTHONPATH that does not name the checkout (the script keeps `.`); an interrupted sweep keeps the
CSVs of what finished; the environment probe sees the model's own attention call."""

import os
import re
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pandas as pd
import pytest
import torch
from helpers import ROOT

from graphlab.bench import suites, sweeps
from graphlab.bench import targets as gpu_targets
from graphlab.bench.export import partial_path
from graphlab.views.report import clock_lines, gap_line, replay_lines, v1_cliff_lines

# What the GPU machine lacks. Its torch probes tqdm and transformers with find_spec when dynamo
# loads (trace_rules.py): blocking those would switch torch.compile off, not emulate that machine.
BLOCKED = ("vllm", "papermill")
# Loaded first by site: every import of a blocked package (or its submodules) fails as a missing
# module does.
SITECUSTOMIZE = """
import sys

class _Blocked:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {blocked!r}:
            raise ModuleNotFoundError(f"{{name}} is not installed here (gpu-check test)")

sys.meta_path.insert(0, _Blocked())
"""
TARGET_NAMES = (
    "replay speedup at batch 1",
    "graph step at batch 1 / copy-bandwidth floor",
    "slowest capture (ms)",
    "shared pool / largest graph's own pool",
)


def blocking_site(folder: Path, blocked) -> Path:
    (folder / "sitecustomize.py").write_text(SITECUSTOMIZE.format(blocked=tuple(blocked)))
    return folder


@pytest.fixture(scope="module")
def stripped_env(tmp_path_factory):
    site = blocking_site(tmp_path_factory.mktemp("site"), BLOCKED)
    # The checkout is not on PYTHONPATH: the check must put `.` there itself.
    return os.environ | {
        "PYTHON": sys.executable,
        "PYTHONPATH": str(site),
        "GRAPHLAB_GIT_COMMIT": "dryrun123",
        "OMP_NUM_THREADS": "1",
    }


def python(code: str, env: dict) -> subprocess.CompletedProcess:  # cwd ROOT: imports graphlab
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_blocker_blocks(stripped_env):
    for name in BLOCKED:
        done = python(f"import {name}", stripped_env)
        assert done.returncode != 0 and "not installed here" in done.stderr, name


def test_every_module_the_check_uses_imports_without_optional_packages(stripped_env):
    code = (
        "import importlib.util, sys\n"
        "spec = importlib.util.spec_from_file_location('gpu_bench', 'scripts/gpu_bench.py')\n"
        "spec.loader.exec_module(importlib.util.module_from_spec(spec))\n"
        "import graphlab.bench.sweeps, graphlab.engine.model, graphlab.engine.runner, "
        "graphlab.sizing.engines\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('graphlab'))))"
    )
    done = python(code, stripped_env)
    assert done.returncode == 0, done.stderr
    loaded = set(done.stdout.split())
    assert {
        f"graphlab.{m}"
        for m in (
            "sizing.audit",
            "sizing.engines",
            "bench.sweeps",
            "bench.export",
            "bench.provenance",
            "bench.spec_decode",
            "bench.targets",
            "engine.graphs",
            "engine.memory",
            "engine.model",
            "engine.runner",
            "engine.v0_runner",
            "engine.v1_runner",
            "progress",
            "specdec.engine",
            "views.report",
        )
    } <= loaded


@pytest.fixture(scope="module")
def dry_run(stripped_env, tmp_path_factory):
    out = tmp_path_factory.mktemp("gpu_check")
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh", "--device", "cpu", "--small"],
        cwd=ROOT,
        # Limits x3: on a loaded 2-core machine importing torch alone has taken over 30 s.
        env=stripped_env | {"OUT": str(out), "LIMIT_SCALE": "3"},
        capture_output=True,
        text=True,
        timeout=1500,
    )
    return done, out


def test_dry_run_passes_and_packs_every_csv_into_one_archive(dry_run):
    done, out = dry_run
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # The device tool brings back at most 8 files: everything else travels in the archive.
    assert sorted(p.name for p in out.iterdir()) == ["gpu_check.tar.gz", "summary.txt"]
    with tarfile.open(out / "gpu_check.tar.gz") as archive:
        names = set(archive.getnames())
        csvs = {
            sweep: pd.read_csv(archive.extractfile(f"gpu_check/tiny/{sweep}.csv"))
            for sweep in sweeps.SWEEPS
        }
        environment = archive.extractfile("gpu_check/environment.txt").read().decode()
    assert {
        f"gpu_check/{name}"
        for name in ("targets.csv", "steps.tsv", "summary.txt", "logs/gpu_tests.log")
    } <= names
    assert all(len(frame) > 0 for frame in csvs.values())
    latency = csvs["latency"]
    assert set(latency["git_commit"]) == {"dryrun123"}
    # torch.compile imports beside the blocked packages: the costs ran compiled, not emulated.
    assert set(latency["backend"]) == {"cpu-compiled"}
    for engine in (sweeps.LATENCY_ENGINE, "vllm-0.33.0"):  # each engine's cliff is in the sweep
        rows = latency[(latency["engine"] == engine) & (latency["mode"] == "graph")]
        replayed = "full" if engine == "vllm-0.33.0" else "graph"  # V1 decode: FULL graphs
        assert set(rows["path"]) == {replayed, "eager"}, engine
    v1 = latency[latency["engine"] == "vllm-0.33.0"]
    assert set(v1["batch_unit"]) == {"tokens"} and v1["batch_size"].max() > 512
    assert set(csvs["graph_memory"]["engine"]) == {sweeps.LATENCY_ENGINE, "vllm-0.33.0"}
    assert "cudnn" in environment and "sdpa" in environment and "chosen" in environment
    # The probe ran the model's own step: its additive float mask, not a boolean one.
    assert "torch.float32 additive mask" in environment and "torch.bool" not in environment
    for sweep in ("latency", "graph_memory", "spec_decode", "spec_decode_steps"):
        assert set(csvs[sweep]["sdpa_backend"]) == {"cpu_flash_attention"}, sweep
    # Every graph-path row was held against the eager step; no other row was.
    graph_path = (latency["mode"] == "graph") & (latency["path"] != "eager")
    assert latency.loc[graph_path, "max_abs_logit_diff"].notna().all()
    assert latency.loc[~graph_path, "max_abs_logit_diff"].isna().all()
    checked = latency[graph_path]
    assert (checked["max_abs_logit_diff"] <= checked["logit_tolerance"]).all()
    assert set(checked["replay_matches_eager"]) == {True}
    # One whole-loop figure per capture loop; emulated, it is the predicted pool of all sizes.
    memory = csvs["graph_memory"]
    for _, loop in memory.groupby(["engine", "graph_pool"]):
        assert loop["capture_loop_bytes"].nunique() == 1
        assert loop["capture_loop_bytes"].iloc[0] == loop["cumulative_predicted_bytes"].iloc[-1]


def test_short_steps_run_first_and_every_limit_fits_the_budget(dry_run):
    with tarfile.open(dry_run[1] / "gpu_check.tar.gz") as archive:
        steps = pd.read_csv(archive.extractfile("gpu_check/steps.tsv"), sep="\t")
    assert steps["step"].tolist() == [
        "environment",
        "gpu_tests",
        "crash_map",  # launched first, beside environment and gpu_tests; recorded when waited for
        "memory_tiny",
        "latency_tiny",
        "spec_decode",
        "gpu_compiled",
        "report",
    ]
    assert set(steps["status"]) == {"ok"}
    # The plan in the script's header: what the steps before spec_decode may take, within
    # 480 s less the 35 s kept for the report and a kill (the GPU run adds memory_1b, latency_1b),
    # leaving spec_decode 60 s at least; crash_map runs beside environment and gpu_tests.
    script = (ROOT / "scripts" / "gpu_check.sh").read_text()
    limits = {
        name: int(limit)
        for name, limit in re.findall(r'\b(?:step|launch) "?([\w$]+)"? (\d+) ', script)
    }
    assert list(limits) == [
        "crash_map",
        "environment",
        "gpu_tests",
        "memory_$SMALL",
        "memory_$LARGE",
        "latency_$SMALL",
        "latency_$LARGE",
        "spec_decode",
        "gpu_compiled",
    ]
    beside = max(limits["crash_map"], limits["environment"] + limits["gpu_tests"])
    serial = sorted(set(limits) - {"crash_map", "environment", "gpu_tests"})
    before = beside + sum(limits[name] for name in serial) - limits["spec_decode"]
    before -= limits["gpu_compiled"]
    assert before + 60 <= 480 - 35 and f"limits before spec_decode {before} s" in script


def test_summary_ends_with_the_target_table_and_is_printed_last(dry_run):
    done, out = dry_run
    summary = (out / "summary.txt").read_text()
    assert "adaptive" in summary and "copy bandwidth" in summary
    assert "graph memory, predicted / measured" in summary
    cliff = [line for line in summary.splitlines() if line.startswith("== V1 cliff")]
    # The costs' backend: the compiled step, which the blocked packages must not switch off.
    assert len(cliff) == 1 and "(vllm-0.33.0, tiny, k=3, cpu-compiled)" in cliff[0]
    assert "largest captured 512 tokens" in cliff[0]
    assert "512 tokens (full)" in cliff[0] and "516 tokens (eager)" in cliff[0]
    table = summary.rstrip().split("\n== targets\n")[-1].splitlines()
    assert table[0].split()[:2] == ["target", "model"]
    assert [name for name in TARGET_NAMES for line in table[1:] if name in line] == list(
        TARGET_NAMES
    ) and len(table) == 1 + len(TARGET_NAMES)
    assert done.stdout.rstrip().endswith(summary.rstrip())
    assert "== replay vs eager (tiny, vllm-0.6.0): 24 graph-path sizes" in summary
    assert "whole capture loop" in summary and "BEYOND" not in summary
    assert "== rows: every one expected" in summary and "MISSING" not in summary
    assert "== GPU clocks: not sampled (no nvidia-smi here)" in summary


def test_clocks_read_each_steps_samples_and_say_na():
    clocks = pd.DataFrame(
        {
            "unix_s": [100.0, 100.5, 101.0, 105.0, 105.5],
            "sm_mhz": [1980, 1755, 1980, 1200, "[N/A]"],
            "mem_mhz": [3201] * 5,
            "temperature_c": [40] * 5,
            "power_w": ["[N/A]"] * 5,
        }
    )
    steps = pd.DataFrame(
        {"step": ["latency_100m", "spec_decode"], "start_unix": [100, 105], "end_unix": [101, 106]}
    )
    per_step = gpu_targets.step_clocks(clocks, steps)
    # "[N/A]" is no sample of its clock: spec_decode's SM statistics come from one reading.
    assert per_step.set_index("step")[["sm_median", "sm_min", "sm_max", "samples"]].to_dict(
        "index"
    ) == {
        "latency_100m": {"sm_median": 1980, "sm_min": 1755, "sm_max": 1980, "samples": 3},
        "spec_decode": {"sm_median": 1200, "sm_min": 1200, "sm_max": 1200, "samples": 2},
    }
    assert clock_lines(per_step)[1:] == [
        "latency_100m: SM 1980 (1755-1980), memory 3201 (3201-3201), 3 samples",
        "spec_decode: SM 1200 (1200-1200), memory 3201 (3201-3201), 2 samples",
    ]
    assert clock_lines(gpu_targets.step_clocks(None, steps)) == [
        "== GPU clocks: not sampled (no nvidia-smi here)"
    ]


def test_a_check_killed_from_outside_leaves_its_summary_so_far(tmp_path):
    # The device's own limit kills the whole check (no trap runs): summary.txt and the archive
    # already hold every step that finished. A stand-in Python makes the steps instant except the
    # first sweep, which hangs until the kill.
    fake = tmp_path / "python"
    fake.write_text(
        "#!/usr/bin/env bash\n"
        'case "$*" in\n'
        f'  -c*) exec {sys.executable} "$@" ;;\n'
        "  *gpu_bench.py*sweep*) sleep 600 ;;\n"
        "  *) echo ran ;;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    out = tmp_path / "out"
    check = subprocess.Popen(
        ["bash", "scripts/gpu_check.sh", "--device", "cpu", "--small"],
        cwd=ROOT,
        env=os.environ | {"PYTHON": str(fake), "OUT": str(out)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        summary = out / "summary.txt"
        for _ in range(300):  # gpu_tests' line comes once environment and gpu_tests finished
            if summary.exists() and "gpu_tests" in summary.read_text():
                break
            time.sleep(0.1)
        os.killpg(check.pid, signal.SIGKILL)
    finally:
        check.wait(timeout=30)
    text = summary.read_text()
    assert "environment  ok" in text and "gpu_tests    ok" in text
    assert "== report: not reached" in text
    with tarfile.open(out / "gpu_check.tar.gz") as archive:
        assert "gpu_check/summary.txt" in archive.getnames()


def test_a_rerun_starts_without_the_empty_modules_a_stopped_compile_left(tmp_path):
    # torch 2.11 left empty main.so files in inductor's cache when a step's limit stopped it
    # mid-compile, and every later run failed to import them ("file too short").
    fake = tmp_path / "python"
    fake.write_text(
        f'#!/usr/bin/env bash\ncase "$*" in\n  -c*) exec {sys.executable} "$@" ;;\n'
        "  *) echo ran ;;\nesac\n"
    )
    fake.chmod(0o755)
    cache = tmp_path / "inductor"
    (cache / "ab").mkdir(parents=True)
    (cache / "ab" / "main.so").touch()
    (cache / "ab" / "whole.so").write_bytes(b"\x7fELF")
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh", "--device", "cpu", "--small"],
        cwd=ROOT,
        env=os.environ
        | {
            "PYTHON": str(fake),
            "OUT": str(tmp_path / "out"),
            "TORCHINDUCTOR_CACHE_DIR": str(cache),
        },
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "environment" in done.stdout, done.stderr[-2000:]
    assert sorted(p.name for p in (cache / "ab").iterdir()) == ["whole.so"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_without_cuda_and_without_flags_the_check_refuses_in_one_line(stripped_env, tmp_path):
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh"],
        cwd=ROOT,
        capture_output=True,
        env=stripped_env | {"OUT": str(tmp_path / "out")},
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "--device cpu --small" in done.stderr
    assert not (tmp_path / "out").exists()


def test_a_torch_that_does_not_import_is_reported_as_such(tmp_path):
    site = blocking_site(tmp_path, ("torch",))
    env = os.environ | {"PYTHON": sys.executable, "PYTHONPATH": str(site)}
    for flags in ([], ["--device", "cpu", "--small"]):
        done = subprocess.run(
            ["bash", "scripts/gpu_check.sh", *flags],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert (
            "cannot import torch" in done.stderr
            and "torch is not installed here" in (done.stderr)
            and "no CUDA" not in done.stderr
        )


def test_a_replay_that_misses_eager_gives_no_speedup(dry_run):
    with tarfile.open(dry_run[1] / "gpu_check.tar.gz") as archive:
        latency, memory = (
            pd.read_csv(archive.extractfile(f"gpu_check/tiny/{name}.csv"))
            for name in ("latency", "graph_memory")
        )
    batch_1 = (
        (latency["batch_size"] == 1)
        & (latency["engine"] == sweeps.LATENCY_ENGINE)
        & (latency["mode"] == "graph")
    )
    wrong = latency.copy()
    wrong.loc[batch_1, "max_abs_logit_diff"] = 10 * wrong.loc[batch_1, "logit_tolerance"]
    wrong.loc[batch_1, "replay_matches_eager"] = False
    targets = gpu_targets.summarize_targets(wrong, memory, "tiny", "tiny").set_index("target")
    for name in (
        "replay speedup at batch 1 (eager / graph)",
        "graph step at batch 1 / copy-bandwidth floor",
    ):
        assert pd.isna(targets.loc[name, "value"]) and not targets.loc[name, "met"]
        assert targets.loc[name, "backend"] == gpu_targets.REPLAY_MISMATCH
    check = gpu_targets.replay_check(wrong).set_index(["model", "engine"])
    assert check.loc[("tiny", sweeps.LATENCY_ENGINE), "beyond"] == [1]
    assert check.loc[("tiny", sweeps.LATENCY_ENGINE), "worst"] == pytest.approx(10)
    assert not check.loc[("tiny", "vllm-0.33.0"), "beyond"]
    lines = replay_lines(gpu_targets.replay_check(wrong))
    assert any("BEYOND TOLERANCE at batch sizes [1]" in line for line in lines)


def test_an_interrupted_sweep_keeps_the_finished_csvs(tmp_path, monkeypatch):
    # A timeout's SIGINT arrives as KeyboardInterrupt; here it strikes in the guard's latency
    # sweep at its third request count, after graph memory and two request counts are done.
    from graphlab.bench import sweeps

    real = sweeps.latency_points

    def interrupted(*args, **kwargs):
        points = real(*args, **kwargs)
        yield next(points)
        yield next(points)
        raise KeyboardInterrupt

    monkeypatch.setattr(sweeps, "latency_points", interrupted)
    suite = suites.replace_suite(
        "quick", latency_batch_sizes=(1, 2, 25), repeats=1, warmup=0, memory_max_num_seqs=4
    )
    with pytest.raises(KeyboardInterrupt):
        # cpu-emulated: what an interrupt leaves does not depend on the backend; no compile.
        sweeps.run_bench(
            suite,
            "cpu",
            tmp_path,
            sweeps=("graph_memory", "latency"),
            progress=False,
            backend="cpu-emulated",
        )
    memory = pd.read_csv(tmp_path / "graph_memory.csv")
    assert set(memory["engine"]) == {sweeps.LATENCY_ENGINE, "vllm-0.33.0"}
    assert not (tmp_path / "latency.csv").exists()  # the finished counts' rows, marked partial
    latency = pd.read_csv(partial_path(tmp_path, "latency"))
    assert set(latency["engine"]) == {sweeps.LATENCY_ENGINE}
    assert sorted(set(latency["batch_size"])) == [1, 2] and len(latency) == 4
    samples = pd.read_csv(partial_path(tmp_path, "latency_samples"))
    assert sorted(set(samples["num_reqs"])) == [1, 2]
    assert not list(tmp_path.glob(".*.tmp"))  # no half-written file


@pytest.mark.parametrize("preset", ["tiny", "100m"])
def test_the_probe_sees_the_models_own_attention_call(preset):
    from graphlab.engine.model import build_model
    from graphlab.engine.sdpa import probe_sdpa, sdpa_backend_name

    model = build_model(preset, dtype="bfloat16")
    model.allocate_kv_cache(4, 64)
    for rows, q in ((3, 1), (2, 4)):  # V0 decode rows, V1 requests of 1 + k = 4 tokens
        call = probe_sdpa(model, rows, q)
        positions = torch.arange(q).repeat(rows, 1)
        assert call.attn_mask.dtype == model.dtype == call.query.dtype
        assert torch.equal(call.attn_mask, model.attention_mask(positions))
        group = model.config.num_attention_heads // model.config.num_key_value_heads
        assert call.query.shape == (
            rows,
            model.config.num_key_value_heads,
            group * q,
            model.config.head_dim,
        )
        assert (
            call.key.shape[2] == 64
            and call.backend
            == sdpa_backend_name(call.query, call.key, call.value, call.attn_mask)
            == "cpu_flash_attention"
        )
    # Only the pad slot's cache row was written.
    for k, v in model.kv_cache():
        assert not k[:4].any() and not v[:4].any() and k[4].any()


def test_targets_are_the_guards_whatever_v1_rows_the_csvs_hold(dry_run):
    # V1 rows count tokens: its 512-token captures must not become "the slowest capture" or the
    # largest graph of the pool ratio.
    with tarfile.open(dry_run[1] / "gpu_check.tar.gz") as archive:
        latency, memory = (
            pd.read_csv(archive.extractfile(f"gpu_check/tiny/{name}.csv"))
            for name in ("latency", "graph_memory")
        )
    slow = memory.assign(
        capture_ms=memory["capture_ms"].where(memory["engine"] == sweeps.LATENCY_ENGINE, 1e6)
    )  # V1 captures made absurdly slow
    targets = gpu_targets.summarize_targets(latency, slow, "tiny", "tiny").set_index("target")
    guard = memory[(memory["engine"] == sweeps.LATENCY_ENGINE) & (memory["graph_pool"] == "shared")]
    assert targets.loc["slowest capture (ms)", "value"] == guard["capture_ms"].max()
    separate = memory[
        (memory["engine"] == sweeps.LATENCY_ENGINE) & (memory["graph_pool"] == "separate")
    ]
    largest = separate.loc[separate["capture_size"].idxmax(), "memory_bytes"]
    assert targets.loc["shared pool / largest graph's own pool", "value"] == pytest.approx(
        guard["memory_bytes"].sum() / largest
    )


def lines(sweep, frame, engines):
    """What the report prints of the rows a sweep's CSV lacks."""
    return [gap_line(gap) for gap in gpu_targets.missing_rows(sweep, frame, engines)]


def test_the_v1_cliff_is_the_graph_steps_either_side_of_the_largest_graph(dry_run):
    with tarfile.open(dry_run[1] / "gpu_check.tar.gz") as archive:
        latency = pd.read_csv(archive.extractfile("gpu_check/tiny/latency.csv"))
    cliff = gpu_targets.v1_cliff(latency)
    assert len(cliff) == 1
    row = cliff.iloc[0]
    tokens = latency[(latency["engine"] == "vllm-0.33.0") & (latency["mode"] == "graph")]
    above = tokens[tokens["batch_size"] > 512]["batch_size"].min()
    assert (row.engine, row.model, row.num_speculative_tokens, row.graph_limit) == (
        "vllm-0.33.0",
        "tiny",
        3,
        512,
    )
    assert (row.below_batch_size, row.below_path) == (512, "full")
    assert (row.above_batch_size, row.above_path) == (above, "eager")
    step = tokens.set_index("batch_size")["median_ms"]
    assert (row.below_median_ms, row.above_median_ms) == (step[512], step[above])
    assert v1_cliff_lines(cliff) == [
        f"== V1 cliff (vllm-0.33.0, tiny, k=3, {row.backend}): largest captured 512 tokens; "
        f"median step 512 tokens (full) {step[512]:.3g} ms -> {above} tokens (eager) "
        f"{step[above]:.3g} ms"
    ]
    assert v1_cliff_lines(gpu_targets.v1_cliff(latency.drop(columns="batch_unit"))) == [
        "== V1 cliff: no V1 rows in latency.csv"
    ]


def test_a_latency_csv_without_the_v1_rows_is_not_complete(dry_run):
    with tarfile.open(dry_run[1] / "gpu_check.tar.gz") as archive:
        latency = pd.read_csv(archive.extractfile("gpu_check/tiny/latency.csv"))
    quick = suites.get_suite("quick")
    engines = gpu_targets.expected_engines(quick, "latency")
    assert engines == (sweeps.LATENCY_ENGINE, "vllm-0.33.0")
    assert gpu_targets.missing_rows("latency", latency, engines) == []
    # A V1 step timed out after the guard's rows were written: the file exists, rows are missing.
    guard = latency[latency["engine"] == sweeps.LATENCY_ENGINE]
    assert gpu_targets.missing_rows("latency", guard, engines) == [
        gpu_targets.Gap("latency", engine="vllm-0.33.0")
    ]
    assert lines("latency", guard, engines) == ["latency.csv has no vllm-0.33.0 rows"]
    eager_only = latency[latency["mode"] == "eager"]
    assert gpu_targets.missing_rows("latency", eager_only, engines) == [
        gpu_targets.Gap("latency", engine=engine, column="mode", value="graph")
        for engine in engines
    ]
    assert lines("latency", eager_only, engines) == [
        f"latency.csv has no {engine} rows with mode graph" for engine in engines
    ]
    assert gpu_targets.missing_rows("latency", None, engines) == [
        gpu_targets.Gap("latency", found=False)
    ]
    assert lines("latency", None, engines) == ["latency.csv missing"]
    assert lines("latency", latency.iloc[:0], engines) == ["latency.csv has no rows"]
    assert gpu_targets.expected_engines(quick, "latency", with_v1=False) == (sweeps.LATENCY_ENGINE,)
    assert gpu_targets.expected_engines(quick, "spec_decode") == ("vllm-0.6.0", "adaptive")


# Stands in for python3: SIGKILLs itself in the environment step, as the OOM killer would.
KILLED_PYTHON = """#!/usr/bin/env bash
case " $* " in *" environment "*) kill -9 $$ ;; esac
exec {python} "$@"
"""


def test_a_sigkill_before_the_limit_reads_killed_not_timeout(stripped_env, tmp_path):
    wrapper = tmp_path / "python"
    wrapper.write_text(KILLED_PYTHON.format(python=sys.executable))
    wrapper.chmod(0o755)
    out = tmp_path / "out"
    # A 40 s budget leaves 5 s past the 35 kept for the report: every step that starts a second
    # or more in is skipped (a failure too); only the first ones get a limit.
    done = subprocess.run(
        ["bash", "scripts/gpu_check.sh", "--device", "cpu", "--small"],
        cwd=ROOT,
        env=stripped_env | {"OUT": str(out), "PYTHON": str(wrapper), "BUDGET_S": "40"},
        capture_output=True,
        text=True,
        timeout=200,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    with tarfile.open(out / "gpu_check.tar.gz") as archive:
        steps = pd.read_csv(archive.extractfile("gpu_check/steps.tsv"), sep="\t")
        log = archive.extractfile("gpu_check/logs/environment.log").read().decode()
    states = dict(zip(steps["step"], steps["status"]))
    assert states["environment"] == "killed(137)" and "out-of-memory" in log
    assert states["memory_tiny"] == states["latency_tiny"] == states["spec_decode"] == "skipped"
    summary = (out / "summary.txt").read_text()
    assert "== rows MISSING" in summary and "tiny/latency.csv missing" in summary
