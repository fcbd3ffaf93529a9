"""Speculative decoding on the V0-shaped runner: exactness, the scorer's batches, the repro command."""

import math

import numpy as np
import pytest
import torch

from graphlab.cli import main
from graphlab.errors import GraphlabError
from graphlab.model import ModelConfig
from graphlab.sizing import SizingConfig, pad0
from graphlab.spec_decode import (DRAFT_KINDS, SCORERS, Request, SpecDecodeConfig,
                                  SpecDecodeEngine, build_draft, build_target, coverage_requests,
                                  load_requests, make_requests, run_speculative,
                                  spec_decode_benchmark)
from graphlab.workload import reachable_batch_sizes

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
    config = SpecDecodeConfig(max_num_seqs=config.pop("max_num_seqs", MAX_NUM_SEQS),
                              num_speculative_tokens=k,
                              max_model_len=config.pop("max_model_len", MAX_MODEL_LEN), **config)
    return SpecDecodeEngine(target, draft, config).generate(requests)


@pytest.fixture(scope="module")
def runs(target, drafts, load):
    """generate() with k = 3 on the shared load, memoized by (draft kind, policy, scorer)."""
    cache = {}

    def run(kind, policy="vllm-0.6.0", scorer="batch-expansion"):
        if (kind, policy, scorer) not in cache:
            cache[kind, policy, scorer] = generate(target, drafts[kind], load, k=3, policy=policy,
                                                   scorer=scorer)
        return cache[kind, policy, scorer]

    return run


def greedy_without_cache(model, prompt, max_tokens):
    """Target-only greedy decoding recomputing the whole sequence each token (no KV reuse)."""
    model.allocate_kv_cache(1, MAX_MODEL_LEN)
    tokens = list(prompt)
    for _ in range(max_tokens):
        ids = torch.tensor([tokens])
        logits = model(ids, torch.arange(len(tokens))[None], torch.tensor([0]))
        tokens.append(int(logits[0, -1].argmax()))
    return tokens[len(prompt):]


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
    assert out.metrics.num_draft_tokens == 0 and np.isnan(out.metrics.acceptance_rate)


@pytest.mark.parametrize("policy", ["vllm-0.6.0", "adaptive"])
@pytest.mark.parametrize("scorer", SCORERS)
@pytest.mark.parametrize("kind", DRAFT_KINDS)
def test_greedy_speculative_decoding_equals_target_greedy(runs, reference, policy, scorer, kind):
    out = runs(kind, policy, scorer)
    assert out.outputs == reference
    if kind == "target":
        assert out.metrics.acceptance_rate == 1.0


def test_vllm_055_without_a_crashing_batch_equals_target_greedy(target, drafts, load, reference):
    # k = 1 and at most 4 sequences: n <= 8, always a captured size (1, 2, 4, 8).
    few = load[:4]
    out = generate(target, drafts["truncated"], few, k=1, policy="vllm-0.5.5", max_num_seqs=8)
    assert out.outputs == reference[:4]
    decode = out.steps_frame().query("kind == 'decode'")
    assert (decode.path == "graph").all() and decode.batch_size.max() == 8


def test_acceptance_orders_the_drafts(runs):
    rates = {kind: runs(kind).metrics.acceptance_rate for kind in DRAFT_KINDS}
    assert rates["target"] == 1.0 > rates["truncated"] > rates["random"]
    assert rates["truncated"] > 0.1


def test_batch_expansion_rows_and_mqa_rows(runs):
    k = 3
    steps = {scorer: runs("truncated", scorer=scorer).steps_frame().query("kind == 'decode'")
             for scorer in SCORERS}
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
        generate(target, drafts["truncated"], load, k=4, policy="vllm-0.5.5")
    assert error.value.args == (24,)


# The drafts differ in acceptance (1, partial, near 0) and one run samples: the coverage load's
# steps must not depend on either.
@pytest.mark.parametrize("max_num_seqs, k, policy, kind, temperature", [
    (8, 4, "vllm-0.6.0", "truncated", 0.0), (5, 2, "adaptive", "random", 1.0),
    (12, 3, "vllm-0.6.0", "target", 0.0), (12, 3, "adaptive", "truncated", 0.0),
    (3, 0, "vllm-0.6.0", None, 0.0),
])
def test_coverage_load_reaches_every_scorer_batch_size(target, drafts, max_num_seqs, k, policy,
                                                       kind, temperature):
    requests = coverage_requests(max_num_seqs, k, MAX_MODEL_LEN, target.config.vocab_size, seed=1)
    out = generate(target, drafts.get(kind), requests, k, policy=policy, max_num_seqs=max_num_seqs,
                   temperature=temperature)
    decode = out.steps_frame().query("kind == 'decode'")
    reachable = reachable_batch_sizes(policy, SizingConfig(max_num_seqs, k)).tolist()
    # Each reachable size once, ascending, through V0's rule: no proposals near max_model_len.
    assert decode.batch_size.tolist() == reachable
    b_s = decode.num_speculating
    assert (decode.batch_size == b_s * (k + 1) + decode.num_seqs - b_s).all()
    assert decode.num_seqs.max() <= max_num_seqs
    assert [len(o) for o in out.outputs] == [2] * len(requests)
    largest_graph = pad0(max_num_seqs * (k + 1) if policy == "adaptive" else max_num_seqs)
    assert (decode.path == np.where(decode.batch_size <= largest_graph, "graph", "eager")).all()


