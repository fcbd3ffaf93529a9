"""Speculative decoding on the V0-shaped runner: propose, score, verify, with continuous batching.

One decode step, as vLLM V0's spec-decode worker ran it:

1. the proposer (a draft model with its own ModelRunner, sized to max_num_seqs so its batches
   always fit its graphs) runs k decode steps for every speculating sequence;
2. a scorer gets the target's distributions at the k+1 positions:
   - batch expansion (V0 `BatchExpansionTop1Scorer._expand_batch`): each speculating sequence
     becomes k+1 single-token rows at positions p..p+k with tokens [last, d_1..d_k], all on the
     parent's KV cache slot; the others stay one row. The n = B_s*(k+1) + B_0 rows go through the
     target's `ModelRunner.execute_model`, whose sizing policy picks graph, eager or KeyError;
   - MQA (V0 `MQAScorer`): one row of k+1 tokens per sequence, an eager forward, batch stays B;
3. the rejection sampler (graphlab.rejection) accepts a prefix of the drafts and adds one token.

A sequence gets no proposals in a step when seq_len + k >= max_model_len (V0 Top1Proposer's
rule), so steps mix speculating and plain sequences. When all k drafts were accepted the draft
never saw d_k; one catch-up draft step (at most max_num_seqs rows) feeds it before the next
proposals, as gpt-fast does (V0 instead widened the draft's first batch with those sequences).
Requests arrive over time; a step that admits new requests prefills them (eagerly, target and
draft) instead of decoding, as V0's scheduler did without chunked prefill. There is no EOS: a
request stops at max_tokens. Two seeded loads: make_requests ("mixed": full batches that thin
out) and coverage_requests ("coverage": every reachable scorer batch size once).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from graphlab.errors import GraphlabError
from graphlab.memory import predict_pool_bytes
from graphlab.model import LlamaForCausalLM, ModelConfig, build_model, init_weights
from graphlab.provenance import resolve_device
from graphlab.rejection import SpecDecodeMetrics, greedy_verify, rejection_sample
from graphlab.runner import ModelRunner, StepRecord, StepTimer
from graphlab.sizing import V0_POLICIES, SizingConfig
from graphlab.workload import batch_expansion_sizes

SCORERS = ("batch-expansion", "mqa")
DRAFT_KINDS = ("truncated", "target", "random")
# Deliberately not build_model's non-degenerate default, whose random-weight text a truncated
# draft predicts ~5% of the time: at 0.06 the tiny target mostly repeats its last token, so the
# truncated draft is accepted ~25% (a random one ~1%) and acceptance reaches every position.
SPEC_WEIGHT_STD = 0.06


# ---- models --------------------------------------------------------------------------------

def build_target(preset: str | ModelConfig = "tiny", seed: int = 0, dtype="float32", device="cpu",
                 weight_std: float = SPEC_WEIGHT_STD) -> LlamaForCausalLM:
    """build_model with weights of std `weight_std` (see SPEC_WEIGHT_STD)."""
    model = build_model(preset, seed=seed, dtype=dtype, device=device)
    init_weights(model, seed, std=weight_std)
    return model


def build_draft(target: LlamaForCausalLM, kind: str = "truncated", seed: int = 1,
                num_layers: int | None = None) -> LlamaForCausalLM:
    """A draft with the target's vocabulary, built from the target without downloads.

    - "truncated": the target's embeddings, first `num_layers` layers (default half), final
      norm and lm_head: a cheaper draft that agrees with the target part of the time;
    - "target": a copy of the target (greedy acceptance is 1);
    - "random": the truncated shape with unrelated weights (seed `seed`): acceptance near chance.
    """
    if kind not in DRAFT_KINDS:
        raise GraphlabError(f"draft kind {kind!r} is not one of {', '.join(DRAFT_KINDS)}")
    layers = target.config.num_hidden_layers
    if kind == "target":
        num_layers = layers
    elif num_layers is None:
        num_layers = max(1, layers // 2)
    if not 1 <= num_layers <= layers:
        raise GraphlabError(f"num_layers={num_layers}: must be in [1, {layers}] (the target's layers)")
    config = dataclasses.replace(target.config, num_hidden_layers=num_layers)
    if kind == "random":
        draft = build_model(config, seed=seed, dtype=target.dtype, device=target.device)
        std = float(target.model.embed_tokens.weight.std())
        init_weights(draft, seed, std=std)  # same scale as the target, different values
        return draft
    draft = LlamaForCausalLM(config, device=target.device, dtype=target.dtype)
    shapes = draft.state_dict()
    draft.load_state_dict({name: t for name, t in target.state_dict().items() if name in shapes})
    return draft.eval().requires_grad_(False)


# ---- requests ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    prompt_token_ids: tuple[int, ...]
    max_tokens: int
    arrival_step: int = 0  # the engine step from which the scheduler may admit it


def make_requests(num_requests: int, max_num_seqs: int, max_tokens: int, max_model_len: int,
                  vocab_size: int, seed: int = 0) -> list[Request]:
    """A seeded load that reaches every kind of step.

    The first max_num_seqs requests arrive at once (so the first decode step has all slots
    speculating: n = max_num_seqs*(k+1)); the rest arrive one every few steps. Even-numbered
    requests stop after between max_tokens/4 and max_tokens tokens, so they finish at different
    steps; odd-numbered ones run until max_model_len, so their last tokens are decoded without
    proposals (plain rows beside speculating ones).
    """
    for name, value, low in (("num_requests", num_requests, 1), ("max_num_seqs", max_num_seqs, 1),
                             ("max_tokens", max_tokens, 1)):
        if value < low:
            raise GraphlabError(f"{name}={value}: must be >= {low}")
    rng = np.random.default_rng(seed)
    longest_prompt = max(2, min(16, max_model_len // 4))
    if max_model_len < longest_prompt + 2:
        raise GraphlabError(f"max_model_len={max_model_len} is too short for a load (need >= "
                            f"{longest_prompt + 2})")
    requests, arrival = [], 0
    for i in range(num_requests):
        prompt_len = int(rng.integers(2, longest_prompt + 1))
        room = max_model_len - prompt_len
        if i % 2:
            tokens = room  # runs into max_model_len: proposals stop near the end
        else:
            tokens = int(rng.integers(max(1, max_tokens // 4), max_tokens + 1))
        if i >= max_num_seqs:
            arrival += int(rng.integers(1, 4))
        prompt = tuple(int(t) for t in rng.integers(0, vocab_size, prompt_len))
        requests.append(Request(prompt, min(tokens, room), arrival))
    return requests


def coverage_requests(max_num_seqs: int, num_speculative_tokens: int, max_model_len: int,
                      vocab_size: int, seed: int = 0) -> list[Request]:
    """A seeded load whose scorer batches take every reachable size n, each once, ascending.

    The reachable sizes are graphlab.workload's n = B_s*(k+1) + B_0 with B_s + B_0 <=
    max_num_seqs. Per size one group arrives: B_s requests with short prompts (room for k more
    tokens, so they speculate) and B_0 whose prompts end within k tokens of max_model_len (V0's
    rule gives them no proposals), split with the most speculating sequences (fewest requests).
    Every request asks for 2 tokens: the prefill step samples the first, the next (decode) step
    the second, so the whole group finishes in that one decode step whatever was accepted, and
    the next group, arriving two steps later, finds all slots free. What each decode step holds
    therefore depends on neither the draft nor the temperature.
    """
    k = num_speculative_tokens
    SizingConfig(max_num_seqs, k)  # raises on bad values
    if max_model_len < k + 3:
        raise GraphlabError(f"max_model_len={max_model_len}: a coverage load needs >= k + 3 = "
                            f"{k + 3} (a speculating prompt, its first token and k proposals)")
    rng = np.random.default_rng(seed)
    short = (1, min(16, max_model_len - k - 2))          # seq_len + k < max_model_len
    near_end = (max_model_len - k - 1, max_model_len - 2) if k else short  # k = 0: all plain

    def prompt(lengths: tuple[int, int]) -> tuple[int, ...]:
        length = int(rng.integers(lengths[0], lengths[1] + 1))
        return tuple(int(t) for t in rng.integers(0, vocab_size, length))

    requests = []
    for group, n in enumerate(batch_expansion_sizes(max_num_seqs, k).tolist()):
        speculating = 0
        if k:
            speculating = max(b for b in range(min(max_num_seqs, n // (k + 1)) + 1)
                              if n - b * (k + 1) <= max_num_seqs - b)
        plain = n - speculating * (k + 1)
        requests += [Request(prompt(short), 2, 2 * group) for _ in range(speculating)]
        requests += [Request(prompt(near_end), 2, 2 * group) for _ in range(plain)]
    return requests


LOADS = ("mixed", "coverage")


def load_requests(load: str, num_requests: int, max_num_seqs: int, num_speculative_tokens: int,
                  max_tokens: int, max_model_len: int, vocab_size: int,
                  seed: int = 0) -> list[Request]:
    """The named load: "mixed" (make_requests) or "coverage" (coverage_requests, which sets its
    own number of requests and lengths, so num_requests and max_tokens do not apply)."""
    if load == "mixed":
        return make_requests(num_requests, max_num_seqs, max_tokens, max_model_len, vocab_size,
                             seed)
    if load == "coverage":
        return coverage_requests(max_num_seqs, num_speculative_tokens, max_model_len, vocab_size,
                                 seed)
    raise GraphlabError(f"load {load!r} is not one of {', '.join(LOADS)}")


# ---- engine config and records -------------------------------------------------------------

@dataclass(frozen=True)
class SpecDecodeConfig:
    max_num_seqs: int
    num_speculative_tokens: int
    policy: str = "vllm-0.6.0"
    scorer: str = "batch-expansion"
    temperature: float = 0.0      # 0: greedy
    max_model_len: int = 128      # KV cache length per sequence
    seed: int = 0
    backend: str = "auto"
    graph_pool: str = "shared"

    def __post_init__(self):
        if self.policy not in V0_POLICIES:
            raise GraphlabError(f"policy {self.policy!r}: speculative decoding runs on the V0-shaped "
                                f"runner, allowed: {', '.join(V0_POLICIES)}")
        if self.scorer not in SCORERS:
            raise GraphlabError(f"scorer {self.scorer!r} is not one of {', '.join(SCORERS)}")
        if not self.temperature >= 0:
            raise GraphlabError(f"temperature={self.temperature}: must be >= 0 (0 is greedy)")
        if self.max_model_len < 2:
            raise GraphlabError(f"max_model_len={self.max_model_len}: must be >= 2")
        SizingConfig(self.max_num_seqs, self.num_speculative_tokens)  # raises on bad values

    @property
    def sizing(self) -> SizingConfig:
        return SizingConfig(self.max_num_seqs, self.num_speculative_tokens)


@dataclass(frozen=True)
class SpecStep:
    """One engine step: a prefill of newly admitted requests, or a (speculative) decode."""

    step: int
    kind: str                 # "prefill" | "decode"
    num_seqs: int             # sequences in the step
    num_speculating: int      # B_s: sequences with proposals
    batch_size: int           # rows the scorer sent (n = B_s*(k+1) + B_0 for batch expansion)
    path: str                 # "graph" | "eager"
    graph_size: int | None
    scorer_ms: float          # the target's forward (the runner's StepRecord.time_ms)
    draft_ms: float           # the proposer's steps, including a catch-up step
    step_ms: float            # the whole step, wall clock
    num_draft_tokens: int
    num_accepted_tokens: int
    num_emitted_tokens: int   # tokens appended to outputs (after max_tokens truncation)
    accepted_per_position: tuple[int, ...] = ()  # drafts accepted at positions 1..k this step


@dataclass
class GenerateOutput:
    outputs: list[list[int]]  # generated token ids per request, in request order
    steps: list[SpecStep]
    metrics: SpecDecodeMetrics

    def steps_frame(self) -> pd.DataFrame:
        return pd.DataFrame([dataclasses.asdict(s) for s in self.steps])


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
        # Sized to max_num_seqs with k = 0: the draft decodes at most one row per sequence.
        self.model = draft
        self.runner = ModelRunner(draft, config.policy, SizingConfig(config.max_num_seqs),
                                  backend=config.backend, graph_pool=config.graph_pool)
        self.k = config.num_speculative_tokens

    def prefill(self, seqs: list[_Sequence]) -> None:
        """The prompts of newly admitted sequences (their first sampled token comes later)."""
        # The newest token is fed by the first proposal step.
        _prefill(self.model, [s.token_ids[:-1] for s in seqs], [s.slot for s in seqs])
        for s in seqs:
            s.draft_len = s.seq_len - 1

    def catch_up(self, seqs: list[_Sequence]) -> None:
        """Feed the one token a sequence's draft cache lacks (its last draft, after a full accept)."""
        lagging = [s for s in seqs if s.draft_len < s.seq_len - 1]
        if not lagging:
            return
        device = self.model.device
        self.runner.execute_model(_long([s.token_ids[s.draft_len] for s in lagging], device),
                                  _long([s.draft_len for s in lagging], device),
                                  _long([s.slot for s in lagging], device))
        for s in lagging:
            s.draft_len += 1

    def propose(self, seqs: list[_Sequence], sample) -> tuple[torch.Tensor, torch.Tensor]:
        """Draft tokens [B_s, k] and the draft's probabilities [B_s, k, vocab] they came from."""
        device = self.model.device
        slots = _long([s.slot for s in seqs], device)
        tokens = _long([s.token_ids[-1] for s in seqs], device)
        start = _long([s.seq_len - 1 for s in seqs], device)
        drafted, probs = [], []
        for j in range(self.k):
            logits, _ = self.runner.execute_model(tokens, start + j, slots)
            tokens, p = sample(logits)
            drafted.append(tokens)
            probs.append(p)
        return torch.stack(drafted, dim=1), torch.stack(probs, dim=1)


