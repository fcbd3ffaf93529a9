"""The knobs capture sizing depends on, as a user gives them to vLLM, validated field by field."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.errors import BadInput, check_choice, check_int, check_sizes
from graphlab.sizing.attention import CG_SUPPORTS, DEFAULT_CG_SUPPORT
from graphlab.sizing.dispatch import CUDAGRAPH_MODES
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
)
from graphlab.sizing.model_runner import MODEL_RUNNERS
from graphlab.sizing.speculative import normalized_method

# vLLM 0.34.0's settings of prefill and decode graphs (vllm/config/compilation.py).
SPLIT_CAPTURE_SETTINGS = (
    "prefill_cudagraph_capture_token_sizes",
    "max_prefill_cudagraph_capture_tokens",
    "decode_cudagraph_capture_request_sizes",
    "max_decode_cudagraph_capture_requests",
    "max_decode_cudagraph_capture_tokens",
)
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
    # speculative_config's method ("eagle", "ngram", "suffix", ...), as vLLM normalises it
    # (graphlab.sizing.speculative: "deepseek_mtp" -> "mtp"); None: not given.
    speculative_method: str | None = None
    # The method as the user wrote it, before that normalisation ("deepseek_mtp", "[ngram]"):
    # vLLM before 0.10.0 chooses its engine on that name (`EngineArgs._is_v1_supported_oracle`).
    # None (or a name that no longer normalises to speculative_method): speculative_method's.
    speculative_method_as_given: str | None = None
    # The lowest AttentionCGSupport among the model's attention backends, and that backend's
    # class name (vLLM's warnings name it); vLLM lowers cudagraph_mode to what it supports.
    attention_cg_support: str = DEFAULT_CG_SUPPORT
    attention_backend: str | None = None
    # get_flash_attn_version() on the device (3 on Hopper, else 2): 0.9.0 to 0.10.0 refuse
    # full_cuda_graph without FlashAttention 3 (graphlab.sizing.full_cuda_graph).
    flash_attn_version: int = 3
    # speculative_config.num_speculative_tokens_per_batch_size (dynamic speculation, vLLM 0.24.0
    # on): (range_start, range_end, k) entries, inclusive request ranges; sorted on validation.
    num_speculative_tokens_per_batch_size: tuple[tuple[int, int, int], ...] | None = None
    # vLLM 0.34.0's compilation_config settings of prefill graphs (token counts) and decode graphs
    # (request counts), SPLIT_CAPTURE_SETTINGS; None: unset. The size lists may be empty ([]
    # captures none) and hold any integers (vLLM drops those out of range with a WARNING).
    prefill_cudagraph_capture_token_sizes: tuple[int, ...] | None = None
    max_prefill_cudagraph_capture_tokens: int | None = None
    decode_cudagraph_capture_request_sizes: tuple[int, ...] | None = None
    max_decode_cudagraph_capture_requests: int | None = None
    max_decode_cudagraph_capture_tokens: int | None = None

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
        check_choice("flash_attn_version", self.flash_attn_version, (2, 3))
        if self.speculative_method is not None and not isinstance(self.speculative_method, str):
            raise BadInput(
                f"speculative_method must be a method name, got {self.speculative_method!r}"
            )
        given = self.speculative_method_as_given
        if given is not None and not isinstance(given, str):
            raise BadInput(f"speculative_method_as_given must be a method name, got {given!r}")
        if given is None or normalized_method(given) != normalized_method(self.speculative_method):
            given = self.speculative_method  # replace() keeps the name given with the same method
        object.__setattr__(self, "speculative_method_as_given", given)
        object.__setattr__(self, "speculative_method", normalized_method(self.speculative_method))
        for name in (
            "prefill_cudagraph_capture_token_sizes",
            "decode_cudagraph_capture_request_sizes",
        ):
            sizes = getattr(self, name)
            if sizes is not None:
                checked = () if sizes in ([], ()) else check_sizes(name, sizes, -(2**62))
                object.__setattr__(self, name, checked)
        for name, minimum in (
            ("max_prefill_cudagraph_capture_tokens", 0),
            ("max_decode_cudagraph_capture_requests", 0),
            ("max_decode_cudagraph_capture_tokens", 1),
        ):
            if getattr(self, name) is not None:
                check_int(name, getattr(self, name), minimum)  # vLLM's Field(ge=...)
        if self.num_speculative_tokens_per_batch_size is not None:
            object.__setattr__(
                self,
                "num_speculative_tokens_per_batch_size",
                _checked_schedule(
                    self.num_speculative_tokens_per_batch_size, self.num_speculative_tokens
                ),
            )

    def within_limits(self) -> SizingConfig:
        """The config itself; BadInput naming the first value above the kit's limit
        (graphlab.sizing.limits: S, k, T, capture sizes)."""
        bounds = (
            ("max_num_seqs", self.max_num_seqs, MAX_NUM_SEQS_LIMIT),
            ("num_speculative_tokens", self.num_speculative_tokens, NUM_SPECULATIVE_TOKENS_LIMIT),
            ("max_num_batched_tokens", self.max_num_batched_tokens, MAX_NUM_BATCHED_TOKENS_LIMIT),
            (
                "max_cudagraph_capture_size",
                self.max_cudagraph_capture_size,
                MAX_NUM_BATCHED_TOKENS_LIMIT,
            ),
            (
                "every cudagraph_capture_sizes entry",
                max(self.cudagraph_capture_sizes or (), default=None),
                MAX_NUM_BATCHED_TOKENS_LIMIT,
            ),
        )
        for name, value, limit in bounds:
            if value is not None and value > limit:
                raise BadInput(f"{name} must be at most {limit}, got {value}")
        return self

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
    def split_capture_settings(self) -> dict:
        """The vLLM 0.34.0 prefill / decode capture settings this config sets, by name."""
        values = {name: getattr(self, name) for name in SPLIT_CAPTURE_SETTINGS}
        return {name: value for name, value in values.items() if value is not None}

    @property
    def decode_query_len(self) -> int:
        """Tokens a speculating request submits per decode step: 1 + k (vLLM's
        uniform_decode_query_len)."""
        return 1 + self.num_speculative_tokens

    def verify_query_lens(self, num_reqs) -> np.ndarray:
        """Per batch of num_reqs requests, the tokens each verifies: 1 + k, k from
        num_speculative_tokens_per_batch_size where set (vllm/v1/spec_decode/dynamic/utils.py
        `build_dynamic_sd_schedule_lookup`: the last range starting at or below num_reqs, so gaps
        and the tail carry the previous k, clamped to num_speculative_tokens)."""
        num_reqs = np.asarray(num_reqs, dtype=np.int64)
        schedule = self.num_speculative_tokens_per_batch_size
        if schedule is None:
            return np.full_like(num_reqs, self.decode_query_len)
        starts = np.array([start for start, _, _ in schedule], dtype=np.int64)
        ks = np.minimum([k for _, _, k in schedule], self.num_speculative_tokens)
        return 1 + ks[np.searchsorted(starts, num_reqs, side="right") - 1]

    @property
    def decode_tiers(self) -> tuple[tuple[int, int], ...]:
        """(query length, the widest batch of 1..max_num_seqs requests that runs at it), by query
        length: one tier without dynamic speculation (vllm/config/vllm.py `_set_cudagraph_sizes`'s
        decode_tiers)."""
        lens = self.verify_query_lens(np.arange(1, self.max_num_seqs + 1))
        return tuple((int(q), int(np.flatnonzero(lens == q)[-1]) + 1) for q in np.unique(lens))


def _checked_schedule(schedule, num_speculative_tokens: int) -> tuple[tuple[int, int, int], ...]:
    """The schedule sorted by range_start, or BadInput where vLLM refuses it
    (vllm/v1/spec_decode/dynamic/utils.py `validate_and_normalize_dynamic_sd_schedule` and
    `build_dynamic_sd_schedule_lookup`, raised at engine start)."""
    name = "num_speculative_tokens_per_batch_size"
    if not isinstance(schedule, list | tuple) or not schedule:
        raise BadInput(
            f"{name} must be a non-empty list of (range_start, range_end, "
            f"num_speculative_tokens) entries, got {schedule!r}"
        )
    entries = []
    for entry in schedule:
        if not isinstance(entry, list | tuple) or len(entry) != 3:
            raise BadInput(
                f"{name}: each entry must be (range_start, range_end, num_speculative_tokens), "
                f"got {entry!r}"
            )
        where = f"{name} entry {list(entry)}:"
        start, end = (check_int(f"{where} range", v, 1) for v in entry[:2])
        k = check_int(f"{where} num_speculative_tokens", entry[2], 0)
        if start > end:
            raise BadInput(f"{name}: range start must be <= end, got {list(entry)}")
        entries.append((start, end, k))
    entries.sort(key=lambda entry: entry[0])
    for before, after in zip(entries, entries[1:], strict=False):
        if after[0] <= before[1]:
            raise BadInput(
                f"{name}: batch-size ranges must not overlap, got {list(before)} and {list(after)}"
            )
    if entries[0][0] != 1:
        raise BadInput(
            f"{name}: the first batch-size range must start at 1 (every batch size needs a k), "
            f"got {list(entries[0])}"
        )
    if num_speculative_tokens <= 0:
        raise BadInput(f"{name} needs num_speculative_tokens > 0 (the most drafts), got 0")
    return tuple(entries)
