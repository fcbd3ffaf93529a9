"""Historical vLLM versions against vectors computed from the released wheels' own functions.

scripts/make_sizing_vectors.py writes data/vllm_sizing_vectors.json (and, for model runner V1 of
the releases that default to V2, data/vllm_sizing_vectors_model_runner_v1.json) from the
modelled releases (vllm 0.5.5, 0.6.0, 0.12.0, 0.13.0) and releases inside the wider ranges of
graphlab.sizing.versions (0.5.4, 0.6.3, 0.6.6.post1, 0.7.3, 0.15.1, 0.16.0, 0.19.0, 0.21.0; on
model runner V1, 0.22.0, 0.25.0, 0.28.0, 0.29.0, 0.30.0, 0.31.0 and 0.33.0): each release's
vectors are checked against the engine `engine_for_version` maps it to. Model runner V2 of every
release from 0.22.0 to 0.31.0 (its CudaGraphManager's graphs and dispatch) is in
data/vllm_sizing_vectors_model_runner_v2.json. A missing file is a failure, never a skip.
"""

import json

import numpy as np
import pytest
from helpers import ROOT, release_check

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import CUDAGRAPH_MODES, CUDAGraphMode
from graphlab.sizing.engines import SGLang, TrtLlm, get_engine
from graphlab.sizing.families import PlainFull, families_of
from graphlab.sizing.model_runner import choose_model_runner, release_key
from graphlab.sizing.versions import engine_for_version