def test_coverage_load_under_vllm_055_crashes_at_the_first_uncaptured_size(target, drafts):
    # Captured 1, 2, 4, 8; sizes climb 1, 2, ..., and n = 9 looks up 16.
    requests = load_requests("coverage", 0, 8, 4, 0, MAX_MODEL_LEN, target.config.vocab_size)
    with pytest.raises(KeyError) as error:
        generate(target, drafts["truncated"], requests, k=4, policy="vllm-0.5.5", max_num_seqs=8)
    assert error.value.args == (16,)


def test_coverage_load_rejects_a_max_model_len_without_room_for_proposals():
    with pytest.raises(GraphlabError, match="max_model_len"):
        coverage_requests(4, 4, 6, 512)
    with pytest.raises(GraphlabError, match="load"):
        load_requests("bursty", 4, 4, 2, 8, 32, 512)


def test_draft_kinds_share_or_do_not_share_the_target_weights(target, drafts):
    embed = target.model.embed_tokens.weight
    truncated = drafts["truncated"]
    assert truncated.config.num_hidden_layers == 1
    assert torch.equal(truncated.model.layers[0].mlp.up_proj.weight,
                       target.model.layers[0].mlp.up_proj.weight)
    assert torch.equal(truncated.lm_head.weight, target.lm_head.weight)
    assert torch.equal(drafts["target"].model.embed_tokens.weight, embed)
    assert drafts["target"] is not target
    assert not torch.equal(drafts["random"].model.embed_tokens.weight, embed)


@pytest.mark.parametrize("bad", [
    dict(num_speculative_tokens=-1), dict(scorer="tree"), dict(policy="vllm-0.13.0"),
    dict(temperature=-0.5), dict(max_num_seqs=0),
])
def test_bad_configs_fail_clearly(bad):
    fields = {"max_num_seqs": 4, "num_speculative_tokens": 2, **bad}
    with pytest.raises(GraphlabError):
        SpecDecodeConfig(**fields)


def test_draft_with_another_vocabulary_is_rejected(target):
    other = build_target(ModelConfig(vocab_size=256, hidden_size=64, intermediate_size=128,
                                     num_hidden_layers=1, num_attention_heads=2,
                                     num_key_value_heads=2, max_position_embeddings=128))
    with pytest.raises(GraphlabError, match="vocab"):
        SpecDecodeEngine(target, other, SpecDecodeConfig(4, 2))
    with pytest.raises(GraphlabError, match="draft"):
        SpecDecodeEngine(target, None, SpecDecodeConfig(4, 2))


def test_requests_longer_than_max_model_len_are_rejected(target, drafts):
    engine = SpecDecodeEngine(target, drafts["truncated"], SpecDecodeConfig(2, 2, max_model_len=16))
    with pytest.raises(GraphlabError, match="max_model_len"):
        engine.generate([Request((1, 2, 3), 14)])


# ---- stochastic: through the model, on a 16-token vocabulary ----------------------------

ALPHA = 1e-3  # false-failure rate of each chi-square test


