"""Speculative decoding on the target's runner (V0- or V1-shaped, by its engine): propose, score,
verify, with continuous batching.

One decode step, as vLLM V0's spec-decode worker ran it:

1. the proposer (a draft model on its own V0ModelRunner, sized like the target's with k = 0, i.e.
   to max_num_seqs, under `proposer_engine`) runs k draft steps. As V0's MultiStepWorker, it
   widens its batch with a copy of every sequence that got a bonus token last step, so a draft
   batch holds B_s + B_bonus <= 2*B_s rows and vllm-0.5.5's draft runner can raise its own
   KeyError (S = 8: 9..16 rows look up graph 16);
2. a scorer gets the target's distributions at the k+1 positions (SCORERS):
   - batch expansion (V0 `BatchExpansionTop1Scorer._expand_batch`): each speculating sequence
     becomes k+1 single-token rows at positions p..p+k with tokens [last, d_1..d_k], all on the
     parent's KV cache slot; the others stay one row. The n = B_s*(k+1) + B_0 rows go through the
     target's `V0ModelRunner.execute_model`, whose engine picks graph, eager or KeyError;
   - MQA (vLLM 0.6.3 `MQAScorer`): one row of k+1 tokens per sequence, speculating and plain
     together; the batch stays B. One eager forward beside a V0 engine; on the V1-shaped runner
     (V1 engines) vLLM V1's verify step, dispatched to FULL or PIECEWISE graphs by token count;
3. the rejection sampler (graphlab.specdec.rejection) accepts a prefix of the drafts and adds one
   token.

A sequence gets no proposals in a step when seq_len + k >= max_model_len (V0 Top1Proposer's
rule), so steps mix speculating and plain sequences. Requests (graphlab.specdec.requests) arrive
over time; `generate` is a loop over `step()`: schedule (graphlab.specdec.scheduler), then either
prefill the admitted requests (eager forwards, prompts of similar length padded together, as V0's
scheduler did without chunked prefill) or propose -> score -> verify, then postprocess (retire the
finished sequences). There is no EOS: a request stops at max_tokens.
"""

from __future__ import annotations

import torch

from graphlab.engine.config import ModelConfig
from graphlab.engine.device import resolve_device
from graphlab.engine.factory import make_runner
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.runner import Span
from graphlab.errors import BadInput, check_instance
from graphlab.sizing.dispatch import BatchPath
from graphlab.specdec.drafts import build_draft, build_target
from graphlab.specdec.prefill import prefill
from graphlab.specdec.proposer import Proposer
from graphlab.specdec.records import SCORERS, GenerateOutput, SpecDecodeConfig, SpecStep
from graphlab.specdec.rejection import (
    SpecDecodeMetrics,
    greedy_verify,
    rejection_sample,
)
from graphlab.specdec.requests import Request, RequestLoad, load_requests
from graphlab.specdec.scheduler import Scheduler
from graphlab.specdec.scorers import BatchExpansionScorer, MQAScorer
from graphlab.specdec.sequence import RunningSequence, sync

# ---- the engine ----------------------------------------------------------------------------


