"""The drafter (graphlab.sizing.drafter) against data/vllm_drafter_vectors.json: what the released
wheels' own drafter code (scripts/make_drafter_vectors.py: 0.12.0 to 0.33.0, one release inside
each range and the ranges' ends; model runner V1, and V2 from 0.22.0; eagle, eagle3, mtp and
draft_model) does with each kind of draft step of a decode step of B = 1..S requests, on each
release's mapped engine."""

import json
from pathlib import Path

import numpy as np
import pytest

from graphlab.sizing.config import SizingConfig
from graphlab.sizing.drafter import drafter
from graphlab.sizing.engines import get_engine
from graphlab.sizing.speculative import MTP_MODEL_TYPES
from graphlab.sizing.versions import engine_for_version

DATA = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "vllm_drafter_vectors.json").read_text()
)
RELEASES = sorted({v["engine"] for v in DATA["vectors"]})


def _config(vector):
    sizes = vector["cudagraph_capture_sizes"]
    return SizingConfig(
        vector["max_num_seqs"],
        vector["num_speculative_tokens"],
        max_num_batched_tokens=vector["max_num_batched_tokens"],
        cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
        cudagraph_mode=vector["cudagraph_mode"],
        model_runner=vector["model_runner"],
        speculative_method=vector["speculative_method"],
    )


@pytest.mark.parametrize("release", RELEASES)
def test_drafter_matches_the_wheels_own_code(release):
    policy = get_engine(engine_for_version(release.removeprefix("vllm-")))
    vectors = [v for v in DATA["vectors"] if v["engine"] == release]
    checked = eager = graphs = 0
    for vector in vectors:
        cfg = _config(vector)
        refused = policy.startup_error(cfg)
        if refused:  # the target refuses the config at start-up (0.12.0's rounding)
            assert vector["error"].startswith(refused), (vector, refused)
            checked += 1
            continue
        found = drafter(policy, cfg)
        assert found.model_runner == vector["model_runner"], vector
        if "error" in vector:  # model runner V2 refuses draft_model before 0.31.0
            assert found.steps == () and vector["error"] in found.note, (vector, found.note)
            checked += 1
            continue
        assert [s.name for s in found.steps] == [s["name"] for s in vector["steps"]], vector
        for step, expected in zip(found.steps, vector["steps"], strict=True):
            assert step.query_len == expected["query_len"], (vector, step.name)
            ns = np.arange(1, cfg.max_num_seqs + 1) * step.query_len
            outcomes = step.families.dispatch_batches(ns, step.uniform_decode).outcomes()
            for d, (path, size) in zip(outcomes, expected["outcomes"], strict=True):
                kit = (str(d.path), d.graph_size if d.path.replays else None)
                assert kit == (path, size), (vector, step.name, d)
                checked += 1
                eager += path == "eager"
                graphs += path != "eager"
    # every release's sample reaches graphs and eager draft steps, on each runner it has
    assert len(vectors) >= 100 and checked > 5000 and eager > 500 and graphs > 2000
    assert {v["model_runner"] for v in vectors} == set(policy.model_runners)


def test_every_releases_mtp_model_types_normalise_to_mtp():
    lists = DATA["mtp_model_types"]
    assert set(lists) == {r.removeprefix("vllm-") for r in RELEASES}
    assert set().union(*map(set, lists.values())) == set(MTP_MODEL_TYPES)
    for names in lists.values():
        assert all(
            SizingConfig(4, 1, speculative_method=n).speculative_method == "mtp" for n in names
        )
