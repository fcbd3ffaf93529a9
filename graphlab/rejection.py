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

from graphlab.errors import GraphlabError

# Marks the positions of a row after its last emitted token.
NO_TOKEN = -1


@dataclass(frozen=True)
class RejectionOutput:
    """The outcome for B sequences of one verification step."""

    tokens: torch.Tensor        # [B, k+1] emitted token ids, NO_TOKEN after the last emitted one
    num_accepted: torch.Tensor  # [B] accepted draft tokens, 0..k (emitted = num_accepted + 1)


def _check_shapes(draft_tokens, draft_probs, target_probs) -> int:
    if target_probs.dim() != 3 or draft_tokens.dim() != 2:
        raise GraphlabError(f"target_probs must be [B, k+1, vocab] and draft_tokens [B, k]; got "
                            f"{tuple(target_probs.shape)} and {tuple(draft_tokens.shape)}")
    b, k = draft_tokens.shape
    if target_probs.shape[:2] != (b, k + 1):
        raise GraphlabError(f"target_probs {tuple(target_probs.shape)} must be [B={b}, k+1={k + 1}, "
                            "vocab]")
    if draft_probs is not None and draft_probs.shape != (b, k, target_probs.shape[2]):
        raise GraphlabError(f"draft_probs {tuple(draft_probs.shape)} must be [B={b}, k={k}, "
                            f"vocab={target_probs.shape[2]}] (draft and target share a vocabulary)")
    return k


def _emit(draft_tokens: torch.Tensor, accepted: torch.Tensor,
          stop_tokens: torch.Tensor) -> RejectionOutput:
    """Accepted prefix of the drafts, then the token chosen where the prefix stops."""
    b, k = draft_tokens.shape
    # Accepted = the length of the leading run of True.
    num_accepted = accepted.long().cumprod(dim=1).sum(dim=1)
    position = torch.arange(k + 1, device=draft_tokens.device).expand(b, -1)
    stop = num_accepted[:, None]
    padded_drafts = torch.cat([draft_tokens, draft_tokens.new_full((b, 1), NO_TOKEN)], dim=1)
    tokens = torch.where(position < stop, padded_drafts,
                         torch.where(position == stop, stop_tokens, NO_TOKEN))
    return RejectionOutput(tokens=tokens, num_accepted=num_accepted)


def greedy_verify(draft_tokens: torch.Tensor, target_logits: torch.Tensor) -> RejectionOutput:
    """Accept drafts while they equal the target's argmax; emit the argmax where they stop."""
    _check_shapes(draft_tokens, None, target_logits)
    best = target_logits.argmax(dim=-1)  # [B, k+1]
    return _emit(draft_tokens, draft_tokens == best[:, :-1], best)


def rejection_sample(draft_tokens: torch.Tensor, draft_probs: torch.Tensor,
                     target_probs: torch.Tensor, generator: torch.Generator) -> RejectionOutput:
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
    """Acceptance counts over a run, in vLLM's vocabulary (vllm:spec_decode_num_* metrics).

    A "draft" is one sequence's set of k proposals in one step; sequences that did not speculate
    in a step count nowhere here.
    """

    num_speculative_tokens: int
    num_drafts: int = 0
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0
    num_emitted_tokens: int = 0
    accepted_per_position: np.ndarray = field(default=None)

    def __post_init__(self):
        if self.num_speculative_tokens < 0:
            raise GraphlabError(f"num_speculative_tokens={self.num_speculative_tokens}: must be >= 0")
        if self.accepted_per_position is None:
            self.accepted_per_position = np.zeros(self.num_speculative_tokens, dtype=np.int64)

    def observe(self, num_accepted: torch.Tensor | np.ndarray) -> np.ndarray:
        """Count one step's drafts from the accepted counts of the sequences that speculated;
        returns this step's accepted count per position."""
        accepted = np.asarray(num_accepted.cpu() if isinstance(num_accepted, torch.Tensor)
                              else num_accepted, dtype=np.int64)
        k = self.num_speculative_tokens
        self.num_drafts += accepted.size
        self.num_draft_tokens += accepted.size * k
        self.num_accepted_tokens += int(accepted.sum())
        self.num_emitted_tokens += int(accepted.sum()) + accepted.size
        # Position i (0-based) was accepted by every draft that accepted more than i tokens.
        per_position = (accepted[:, None] > np.arange(k)[None, :]).sum(axis=0)
        self.accepted_per_position += per_position
        return per_position

    @property
    def acceptance_rate(self) -> float:
        """Accepted / proposed draft tokens (NaN before any draft)."""
        return self.num_accepted_tokens / self.num_draft_tokens if self.num_draft_tokens else float("nan")

    @property
    def mean_acceptance_length(self) -> float:
        """Tokens a draft yields on average: 1 + accepted / drafts (vLLM's name; NaN before any)."""
        return 1 + self.num_accepted_tokens / self.num_drafts if self.num_drafts else float("nan")

    def as_dict(self) -> dict:
        return {
            "num_speculative_tokens": self.num_speculative_tokens,
            "num_drafts": self.num_drafts,
            "num_draft_tokens": self.num_draft_tokens,
            "num_accepted_tokens": self.num_accepted_tokens,
            "num_emitted_tokens": self.num_emitted_tokens,
            "accepted_per_position": self.accepted_per_position.tolist(),
            "acceptance_rate": self.acceptance_rate,
            "mean_acceptance_length": self.mean_acceptance_length,
        }
