"""vLLM V1 0.9.0 to 0.10.0's `compilation_config.full_cuda_graph` (the kit's cudagraph_mode FULL)
and the attention backend: no support levels before 0.10.1, only whether GPUModelRunner.
initialize_attn_backend lets the backend run the whole model as one FULL graph
(data/vllm_full_cuda_graph_vectors.json, scripts/make_full_cuda_graph_vectors.py)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from graphlab.errors import BadInput
from graphlab.sizing.batch_defaults import DEVICE_TIERS
from graphlab.sizing.model_runner import release_key

_TIERS = tuple(DEVICE_TIERS)
# vLLM's first choice for a dense model (platforms/cuda.py: get_attn_backend_cls from 0.9.2 to
# 0.11.x, `_get_backend_priorities` from 0.12.0, read to 0.34.0): FLASHINFER on SM100, else
# FLASH_ATTN (graphlab.sizing.attention uses it from 0.10.1).
DEFAULT_BACKEND = {"h100": "FLASH_ATTN", "small": "FLASH_ATTN", "b200": "FLASHINFER"}

# vllm/attention/utils/fa_utils.py `get_flash_attn_version` (0.9.0 to 0.10.0): 3 on compute
# capability 9.x, else 2 (SM100 falls back to 2: "Cannot use FA version 3 on Blackwell").
FLASH_ATTN_VERSIONS = {"h100": 3, "small": 2, "b200": 2}
# The metadata builders whose `full_cudagraph_supported` is True in 0.9.2 to 0.10.0 (besides
# FlashAttention's, `get_flash_attn_version() == 3`; AttentionMetadataBuilder's default: False).
_FULL_CUDAGRAPH_BUILDERS = ("TritonAttentionBackend", "FlashMLABackend")
_FULL_GRAPH_LARGEST = 992  # FA3's internal heuristic (flash_attn.py FlashAttentionMetadataBuilder)


class FullCudaGraphCheck(Enum):
    """How V1 refuses `compilation_config.full_cuda_graph` (the kit's FULL) before cudagraph_mode:
    at start-up, in GPUModelRunner.initialize_attn_backend, before any graph is captured."""

    # 0.9.0 to 0.9.1: FlashAttention 3 alone, whatever the backend's builder.
    FA3_ONLY = "0.9.0"
    # 0.9.2 to 0.10.0: FlashAttentionMetadataBuilder.__init__ refuses FA2 and sizes above 992,
    # then the runner refuses a builder whose `full_cudagraph_supported` is False.
    PER_BUILDER = "0.9.2"

    def refusal(self, backend: str, flash_attn_version: int, largest: int) -> str | None:
        """vLLM's ValueError for full_cuda_graph with backend class `backend`, FlashAttention
        `flash_attn_version` on the device and capture sizes up to `largest`, or None."""
        fa3 = flash_attn_version == 3
        if self is FullCudaGraphCheck.FA3_ONLY:
            if backend == "FlashAttentionBackend" and fa3:
                return None
            return (
                "ValueError: full_cuda_graph is only supported with FA3. Current attention "
                f"backend is {backend}, FlashAttention version is {flash_attn_version}."
            )
        if backend == "FlashAttentionBackend":
            if not fa3:
                return "ValueError: AoT scheduling is required for full cuda graph."
            if largest > _FULL_GRAPH_LARGEST:
                return (
                    f"ValueError: Capture size larger than {_FULL_GRAPH_LARGEST} is not "
                    "supported for full cuda graph."
                )
            return None
        if backend in _FULL_CUDAGRAPH_BUILDERS:
            return None
        return (
            f"ValueError: Full CUDAGraph not supported for {backend}. Turn off CompilationConfig."
            "full_cuda_graph or use a different attention backend."
        )


@dataclass(frozen=True)
class FullGraphRange:
    """V1 releases from `first` with `full_cuda_graph` and no AttentionCGSupport: the check, the
    kit's backend names -> vLLM's classes (vllm/v1/attention/backends/), and vLLM's default per
    device tier (platforms/cuda.py `get_attn_backend_cls`)."""

    first: str
    check: FullCudaGraphCheck
    classes: dict[str, str]
    defaults: dict[str, str]


_CLASSES_090 = {
    "FLASH_ATTN": "FlashAttentionBackend",
    "FLASHINFER": "FlashInferBackend",
    "TRITON_ATTN": "TritonAttentionBackend",
    "FLASHMLA": "FlashMLABackend",
    "TRITON_MLA": "TritonMLABackend",
}
_CLASSES_092 = {
    **_CLASSES_090,
    "FLEX_ATTENTION": "FlexAttentionBackend",
    "CUTLASS_MLA": "CutlassMLABackend",
}
# 0.9.2 prefers FlashInfer on SM100 ("Using FlashInfer backend on V1 engine by default for
# Blackwell"); 0.9.0 and 0.9.1 pick FlashAttention wherever compute capability >= 8.0.
_FA_ONLY = dict.fromkeys(_TIERS, "FLASH_ATTN")
FULL_GRAPH_RANGES = (
    FullGraphRange("0.9.0", FullCudaGraphCheck.FA3_ONLY, _CLASSES_090, _FA_ONLY),
    # 0.9.1 adds CUTLASS MLA (vllm/v1/attention/backends/mla/cutlass_mla.py)
    FullGraphRange(
        "0.9.1",
        FullCudaGraphCheck.FA3_ONLY,
        {**_CLASSES_090, "CUTLASS_MLA": "CutlassMLABackend"},
        _FA_ONLY,
    ),
    FullGraphRange("0.9.2", FullCudaGraphCheck.PER_BUILDER, _CLASSES_092, DEFAULT_BACKEND),
)
# 0.10.1 replaces full_cuda_graph with cudagraph_mode (graphlab.sizing.attention.RANGES).
FULL_GRAPH_LAST = "0.10.0"


def full_graph_range(version: str) -> FullGraphRange | None:
    """The full_cuda_graph range release `version` is in; None outside 0.9.0 to 0.10.0."""
    if release_key(version) > release_key(FULL_GRAPH_LAST):
        return None
    found = [r for r in FULL_GRAPH_RANGES if release_key(r.first) <= release_key(version)]
    return found[-1] if found else None


def full_graph_support(version: str, name: str | None, tier: str) -> tuple[str, str]:
    """(the class of vLLM backend `name` (None: vLLM's default for `tier`) in release `version`,
    0.9.0 to 0.10.0, and whether vLLM lets it run full_cuda_graph there); GraphlabError for a
    name the release does not have."""
    found = full_graph_range(version)
    chosen = found.defaults[tier] if name is None else str(name).upper()
    if chosen not in found.classes:
        raise BadInput(
            f"attention backend {chosen!r} is not in the kit's table for vLLM {version}; known: "
            f"{', '.join(found.classes)}"
        )
    cls, fa = found.classes[chosen], FLASH_ATTN_VERSIONS[tier]
    refused = found.check.refusal(cls, fa, 0)
    how = "vLLM's default for a dense model" if name is None else "as named"
    verdict = "refuses" if refused else "accepts"
    return (
        cls,
        f"attention backend {chosen} ({how} on the {tier!r} tier, FlashAttention {fa} there): "
        f"vLLM {version} has no AttentionCGSupport; it {verdict} compilation_config."
        f"full_cuda_graph (FULL) with {cls}",
    )
