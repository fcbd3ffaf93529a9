"""Model runner V2's draft side (vllm/v1/worker/gpu/spec_decode/): the draft steps an EAGLE,
EAGLE-3 or MTP speculator and draft_model's run per decode step, and the graphs their cudagraph
managers keep (graphlab.sizing.drafter picks the model runner; docs/vllm_versions.md, "The draft
side")."""

from __future__ import annotations

from graphlab.sizing.capture_settings import decode_request_grid
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.drafter_steps import EAGLE_METHODS, NO_GRAPHS, DraftStep, named, since
from graphlab.sizing.families import families_for, families_of
from graphlab.sizing.model_runner import release_key

# The first release whose model runner V2 runs draft_model (init_speculator raises before).
V2_DRAFT_MODEL_FROM = "0.31.0"
# The class whose init_cudagraph_manager model runner V2's eagle, eagle3 and mtp run, from the
# release named (vllm/v1/worker/gpu/spec_decode/).
V2_SPECULATORS = (
    ("0.22.0", "eagle/speculator.py EagleSpeculator"),
    ("0.23.0", "autoregressive/speculator.py AutoRegressiveSpeculator"),
    ("0.32.0", "target_dependent_ar/speculator.py TargetDependentARSpeculator"),
)
# The speculator model runner V2 runs draft_model with, from the release named.
_V2_DRAFT_MODEL = (
    (V2_DRAFT_MODEL_FROM, "draft_model/speculator.py PlainDraftModelSpeculator"),
    ("0.32.0", "standalone_ar/speculator.py StandaloneARSpeculator"),
)


def _split_steps(
    policy, cfg: SizingConfig, method: str, q: int, requests: tuple[int, int] | None
) -> tuple[tuple[DraftStep, ...], str]:
    """vLLM 0.34.0 (vllm/v1/worker/gpu/spec_decode/): the draft prefill's SpeculatorCudaGraphManager
    runs the target's mode at query length q (EAGLE, EAGLE-3, MTP: the target's own graphs) or
    q + 1 (draft_model's StandaloneARSpeculator now captures too, one correction token more per
    request); the draft decodes' (autoregressive/speculator.py `init_cudagraph_manager`) run
    FULL_DECODE_ONLY at one token per request where the target's decode_mode() is FULL, on
    `get_draft_decode_cudagraph_request_sizes`: the request grid up to S, whatever the target's
    decode cap. Under a schedule the prefill manager keeps graphs at every k of it
    (`get_decode_cudagraph_query_lens`, up to the widest batch at that k) and a batch runs
    k(B) - 1 draft decodes (`_run_multi_step_decode`), whose graphs `specialize_spec_tokens`
    finds for every k >= 2."""
    target = policy.cudagraph_mode(cfg)
    extra = 1 if method == "draft_model" else 0
    prefill_len = q + extra
    # get_decode_cudagraph_query_lens(k + 1 + extra): each k of the schedule, its widest batch
    tiers = {length + extra: widest for length, widest in cfg.decode_tiers}
    decode_mode = (
        CUDAGraphMode.FULL_DECODE_ONLY
        if target.decode_mode() is BatchPath.FULL
        else CUDAGraphMode.NONE
    )
    # get_draft_decode_cudagraph_request_sizes: none where the target has no decode sizes
    grid = decode_request_grid(cfg.max_num_seqs) if policy.decode_request_sizes(cfg) else []
    speculator = "standalone_ar" if method == "draft_model" else "target_dependent_ar"
    prefill = DraftStep(
        named("draft prefill", q, requests),
        1,
        prefill_len,
        policy.speculator_families(cfg, prefill_len, target, tiers=tiers),
        True,
        f"{speculator}/speculator.py init_cudagraph_manager: the target's mode at query length "
        f"{prefill_len}",
        requests,
    )
    decode = DraftStep(
        named("draft decode", q, requests),
        q - 2,
        1,
        policy.speculator_families(cfg, 1, decode_mode, grid),
        True,
        "autoregressive/speculator.py init_cudagraph_manager: "
        f"{decode_mode} at query length 1 on get_draft_decode_cudagraph_request_sizes",
        requests,
    )
    note = (
        f"model runner V2 (vLLM 0.34.0): draft prefill on the target's mode at query length "
        f"{prefill_len}, draft decodes {decode_mode} at query length 1 on the request grid up to S"
    )
    return ((prefill, decode) if q > 2 else (prefill,)), note


