"""The question every engine answers, as one base class: which decode batch sizes it captures
as CUDA graphs and what happens to a batch of n (graphlab.sizing.engines holds vLLM's releases,
graphlab.sizing.peers the other engines), and the defaults they share.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from graphlab.errors import BadInput
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import (
    BatchDescriptor,
    BatchPath,
    BatchUnit,
    Dispatch,
    Dispatches,
    as_batch,
    code,
    crash_error,
)
from graphlab.sizing.families import smallest_at_least

# vLLM's default max_num_batched_tokens on an H100/H200 API server (vllm/engine/arg_utils.py, 0.32);
# used by the V1 engines when the config leaves it unset.
DEFAULT_MAX_NUM_BATCHED_TOKENS = 8192

# vLLM's default max_cudagraph_capture_size ceiling on an H200 (vllm/config/vllm.py 0.12-0.33;
# data-center Blackwell's is 1024; its history: docs/vllm_versions.md).
DEFAULT_GRAPH_CEILING = 512
# The first release with --performance-mode (balanced / interactivity / throughput).
PERFORMANCE_MODE_FROM = "0.17.0"
# The first release with speculative_config.num_speculative_tokens_per_batch_size (vLLM PR 32374,
# "[V1][Spec Decode] Add Dynamic SD"; absent from the 0.23.0 wheel, present in 0.24.0's).
DYNAMIC_SPECULATION_FROM = "0.24.0"

# Where captured graphs keep their memory: one pool shared by all sizes (vLLM's
# graph_pool_handle), or one pool per graph.
GRAPH_POOLS = ("shared", "separate")
MIB = 2**20


class SizingPolicy(ABC):
    """One engine's capture sizing and batch dispatch."""

    name: str
    batch_unit: BatchUnit  # what a batch's size counts, and so what the graphs are keyed by
    uses_max_num_batched_tokens: bool = False
    reads_capture_settings: bool = False  # cudagraph_capture_sizes / max_cudagraph_capture_size
    # Whether the kit models speculative_config.num_speculative_tokens_per_batch_size here.
    models_dynamic_speculation: bool = False
    # Whether prefill and decode graphs are sized apart, with their own settings (vLLM 0.34.0 on:
    # graphlab.sizing.engines.Vllm034.split_families).
    splits_capture_sizes: bool = False

    def __init__(self) -> None:
        self._cache: dict[tuple, np.ndarray] = {}

    # --- what each engine defines -------------------------------------------------------------
    @abstractmethod
    def sizing_key(self, cfg: SizingConfig) -> tuple:
        """The part of cfg the captured sizes depend on (lets a sweep reuse them across k)."""

    @abstractmethod
    def _compute_capture_sizes(self, cfg: SizingConfig) -> list[int]:
        """The engine's own rule; may be unsorted or repeat a size."""

    def graph_limit(self, cfg: SizingConfig, capture_sizes=None) -> int:
        """Largest n the engine tries to replay a graph for; default: the largest captured size."""
        sizes = self.capture_sizes(cfg) if capture_sizes is None else capture_sizes
        return int(sizes[-1]) if len(sizes) else 0

    def tries_graph(self, ns: np.ndarray, cfg: SizingConfig, capture_sizes) -> np.ndarray:
        """Per n, whether the engine tries a graph; default: n <= graph_limit."""
        return ns <= self.graph_limit(cfg, capture_sizes)

    def padded_sizes(self, ns: np.ndarray, capture_sizes) -> np.ndarray:
        """Vectorized lookup key per n; default: the smallest captured size >= n, 0 when none
        fits."""
        return smallest_at_least(capture_sizes, ns)

    def startup_error(self, cfg: SizingConfig) -> str | None:
        """The error the engine refuses to start with for cfg (then nothing is captured), else
        None."""
        return None

    def sizing_warnings(self, cfg: SizingConfig) -> tuple[str, ...]:
        """The WARNING lines the engine logs while sizing cfg (vLLM V1: user-set capture
        settings)."""
        self.check_config(cfg)
        return ()

    def check_config(self, cfg: SizingConfig) -> None:
        """GraphlabError when cfg sets capture settings this engine has no such option for."""
        if cfg.sets_capture_sizes and not self.reads_capture_settings:
            from graphlab.sizing.engines import ENGINES  # the registry imports this module

            readers = ", ".join(name for name, p in ENGINES.items() if p.reads_capture_settings)
            raise BadInput(
                f"engine {self.name!r} has no cudagraph_capture_sizes / "
                "max_cudagraph_capture_size / "
                f"cudagraph_mode setting; only {readers} read them"
            )
        if cfg.split_capture_settings and not self.splits_capture_sizes:
            raise BadInput(
                f"engine {self.name!r} has no {' / '.join(cfg.split_capture_settings)} setting "
                "(vLLM added the prefill and decode capture settings in 0.34.0)"
            )
        if cfg.num_speculative_tokens_per_batch_size is not None:
            self._check_dynamic_speculation()

    def _check_dynamic_speculation(self) -> None:
        if not self.models_dynamic_speculation:
            from graphlab.sizing.engines import ENGINES  # the registry imports this module

            modelled = ", ".join(n for n, p in ENGINES.items() if p.models_dynamic_speculation)
            raise BadInput(
                f"engine {self.name!r} does not model num_speculative_tokens_per_batch_size: "
                f"vLLM added it in {DYNAMIC_SPECULATION_FROM} (PR 32374); the kit models it on "
                f"{modelled}"
            )

    # --- derived --------------------------------------------------------------------------------
    def capture_sizes(self, cfg: SizingConfig) -> tuple[int, ...]:
        """Captured sizes, sorted ascending and unique (cached per sizing-relevant part of cfg)."""
        return tuple(self.capture_array(cfg).tolist())

    def capture_array(self, cfg: SizingConfig) -> np.ndarray:
        """`capture_sizes` as a read-only numpy array, computed once per sizing-relevant part of
        cfg."""
        self.check_config(cfg)
        key = self.sizing_key(cfg)
        if key not in self._cache:
            sizes = np.unique(np.asarray(self._compute_capture_sizes(cfg), dtype=np.int64))
            sizes.flags.writeable = False
            self._cache[key] = sizes
        return self._cache[key]

    def effective_max_num_batched_tokens(self, cfg: SizingConfig) -> int | None:
        """The max_num_batched_tokens this engine sizes with (None when it does not read it)."""
        if not self.uses_max_num_batched_tokens:
            return None
        if cfg.max_num_batched_tokens is None:
            return DEFAULT_MAX_NUM_BATCHED_TOKENS
        return cfg.max_num_batched_tokens

    def padded_size(self, n: int, capture_sizes) -> int:
        """The key looked up for a batch of n; StopIteration when no captured size fits (nano-vllm's
        next())."""
        key = int(self.padded_sizes(np.array([n]), capture_sizes)[0])
        if key == 0:
            raise StopIteration
        return key

    def dispatch_batches(
        self, ns, cfg: SizingConfig, capture_sizes=None, uniform: bool = True, query_lens=None
    ) -> Dispatches:
        """graph / eager / crash for many batches at once, as a runner using the three answers
        would: it looks the padded key up among the captured sizes (key 0: next() found none).
        V0 and the peers pad every batch alike: `uniform` and `query_lens` (each uniform batch's
        tokens per request) matter to vLLM V1 only."""
        sizes = (
            self.capture_array(cfg)
            if capture_sizes is None
            else np.asarray(capture_sizes, dtype=np.int64)
        )
        ns = np.asarray(ns, dtype=np.int64)
        tries = self.tries_graph(ns, cfg, sizes)
        keys = self.padded_sizes(ns, sizes) * tries
        found = tries & np.isin(keys, sizes)
        path = np.where(
            tries,
            np.where(found, code(BatchPath.GRAPH), code(BatchPath.CRASH)),
            code(BatchPath.EAGER),
        )
        return Dispatches(ns, path, keys * found, keys, crash_error)

    def dispatch(
        self, batch: BatchDescriptor | int, cfg: SizingConfig, capture_sizes=None
    ) -> Dispatch:
        """What the engine does with one batch (an int: a uniform batch of that many tokens)."""
        batch = as_batch(batch)
        return self.dispatch_batches([batch.num_tokens], cfg, capture_sizes, batch.uniform)[0]

    def __repr__(self) -> str:
        return f"<SizingPolicy {self.name}>"


# --- vLLM V0 --------------------------------------------------------------------------------------
