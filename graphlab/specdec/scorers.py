"""The scorers of a speculative decode step: the target's distributions at the k + 1 positions.

`BatchExpansionScorer` and `MQAScorer` take the speculating and the plain sequences and the drafts
(graphlab.specdec.engine's docstring tells the step in order, with its vLLM sources).
"""

from __future__ import annotations

import torch

from graphlab.engine.runner import DecodeRunner
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.specdec.sequence import RunningSequence, long_tensor


class BatchExpansionScorer:
    """k+1 single-token rows per speculating sequence, sharing its slot, through the runner."""

    def __init__(self, runner: V0ModelRunner):
        self.runner = runner

    def score(
        self, spec: list[RunningSequence], drafts: torch.Tensor, plain: list[RunningSequence]
    ):
        """(target logits [B_s, k+1, vocab], plain logits [B_0, vocab], StepRecord)."""
        device = self.runner.model.device
        k = drafts.shape[1]
        offsets = torch.arange(k + 1, device=device)
        last = long_tensor([s.token_ids[-1] for s in spec], device)[:, None]
        ids = torch.cat(
            [
                torch.cat([last, drafts], dim=1).view(-1, 1),
                long_tensor([s.token_ids[-1] for s in plain], device)[:, None],
            ]
        )
        positions = torch.cat(
            [
                (long_tensor([s.seq_len - 1 for s in spec], device)[:, None] + offsets).view(-1, 1),
                long_tensor([s.seq_len - 1 for s in plain], device)[:, None],
            ]
        )
        slots = torch.cat(
            [
                long_tensor([s.slot for s in spec], device).repeat_interleave(k + 1),
                long_tensor([s.slot for s in plain], device),
            ]
        )
        logits, record = self.runner.execute_model(ids, positions, slots)
        expanded = len(spec) * (k + 1)
        plain_logits = logits[expanded:, 0]
        return logits[:expanded].view(len(spec), k + 1, logits.shape[-1]), plain_logits, record


class MQAScorer:
    """vLLM 0.6.3's MQAScorer: one row of k+1 query tokens per sequence, one eager forward; on a
    V1ModelRunner, vLLM V1's verify step: the same rows through its token-count graphs.

    Not part of vllm-0.5.5 or 0.6.0 (batch expansion only there); 0.6.3 uses it only with
    enforce_eager, so beside the 0.5.5/0.6.0 engines it shows a later vLLM's scoring.

    Speculating rows hold [last, d_1..d_k] at p..p+k. A plain row holds its last token, then k
    padding tokens at p+1..p+k whose outputs are dropped: they attend only to the row's own
    positions and write K/V past the sequence's end, into cells that every later step writes
    before reading. Plain rows can be within k of max_model_len, so the engine gives the
    target's cache k positions more for this scorer (V0 reserved k lookahead slots per
    sequence likewise).
    """

    def __init__(self, runner: DecodeRunner):
        self.runner = runner

    def score(
        self, spec: list[RunningSequence], drafts: torch.Tensor, plain: list[RunningSequence]
    ):
        model = self.runner.model
        device = model.device
        k = drafts.shape[1]
        seqs = spec + plain
        last = long_tensor([s.token_ids[-1] for s in seqs], device)[:, None]
        ids = torch.cat([last, torch.cat([drafts, drafts.new_zeros(len(plain), k)])], dim=1)
        positions = long_tensor([s.seq_len - 1 for s in seqs], device)[:, None] + torch.arange(
            k + 1, device=device
        )
        slots = long_tensor([s.slot for s in seqs], device)
        # vLLM V1: a request without drafts schedules 1 token, so the batch is not uniform.
        scheduled = [k + 1] * len(spec) + [1] * len(plain)
        logits, record = self.runner.execute_model(ids, positions, slots, scheduled)
        return logits[: len(spec)], logits[len(spec) :, 0], record
