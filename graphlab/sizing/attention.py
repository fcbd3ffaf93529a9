"""The attention backend's CUDA-graph support (`AttentionCGSupport`) and how vLLM lowers
`cudagraph_mode` to it (`lower_cudagraph_mode`), for every V1 release from 0.10.1, the first
with cudagraph_mode (data/vllm_attention_vectors.json, scripts/make_attention_vectors.py); before
it, 0.9.0 to 0.10.0's yes or no to `compilation_config.full_cuda_graph` (graphlab.sizing.
full_cuda_graph).

vLLM takes the lowest support among the model's backends and lowers the mode in
`GPUModelRunner.initialize_cudagraph_capture` (0.10.1 to 0.11.0, reading the metadata builder's
`cudagraph_support`), `GPUModelRunner._check_and_update_cudagraph_mode` (0.11.1 to 0.19.1,
`get_cudagraph_support`) and `CompilationConfig.resolve_cudagraph_mode_and_sizes` (0.20.0 on,
the same answers with either model runner). The kit models vLLM's default compilation
(VLLM_COMPILE, attention among the splitting ops, -O2 and -O3), so each lowering takes its
"attention is compiled piecewise" branch.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from graphlab.errors import BadInput, check_choice
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.full_cuda_graph import DEFAULT_BACKEND, full_graph_range, full_graph_support
from graphlab.sizing.model_runner import release_key

# vLLM's AttentionCGSupport, lowest first (vllm/v1/attention/backend.py: NEVER = 0 .. ALWAYS = 3).
CG_SUPPORTS = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")
# The support the kit assumes without a backend: FlashAttention 3 on the reference H200.
DEFAULT_CG_SUPPORT = "ALWAYS"


@dataclass(frozen=True)
class Lowering:
    """What tells one release's lowering from another's (the checks and their order are the
    same): which class its messages name, the hint its refusals end with, and whether FULL
    decode graphs under NEVER are lowered to PIECEWISE or refused after the spec-decode check."""

    name: str  # the kit's name for it, as graphlab.sizing.engines.release_rules lists it
    names_builder: bool  # the metadata builder's class, not the backend's
    hint: str
    refuses_never_decode: bool


# 0.10.1 to 0.10.2 GPUModelRunner.initialize_cudagraph_capture: its last check raises.
INITIAL = Lowering("INITIAL", True, "compilation level is piecewise", True)
# 0.11.0: the NEVER check of 0.13.0 (PIECEWISE "because attention is compiled piecewise").
INITIAL_PIECEWISE = Lowering("INITIAL_PIECEWISE", True, "compilation level is piecewise", False)
# 0.11.1 on (_check_and_update_cudagraph_mode, resolve_cudagraph_mode_and_sizes).
LOWERING = Lowering("LOWERING", False, "compilation mode is VLLM_COMPILE", False)


@functools.cache  # a pure function every config's sizing key asks for (thousands per crash map)
def lower_cudagraph_mode(
    mode: str, support: str, query_len: int, backend: str | None, lowering: Lowering = LOWERING
) -> tuple[CUDAGraphMode, tuple[str, ...], str | None]:
    """(the mode vLLM runs, its WARNING lines, the ValueError it refuses to start with or None)
    for `mode` under a backend class `backend` reporting `support`, with q = query_len."""
    check_choice("attention support", support, CG_SUPPORTS)
    level, warnings, mode = CG_SUPPORTS.index(support), [], CUDAGraphMode(mode)
    if mode is CUDAGraphMode.NONE:
        return mode, (), None
    head = f"with {backend} backend (support: AttentionCGSupport.{support})"
    refusal = f"please try cudagraph_mode=PIECEWISE, and make sure {lowering.hint}"
    if mode is CUDAGraphMode.FULL and support != "ALWAYS":  # the mixed batches' FULL graphs
        if support == "NEVER":
            return mode, (), f"ValueError: CUDAGraphMode.{mode} is not supported {head}; {refusal}"
        warnings.append(
            f"CUDAGraphMode.{mode} is not supported {head}; setting cudagraph_mode="
            "FULL_AND_PIECEWISE"
        )
        mode = CUDAGraphMode.FULL_AND_PIECEWISE
    full_decode = mode.decode_mode() is BatchPath.FULL
    if full_decode and support == "NEVER" and not lowering.refuses_never_decode:
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
        mode, full_decode = CUDAGraphMode.PIECEWISE, False
    if full_decode and support == "NEVER":  # INITIAL's last check ("double check")
        return (
            mode,
            tuple(warnings),
            f"ValueError: CUDAGraphMode.{mode} is not supported with {backend} backend "
            f"(support:AttentionCGSupport.{support}) ; {refusal}",
        )
    return mode, tuple(warnings), None


@dataclass(frozen=True)
class Backend:
    """One of vLLM's attention backends in one release: its class, the support its metadata
    builder reports per device tier (one value: every tier; a tier left out: the value depends on
    the model there), the file it was read from, and the builder class where it is not the
    backend's name with MetadataBuilder (vLLM's messages name it up to 0.11.0)."""

    cls: str
    support: str | dict[str, str]
    source: str
    builder: str | None = None

    def support_on(self, tier: str) -> str | None:
        return self.support if isinstance(self.support, str) else self.support.get(tier)

    def named(self, lowering: Lowering) -> str:
        """The class the release's lowering messages name."""
        if not lowering.names_builder:
            return self.cls
        return self.builder or self.cls.replace("Backend", "MetadataBuilder")