def _prefill(model: LlamaForCausalLM, prompts: list[list[int]], slots: list[int]) -> torch.Tensor:
    """Eager forwards over prompts, one per prompt length; the last positions' logits [B, vocab]."""
    device = model.device
    logits = torch.empty(len(prompts), model.config.vocab_size, device=device)
    for length in sorted({len(p) for p in prompts}):
        rows = [i for i, p in enumerate(prompts) if len(p) == length]
        ids = _long([prompts[i] for i in rows], device)
        positions = torch.arange(length, device=device).expand(len(rows), -1)
        row_slots = _long([slots[i] for i in rows], device)
        model.check_inputs(ids, positions, row_slots)
        logits[_long(rows, device)] = model(ids, positions, row_slots)[:, -1]
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
    """One row of k+1 tokens per speculating sequence, one eager forward; plain rows separately."""

    def __init__(self, runner: ModelRunner):
        self.runner = runner

    def score(self, spec: list[_Sequence], drafts: torch.Tensor, plain: list[_Sequence]):
        model = self.runner.model
        device = model.device
        k = drafts.shape[1]
        batches = []  # (ids [B, L], positions [B, L], slots [B]) of the spec rows, then the plain
        if spec:
            batches.append((
                torch.cat([_long([s.token_ids[-1] for s in spec], device)[:, None], drafts], dim=1),
                _long([s.seq_len - 1 for s in spec], device)[:, None]
                + torch.arange(k + 1, device=device),
                _long([s.slot for s in spec], device)))
        if plain:
            batches.append((_long([[s.token_ids[-1]] for s in plain], device),
                            _long([[s.seq_len - 1] for s in plain], device),
                            _long([s.slot for s in plain], device)))
        # Checked before the timer starts: the checks read values, which syncs a GPU.
        for batch in batches:
            model.check_inputs(*batch)
        timer = StepTimer(device)
        with torch.no_grad():
            logits = [model(*batch) for batch in batches]
        record = StepRecord(len(spec) + len(plain), "eager", None, timer.stop(),
                            self.runner.backend)
        empty = torch.empty(0, k + 1, model.config.vocab_size, device=device)
        spec_logits = logits[0] if spec else empty
        plain_logits = logits[-1] if plain else empty
        return spec_logits, plain_logits[:, 0], record


