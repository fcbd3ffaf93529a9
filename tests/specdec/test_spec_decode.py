"""Speculative decoding on the V0-shaped runner: exactness, the scorer's batches, the repro
command."""

import json

import numpy as np
import pytest
import torch
from helpers import ALPHA, chi_square

from graphlab.bench.spec_decode import spec_decode_benchmark
from graphlab.cli import main
from graphlab.engine.config import ModelConfig
from graphlab.errors import GraphlabError
from graphlab.sizing.batches import reachable_batch_sizes
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine, pad0
from graphlab.specdec.drafts import DRAFT_KINDS, build_draft, build_target
from graphlab.specdec.engine import SCORERS, SpecDecodeConfig, SpecDecodeEngine, run_speculative
from graphlab.specdec.prefill import prefill
from graphlab.specdec.requests import (
    Request,
    RequestLoad,
    coverage_requests,
    load_requests,
    make_requests,
)

MAX_MODEL_LEN = 32
MAX_NUM_SEQS = 4


@pytest.fixture(scope="module")
def target():
    return build_target("tiny", seed=0)


@pytest.fixture(scope="module")
def drafts(target):
    return {kind: build_draft(target, kind, seed=1) for kind in DRAFT_KINDS}


@pytest.fixture(scope="module")
def load(target):
    return make_requests(8, MAX_NUM_SEQS, 16, MAX_MODEL_LEN, target.config.vocab_size, seed=3)


def generate(target, draft, requests, k, **config):
    sizing = SizingConfig(config.pop("max_num_seqs", MAX_NUM_SEQS), k)
    config = SpecDecodeConfig(
        sizing, max_model_len=config.pop("max_model_len", MAX_MODEL_LEN), **config
    )
    return SpecDecodeEngine(target, draft, config).generate(requests)


@pytest.fixture(scope="module")
def runs(target, drafts, load):
    """generate() with k = 3 on the shared load, memoized by (draft kind, engine, scorer)."""
    cache = {}

    def run(kind, engine="vllm-0.6.0", scorer="batch-expansion"):
        if (kind, engine, scorer) not in cache:
            cache[kind, engine, scorer] = generate(
                target, drafts[kind], load, k=3, engine=engine, scorer=scorer
            )
        return cache[kind, engine, scorer]

    return run


def greedy_without_cache(model, prompt, max_tokens):
    """Target-only greedy decoding recomputing the whole sequence each token (no KV reuse)."""
    model.allocate_kv_cache(1, MAX_MODEL_LEN)
    tokens = list(prompt)
    for _ in range(max_tokens):
        ids = torch.tensor([tokens])
        logits = model(ids, torch.arange(len(tokens))[None], torch.tensor([0]))
        tokens.append(int(logits[0, -1].argmax()))
    return tokens[len(prompt) :]


@pytest.fixture(scope="module")
def reference(target, load):
    return generate(target, None, load, k=0).outputs


def test_plain_decoding_matches_a_cache_free_reference(target, load, reference):
    for request, tokens in list(zip(load, reference))[:3]:
        assert tokens == greedy_without_cache(target, request.prompt_token_ids, request.max_tokens)


def test_zero_speculative_tokens_is_plain_decoding(target, load):
    out = generate(target, None, load, k=0)
    decode = out.steps_frame().query("kind == 'decode'")
    assert (decode.batch_size == decode.num_seqs).all() and (decode.num_speculating == 0).all()
    assert out.metrics.num_draft_tokens == 0 and np.isnan(out.metrics.draft_acceptance_rate)
    assert (decode.draft_batch_size == 0).all() and decode.draft_path.isna().all()


@pytest.mark.parametrize("engine", ["vllm-0.6.0", "adaptive"])
@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("kind", DRAFT_KINDS)
def test_greedy_speculative_decoding_equals_target_greedy(runs, reference, engine, scorer, kind):
    out = runs(kind, engine, scorer)
    assert out.outputs == reference
    if kind == "target":
        assert out.metrics.num_accepted_tokens == out.metrics.num_draft_tokens


