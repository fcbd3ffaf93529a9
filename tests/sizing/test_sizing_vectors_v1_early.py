"""vLLM V1 before 0.12.0 (0.8.0 to 0.11.2) against vectors from the released wheels' own code.

scripts/make_sizing_vectors.py (`--early-v1-only`) writes data/vllm_sizing_vectors_v1_early.json
from both ends of each range of graphlab.sizing.versions (0.8.0, 0.8.2, 0.8.3, 0.8.4, 0.8.5,
0.8.5.post1, 0.9.0, 0.9.2, 0.10.0, 0.10.1, 0.10.2, 0.11.0, 0.11.1, 0.11.2): per seeded config and
cudagraph_mode the release has (and its default, as VllmConfig.__post_init__ sets it), the sizes
captured and each batch's path and padded size through the wheel's own
`_set_cudagraph_sizes`, `pad_for_cudagraph`, rounding and `CudagraphDispatcher`. Each release is
checked against the engine `engine_for_version` maps it to. A missing file is a failure.
"""

import json

import numpy as np
import pytest
from helpers import ROOT, release_check

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import PATH_CODES
from graphlab.sizing.engines import get_engine
from graphlab.sizing.versions import engine_for_version

VECTORS = ROOT / "data" / "vllm_sizing_vectors_v1_early.json"
RELEASES = (
    "0.8.0", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0", "0.9.2", "0.10.0",
    "0.10.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2",
)  # fmt: skip


@pytest.fixture(scope="module")
def vectors():
    assert VECTORS.exists(), f"{VECTORS} is missing: run scripts/make_sizing_vectors.py"
    data = json.loads(VECTORS.read_text())
    assert sorted(data["provenance"]["wheels"]) == sorted(RELEASES)
    return data["vectors"]


@pytest.mark.parametrize("release", RELEASES)
def test_release_matches_its_wheel(vectors, release):
    """Every vector of the release: the start-up error, the mode run (the release's default where
    none is given), the captured sizes, and each uniform decode and mixed batch's path and padded
    size equal the wheel's."""
    mine = [v for v in vectors if v["engine"] == f"vllm-{release}"]
    assert len(mine) >= 300
    compare = release_check().early_v1_mismatches
    failures = [(v, found) for v in mine if (found := compare(release, v))]
    assert not failures, f"{len(failures)} of {len(mine)} differ, e.g. {failures[0]}"[:600]
    assert sum(len(v["uniform"]) + len(v["mixed"]) for v in mine if "error" not in v) > 10_000


