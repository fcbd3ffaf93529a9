"""The rejection sampler: greedy verification, and emitted tokens distributed as the target's."""

import math

import numpy as np
import pytest
import torch
from helpers import ALPHA, chi_square, chi_square_p_value

from graphlab.errors import GraphlabError
from graphlab.specdec.rejection import NO_TOKEN, SpecDecodeMetrics, greedy_verify, rejection_sample


def test_chi_square_p_value_matches_known_quantiles():
    # Tabulated chi-square 0.999 quantiles: df 9 -> 27.877, df 15 -> 37.697.
    assert chi_square_p_value(27.877, 9) == pytest.approx(1e-3, rel=0.15)
    assert chi_square_p_value(37.697, 15) == pytest.approx(1e-3, rel=0.15)
    assert chi_square_p_value(9.0, 10) > 0.4


def _distributions(vocab: int, k: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    target = torch.softmax(2.0 * torch.randn(k + 1, vocab, generator=g), dim=-1)
    draft = torch.softmax(2.0 * torch.randn(k, vocab, generator=g), dim=-1)
    return target, draft


def _sample_round(target, draft, trials: int, seed: int):
    """`trials` independent verification rounds of fixed per-position distributions."""
    g = torch.Generator().manual_seed(seed)
    k, vocab = draft.shape
    drafts = torch.multinomial(draft.repeat(trials, 1), 1, replacement=True, generator=g)
    drafts = drafts.view(trials, k)
    out = rejection_sample(drafts, draft.expand(trials, -1, -1), target.expand(trials, -1, -1), g)
    return drafts, out


@pytest.mark.parametrize("vocab,k", [(8, 3), (16, 2)])
def test_emitted_tokens_follow_the_target_distribution(vocab, k):
    target, draft = _distributions(vocab, k, seed=vocab)
    _, out = _sample_round(target, draft, trials=40_000, seed=1)
    tokens = out.tokens.numpy()
    for position in range(k + 1):
        emitted = tokens[:, position][tokens[:, position] != NO_TOKEN]
        # A position is reached often enough for the test to have power.
        assert len(emitted) > 500
        counts = np.bincount(emitted, minlength=vocab)
        assert chi_square(counts, target[position].numpy()) > ALPHA, f"position {position}"


def test_the_test_detects_the_draft_distribution():
    """Emitting the drafts unverified would be caught by the same chi-square test."""
    target, draft = _distributions(8, 1, seed=8)
    drafts, _ = _sample_round(target, draft, trials=40_000, seed=2)
    counts = np.bincount(drafts[:, 0].numpy(), minlength=8)
    assert chi_square(counts, target[0].numpy()) < ALPHA


def test_acceptance_probability_is_the_overlap_of_p_and_q():
    target, draft = _distributions(12, 1, seed=3)
    trials = 40_000
    _, out = _sample_round(target, draft, trials=trials, seed=4)
    expected = float(torch.minimum(target[0], draft[0]).sum())
    observed = float(out.num_accepted.float().mean())
    # Five binomial standard deviations.
    assert abs(observed - expected) < 5 * math.sqrt(expected * (1 - expected) / trials)


def test_every_position_is_tested_and_the_prefix_is_its_leading_run():
    target, draft = _distributions(12, 4, seed=6)
    _, out = _sample_round(target, draft, trials=5_000, seed=7)
    assert torch.equal(out.num_accepted, out.accepted.long().cumprod(dim=1).sum(dim=1))
    # Positions after a rejection are tested too (vLLM V0 counted them as accepted tokens).
    after_rejection = out.accepted & (torch.arange(4) > out.num_accepted[:, None])
    assert after_rejection.any()
    # Each position passes with probability sum(min(p, q)), whatever happened before it.
    overlap = torch.minimum(target[:4], draft).sum(-1)
    assert torch.allclose(out.accepted.float().mean(0), overlap, atol=0.03)


def test_identical_distributions_accept_everything_and_add_a_bonus():
    target, _ = _distributions(10, 3, seed=5)
    g = torch.Generator().manual_seed(0)
    drafts = torch.multinomial(target[:3], 1, generator=g).view(1, 3).repeat(50, 1)
    out = rejection_sample(drafts, target[:3].expand(50, -1, -1), target.expand(50, -1, -1), g)
    assert out.num_accepted.tolist() == [3] * 50
    assert torch.equal(out.tokens[:, :3], drafts)
    assert (out.tokens[:, 3] >= 0).all()


def test_greedy_accepts_the_argmax_prefix():
    vocab = 6
    best = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4], [5, 5, 5, 5]])
    logits = torch.nn.functional.one_hot(best, vocab).float()
    drafts = torch.tensor([[1, 2, 3], [1, 0, 3], [0, 5, 5]])
    out = greedy_verify(drafts, logits)
    assert out.num_accepted.tolist() == [3, 1, 0]
    assert out.tokens.tolist() == [
        [1, 2, 3, 4],
        [1, 2, NO_TOKEN, NO_TOKEN],
        [5, NO_TOKEN, NO_TOKEN, NO_TOKEN],
    ]


