"""vLLM 0.34.0 (vllm-0.34.0) against vectors from the 0.34.0 wheel's own functions.

scripts/make_sizing_vectors.py (--vllm-0-34-only) writes data/vllm_sizing_vectors_0_34_0.json:
on seeded random configs, the verbatim `VllmConfig._set_cudagraph_sizes` and
`_split_cudagraph_capture_sizes`, `resolve_cudagraph_mode_and_sizes` and model runner V2's
`CudaGraphManager` (`_init_candidates`, `dispatch`). Each vector is checked against the kit's
vllm-0.34.0 (Vllm034(1024) on data-center Blackwell) by scripts/check_release_code.py's
`split_mismatches`: the mode, every graph, every uniform decode batch B*q (q from the dynamic
schedule where set) and the mixed batches where the outcome changes. A missing file is a failure,
never a skip.
"""

import json

import numpy as np
import pytest
from helpers import ROOT, release_check

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SPLIT_CAPTURE_SETTINGS, SizingConfig
from graphlab.sizing.dispatch import BatchPath, Dispatch
from graphlab.sizing.engines import Vllm034, get_engine
from graphlab.sizing.families import Candidates, families_for
from graphlab.sizing.model_runner import choose_model_runner
from graphlab.sizing.versions import engine_for_version

VECTORS = ROOT / "data" / "vllm_sizing_vectors_0_34_0.json"


def mismatches(vector: dict) -> list[str]:
    """What the kit's vllm-0.34.0 answers differently from the wheel for one vector ([]: none)."""
    return release_check().split_mismatches("0.34.0", vector)


@pytest.fixture(scope="module")
def vectors():
    assert VECTORS.exists(), f"{VECTORS} is missing: run scripts/make_sizing_vectors.py"
    data = json.loads(VECTORS.read_text())
    assert list(data["provenance"]["wheels"]) == ["0.34.0"]
    return data["vectors"]


