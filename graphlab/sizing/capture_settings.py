"""How vLLM V1 turns a config's capture settings into capture sizes (`VllmConfig.
_set_cudagraph_sizes`), before any rounding for speculative decoding."""

from __future__ import annotations

import math
from bisect import bisect_left
from functools import cache

from graphlab.sizing.config import SizingConfig


@cache
def token_grid(max_size: int, interactivity: bool = False) -> tuple[int, ...]:
    """V1's default grid: 1, 2, 4 (interactivity: every size 1..32), multiples of 8 below 256, then
    multiples of 16 up to max_size."""
    small = (
        range(1, min(max_size, 32) + 1)
        if interactivity
        else [s for s in (1, 2, 4) if s <= max_size]
    )
    return tuple(
        sorted({*small, *range(8, min(max_size + 1, 256), 8), *range(256, max_size + 1, 16)})
    )


def set_cudagraph_sizes(cfg: SizingConfig, tokens: int, ceiling: int, extra=()):
    """`VllmConfig._set_cudagraph_sizes` (vllm/config/vllm.py; the same in 0.12.0, 0.13.0 and
    0.33.0, which adds --performance-mode interactivity's sizes 1..32) once the default ceiling is
    known: returns (sizes, warnings, error).

    User sizes are deduplicated, those > T dropped, sorted; otherwise the grid up to
    min(T, max_cudagraph_capture_size or the default ceiling) plus `extra` (0.33: T and the
    uniform-decode sizes), none > T. A user maximum unequal to the largest size left is truncated
    with a WARNING, or refused (ValueError) when the user also set the sizes; shrinking a user list
    logs a WARNING too (vLLM compares lengths, so duplicates count as a shrink).
    """
    user_sizes, user_max = cfg.cudagraph_capture_sizes, cfg.max_cudagraph_capture_size
    if user_sizes is not None:
        sizes = sorted(size for size in set(user_sizes) if size <= tokens)
    else:
        limit = min(tokens, ceiling if user_max is None else user_max)
        grid = token_grid(limit, cfg.performance_mode == "interactivity")
        sizes = sorted(set(grid) | {size for size in extra if size <= tokens})
    largest, warnings = (sizes[-1] if sizes else 0), []
    if user_max is not None and user_max != largest:
        if user_sizes is not None:
            return (
                sizes,
                (),
                (
                    f"ValueError: customized max_cudagraph_capture_size(={user_max}) "
                    "should be consistent "
                    f"with the max value of cudagraph_capture_sizes(={largest})"
                ),
            )
        warnings.append(f"Truncating max_cudagraph_capture_size to {largest}")
    if user_sizes is not None and len(sizes) < len(user_sizes):
        warnings.append(
            f"cudagraph_capture_sizes specified in compilation_config {list(user_sizes)} "
            f"is overridden by config {sizes}"
        )
    return sizes, tuple(warnings), None


def request_counts(max_reqs: int, default_max_graph_size: int) -> list[int]:
    """Today's request-count grid for uniform decode sizes, capped at the platform default."""
    max_reqs = min(max_reqs, default_max_graph_size)
    return sorted(set(token_grid(max_reqs)) | {max_reqs})


def _walk_grid(limit: int, step) -> list[int]:
    """vLLM 0.34.0's `_walk_grid` (vllm/config/compilation.py): 1, ..., `limit`, each the next
    multiple of the largest power of two not above step(size)."""
    grid, size = [], 1
    while size < limit:
        grid.append(size)
        stride = 1 << max(0, math.floor(math.log2(max(1.0, step(size)))))
        size = (size // stride + 1) * stride
    return [*grid, limit] if limit else []


def prefill_token_grid(max_tokens: int, dense_head: bool = False) -> list[int]:
    """0.34.0's `prefill_cudagraph_capture_grid`: the prefill graphs' default token counts on
    data-center Blackwell (every count to 32 under interactivity)."""
    grid = _walk_grid(max_tokens, lambda t: min(t, max(8, t / 4), 0.07 * max(t, 4096)))
    if dense_head:
        grid = sorted({*grid, *(t for t in range(1, 33) if t < max_tokens)})
    return grid


def decode_request_grid(max_requests: int) -> list[int]:
    """0.34.0's `decode_cudagraph_capture_grid`: the decode graphs' default request counts on
    data-center Blackwell."""
    return _walk_grid(max_requests, lambda n: 0.65 * n ** (2 / 3))


def decode_capture_shapes(sizes, query_lens: dict[int, int], max_tokens: int):
    """0.34.0's `decode_cudagraph_capture_shapes`: the (requests, query length) decode graphs of
    the request counts `sizes`, per query length up to its most requests and `max_tokens`; the
    first size above that limit is captured at the limit."""
    sizes = sorted(set(sizes))
    shapes = set()
    for q, max_reqs in query_lens.items():
        limit = min(max_reqs, max_tokens // q)
        if limit >= 1:
            shapes.update((min(n, limit), q) for n in sizes[: bisect_left(sizes, limit) + 1])
    return sorted(shapes, key=lambda shape: (shape[1], shape[0]))
