"""vLLM V1's two graph families and the one rule that picks a family and a size for a batch.

V1 keys its graphs by token count (vllm/v1/cudagraph_dispatcher.py for model runner V1,
vllm/v1/worker/gpu/cudagraph_utils.py `CudaGraphManager` for model runner V2; vllm/config/
compilation.py `CUDAGraphMode`, a (decode, mixed) pair). Per `cudagraph_mode`:

- FULL uniform-decode graphs (a separate routine: FULL_DECODE_ONLY, FULL_AND_PIECEWISE) hold
  whole requests of q = 1 + k tokens: each capture size rounded up to a multiple of q, kept when
  <= min(largest capture size, max_num_seqs * q). Model runner V2 rounds here; model runner V1
  (0.12, 0.13) rounded the whole list at start-up, so this passes its sizes through unchanged.
- the mixed family (prefill, mixed, and uniform batches no FULL graph fits) at the capture sizes
  themselves: PIECEWISE graphs for PIECEWISE and FULL_AND_PIECEWISE, FULL graphs for plain FULL,
  none for FULL_DECODE_ONLY and NONE (whose capture list vLLM sets to []).

`GraphFamilies.dispatch_batches` is that rule over many batches (`dispatch` is its [0]): a uniform
decode batch of n tokens replays the smallest FULL size >= n, any other batch (and a uniform one
without such a FULL graph) the smallest mixed size >= n; above the largest capture size, no graph.
Plain FULL with q > 1 on model runner V1 from 0.12.0 to 0.17.x asserts that a uniform batch's
padded size is a multiple of q (`_create_padded_batch_descriptor`): where it is not, the step
crashes; 0.17.x also runs eagerly the batches the assertion lets through whose size // q < S
(its keys keep num_reqs). This module knows no engine by name: it takes a V1 policy's answers
(graphlab.sizing.engines).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# vLLM V1's CUDAGraphMode values (vllm/config/compilation.py, 0.11 to 0.33): NONE, PIECEWISE,
# FULL, and the (decode, mixed) pairs FULL_DECODE_ONLY = (FULL, NONE) and
# FULL_AND_PIECEWISE = (FULL, PIECEWISE).
CUDAGRAPH_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")


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


# Each mode's (decode family, mixed family): CUDAGraphMode.decode_mode() / mixed_mode().
_FAMILIES = {
    "NONE": (None, None),
    "PIECEWISE": ("piecewise", "piecewise"),
    "FULL": ("full", "full"),
    "FULL_DECODE_ONLY": ("full", None),
    "FULL_AND_PIECEWISE": ("full", "piecewise"),
}


def separate_routine(mode: str) -> bool:
    """Whether the mode keeps FULL uniform-decode graphs apart from its mixed family
    (`decode_mode() == FULL and separate_routine()`: FULL_DECODE_ONLY, FULL_AND_PIECEWISE)."""
    decode, mixed = _FAMILIES[mode]
    return decode == "full" and mixed != "full"


def uniform_padding_assertion(padded: int, query_len: int) -> str:
    """The assertion model runner V1's dispatcher fails (0.12.0 and 0.13.0 under plain FULL,
    whose sizes are not rounded) where a uniform batch pads to a non-multiple of q."""
    return (
        "num_tokens_padded % uniform_decode_query_len == 0 (vllm/v1/cudagraph_dispatcher.py): "
        f"{padded} % {query_len} != 0"
    )


@dataclass(frozen=True)
class GraphFamilies:
    """The graphs one V1 config captures: FULL uniform-decode sizes, and the mixed family's
    sizes, with the one rule that picks a family and a size for a batch (`dispatch_batches`)."""

    cudagraph_mode: str
    full_sizes: tuple[int, ...]  # FULL graphs for uniform decode batches (separate routine)
    mixed_sizes: tuple[int, ...]  # the raw capture sizes, for every other batch
    mixed_family: str | None  # "piecewise" | "full" | None (no mixed graphs)
    limit: int  # the largest capture size: above it, no graph
    # q when a uniform batch padded to a non-multiple of q fails uniform_padding_assertion, else 0
    asserted_query_len: int = 0
    # 0.17.x's plain FULL: its keys hold num_reqs = min(size, S), a uniform batch's min(size // q,
    # S), so one matches only where size // q >= S (this value); 0: off
    uniform_min_reqs: int = 0

    def dispatch_batches(self, ns, uniform_decode: bool = True):
        """Per batch of n tokens: (path per n: "full" | "piecewise" | "eager" | "crash", the padded
        size or 0 when eager). A uniform decode batch replays the smallest FULL size >= n; any other
        batch, and a uniform one no FULL size fits, the mixed family's smallest size >= n; above
        `limit`, or with neither, it runs eagerly."""
        ns = np.asarray(ns, dtype=np.int64)
        within = ns <= self.limit
        full = smallest_at_least(self.full_sizes, ns) if uniform_decode else np.zeros_like(ns)
        full = np.where(within, full, 0)
        mixed = smallest_at_least(self.mixed_sizes, ns) if self.mixed_family else 0
        size = np.where(full > 0, full, np.where(within, mixed, 0))
        path = np.where(full > 0, "full", np.where(size > 0, self.mixed_family or "", "eager"))
        if uniform_decode and self.asserted_query_len:
            crash = (size > 0) & (size % self.asserted_query_len > 0)
            if self.uniform_min_reqs:  # the batches whose key matches no graph run eagerly
                size = np.where(
                    crash | (size // self.asserted_query_len >= self.uniform_min_reqs), size, 0
                )
            path = np.where(crash, "crash", np.where(size > 0, path, "eager"))
        return path.astype(object), size

    def dispatch(self, num_tokens: int, uniform_decode: bool = True) -> tuple[str, int | None]:
        """`dispatch_batches` for one batch: (path, size), size None when eager."""
        path, size = self.dispatch_batches([num_tokens], uniform_decode)
        return path[0], int(size[0]) or None

    @property
    def by_family(self) -> dict[str, tuple[int, ...]]:
        """{"full": sizes, "piecewise": sizes} of the graphs captured (FULL mode: one list)."""
        families = {"full": self.full_sizes, "piecewise": ()}
        if self.mixed_family:
            merged = sorted(set(families[self.mixed_family]) | set(self.mixed_sizes))
            families[self.mixed_family] = tuple(merged)
        return families


def families_for(policy, cfg, capture_sizes=None) -> GraphFamilies:
    """The FULL and mixed graphs of `cfg` (or of `capture_sizes`, a list given to vLLM, which a
    rounding model runner rounds as at start-up) under the V1 policy's `cudagraph_mode` (a
    graphlab.sizing.engines V1 policy)."""
    mode, q = policy.cudagraph_mode(cfg), cfg.decode_query_len
    if capture_sizes is None:
        sizes = policy.capture_sizes(cfg)
    else:
        sizes = sorted(set(int(s) for s in capture_sizes))
        if policy.rounds_capture_sizes(cfg):
            sizes = sorted(round_for_spec_decode(sizes, q))
    mixed = _FAMILIES[mode][1]
    if not sizes or mode == "NONE":
        return GraphFamilies(mode, (), (), None, 0)
    full = ()
    if separate_routine(mode):
        limit = min(sizes[-1], cfg.max_num_seqs * q)
        full = tuple(sorted({r for r in (round_up(s, q) for s in sizes) if r <= limit}))
    plain = q > 1 and mode == "FULL"
    asserted = q if plain and policy.asserts_uniform_padding else 0
    return GraphFamilies(
        mode,
        full,
        tuple(sizes) if mixed else (),
        mixed,
        int(sizes[-1]),
        asserted,
        cfg.max_num_seqs if plain and policy.uniform_full_eager else 0,
    )


def smallest_at_least(sizes, ns: np.ndarray) -> np.ndarray:
    """Per n, the smallest of the sorted sizes >= n, 0 when none."""
    if len(sizes) == 0:
        return np.zeros_like(ns)
    sizes = np.asarray(sizes, dtype=np.int64)
    i = np.searchsorted(sizes, ns, side="left")
    return np.where(i < len(sizes), sizes[np.minimum(i, len(sizes) - 1)], 0)