VECTORS = ROOT / "data" / "vllm_sizing_vectors.json"
# Model runner V1 of the releases that default to model runner V2 (the same script writes both).
RUNNER_V1 = VECTORS.with_name("vllm_sizing_vectors_model_runner_v1.json")
V1_RELEASES = (
    "0.12.0",
    "0.13.0",
    "0.15.1",
    "0.16.0",
    "0.17.0",
    "0.18.0",
    "0.19.0",
    "0.20.0",
    "0.21.0",
    # model runner V1 of the releases that default to model runner V2 ("model_runner": "v1")
    "0.22.0",
    "0.25.0",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.33.0",
)
RELEASES = {"0.5.4", "0.5.5", "0.6.0", "0.6.3", "0.6.6.post1", "0.7.3", *V1_RELEASES}
# One release per range of identical model-runner choice (`_get_v2_model_runner_unsupported_
# features`' speculative methods).
RUNNER_RELEASES = ("0.22.0", "0.24.0", "0.25.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


@pytest.fixture(scope="module")
def data():
    for path in (VECTORS, RUNNER_V1):
        assert path.exists(), f"{path} is missing: run scripts/make_sizing_vectors.py"
    merged, runner_v1 = json.loads(VECTORS.read_text()), json.loads(RUNNER_V1.read_text())
    assert runner_v1["provenance"] == merged["provenance"]
    assert all(v.get("model_runner") == "v1" for v in runner_v1["vectors"] + runner_v1["modes"])
    for name in ("vectors", "startup_errors", "explicit", "modes"):
        merged[name] = merged[name] + runner_v1[name]
    return merged


def _config(entry, **settings):
    return SizingConfig(
        entry["max_num_seqs"],
        entry["num_speculative_tokens"],
        entry["max_num_batched_tokens"],
        model_runner=entry.get("model_runner", "auto"),
        **settings,
    )


def _policy(entry):
    """The engine the version map gives the vector's release ("engine": "vllm-<release>")."""
    return get_engine(engine_for_version(entry["engine"].removeprefix("vllm-")))


def test_every_release_is_covered(data):
    assert {v["engine"].removeprefix("vllm-") for v in data["vectors"]} == RELEASES
    assert set(data["provenance"]["wheels"]) == RELEASES | set(RUNNER_RELEASES)
    assert len(data["vectors"]) >= 1000


@pytest.mark.parametrize("release", sorted(RELEASES))
def test_capture_sizes_and_dispatch_match_the_wheels(data, release):
    vectors = [v for v in data["vectors"] if v["engine"] == f"vllm-{release}"]
    assert vectors
    # all of a vector's batches at once (`dispatch` is one batch's answer, the same rule); these
    # vectors say "graph" for any graph the wheel's dispatcher replays, FULL or PIECEWISE
    failures = [(v, m) for v in vectors if (m := release_check().v1_mismatches(release, v))]
    assert not failures, f"{len(failures)} of {len(vectors)} differ, e.g. {failures[0]}"[:600]


def test_startup_refusals_match_the_wheels(data):
    refusals = data.get("startup_errors", [])
    assert refusals
    for entry in refusals:
        release = entry["engine"].removeprefix("vllm-")
        assert not release_check().v1_mismatches(release, entry), entry


def test_user_set_capture_settings_match_the_wheels(data):
    # The V1 releases on seeded cudagraph_capture_sizes / max_cudagraph_capture_size settings.
    explicit = data["explicit"]
    assert {v["engine"] for v in explicit} == {f"vllm-{r}" for r in V1_RELEASES}
    assert len(explicit) >= 150 * len(V1_RELEASES)
    assert (
        sum(bool(v["error"]) for v in explicit) >= 10
        and sum(bool(v["warnings"]) for v in explicit) >= 50
    )
    for v in explicit:
        sizes = (
            None if v["cudagraph_capture_sizes"] is None else tuple(v["cudagraph_capture_sizes"])
        )
        cfg = _config(
            v,
            cudagraph_capture_sizes=sizes,
            max_cudagraph_capture_size=v["max_cudagraph_capture_size"],
        )
        policy = _policy(v)
        assert list(policy.capture_sizes(cfg)) == v["capture_sizes"], v
        assert list(policy.sizing_warnings(cfg)) == v["warnings"], v
        error = policy.startup_error(cfg)
        assert (error is None and v["error"] is None) or (error and v["error"].startswith(error)), v


@pytest.mark.parametrize("release", V1_RELEASES)
def test_every_cudagraph_mode_matches_the_wheels_dispatcher(data, release):
    # Uniform decode batches through the wheel's own CudagraphDispatcher, per cudagraph_mode:
    # NONE captures nothing; plain FULL keeps the raw list and fails the dispatcher's assertion
    # where a batch pads to a non-multiple of 1 + k.
    vectors = [v for v in data["modes"] if v["engine"] == f"vllm-{release}"]
    assert {v["cudagraph_mode"] for v in vectors} == set(CUDAGRAPH_MODES)
    crashes = 0
    for v in vectors:
        cfg = _config(v, cudagraph_mode=v["cudagraph_mode"])
        policy = _policy(v)
        assert list(policy.capture_sizes(cfg)) == v["capture_sizes"], v
        ns = [o[0] for o in v["outcomes"]]
        outcomes = policy.dispatch_batches(np.array(ns, dtype=np.int64), cfg).outcomes()
        got = [
            [d.batch_size, d.path, d.graph_size, d.error and d.error.split(":")[0]]
            for d in outcomes
        ]
        assert got == v["outcomes"], v
        for d, (n, path, _, _) in zip(outcomes, v["outcomes"]):
            if path == "crash":  # the assertion's operands: n padded on the wheel's list, 1 + k
                padded = min(s for s in v["capture_sizes"] if s >= n)
                assert d.error.endswith(f": {padded} % {cfg.decode_query_len} != 0"), d.error
        crashes += sum(o[1] == "crash" for o in v["outcomes"])
    # 0.12.0 to 0.17.0 assert; from 0.18.0 plain FULL batches are not marked uniform
    assert crashes >= 50 if policy.plain_full is not PlainFull.REPLAYS else crashes == 0


def test_model_runner_choice_matches_the_wheels(data):
    # auto, per speculative method: model runner V2 where the wheel's own test lets it run the
    # method, V1 where it names it unsupported (vLLM then falls back).
    entries = data["model_runners"]
    assert tuple(entry["release"] for entry in entries) == RUNNER_RELEASES
    fallbacks = 0
    for entry in entries:
        for method, v2_runs in entry["v2_runs_method"].items():
            runner, why = choose_model_runner(entry["release"], "auto", method)
            assert runner == ("v2" if v2_runs else "v1"), (entry["release"], method)
            assert repr(method) in why and entry["release"] in why
            fallbacks += not v2_runs
    assert fallbacks >= 30
    # before 0.22.0 model runner V1 whatever the method; --model-runner v1/v2 is what it says
    assert choose_model_runner("0.21.0", "auto", "eagle")[0] == "v1"
    assert choose_model_runner("0.33.0", "v1", "eagle")[0] == "v1"


# --- model runner V2 of 0.22.0 to 0.31.0: data/vllm_sizing_vectors_model_runner_v2.json

RUNNER_V2 = VECTORS.with_name("vllm_sizing_vectors_model_runner_v2.json")
# Every release whose default runner is V2 before 0.32.0 (0.22.1, 0.25.1 and 0.27.1 are
# byte-identical to their x.y.0 in the members read).
V2_RELEASES = (
    "0.22.0", "0.23.0", "0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0",
    "0.31.0",
)  # fmt: skip


@pytest.fixture(scope="module")
def runner_v2():
    assert RUNNER_V2.exists(), f"{RUNNER_V2} is missing: run scripts/make_sizing_vectors.py"
    return json.loads(RUNNER_V2.read_text())


def test_model_runner_v2_vectors_cover_every_release(runner_v2):
    vectors = runner_v2["vectors"]
    assert set(runner_v2["provenance"]["wheels"]) == set(V2_RELEASES)
    for release in V2_RELEASES:
        modes = {v["cudagraph_mode"] for v in vectors if v["engine"] == f"vllm-{release}"}
        assert modes == set(CUDAGRAPH_MODES) - {"NONE"}, release
    assert len(vectors) >= 250 * len(V2_RELEASES)


def _v2_outcomes(families, vector, key):
    ns = [o[0] for o in vector[key]]
    batches = families.dispatch_batches(np.array(ns, dtype=np.int64), key == "uniform")
    return [[d.batch_size, d.path, d.graph_size] for d in batches.outcomes()]


@pytest.mark.parametrize("release", V2_RELEASES)
def test_model_runner_v2_graphs_and_dispatch_match_the_wheels(runner_v2, release):
    # 0.33.0's rule (FULL graphs rounded alone, candidates by mode) differs before 0.29.0
    differs_from_033, batches = 0, 0
    for v in (v for v in runner_v2["vectors"] if v["engine"] == f"vllm-{release}"):
        assert not release_check().v2_mismatches(release, v), v
        batches += len(v["uniform"]) + len(v["mixed"])
        mode, k = CUDAGraphMode(v["cudagraph_mode"]), v["num_speculative_tokens"]
        rule_033 = families_of(mode, v["config_capture_sizes"], v["max_num_seqs"], 1 + k)
        differs_from_033 += any(_v2_outcomes(rule_033, v, n) != v[n] for n in ("uniform", "mixed"))
    assert batches > 10000
    assert (differs_from_033 > 0) == (release_key(release) < (0, 29)), differs_from_033


# --- peers: data/peer_sizing_vectors.json (scripts/make_peer_vectors.py, from the peers' own code)

PEERS = VECTORS.parent / "peer_sizing_vectors.json"


@pytest.fixture(scope="module")
def peers():
    assert PEERS.exists(), f"{PEERS} is missing: run scripts/make_peer_vectors.py"
    return json.loads(PEERS.read_text())


def _peer_policy(vector):
    if vector["engine"] == "sglang":
        return SGLang(device_memory_gib=vector["device_memory_mib"] / 1024), SizingConfig(
            vector["max_num_seqs"], 3 if vector["speculative"] else 0
        )
    if vector["engine"] == "trtllm":
        return TrtLlm(vector["max_batch_size"], vector["enable_padding"]), SizingConfig(8)
    return get_engine("nano-vllm"), SizingConfig(vector["max_num_seqs"])


def test_peer_vectors_cover_each_peer_with_provenance(peers):
    counts = {
        e: sum(v["engine"] == e for v in peers["vectors"])
        for e in ("sglang", "nano-vllm", "trtllm")
    }
    assert min(counts.values()) >= 40, counts
    sources = peers["provenance"]["sources"]
    assert (
        sources["sglang"]["package"] == "sglang==0.4.6"
        and len(sources["sglang"]["file_sha256"]) == 64
    )
    assert len(sources["nano-vllm"]["commit"]) == 40 and len(sources["trtllm"]["commit"]) == 40


def test_one_sglang_policy_keeps_each_configs_list_apart(peers):
    # One instance answers every S with and without speculation (k = 1 and 3 alike): its cached
    # lists must be keyed by S and by whether k > 0, nothing coarser.
    policies, speculative = {}, 0
    for vector in (v for v in peers["vectors"] if v["engine"] == "sglang"):
        memory = vector["device_memory_mib"]
        policy = policies.setdefault(memory, SGLang(device_memory_gib=memory / 1024))
        speculative += vector["speculative"]
        k = (1, 3)[speculative % 2] if vector["speculative"] else 0
        cfg = SizingConfig(vector["max_num_seqs"], k)
        assert list(policy.capture_sizes(cfg)) == vector["capture_sizes"], (memory, cfg)


def test_trtllm_defaults_are_its_config_defaults(peers):
    # CudaGraphConfig's defaults: max_batch_size 128, enable_padding False.
    default = next(
        v
        for v in peers["vectors"]
        if v["engine"] == "trtllm" and (v["max_batch_size"], v["enable_padding"]) == (128, False)
    )
    for policy in (TrtLlm(), get_engine("trtllm")):
        assert list(policy.capture_sizes(SizingConfig(8))) == default["capture_sizes"]
    with pytest.raises(GraphlabError, match="^max_batch_size"):
        TrtLlm(max_batch_size=0)


@pytest.mark.parametrize("engine", ["sglang", "nano-vllm", "trtllm"])
def test_a_given_capture_list_dispatches_as_the_engine_that_captured_it(peers, engine):
    # A planner hands its own list: the engine's defaults must not leak into the dispatch.
    for vector in (v for v in peers["vectors"] if v["engine"] == engine):
        policy, cfg = _peer_policy(vector)
        if engine == "trtllm":  # the default instance, told only the vector's list
            policy = TrtLlm(enable_padding=vector["enable_padding"])
        ns = np.array([o[0] for o in vector["outcomes"]])
        sizes = np.array(vector["capture_sizes"])
        got = [
            [d.batch_size, d.path, d.graph_size, d.error]
            for d in policy.dispatch_batches(ns, cfg, sizes).outcomes()
        ]
        assert got == vector["outcomes"], {
            k: vector[k] for k in vector if k not in ("outcomes", "capture_sizes")
        }


@pytest.mark.parametrize("engine", ["sglang", "nano-vllm", "trtllm"])
def test_peer_policies_match_their_code(peers, engine):
    for vector in (v for v in peers["vectors"] if v["engine"] == engine):
        policy, cfg = _peer_policy(vector)
        assert list(policy.capture_sizes(cfg)) == vector["capture_sizes"], vector["capture_sizes"]
        ns = [o[0] for o in vector["outcomes"]]
        outcomes = policy.dispatch_batches(np.array(ns), cfg).outcomes()
        got = [[d.batch_size, d.path, d.graph_size, d.error] for d in outcomes]
        assert got == vector["outcomes"], {
            k: vector[k] for k in vector if k not in ("outcomes", "capture_sizes")
        }