def _p_value(counts, probs):
    """Chi-square p-value (Wilson-Hilferty), bins with expected < 5 merged into one."""
    expected = probs * counts.sum()
    small = expected < 5
    obs = np.append(counts[~small], counts[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    keep = exp > 0
    obs, exp = obs[keep], exp[keep]
    stat, df = float(((obs - exp) ** 2 / exp).sum()), len(exp) - 1
    z = ((stat / df) ** (1 / 3) - (1 - 2 / (9 * df))) / math.sqrt(2 / (9 * df))
    return 0.5 * math.erfc(z / math.sqrt(2))


def test_sampled_speculative_tokens_follow_the_target_distribution():
    config = ModelConfig(vocab_size=16, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=64)
    model = build_target(config, seed=5, weight_std=0.3)
    draft = build_draft(model, "truncated")
    prompt, trials, k = (3, 7, 1), 3000, 2
    # t1 comes from the prefill; t2 and t3 from speculative rounds (accepted drafts, resampled or
    # bonus tokens): each must follow the target's own marginal.
    out = generate(model, draft, [Request(prompt, 3)] * trials, k=k, temperature=1.0,
                   max_num_seqs=64, max_model_len=16, seed=11)
    assert 0.2 < out.metrics.acceptance_rate < 0.95
    tokens = np.array(out.outputs)
    # Exact marginals of t2 and t3 under the target alone: enumerate t1, t2 (16 x 16 rows).
    model.allocate_kv_cache(256, 16)
    t1, t2 = np.meshgrid(np.arange(16), np.arange(16), indexing="ij")
    seqs = torch.tensor([list(prompt) + [a, b] for a, b in zip(t1.ravel(), t2.ravel())])
    with torch.no_grad():
        probs = model(seqs, torch.arange(5).expand(256, -1), torch.arange(256)).softmax(-1)
    p1 = probs[0, 2]                                        # t1 | prompt
    p2 = probs[::16, 3]                                     # t2 | prompt, t1  [16, 16]
    p3 = probs[:, 4].view(16, 16, 16)                       # t3 | prompt, t1, t2
    marginal_2 = (p1[:, None] * p2).sum(0)
    marginal_3 = (p1[:, None, None] * p2[:, :, None] * p3).sum((0, 1))
    assert _p_value(np.bincount(tokens[:, 0], minlength=16), p1.numpy()) > ALPHA
    assert _p_value(np.bincount(tokens[:, 1], minlength=16), marginal_2.numpy()) > ALPHA
    assert _p_value(np.bincount(tokens[:, 2], minlength=16), marginal_3.numpy()) > ALPHA


# ---- the repro command --------------------------------------------------------------------

def test_repro_ends_in_key_error_40(capsys):
    status = main(["repro", "--max-num-seqs", "8", "--num-speculative-tokens", "4",
                   "--policy", "vllm-0.5.5", "--device", "cpu", "--num-requests", "8"])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 1
    assert err[0] == "Traceback (most recent call last):" and err[-1] == "KeyError: 40"


@pytest.mark.parametrize("policy", ["vllm-0.6.0", "adaptive"])
def test_repro_completes_with_the_fixed_policies(capsys, policy):
    status = main(["repro", "--policy", policy, "--device", "cpu", "--num-requests", "8",
                   "--max-tokens", "12", "--max-model-len", "32"])
    out = capsys.readouterr().out
    assert status == 0
    assert "acceptance rate" in out
    # (n, path, graph) of each decode row of the table.
    rows = {tuple(line.split()[4:7]) for line in out.splitlines() if " decode " in line}
    assert ("40", "eager", "-") in rows or ("40", "graph", "40") in rows
    assert (("40", "graph", "40") in rows) == (policy == "adaptive")


@pytest.mark.parametrize("argv", [["--policy", "vllm-0.33.0"], ["--max-num-seqs", "0"],
                                  ["--num-speculative-tokens", "-1"], ["--temperature", "-1"],
                                  ["--draft", "medusa"]])
def test_repro_bad_input_exits_2_with_one_line(capsys, argv):
    assert main(["repro", "--device", "cpu", *argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_run_speculative_builds_both_models_in_the_dtype(dtype):
    engine, output = run_speculative("vllm-0.6.0", max_num_seqs=2, num_speculative_tokens=2,
                                     num_requests=2, max_tokens=3, max_model_len=24,
                                     device="cpu", dtype=dtype)
    assert engine.target.dtype == engine.proposer.model.dtype == getattr(torch, dtype)
    assert len(output.outputs) == 2 and all(output.outputs)  # both requests generated


def test_benchmark_rows_on_cpu():
    rows = spec_decode_benchmark(device="cpu", max_num_seqs=(4,), num_speculative_tokens=(2,),
                                 num_requests_per_seq=1, max_tokens=8, max_model_len=32)
    by_policy = {r["policy"]: r for r in rows}
    assert set(by_policy) == {"vllm-0.6.0", "adaptive"}
    guard, adaptive = by_policy["vllm-0.6.0"], by_policy["adaptive"]
    assert adaptive["scorer_graph_fraction"] == 1.0 > guard["scorer_graph_fraction"]
    assert adaptive["target_graph_memory_bytes"] > guard["target_graph_memory_bytes"] > 0
    assert guard["memory_kind"] == "predicted" and guard["backend"] == "cpu-emulated"
    # The same load and greedy decoding: the same acceptance under both policies.
    assert guard["num_accepted_tokens"] == adaptive["num_accepted_tokens"]
    assert guard["tokens_per_s"] > 0


def test_acceptance_counts_follow_from_the_greedy_text_and_the_v0_rule(target, drafts, load):
    from graphlab.vllm_compare import replay_greedy_counts

    out = generate(target, drafts["truncated"], load, k=3)
    counts = out.metrics.as_dict()
    replayed = {rule: replay_greedy_counts(target, drafts["truncated"], load, 3, MAX_MODEL_LEN, rule)
                for rule in ("v0", "v1")}
    assert all(replayed["v0"][name] == counts[name] for name in replayed["v0"])
    # Half the load runs into max_model_len, where vLLM V1's shortened proposals count differently.
    assert replayed["v1"]["num_drafts"] > replayed["v0"]["num_drafts"]


def test_step_records_add_up_to_the_totals(runs, load):
    out = runs("truncated")
    frame = out.steps_frame()
    m = out.metrics
    assert frame.num_draft_tokens.sum() == m.num_draft_tokens
    assert frame.num_accepted_tokens.sum() == m.num_accepted_tokens
    decode = frame[frame.num_speculating > 0]
    assert np.array(decode.accepted_per_position.tolist()).sum(0).tolist() == \
        m.accepted_per_position.tolist()
    assert frame.num_emitted_tokens.sum() == sum(r.max_tokens for r in load)
