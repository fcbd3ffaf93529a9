"""vLLM V1's two graph families and the one rule that picks a family and a size for a batch.

V1 keys its graphs by token count (vllm/v1/cudagraph_dispatcher.py for model runner V1,
vllm/v1/worker/gpu/cudagraph_utils.py `CudaGraphManager` for model runner V2; vllm/config/
compilation.py `CUDAGraphMode`, a (decode, mixed) pair). Per `cudagraph_mode`:

- FULL uniform-decode graphs (a separate routine: FULL_DECODE_ONLY, FULL_AND_PIECEWISE) hold
  whole requests of q = 1 + k tokens: each capture size rounded up to a multiple of q, kept when
  <= min(largest capture size, max_num_seqs * q). Model runner V2 rounds here (to 0.24.x its
  whole list too); model runner V1 (0.12, 0.13) rounded the whole list at start-up, so this
  passes its sizes through unchanged.
  Under dynamic speculation model runner V2 does this at every query length L of the schedule
  (rounded to multiples of L, still <= max_num_seqs requests; `GraphFamilies.full_graphs`).
- the mixed family (prefill, mixed, and uniform batches no FULL graph fits) at the capture sizes
  themselves: PIECEWISE graphs for PIECEWISE and FULL_AND_PIECEWISE, FULL graphs for plain FULL,
  none for FULL_DECODE_ONLY and NONE (whose capture list vLLM sets to []).

`GraphFamilies.dispatch_batches` is that rule over many batches (`dispatch` is its [0]): a uniform
decode batch of n tokens replays the smallest FULL size >= n, any other batch (and a uniform one
without such a FULL graph) the smallest mixed size >= n; above the largest capture size, no graph.
What plain FULL with q > 1 does with a uniform batch changed by release (`PlainFull`), as did
when a model runner rounds its list (`Rounding`) and whether model runner V2's dispatch looks at
each family's smallest size >= n or only at the smallest of either (`Candidates`, to 0.28.x):
each release names its rule values (graphlab.sizing.engines). This module knows no engine by
name: it takes a V1 policy's answers.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

import numpy as np

from graphlab.errors import BadInput
from graphlab.sizing.dispatch import (
    BatchDescriptor,
    BatchPath,
    CUDAGraphMode,
    Dispatch,
    Dispatches,
    as_batch,
    code,
)


class Rounding(Enum):
    """When a model runner rounds the whole capture list to multiples of q = 1 + k at start-up
    (`adjust_cudagraph_sizes_for_spec_decode`, vllm/config/compilation.py)."""

    # vLLM 0.8.0 to 0.11.0 have no adjust_cudagraph_sizes_for_spec_decode
    NEVER = "never (0.8.0 to 0.11.0)"
    SEPARATE_ROUTINE = "where FULL decode graphs are kept apart (0.11.1 to 0.19.x)"
    FULL_DECODE = "wherever decode_mode() is FULL (0.20.0 on: resolve_cudagraph_mode_and_sizes)"
    # model runner V2 to 0.24.x: CudaGraphManager.__init__ calls it whatever the mode
    EVERY_MODE = "in every mode (model runner V2's CudaGraphManager.__init__, 0.22.0 to 0.24.x)"

    def rounds(self, mode: CUDAGraphMode) -> bool:
        if self is Rounding.NEVER:
            return False
        if self is Rounding.EVERY_MODE:
            return True
        if self is Rounding.FULL_DECODE:
            return mode.decode_mode() is BatchPath.FULL
        return mode.separate_routine()


class Candidates(Enum):
    """How model runner V2's `CudaGraphManager._init_candidates` groups the graphs `dispatch`
    tries for a batch of n tokens (vllm/v1/worker/gpu/cudagraph_utils.py)."""

    # descs_by_token_count / descs_by_token_lora: a uniform batch whose smallest size >= n holds
    # only a mixed graph replays that one; a mixed batch whose holds only FULL ones runs eagerly
    BY_TOKEN_COUNT = "one list per captured size, FULL and mixed together (0.22.0 to 0.28.x)"
    BY_MODE = "FULL graphs, then mixed ones, each at its own smallest size >= n (0.29.0 to 0.33.x)"
    # _decode_descs: one request-count table per query length, so one never shadows another
    BY_QUERY_LEN = "FULL graphs of the batch's own query length, then mixed ones (0.34.0 on)"


class PlainFull(Enum):
    """What model runner V1's dispatcher does with a uniform batch under plain FULL, q > 1
    (`_create_padded_batch_descriptor`, vllm/v1/cudagraph_dispatcher.py)."""

    ASSERTS = "asserts the padded size is a multiple of q (0.12.0 to 0.16.x)"
    # keys keep num_reqs = min(size, S), a uniform batch asks for min(size // q, S)
    ASSERTS_THEN_EAGER = "asserts; a batch whose size // q < S matches no key: eager (0.17.x)"
    REPLAYS = "replays the FULL graph at the padded size (0.18.0 on: normalized_uniform)"


class DecodeKeys(Enum):
    """Which token counts get a FULL uniform-decode graph under a mode with a separate decode
    routine (`CudagraphDispatcher.initialize_cudagraph_keys`, vllm/v1/cudagraph_dispatcher.py)."""

    ROUNDED = "each capture size rounded up to a multiple of q, <= min(largest, S * q)"
    # 0.10.1 to 0.11.2: `x <= max_num_tokens and x >= uniform_decode_query_len`, unrounded
    CAPTURE_SIZES = "the capture sizes x with q <= x <= S * q, as they are (0.10.1 to 0.11.2)"


# Packs (tokens, query length) into one int for vectorized lookups; query lengths stay below it.
_QUERY_LEN_KEY = 1 << 20


def round_up(n, multiple: int):
    """n rounded up to a multiple of `multiple` (an int, or elementwise over a numpy array)."""
    return -(-n // multiple) * multiple


def round_for_spec_decode(sizes: list[int], query_len: int) -> list[int]:
    """V1 `CompilationConfig.adjust_cudagraph_sizes_for_spec_decode`: each size rounded up to a
    multiple of q, kept when still <= the largest size; [] where vLLM raises instead."""
    if query_len <= 1 or not sizes:
        return sizes
    largest = max(sizes)
    rounded = [r for r in {round_up(s, query_len) for s in sizes} if r <= largest]
    return rounded or ([query_len] if query_len <= largest else [])


def uniform_padding_assertion(padded: int, query_len: int) -> str:
    """The assertion model runner V1's dispatcher fails (plain FULL, PlainFull.ASSERTS*) where a
    uniform batch pads to a non-multiple of q."""
    return (
        "num_tokens_padded % uniform_decode_query_len == 0 (vllm/v1/cudagraph_dispatcher.py): "
        f"{padded} % {query_len} != 0"
    )


@dataclass(frozen=True)
class GraphFamilies:
    """The graphs one V1 config captures: FULL uniform-decode sizes, and the mixed family's
    sizes, with the one rule that picks a family and a size for a batch (`dispatch_batches`)."""

    cudagraph_mode: CUDAGraphMode
    full_sizes: tuple[int, ...]  # FULL graphs for uniform decode batches (separate routine)
    mixed_sizes: tuple[int, ...]  # the raw capture sizes, for every other batch
    mixed_family: BatchPath | None  # PIECEWISE | FULL | None (no mixed graphs)
    limit: int  # the largest capture size: above it, no graph
    # q when a uniform batch padded to a non-multiple of q fails uniform_padding_assertion, else 0
    asserted_query_len: int = 0
    # PlainFull.ASSERTS_THEN_EAGER: a uniform batch's key matches only where size // q >= this
    # (S); 0: off
    uniform_min_reqs: int = 0
    # (tokens, query length) of every FULL uniform-decode graph: several query lengths under
    # dynamic speculation (model runner V2 `_init_candidates`), else q alone; () means q alone
    full_graphs: tuple[tuple[int, int], ...] = ()
    # Candidates.BY_TOKEN_COUNT: a batch looks only at the smallest size of either family >= n
    candidates: Candidates = Candidates.BY_MODE

    @property
    def full_query_lens(self) -> tuple[int, ...]:
        """The query lengths the FULL uniform-decode graphs are captured at, ascending."""
        return tuple(sorted({query_len for _, query_len in self.full_graphs}))

    def full_sizes_at(self, query_len: int) -> tuple[int, ...]:
        """The FULL uniform-decode graphs' token counts at one query length, ascending."""
        return tuple(sorted(n for n, q in self.full_graphs if q == query_len))

    def dispatch_batches(self, ns, uniform_decode: bool = True, query_lens=None) -> Dispatches:
        """Per batch of n tokens, the path and padded size. A uniform decode batch looks at the
        smallest FULL size >= n and replays it where a graph there has the batch's query length
        (`query_lens`, one per batch; None: the one length every FULL graph has); any other
        batch, and a uniform one no FULL graph fits, the mixed family's smallest size >= n; above
        `limit`, or with neither, it runs eagerly (model runner V2 `_init_candidates` groups the
        graphs by tokens, and `dispatch` tries only the group at the smallest size >= n)."""
        ns = np.asarray(ns, dtype=np.int64)
        within = ns <= self.limit
        full = smallest_at_least(self.full_sizes, ns) if uniform_decode else np.zeros_like(ns)
        full = np.where(within, full, 0)
        mixed = smallest_at_least(self.mixed_sizes, ns) if self.mixed_family else 0
        if self.candidates is Candidates.BY_TOKEN_COUNT:
            # only the graphs at the smallest size of either family >= n are candidates
            group = smallest_at_least(sorted(set(self.full_sizes) | set(self.mixed_sizes)), ns)
            full, mixed = np.where(full == group, full, 0), np.where(mixed == group, mixed, 0)
        if self.candidates is Candidates.BY_QUERY_LEN and uniform_decode and query_lens is not None:
            lens = np.broadcast_to(np.asarray(query_lens, dtype=np.int64), ns.shape)
            at_len = [
                (lens == L, smallest_at_least(self.full_sizes_at(L), ns))
                for L in self.full_query_lens
            ]
            full = np.where(within, np.select(*zip(*at_len), 0) if at_len else 0, 0)
        elif uniform_decode and query_lens is not None and self.full_graphs:
            captured = [n * _QUERY_LEN_KEY + q for n, q in self.full_graphs]
            key = full * _QUERY_LEN_KEY + np.asarray(query_lens, dtype=np.int64)
            full = np.where(np.isin(key, captured), full, 0)
        elif uniform_decode and len(self.full_query_lens) > 1:
            raise BadInput(
                f"FULL graphs at query lengths {self.full_query_lens} (dynamic speculation): "
                "give each uniform batch's query length"
            )
        size = np.where(full > 0, full, np.where(within, mixed, 0))
        mixed_code = code(self.mixed_family or BatchPath.EAGER)
        path = np.where(
            full > 0, code(BatchPath.FULL), np.where(size > 0, mixed_code, code(BatchPath.EAGER))
        )
        q = self.asserted_query_len
        if uniform_decode and q:
            crash = (size > 0) & (size % q > 0)
            if self.uniform_min_reqs:  # the batches whose key matches no graph run eagerly
                size = np.where(crash | (size // q >= self.uniform_min_reqs), size, 0)
            path = np.where(
                crash, code(BatchPath.CRASH), np.where(size > 0, path, code(BatchPath.EAGER))
            )
        replays = (size > 0) & (path != code(BatchPath.CRASH))

        def error(key):
            return f"AssertionError: {uniform_padding_assertion(key, q)}"

        return Dispatches(ns, path, np.where(replays, size, 0), size, error)

    def dispatch(self, batch: BatchDescriptor | int) -> Dispatch:
        """`dispatch_batches` for one batch (an int: a uniform batch of that many tokens; a
        descriptor with num_reqs: its query length is num_tokens // num_reqs)."""
        batch = as_batch(batch)
        query_lens = None if batch.num_reqs is None else [batch.num_tokens // batch.num_reqs]
        return self.dispatch_batches([batch.num_tokens], batch.uniform, query_lens)[0]

    @property
    def by_family(self) -> dict[BatchPath, tuple[int, ...]]:
        """{FULL: sizes, PIECEWISE: sizes} of the graphs captured (FULL mode: one list)."""
        families = {BatchPath.FULL: self.full_sizes, BatchPath.PIECEWISE: ()}
        if self.mixed_family:
            merged = sorted(set(families[self.mixed_family]) | set(self.mixed_sizes))
            families[self.mixed_family] = tuple(merged)
        return families


def families_for(policy, cfg, capture_sizes=None) -> GraphFamilies:
    """The FULL and mixed graphs of `cfg` (or of `capture_sizes`, a list given to vLLM, which a
    rounding model runner rounds as at start-up) under the V1 policy's `cudagraph_mode` (a
    graphlab.sizing.engines V1 policy)."""
    if policy.splits_capture_sizes:  # 0.34.0 on: prefill and decode graphs sized apart
        return policy.split_families(cfg, capture_sizes)
    mode, q = policy.cudagraph_mode(cfg), cfg.decode_query_len
    if capture_sizes is None:
        sizes = policy.capture_sizes(cfg)
    else:
        sizes = sorted(set(int(s) for s in capture_sizes))
        if policy.rounds_capture_sizes(cfg):
            sizes = sorted(round_for_spec_decode(sizes, q))
    return families_of(
        mode,
        sizes,
        cfg.max_num_seqs,
        q,
        policy.plain_full,
        policy.full_decode_tiers(cfg),
        policy.candidates(cfg),
        policy.decode_keys,
    )


def families_of(
    mode: CUDAGraphMode,
    sizes,
    max_num_seqs: int,
    query_len: int,
    plain_full: PlainFull = PlainFull.REPLAYS,
    decode_tiers: tuple[tuple[int, int], ...] | None = None,
    candidates: Candidates = Candidates.BY_MODE,
    decode_keys: DecodeKeys = DecodeKeys.ROUNDED,
) -> GraphFamilies:
    """The graphs one dispatcher keeps for the sorted capture `sizes` under `mode`, with uniform
    decode batches of `query_len` tokens per request (a target's or a drafter's: vLLM builds both
    from the same list); `decode_tiers`, SizingConfig.decode_tiers' (query length, widest batch)
    pairs under dynamic speculation, else query_len alone; `candidates`, how the dispatcher
    groups them; `decode_keys`, which sizes get a FULL uniform-decode graph."""
    q = query_len
    tiers = decode_tiers or ((q, max_num_seqs),)
    if len(sizes) == 0 or mode is CUDAGraphMode.NONE:
        return GraphFamilies(mode, (), (), None, 0)
    graphs = ()
    if mode.separate_routine():
        limit = min(sizes[-1], max_num_seqs * q)
        if decode_keys is DecodeKeys.CAPTURE_SIZES:  # one query length: no dynamic speculation
            graphs = tuple((s, q) for s in sizes if q <= s <= limit)
        else:
            rounded = {(round_up(s, L), L) for L, _ in tiers for s in sizes}
            graphs = tuple(
                sorted((r, L) for r, L in rounded if r <= limit and r // L <= max_num_seqs)
            )
    rule = plain_full if q > 1 and mode is CUDAGraphMode.FULL else PlainFull.REPLAYS
    mixed = mode.mixed_mode()
    return GraphFamilies(
        mode,
        tuple(sorted({n for n, _ in graphs})),
        tuple(sizes) if mixed else (),
        mixed,
        int(sizes[-1]),
        0 if rule is PlainFull.REPLAYS else q,
        max_num_seqs if rule is PlainFull.ASSERTS_THEN_EAGER else 0,
        graphs,
        candidates,
    )


def smallest_at_least(sizes, ns: np.ndarray) -> np.ndarray:
    """Per n, the smallest of the sorted sizes >= n, 0 when none."""
    if len(sizes) == 0:
        return np.zeros_like(ns)
    sizes = np.asarray(sizes, dtype=np.int64)
    i = np.searchsorted(sizes, ns, side="left")
    return np.where(i < len(sizes), sizes[np.minimum(i, len(sizes) - 1)], 0)
