"""The drafter under a dynamic schedule (graphlab.sizing.drafter, num_speculative_tokens_per_
batch_size) against data/vllm_drafter_dynamic_vectors.json: what the released wheels' own drafter
code (scripts/make_drafter_vectors.py --dynamic: 0.24.0 to 0.33.0; model runner V1, and V2 before
0.32.0, whose 0.32.0 and 0.33.0 tests/sizing/test_drafter.py checks on the installed vLLM) does for
a decode step of B = 1..S requests at the scheduler's k(B): the first draft step (draft prefill),
how many later steps (draft decodes) follow, and theirs."""

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import release_check

from graphlab.sizing.config import SizingConfig
from graphlab.sizing.drafter import drafter
from graphlab.sizing.drafter_methods import multi_module_mtp_caveat, unmodelled_note
from graphlab.sizing.drafter_steps import since
from graphlab.sizing.drafter_v2 import V2_SPECULATORS
from graphlab.sizing.engines import get_engine
from graphlab.sizing.model_runner import Release, release_key
from graphlab.sizing.versions import engine_for_version

DATA = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "vllm_drafter_dynamic_vectors.json").read_text()
)
RELEASES = sorted({v["engine"] for v in DATA["vectors"]})


def _config(vector):
    if vector["engine"] == "vllm-0.34.0":  # 0.34.0's settings (split capture sizes, Blackwell)
        return release_check().split_config(vector)
    return SizingConfig(
        vector["max_num_seqs"],
        vector["num_speculative_tokens"],
        cudagraph_mode=vector["cudagraph_mode"],
        model_runner=vector["model_runner"],
        speculative_method=vector["speculative_method"],
        num_speculative_tokens_per_batch_size=vector["num_speculative_tokens_per_batch_size"],
    )


def _kit_batches(found, seqs):
    """Per B = 1..S the kit's [first step's path, graph size, later steps, their answer]."""
    first, later = {}, {}
    for step in found.steps:
        lo, hi = step.requests
        reqs = np.arange(lo, min(hi, seqs) + 1)
        lens = np.full(len(reqs), step.query_len) if step.uniform_decode else None
        batches = step.families.dispatch_batches(reqs * step.query_len, step.uniform_decode, lens)
        is_first = step.name.startswith(("first draft step", "draft prefill"))
        for b, d in zip(reqs, batches.outcomes(), strict=True):
            answer = [str(d.path), d.graph_size if d.path.replays else None]
            if is_first:
                first[int(b)] = answer
            else:
                later[int(b)] = (step.repeats, answer)
    return [[*first[b], *(later.get(b) or (0, None))] for b in range(1, seqs + 1)]


@pytest.mark.parametrize("release", RELEASES)
def test_drafter_under_a_schedule_matches_the_wheels_own_code(release):
    policy = get_engine(engine_for_version(release.removeprefix("vllm-")))
    vectors = [v for v in DATA["vectors"] if v["engine"] == release]
    batches = graphs = failed = refused = answered = 0
    for vector in vectors:
        cfg = _config(vector)
        if "data_center_blackwell" in vector:
            policy = release_check().split_policy("0.34.0", vector["data_center_blackwell"])
        found = drafter(policy, cfg)
        assert found.model_runner == vector["model_runner"], vector
        if "error" in vector and release == "vllm-0.34.0":  # the target's settings refused
            assert policy.startup_error(cfg) == vector["error"], vector
            continue
        if "error" in vector:  # vLLM fails at start-up building the draft decode manager
            assert found.steps == () and vector["error"] in found.note, (vector, found.note)
            assert policy.startup_error(cfg) == vector["error"]  # the target never starts
            failed += 1
            continue
        if not found.steps:  # negative query lengths in the draft decode manager
            assert "does not model" in found.note and vector["model_runner"] == "v2", found.note
            refused += 1
            continue
        assert policy.startup_error(cfg) is None, vector
        kit = _kit_batches(found, cfg.max_num_seqs)
        for b, (got, expected) in enumerate(zip(kit, vector["batches"], strict=True), start=1):
            assert got == expected, (vector, b, found.note)
        answered += 1
        batches += len(kit)
        graphs += sum(row[0] != "eager" for row in kit)
    assert batches > 1000 and graphs > 300, (batches, graphs)
    # model runner V2 before 0.32.0 alone fails or is refused, and most configs are answered
    assert answered > 20 and answered > refused + failed, (answered, refused, failed)
    assert (refused + failed > 0) == (
        release not in ("vllm-0.24.0", "vllm-0.32.0", "vllm-0.33.0", "vllm-0.34.0")
    )


CLASSES = DATA["drafter_classes"]  # each release's drafter classes: bases, overridden methods
SPEC = "vllm/v1/worker/gpu/spec_decode"