def test_vllm_055_without_a_crashing_batch_equals_target_greedy(target, drafts, load, reference):
    # k = 1 and at most 4 sequences: n <= 8, always a captured size (1, 2, 4, 8).
    few = load[:4]
    out = generate(target, drafts["truncated"], few, k=1, engine="vllm-0.5.5", max_num_seqs=8)
    assert out.outputs == reference[:4]
    decode = out.steps_frame().query("kind == 'decode'")
    assert (decode.path == "graph").all() and decode.batch_size.max() == 8
    assert (decode.draft_path.dropna() == "graph").all() and decode.draft_batch_size.max() <= 8


def test_acceptance_orders_the_drafts(runs):
    metrics = {kind: runs(kind).metrics for kind in DRAFT_KINDS}
    lengths = {kind: m.mean_acceptance_length for kind, m in metrics.items()}
    rates = {kind: m.draft_acceptance_rate for kind, m in metrics.items()}
    assert lengths["target"] == 4.0 > lengths["truncated"] > lengths["random"]
    assert rates["target"] == 1.0 > rates["truncated"] > rates["random"]
    assert metrics["truncated"].num_accepted_tokens > 0.1 * metrics["truncated"].num_draft_tokens


def test_batch_expansion_rows_and_mqa_rows(runs):
    k = 3
    steps = {
        scorer: runs("truncated", scorer=scorer).steps_frame().query("kind == 'decode'")
        for scorer in SCORERS
    }
    expanded = steps["batch-expansion"]
    b_s, b_0 = expanded.num_speculating, expanded.num_seqs - expanded.num_speculating
    assert (expanded.batch_size == b_s * (k + 1) + b_0).all()
    # The load mixes speculating and plain sequences in one step (sequences near max_model_len).
    assert ((b_s > 0) & (b_0 > 0)).any()
    assert (steps["mqa"].batch_size == steps["mqa"].num_seqs).all()
    assert (steps["mqa"].path == "eager").all()
    # Guard: batches past the largest captured size (4) run eagerly, smaller ones replay graphs.
    assert (expanded.path == np.where(expanded.batch_size <= 4, "graph", "eager")).all()


def test_adaptive_graphs_every_scorer_batch(runs):
    decode = runs("truncated", "adaptive").steps_frame().query("kind == 'decode'")
    assert (decode.path == "graph").all()
    assert decode.batch_size.max() == MAX_NUM_SEQS * 4


def test_vllm_055_raises_the_engines_key_error(target, drafts, load):
    # All 4 sequences speculate in the first decode step: n = 4 * 5 = 20, padded to 24.
    with pytest.raises(KeyError) as error:
        generate(target, drafts["truncated"], load, k=4, engine="vllm-0.5.5")
    assert error.value.args == (24,)


# The drafts differ in acceptance (1, partial, near 0) and one run samples: the coverage load's
# steps must not depend on either.
@pytest.mark.parametrize(
    "max_num_seqs, k, engine, kind, temperature",
    [
        (8, 4, "vllm-0.6.0", "truncated", 0.0),
        (5, 2, "adaptive", "random", 1.0),
        (12, 3, "vllm-0.6.0", "target", 0.0),
        (12, 3, "adaptive", "truncated", 0.0),
        (3, 0, "vllm-0.6.0", None, 0.0),
    ],
)
def test_coverage_load_reaches_every_scorer_batch_size(
    target, drafts, max_num_seqs, k, engine, kind, temperature
):
    requests = coverage_requests(
        SizingConfig(max_num_seqs, k), MAX_MODEL_LEN, target.config.vocab_size, seed=1
    )
    out = generate(
        target,
        drafts.get(kind),
        requests,
        k,
        engine=engine,
        max_num_seqs=max_num_seqs,
        temperature=temperature,
    )
    decode = out.steps_frame().query("kind == 'decode'")
    reachable = reachable_batch_sizes(get_engine(engine), SizingConfig(max_num_seqs, k)).tolist()
    # Each reachable size once, ascending, through V0's rule: no proposals near max_model_len.
    assert decode.batch_size.tolist() == reachable
    b_s = decode.num_speculating
    assert (decode.batch_size == b_s * (k + 1) + decode.num_seqs - b_s).all()
    assert decode.num_seqs.max() <= max_num_seqs
    assert [len(o) for o in out.outputs] == [2] * len(requests)
    largest_graph = pad0(max_num_seqs * (k + 1) if engine == "adaptive" else max_num_seqs)
    assert (decode.path == np.where(decode.batch_size <= largest_graph, "graph", "eager")).all()


