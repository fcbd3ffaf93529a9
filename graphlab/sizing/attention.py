"""The attention backend's CUDA-graph support (`AttentionCGSupport`) and how vLLM lowers
`cudagraph_mode` to it (`lower_cudagraph_mode`).

Read in the wheels: 0.13.0 `GPUModelRunner._check_and_update_cudagraph_mode` and 0.20.0 on
`CompilationConfig.resolve_cudagraph_mode_and_sizes` lower the mode the same way, taking the
lowest support among the model's backends (`get_cudagraph_support` of each metadata builder).
The kit models vLLM's default compilation (VLLM_COMPILE, attention among the splitting ops, -O2
and -O3), so each lowering takes its "attention is compiled piecewise" branch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from graphlab.errors import GraphlabError, check_choice
from graphlab.sizing.batch_defaults import DEVICE_TIERS
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode

# vLLM's AttentionCGSupport, lowest first (vllm/v1/attention/backend.py: NEVER = 0 .. ALWAYS = 3).
CG_SUPPORTS = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")
# The support the kit assumes without a backend: FlashAttention 3 on the reference H200.
DEFAULT_CG_SUPPORT = "ALWAYS"


@functools.cache  # a pure function every config's sizing key asks for (thousands per crash map)
def lower_cudagraph_mode(
    mode: str, support: str, query_len: int, backend: str | None
) -> tuple[CUDAGraphMode, tuple[str, ...], str | None]:
    """(the mode vLLM runs, its WARNING lines, the ValueError it refuses to start with or None)
    for `mode` under a backend class `backend` reporting `support`, with q = query_len."""
    check_choice("attention support", support, CG_SUPPORTS)
    level, warnings, mode = CG_SUPPORTS.index(support), [], CUDAGraphMode(mode)
    if mode is CUDAGraphMode.NONE:
        return mode, (), None
    head = f"with {backend} backend (support: AttentionCGSupport.{support})"
    if mode is CUDAGraphMode.FULL and support != "ALWAYS":  # the mixed batches' FULL graphs
        if support == "NEVER":
            return (
                mode,
                (),
                f"ValueError: CUDAGraphMode.{mode} is not supported {head}; please try "
                "cudagraph_mode=PIECEWISE, and make sure compilation mode is VLLM_COMPILE",
            )
        warnings.append(
            f"CUDAGraphMode.{mode} is not supported {head}; setting cudagraph_mode="
            "FULL_AND_PIECEWISE"
        )
        mode = CUDAGraphMode.FULL_AND_PIECEWISE
    full_decode = mode.decode_mode() is BatchPath.FULL
    if full_decode and support == "NEVER":
        warnings.append(
            f"CUDAGraphMode.{mode} is not supported {head}; setting cudagraph_mode=PIECEWISE "
            "because attention is compiled piecewise"
        )
        mode, full_decode = CUDAGraphMode.PIECEWISE, False
    if full_decode and query_len > 1 and level < CG_SUPPORTS.index("UNIFORM_BATCH"):
        warnings.append(
            f"CUDAGraphMode.{mode} is not supported with spec-decode for attention backend "
            f"{backend} (support: AttentionCGSupport.{support}); setting cudagraph_mode=PIECEWISE"
        )
        mode = CUDAGraphMode.PIECEWISE
    return mode, tuple(warnings), None


@dataclass(frozen=True)
class Backend:
    """One of vLLM's attention backends in one release: its class, and the support its metadata
    builder reports per device tier (one value: every tier)."""

    cls: str
    support: str | dict[str, str]
    source: str

    def support_on(self, tier: str) -> str | None:
        return self.support if isinstance(self.support, str) else self.support.get(tier)


# FlashAttention: FA3 on Hopper (and FA4 on Blackwell in 0.33.0) report ALWAYS, FA2 UNIFORM_BATCH.
_FA_013 = {"h100": "ALWAYS", "small": "UNIFORM_BATCH", "b200": "UNIFORM_BATCH"}
_FA_033 = {"h100": "ALWAYS", "small": "UNIFORM_BATCH", "b200": "ALWAYS"}
_MLA = "mla/"
_FA_MLA = _MLA + "flashattn_mla.py"
# Per release read (the kit's engine of it), vLLM's backend names (AttentionBackendEnum) and what
# their builders' `_cudagraph_support` / `get_cudagraph_support` return; FLASHINFER on Blackwell
# depends on the model's heads (TRT-LLM attention), so it is left out there.
BACKENDS = {
    "0.13.0": {
        "FLASH_ATTN": Backend("FlashAttentionBackend", _FA_013, "flash_attn.py"),
        "FLASHINFER": Backend(
            "FlashInferBackend",
            {"h100": "UNIFORM_SINGLE_TOKEN_DECODE", "small": "UNIFORM_SINGLE_TOKEN_DECODE"},
            "flashinfer.py (TRT-LLM attention needs SM100)",
        ),
        "TRITON_ATTN": Backend("TritonAttentionBackend", "ALWAYS", "triton_attn.py"),
        "FLEX_ATTENTION": Backend("FlexAttentionBackend", "NEVER", "flex_attention.py"),
        "FLASHMLA": Backend("FlashMLABackend", "UNIFORM_BATCH", _MLA + "flashmla.py"),
        "FLASH_ATTN_MLA": Backend("FlashAttnMLABackend", "UNIFORM_BATCH", _FA_MLA),
        "FLASHINFER_MLA": Backend(
            "FlashInferMLABackend", "UNIFORM_BATCH", _MLA + "flashinfer_mla.py"
        ),
        "CUTLASS_MLA": Backend(
            "CutlassMLABackend", "UNIFORM_SINGLE_TOKEN_DECODE", _MLA + "cutlass_mla.py"
        ),
        "TRITON_MLA": Backend("TritonMLABackend", "NEVER", _MLA + "triton_mla.py"),
    },
    "0.33.0": {
        "FLASH_ATTN": Backend("FlashAttentionBackend", _FA_033, "flash_attn.py"),
        "TRITON_ATTN": Backend("TritonAttentionBackend", "ALWAYS", "triton_attn.py"),
        "FLEX_ATTENTION": Backend("FlexAttentionBackend", "ALWAYS", "flex_attention.py"),
        "FLASHMLA": Backend("FlashMLABackend", "UNIFORM_BATCH", _MLA + "flashmla.py"),
        "FLASH_ATTN_MLA": Backend("FlashAttnMLABackend", "UNIFORM_BATCH", _FA_MLA),
        "FLASHINFER_MLA": Backend("FlashInferMLABackend", "ALWAYS", _MLA + "flashinfer_mla.py"),
        "CUTLASS_MLA": Backend(
            "CutlassMLABackend", "UNIFORM_SINGLE_TOKEN_DECODE", _MLA + "cutlass_mla.py"
        ),
        "TRITON_MLA": Backend("TritonMLABackend", "UNIFORM_BATCH", _MLA + "triton_mla.py"),
    },
}
# vLLM's first choice for a dense model (platforms/cuda.py `_get_backend_priorities`, 0.13.0 and
# 0.33.0): FLASHINFER on Blackwell (SM100), FLASH_ATTN elsewhere.
DEFAULT_BACKEND = {"h100": "FLASH_ATTN", "small": "FLASH_ATTN", "b200": "FLASHINFER"}


def attention_support(version: str, name: str | None, tier: str) -> tuple[str, str, str]:
    """(backend class, AttentionCGSupport, why) of vLLM backend `name` (None: vLLM's default
    for the tier) in release `version` on device tier `tier`; GraphlabError where the kit has not
    read that backend."""
    check_choice("device tier", tier, tuple(DEVICE_TIERS))
    chosen = DEFAULT_BACKEND[tier] if name is None else str(name).upper()
    table = BACKENDS.get(version)
    if table is None:
        if name is not None:
            raise GraphlabError(
                f"--attention-backend: the kit has read the attention backends of vLLM "
                f"{', '.join(BACKENDS)} only, not {version}'s"
            )
        return (
            "FlashAttentionBackend",
            DEFAULT_CG_SUPPORT,
            f"attention support assumed AttentionCGSupport.{DEFAULT_CG_SUPPORT} (FlashAttention "
            f"3 on Hopper); the backends are read for {', '.join(BACKENDS)} only",
        )
    backend = table.get(chosen)
    support = backend and backend.support_on(tier)
    if support is None:
        raise GraphlabError(
            f"attention backend {chosen!r} on the {tier!r} tier is not in the kit's table for "
            f"vLLM {version} (its support depends on the model there, or the name is unknown); "
            "known: "
            f"{', '.join(table)}"
        )
    how = "vLLM's default for a dense model" if name is None else "--attention-backend"
    return (
        backend.cls,
        support,
        f"attention backend {chosen} ({how} on the {tier!r} tier; {backend.cls} reports "
        f"AttentionCGSupport.{support}, vllm/v1/attention/backends/{backend.source})",
    )