@dataclass(frozen=True)
class AttentionRange:
    """Releases from `first` (to the next range's first) whose backends report the same support
    and whose lowering gives the same answers."""

    first: str
    lowering: Lowering
    backends: dict[str, Backend]


_MLA, _COMMON = "mla/", "MLACommonMetadataBuilder"


# FlashAttention: FA3 on Hopper reports ALWAYS, FA2 UNIFORM_BATCH; from 0.33.0 FA4 (SM100) too
# (`get_flash_attn_version() in (3, 4)`; 0.30.0's fa_utils already picks FA4 there, reading `== 3`).
_FA_TIERS = {"h100": "ALWAYS", "small": "UNIFORM_BATCH", "b200": "UNIFORM_BATCH"}
_FA = Backend("FlashAttentionBackend", _FA_TIERS, "flash_attn.py")
_FA_033 = Backend("FlashAttentionBackend", {**_FA_TIERS, "b200": "ALWAYS"}, "flash_attn.py")
# FlashInfer: a class constant to 0.11.0; then get_cudagraph_support, UNIFORM_BATCH where TRT-LLM
# attention serves the model's heads (SM100; SM90's XQA from 0.30.0, with its head dims), and from
# 0.33.0 where FlashAttention 2's native decode serves it (`_use_fa2_native_decode`).
_UD = "UNIFORM_SINGLE_TOKEN_DECODE"
_FI_010 = Backend("FlashInferBackend", _UD, "flashinfer.py (cudagraph_support)")
_FI_011 = Backend(
    "FlashInferBackend", {"h100": _UD, "small": _UD}, "flashinfer.py (TRT-LLM on SM100)"
)
_FI_030 = Backend("FlashInferBackend", {"small": _UD}, "flashinfer.py (XQA on SM90)")
_FI_033 = Backend("FlashInferBackend", {}, "flashinfer.py (FA2 native decode)")
_TRITON = Backend("TritonAttentionBackend", "ALWAYS", "triton_attn.py")
_FLEX_NEVER = Backend("FlexAttentionBackend", "NEVER", "flex_attention.py (the base builder's)")
_FLEX = Backend("FlexAttentionBackend", "ALWAYS", "flex_attention.py")
_FLASHMLA = Backend("FlashMLABackend", "UNIFORM_BATCH", _MLA + "flashmla.py")
_FA_MLA = Backend("FlashAttnMLABackend", "UNIFORM_BATCH", _MLA + "flashattn_mla.py")
_FI_MLA_NEVER = Backend("FlashInferMLABackend", "NEVER", _MLA + "flashinfer_mla.py", _COMMON)
_FI_MLA = Backend("FlashInferMLABackend", "UNIFORM_BATCH", _MLA + "flashinfer_mla.py")
_FI_MLA_031 = Backend("FlashInferMLABackend", "ALWAYS", _MLA + "flashinfer_mla.py")
# 0.10.1's builder sets `attn_cudagraph_support`, which the lowering never reads (fixed 0.10.1.1).
_CUTLASS_NEVER = Backend("CutlassMLABackend", "NEVER", _MLA + "cutlass_mla.py (misnamed attribute)")
_CUTLASS = Backend("CutlassMLABackend", _UD, _MLA + "cutlass_mla.py")
_TRITON_MLA_NEVER = Backend("TritonMLABackend", "NEVER", _MLA + "triton_mla.py", _COMMON)
_TRITON_MLA = Backend("TritonMLABackend", "UNIFORM_BATCH", _MLA + "triton_mla.py")
_TRITON_MLA_026 = Backend("TritonMLABackend", _UD, _MLA + "triton_mla.py")

