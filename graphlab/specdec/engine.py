"""Speculative decoding on the V0-shaped runner: propose, score, verify, with continuous batching.

One decode step, as vLLM V0's spec-decode worker ran it:

1. the proposer (a draft model on its own ModelRunner, sized like the target's with k = 0, i.e.
   to max_num_seqs, under `proposer_engine`) runs k draft steps. As V0's MultiStepWorker, it
   widens its batch with a copy of every sequence that got a bonus token last step, so a draft
   batch holds B_s + B_bonus <= 2*B_s rows and vllm-0.5.5's draft runner can raise its own
   KeyError (S = 8: 9..16 rows look up graph 16);
2. a scorer gets the target's distributions at the k+1 positions (SCORERS):
   - batch expansion (V0 `BatchExpansionTop1Scorer._expand_batch`): each speculating sequence
     becomes k+1 single-token rows at positions p..p+k with tokens [last, d_1..d_k], all on the
     parent's KV cache slot; the others stay one row. The n = B_s*(k+1) + B_0 rows go through the
     target's `ModelRunner.execute_model`, whose engine picks graph, eager or KeyError;
   - MQA (vLLM 0.6.3 `MQAScorer`): one row of k+1 tokens per sequence, speculating and plain
     together, in one eager forward; the batch stays B;
3. the rejection sampler (graphlab.specdec.rejection) accepts a prefix of the drafts and adds one token.

A sequence gets no proposals in a step when seq_len + k >= max_model_len (V0 Top1Proposer's
rule), so steps mix speculating and plain sequences. Requests (graphlab.specdec.requests) arrive over
time; a step that admits new requests prefills them (eager forwards, prompts of similar length
padded together) instead of decoding, as V0's scheduler did without chunked prefill. There is
no EOS: a request stops at max_tokens.
"""

from __future__ import annotations

import time

import torch

from graphlab.engine.device import resolve_device
from graphlab.engine.factory import make_runner
from graphlab.engine.model import LlamaForCausalLM, ModelConfig
from graphlab.engine.runner import StepRecord
from graphlab.engine.v0_runner import ModelRunner
from graphlab.errors import GraphlabError
from graphlab.sizing.engines import SizingConfig
from graphlab.specdec.drafts import build_draft, build_target
from graphlab.specdec.records import SCORERS, GenerateOutput, SpecDecodeConfig, SpecStep
from graphlab.specdec.rejection import (
    SpecDecodeMetrics,
    greedy_verify,
    rejection_sample,
)

# make_requests: still imported from here by tests/test_vllm_crosscheck.py.
from graphlab.specdec.requests import Request, RequestLoad, load_requests, make_requests  # noqa: F401


class _Sequence:
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


def _long(values, device) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=device)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ---- proposer and scorers ------------------------------------------------------------------

class Proposer:
    """k draft decode steps per speculating sequence, on the draft's own ModelRunner."""

    def __init__(self, draft: LlamaForCausalLM, config: SpecDecodeConfig):
        # Sized with k = 0, as V0's draft worker shared the target's max_num_seqs.
        self.model = draft
        self.runner = ModelRunner(draft, config.proposer_engine,
                                  SizingConfig(config.sizing.max_num_seqs),
                                  backend=config.backend, graph_pool=config.graph_pool)
        self.k = config.sizing.num_speculative_tokens

    def prefill(self, seqs: list[_Sequence]) -> None:
        """The prompts of newly admitted sequences (their first sampled token comes later)."""
        # The newest token is fed by the first proposal step.
        _prefill(self.model, [s.token_ids[:-1] for s in seqs], [s.slot for s in seqs])
        for s in seqs:
            s.draft_len = s.seq_len - 1

    def propose(self, seqs: list[_Sequence], sample):
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
        tokens = _long([s.token_ids[-1] for s in seqs] + [seqs[i].token_ids[-2] for i in behind],
                       device)
        positions = _long([s.seq_len - 1 for s in seqs] + [seqs[i].seq_len - 2 for i in behind],
                          device)
        slots, originals = _long([s.slot for s in rows], device), _long(behind, device)
        drafted, probs, b = [], [], len(seqs)
        for j in range(self.k):
            logits, record = self.runner.execute_model(tokens, positions + j, slots)
            sampled, p = sample(logits[:b])
            drafted.append(sampled)
            probs.append(p)
            tokens = torch.cat([sampled, tokens[originals]])
        return torch.stack(drafted, dim=1), torch.stack(probs, dim=1), record