# ---- the engine ----------------------------------------------------------------------------

class SpecDecodeEngine:
    """Continuous batching with speculative decoding over a target and a draft model.

    Both models get a KV cache of max_num_seqs slots x max_model_len positions (reallocated here).
    With num_speculative_tokens = 0 no draft is used and every decode step is plain decoding.
    """

    def __init__(self, target: LlamaForCausalLM, draft: LlamaForCausalLM | None,
                 config: SpecDecodeConfig):
        k = config.num_speculative_tokens
        if k > 0 and draft is None:
            raise GraphlabError(f"num_speculative_tokens={k} needs a draft model")
        if draft is not None and draft.config.vocab_size != target.config.vocab_size:
            raise GraphlabError(f"draft vocab_size={draft.config.vocab_size} differs from the "
                                f"target's {target.config.vocab_size}: they must share a vocabulary")
        if draft is not None and draft is target:
            raise GraphlabError("the draft must be its own model object (it has its own KV cache); "
                                "use build_draft(target, 'target') for a copy")
        for model in (target, draft if k > 0 else None):
            if model is not None and config.max_model_len > model.config.max_position_embeddings:
                raise GraphlabError(f"max_model_len={config.max_model_len} exceeds "
                                    f"max_position_embeddings="
                                    f"{model.config.max_position_embeddings}")
        self.config, self.target, self.k = config, target, k
        target.allocate_kv_cache(config.max_num_seqs, config.max_model_len)
        self.runner = ModelRunner(target, config.policy, config.sizing, backend=config.backend,
                                  graph_pool=config.graph_pool)
        self.proposer = None
        if k > 0:
            draft.allocate_kv_cache(config.max_num_seqs, config.max_model_len)
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

    def _decode_step(self, running: list[_Sequence], metrics: SpecDecodeMetrics):
        k, max_len = self.k, self.config.max_model_len
        spec = [s for s in running if k > 0 and s.seq_len + k < max_len]
        plain = [s for s in running if s not in spec]
        device = self.target.device
        draft_ms, draft_probs = 0.0, None
        if spec:
            start = time.perf_counter()
            self.proposer.catch_up(spec)
            drafts, draft_probs = self.proposer.propose(spec, self._sample)
            _sync(device)
            draft_ms = (time.perf_counter() - start) * 1e3
        else:
            drafts = torch.empty(0, k, dtype=torch.long, device=device)
        spec_logits, plain_logits, record = self.scorer.score(spec, drafts, plain)
        emitted, per_position = 0, ()
        if spec:
            out = self._verify(drafts, draft_probs, spec_logits)
            per_position = tuple(int(n) for n in metrics.observe(out.num_accepted))
            accepted = out.num_accepted.tolist()
            for seq, tokens, a in zip(spec, out.tokens.tolist(), accepted):
                # Draft cache now valid through the accepted prefix (it never saw d_k).
                seq.draft_len = seq.seq_len - 1 + min(a + 1, k)
                emitted += seq.append(tokens[:a + 1])
        if plain:
            out = self._verify(drafts.new_empty(len(plain), 0),
                               plain_logits.new_empty(len(plain), 0, plain_logits.shape[-1]),
                               plain_logits[:, None])
            for seq, tokens in zip(plain, out.tokens.tolist()):
                emitted += seq.append(tokens[:1])
        return record, draft_ms, len(spec), emitted, per_position

    def generate(self, requests: list[Request]) -> GenerateOutput:
        """Run all requests to max_tokens; tokens per request, per-step records and metrics."""
        self._check_requests(requests)
        if not self.runner.captured:
            self.capture_model()
        metrics = SpecDecodeMetrics(self.k)
        outputs: list[_Sequence | None] = [None] * len(requests)
        waiting = sorted(range(len(requests)), key=lambda i: (requests[i].arrival_step, i))
        free_slots = list(range(self.config.max_num_seqs))
        running: list[_Sequence] = []
        steps: list[SpecStep] = []
        step = 0
        device = self.target.device
        with torch.no_grad():
            while waiting or running:
                start = time.perf_counter()
                admitted = []
                while waiting and free_slots and requests[waiting[0]].arrival_step <= step:
                    i = waiting.pop(0)
                    admitted.append(_Sequence(i, requests[i], free_slots.pop(0)))
                if admitted:
                    self._prefill_step(admitted)
                    _sync(device)
                    ms = (time.perf_counter() - start) * 1e3
                    steps.append(SpecStep(step, "prefill", len(admitted), 0, len(admitted), "eager",
                                          None, ms, 0.0, ms, 0, 0, len(admitted)))
                    running += admitted
                elif running:
                    record, draft_ms, num_spec, emitted, per_position = self._decode_step(
                        running, metrics)
                    _sync(device)
                    steps.append(SpecStep(
                        step, "decode", len(running), num_spec, record.batch_size, record.path,
                        record.graph_size, record.time_ms, draft_ms,
                        (time.perf_counter() - start) * 1e3, num_spec * self.k,
                        sum(per_position), emitted, per_position))
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