# The first release whose speculator drafts k(B) tokens for a batch of B under a schedule
# (target_dependent_ar/speculator.py); before, `_multi_step_decode` runs num_speculative_steps - 1
# draft decodes whatever k(B).
V2_DRAFTS_PER_K_FROM = "0.32.0"
# The first release whose `CudaGraphManager._init_candidates` reads the schedule: the draft decode
# manager (query length 1) too, as query lengths k + 1 - num_speculative_tokens, until
# V2_DRAFTS_PER_K_FROM skips it there (`decode_query_len > num_speculative_tokens`).
V2_MANAGER_READS_SCHEDULE_FROM = "0.25.0"


def _before(policy, release: str) -> bool:
    return policy.release.key < release_key(release)


def _decode_tiers(policy, cfg: SizingConfig):
    """The query lengths the draft decode manager captures FULL graphs at under a schedule before
    V2_DRAFTS_PER_K_FROM (None: 1 alone), from the target's (policy.full_decode_tiers)."""
    k = cfg.num_speculative_tokens
    reads = not _before(policy, V2_MANAGER_READS_SCHEDULE_FROM) and _before(
        policy, V2_DRAFTS_PER_K_FROM
    )
    if cfg.num_speculative_tokens_per_batch_size is None or not reads:
        return None
    return tuple((q - k, cfg.max_num_seqs) for q, _ in policy.full_decode_tiers(cfg))


def _decode_mode(policy, cfg: SizingConfig) -> CUDAGraphMode:
    # PIECEWISE graphs are not supported for draft decodes (init_cudagraph_manager)
    if policy.cudagraph_mode(cfg).decode_mode() is BatchPath.FULL:
        return CUDAGraphMode.FULL_DECODE_ONLY
    return CUDAGraphMode.NONE


def _decode_query_lens(policy, cfg: SizingConfig) -> list[int]:
    """The query lengths the draft decode manager of an EAGLE-type speculator reads a schedule
    as, where it keeps FULL graphs (else none: nothing divides by them)."""
    tiers = _decode_tiers(policy, cfg)
    if tiers is None or _decode_mode(policy, cfg) is CUDAGraphMode.NONE:
        return []
    return sorted(q for q, _ in tiers)


def draft_decode_startup_error(policy, cfg: SizingConfig) -> str | None:
    """The error vLLM fails at start-up with where an EAGLE, EAGLE-3 or MTP speculator's draft
    decode manager reads the schedule's k = num_speculative_tokens - 1 as query length 0 (0.25.0
    to 0.31.x, `round_up` in `_init_candidates`), else None."""
    if cfg.speculative_method not in EAGLE_METHODS or 0 not in _decode_query_lens(policy, cfg):
        return None
    return "ZeroDivisionError: integer division or modulo by zero"


def dynamic_refusal(policy, cfg: SizingConfig, method: str) -> str | None:
    """Why model runner V2's drafter under cfg's schedule has no steps before
    V2_DRAFTS_PER_K_FROM (vLLM fails at start-up, or the kit does not model it), else None."""
    if cfg.num_speculative_tokens_per_batch_size is None or not _before(
        policy, V2_DRAFTS_PER_K_FROM
    ):
        return None
    if method == "draft_model" and not _before(policy, V2_DRAFT_MODEL_FROM):
        return (
            f"the drafter of draft_model on model runner V2 of {policy.name} under dynamic "
            "speculation is not modelled (its wheel's speculator was not read with a schedule)"
        )
    lens = _decode_query_lens(policy, cfg)
    if not lens:
        return None
    reads = (
        f"vLLM {policy.release}'s draft decode manager (CudaGraphManager._init_candidates, "
        "vllm/v1/worker/gpu/cudagraph_utils.py) reads the schedule as query lengths "
        f"k + 1 - num_speculative_tokens ({', '.join(map(str, lens))}; fixed in "
        f"{V2_DRAFTS_PER_K_FROM})"
    )
    failure = draft_decode_startup_error(policy, cfg)
    if failure:
        return f"{reads}: a length of 0 fails at start-up with {failure} (round_up)"
    if lens[0] < 0:
        return f"{reads}: the kit does not model the graphs a negative query length leaves"
    return None