def test_coverage_load_under_vllm_055_crashes_at_the_first_uncaptured_size(target, drafts):
    # Captured 1, 2, 4, 8; sizes climb 1, 2, ..., and n = 9 looks up 16.
    requests = load_requests(
        RequestLoad("coverage"), SizingConfig(8, 4), MAX_MODEL_LEN, target.config.vocab_size
    )
    with pytest.raises(KeyError) as error:
        generate(target, drafts["truncated"], requests, k=4, engine="vllm-0.5.5", max_num_seqs=8)
    assert error.value.args == (16,)


def test_coverage_load_rejects_a_max_model_len_without_room_for_proposals():
    with pytest.raises(GraphlabError, match="max_model_len"):
        coverage_requests(SizingConfig(4, 4), 6, 512)
    with pytest.raises(GraphlabError, match="load"):
        RequestLoad("bursty")


def test_draft_kinds_share_or_do_not_share_the_target_weights(target, drafts):
    embed = target.model.embed_tokens.weight
    truncated = drafts["truncated"]
    assert truncated.config.num_hidden_layers == 1
    assert torch.equal(
        truncated.model.layers[0].mlp.gate_up_proj.weight,
        target.model.layers[0].mlp.gate_up_proj.weight,
    )
    assert torch.equal(truncated.lm_head.weight, target.lm_head.weight)
    assert torch.equal(drafts["target"].model.embed_tokens.weight, embed)
    assert drafts["target"] is not target
    assert not torch.equal(drafts["random"].model.embed_tokens.weight, embed)


@pytest.mark.parametrize(
    "bad",
    [
        dict(num_speculative_tokens=-1),
        dict(scorer="tree"),
        dict(engine="sglang"),
        dict(engine="vllm-0.13.0", scorer="batch-expansion"),
        dict(proposer_engine="sglang"),
        dict(engine="vllm-0.33.0", proposer_engine="vllm-0.33.0"),
        dict(temperature=-0.5),
        dict(max_num_seqs=0),
    ],
)
def test_bad_configs_fail_clearly(bad):
    sizing = {
        name: bad.pop(name) for name in ("max_num_seqs", "num_speculative_tokens") if name in bad
    }
    with pytest.raises(GraphlabError):
        SpecDecodeConfig(
            SizingConfig(**{"max_num_seqs": 4, "num_speculative_tokens": 2, **sizing}), **bad
        )


def test_spec_decode_config_holds_a_sizing_config():
    with pytest.raises(GraphlabError, match="sizing must be a graphlab.SizingConfig, got 8"):
        SpecDecodeConfig(8)
    config = SpecDecodeConfig(SizingConfig(8, 4), engine="vllm-0.33.0")
    assert (config.proposer_engine, config.scorer) == ("vllm-0.6.0", "mqa")
    assert config == SpecDecodeConfig(SizingConfig(8, 4), engine="vllm-0.33.0", scorer="mqa")


def test_draft_with_another_vocabulary_is_rejected(target):
    other = build_target(
        ModelConfig(
            vocab_size=256,
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=1,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=128,
        )
    )
    with pytest.raises(GraphlabError, match="vocab"):
        SpecDecodeEngine(target, other, SpecDecodeConfig(SizingConfig(4, 2)))
    with pytest.raises(GraphlabError, match="draft"):
        SpecDecodeEngine(target, None, SpecDecodeConfig(SizingConfig(4, 2)))


def test_requests_longer_than_max_model_len_are_rejected(target, drafts):
    config = SpecDecodeConfig(SizingConfig(2, 2), max_model_len=16)
    engine = SpecDecodeEngine(target, drafts["truncated"], config)
    with pytest.raises(GraphlabError, match="max_model_len"):
        engine.generate([Request((1, 2, 3), 14)])


# ---- stochastic: through the model, on a 16-token vocabulary ----------------------------