class SpecDecodeEngine:
    """Continuous batching with speculative decoding over a target and a draft model.

    Both models get a KV cache of max_num_seqs slots x max_model_len positions (reallocated here;
    the target's has k more with the MQA scorer). With num_speculative_tokens = 0 no draft is
    used and every decode step is plain decoding.
    """

    def __init__(
        self, target: LlamaForCausalLM, draft: LlamaForCausalLM | None, config: SpecDecodeConfig
    ):
        k = config.sizing.num_speculative_tokens
        if k > 0 and draft is None:
            raise BadInput(f"num_speculative_tokens={k} needs a draft model")
        if draft is not None and draft.config.vocab_size != target.config.vocab_size:
            raise BadInput(
                f"draft vocab_size={draft.config.vocab_size} differs from the "
                f"target's {target.config.vocab_size}: they must share a vocabulary"
            )
        if draft is not None and draft is target:
            raise BadInput(
                "the draft must be its own model object (it has its own KV cache); "
                "use build_draft(target, 'target') for a copy"
            )
        target_len = config.max_model_len + (k if config.scorer == "mqa" else 0)
        for model, length in (
            (target, target_len),
            (draft if k > 0 else None, config.max_model_len),
        ):
            if model is not None and length > model.config.max_position_embeddings:
                raise BadInput(
                    f"max_model_len={config.max_model_len} needs {length} cache "
                    f"positions, more than max_position_embeddings="
                    f"{model.config.max_position_embeddings}"
                )
        self.config, self.target, self.k = config, target, k
        target.allocate_kv_cache(config.sizing.max_num_seqs, target_len)
        self.runner = make_runner(
            target,
            config.engine,
            config.sizing,
            backend=config.backend,
            graph_pool=config.graph_pool,
        )
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
        return rejection_sample(
            drafts, draft_probs, torch.softmax(target_logits / t, dim=-1), self.generator
        )

    # -- the loop --
    def generate(self, requests: list[Request]) -> GenerateOutput:
        """Run all requests to max_tokens; tokens per request, per-step records and metrics."""
        self._check_requests(requests)
        if not self.runner.captured:
            self.capture_model()
        metrics = SpecDecodeMetrics(self.k)
        scheduler = Scheduler(requests, self.config.sizing.max_num_seqs)
        steps: list[SpecStep] = []
        step = 0
        with torch.no_grad():
            while not scheduler.is_finished():
                try:
                    record = self.step(step, scheduler, metrics)
                except KeyError as error:  # vllm-0.5.5's lookup: the steps before it go along
                    error.steps = steps
                    raise
                if record is not None:
                    steps.append(record)
                step += 1
        return GenerateOutput(scheduler.outputs(), steps, metrics)

    def step(self, step: int, scheduler: Scheduler, metrics: SpecDecodeMetrics) -> SpecStep | None:
        """One engine step: schedule, then prefill the admitted sequences or decode the running
        ones (propose -> score -> verify), then postprocess (retire the finished). None when
        nothing runs yet (the next request has not arrived)."""
        start = Span(self.target.device)
        admitted = scheduler.schedule(step)
        record = None
        if admitted:
            record = self._prefill_step(step, admitted, start)
        elif scheduler.running:
            record = self._decode_step(step, scheduler.running, metrics, start)
        scheduler.postprocess()
        return record

    def _prefill_step(self, step: int, new: list[RunningSequence], start: Span) -> SpecStep:
        logits = prefill(self.target, [s.token_ids for s in new], [s.slot for s in new])
        first, _ = self._sample(logits)
        for seq, token in zip(new, first.tolist()):
            seq.append([token])
        if self.proposer is not None:
            self.proposer.prefill(new)
        sync(self.target.device)
        ms = start.ms()
        return SpecStep(
            step=step,
            kind="prefill",
            num_seqs=len(new),
            batch_size=len(new),
            path=BatchPath.EAGER,
            scorer_ms=ms,
            step_ms=ms,
            step_wall_ms=start.wall_ms(),
            clock=start.clock,
            num_generation_tokens=len(new),
        )

    def _decode_step(
        self, step: int, running: list[RunningSequence], metrics: SpecDecodeMetrics, start: Span
    ) -> SpecStep:
        k, max_len = self.k, self.config.max_model_len
        # V0's Top1Proposer: no proposals where seq_len + k would reach max_model_len.
        spec = [s for s in running if k > 0 and s.seq_len + k < max_len]
        plain = [s for s in running if s not in spec]
        drafts, draft_probs, draft_record, draft_ms = self._propose(spec)
        spec_logits, plain_logits, record = self.scorer.score(spec, drafts, plain)
        per_pos, positions, generated = self._verify_and_append(
            spec, drafts, draft_probs, spec_logits, plain, plain_logits, metrics
        )
        sync(self.target.device)
        return SpecStep(
            step=step,
            kind="decode",
            num_seqs=len(running),
            num_speculating=len(spec),
            batch_size=record.batch_size,
            path=record.path,
            graph_size=record.graph_size,
            scorer_ms=record.time_ms,
            draft_batch_size=0 if draft_record is None else draft_record.batch_size,
            draft_path=None if draft_record is None else draft_record.path,
            draft_ms=draft_ms,
            step_ms=start.ms(),
            step_wall_ms=start.wall_ms(),
            clock=start.clock,
            num_draft_tokens=len(spec) * k,
            num_accepted_tokens=int(sum(per_pos)),
            num_accepted_tokens_per_pos=tuple(int(n) for n in per_pos),
            accepted_tokens=positions,
            num_generation_tokens=generated,
        )

    def _propose(self, spec: list[RunningSequence]):
        """(drafts [B_s, k], their probabilities, the draft's last StepRecord, the k steps' ms)."""
        device = self.target.device
        if not spec:
            return torch.empty(0, self.k, dtype=torch.long, device=device), None, None, 0.0
        span = Span(device)
        drafts, draft_probs, draft_record = self.proposer.propose(spec, self._sample)
        sync(device)
        return drafts, draft_probs, draft_record, span.ms()

    def _verify_and_append(
        self, spec, drafts, draft_probs, spec_logits, plain, plain_logits, metrics
    ):
        """Accept a prefix of each speculating sequence's drafts plus one token, one token for
        each plain sequence; append them. (accepted per position, accepted positions, tokens)."""
        k, generated, per_pos, positions = self.k, 0, (), 0
        if spec:
            out = self._verify(drafts, draft_probs, spec_logits)
            per_pos, positions = metrics.observe(out)
            for seq, tokens, a in zip(spec, out.tokens.tolist(), out.num_accepted.tolist()):
                # Draft cache now valid through the accepted prefix (it never saw d_k).
                seq.draft_len = seq.seq_len - 1 + min(a + 1, k)
                generated += seq.append(tokens[: a + 1])
        if plain:
            out = self._verify(
                drafts.new_empty(len(plain), 0),
                plain_logits.new_empty(len(plain), 0, plain_logits.shape[-1]),
                plain_logits[:, None],
            )
            for seq, tokens in zip(plain, out.tokens.tolist()):
                generated += seq.append(tokens[:1])
        return per_pos, positions, generated

    def _check_requests(self, requests: list[Request]) -> None:
        vocab, max_len = self.target.config.vocab_size, self.config.max_model_len
        if not requests:
            raise BadInput("no requests to generate")
        for i, r in enumerate(requests):
            if not r.prompt_token_ids or r.max_tokens < 1:
                raise BadInput(f"request {i}: needs a non-empty prompt and max_tokens >= 1")
            if len(r.prompt_token_ids) + r.max_tokens > max_len:
                raise BadInput(
                    f"request {i}: prompt ({len(r.prompt_token_ids)}) + max_tokens "
                    f"({r.max_tokens}) exceeds max_model_len={max_len}"
                )
            if not all(0 <= t < vocab for t in r.prompt_token_ids):
                raise BadInput(f"request {i}: token ids must be in [0, {vocab - 1}]")


