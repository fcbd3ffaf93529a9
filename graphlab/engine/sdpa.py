"""The attention kernel: the SDPA backends the model may use on CUDA, and the one SDPA picks for
the model's own query, key, value and mask.

PyTorch's SDPA picks a kernel per call from its priority order (aten/src/ATen/native/
transformers/cuda/sdp_utils.cpp, `select_sdp_backend`). Since torch 2.9 that order starts with
cuDNN on sm90 when the runtime cuDNN is newer than 9.15 (`check_prefer_cudnn_attention`), and
cuDNN builds an execution plan for every new shape: a decode sweep meets hundreds. Flash
attention refuses any `attn_mask` (`check_for_attn_mask`), and the model passes an additive
float mask; the memory-efficient kernel takes a mask in q's dtype, float32, float16 and bfloat16
on sm80 and newer, head_dim a multiple of 8, and grouped query heads. So on CUDA the model runs
SDPA under `sdpa_kernel(CUDA_SDPA_BACKENDS)`: memory-efficient first, math if it ever refuses,
and `probe_sdpa` says which one ran, so a fallback shows in every row rather than hiding.
On CPU nothing is pinned: SDPA's CPU dispatch picks its own flash kernel or math, reported as
"cpu_flash_attention" or "cpu_math".
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.overrides import TorchFunctionMode

# Tried in this order (SDPA's own priority keeps memory-efficient ahead of math).
CUDA_SDPA_BACKENDS = (SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH)
_NAMES = {backend.value: name.lower() for name, backend in SDPBackend.__members__.items()}


def sdpa_context(device: torch.device):
    """The context a step's attention runs in: the pinned backends on CUDA, nothing elsewhere."""
    if device.type == "cuda":
        return sdpa_kernel(list(CUDA_SDPA_BACKENDS))
    return contextlib.nullcontext()


def sdpa_backend_name(q, k, v, mask) -> str:
    """The kernel SDPA picks for these tensors under the backends enabled now, e.g.
    "efficient_attention"; "cpu_" in front on CPU, whose dispatch is another function."""
    name = _NAMES.get(int(torch._fused_sdp_choice(q, k, v, mask)), "unknown")
    return name if q.device.type == "cuda" else f"cpu_{name}"


@dataclass(frozen=True)
class SdpaCall:
    """The first layer's SDPA call of one step: its tensors and the kernel SDPA picked."""

    query: torch.Tensor
    key: torch.Tensor
    value: torch.Tensor
    attn_mask: torch.Tensor
    backend: str


class _FirstSdpaCall(TorchFunctionMode):
    """Records the first scaled_dot_product_attention call made while it is active."""

    call: SdpaCall | None = None

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.scaled_dot_product_attention and self.call is None:
            q, k, v = args[:3]
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            self.call = SdpaCall(q, k, v, mask, sdpa_backend_name(q, k, v, mask))
        return func(*args, **kwargs)


def probe_sdpa(model, num_rows: int = 1, query_len: int = 1) -> SdpaCall:
    """The SDPA call of one model step of num_rows rows x query_len tokens, run as padding
    runs: token 0 at positions 0..query_len-1 of the pad slot, the only cache row it writes.

    The step is the model's own (`hidden_states`, in its SDPA context), so the tensors, mask
    included, are the ones a decode step of that shape passes to SDPA.
    """
    device = model.device
    ids = torch.zeros(num_rows, query_len, dtype=torch.long, device=device)
    positions = torch.arange(query_len, device=device).repeat(num_rows, 1)
    slots = torch.full((num_rows,), model.pad_slot, dtype=torch.long, device=device)
    with _FirstSdpaCall() as probe, torch.inference_mode():
        model.hidden_states(ids, positions, slots)
    return probe.call
