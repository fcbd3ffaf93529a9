"""Which decode batch sizes each engine captures as CUDA graphs, and what happens to a batch of n.

The registry: one `SizingPolicy` per engine (V0: graphlab.sizing.v0_policies; vLLM V1: v1_policy,
with its releases in v1_early, v1_releases and v1_split; the peers: peers). `ENGINE_TABLE` lists
the nine side by side, each row naming its source (`RELEASE_POLICIES` adds the releases whose
rules differ from the table's under plain FULL or by one added size; graphlab.sizing.versions
maps releases to them; `ENGINES` holds every one by name).
A policy answers three questions, and
`dispatch_batches` (many batches at once; `dispatch` is one batch's answer, its [0]) is derived
from them only, so a model runner that performs the real dictionary lookup with the same answers
reproduces the same outcome (including the V0 `KeyError`):

- `capture_sizes(cfg)`: the sizes captured at start-up, ascending;
- `graph_limit(cfg, capture_sizes)` / `tries_graph`: whether the engine *tries* a graph for n;
- `padded_size(n, capture_sizes)`: the key the engine then looks up (it may be absent: a crash).

vLLM V1 policies dispatch by graphlab.sizing.families' rule instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from graphlab.errors import lookup
from graphlab.sizing.dispatch import BatchUnit
from graphlab.sizing.families import (
    round_for_spec_decode,
    round_up,
)
from graphlab.sizing.model_runner import release_key
from graphlab.sizing.peers import NanoVllm, SGLang, TrtLlm
from graphlab.sizing.policy import (
    DEFAULT_GRAPH_CEILING,
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    GRAPH_POOLS,
    MIB,
    SizingPolicy,
)
from graphlab.sizing.v0_policies import Adaptive, Vllm055, Vllm060, pad0
from graphlab.sizing.v1_early import (
    Vllm0100,
    Vllm0101,
    Vllm0110,
    Vllm0111,
    Vllm080,
    Vllm082,
    Vllm083,
    Vllm085,
    Vllm090,
    Vllm092,
)
from graphlab.sizing.v1_releases import (
    Vllm012,
    Vllm013,
    Vllm015,
    Vllm017,
    Vllm018,
    Vllm020,
    Vllm0201,
    Vllm022,
    Vllm024,
    Vllm025,
    Vllm026,
    Vllm029,
    Vllm031,
    Vllm033,
)
from graphlab.sizing.v1_split import Vllm034

# Shared names other modules take from here, the engines' module.
__all__ = [
    "DEFAULT_GRAPH_CEILING",
    "DEFAULT_MAX_NUM_BATCHED_TOKENS",
    "GRAPH_POOLS",
    "MIB",
    "NanoVllm",
    "SGLang",
    "SizingPolicy",
    "TrtLlm",
    "Vllm033",
    "Vllm034",
    "pad0",
    "round_for_spec_decode",
    "round_up",
]


@dataclass(frozen=True)
class EngineRow:
    """One engine side by side with the others (S = max_num_seqs, k = speculative tokens,
    q = 1 + k)."""

    policy: SizingPolicy
    captures: str
    beyond: str  # what a batch with no fitting graph does
    source: str


ENGINE_TABLE: tuple[EngineRow, ...] = (
    EngineRow(
        Vllm055(),
        "1, 2, 4, 8..256 step 8, up to pad0(S)",
        "pad0(n) <= 256 looked up: KeyError",
        "vllm 0.5.5 vllm/worker/model_runner.py",
    ),
    EngineRow(
        Vllm060(),
        "1, 2, 4, 8..8192 step 8, up to pad0(S)",
        "eager (the guard, v0.6.0)",
        "vllm 0.6.0 vllm/worker/model_runner.py",
    ),
    EngineRow(
        Adaptive(), "as 0.6.0, up to pad0(S*q)", "eager", "vllm PR 7999 (proposed, not shipped)"
    ),
    EngineRow(
        Vllm012(),
        "token grid up to min(T, 2S, 512), rounded to multiples of q",
        "eager",
        "vllm 0.12.0 vllm/config/vllm.py, v1/worker/gpu_model_runner.py",
    ),
    EngineRow(
        Vllm013(),
        "token grid up to min(T, 2Sq, 512), rounded to multiples of q",
        "eager",
        "vllm 0.13.0 vllm/config/vllm.py (PR 30330)",
    ),
    EngineRow(
        Vllm033(),
        "token grid up to min(T, 2Sq, 512) + T + uniform-decode sizes m*q",
        "eager",
        "vllm 0.33.0 vllm/config/vllm.py (PR 54418 clamp, PR 49390 Blackwell 1024)",
    ),
    EngineRow(
        SGLang(),
        "request counts to 160 (256 on > 80 GiB GPUs), plus S, S+1",
        "eager",
        "sglang 0.4.6 srt/model_executor/cuda_graph_runner.py",
    ),
    EngineRow(
        NanoVllm(),
        "1, 2, 4, 8, 16..min(S, 512) step 16",
        "next() finds none: StopIteration",
        "nano-vllm nanovllm/engine/model_runner.py",
    ),
    EngineRow(
        TrtLlm(),
        "1..31, 32, 64, 128 (no padding, max batch 128)",
        "eager unless exactly captured",
        "TensorRT-LLM tensorrt_llm/llmapi/llm_args.py",
    ),
)
# Releases whose rules differ from the table's under plain FULL or by one size
# (graphlab.sizing.versions maps every release to one of these or the table's).
RELEASE_POLICIES = (
    Vllm080(),
    Vllm082(),
    Vllm083(),
    Vllm085(),
    Vllm090(),
    Vllm092(),
    Vllm0100(),
    Vllm0101(),
    Vllm0110(),
    Vllm0111(),
    Vllm015(),
    Vllm017(),
    Vllm018(),
    Vllm020(),
    Vllm0201(),
    Vllm022(),
    Vllm024(),
    Vllm025(),
    Vllm026(),
    Vllm029(),
    Vllm031(),
    Vllm034(),
)
# Every engine the kit models, by name: the table's and the releases'.
ENGINES: dict[str, SizingPolicy] = {
    p.name: p for p in (*(row.policy for row in ENGINE_TABLE), *RELEASE_POLICIES)
}
# The engines side by side (ENGINE_TABLE): what "all" means to an audit table and a crash map.
TABLE_ENGINES = tuple(row.policy.name for row in ENGINE_TABLE)
# vLLM V0's engines (graphs keyed by rows) and vLLM V1's (keyed by tokens), every release's.
V0_ENGINES = tuple(n for n, p in ENGINES.items() if p.batch_unit is BatchUnit.ROWS)
V1_ENGINES = tuple(n for n, p in ENGINES.items() if p.batch_unit is BatchUnit.TOKENS)


def release_rules() -> list[dict]:
    """The vLLM V1 engines' rule values side by side, oldest release first: what tells one
    release's graphs from another's beyond its sizing grid (graphlab.sizing.families)."""
    v1 = sorted((ENGINES[n] for n in V1_ENGINES), key=lambda p: release_key(p.release))
    return [
        {
            "engine": p.name,
            "model runners": ", ".join(r.upper() for r in p.model_runners),
            # model runner V1's (where modelled); Rounding's values say what each name means
            "rounding": _v1_rule(p, p.rounding.name),
            "plain_full": _v1_rule(p, p.plain_full.name),  # PlainFull's likewise
            # model runner V2's (where modelled): its rounding ("FULL graphs": those alone)
            "v2_rounding": _v2_rule(p, p.v2_rounding.name if p.v2_rounding else "FULL graphs"),
            "v2_candidates": _v2_rule(p, p.v2_candidates.name),
            "attention": _attention_rule(p),
        }
        for p in v1
    ]


def _attention_rule(policy) -> str:
    """How the release meets the attention backend: FullCudaGraphCheck's value (full_cuda_graph
    refused per backend, 0.9.0 to 0.10.0), its Lowering of cudagraph_mode to AttentionCGSupport
    (0.10.1 on), or nothing (0.8.x: PIECEWISE graphs alone)."""
    check = getattr(policy, "full_cuda_graph_check", None)
    if check is not None:
        return check.name
    return policy.attention_lowering.name if policy.reads_attention_support else ""


def _v2_rule(policy, value: str) -> str:
    return value if "v2" in policy.model_runners else ""


def _v1_rule(policy, value: str) -> str:
    return value if "v1" in policy.model_runners else ""


def get_engine(name) -> SizingPolicy:
    """The policy for an engine name (a policy passes through); GraphlabError listing the names
    otherwise."""
    return lookup("engine", name, ENGINES, SizingPolicy)