def _prefill(model: LlamaForCausalLM, prompts: list[list[int]], slots: list[int]) -> torch.Tensor:
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
        order = order[len(rows):]
        lengths = _long([len(prompts[i]) for i in rows], device)
        longest = len(prompts[rows[-1]])
        ids = _long([list(prompts[i]) + [0] * (longest - len(prompts[i])) for i in rows], device)
        positions = torch.arange(longest, device=device).expand(len(rows), -1)
        row_slots = _long([slots[i] for i in rows], device)
        model.check_inputs(ids, positions, row_slots)
        out = model(ids, positions, row_slots)
        logits[_long(rows, device)] = out[torch.arange(len(rows), device=device), lengths - 1]
    return logits


class BatchExpansionScorer:
    """k+1 single-token rows per speculating sequence, sharing its slot, through the runner."""

    def __init__(self, runner: ModelRunner):
        self.runner = runner

    def score(self, spec: list[_Sequence], drafts: torch.Tensor, plain: list[_Sequence]):
        """(target logits [B_s, k+1, vocab], plain logits [B_0, vocab], StepRecord)."""
        device = self.runner.model.device
        k = drafts.shape[1]
        offsets = torch.arange(k + 1, device=device)
        last = _long([s.token_ids[-1] for s in spec], device)[:, None]
        ids = torch.cat([torch.cat([last, drafts], dim=1).flatten(),
                         _long([s.token_ids[-1] for s in plain], device)])
        positions = torch.cat([(_long([s.seq_len - 1 for s in spec], device)[:, None]
                                + offsets).flatten(),
                               _long([s.seq_len - 1 for s in plain], device)])
        slots = torch.cat([_long([s.slot for s in spec], device).repeat_interleave(k + 1),
                           _long([s.slot for s in plain], device)])
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

    def score(self, spec: list[_Sequence], drafts: torch.Tensor, plain: list[_Sequence]):
        model = self.runner.model
        device = model.device
        k = drafts.shape[1]
        seqs = spec + plain
        last = _long([s.token_ids[-1] for s in seqs], device)[:, None]
        ids = torch.cat([last, torch.cat([drafts, drafts.new_zeros(len(plain), k)])], dim=1)
        positions = (_long([s.seq_len - 1 for s in seqs], device)[:, None]
                     + torch.arange(k + 1, device=device))
        slots = _long([s.slot for s in seqs], device)
        if self.runner.batch_unit == "tokens":
            # vLLM V1: a request without drafts schedules 1 token, so the batch is not uniform.
            scheduled = [k + 1] * len(spec) + [1] * len(plain)
            logits, record = self.runner.execute_model(ids, positions, slots, scheduled)
            return logits[:len(spec)], logits[len(spec):, 0], record
        # Checked before the timer starts: the check reads values, which syncs a GPU.
        model.check_inputs(ids, positions, slots)
        logits, ms = self.runner.timed_step(None, ids, positions, slots)
        record = StepRecord(batch_size=len(seqs), path="eager", graph_size=None, time_ms=ms,
                            backend=self.runner.backend)
        return logits[:len(spec)], logits[len(spec):, 0], record


# ---- the engine ----------------------------------------------------------------------------