# ---- benchmark -----------------------------------------------------------------------------

def graph_memory_bytes(records, graph_pool: str = "shared") -> tuple[int, str]:
    """Bytes a runner's graphs hold and whether measured: the free-memory drops summed (CUDA),
    or the prediction for the pool mode (emulated)."""
    if not records:
        return 0, "predicted"
    if records[0].memory_kind == "measured":
        return sum(r.memory_bytes for r in records), "measured"
    return predict_pool_bytes([r.predicted_bytes for r in records], graph_pool), "predicted"


def spec_decode_benchmark(preset: str = "tiny", device: str = "auto", dtype: str = "float32",
                          policies=("vllm-0.6.0", "adaptive"), max_num_seqs=(8, 32),
                          num_speculative_tokens=(2, 4), draft: str = "truncated",
                          num_requests_per_seq: int = 2, max_tokens: int = 32,
                          max_model_len: int = 96, temperature: float = 0.0,
                          warmup: bool = True, seed: int = 0, load: str = "mixed") -> list[dict]:
    """Speculative decoding throughput, guard (vllm-0.6.0) against adaptive sizing.

    One row per (policy, max_num_seqs, k): decode tokens per second over a make_requests load of
    num_requests_per_seq * max_num_seqs requests (the same load for both policies; `load`
    "coverage" runs coverage_requests instead, every reachable scorer size once), the share of
    scorer steps that replayed a graph, the target's graph memory from its GraphRecords, and
    the acceptance metrics. Capture is not timed; with `warmup` the first max_num_seqs requests
    run once before the timed run (first-call kernel setup stays out of the numbers).
    """
    dev = resolve_device(device)
    target = build_target(preset, seed=seed, dtype=dtype, device=dev)
    drafter = build_draft(target, draft, seed=seed + 1)
    rows = []
    for seqs in max_num_seqs:
        for k in num_speculative_tokens:
            requests = load_requests(load, num_requests_per_seq * seqs, seqs, k, max_tokens,
                                     max_model_len, target.config.vocab_size, seed)
            for policy in policies:
                config = SpecDecodeConfig(seqs, k, policy=policy, temperature=temperature,
                                          max_model_len=max_model_len, seed=seed)
                engine = SpecDecodeEngine(target, drafter, config)
                records = engine.capture_model()
                if warmup:
                    engine.generate(requests[:seqs])
                result = engine.generate(requests)
                frame = result.steps_frame()
                decode = frame[frame.kind == "decode"]
                memory, kind = graph_memory_bytes(records["target"], config.graph_pool)
                draft_memory, _ = graph_memory_bytes(records["draft"], config.graph_pool)
                rows.append(dict(
                    preset=preset, dtype=dtype, backend=engine.runner.backend, policy=policy,
                    max_num_seqs=seqs, num_speculative_tokens=k, draft=draft,
                    temperature=temperature, num_requests=len(requests),
                    decode_tokens=int(decode.num_emitted_tokens.sum()),
                    decode_s=float(decode.step_ms.sum()) / 1e3,
                    tokens_per_s=float(decode.num_emitted_tokens.sum() / decode.step_ms.sum() * 1e3),
                    scorer_graph_fraction=float((decode.path == "graph").mean()),
                    max_scorer_batch_size=int(decode.batch_size.max()),
                    num_target_graphs=len(records["target"]),
                    target_graph_memory_bytes=memory, draft_graph_memory_bytes=draft_memory,
                    memory_kind=kind, **{k_: v for k_, v in result.metrics.as_dict().items()
                                         if k_ != "num_speculative_tokens"}))
    return rows


