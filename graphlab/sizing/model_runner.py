"""Which model runner a vLLM release runs a config on: V1 (vllm/v1/worker/gpu_model_runner.py,
`CudagraphDispatcher`) or V2 (vllm/v1/worker/gpu/, `CudaGraphManager`), as `VllmConfig.
use_v2_model_runner` decides it (`choose_model_runner`).

Read in the wheels: up to 0.21.0 `VLLM_USE_V2_MODEL_RUNNER` defaults to 0 (V1); from 0.22.0 it
defaults to unset and V2 runs unless `_get_v2_model_runner_unsupported_features` names a feature
of the config (the speculative method is the one the kit knows) or, to 0.28.0,
`_is_default_v2_model_runner_model` rejects the model's architecture; 0.34.0 removes model runner
V1, so every config runs V2. The kit never sees the
model, so `auto` assumes one V2 runs by default and says so.
"""

from __future__ import annotations

import functools
import re

MODEL_RUNNERS = ("auto", "v1", "v2")
# The first release whose VllmConfig.use_v2_model_runner defaults to V2 (envs.py: unset, not 0).
V2_DEFAULT_FROM = "0.22.0"
# The first release without model runner V1 (vllm/v1/worker/gpu_model_runner.py gone; platforms/
# interface.py `validate_environ` refuses VLLM_USE_V2_MODEL_RUNNER other than 1).
V1_REMOVED_IN = "0.34.0"
# The first release with model runner V2 at all (vllm/v1/worker/gpu/; absent from 0.11.2's wheel).
V2_FROM = "0.12.0"
# The first release whose `_get_v2_model_runner_unsupported_features` no longer lists "dynamic
# speculative decoding" (0.24.0 adds num_speculative_tokens_per_batch_size on model runner V1).
V2_DYNAMIC_FROM = "0.25.0"
# The last release whose EngineArgs._is_v1_supported_oracle may fall back to the V0 engine, which
# VLLM_USE_V1=1 forbids (data/vllm_v1_early_oracle.json; gone from 0.11.1's wheel).
V0_FALLBACK_UNTIL = "0.11.0"

# `_get_v2_model_runner_unsupported_features`' speculative methods, from the release named to the
# next entry: ("only", methods) = V2 runs these methods alone, ("except", methods) = all but these.
# fmt: off
_V2_METHODS = (
    ("0.22.0", "only", ("eagle", "eagle3", "mtp")),
    ("0.24.0", "only", ("eagle", "eagle3", "mtp", "dflash")),
    ("0.25.0", "only", ("eagle", "eagle3", "mtp", "dflash", "dspark")),
    ("0.29.0", "only", ("eagle", "eagle3", "mtp", "dflash", "dspark", "extract_hidden_states")),
    ("0.30.0", "except", ("ngram", "ngram_gpu", "draft_model", "suffix", "medusa",
                          "mlp_speculator", "custom_class")),
    ("0.31.0", "except", ("ngram", "ngram_gpu", "suffix", "medusa", "mlp_speculator",
                          "custom_class")),
    ("0.32.0", "except", ("suffix", "medusa", "mlp_speculator", "custom_class")),
    ("0.33.0", "except", ("suffix", "custom_class")),
)
# `_is_default_v2_model_runner_model` (DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES), gone in 0.29.0.
_V2_MODELS = (
    ("0.22.0", "Qwen3ForCausalLM models, dense and unquantized"),
    ("0.23.0", "LlamaForCausalLM, MistralForCausalLM and Qwen3ForCausalLM models, dense and "
               "unquantized"),
    ("0.24.0", "Qwen3, Llama, Mistral, DeepseekV2, Qwen2Moe and GraniteMoe models"),
    ("0.25.0", "dense (non-MoE), non-hybrid models and a list of MoE architectures"),
    ("0.29.0", "every model"),
)
# fmt: on


@functools.cache  # every config's sizing key asks; the crash map asks thousands of times a move
def release_key(version: str) -> tuple[int, ...]:
    """A release's numbers, for ordering ("0.8.5.post1" -> (0, 8, 5), "0.10.1.1" -> (0, 10, 1,
    1): after 0.10.1)."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split(".post")[0]))


class Release(str):
    """A vLLM release number with its order resolved once (`key`: release_key's numbers), so the
    rules a policy's release decides read it without re-reading its digits."""

    key: tuple[int, ...]

    def __new__(cls, version: str) -> Release:
        release = super().__new__(cls, version)
        release.key = release_key(version)
        return release


def _entry(table, version: str):
    return [row for row in table if release_key(row[0]) <= release_key(version)][-1]


def v2_runs_method(version: str, method: str | None) -> bool:
    """Whether release `version`'s model runner V2 takes speculative `method` (None: no method
    known, taken as one it does)."""
    if method is None:
        return True
    _, kind, methods = _entry(_V2_METHODS, version)
    return (method in methods) == (kind == "only")


@functools.cache  # a pure function of four values, asked by every config's sizing key
def choose_model_runner(
    version: str, requested: str, method: str | None, dynamic: bool = False
) -> tuple[str, str]:
    """("v1" | "v2", why) for release `version`: `requested` "v1"/"v2" is what
    VLLM_USE_V2_MODEL_RUNNER=0/1 forces; "auto" decides as that release's use_v2_model_runner
    (`dynamic`: the config sets num_speculative_tokens_per_batch_size)."""
    if release_key(version) >= release_key(V1_REMOVED_IN):
        if requested == "v1":
            return "v1", (
                f"--model-runner v1 is refused: vLLM {version} removed model runner V1 "
                "(vllm/v1/worker/gpu_model_runner.py is gone), and VLLM_USE_V2_MODEL_RUNNER=0 "
                'fails at start-up (platforms/interface.py validate_environ: "Model Runner V1 '
                'has been removed")'
            )
        return "v2", f"vLLM {version} has model runner V2 only (model runner V1 was removed)"
    if requested == "v1" and release_key(version) <= release_key(V0_FALLBACK_UNTIL):
        return "v1", (
            "--model-runner v1 (VLLM_USE_V1=1: the V1 engine, also where vLLM would fall back "
            "to V0)"
        )
    if requested != "auto":
        flag = int(requested == "v2")
        return requested, f"--model-runner {requested} (VLLM_USE_V2_MODEL_RUNNER={flag})"
    if release_key(version) < release_key(V2_FROM):
        return (
            "v1",
            f"vLLM {version} has model runner V1 only (model runner V2 is first in {V2_FROM})",
        )
    if release_key(version) < release_key(V2_DEFAULT_FROM):
        return "v1", (
            f"vLLM {version} runs model runner V1 unless VLLM_USE_V2_MODEL_RUNNER=1 "
            f"(V2 is the default from {V2_DEFAULT_FROM})"
        )
    if not v2_runs_method(version, method):
        return "v1", (
            f"vLLM {version}'s model runner V2 does not support speculative method {method!r} "
            "(VllmConfig._get_v2_model_runner_unsupported_features), so vLLM falls back to "
            "model runner V1"
        )
    if dynamic and release_key(version) < release_key(V2_DYNAMIC_FROM):
        return "v1", (
            f"vLLM {version}'s model runner V2 does not support dynamic speculative decoding "
            "(VllmConfig._get_v2_model_runner_unsupported_features), so vLLM falls back to "
            "model runner V1"
        )
    models = _entry(_V2_MODELS, version)[1]
    return "v2", (
        f"vLLM {version} runs model runner V2 by default for {models}"
        + ("" if method is None else f" with speculative method {method!r}")
        + "; others fall back to V1 (--model-runner v1, VLLM_USE_V2_MODEL_RUNNER=0)"
    )
