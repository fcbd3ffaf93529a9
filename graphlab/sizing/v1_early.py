"""vLLM V1 before 0.12.0 (0.8.0 to 0.11.2, V1 the default engine from 0.8.0): the step-8 list up
to 512 or 2*S, PIECEWISE graphs only to 0.8.x, `full_cuda_graph` in 0.9.x and 0.10.0, and the
first dispatcher's unrounded FULL keys in 0.10.1 to 0.11.2, read in each wheel
(data/vllm_sizing_vectors_v1_early.json)."""

from __future__ import annotations

from enum import Enum

from graphlab.errors import BadInput
from graphlab.sizing.attention import (
    DEFAULT_CG_SUPPORT,
    INITIAL,
    INITIAL_PIECEWISE,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import CUDAGraphMode
from graphlab.sizing.families import (
    DecodeKeys,
    PlainFull,
    Rounding,
    round_up,
)
from graphlab.sizing.full_cuda_graph import FullCudaGraphCheck
from graphlab.sizing.policy import (
    DEFAULT_GRAPH_CEILING,
)
from graphlab.sizing.v1_policy import V1Policy
from graphlab.sizing.v1_releases import Vllm012

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


class _EarlyV1Policy(V1Policy):
    """vLLM V1 from 0.8.0 to 0.11.0 (vllm/v1/worker/gpu_model_runner.py): `execute_model` pads n
    to the smallest captured size (`VllmConfig.pad_for_cudagraph`) where n <= the largest and runs
    eagerly above it; the list is never rounded for speculative decoding. A user list
    (compilation_config.cudagraph_capture_sizes) is kept whole (`init_with_cudagraph_sizes`):
    a size above max_num_batched_tokens fails `_dummy_run`'s assertion at capture. There is no
    max_cudagraph_capture_size, performance mode, dynamic speculation or model runner V2. The
    attention backend: 0.9.0 to 0.10.0 refuse full_cuda_graph with some (`full_cuda_graph_check`),
    from 0.10.1 vLLM lowers the mode to its AttentionCGSupport (graphlab.sizing.attention)."""

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
            raise BadInput(
                f"{self.name}: vLLM {self.release} has no max_cudagraph_capture_size "
                "(compilation_config gained it in 0.11.1)"
            )
        if cfg.cudagraph_mode is not None and cfg.cudagraph_mode not in self.cudagraph_modes:
            raise BadInput(
                f"{self.name}: cudagraph_mode {cfg.cudagraph_mode!r} does not exist in vLLM "
                f"{self.release}; {self.mode_choices}"
            )
        self._check_method(cfg)
        if not self.reads_attention_support and cfg.attention_cg_support != DEFAULT_CG_SUPPORT:
            raise BadInput(
                f"{self.name}: the kit models vLLM {self.release}'s graphs with an attention "
                f"backend reporting AttentionCGSupport.{DEFAULT_CG_SUPPORT} only, not "
                f"{cfg.attention_cg_support}"
            )

    reads_attention_support = False
    # What the release offers instead of cudagraph_mode (said where another mode is asked for).
    mode_choices = "its V1 captures PIECEWISE graphs only (no cudagraph_mode before 0.10.1)"
    # `EngineArgs._is_v1_supported_oracle` (data/vllm_v1_early_oracle.json, each wheel's own
    # statements): the speculative methods, as the user writes them, that V1 runs (any other
    # falls back to the V0 engine, or fails under VLLM_USE_V1=1); None: every method (draft_model
    # refused instead). 0.8.0 and 0.8.1 read --speculative-model "[ngram]" alone, 0.8.2 "ngram"
    # too: the kit answers as 0.8.0 for all three.
    v1_methods: tuple[str, ...] | None = ("[ngram]",)
    # Whether V1 runs them with VLLM_USE_V1 unset: 0.8.x keeps them off by default
    # (`_warn_or_fallback`: "... is experimental on VLLM_USE_V1=1. Falling back to V0 Engine.").
    v1_by_default = False

    def _check_method(self, cfg: SizingConfig) -> None:
        """GraphlabError where vLLM runs the method on its V0 engine (VLLM_USE_V1 unset; the
        kit's --model-runner v1 is VLLM_USE_V1=1 on these releases)."""
        method = cfg.speculative_method_as_given
        if self.v1_methods is None or method is None or cfg.model_runner == "v1":
            return
        runs = method in self.v1_methods
        if runs and self.v1_by_default:
            return
        why = (
            "vLLM runs it on V1 only with VLLM_USE_V1=1 (`_warn_or_fallback`: off by default)"
            if runs
            else f"V1 does not run it ({', '.join(self.v1_methods)} alone; "
            "EngineArgs._is_v1_supported_oracle)"
        )
        raise BadInput(
            f"{self.name}: speculative method {method!r} on vLLM {self.release}: {why}, so vLLM "
            "falls back to its V0 engine, which the kit does not model for this release"
            + ("; --model-runner v1 sets VLLM_USE_V1=1" if runs else "")
        )

    def startup_error(self, cfg):
        if self.v1_methods is None and cfg.speculative_method == "draft_model":
            return self.draft_model_error
        method = cfg.speculative_method_as_given
        forced = cfg.model_runner == "v1"  # VLLM_USE_V1=1: `_raise_or_fallback` raises instead
        if forced and self.v1_methods is not None and method not in (None, *self.v1_methods):
            return "NotImplementedError: VLLM_USE_V1=1 is not supported with Speculative Decoding."
        return super().startup_error(cfg)

    # The NotImplementedError vllm/engine/arg_utils.py raises for draft_model (0.10.0 on).
    draft_model_error = _DRAFT_MODEL_ERROR_010

    def _default_sizing(self, cfg, tokens):
        return self.graph_ceiling.of(cfg.max_num_seqs), []

    # How the release refuses full_cuda_graph (the kit's FULL) with the attention backend; None:
    # no full_cuda_graph (0.8.x) or a cudagraph_mode lowered to AttentionCGSupport (0.10.1 on).
    full_cuda_graph_check: FullCudaGraphCheck | None = None

    def sizing_key(self, cfg):
        if self.full_cuda_graph_check is None:
            return super().sizing_key(cfg)
        return (*super().sizing_key(cfg), cfg.attention_backend, cfg.flash_attn_version)

    def _full_graph_refusal(self, cfg: SizingConfig, sizes: list[int]) -> str | None:
        """The ValueError GPUModelRunner.initialize_attn_backend raises for full_cuda_graph with
        cfg's backend (FlashAttention without one named), else None."""
        if self.full_cuda_graph_check is None or self.cudagraph_mode(cfg) != CUDAGraphMode.FULL:
            return None
        backend = cfg.attention_backend or "FlashAttentionBackend"
        largest = sizes[-1] if sizes else 0
        return self.full_cuda_graph_check.refusal(backend, cfg.flash_attn_version, largest)

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
            error = self._full_graph_refusal(cfg, sizes)  # before capture: initialize_kv_cache
            if error is None and sizes and sizes[-1] > tokens:  # captured largest first
                error = (
                    "AssertionError: num_tokens <= self.scheduler_config.max_num_batched_tokens "
                    f"(vllm/v1/worker/gpu_model_runner.py _dummy_run): {sizes[-1]} > {tokens}"
                )
            if self.cudagraph_mode(cfg) is CUDAGraphMode.NONE:
                sizes, error = [], None
            self._cache[key] = (sizes, (), error)
        return self._cache[key]


class Vllm080(_EarlyV1Policy):
    """vllm 0.8.0 and 0.8.1, vllm/config.py `VllmConfig._set_cudagraph_sizes` (V1 branch):
    1, 2, 4, 8..512 step 8, <= max_num_batched_tokens, whatever max_num_seqs; every graph is
    PIECEWISE (CompilationLevel.PIECEWISE, no full_cuda_graph). V1 speculates with --speculative-
    model "[ngram]" alone, and only under VLLM_USE_V1=1 (vllm/engine/arg_utils.py
    `_is_v1_supported_oracle`: "Only Ngram speculative decoding so far", "ngram is supported on
    V1, but off by default for now")."""

    name = "vllm-0.8.0"
    release = "0.8.0"


class Vllm082(Vllm080):
    """vllm 0.8.2: 0.8.0's graphs; `_is_v1_supported_oracle` reads speculative_config's method
    and keeps V1 for "ngram" as well as "[ngram]", still only under VLLM_USE_V1=1."""

    name = "vllm-0.8.2"
    release = "0.8.2"
    v1_methods = ("ngram", "[ngram]")


class Vllm083(Vllm080):
    """vllm 0.8.3 and 0.8.4: 0.8.0's graphs; `_is_v1_supported_oracle` reads
    speculative_config's method and keeps V1 for "ngram" and "eagle" (is_eagle_enabled), still
    only under VLLM_USE_V1=1."""

    name = "vllm-0.8.3"
    release = "0.8.3"
    v1_methods = ("ngram", "[ngram]", "eagle")


class Vllm085(Vllm083):
    """vllm 0.8.5 and 0.8.5.post1: 0.8.0's graphs (`_set_cudagraph_sizes` adds sequence
    parallelism's sizes, with tensor parallelism > 1 only); `_is_v1_supported_oracle` keeps V1
    for "eagle3" too."""

    name = "vllm-0.8.5"
    release = "0.8.5"
    v1_methods = ("ngram", "[ngram]", "eagle", "eagle3")


class Vllm090(Vllm085):
    """vllm 0.9.0 to 0.9.1: 0.8.0's list (SchedulerConfig.cuda_graph_sizes defaults to [512]),
    and compilation_config.full_cuda_graph=True (the kit's cudagraph_mode FULL) captures the whole
    model as one FULL graph per size, replayed for every batch padded to it; GPUModelRunner.
    initialize_attn_backend refuses it at start-up unless the backend is FlashAttention 3.
    `_is_v1_supported_oracle` runs ngram, medusa, eagle, eagle3 and deepseek_mtp on V1 by default,
    tested on the method as written: every other MTP model type (mimo_mtp, "mtp", ...) falls back
    to V0, though later releases read it as mtp."""

    name = "vllm-0.9.0"
    release = "0.9.0"
    cudagraph_modes = (CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL)
    mode_choices = "it has PIECEWISE, and FULL as compilation_config.full_cuda_graph=True"
    # deepseek_mtp alone of the MTP model types (mimo_mtp, "mtp", ... fall back to V0), and
    # V1 runs these by default
    v1_methods = ("ngram", "[ngram]", "medusa", "eagle", "eagle3", "deepseek_mtp")
    v1_by_default = True
    full_cuda_graph_check = FullCudaGraphCheck.FA3_ONLY


class Vllm092(Vllm090):
    """vllm 0.9.2: 0.9.0's graphs (`skip_cuda_graphs` holds only where an attention builder's
    `can_run_in_cudagraph` is False, never for FlashAttention), but full_cuda_graph is refused
    per metadata builder (`full_cudagraph_supported`; FlashAttention's builder refuses FA2 and
    capture sizes above 992 first)."""

    name = "vllm-0.9.2"
    release = "0.9.2"
    full_cuda_graph_check = FullCudaGraphCheck.PER_BUILDER


class Vllm0100(Vllm092):
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
    full_cuda_graph_check = None
    decode_keys = DecodeKeys.CAPTURE_SIZES
    reads_attention_support = True
    attention_lowering = INITIAL
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
    attention_lowering = INITIAL_PIECEWISE
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
