"""Rejection sampling for speculative decoding, and the acceptance counts it produces.

Given k draft tokens d_1..d_k sampled from the draft's distributions q_1..q_k and the target's
distributions p_1..p_{k+1} at the same positions, accept d_i with probability
min(1, p_i(d_i) / q_i(d_i)) until the first rejection; at a rejected position emit a token from
norm(max(0, p_i - q_i)); when all k are accepted emit a bonus token from p_{k+1}. The emitted
tokens are then distributed exactly as the target alone would sample them (Leviathan et al. 2023,
Chen et al. 2023). Greedy (temperature 0) accepts d_i when it is the target's argmax and emits the
target's argmax where it stops, so the output equals the target's own greedy tokens.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

from graphlab.errors import BadInput

# Marks the positions of a row after its last emitted token.
NO_TOKEN = -1


@dataclass(frozen=True)
class RejectionOutput:
    """The outcome for B sequences of one verification step."""

    tokens: torch.Tensor  # [B, k+1] emitted token ids, NO_TOKEN after the last emitted one
    num_accepted: torch.Tensor  # [B] accepted prefix, 0..k (emitted = num_accepted + 1)
    accepted: torch.Tensor  # [B, k] each position's own test, whether or not its prefix passed


def _check_shapes(draft_tokens, draft_probs, target_probs) -> int:
    if target_probs.dim() != 3 or draft_tokens.dim() != 2:
        raise BadInput(
            f"target_probs must be [B, k+1, vocab] and draft_tokens [B, k]; got "
            f"{tuple(target_probs.shape)} and {tuple(draft_tokens.shape)}"
        )
    b, k = draft_tokens.shape
    if target_probs.shape[:2] != (b, k + 1):
        raise BadInput(
            f"target_probs {tuple(target_probs.shape)} must be [B={b}, k+1={k + 1}, vocab]"
        )
    if draft_probs is not None and draft_probs.shape != (b, k, target_probs.shape[2]):
        raise BadInput(
            f"draft_probs {tuple(draft_probs.shape)} must be [B={b}, k={k}, "
            f"vocab={target_probs.shape[2]}] (draft and target share a vocabulary)"
        )
    return k


def _emit(
    draft_tokens: torch.Tensor, accepted: torch.Tensor, stop_tokens: torch.Tensor
) -> RejectionOutput:
    """Accepted prefix of the drafts, then the token chosen where the prefix stops."""
    b, k = draft_tokens.shape
    # Accepted = the length of the leading run of True.
    num_accepted = accepted.long().cumprod(dim=1).sum(dim=1)
    position = torch.arange(k + 1, device=draft_tokens.device).expand(b, -1)
    stop = num_accepted[:, None]
    padded_drafts = torch.cat([draft_tokens, draft_tokens.new_full((b, 1), NO_TOKEN)], dim=1)
    tokens = torch.where(
        position < stop, padded_drafts, torch.where(position == stop, stop_tokens, NO_TOKEN)
    )
    return RejectionOutput(tokens=tokens, num_accepted=num_accepted, accepted=accepted)


def greedy_verify(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> RejectionOutput:
    """Accept drafts while they equal the target's argmax; emit the argmax where they stop."""
    _check_shapes(draft_tokens, None, target_logits)
    best = target_logits.argmax(dim=-1)  # [B, k+1]
    return _emit(draft_tokens, draft_tokens == best[:, :-1], best)


def rejection_sample(
    draft_tokens: torch.Tensor,
    draft_probs: torch.Tensor,
    target_probs: torch.Tensor,
    generator: torch.Generator,
) -> RejectionOutput:
    """Modified rejection sampling: the emitted tokens follow the target's distribution exactly."""
    k = _check_shapes(draft_tokens, draft_probs, target_probs)
    b, _, vocab = target_probs.shape
    index = draft_tokens[..., None]
    p = target_probs[:, :k].gather(-1, index).squeeze(-1)
    q = draft_probs.gather(-1, index).squeeze(-1)
    u = torch.rand((b, k), generator=generator, device=target_probs.device)
    # u < p/q without dividing: q > 0 because the draft sampled the token.
    accepted = u * q < p
    residual = (target_probs[:, :k] - draft_probs).clamp_min(0.0)
    mass = residual.sum(dim=-1, keepdim=True)
    # p == q leaves no residual; rejection then has probability 0, any valid row will do.
    residual = torch.where(mass > 0, residual, target_probs[:, :k])
    recovery = torch.cat([residual, target_probs[:, k:]], dim=1)  # bonus row: p_{k+1}
    stop_tokens = torch.multinomial(recovery.reshape(-1, vocab), 1, generator=generator)
    return _emit(draft_tokens, accepted, stop_tokens.view(b, k + 1))