# 0.5: the target's probabilities must be taken at the run's temperature, as the draft's are.
@pytest.mark.parametrize("temperature", [1.0, 0.5])
def test_sampled_speculative_tokens_follow_the_target_distribution(temperature):
    config = ModelConfig(
        vocab_size=16,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=64,
    )
    model = build_target(config, seed=5, weight_std=0.3)
    draft = build_draft(model, "truncated")
    prompt, trials, k = (3, 7, 1), 3000, 2
    # t1 comes from the prefill; t2 and t3 from speculative rounds (accepted drafts, resampled or
    # bonus tokens): each must follow the target's own marginal.
    out = generate(
        model,
        draft,
        [Request(prompt, 3)] * trials,
        k=k,
        temperature=temperature,
        max_num_seqs=64,
        max_model_len=16,
        seed=11,
    )
    assert 0.2 < out.metrics.num_accepted_tokens / out.metrics.num_draft_tokens < 0.95
    tokens = np.array(out.outputs)
    # Exact marginals of t2 and t3 under the target alone: enumerate t1, t2 (16 x 16 rows).
    model.allocate_kv_cache(256, 16)
    t1, t2 = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    seqs = torch.tensor([list(prompt) + [a, b] for a, b in zip(t1.ravel(), t2.ravel())])
    with torch.no_grad():
        logits = model(seqs, torch.arange(5).expand(256, -1), torch.arange(256))
    probs = (logits / temperature).softmax(-1)
    p1 = probs[0, 2]  # t1 | prompt
    p2 = probs[::16, 3]  # t2 | prompt, t1  [16, 16]
    p3 = probs[:, 4].view(16, 16, 16)  # t3 | prompt, t1, t2
    marginal_2 = (p1[:, None] * p2).sum(0)
    marginal_3 = (p1[:, None, None] * p2[:, :, None] * p3).sum((0, 1))
    assert chi_square(np.bincount(tokens[:, 0], minlength=16), p1.numpy()) > ALPHA
    assert chi_square(np.bincount(tokens[:, 1], minlength=16), marginal_2.numpy()) > ALPHA
    assert chi_square(np.bincount(tokens[:, 2], minlength=16), marginal_3.numpy()) > ALPHA


# ---- the repro command --------------------------------------------------------------------