def v2_steps(
    policy, cfg: SizingConfig, method: str, q: int, requests: tuple[int, int] | None
) -> tuple[tuple[DraftStep, ...], str]:
    if policy.splits_capture_sizes:  # 0.34.0
        return _split_steps(policy, cfg, method, q, requests)
    if method == "draft_model":
        speculator = since(_V2_DRAFT_MODEL, policy.release)
        if speculator is None:
            return (), (
                f"model runner V2 of {policy.name} does not run draft_model: init_speculator "
                "raises NotImplementedError: draft_model is not supported yet. (from "
                f"{V2_DRAFT_MODEL_FROM} it runs every draft step eagerly)"
            )
        # no cudagraph manager, CUDAGraphMode.NONE on every step
        prefill = DraftStep(
            named("draft prefill", q, requests),
            1,
            q + 1,
            NO_GRAPHS,
            True,
            f"{speculator}._prefill",
            requests,
        )
        decode = DraftStep(
            named("draft decode", q, requests),
            q - 2,
            1,
            NO_GRAPHS,
            True,
            f"{speculator}._multi_step_decode",
            requests,
        )
        note = (
            f"model runner V2: {speculator.split()[-1]} captures no CUDA graphs (draft_model), "
            "so every draft step runs eagerly"
        )
    else:
        speculator = since(V2_SPECULATORS, policy.release)
        decode_mode = _decode_mode(policy, cfg)
        prefill = DraftStep(
            named("draft prefill", q, requests),
            1,
            q,
            families_for(policy, cfg),
            True,
            f"{speculator}.init_cudagraph_manager: the target's mode at query length 1 + k",
            requests,
        )
        # under a schedule before V2_DRAFTS_PER_K_FROM: k - 1 draft decodes whatever k(B)
        every_k = requests is not None and _before(policy, V2_DRAFTS_PER_K_FROM)
        decode = DraftStep(
            named("draft decode", q, requests),
            cfg.num_speculative_tokens - 1 if every_k else q - 2,
            1,
            families_of(
                decode_mode,
                policy.capture_sizes(cfg),
                cfg.max_num_seqs,
                1,
                decode_tiers=_decode_tiers(policy, cfg),
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
        if every_k:
            return ((prefill, decode) if decode.repeats else (prefill,)), note
    return ((prefill, decode) if q > 2 else (prefill,)), note


# Model runner V2's dflash (dflash/speculator.py `DFlashSpeculator`, a DFlash draft model's
# architecture): the first release that runs it, the first whose `init_cudagraph_manager` also asks
# the draft attention for UNIFORM_BATCH support, and the first the kit does not draw it on (0.34.0
# sizes its manager by request count).
V2_DFLASH = ("0.24.0", "0.28.0", "0.34.0")


def draws_dflash(policy, cfg: SizingConfig) -> bool:
    """Whether the kit draws model runner V2's dflash drafter for cfg (V2_DFLASH, no schedule)."""
    first, _, last = V2_DFLASH
    return (
        cfg.num_speculative_tokens_per_batch_size is None
        and not _before(policy, first)
        and _before(policy, last)
    )


def dflash_steps(policy, cfg: SizingConfig) -> tuple[tuple[DraftStep, ...], str]:
    """DFlashSpeculator.propose: every draft token in one query pass of 1 + k tokens per request,
    on a DFlashCudaGraphManager (a CudaGraphManager on the target's list) in FULL_DECODE_ONLY where
    the target's decode_mode() is FULL (and, from V2_DFLASH[1], the draft attention supports
    UNIFORM_BATCH), else none; the context K/V of the target's tokens is computed eagerly."""
    q, full = cfg.decode_query_len, _decode_mode(policy, cfg) is CUDAGraphMode.FULL_DECODE_ONLY
    if full and not _before(policy, V2_DFLASH[1]):
        full = cfg.attention_cg_support in ("ALWAYS", "UNIFORM_BATCH")
    mode = CUDAGraphMode.FULL_DECODE_ONLY if full else CUDAGraphMode.NONE
    families = families_of(
        mode, policy.capture_sizes(cfg), cfg.max_num_seqs, q, candidates=policy.candidates(cfg)
    )
    step = DraftStep(
        "dflash query pass",
        1,
        q,
        families,
        True,
        f"dflash/speculator.py DFlashSpeculator.init_cudagraph_manager: {mode} at query length {q}",
    )
    note = (
        f"model runner V2: DFlashSpeculator drafts all {cfg.num_speculative_tokens} tokens in one "
        f"pass on its DFlashCudaGraphManager ({mode}); DFlash2, LiLiCorr and XPress draft "
        "architectures run other speculators, not modelled"
    )
    return (step,), note
