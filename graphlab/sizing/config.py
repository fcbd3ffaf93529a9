"""The knobs capture sizing depends on, as a user gives them to vLLM, validated field by field."""

from __future__ import annotations

from dataclasses import dataclass

from graphlab.errors import GraphlabError, check_choice, check_int, check_sizes
from graphlab.sizing.attention import CG_SUPPORTS, DEFAULT_CG_SUPPORT
from graphlab.sizing.dispatch import CUDAGRAPH_MODES
from graphlab.sizing.model_runner import MODEL_RUNNERS

# vLLM's PerformanceMode (vllm/config/vllm.py, 0.32 and 0.33; absent from 0.12.0 and 0.13.0).
PERFORMANCE_MODES = ("balanced", "interactivity", "throughput")


@dataclass(frozen=True)
class SizingConfig:
    """The knobs capture sizing depends on, in vLLM's vocabulary."""

    max_num_seqs: int
    num_speculative_tokens: int = 0
    # None: engines that read it use DEFAULT_MAX_NUM_BATCHED_TOKENS; the others ignore it.
    max_num_batched_tokens: int | None = None
    # vLLM's compilation_config settings, as a user sets them (kept in the given order, since
    # vLLM logs them so); only the V1 engines read them, the others raise GraphlabError.
    cudagraph_capture_sizes: tuple[int, ...] | None = None
    max_cudagraph_capture_size: int | None = None
    # compilation_config.cudagraph_mode, one of CUDAGRAPH_MODES; None: the engine's default.
    cudagraph_mode: str | None = None
    # vLLM's --performance-mode (0.33: "interactivity" captures every size 1..32); None: balanced.
    performance_mode: str | None = None
    # vLLM's model runner: "v1" / "v2" as VLLM_USE_V2_MODEL_RUNNER=0 / 1 force it; "auto": as the
    # release decides (graphlab.sizing.model_runner), from the speculative method among others.
    model_runner: str = "auto"
    # speculative_config's method ("eagle", "ngram", "suffix", ...); None: not given.
    speculative_method: str | None = None
    # The lowest AttentionCGSupport among the model's attention backends, and that backend's
    # class name (vLLM's warnings name it); vLLM lowers cudagraph_mode to what it supports.
    attention_cg_support: str = DEFAULT_CG_SUPPORT
    attention_backend: str | None = None

    def __post_init__(self) -> None:
        check_int("max_num_seqs", self.max_num_seqs, 1)
        check_int("num_speculative_tokens", self.num_speculative_tokens, 0)
        if self.max_num_batched_tokens is not None:
            check_int("max_num_batched_tokens", self.max_num_batched_tokens, 1)
        if self.max_cudagraph_capture_size is not None:
            check_int("max_cudagraph_capture_size", self.max_cudagraph_capture_size, 1)
        if self.cudagraph_capture_sizes is not None:
            # vLLM asserts "cudagraph_capture_sizes should contain at least one element".
            sizes = check_sizes("cudagraph_capture_sizes", self.cudagraph_capture_sizes, 1)
            object.__setattr__(self, "cudagraph_capture_sizes", sizes)
        if self.cudagraph_mode is not None:
            check_choice("cudagraph_mode", self.cudagraph_mode, CUDAGRAPH_MODES)
        if self.performance_mode is not None:
            check_choice("performance_mode", self.performance_mode, PERFORMANCE_MODES)
        check_choice("model_runner", self.model_runner, MODEL_RUNNERS)
        check_choice("attention_cg_support", self.attention_cg_support, CG_SUPPORTS)
        if self.speculative_method is not None and not isinstance(self.speculative_method, str):
            raise GraphlabError(
                f"speculative_method must be a method name, got {self.speculative_method!r}"
            )

    @property
    def sets_capture_sizes(self) -> bool:
        """Whether the user set cudagraph_capture_sizes, max_cudagraph_capture_size,
        cudagraph_mode or the interactivity performance mode."""
        return (
            self.cudagraph_capture_sizes is not None
            or self.max_cudagraph_capture_size is not None
            or self.cudagraph_mode is not None
            or self.performance_mode == "interactivity"
        )

    @property
    def decode_query_len(self) -> int:
        """Tokens a speculating request submits per decode step: 1 + k (vLLM's
        uniform_decode_query_len)."""
        return 1 + self.num_speculative_tokens
