"""The command line's upper bounds on a sizing config, so a huge value fails at once instead of
sweeping for minutes or allocating GBs; `check_limits` applies them however the config was given."""

from __future__ import annotations

from graphlab.errors import BadInput, check_instance
from graphlab.sizing.config import SizingConfig

MAX_NUM_SEQS_LIMIT = 65536  # S
NUM_SPECULATIVE_TOKENS_LIMIT = 64  # k
MAX_NUM_BATCHED_TOKENS_LIMIT = 2**20  # T, and every capture size


def check_limits(cfg: SizingConfig) -> SizingConfig:
    """cfg itself; GraphlabError naming the first value above its limit (S, k, T, capture sizes)."""
    check_instance("cfg", cfg, SizingConfig)
    sizes = cfg.cudagraph_capture_sizes or ()
    bounds = (
        ("max_num_seqs", cfg.max_num_seqs, MAX_NUM_SEQS_LIMIT),
        ("num_speculative_tokens", cfg.num_speculative_tokens, NUM_SPECULATIVE_TOKENS_LIMIT),
        ("max_num_batched_tokens", cfg.max_num_batched_tokens, MAX_NUM_BATCHED_TOKENS_LIMIT),
        (
            "max_cudagraph_capture_size",
            cfg.max_cudagraph_capture_size,
            MAX_NUM_BATCHED_TOKENS_LIMIT,
        ),
        (
            "every cudagraph_capture_sizes entry",
            max(sizes, default=None),
            MAX_NUM_BATCHED_TOKENS_LIMIT,
        ),
    )
    for name, value, limit in bounds:
        if value is not None and value > limit:
            raise BadInput(f"{name} must be at most {limit}, got {value}")
    return cfg