def test_the_vectors_cover_what_0_34_0_changed(vectors):
    """The random configs reach every input the split reads, so none goes unchecked."""
    started = [v for v in vectors if "error" not in v]
    assert len(vectors) >= 400 and len(started) >= 340
    assert {v["resolved_mode"] for v in started} == {
        "NONE",
        "PIECEWISE",
        "FULL",
        "FULL_DECODE_ONLY",
        "FULL_AND_PIECEWISE",
    }
    for key in ("data_center_blackwell", "cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        assert sum(bool(v[key]) for v in started) >= 30, key
    assert sum(v["num_speculative_tokens_per_batch_size"] is not None for v in started) >= 30
    for name in SPLIT_CAPTURE_SETTINGS:  # 0.34.0's own prefill / decode settings
        assert sum(v[name] is not None for v in started) >= 25, name
    refusals = [v["error"] for v in vectors if "error" in v]
    assert sum("cannot be combined" in e for e in refusals) >= 20
    assert sum("above max_" in e for e in refusals) >= 5
    drafters = [v for v in started if "drafter" in v]
    assert len(drafters) >= 60 and {v["method"] for v in drafters} == {
        "eagle",
        "eagle3",
        "mtp",
        "draft_model",
    }
    assert sum(bool(v["drafter"]["decode_graphs"]) for v in drafters) >= 20
    # a dynamic schedule with FULL decode graphs at several query lengths
    assert any(len({g[3] for g in v["graphs"] if g[3]}) > 1 for v in started)


def test_every_vector_matches_the_wheel(vectors):
    failures = {i: m for i, v in enumerate(vectors) if (m := mismatches(v))}
    assert not failures, (
        f"{len(failures)} of {len(vectors)} differ, e.g. {list(failures.items())[:3]}"
    )


def test_a_query_length_never_shadows_another():
    """0.33.0 looks only at the smallest FULL size >= n; 0.34.0 at its own query length's graphs:
    under [[1, 4, 1], [5, 8, 2]] with S 8, k 2 and the default sizes a batch of 5 requests at q 3
    (15 tokens) meets the q-2 graph of 16 tokens first on 0.33.0 and runs PIECEWISE at 16;
    0.34.0 replays its q-3 graph of 6 requests (18 tokens)."""
    cfg = SizingConfig(8, 2, num_speculative_tokens_per_batch_size=((1, 4, 1), (5, 8, 2)))
    new, old = get_engine("vllm-0.34.0"), get_engine("vllm-0.33.0")
    assert families_for(new, cfg).candidates is Candidates.BY_QUERY_LEN
    ns, lens = np.array([15]), np.array([3])
    assert new.dispatch_batches(ns, cfg, query_lens=lens)[0] == Dispatch(
        15, BatchPath.FULL, 18, None
    )
    assert old.dispatch_batches(ns, cfg, query_lens=lens)[0] == Dispatch(
        15, BatchPath.PIECEWISE, 16, None
    )


def test_0_34_0_has_no_model_runner_v1():
    policy = get_engine(engine_for_version("0.34.0"))
    assert policy.name == "vllm-0.34.0"
    assert choose_model_runner("0.34.0", "auto", "suffix")[0] == "v2"
    assert policy.model_runner(SizingConfig(8, 2, speculative_method="suffix"))[0] == "v2"
    with pytest.raises(GraphlabError, match="--model-runner v1 is refused: vLLM 0.34.0 removed"):
        policy.check_config(SizingConfig(8, model_runner="v1"))


def test_the_deprecated_capture_settings_warn():
    policy = get_engine("vllm-0.34.0")
    assert not any("deprecated" in w for w in policy.sizing_warnings(SizingConfig(8)))
    warnings = policy.sizing_warnings(SizingConfig(8, cudagraph_capture_sizes=(4, 8)))
    assert any(
        "cudagraph_capture_sizes and max_cudagraph_capture_size are deprecated" in w
        for w in warnings
    )


def test_data_center_blackwell_takes_the_grids_vllm_documents():
    """`prefill_cudagraph_capture_grid`'s docstring: "54 sizes at 8192";
    `decode_cudagraph_capture_grid`'s: "64 sizes at 1024" (vllm/config/compilation.py, 0.34.0)."""
    families = families_for(Vllm034(1024), SizingConfig(1024, 0, 8192))
    assert len(families.mixed_sizes) == 54 and families.mixed_sizes[-1] == 8192
    assert len(families.full_sizes) == 64 and families.full_sizes[-1] == 1024
    # the deprecated list keeps the shared sizes instead, within 1024 tokens
    legacy = families_for(
        Vllm034(1024), SizingConfig(1024, 0, 8192, max_cudagraph_capture_size=1024)
    )
    assert legacy.mixed_sizes[-1] == 1024


def test_the_cli_audits_0_34_0_on_model_runner_v2():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "graphlab", "audit", "--vllm-version", "0.34.0"]
        + [
            "--max-num-seqs",
            "8",
            "--num-speculative-tokens",
            "2",
            "--cudagraph-capture-sizes",
            "4",
            "8",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("engine vllm-0.34.0:")
    # [4, 8] at q 3: one decode graph of 2 requests (6 tokens); 9 tokens and up run eagerly
    assert "FULL uniform-decode graphs (1): 6;" in done.stdout
    assert "9-24 step 3  eager" in done.stdout
    assert "model runner V2: vLLM 0.34.0 has model runner V2 only" in done.stdout
    assert "cudagraph_capture_sizes and max_cudagraph_capture_size are deprecated" in done.stdout


def test_the_decode_request_sizes_set_the_decode_graphs():
    # (1, 8, 100) at S 64, q 4: 100 is dropped with vLLM's WARNING, 1 and 8 requests remain
    cfg = SizingConfig(64, 3, decode_cudagraph_capture_request_sizes=(1, 8, 100))
    policy = get_engine("vllm-0.34.0")
    assert families_for(policy, cfg).full_graphs == ((4, 4), (32, 4))
    assert (
        "Dropping [100] from decode_cudagraph_capture_request_sizes: outside [1, 64]."
        in policy.sizing_warnings(cfg)
    )
    capped = SizingConfig(
        64, 3, decode_cudagraph_capture_request_sizes=(8,), max_decode_cudagraph_capture_requests=4
    )
    assert policy.startup_error(capped) == (
        "ValueError: decode_cudagraph_capture_request_sizes holds 8, above "
        "max_decode_cudagraph_capture_requests=4."
    )


def test_engines_before_0_34_0_refuse_its_capture_settings():
    cfg = SizingConfig(8, max_prefill_cudagraph_capture_tokens=64)
    with pytest.raises(
        GraphlabError, match="added the prefill and decode capture settings in 0.34.0"
    ):
        get_engine("vllm-0.33.0").capture_sizes(cfg)


def test_the_split_settings_are_those_vllm_resolves(vectors):
    """The prefill token sizes and decode request counts the kit resolves equal the
    prefill_cudagraph_capture_token_sizes and decode_cudagraph_capture_request_sizes the wheel's
    `_split_cudagraph_capture_sizes` left in the compilation config, on every started vector; set
    as such (`Vllm034.split_settings`, what `plan --vllm-log` proposes instead of a deprecated
    list) they give the same graphs as the deprecated settings they came from, except where a
    FULL_DECODE_ONLY that the attention backend lowers keeps prefill graphs with no decode graph
    (then only the deprecated list does, and split_settings is None)."""
    from dataclasses import replace

    started = [v for v in vectors if "error" not in v and v["resolved_mode"] != "NONE"]
    check, legacy, inexpressible = release_check(), 0, 0
    for v in started:
        policy = check.split_policy("0.34.0", v["data_center_blackwell"])
        cfg = check.split_config(v)
        assert list(policy.capture_sizes(cfg)) == v["prefill_sizes"], v
        assert policy.decode_request_sizes(cfg) == v["decode_request_sizes"], v
        if cfg.cudagraph_capture_sizes is None or cfg.split_capture_settings:
            continue
        legacy += 1
        settings = policy.split_settings(cfg)
        if settings is None:
            inexpressible += 1
            assert cfg.cudagraph_mode == "FULL_DECODE_ONLY" and not v["decode_request_sizes"], v
            continue
        own = replace(cfg, cudagraph_capture_sizes=None, max_cudagraph_capture_size=None)
        own = replace(
            own, **{k: tuple(x) if isinstance(x, list) else x for k, x in settings.items()}
        )
        assert families_for(policy, own) == families_for(policy, cfg), v
    assert len(started) >= 300 and legacy >= 30 and inexpressible <= 5, (legacy, inexpressible)


def test_a_log_plan_list_becomes_0_34_0s_own_settings():
    from graphlab.sizing.planner.split_plan import log_compilation

    cfg = SizingConfig(16, 2, cudagraph_mode="FULL_AND_PIECEWISE")
    out = log_compilation(get_engine("vllm-0.34.0"), cfg, None, [6, 12, 48, 96])
    # decode graphs of 2, 4 and 16 requests at q 3 (32 would exceed S), prefill graphs as listed
    assert out == {
        "cudagraph_mode": "FULL_AND_PIECEWISE",
        "prefill_cudagraph_capture_token_sizes": [6, 12, 48, 96],
        "decode_cudagraph_capture_request_sizes": [2, 4, 16],
    }
    assert log_compilation(get_engine("vllm-0.33.0"), cfg, None, [6, 12]) == {
        "cudagraph_mode": "FULL_AND_PIECEWISE",
        "cudagraph_capture_sizes": [6, 12],
    }
