"""Graph memory: measured around a real capture on CUDA, predicted from the model config elsewhere.

Measured (CUDA), per capture:
- ``memory_bytes``: the drop in free device memory (``torch.cuda.mem_get_info``) across the
  capture: what the graph costs the device, including allocator segment rounding and driver
  objects;
- ``pool_bytes``: the growth of the caching allocator's reserved bytes
  (``torch.cuda.memory_reserved``) across the capture: the segments the graph's private pool took;
- ``capture_loop_bytes`` (graphlab.engine.graphs.CaptureSession): the free-memory drop across
  the whole loop, the figure vLLM V1 logs once ("Graph capturing finished in ... took"). Like
  vLLM's it holds the cuBLAS workspace of the loop's one capture stream, made at its first
  warm-up (one stream per runner for all families, as vLLM's graph_capture has; the loop clears
  cuBLAS's workspaces first, so a pooled stream used before still counts its own).

Predicted (any device): the peak bytes of live intermediate tensors of graphlab's own decode step
at batch ``size``, counted analytically from the config (no allocator rounding, no cuBLAS
workspace, no SDPA-internal buffers). A captured graph keeps exactly these intermediates'
addresses reserved in its pool, so the prediction is the memory one graph needs on its own; a
shared pool captured largest first needs about the largest graph's, separate pools the sum. The
graph holds the decoder only (the LM head runs after replay), so no [size, vocab] logits count.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from graphlab.engine.config import ModelConfig, resolve_dtype

INT64_BYTES = 8


@dataclass(frozen=True)
class MemorySnapshot:
    """Free device bytes and the allocator's reserved bytes at one moment (CUDA only)."""

    free_bytes: int
    reserved_bytes: int

    @classmethod
    def take(cls, device: torch.device) -> MemorySnapshot:
        torch.cuda.synchronize(device)
        return cls(torch.cuda.mem_get_info(device)[0], torch.cuda.memory_reserved(device))


def gathered_kv_bytes(
    config: ModelConfig, size: int, max_seq_len: int, dtype: str | torch.dtype = torch.bfloat16
) -> int:
    """The dense copy of every row's whole K and V slot that one layer's attention makes,
    [size, num_kv_heads, max_seq_len, head_dim] each: paged attention reads the cache in place
    instead, so this term is graphlab's, not an engine's; it grows with max_seq_len."""
    b = torch.empty((), dtype=resolve_dtype(dtype)).element_size()
    return size * 2 * config.num_key_value_heads * max_seq_len * config.head_dim * b


def predict_graph_memory(
    config: ModelConfig,
    size: int,
    max_seq_len: int,
    dtype: str | torch.dtype = torch.bfloat16,
    query_len: int = 1,
) -> int:
    """Peak live intermediate bytes of one decode step of `size` tokens, in rows of `query_len`
    tokens (1: V0's one token per row; 1 + k: V1's uniform decode).

    The step keeps the residual stream, the tokens' rotary cos/sin, the attention mask (boolean
    and additive, [tokens, group, max_seq_len]) and the rows' cache indices alive throughout, and
    at its peak also holds the larger of two phases: attention (the normed input, the fused QKV
    output, the rotated q/k, the gathered K/V copy of gathered_kv_bytes, one per row, the
    attention output, the o_proj output) or the SwiGLU MLP (the normed input, the fused gate/up
    output, silu(gate), the product). The LM head is not in the graph.
    """
    b = torch.empty((), dtype=resolve_dtype(dtype)).element_size()
    s, h, d, t = size, config.hidden_size, config.head_dim, max_seq_len
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    group, rows = heads // kv, size // query_len
    # cos/sin per token, boolean and additive mask, two residual streams, int64 slot per row.
    persistent = s * (2 * d * b + t + group * t * b + 2 * h * b) + rows * INT64_BYTES
    attention = s * b * (
        h + (heads + 2 * kv) * d + (heads + kv) * d + heads * d + h
    ) + gathered_kv_bytes(config, rows, max_seq_len, dtype)
    mlp = s * b * (h + 4 * config.intermediate_size)
    return persistent + max(attention, mlp)


def predict_pool_bytes(per_graph_bytes: list[int], graph_pool: str) -> int:
    """All graphs' memory: a shared pool reuses the largest one's blocks, separate pools add up."""
    return max(per_graph_bytes, default=0) if graph_pool == "shared" else sum(per_graph_bytes)


def graph_memory_bytes(records, graph_pool: str = "shared") -> tuple[int, str]:
    """Bytes a runner's graphs hold (its GraphRecords) and whether measured: the free-memory
    drops summed (CUDA), or the prediction for the pool mode (emulated)."""
    if not records:
        return 0, "predicted"
    if records[0].memory_kind == "measured":
        return sum(r.memory_bytes for r in records), "measured"
    return predict_pool_bytes([r.predicted_bytes for r in records], graph_pool), "predicted"