class SpecDecodeEngine:
    """Continuous batching with speculative decoding over a target and a draft model.

    Both models get a KV cache of max_num_seqs slots x max_model_len positions (reallocated here;
    the target's has k more with the MQA scorer). With num_speculative_tokens = 0 no draft is
    used and every decode step is plain decoding.
    """

    def __init__(self, target: LlamaForCausalLM, draft: LlamaForCausalLM | None,
                 config: SpecDecodeConfig):
        k = config.sizing.num_speculative_tokens
        if k > 0 and draft is None:
            raise GraphlabError(f"num_speculative_tokens={k} needs a draft model")
        if draft is not None and draft.config.vocab_size != target.config.vocab_size:
            raise GraphlabError(f"draft vocab_size={draft.config.vocab_size} differs from the "
                                f"target's {target.config.vocab_size}: they must share a vocabulary")
        if draft is not None and draft is target:
            raise GraphlabError("the draft must be its own model object (it has its own KV cache); "
                                "use build_draft(target, 'target') for a copy")
        target_len = config.max_model_len + (k if config.scorer == "mqa" else 0)
        for model, length in ((target, target_len), (draft if k > 0 else None, config.max_model_len)):
            if model is not None and length > model.config.max_position_embeddings:
                raise GraphlabError(f"max_model_len={config.max_model_len} needs {length} cache "
                                    f"positions, more than max_position_embeddings="
                                    f"{model.config.max_position_embeddings}")
        self.config, self.target, self.k = config, target, k
        target.allocate_kv_cache(config.sizing.max_num_seqs, target_len)
        self.runner = make_runner(target, config.engine, config.sizing, backend=config.backend,
                                  graph_pool=config.graph_pool)
        self.proposer = None
        if k > 0:
            draft.allocate_kv_cache(config.sizing.max_num_seqs, config.max_model_len)
            self.proposer = Proposer(draft, config)
        scorer = BatchExpansionScorer if config.scorer == "batch-expansion" else MQAScorer
        self.scorer = scorer(self.runner)
        self.generator = torch.Generator(device=target.device).manual_seed(config.seed)

    def capture_model(self) -> dict:
        """Capture the target's and the draft's graphs; their GraphRecords by model."""
        records = {"target": self.runner.capture_model()}
        if self.proposer is not None:
            records["draft"] = self.proposer.runner.capture_model()
        return records

    # -- sampling --
    def _sample(self, logits: torch.Tensor):
        """A token per row and the distribution it was drawn from (argmax when greedy)."""
        t = self.config.temperature
        if t == 0:
            return logits.argmax(dim=-1), logits
        probs = torch.softmax(logits / t, dim=-1)
        return torch.multinomial(probs, 1, generator=self.generator)[:, 0], probs

    def _verify(self, drafts, draft_probs, target_logits):
        t = self.config.temperature
        if t == 0:
            return greedy_verify(drafts, target_logits)
        return rejection_sample(drafts, draft_probs, torch.softmax(target_logits / t, dim=-1),
                                self.generator)

    # -- steps --
    def _prefill_step(self, new: list[_Sequence]) -> None:
        logits = _prefill(self.target, [s.token_ids for s in new], [s.slot for s in new])
        first, _ = self._sample(logits)
        for seq, token in zip(new, first.tolist()):
            seq.append([token])
        if self.proposer is not None:
            self.proposer.prefill(new)

    def _decode_step(self, step: int, running: list[_Sequence], metrics: SpecDecodeMetrics,
                     start: float) -> SpecStep:
        k, max_len = self.k, self.config.max_model_len
        spec = [s for s in running if k > 0 and s.seq_len + k < max_len]
        plain = [s for s in running if s not in spec]
        device = self.target.device
        drafts = torch.empty(0, k, dtype=torch.long, device=device)
        draft_probs, draft_record, draft_ms = None, None, 0.0
        if spec:
            draft_start = time.perf_counter()
            drafts, draft_probs, draft_record = self.proposer.propose(spec, self._sample)
            _sync(device)
            draft_ms = (time.perf_counter() - draft_start) * 1e3
        spec_logits, plain_logits, record = self.scorer.score(spec, drafts, plain)
        generated, per_pos, positions = 0, (), 0
        if spec:
            out = self._verify(drafts, draft_probs, spec_logits)
            per_pos, positions = metrics.observe(out)
            for seq, tokens, a in zip(spec, out.tokens.tolist(), out.num_accepted.tolist()):
                # Draft cache now valid through the accepted prefix (it never saw d_k).
                seq.draft_len = seq.seq_len - 1 + min(a + 1, k)
                generated += seq.append(tokens[:a + 1])
        if plain:
            out = self._verify(drafts.new_empty(len(plain), 0),
                               plain_logits.new_empty(len(plain), 0, plain_logits.shape[-1]),
                               plain_logits[:, None])
            for seq, tokens in zip(plain, out.tokens.tolist()):
                generated += seq.append(tokens[:1])
        _sync(device)
        return SpecStep(
            step=step, kind="decode", num_seqs=len(running), num_speculating=len(spec),
            batch_size=record.batch_size, path=record.path, graph_size=record.graph_size,
            scorer_ms=record.time_ms,
            draft_batch_size=0 if draft_record is None else draft_record.batch_size,
            draft_path=None if draft_record is None else draft_record.path, draft_ms=draft_ms,
            step_ms=(time.perf_counter() - start) * 1e3, num_draft_tokens=len(spec) * k,
            num_accepted_tokens=int(sum(per_pos)),
            num_accepted_tokens_per_pos=tuple(int(n) for n in per_pos),
            accepted_tokens=positions, num_generation_tokens=generated)

    def generate(self, requests: list[Request]) -> GenerateOutput:
        """Run all requests to max_tokens; tokens per request, per-step records and metrics."""
        self._check_requests(requests)
        if not self.runner.captured:
            self.capture_model()
        metrics = SpecDecodeMetrics(self.k)
        outputs: list[_Sequence | None] = [None] * len(requests)
        waiting = sorted(range(len(requests)), key=lambda i: (requests[i].arrival_step, i))
        free_slots = list(range(self.config.sizing.max_num_seqs))
        running: list[_Sequence] = []
        steps: list[SpecStep] = []
        step = 0
        with torch.no_grad():
            while waiting or running:
                start = time.perf_counter()
                admitted = []
                while waiting and free_slots and requests[waiting[0]].arrival_step <= step:
                    i = waiting.pop(0)
                    admitted.append(_Sequence(i, requests[i], free_slots.pop(0)))
                if admitted:
                    self._prefill_step(admitted)
                    _sync(self.target.device)
                    ms = (time.perf_counter() - start) * 1e3
                    steps.append(SpecStep(step=step, kind="prefill", num_seqs=len(admitted),
                                          batch_size=len(admitted), path="eager", scorer_ms=ms,
                                          step_ms=ms, num_generation_tokens=len(admitted)))
                    running += admitted
                elif running:
                    steps.append(self._decode_step(step, running, metrics, start))
                for seq in [s for s in running if s.finished]:
                    running.remove(seq)
                    free_slots.append(seq.slot)
                    outputs[seq.index] = seq
                step += 1
        generated = [s.token_ids[len(s.request.prompt_token_ids):] for s in outputs]
        return GenerateOutput(generated, steps, metrics)

    def _check_requests(self, requests: list[Request]) -> None:
        vocab, max_len = self.target.config.vocab_size, self.config.max_model_len
        if not requests:
            raise GraphlabError("no requests to generate")
        for i, r in enumerate(requests):
            if not r.prompt_token_ids or r.max_tokens < 1:
                raise GraphlabError(f"request {i}: needs a non-empty prompt and max_tokens >= 1")
            if len(r.prompt_token_ids) + r.max_tokens > max_len:
                raise GraphlabError(f"request {i}: prompt ({len(r.prompt_token_ids)}) + max_tokens "
                                    f"({r.max_tokens}) exceeds max_model_len={max_len}")
            if not all(0 <= t < vocab for t in r.prompt_token_ids):
                raise GraphlabError(f"request {i}: token ids must be in [0, {vocab - 1}]")