def test_zero_speculative_tokens_emit_one_target_token():
    logits = torch.nn.functional.one_hot(torch.tensor([[3], [1]]), 5).float()
    out = greedy_verify(torch.empty(2, 0, dtype=torch.long), logits)
    assert out.tokens.tolist() == [[3], [1]] and out.num_accepted.tolist() == [0, 0]
    g = torch.Generator().manual_seed(0)
    out = rejection_sample(
        torch.empty(2, 0, dtype=torch.long), torch.empty(2, 0, 5), logits.softmax(-1), g
    )
    assert out.tokens.shape == (2, 1) and out.num_accepted.tolist() == [0, 0]


def test_mismatched_vocabularies_are_rejected():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(GraphlabError, match="vocab"):
        rejection_sample(
            torch.zeros(1, 2, dtype=torch.long),
            torch.full((1, 2, 4), 0.25),
            torch.full((1, 3, 5), 0.2),
            g,
        )


def _greedy_outcome(accepted: list[list[bool]]):
    """greedy_verify on drafts the target's argmax agrees with exactly where `accepted` says."""
    drafts = torch.arange(len(accepted) * len(accepted[0])).view(len(accepted), -1)
    best = torch.where(torch.tensor(accepted), drafts, drafts + 100)
    best = torch.cat([best, torch.zeros(len(accepted), 1, dtype=torch.long)], dim=1)
    return greedy_verify(drafts, torch.nn.functional.one_hot(best, 200).float())


def test_metrics_count_v1_prefixes_and_v0_positions():
    metrics = SpecDecodeMetrics(num_speculative_tokens=3)
    per_pos, positions = metrics.observe(
        _greedy_outcome([[True, True, True], [False, True, True], [True, False, True]])
    )
    assert per_pos.tolist() == [2, 1, 1] and positions == 7
    metrics.observe(_greedy_outcome([[True, True, False]]))
    # vLLM V1: accepted prefixes 3, 0, 1, 2.
    assert metrics.num_drafts == 4 and metrics.num_draft_tokens == 12
    assert metrics.num_accepted_tokens == 6
    assert metrics.num_accepted_tokens_per_pos.tolist() == [3, 2, 1]
    assert metrics.mean_acceptance_length == pytest.approx(2.5)
    # vLLM V0: every accepted position counts (3 + 2 + 2 + 2), the prefix before it or not;
    # emitted = prefix + 1 per draft, against k + 1 per draft at best.
    assert metrics.accepted_tokens == 9
    assert metrics.draft_acceptance_rate == pytest.approx(9 / 12)
    assert metrics.num_emitted_tokens == 10
    assert metrics.system_efficiency == pytest.approx(10 / 16)
    assert list(metrics.as_dict()) == [
        "num_speculative_tokens",
        "num_drafts",
        "num_draft_tokens",
        "num_accepted_tokens",
        "num_accepted_tokens_per_pos",
        "mean_acceptance_length",
        "accepted_tokens",
        "draft_acceptance_rate",
        "num_emitted_tokens",
        "system_efficiency",
    ]
    with pytest.raises(GraphlabError):
        SpecDecodeMetrics(num_speculative_tokens=-1)


# ---- what the mutation run (docs/mutation.md) found untested ----------------------------------


def test_shape_errors_name_both_shapes():
    with pytest.raises(GraphlabError) as raised:
        greedy_verify(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 4))  # target 2-d
    assert str(raised.value) == (
        "target_probs must be [B, k+1, vocab] and draft_tokens [B, k]; got (2, 4) and (2, 3)"
    )
    with pytest.raises(GraphlabError) as raised:
        greedy_verify(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, 5))  # k, not k+1
    assert str(raised.value) == "target_probs (2, 3, 5) must be [B=2, k+1=4, vocab]"


def test_the_generator_alone_decides_the_sample():
    target, draft = _distributions(12, 3, seed=2)
    drafts = torch.tensor([[0, 1, 2]] * 64)
    outputs = []
    for global_seed in (0, 1):  # the global RNG moves; a seeded generator must not care
        torch.manual_seed(global_seed)
        g = torch.Generator().manual_seed(7)
        out = rejection_sample(drafts, draft.expand(64, -1, -1), target.expand(64, -1, -1), g)
        outputs.append(out.tokens)
    assert torch.equal(outputs[0], outputs[1])


def test_a_row_whose_draft_equals_its_target_beside_one_that_does_not():
    # Row 0 leaves no residual (p == q): its recovery row is p itself; row 1 has a residual.
    target, draft = _distributions(6, 2, seed=4)
    drafts_probs = torch.stack([target[:2], draft])
    targets = target.expand(2, -1, -1)
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        drafts = torch.multinomial(drafts_probs.reshape(-1, 6), 1, generator=g).view(2, 2)
        out = rejection_sample(drafts, drafts_probs, targets, g)
        assert out.num_accepted[0] == 2  # p == q accepts every draft
        assert ((out.tokens >= 0) | (out.tokens == NO_TOKEN)).all()


def test_metrics_take_zero_speculative_tokens_and_count_in_integers():
    assert SpecDecodeMetrics(0).num_accepted_tokens_per_pos.shape == (0,)
    assert SpecDecodeMetrics(3).num_accepted_tokens_per_pos.dtype == np.int64
    with pytest.raises(GraphlabError) as raised:
        SpecDecodeMetrics(-1)
    assert str(raised.value) == "num_speculative_tokens=-1: must be >= 0"