def test_gemma4_mtp_is_drawn_as_mtp_where_its_classes_decide_no_graph_of_their_own():
    v1_from = [r for r, found in CLASSES.items() if "vllm/v1/spec_decode/gemma4.py" in found]
    v2_from = [r for r, found in CLASSES.items() if f"{SPEC}/gemma4/speculator.py" in found]
    assert (v1_from[0], v2_from[0]) == ("0.21.0", "0.23.0")
    for release in v1_from:
        proposer = CLASSES[release]["vllm/v1/spec_decode/gemma4.py"]["Gemma4Proposer"]
        assert proposer == {"bases": ["SpecDecodeBaseProposer"], "overrides": ["__init__"]}
    for release in v2_from:
        speculator = CLASSES[release][f"{SPEC}/gemma4/speculator.py"]["Gemma4Speculator"]
        # the class the kit draws EAGLE, EAGLE-3 and MTP with on that release
        assert speculator["bases"] == [since(V2_SPECULATORS, release).split()[-1]], release
        assert speculator["overrides"] == [], release
    for engine in ("vllm-0.26.0", "vllm-0.33.0", "vllm-0.34.0"):
        gemma, mtp = (
            drafter(get_engine(engine), SizingConfig(64, 3, speculative_method=m))
            for m in ("gemma4_mtp", "mtp")
        )
        assert gemma.steps == mtp.steps and gemma.steps


@pytest.mark.parametrize("release", list(CLASSES))
def test_dflash_dspark_and_multi_module_mtp_are_refused_naming_the_wheels_classes(release):
    found = CLASSES[release]
    own = ["__init__", "init_cudagraph_manager", "capture", "propose"]
    cases = {
        ("dflash", "v1"): ("vllm/v1/spec_decode/dflash.py", "DFlashProposer"),
        ("dflash", "v2"): (f"{SPEC}/dflash/speculator.py", "DFlashSpeculator"),
        ("dspark", "v2"): (f"{SPEC}/dspark/speculator.py", "DSparkSpeculator"),
    }
    first = {"dflash": "0.20.0", "dspark": "0.25.0"}  # the wheels' speculative.py takes it
    for (method, runner), (member, cls) in cases.items():
        if runner == "v1" and release == "0.34.0":
            continue  # 0.34.0 has no model runner V1
        note = unmodelled_note(Release(release), runner, method)
        if member in found:
            assert cls in note and "does not model" in note, (release, note)
        elif release_key(release) < release_key(first[method]):
            assert "has no speculative method" in note, (release, note)
        else:  # init_speculator raises before the speculator exists
            assert f"has no {method} speculator" in note, (release, note)
    dflash = found.get(f"{SPEC}/dflash/speculator.py", {}).get("DFlashSpeculator")
    assert dflash is None or dflash["overrides"] == own
    multi = found.get(f"{SPEC}/multi_module_mtp/speculator.py", {}).get("MultiModuleMTPSpeculator")
    assert (multi is not None) == bool(multi_module_mtp_caveat(Release(release), "v2"))
    assert multi is None or multi["overrides"] == own
    assert multi_module_mtp_caveat(Release(release), "v1") == ""


@pytest.mark.parametrize("release", sorted({v["engine"] for v in DATA["dflash"]}))
def test_dflash_on_model_runner_v2_matches_the_wheels_own_manager(release):
    policy = get_engine(engine_for_version(release.removeprefix("vllm-")))
    vectors = [v for v in DATA["dflash"] if v["engine"] == release]
    graphs = 0
    for vector in vectors:
        sizes = vector["cudagraph_capture_sizes"]
        cfg = SizingConfig(
            vector["max_num_seqs"],
            vector["num_speculative_tokens"],
            cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
            cudagraph_mode=vector["cudagraph_mode"],
            model_runner="v2",
            speculative_method="dflash",
            attention_cg_support=vector["attention_cg_support"],
        )
        (step,) = drafter(policy, cfg).steps
        reqs = np.arange(1, cfg.max_num_seqs + 1)
        batches = step.families.dispatch_batches(reqs * step.query_len, True, None)
        kit = [[str(d.path), d.graph_size if d.path.replays else None] for d in batches.outcomes()]
        assert kit == vector["batches"], vector
        graphs += sum(path != "eager" for path, _ in kit)
    assert len(vectors) >= 40 and graphs > 300, graphs


def test_dflash_is_drawn_on_model_runner_v2_from_0_24_0_to_0_33_0_alone():
    cfg = SizingConfig(16, 3, speculative_method="dflash")
    for engine, drawn in (
        ("vllm-0.22.0", False),
        ("vllm-0.24.0", True),
        ("vllm-0.33.0", True),
        ("vllm-0.34.0", False),
    ):
        found = drafter(get_engine(engine), cfg)
        assert bool(found.steps) == drawn, (engine, found.note)
    v1 = drafter(
        get_engine("vllm-0.33.0"),
        SizingConfig(16, 3, speculative_method="dflash", model_runner="v1"),
    )
    assert v1.steps == () and "DFlashProposer" in v1.note
