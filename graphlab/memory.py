"""Graph memory: measured around a real capture on CUDA, predicted from the model config elsewhere.

Measured (CUDA), per capture:
- ``memory_bytes``: the drop in free device memory (``torch.cuda.mem_get_info``) across the
  capture: what the graph costs the device, including allocator segment rounding and driver
  objects;
- ``pool_bytes``: the growth of the caching allocator's reserved bytes
  (``torch.cuda.memory_reserved``) across the capture: the segments the graph's private pool took.

Predicted (any device): the peak bytes of live intermediate tensors of graphlab's own decode step
at batch ``size``, counted analytically from the config (no allocator rounding, no cuBLAS
workspace). A captured graph keeps exactly these intermediates' addresses reserved in its pool, so
the prediction is the memory one graph needs on its own; a shared pool captured largest first
needs about the largest graph's, separate pools the sum.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from graphlab.model import ModelConfig, resolve_dtype

FLOAT32_BYTES = 4


@dataclass(frozen=True)
class MemorySnapshot:
    """Free device bytes and the allocator's reserved bytes at one moment (CUDA only)."""

    free_bytes: int
    reserved_bytes: int

    @classmethod
    def take(cls, device: torch.device) -> "MemorySnapshot":
        torch.cuda.synchronize(device)
        return cls(torch.cuda.mem_get_info(device)[0], torch.cuda.memory_reserved(device))


def predict_graph_memory(config: ModelConfig, size: int, max_seq_len: int,
                         dtype: str | torch.dtype = torch.bfloat16) -> int:
    """Peak live intermediate bytes of one decode step (one token per row) at batch `size`.

    The step keeps the residual stream, the rotary angles and the attention mask alive
    throughout, and at its peak also holds the largest of three phases: attention (q, k, v, the
    gathered cache rows of every row's slot, the boolean mask turned into an additive bias of the
    model dtype, the output), the SwiGLU MLP (three [size, intermediate] tensors) or the LM head
    (the logits in the model dtype and their float32 copy).
    """
    b = torch.empty((), dtype=resolve_dtype(dtype)).element_size()
    f = FLOAT32_BYTES
    s, h, d, t = size, config.hidden_size, config.head_dim, max_seq_len
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    group = heads // kv
    # freqs, angles (float32), cos, sin (model dtype), boolean mask, two residual streams.
    persistent = s * (d // 2 * f + d * f + 2 * d * b + t + 2 * h * b)
    attention = s * b * (h + 2 * heads * d + 2 * kv * d + 2 * kv * t * d + group * t + h)
    mlp = s * b * (h + 3 * config.intermediate_size)
    head_copy = config.vocab_size * f if b != f else 0  # .float() of float32 is free
    head = s * (h * b + config.vocab_size * b + head_copy)
    return persistent + max(attention, mlp, head)


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