# ---- the repro command ---------------------------------------------------------------------

def run_speculative(policy: str = "vllm-0.5.5", max_num_seqs: int = 8,
                    num_speculative_tokens: int = 4, draft: str = "truncated",
                    num_requests: int = 16, max_tokens: int = 32, max_model_len: int = 64,
                    seed: int = 0, device: str = "auto", scorer: str = "batch-expansion",
                    temperature: float = 0.0, preset: str = "tiny",
                    log=None, load: str = "mixed",
                    dtype: str = "float32") -> tuple[SpecDecodeEngine, GenerateOutput]:
    """Speculative decoding of a load (see load_requests); vllm-0.5.5 raises the engine's KeyError.

    Target and draft are built in `dtype` (logits stay float32 either way).

    `log`, if given, receives a line describing the setup before generation starts.
    """
    dev = resolve_device(device)
    config = SpecDecodeConfig(max_num_seqs, num_speculative_tokens, policy=policy, scorer=scorer,
                              temperature=temperature, max_model_len=max_model_len, seed=seed)
    target = build_target(preset, seed=seed, dtype=dtype, device=dev)
    drafter = build_draft(target, draft, seed=seed + 1) if num_speculative_tokens else None
    requests = load_requests(load, num_requests, max_num_seqs, num_speculative_tokens, max_tokens,
                             max_model_len, target.config.vocab_size, seed)
    engine = SpecDecodeEngine(target, drafter, config)
    engine.capture_model()
    if log is not None:
        runner = engine.runner
        log(f"{policy} on {runner.backend}: target captured {list(runner.capture_sizes)}, "
            f"graph limit {runner.graph_limit}; {len(requests)} requests ({load} load), "
            f"max_num_seqs={max_num_seqs}, "
            f"k={num_speculative_tokens}, draft={draft}, scorer={scorer}, "
            f"temperature={temperature}")
    return engine, engine.generate(requests)