def test_the_wheels_differ_where_the_engines_do(vectors):
    """The vectors tell the ranges apart: 0.10.0 caps the default list at 2 * max_num_seqs where
    0.9.2 keeps 512, and 0.11.1 rounds FULL_AND_PIECEWISE's list to multiples of q where 0.11.0
    does not."""

    def first(release, **fields):
        return next(
            v
            for v in vectors
            if v["engine"] == f"vllm-{release}"
            and "error" not in v
            and v["cudagraph_capture_sizes"] is None
            and all(v[k] == value for k, value in fields.items())
        )

    v092 = first("0.9.2", cudagraph_mode="PIECEWISE", max_num_batched_tokens=None)
    assert v092["capture_sizes"][-1] == 512
    v0100 = first("0.10.0", cudagraph_mode="PIECEWISE", max_num_batched_tokens=None)
    assert v0100["capture_sizes"][-1] == min(512, 2 * v0100["max_num_seqs"] // 8 * 8 or 4)
    rounded = first("0.11.1", cudagraph_mode="FULL_AND_PIECEWISE", num_speculative_tokens=2)
    assert all(size % 3 == 0 for size in rounded["capture_sizes"])


@pytest.mark.parametrize(
    ("release", "cfg", "message"),
    [
        ("0.8.0", SizingConfig(8, cudagraph_mode="FULL"), "PIECEWISE graphs only"),
        ("0.9.2", SizingConfig(8, cudagraph_mode="FULL_DECODE_ONLY"), "full_cuda_graph"),
        ("0.11.0", SizingConfig(8, max_cudagraph_capture_size=64), "gained it in 0.11.1"),
        ("0.10.1", SizingConfig(8, model_runner="v2"), "no model runner V2"),
        ("0.10.0", SizingConfig(8, attention_cg_support="UNIFORM_BATCH"), "ALWAYS only"),
    ],
)
def test_options_the_release_lacks_are_refused(release, cfg, message):
    policy = get_engine(engine_for_version(release))
    with pytest.raises(GraphlabError, match=message):
        policy.capture_sizes(cfg)


def test_rounding_that_finds_nothing_keeps_the_list_on_0_11_1():
    """0.11.1 warns and keeps [1, 2] for S = 1, k = 2 (nothing rounds within 2); 0.12.0 refuses
    to start (no size of q <= 2)."""
    cfg = SizingConfig(1, 2)
    old, new = get_engine("vllm-0.11.1"), get_engine("vllm-0.12.0")
    assert old.capture_sizes(cfg) == (1, 2) and old.startup_error(cfg) is None
    assert any("No valid cudagraph sizes" in w for w in old.sizing_warnings(cfg))
    assert new.capture_sizes(cfg) == () and "No valid cudagraph sizes" in new.startup_error(cfg)
    paths = old.dispatch_batches(np.array([1, 2, 3]), cfg, uniform=False)
    assert [PATH_CODES[p].value for p in paths.path] == ["piecewise", "piecewise", "eager"]


ORACLE = ROOT / "data" / "vllm_v1_early_oracle.json"


def _kit_engine(release: str, method: str, forced: bool) -> str:
    """The kit's answer to what vllm-`release`'s engine does with `method` as written: "v0" (the
    V0 fallback, refused), "v1", or the start-up error; VLLM_USE_V1=1 is --model-runner v1."""
    policy = get_engine(engine_for_version(release))
    cfg = SizingConfig(8, 2, speculative_method=method, model_runner="v1" if forced else "auto")
    try:
        policy.check_config(cfg)
    except GraphlabError as refused:
        assert "falls back to its V0 engine" in str(refused), refused
        return "v0"
    return policy.startup_error(cfg) or "v1"


def test_each_method_gets_the_engine_the_wheels_oracle_gives():
    """scripts/make_sizing_vectors.py (`--early-v1-oracle-only`) runs each wheel's own
    `EngineArgs._is_v1_supported_oracle` statements that read the speculative settings, with its
    own `_raise_or_fallback` / `_warn_or_fallback`, per method as written and VLLM_USE_V1 unset or
    1. E.g. 0.9.x: deepseek_mtp alone of the MTP model types runs on V1; 0.8.x: V1 speculates only
    under VLLM_USE_V1=1; 0.8.2 takes "ngram" where 0.8.0 and 0.8.1 read "[ngram]" alone."""
    data = json.loads(ORACLE.read_text())
    assert sorted(data["provenance"]["wheels"]) == sorted(RELEASES)
    differ, checked = [], 0
    for record in data["vectors"]:
        release, engines = record["release"], record["VLLM_USE_V1"]
        if engines is None:  # 0.11.1 on: no V0 engine, every method on V1 but draft_model
            assert all(_kit_engine(release, m, False) != "v0" for m in ("mimo_mtp", "suffix"))
            continue
        for env, answers in engines.items():
            for method, wheel in answers.items():
                checked += 1
                if _kit_engine(release, method, env == "1") != wheel:
                    differ.append((release, env, method))
    assert checked == 12 * 2 * 15 and differ == [], differ
    fallbacks = [r for r in data["vectors"] if r["release"] == "0.9.2"][0]["VLLM_USE_V1"]["unset"]
    assert fallbacks["deepseek_mtp"] == "v1" and fallbacks["mimo_mtp"] == "v0"


def test_an_mtp_model_type_falls_back_on_0_9_x_alone():
    """0.9.x's oracle compares the method as written with "deepseek_mtp"; from 0.10.0 the oracle
    refuses draft_model alone, and SpeculativeConfig maps every MTP model type to one method."""
    with pytest.raises(GraphlabError, match="'mimo_mtp' on vLLM 0.9.0: V1 does not run it"):
        get_engine("vllm-0.9.0").check_config(SizingConfig(8, 1, speculative_method="mimo_mtp"))
    assert _kit_engine("0.10.0", "mimo_mtp", False) == "v1"
    assert _kit_engine("0.9.2", "deepseek_mtp", False) == "v1"
    # the name written is kept through replace(), the method vLLM runs is still mtp
    from dataclasses import replace

    cfg = replace(SizingConfig(8, 1, speculative_method="mimo_mtp"), max_num_seqs=4)
    assert cfg.speculative_method == "mtp" and cfg.speculative_method_as_given == "mimo_mtp"
    assert replace(cfg, speculative_method="eagle").speculative_method_as_given == "eagle"


@pytest.mark.parametrize(
    ("release", "words"),
    [
        ("0.10.2", "Speculative decoding with draft model is not supported yet."),
        ("0.11.0", "Draft model speculative decoding is not supported yet."),
        ("0.11.2", "Draft model speculative decoding is not supported yet."),
    ],
)
def test_draft_model_is_refused_at_start_up_from_0_10(release, words):
    # vllm/engine/arg_utils.py raises NotImplementedError for method "draft_model"
    policy = get_engine(engine_for_version(release))
    error = policy.startup_error(SizingConfig(8, 2, speculative_method="draft_model"))
    assert error.startswith(f"NotImplementedError: {words}")
    assert policy.startup_error(SizingConfig(8, 2, speculative_method="medusa")) is None


@pytest.mark.parametrize(
    ("method", "forced", "code", "words"),
    [
        ("mimo_mtp", False, 2, "falls back to its V0 engine"),
        ("deepseek_mtp", False, 0, "engine vllm-0.9.0:"),
        ("mimo_mtp", True, 3, "VLLM_USE_V1=1 is not supported with Speculative Decoding."),
    ],
)
def test_the_cli_leaves_vllm_use_v1_unset_unless_model_runner_v1(
    capsys, method, forced, code, words
):
    """The CLI resolves the model runner for every release; to 0.11.0 an "auto" it resolved to
    V1 must not read as VLLM_USE_V1=1."""
    from graphlab.cli import main

    argv = ["audit", "--vllm-version", "0.9.1", "--max-num-seqs", "8"]
    argv += ["--num-speculative-tokens", "1", "--speculative-method", method]
    assert main(argv + (["--model-runner", "v1"] if forced else [])) == code
    out, err = capsys.readouterr()
    assert words in (err if code == 2 else out)
