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