def format_report(output: GenerateOutput) -> str:
    """The per-step table and the acceptance metrics, as the repro command prints them."""
    frame = output.steps_frame()
    columns = {"step": "step", "kind": "kind", "num_seqs": "seqs", "num_speculating": "spec",
               "batch_size": "n", "path": "path", "graph_size": "graph", "scorer_ms": "score_ms",
               "draft_ms": "draft_ms", "num_draft_tokens": "proposed",
               "num_accepted_tokens": "accepted", "num_emitted_tokens": "emitted"}
    table = frame[list(columns)].rename(columns=columns)
    table["graph"] = table["graph"].map(lambda g: "-" if g is None or pd.isna(g) else str(int(g)))
    m = output.metrics
    decode = frame[frame.kind == "decode"]
    sizes = sorted(int(n) for n in decode.batch_size.unique())
    lines = [table.to_string(index=False, float_format=lambda x: f"{x:.2f}"), "",
             f"decode steps: {len(decode)}, on graphs: {int((decode.path == 'graph').sum())}, "
             f"eager: {int((decode.path == 'eager').sum())}; scorer batch sizes seen: {sizes}",
             f"drafts: {m.num_drafts}, proposed: {m.num_draft_tokens}, accepted: "
             f"{m.num_accepted_tokens}, acceptance rate: {m.acceptance_rate:.3f}, "
             f"accepted per position: {m.accepted_per_position.tolist()}",
             f"mean acceptance length (tokens per draft): {m.mean_acceptance_length:.3f}; "
             f"tokens per decode step: {decode.num_emitted_tokens.mean():.2f}"]
    return "\n".join(lines)