def test_repro_ends_in_key_error_40(capsys):
    status = main(
        [
            "repro",
            "--max-num-seqs",
            "8",
            "--num-speculative-tokens",
            "4",
            "--engine",
            "vllm-0.5.5",
            "--device",
            "cpu",
            "--num-requests",
            "8",
        ]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err[0] == "Traceback (most recent call last):" and err[-1] == "KeyError: 40"


def test_repro_with_a_vllm_055_proposer_ends_in_the_draft_runners_key_error(capsys):
    # The scorer has graphs up to 40 rows; a later step drafts 9..16 rows (bonus copies).
    status = main(
        ["repro", "--engine", "adaptive", "--proposer-engine", "vllm-0.5.5", "--device", "cpu"]
    )
    captured = capsys.readouterr()
    assert status == 1 and captured.err.strip().splitlines()[-1] == "KeyError: 16"
    assert "in propose" in captured.err and "draft (truncated, vllm-0.5.5)" in captured.out


@pytest.mark.parametrize("engine", ["vllm-0.6.0", "adaptive"])
def test_repro_completes_with_the_fixed_engines(capsys, engine):
    status = main(
        [
            "repro",
            "--engine",
            engine,
            "--device",
            "cpu",
            "--num-requests",
            "8",
            "--max-tokens",
            "12",
            "--max-model-len",
            "32",
        ]
    )
    out = capsys.readouterr().out
    assert status == 0
    assert "vLLM V1 counts: num_drafts" in out and "vLLM V0 metrics: draft_acceptance_rate" in out
    # (n, path, graph) of each decode row of the table.
    rows = {tuple(line.split()[4:7]) for line in out.splitlines() if " decode " in line}
    assert ("40", "eager", "-") in rows or ("40", "graph", "40") in rows
    assert (("40", "graph", "40") in rows) == (engine == "adaptive")


def test_repro_labels_the_mqa_scorer_with_its_vllm_version(capsys):
    assert (
        main(
            [
                "repro",
                "--engine",
                "vllm-0.6.0",
                "--scorer",
                "mqa",
                "--device",
                "cpu",
                "--num-requests",
                "4",
                "--max-tokens",
                "4",
                "--max-model-len",
                "24",
            ]
        )
        == 0
    )
    assert "MQAScorer" in capsys.readouterr().out and "not in vllm-0.5.5 or 0.6.0" in SCORERS["mqa"]
    with pytest.raises(SystemExit):
        main(["repro", "--help"])
    assert "first in vLLM 0.6.3" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["--engine", "sglang"],
        ["--max-num-seqs", "0"],
        ["--num-speculative-tokens", "-1"],
        ["--temperature", "-1"],
        ["--draft", "medusa"],
        ["--policy", "vllm-0.6.0"],
    ],
)
def test_repro_bad_input_exits_2_with_one_line(capsys, argv):
    assert main(["repro", "--device", "cpu", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_run_speculative_builds_both_models_in_the_dtype(dtype):
    config = SpecDecodeConfig(SizingConfig(2, 2), max_model_len=24)
    engine, output = run_speculative(
        config, RequestLoad(num_requests=2, max_tokens=3), device="cpu", dtype=dtype
    )
    assert engine.target.dtype == engine.proposer.model.dtype == getattr(torch, dtype)
    assert len(output.outputs) == 2 and all(output.outputs)  # both requests generated


def test_benchmark_rows_on_cpu():
    load = RequestLoad(num_requests=4, max_tokens=8)
    runs = [
        (SpecDecodeConfig(SizingConfig(4, 2), engine=engine, max_model_len=32), load)
        for engine in ("vllm-0.6.0", "adaptive")
    ]
    rows = spec_decode_benchmark(runs, device="cpu")
    by_engine = {r["engine"]: r for r in rows}
    guard, adaptive = by_engine["vllm-0.6.0"], by_engine["adaptive"]
    assert adaptive["scorer_graph_fraction"] == 1.0 > guard["scorer_graph_fraction"]
    assert adaptive["target_graph_memory_bytes"] > guard["target_graph_memory_bytes"] > 0
    assert guard["memory_kind"] == "predicted" and guard["backend"] == "cpu-emulated"
    # The same load and greedy decoding: the same acceptance under both engines.
    for name in (
        "num_accepted_tokens",
        "num_accepted_tokens_per_pos",
        "accepted_tokens",
        "num_emitted_tokens",
        "system_efficiency",
    ):
        assert guard[name] == adaptive[name], name
    assert guard["tokens_per_s"] > 0 and guard["proposer_engine"] == "vllm-0.6.0"
    # V0 counts every accepted position, V1 the accepted prefix.
    assert guard["accepted_tokens"] >= guard["num_accepted_tokens"]
    # All 4 sequences draft in the first decode step; bonus copies can double that.
    assert 4 <= guard["max_draft_batch_size"] <= 8


def test_acceptance_counts_follow_from_the_greedy_text_and_the_v0_rule(target, drafts, load):
    from graphlab.against_vllm.crosscheck import replay_greedy_counts

    # The proposer's widened batches keep the draft cache exact: its drafts are the draft's
    # argmax after the true prefix, as the replay assumes.
    out = generate(target, drafts["truncated"], load, k=3)
    counts = out.metrics.as_dict()
    three = SpecDecodeConfig(SizingConfig(MAX_NUM_SEQS, 3), max_model_len=MAX_MODEL_LEN)
    replayed = {
        rule: replay_greedy_counts(target, drafts["truncated"], load, three, rule)
        for rule in ("v0", "v1")
    }
    assert all(replayed["v0"][name] == counts[name] for name in replayed["v0"])
    # Half the load runs into max_model_len, where vLLM V1's shortened proposals count differently.
    assert replayed["v1"]["num_drafts"] > replayed["v0"]["num_drafts"]
    assert (out.steps_frame().draft_batch_size > out.steps_frame().num_speculating).any()


def test_step_records_add_up_to_the_totals(runs, load):
    out = runs("truncated")
    frame = out.steps_frame()
    m = out.metrics
    assert frame.num_draft_tokens.sum() == m.num_draft_tokens
    assert frame.num_accepted_tokens.sum() == m.num_accepted_tokens
    assert frame.accepted_tokens.sum() == m.accepted_tokens > m.num_accepted_tokens
    decode = frame[frame.num_speculating > 0]
    assert (
        np.array(decode.num_accepted_tokens_per_pos.tolist()).sum(0).tolist()
        == m.num_accepted_tokens_per_pos.tolist()
    )
    assert frame.num_generation_tokens.sum() == sum(r.max_tokens for r in load)


# ---- the proposer's batches (V0 MultiStepWorker) --------------------------------------------


def test_bonus_sequences_widen_every_draft_step(target, drafts):
    # A copy of the target as draft: every greedy draft is accepted, so from the second decode
    # step on each speculating sequence had a bonus token and gets a copy: 2 * B_s rows.
    requests = [Request((5 + i, 9, 2), 20) for i in range(3)]
    out = generate(target, drafts["target"], requests, k=2, max_model_len=40)
    decode = out.steps_frame().query("kind == 'decode' and num_speculating > 0")
    assert decode.draft_batch_size.iloc[0] == 3
    assert (decode.draft_batch_size.iloc[1:] == 2 * decode.num_speculating.iloc[1:]).all()
    # A draft that is never fully accepted never widens.
    out = generate(target, drafts["random"], requests, k=2, max_model_len=40)
    decode = out.steps_frame().query("kind == 'decode' and num_speculating > 0")
    assert (decode.draft_batch_size >= decode.num_speculating).all()
    assert (decode.draft_batch_size <= 2 * decode.num_speculating).all()


def test_vllm_055_draft_runner_raises_its_own_key_error(target, drafts, load):
    # Scorer on adaptive graphs (8 * 5 = 40 rows captured); draft sized by vllm-0.5.5 to
    # max_num_seqs: 1, 2, 4, 8. The first decode step drafts 8 rows; after full acceptance the
    # next step drafts 8 + 8 = 16 rows and the draft runner looks up graph 16.
    requests = [Request((3 + i, 7), 20) for i in range(8)]
    config = dict(k=4, engine="adaptive", max_num_seqs=8, max_model_len=40)
    with pytest.raises(KeyError) as error:
        generate(target, drafts["target"], requests, proposer_engine="vllm-0.5.5", **config)
    assert error.value.args == (16,)
    # vllm-0.6.0's guard runs those draft steps eagerly.
    out = generate(target, drafts["target"], requests, proposer_engine="vllm-0.6.0", **config)
    decode = out.steps_frame().query("kind == 'decode' and num_speculating > 0")
    assert decode.draft_batch_size.tolist()[:2] == [8, 16]
    assert decode.draft_path.tolist()[:2] == ["graph", "eager"]
    assert (decode.path == "graph").all()


# ---- MQA scorer: one forward, plain rows padded harmlessly ---------------------------------


def _count_forwards(model, monkeypatch) -> list:
    calls = []
    forward = model.forward

    def counted(*args):
        calls.append(args[0].shape)
        return forward(*args)

    monkeypatch.setattr(model, "forward", counted)
    return calls


def test_mqa_scores_speculating_and_plain_sequences_in_one_forward(target, drafts, monkeypatch):
    # Two requests run into max_model_len: their last steps are plain rows with seq_len + k >=
    # max_model_len, decoded beside speculating ones; their k padding positions reach past
    # max_model_len.
    k, max_len = 3, 24
    requests = [
        Request((1, 2, 3), 21),
        Request((4, 5), 22),
        Request((6, 7, 8), 6),
        Request((9, 10), 9),
    ]
    caches = {}
    for scorer in SCORERS:
        engine = SpecDecodeEngine(
            target,
            drafts["truncated"],
            SpecDecodeConfig(SizingConfig(MAX_NUM_SEQS, k), scorer=scorer, max_model_len=max_len),
        )
        engine.capture_model()
        calls = _count_forwards(target, monkeypatch)
        out = engine.generate(requests)
        monkeypatch.undo()
        steps = out.steps_frame()
        caches[scorer] = [(key.clone(), value.clone()) for key, value in target.kv_cache()]
        if scorer == "mqa":
            # One target forward per step: the prefill (prompts within 2x of each other), or
            # one MQA scoring pass.
            assert len(calls) == len(steps)
            decode = steps.query("kind == 'decode'")
            mixed = decode[
                (decode.num_speculating > 0) & (decode.num_speculating < decode.num_seqs)
            ]
            assert len(mixed) > 0 and (decode.batch_size == decode.num_seqs).all()
            assert all(shape[1] == k + 1 for shape in calls[-len(decode) :])
            assert target.max_seq_len == max_len + k
    assert out.outputs == generate(target, None, requests, 0, max_model_len=max_len).outputs
    # Every real token's K/V (positions before each request's last token; slot i = request i)
    # equals what the batch-expansion scorer wrote.
    for (k_mqa, v_mqa), (k_be, v_be) in zip(caches["mqa"], caches["batch-expansion"]):
        for slot, request in enumerate(requests):
            length = len(request.prompt_token_ids) + request.max_tokens - 1
            torch.testing.assert_close(k_mqa[slot, :, :length], k_be[slot, :, :length])
            torch.testing.assert_close(v_mqa[slot, :, :length], v_be[slot, :, :length])


# ---- prefill: prompts of similar length in one forward --------------------------------------


def test_prefill_pads_prompts_of_similar_length_into_one_forward(target, monkeypatch):
    prompts, slots = [[1, 2, 3, 4, 5], [6, 7, 8], list(range(9, 21)), [1, 1, 2, 3]], [2, 0, 3, 1]
    target.allocate_kv_cache(4, MAX_MODEL_LEN)
    calls = _count_forwards(target, monkeypatch)
    logits = prefill(target, prompts, slots)
    # Lengths 3, 4, 5 share a forward (padded to 5); 12 is over twice 3 and gets its own.
    assert calls == [torch.Size([3, 5]), torch.Size([1, 12])]
    grouped = [(key.clone(), value.clone()) for key, value in target.kv_cache()]
    monkeypatch.undo()
    target.allocate_kv_cache(4, MAX_MODEL_LEN)
    for row, (prompt, slot) in enumerate(zip(prompts, slots)):
        alone = target(
            torch.tensor([prompt]), torch.arange(len(prompt))[None], torch.tensor([slot])
        )[0, -1]
        torch.testing.assert_close(logits[row], alone)
        for (key, value), (key_1, value_1) in zip(grouped, target.kv_cache()):
            torch.testing.assert_close(key[slot, :, : len(prompt)], key_1[slot, :, : len(prompt)])
            torch.testing.assert_close(
                value[slot, :, : len(prompt)], value_1[slot, :, : len(prompt)]
            )


# ---- what the draft batches, admission and defaults promise ---------------------------------


def test_draft_batches_hold_one_row_per_speculating_sequence_without_bonus_tokens(target, drafts):
    # A random draft is rarely accepted whole: after a round where no sequence accepted all k, no
    # sequence carries a bonus token into the draft step, so the draft batch is exactly the
    # speculating sequences; each sequence that did accept all k adds one row (V0's bonus copy).
    requests = [Request((5 + i, 9, 2), 20) for i in range(3)]
    out = generate(target, drafts["random"], requests, k=2, max_model_len=40)
    decode = out.steps_frame().query("kind == 'decode' and num_speculating > 0")
    all_accepted = decode.num_accepted_tokens_per_pos.str[-1].shift(fill_value=0)
    same = decode.num_seqs == decode.num_seqs.shift(fill_value=decode.num_seqs.iloc[0])
    assert ((all_accepted == 0) & same).sum() >= 10
    assert (decode.draft_batch_size == decode.num_speculating + all_accepted)[same].all()
    # A copy of the target proposes what the target picks: all proposals of all rounds are accepted.
    out = generate(target, drafts["target"], requests, k=2, max_model_len=40)
    decode = out.steps_frame().query("kind == 'decode' and num_speculating > 0")
    assert (decode.num_accepted_tokens == decode.num_draft_tokens).all()
    assert (decode.num_accepted_tokens == 2 * decode.num_speculating).all()


def test_first_requests_are_prefilled_at_step_zero(target, drafts):
    requests = [Request((5 + i, 9, 2), 4, arrival_step=0) for i in range(2)] + [
        Request((7, 7), 4, 3)
    ]
    frame = generate(target, drafts["target"], requests, k=2, max_model_len=40).steps_frame()
    prefills = frame[frame.kind == "prefill"]
    assert prefills.step.tolist()[:2] == [0, 3] and prefills.num_seqs.tolist()[:2] == [2, 1]


def test_mixed_load_admits_max_num_seqs_requests_at_step_zero():
    for max_num_seqs in (1, 3, 8):
        requests = make_requests(20, max_num_seqs, 8, 64, 100, seed=1)
        assert [r.arrival_step for r in requests].count(0) == max_num_seqs


def test_v1_engines_draft_on_the_guarded_v0_runner_by_default():
    # vLLM V1 has no V0 draft runner: its draft stays on 0.6.0's guarded sizing (never a crash).
    assert (
        SpecDecodeConfig(SizingConfig(8, 4), engine="vllm-0.33.0").proposer_engine == "vllm-0.6.0"
    )
    assert SpecDecodeConfig(SizingConfig(8, 4), engine="vllm-0.5.5").proposer_engine == "vllm-0.5.5"


@pytest.mark.parametrize(
    "temperature", ["0", 1e-300, 1e-45, 0.005, float("inf"), float("nan"), 2.5, -1.0, True]
)
def test_temperature_outside_vllms_range_is_refused(temperature):
    from graphlab.specdec.records import MAX_TEMPERATURE, MIN_TEMPERATURE

    with pytest.raises(
        GraphlabError,
        match=f"0 \\(greedy\\) or a number in {MIN_TEMPERATURE:g}..{MAX_TEMPERATURE:g}",
    ):
        SpecDecodeConfig(SizingConfig(8, 4), temperature=temperature)


@pytest.mark.parametrize("temperature", ["1e-300", "1e-45", "inf"])
def test_repro_refuses_a_temperature_outside_vllms_range(capsys, temperature):
    assert main(["repro", "--temperature", temperature, "--device", "cpu"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and f"temperature={float(temperature)!r}" in err


def test_repro_help_states_the_temperature_range_and_the_token_bound(capsys):
    from graphlab.cli.arguments import REPRO_MAX_TOKENS
    from graphlab.specdec.records import MAX_TEMPERATURE, MIN_TEMPERATURE

    with pytest.raises(SystemExit):
        main(["repro", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert (
        f"{MIN_TEMPERATURE:g}..{MAX_TEMPERATURE:g}" in text
        and f"at most {REPRO_MAX_TOKENS}" in text
    )
    # 17 x 1024 = 17408 tokens: just past the bound.
    assert main(["repro", "--num-requests", "17", "--max-model-len", "1024"]) == 2
    assert f"= 17408 tokens; at most {REPRO_MAX_TOKENS}" in capsys.readouterr().err


def test_repro_json_counts_plain_rows_once(capsys):
    # The default mixed load: odd requests run into max_model_len, so late steps hold plain rows.
    argv = [
        "--engine",
        "vllm-0.33.0",
        "--device",
        "cpu",
        "--num-requests",
        "8",
        "--max-tokens",
        "12",
        "--max-model-len",
        "32",
    ]
    assert main(["repro", *argv, "--json"]) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    config = SpecDecodeConfig(SizingConfig(8, 4), engine="vllm-0.33.0", max_model_len=32)
    _, output = run_speculative(
        config, RequestLoad(num_requests=8, max_tokens=12), device="cpu", log=None
    )
    frame = output.steps_frame().query("kind == 'decode'")
    assert (frame.num_speculating < frame.num_seqs).any()
    assert [s["num_tokens"] for s in steps] == (frame.num_seqs + 4 * frame.num_speculating).tolist()
    assert [s["num_tokens"] for s in steps] == frame.batch_size.tolist()  # V1 rows count tokens


def test_report_counts_v1_full_and_piecewise_steps_as_graphs(capsys):
    # V1 steps replay "full" or "piecewise" graphs; the report's graph count must include both.
    argv = ["repro", "--engine", "vllm-0.33.0", "--device", "cpu", "--num-requests", "8"]
    assert main([*argv, "--max-tokens", "12", "--max-model-len", "32"]) == 0
    out = capsys.readouterr().out
    assert main([*argv, "--max-tokens", "12", "--max-model-len", "32", "--json"]) == 0
    paths = [s["path"] for s in json.loads(capsys.readouterr().out)["steps"]]
    graphs, eager = sum(p != "eager" for p in paths), paths.count("eager")
    assert graphs > 0 and {"full", "piecewise"} & set(paths)
    assert f"decode steps: {len(paths)}, on graphs: {graphs}, eager: {eager};" in out
