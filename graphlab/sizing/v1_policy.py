"""vLLM V1's sizing and dispatch as one policy (`V1Policy`): the capture list
(`_set_cudagraph_sizes`), the mode the attention backend and the model runner leave, the
rounding for speculative decoding and graphlab.sizing.families' dispatch; each release changes
its rule values (graphlab.sizing.v1_releases, v1_early, v1_split; docs/vllm_versions.md keeps
their history)."""

from __future__ import annotations

from abc import abstractmethod

from graphlab.errors import BadInput
from graphlab.sizing.attention import LOWERING, Lowering, lower_cudagraph_mode
from graphlab.sizing.capture_settings import (
    set_cudagraph_sizes,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, BatchUnit, CUDAGraphMode, Dispatches
from graphlab.sizing.drafter_v2 import draft_decode_startup_error
from graphlab.sizing.families import (
    Candidates,
    DecodeKeys,
    GraphFamilies,
    PlainFull,
    Rounding,
    families_for,
    round_for_spec_decode,
)
from graphlab.sizing.model_runner import Release, choose_model_runner, release_key
from graphlab.sizing.policy import (
    PERFORMANCE_MODE_FROM,
    SizingPolicy,
)

# vllm/config/vllm.py `_maybe_disable_dynamic_sd_for_v1` (0.33.0): the speculative methods whose
# model runner V1 proposer keeps num_speculative_tokens_per_batch_size; any other drops it.
V1_DYNAMIC_METHODS = ("ngram", "eagle", "eagle3", "mtp", "draft_model", "dflash")


class V1Policy(SizingPolicy):
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
    release = Release("")
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
    # Whether the engine's releases disagree on the schedule of a method outside
    # V1_DYNAMIC_METHODS on model runner V1 (0.32.0 keeps it, 0.33.0 drops it).
    v1_schedule_split = False
    # Whether `_maybe_override_dynamic_sd_cudagraph_mode` spares model runner V2 (0.25.0 on).
    dynamic_override_reads_runner = True
    # The cudagraph_mode values the release can run (every one from 0.10.1).
    cudagraph_modes: tuple[CUDAGraphMode, ...] = tuple(CUDAGraphMode)
    # How the release lowers the mode to the attention backend's support (graphlab.sizing.
    # attention.RANGES holds the same value per release).
    attention_lowering: Lowering = LOWERING
    # Whether the release lowers the mode to an AttentionCGSupport (from 0.10.1; before, the kit
    # models FlashAttention 3's graphs alone).
    reads_attention_support = True

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.release = Release(cls.release)  # each engine's release is resolved once, here

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
        runner, why = choose_model_runner(
            self.release,
            cfg.model_runner,
            cfg.speculative_method,
            cfg.num_speculative_tokens_per_batch_size is not None,
        )
        if runner not in self.model_runners:
            raise BadInput(
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
            raise BadInput(
                f"performance_mode {cfg.performance_mode!r}: {self.name} does not have "
                f"--performance-mode (vLLM added it in {PERFORMANCE_MODE_FROM})"
            )
        runner = self.model_runner(cfg)[0]
        method = cfg.speculative_method
        if (
            self.v1_schedule_split
            and runner == "v1"
            and cfg.num_speculative_tokens_per_batch_size is not None
            and method not in (None, *V1_DYNAMIC_METHODS)
        ):
            raise BadInput(
                f"{self.name} models vLLM 0.32.0 and 0.33.0, which differ here: 0.33.0's "
                "_maybe_disable_dynamic_sd_for_v1 drops num_speculative_tokens_per_batch_size "
                f"for speculative method {method!r} on model runner V1 (static "
                "num_speculative_tokens), 0.32.0 keeps it; for 0.33.0 leave the schedule out"
            )

    def cudagraph_mode(self, cfg: SizingConfig) -> CUDAGraphMode:
        """The cudagraph_mode vLLM runs: cfg's, or the version's default, lowered to what the
        attention backend supports (graphlab.sizing.attention)."""
        return self._lowered(cfg)[0]

    def _lowered(self, cfg: SizingConfig):
        requested = CUDAGraphMode(cfg.cudagraph_mode or self.default_cudagraph_mode)
        backend = cfg.attention_backend or "FlashAttentionBackend"
        override = self._dynamic_override(cfg, requested)
        mode, warnings, error = lower_cudagraph_mode(
            override or requested,
            cfg.attention_cg_support,
            cfg.decode_query_len,
            backend,
            self.attention_lowering,
        )
        if override:
            warning = dynamic_piecewise_warning(requested, self.dynamic_override_reads_runner)
            warnings = (warning, *warnings)
        return mode, warnings, error

    def _dynamic_override(self, cfg: SizingConfig, requested: CUDAGraphMode):
        """PIECEWISE where vLLM overrides a mode with FULL graphs for dynamic speculation on model
        runner V1 (vllm/config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`, run before the
        attention backend lowers the mode; on model runner V2 too where it does not read
        use_v2_model_runner), else None."""
        dynamic = cfg.num_speculative_tokens_per_batch_size is not None
        full = requested.decode_mode() is BatchPath.FULL  # CUDAGraphMode.has_full_cudagraphs()
        spared = self.dynamic_override_reads_runner and self.model_runner(cfg)[0] == "v2"
        if dynamic and full and not spared:
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

    def full_decode_tiers(self, cfg: SizingConfig) -> tuple[tuple[int, int], ...]:
        """The (query length, widest batch) pairs FULL uniform-decode graphs are captured at
        under dynamic speculation: the scheduler's (SizingConfig.decode_tiers; model runner V2's
        `_init_candidates` reads the same dense lookup from 0.29.0 on)."""
        return cfg.decode_tiers

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
        families: GraphFamilies = families_for(self, cfg, capture_sizes)
        return families.dispatch_batches(ns, uniform, query_lens)

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
        if self.model_runner(cfg)[0] == "v2" and not error:
            error = draft_decode_startup_error(self, cfg)  # the speculator's managers
        if error or not sizes or len(self.capture_array(cfg)):
            return error  # an empty configured list is not rounded: vLLM returns early
        return (
            "ValueError: No valid cudagraph sizes after rounding to multiple of "
            f"{cfg.decode_query_len}"
        )


def dynamic_piecewise_warning(requested: CUDAGraphMode, names_v2: bool = True) -> str:
    """The WARNING `_maybe_override_dynamic_sd_cudagraph_mode` logs (vllm/config/vllm.py; 0.24.0's
    does not point to model runner V2, which it overrides too)."""
    hint = " Use VLLM_USE_V2_MODEL_RUNNER=1 if you want to use full CUDA graphs."
    return (
        "Dynamic speculative decoding changes the target verification length at runtime. "
        f"Overriding cudagraph_mode from {requested.value} to PIECEWISE for reliability."
        + (hint if names_v2 else "")
    )
