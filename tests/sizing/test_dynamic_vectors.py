"""Dynamic speculative decoding (num_speculative_tokens_per_batch_size) against
data/vllm_dynamic_vectors.json: what the released wheels' own code (scripts/make_dynamic_vectors.py:
0.24.0 to 0.33.0, one release inside each range of identical code and the ranges' ends) does with
each seeded schedule, on each release's mapped engine: the mode `_maybe_override_dynamic_sd_
cudagraph_mode` leaves and its WARNING, the capture list, model runner V2's FULL graphs per query
length, and every verify batch of B = 1..S requests at the scheduler's 1 + k(B)."""

import json
from pathlib import Path

import pytest

from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import graph_families, verify_batches
from graphlab.sizing.engines import get_engine
from graphlab.sizing.model_runner import choose_model_runner
from graphlab.sizing.versions import engine_for_version

DATA = json.loads(
    (Path(__file__).resolve().parents[2] / "data" / "vllm_dynamic_vectors.json").read_text()
)
RELEASES = sorted({v["engine"] for v in DATA["vectors"]})
# speculative_config.method values of 0.33.0 (scripts/make_sizing_vectors.py's list)
SPECULATIVE_METHODS = (
    "ngram", "ngram_gpu", "eagle", "eagle3", "mtp", "draft_model", "suffix", "medusa",
    "mlp_speculator", "custom_class", "dflash", "dspark", "extract_hidden_states",
)  # fmt: skip


def _config(vector):
    sizes = vector["cudagraph_capture_sizes"]
    return SizingConfig(
        vector["max_num_seqs"],
        vector["num_speculative_tokens"],
        cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
        cudagraph_mode=vector["cudagraph_mode"],
        model_runner=vector["model_runner"],
        num_speculative_tokens_per_batch_size=vector["num_speculative_tokens_per_batch_size"],
    )


def test_the_vectors_cover_every_release_with_the_option_on_both_runners():
    assert [r.removeprefix("vllm-") for r in RELEASES] == list(DATA["provenance"]["wheels"])
    for release in RELEASES:
        runners = {v["model_runner"] for v in DATA["vectors"] if v["engine"] == release}
        assert runners == {"v1", "v2"}, release


@pytest.mark.parametrize("release", RELEASES)
def test_dynamic_speculation_matches_the_wheels_own_code(release):
    engine = engine_for_version(release.removeprefix("vllm-"))
    policy = get_engine(engine)
    assert policy.models_dynamic_speculation
    vectors = [v for v in DATA["vectors"] if v["engine"] == release]
    batches = full = several = 0
    for vector in vectors:
        cfg = _config(vector)
        assert str(policy.cudagraph_mode(cfg)) == vector["resolved_mode"], vector
        assert list(policy.sizing_warnings(cfg)) == vector["warnings"], vector
        assert list(policy.capture_sizes(cfg)) == vector["capture_sizes"], vector
        families = graph_families(engine, cfg)
        if vector["model_runner"] == "v2":
            kit = sorted(
                [list(g) for g in families.full_graphs]
                or [[n, cfg.decode_query_len] for n in families.full_sizes]
            )
            assert kit == vector["full_graphs"], vector
            several += len(families.full_query_lens) > 1
        rows = verify_batches(engine, cfg)
        assert [[r["path"], r["graph_size"]] for r in rows] == vector["verify"], vector
        batches += len(rows)
        full += sum(r["path"] == "full" for r in rows)
    # each release's sample reaches FULL graphs at several query lengths and many batches
    assert len(vectors) >= 50 and batches > 2000
    assert (full > 100 and several >= 2) == (release != "vllm-0.24.0"), (full, several)


def test_auto_picks_the_runner_that_takes_a_schedule():
    # the wheel's own _get_v2_model_runner_unsupported_features: 0.24.0 alone refuses it on V2
    for release, takes in DATA["v2_takes_dynamic_speculation"].items():
        runner, why = choose_model_runner(release, "auto", "eagle", True)
        assert runner == ("v2" if takes else "v1"), (release, why)
        assert takes or "dynamic speculative decoding" in why
    assert not DATA["v2_takes_dynamic_speculation"]["0.24.0"]


def test_an_entry_above_k_leaves_0_25_verify_batches_without_their_full_graphs():
    # 0.25.0 to 0.28.x capture FULL graphs at 1 + k of each entry as written (4 here) while the
    # scheduler clamps it to k = 2: every verify batch of 3 tokens a request finds no FULL
    # graph at its length, and FULL_DECODE_ONLY has no mixed graphs to fall back on
    vector = next(
        v
        for v in DATA["vectors"]
        if v["engine"] == "vllm-0.25.0"
        and v["num_speculative_tokens_per_batch_size"] == [[1, 8, 3]]
    )
    assert (vector["model_runner"], vector["cudagraph_mode"]) == ("v2", "FULL_DECODE_ONLY")
    assert {q for _, q in vector["full_graphs"]} == {4}
    assert {tuple(o) for o in vector["verify"]} == {("eager", None)}
    cfg = _config(vector)
    assert {r["path"] for r in verify_batches("vllm-0.25.0", cfg)} == {"eager"}
    assert {r["path"] for r in verify_batches("vllm-0.29.0", cfg)} == {"full"}


def test_a_method_0_33_0_drops_the_schedule_of_is_refused_on_vllm_0_33_0_alone():
    # the wheel's own _maybe_disable_dynamic_sd_for_v1: only 0.33.0 has it, and vllm-0.33.0
    # models 0.32.0 too, which keeps the schedule
    drops = DATA["v1_drops_schedule_for"]
    assert [r for r, methods in drops.items() if methods] == ["0.33.0"]
    schedule = ((1, 8, 1), (9, 64, 2))
    for method in SPECULATIVE_METHODS:
        cfg = SizingConfig(
            64,
            2,
            model_runner="v1",
            speculative_method=method,
            num_speculative_tokens_per_batch_size=schedule,
        )
        for engine in ("vllm-0.31.0", "vllm-0.29.0", "vllm-0.25.0"):
            assert get_engine(engine).capture_sizes(cfg)
        if method in drops["0.33.0"]:
            with pytest.raises(GraphlabError, match=r"0\.33\.0's _maybe_disable_dynamic_sd_for_v1"):
                get_engine("vllm-0.33.0").capture_sizes(cfg)
        else:
            assert get_engine("vllm-0.33.0").capture_sizes(cfg)
