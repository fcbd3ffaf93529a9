"""The proposer and the scorers of a speculative decode step, over the running sequences.

`Proposer` runs the draft's k steps on its own V0-shaped runner; `BatchExpansionScorer` and
`MQAScorer` get the target's distributions at the k + 1 positions (graphlab.specdec.engine's
docstring tells the step in order, with its vLLM sources).
"""

from __future__ import annotations

import torch

from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.v0_runner import ModelRunner
from graphlab.sizing.config import SizingConfig
from graphlab.specdec.records import SpecDecodeConfig
from graphlab.specdec.requests import Request


class RunningSequence:
    """A running request: its tokens, cache slot and how far the draft's cache is filled."""

    def __init__(self, index: int, request: Request, slot: int):
        self.index, self.request, self.slot = index, request, slot
        self.token_ids = list(request.prompt_token_ids)
        self.num_generated = 0
        self.draft_len = 0  # positions 0..draft_len-1 of the draft's cache hold this sequence

    @property
    def seq_len(self) -> int:
        return len(self.token_ids)

    @property
    def finished(self) -> bool:
        return self.num_generated >= self.request.max_tokens

    def append(self, tokens: list[int]) -> int:
        room = self.request.max_tokens - self.num_generated
        tokens = tokens[:room]
        self.token_ids += tokens
        self.num_generated += len(tokens)
        return len(tokens)


def long_tensor(values, device) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class Proposer:
    """k draft decode steps per speculating sequence, on the draft's own ModelRunner."""

    def __init__(self, draft: LlamaForCausalLM, config: SpecDecodeConfig):
        # Sized with k = 0, as V0's draft worker shared the target's max_num_seqs.
        self.model = draft
        self.runner = ModelRunner(
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
        )
        slots, originals = long_tensor([s.slot for s in rows], device), long_tensor(behind, device)
        drafted, probs, b = [], [], len(seqs)
        for j in range(self.k):
            logits, record = self.runner.execute_model(tokens, positions + j, slots)
            sampled, p = sample(logits[:b])
            drafted.append(sampled)
            probs.append(p)
            tokens = torch.cat([sampled, tokens[originals]])
        return torch.stack(drafted, dim=1), torch.stack(probs, dim=1), record


def prefill(model: LlamaForCausalLM, prompts: list[list[int]], slots: list[int]) -> torch.Tensor:
    """Eager forwards over the prompts, each prompt's last logits [B, vocab].

    Prompts are right-padded within groups whose longest is at most twice the shortest: padding
    costs under 2x, and a step needs at most ~log2(max_model_len) forwards. A padded row writes
    K/V past its prompt in its own slot: harmless, since a token attends only to positions <= its
    own and every later step writes its cells before reading them.
    """
    device = model.device
    logits = torch.empty(len(prompts), model.config.vocab_size, device=device)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    while order:
        rows = [i for i in order if len(prompts[i]) <= 2 * len(prompts[order[0]])]
        order = order[len(rows) :]
        lengths = long_tensor([len(prompts[i]) for i in rows], device)
        longest = len(prompts[rows[-1]])
        ids = long_tensor(
            [list(prompts[i]) + [0] * (longest - len(prompts[i])) for i in rows], device
        )
        positions = torch.arange(longest, device=device).expand(len(rows), -1)
        row_slots = long_tensor([slots[i] for i in rows], device)
        model.check_inputs(ids, positions, row_slots)
        out = model(ids, positions, row_slots)
        logits[long_tensor(rows, device)] = out[torch.arange(len(rows), device=device), lengths - 1]
    return logits


class BatchExpansionScorer:
    """k+1 single-token rows per speculating sequence, sharing its slot, through the runner."""

    def __init__(self, runner: ModelRunner):
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
                torch.cat([last, drafts], dim=1).flatten(),
                long_tensor([s.token_ids[-1] for s in plain], device),
            ]
        )
        positions = torch.cat(
            [
                (long_tensor([s.seq_len - 1 for s in spec], device)[:, None] + offsets).flatten(),
                long_tensor([s.seq_len - 1 for s in plain], device),
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
        return logits[:expanded].view(len(spec), k + 1, logits.shape[-1]), logits[expanded:], record


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

    def __init__(self, runner: ModelRunner):
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
        logits, record = self.runner.execute_requests(ids, positions, slots, scheduled)
        return logits[: len(spec)], logits[len(spec) :, 0], record