# ---- the repro command ---------------------------------------------------------------------

def run_speculative(config: SpecDecodeConfig, load: RequestLoad = RequestLoad(), *,
                    preset: str | ModelConfig = "tiny", draft: str = "truncated",
                    dtype: str = "float32", device: str = "auto",
                    log=None) -> tuple[SpecDecodeEngine, GenerateOutput]:
    """Speculative decoding of `load` under `config`; vllm-0.5.5 runners raise their KeyError.

    Target and draft (kind `draft`, see build_draft) are built from `preset` with config.seed, in
    `dtype` (logits stay float32 either way). `log`, if given, receives a line describing the
    setup before generation starts.
    """
    dev = resolve_device(device)
    target = build_target(preset, seed=config.seed, dtype=dtype, device=dev)
    k = config.sizing.num_speculative_tokens
    drafter = build_draft(target, draft, seed=config.seed + 1) if k else None
    requests = load_requests(load, config.sizing, config.max_model_len, target.config.vocab_size)
    engine = SpecDecodeEngine(target, drafter, config)
    engine.capture_model()
    if log is not None:
        runner = engine.runner
        log(f"{config.engine} on {runner.backend}: target captured {list(runner.capture_sizes)}, "
            f"graph limit {runner.graph_limit}; draft ({draft}, {config.proposer_engine}) "
            f"captured {list(engine.proposer.runner.capture_sizes) if k else []}; "
            f"{len(requests)} requests ({load.kind} load), max_num_seqs={config.sizing.max_num_seqs}, "
            f"k={k}, temperature={config.temperature}")
        log(f"scorer {config.scorer}: {SCORERS[config.scorer]}")
    return engine, engine.generate(requests)
