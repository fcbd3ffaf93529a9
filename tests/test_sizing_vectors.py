"""Historical vLLM versions against vectors computed from the released wheels' own functions.

data/vllm_sizing_vectors.json is produced by scripts/make_sizing_vectors.py (vllm 0.5.5, 0.6.0,
0.12.0, 0.13.0). A missing file is a failure, never a skip: the policies would be unchecked.
"""

import json
from pathlib import Path

import pytest

from graphlab.sizing import SizingConfig, get_policy

VECTORS = Path(__file__).resolve().parent.parent / "data" / "vllm_sizing_vectors.json"
ENGINES = {"vllm-0.5.5", "vllm-0.6.0", "vllm-0.12.0", "vllm-0.13.0"}


@pytest.fixture(scope="module")
def data():
    assert VECTORS.exists(), f"{VECTORS} is missing: run scripts/make_sizing_vectors.py"
    return json.loads(VECTORS.read_text())


def _config(entry):
    return SizingConfig(entry["max_num_seqs"], entry["num_speculative_tokens"], entry["max_num_batched_tokens"])


def test_every_engine_is_covered(data):
    assert {v["engine"] for v in data["vectors"]} == ENGINES
    assert len(data["vectors"]) >= 1000


@pytest.mark.parametrize("engine", sorted(ENGINES))
def test_capture_sizes_and_dispatch_match_the_wheels(data, engine):
    policy = get_policy(engine)
    vectors = [v for v in data["vectors"] if v["engine"] == engine]
    assert vectors
    for vector in vectors:
        cfg = _config(vector)
        assert list(policy.capture_sizes(cfg)) == vector["capture_sizes"], vector
        assert policy.startup_error(cfg) is None, vector
        for n, path, graph_size, error in vector["outcomes"]:
            d = policy.dispatch(n, cfg)
            assert (d.path, d.graph_size, d.error) == (path, graph_size, error), (vector["max_num_seqs"], vector["num_speculative_tokens"], n)


def test_startup_refusals_match_the_wheels(data):
    refusals = data.get("startup_errors", [])
    for entry in refusals:
        reported = get_policy(entry["engine"]).startup_error(_config(entry))
        assert reported is not None and entry["error"].startswith(reported), entry


def test_user_set_capture_settings_match_the_wheels(data):
    # vllm 0.12.0 / 0.13.0 on seeded cudagraph_capture_sizes / max_cudagraph_capture_size settings.
    explicit = data["explicit"]
    assert {v["engine"] for v in explicit} == {"vllm-0.12.0", "vllm-0.13.0"} and len(explicit) >= 200
    assert sum(bool(v["error"]) for v in explicit) >= 10 and sum(bool(v["warnings"]) for v in explicit) >= 50
    for v in explicit:
        sizes = None if v["cudagraph_capture_sizes"] is None else tuple(v["cudagraph_capture_sizes"])
        cfg = SizingConfig(v["max_num_seqs"], v["num_speculative_tokens"], v["max_num_batched_tokens"],
                           cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=v["max_cudagraph_capture_size"])
        policy = get_policy(v["engine"])
        assert list(policy.capture_sizes(cfg)) == v["capture_sizes"], v
        assert list(policy.sizing_warnings(cfg)) == v["warnings"], v
        error = policy.startup_error(cfg)
        assert (error is None and v["error"] is None) or (error and v["error"].startswith(error)), v
