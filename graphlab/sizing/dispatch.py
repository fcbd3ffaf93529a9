"""vLLM V1's graph families by engine name: which FULL and PIECEWISE graphs a config captures and
what its verify batches replay (the rule itself: graphlab.sizing.families)."""

from __future__ import annotations

from graphlab.errors import check_choice, check_instance
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import ALL_V1_ENGINES, SizingPolicy, get_engine
from graphlab.sizing.families import GraphFamilies, families_for

# Step paths of V1 rows (V0 rows keep "graph" | "eager" | "crash").
V1_PATHS = ("full", "piecewise", "eager", "crash")


def _policy(engine) -> SizingPolicy:
    policy = get_engine(engine)
    check_choice("engine (graph families are vLLM V1's)", policy.name, ALL_V1_ENGINES)
    return policy


def graph_families(
    engine: str | SizingPolicy, cfg: SizingConfig, capture_sizes=None
) -> GraphFamilies:
    """`families_for` the engine, a vLLM V1 one (GraphlabError naming them otherwise)."""
    return families_for(_policy(engine), check_instance("cfg", cfg, SizingConfig), capture_sizes)


def decode_graph_sizes(engine: str | SizingPolicy, cfg: SizingConfig) -> tuple[int, ...]:
    """Token counts of the FULL uniform-decode graphs vLLM captures for `cfg` (none when its
    cudagraph_mode has no separate FULL decode graphs)."""
    return graph_families(engine, cfg).full_sizes


def verify_batches(engine: str | SizingPolicy, cfg: SizingConfig) -> list[dict]:
    """Every uniform decode batch cfg allows, 1..max_num_seqs requests of q tokens: its tokens,
    the path ("full" | "piecewise" | "eager" | "crash"), the graph it replays (None when eager or
    crashing) and the padding tokens."""
    q = check_instance("cfg", cfg, SizingConfig).decode_query_len
    tokens = [num_reqs * q for num_reqs in range(1, cfg.max_num_seqs + 1)]
    paths, sizes = graph_families(engine, cfg).dispatch_batches(tokens)
    rows = []
    for num_tokens, path, size in zip(tokens, paths, sizes.tolist()):
        graph_size = size if path in ("full", "piecewise") else None
        rows.append(
            dict(
                num_reqs=num_tokens // q,
                num_tokens=num_tokens,
                path=path,
                graph_size=graph_size,
                padding_tokens=0 if graph_size is None else graph_size - num_tokens,
            )
        )
    return rows