_010 = {
    "FLASH_ATTN": _FA,
    "FLASHINFER": _FI_010,
    "TRITON_ATTN": _TRITON,
    "FLEX_ATTENTION": _FLEX_NEVER,
    "FLASHMLA": _FLASHMLA,
    "CUTLASS_MLA": _CUTLASS_NEVER,
    "TRITON_MLA": _TRITON_MLA_NEVER,
}
_0102 = {**_010, "CUTLASS_MLA": _CUTLASS, "FLASH_ATTN_MLA": _FA_MLA}
_0102["FLASHINFER_MLA"] = _FI_MLA_NEVER
_0111 = {**_0102, "FLASHINFER": _FI_011, "FLASHINFER_MLA": _FI_MLA}
_020 = {**_0111, "FLEX_ATTENTION": _FLEX}
_022 = {**_020, "TRITON_MLA": _TRITON_MLA}
_026 = {**_022, "TRITON_MLA": _TRITON_MLA_026}
_030 = {**_026, "FLASHINFER": _FI_030}
_031 = {**_030, "FLASHINFER_MLA": _FI_MLA_031, "TRITON_MLA": _TRITON_MLA}
_033 = {**_031, "FLASH_ATTN": _FA_033, "FLASHINFER": _FI_033}
# vllm/v1/attention/backends/ per release range, read in each wheel (the vectors' "backends").
RANGES = (
    AttentionRange("0.10.1", INITIAL, _010),
    AttentionRange("0.10.1.1", INITIAL, {**_010, "CUTLASS_MLA": _CUTLASS}),
    AttentionRange("0.10.2", INITIAL, _0102),
    AttentionRange("0.11.0", INITIAL_PIECEWISE, _0102),
    AttentionRange("0.11.1", LOWERING, _0111),
    AttentionRange("0.20.0", LOWERING, _020),
    AttentionRange("0.22.0", LOWERING, _022),
    AttentionRange("0.26.0", LOWERING, _026),
    AttentionRange("0.30.0", LOWERING, _030),
    AttentionRange("0.31.0", LOWERING, _031),
    AttentionRange("0.33.0", LOWERING, _033),
)


def attention_range(version: str) -> AttentionRange | None:
    """The range release `version` is in; None before 0.10.1 (no AttentionCGSupport)."""
    found = [r for r in RANGES if release_key(r.first) <= release_key(version)]
    return found[-1] if found else None


def attention_support(
    version: str, name: str | None, tier: str, given: str | None = None
) -> tuple[str, str, str]:
    """(the class vLLM's lowering names, AttentionCGSupport, why) of vLLM backend `name` (None:
    vLLM's default for the tier) in release `version` on device tier `tier`, reporting `given`
    where it is given (the support vLLM reports for the user's model), else the kit's table's;
    GraphlabError where the kit has not read that backend, or the table has no support for it
    and none is given. `tier` is a DEVICE_TIERS key, checked where it enters (--device-tier's
    choices), as full_graph_support takes it."""
    chosen = DEFAULT_BACKEND[tier] if name is None else str(name).upper()
    found = attention_range(version)
    if found is None and given is not None:
        raise BadInput(
            f"--attention-cg-support: vLLM {version} has no AttentionCGSupport (vLLM added it "
            f"with cudagraph_mode in {RANGES[0].first})"
        )
    if found is None and full_graph_range(version) is not None:
        return _with_assumed_support(*full_graph_support(version, name, tier))
    if found is None:
        if name is not None:
            raise BadInput(
                f"--attention-backend: vLLM {version} has no AttentionCGSupport (vLLM added it "
                f"with cudagraph_mode in {RANGES[0].first}); the kit models its graphs with "
                "FlashAttention 3"
            )
        return (
            "FlashAttentionBackend",
            DEFAULT_CG_SUPPORT,
            f"attention support assumed AttentionCGSupport.{DEFAULT_CG_SUPPORT} (FlashAttention "
            f"3 on Hopper): vLLM {version} has no AttentionCGSupport (from {RANGES[0].first})",
        )
    backend = found.backends.get(chosen)
    if backend is None:
        raise BadInput(
            f"attention backend {chosen!r} on the {tier!r} tier is not in the kit's table for "
            f"vLLM {version}; known: {', '.join(found.backends)}"
        )
    how = "vLLM's default for a dense model" if name is None else "as named"
    source = f"vllm/v1/attention/backends/{backend.source}"
    if given is not None:
        check_choice("--attention-cg-support", given, CG_SUPPORTS)
    support = backend.support_on(tier) if given is None else given
    if support is None:
        raise BadInput(
            f"attention backend {chosen!r} ({how}) on the {tier!r} tier: the AttentionCGSupport "
            f"vLLM {version}'s {backend.cls} reports depends on the model, {source}; give it with "
            f"--attention-cg-support ({', '.join(CG_SUPPORTS)}; vLLM's WARNING names it where it "
            "lowers cudagraph_mode) or name another backend"
        )
    given_by = "" if given is None else " for the model, as --attention-cg-support gives"
    return (
        backend.named(found.lowering),
        support,
        f"attention backend {chosen} ({how} on the {tier!r} tier; {backend.cls} reports "
        f"AttentionCGSupport.{support}{given_by}, {source})",
    )


def _with_assumed_support(cls: str, why: str) -> tuple[str, str, str]:
    """attention_support's answer for 0.9.0 to 0.10.0: they lower nothing (no AttentionCGSupport),
    so the kit sizes with the support it assumes."""
    return cls, DEFAULT_CG_SUPPORT, why
