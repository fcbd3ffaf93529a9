"""The proposer of a speculative decode step: the draft's k steps on its own V0-shaped runner."""

from __future__ import annotations

import torch

from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.sizing.config import SizingConfig
from graphlab.specdec.prefill import prefill
from graphlab.specdec.records import SpecDecodeConfig
from graphlab.specdec.sequence import RunningSequence, long_tensor


class Proposer:
    """k draft decode steps per speculating sequence, on the draft's own V0ModelRunner."""

    def __init__(self, draft: LlamaForCausalLM, config: SpecDecodeConfig):
        # Sized with k = 0, as V0's draft worker shared the target's max_num_seqs.
        self.model = draft
        self.runner = V0ModelRunner(
            draft,
            config.proposer_engine,
            SizingConfig(config.sizing.max_num_seqs),
            backend=config.backend,
            graph_pool=config.graph_pool,
        )
        self.k = config.sizing.num_speculative_tokens

    def prefill(self, seqs: list[RunningSequence]) -> None:
        """The prompts of newly admitted sequences (their first sampled token comes later)."""
        # The newest token is fed by the first proposal step.
        prefill(self.model, [s.token_ids[:-1] for s in seqs], [s.slot for s in seqs])
        for s in seqs:
            s.draft_len = s.seq_len - 1

    def propose(self, seqs: list[RunningSequence], sample):
        """Draft tokens [B_s, k], their draft probabilities [B_s, k, vocab], the last StepRecord.

        As V0's `MultiStepWorker._expand_execute_model_request` (vllm/spec_decode/
        multi_step_worker.py, 0.5.5; PR 5765): a sequence whose k drafts were all accepted last
        step (a bonus token; the draft never saw d_k) gets a copy without the bonus token, and
        the widened batch of B_s + B_bonus rows runs all k draft steps; only the originals'
        outputs are kept. The copy runs one position behind its original and feeds the token
        the original fed one step earlier (d_k first), so it rewrites the original's cells with
        the same values; V0's copy fed its own samples (same batches, a less exact draft cache).
        """
        device = self.model.device
        behind = [i for i, s in enumerate(seqs) if s.draft_len < s.seq_len - 1]
        rows = seqs + [seqs[i] for i in behind]
        tokens = long_tensor(
            [s.token_ids[-1] for s in seqs] + [seqs[i].token_ids[-2] for i in behind], device
        )
        positions = long_tensor(
            [s.seq_len - 1 for s in seqs] + [seqs[i].seq_len - 2 for i in behind], device
        )[:, None]  # one token per row: [n, 1], as tokens[:, None] below
        slots, originals = long_tensor([s.slot for s in rows], device), long_tensor(behind, device)
        drafted, probs, b = [], [], len(seqs)
        for j in range(self.k):
            logits, record = self.runner.execute_model(tokens[:, None], positions + j, slots)
            sampled, p = sample(logits[:b, 0])
            drafted.append(sampled)
            probs.append(p)
            tokens = torch.cat([sampled, tokens[originals]])
        return torch.stack(drafted, dim=1), torch.stack(probs, dim=1), record