@dataclass
class SpecDecodeMetrics:
    """Acceptance counts over a run, each in the vocabulary of the vLLM generation it follows.

    A draft is one sequence's k proposals in one step; sequences that did not speculate in a
    step count nowhere here.

    vLLM V1 (vllm/v1/spec_decode/metrics.py, `SpecDecodingStats`): `num_drafts`,
    `num_draft_tokens`, `num_accepted_tokens` (the accepted prefix only),
    `num_accepted_tokens_per_pos` (drafts whose prefix reached position i+1) and
    `mean_acceptance_length` (1 + num_accepted_tokens / num_drafts, bonus token included).

    vLLM V0 (vllm/spec_decode/metrics.py and spec_decode_base_sampler.py, 0.5.5):
    `accepted_tokens` counts every position the verifier accepted, whether or not the prefix
    before it was ("any token accepted by the verification routine"), so
    `draft_acceptance_rate` = accepted_tokens / num_draft_tokens can exceed V1's prefix rate;
    `num_emitted_tokens` is what the sampler emitted (prefix + 1 per draft, before any
    max_tokens cut) and `system_efficiency` = num_emitted_tokens / (num_drafts * (k + 1)).
    """

    num_speculative_tokens: int
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_accepted_tokens_per_pos: np.ndarray = field(default=None)
    accepted_tokens: int = 0
    num_emitted_tokens: int = 0

    def __post_init__(self):
        if self.num_speculative_tokens < 0:
            raise BadInput(f"num_speculative_tokens={self.num_speculative_tokens}: must be >= 0")
        if self.num_accepted_tokens_per_pos is None:
            self.num_accepted_tokens_per_pos = np.zeros(self.num_speculative_tokens, dtype=np.int64)

    def observe(self, output: RejectionOutput) -> tuple[np.ndarray, int]:
        """Count one step's drafts (the verification of the sequences that speculated); returns
        this step's V1 per-position counts and V0 accepted_tokens."""
        prefix = np.asarray(output.num_accepted.cpu(), dtype=np.int64)
        positions = int(output.accepted.sum())
        k = self.num_speculative_tokens
        self.num_drafts += prefix.size
        self.num_draft_tokens += prefix.size * k
        self.num_accepted_tokens += int(prefix.sum())
        # Position i (0-based) was reached by every draft whose prefix is longer than i.
        per_pos = (prefix[:, None] > np.arange(k)[None, :]).sum(axis=0)
        self.num_accepted_tokens_per_pos += per_pos
        self.accepted_tokens += positions
        self.num_emitted_tokens += int(prefix.sum()) + prefix.size
        return per_pos, positions

    @property
    def mean_acceptance_length(self) -> float:
        """V1: tokens a draft yields on average, 1 + accepted prefix / drafts (NaN before any)."""
        return 1 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else float("nan")

    @property
    def draft_acceptance_rate(self) -> float:
        """V0: accepted positions / draft tokens, prefix or not (NaN before any draft)."""
        return (
            self.accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else float("nan")
        )

    @property
    def system_efficiency(self) -> float:
        """V0: emitted tokens / what a perfect draft would emit, k + 1 per draft (NaN before
        any)."""
        best = self.num_drafts * (self.num_speculative_tokens + 1)
        return self.num_emitted_tokens / best if best else float("nan")

    def as_dict(self) -> dict:
        """V1's figures, then V0's, under their own names."""
        return {
            "num_speculative_tokens": self.num_speculative_tokens,
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "num_accepted_tokens_per_pos": self.num_accepted_tokens_per_pos.tolist(),
            "mean_acceptance_length": self.mean_acceptance_length,
            "accepted_tokens": self.accepted_tokens,
            "draft_acceptance_rate": self.draft_acceptance_rate,
            "num_emitted_tokens": self.num_emitted_tokens,
            "system_efficiency": self.system_efficiency,
        }