# ---- the repro command ---------------------------------------------------------------------


def run_speculative(
    config: SpecDecodeConfig,
    load: RequestLoad = RequestLoad(),  # noqa: B008 (frozen: the shared default cannot change)
    *,
    preset: str | ModelConfig = "tiny",
    draft: str = "truncated",
    dtype: str = "float32",
    device: str = "auto",
    log=None,
) -> tuple[SpecDecodeEngine, GenerateOutput]:
    """Speculative decoding of `load` under `config`; vllm-0.5.5 runners raise their KeyError.

    Target and draft (kind `draft`, see build_draft) are built from `preset` with config.seed, in
    `dtype` (logits stay float32 either way). `log`, if given, receives a line describing the
    setup before generation starts.
    """
    check_instance("config", config, SpecDecodeConfig)
    check_instance("load", load, RequestLoad)
    dev = resolve_device(device)
    target = build_target(preset, seed=config.seed, dtype=dtype, device=dev)
    k = config.sizing.num_speculative_tokens
    drafter = build_draft(target, draft, seed=config.seed + 1) if k else None
    requests = load_requests(load, config.sizing, config.max_model_len, target.config.vocab_size)
    engine = SpecDecodeEngine(target, drafter, config)
    engine.capture_model()
    if log is not None:
        runner = engine.runner
        log(
            f"{config.engine} on {runner.backend}: target captured {list(runner.capture_sizes)}, "
            f"graph limit {runner.graph_limit}; draft ({draft}, {config.proposer_engine}) "
            f"captured {list(engine.proposer.runner.capture_sizes) if k else []}; "
            f"{len(requests)} requests ({load.kind} load), "
            f"max_num_seqs={config.sizing.max_num_seqs}, "
            f"k={k}, temperature={config.temperature}"
        )
        log(f"scorer {config.scorer}: {SCORERS[config.scorer]}")
    return engine, engine.generate(requests)
