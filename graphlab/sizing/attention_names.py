"""The names vLLM's serve line gives an attention backend, per release: VLLM_ATTENTION_BACKEND
(vllm/envs.py, to 0.14.1) with 0.9.0-0.10.2's `_VLLM_V1` spellings, and the serve options
--attention-backend and --attention-config (vllm/engine/arg_utils.py, from 0.13.0)."""

from __future__ import annotations

from graphlab.errors import BadInput
from graphlab.sizing.model_runner import release_key

# VLLM_ATTENTION_BACKEND: read to 0.14.1 (from 0.13.0 by AttentionConfig.__post_init__, which sets
# attention_config.backend with a deprecation WARNING); vllm/envs.py drops it in 0.15.0. The serve
# options --attention-backend and --attention-config's backend exist from 0.13.0.
ATTENTION_OPTIONS_FROM = "0.13.0"
ATTENTION_ENV_DROPPED_IN = "0.15.0"
ATTENTION_ENV_DEPRECATION = (
    "Using VLLM_ATTENTION_BACKEND environment variable is deprecated and will be removed in "
    "v0.14.0 or v1.0.0, whichever is soonest. Please use --attention-config.backend command "
    "line argument or AttentionConfig(backend=...) config field instead."
)
# vllm/platforms/interface.py `_Backend` names with the _VLLM_V1 suffix (dropped in 0.11.0): the
# releases that have them, and the kit's name (None: get_attn_backend_cls selects nothing by it,
# so vLLM picks its default).
_SUFFIXED_NAMES = {
    "TRITON_ATTN_VLLM_V1": ("0.9.0", "0.10.2", "TRITON_ATTN"),
    "CUTLASS_MLA_VLLM_V1": ("0.9.1", "0.10.0", "CUTLASS_MLA"),
    "FLASHMLA_VLLM_V1": ("0.9.1", "0.10.2", "FLASHMLA"),  # to 0.10.1 as any name but TRITON_MLA
    "FLASH_ATTN_VLLM_V1": ("0.9.0", "0.10.2", None),
    "FLASHINFER_VLLM_V1": ("0.9.1", "0.10.2", None),
    "TRITON_MLA_VLLM_V1": ("0.9.1", "0.10.2", None),
}
# The kit's names that are no `_Backend` member before these releases (the _VLLM_V1 names above).
_NAMED_FROM = {"TRITON_ATTN": "0.11.0", "CUTLASS_MLA": "0.10.1"}
# vllm/envs.py checks VLLM_ATTENTION_BACKEND against the backend names itself (env_with_choices).
_ENV_CHOICES_FROM = "0.11.0"


def env_backend_name(version: str, value: str) -> tuple[str | None, str | None]:
    """(the kit's backend name, a note) for VLLM_ATTENTION_BACKEND=value in release `version`
    (0.14.1 at the latest); None: vLLM's default pick. GraphlabError where vLLM refuses the value
    (attention/selector.py "Invalid attention backend", envs.py's choices from 0.11.0)."""
    name, at = str(value), release_key(version)
    if name in _SUFFIXED_NAMES:
        first, last, kit = _SUFFIXED_NAMES[name]
        if release_key(first) <= at <= release_key(last):
            if kit is None:
                return None, (
                    f"VLLM_ATTENTION_BACKEND={name}: vLLM {version}'s get_attn_backend_cls "
                    "selects no backend by that name, so it picks its default"
                )
            return kit, f"VLLM_ATTENTION_BACKEND={name} is vLLM {version}'s name of {kit}"
    if name in _SUFFIXED_NAMES or at < release_key(_NAMED_FROM.get(name, "0")):
        spelled = [
            old
            for old, (first, last, kit) in _SUFFIXED_NAMES.items()
            if kit == name and release_key(first) <= at <= release_key(last)
        ]
        hint = f"; vLLM {version} spells it {spelled[0]}" if spelled else ""
        # attention/selector.py to 0.10.2; envs.py's env_with_choices from 0.11.0
        words = (
            f"Invalid attention backend: '{name}'"
            if at < release_key(_ENV_CHOICES_FROM)
            else f"Invalid value '{name}' for VLLM_ATTENTION_BACKEND"
        )
        raise BadInput(
            f"vLLM {version} refuses to start: ValueError: {words} (no backend of that name in "
            f"that release{hint})"
        )
    return name, None
