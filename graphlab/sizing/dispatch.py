"""The dispatch contract every engine answers: a batch (`BatchDescriptor`) in, the path it takes
and the size it pads to (`Dispatch`) out, as vLLM V1's `CudagraphDispatcher.dispatch` returns a
runtime mode and a padded descriptor (vllm/v1/cudagraph_dispatcher.py).

A batch replays a captured graph, runs eagerly, or crashes (the real engine's exception: V0's
`KeyError`, nano-vllm's `StopIteration`, vLLM 0.12/0.13's assertion). `BatchPath` names the way, in
the words every CSV's `path` column uses; `CUDAGraphMode` is vLLM's own enum of graph modes.
`Dispatches` holds many answers at once (the crash map's and the audit's arrays).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum

import numpy as np

from graphlab.errors import check_choice, check_instance, check_int


class BatchPath(StrEnum):
    """The path a batch takes, as the `path` column of the kit's CSVs spells it."""

    GRAPH = "graph"  # V0 and the peers: the one graph captured at the padded size
    FULL = "full"  # vLLM V1: a FULL graph (attention inside)
    PIECEWISE = "piecewise"  # vLLM V1: graphs between the layers' eager attention
    EAGER = "eager"  # no graph: vLLM's CUDAGraphMode.NONE
    CRASH = "crash"  # the real engine raises

    def __repr__(self) -> str:  # printed tables and records show the CSV's word
        return repr(self.value)

    @property
    def replays(self) -> bool:
        """Whether the batch replays a captured graph."""
        return self in REPLAYS


REPLAYS = (BatchPath.GRAPH, BatchPath.FULL, BatchPath.PIECEWISE)
# Dispatches' path codes are indexes into this tuple.
PATH_CODES = tuple(BatchPath)


class RunMode(StrEnum):
    """How a runner was told to run (the `mode` column of latency CSVs): eagerly (vLLM's
    enforce_eager), on CUDA graphs, or on CUDA graphs of the compiled model."""

    EAGER = "eager"
    GRAPH = "graph"
    COMPILED_GRAPH = "compiled-graph"

    def __repr__(self) -> str:  # printed tables and records show the CSV's word
        return repr(self.value)


class CUDAGraphMode(StrEnum):
    """vLLM V1's `CUDAGraphMode` (vllm/config/compilation.py, 0.11 to 0.33): NONE, PIECEWISE,
    FULL, and the (decode, mixed) pairs FULL_DECODE_ONLY and FULL_AND_PIECEWISE."""

    NONE = "NONE"
    PIECEWISE = "PIECEWISE"
    FULL = "FULL"
    FULL_DECODE_ONLY = "FULL_DECODE_ONLY"
    FULL_AND_PIECEWISE = "FULL_AND_PIECEWISE"

    def __repr__(self) -> str:  # printed choices and records show vLLM's word
        return repr(self.value)

    def decode_mode(self) -> BatchPath | None:
        """The graphs uniform decode batches replay (`CUDAGraphMode.decode_mode()`)."""
        return _FAMILIES[self][0]

    def mixed_mode(self) -> BatchPath | None:
        """The graphs every other batch replays (`CUDAGraphMode.mixed_mode()`)."""
        return _FAMILIES[self][1]

    def separate_routine(self) -> bool:
        """Whether FULL uniform-decode graphs are kept apart from the mixed family
        (`decode_mode() == FULL and separate_routine()`: FULL_DECODE_ONLY, FULL_AND_PIECEWISE)."""
        return self.decode_mode() is BatchPath.FULL and self.mixed_mode() is not BatchPath.FULL


_FAMILIES = {
    CUDAGraphMode.NONE: (None, None),
    CUDAGraphMode.PIECEWISE: (BatchPath.PIECEWISE, BatchPath.PIECEWISE),
    CUDAGraphMode.FULL: (BatchPath.FULL, BatchPath.FULL),
    CUDAGraphMode.FULL_DECODE_ONLY: (BatchPath.FULL, None),
    CUDAGraphMode.FULL_AND_PIECEWISE: (BatchPath.FULL, BatchPath.PIECEWISE),
}
CUDAGRAPH_MODES = tuple(CUDAGraphMode)
# The modes a step runs in: `CUDAGraphMode.valid_runtime_modes()` (vllm/config/compilation.py).
RUNTIME_MODES = (CUDAGraphMode.NONE, CUDAGraphMode.PIECEWISE, CUDAGraphMode.FULL)
# The runtime mode of a step on each V1 path (a crash never runs: no mode).
STEP_MODES = {
    BatchPath.FULL: CUDAGraphMode.FULL,
    BatchPath.PIECEWISE: CUDAGraphMode.PIECEWISE,
    BatchPath.EAGER: CUDAGraphMode.NONE,
}


class BatchUnit(StrEnum):
    """What a batch's size counts, and so what an engine keys its graphs by."""

    ROWS = "rows"  # vLLM V0: batch expansion's rows, 1 + k per request
    TOKENS = "tokens"  # vLLM V1: tokens, q = 1 + k per request of a uniform decode batch
    REQUESTS = "requests"  # SGLang, nano-vllm, TensorRT-LLM: requests

    def __repr__(self) -> str:  # printed tables and records show the CSV's word
        return repr(self.value)


@dataclass(frozen=True)
class BatchDescriptor:
    """vLLM's BatchDescriptor (vllm/forward_context.py): what a dispatcher keys on. `num_tokens`
    is the size an engine pads: V1's tokens, V0's expanded rows, the peers' requests."""

    num_tokens: int
    num_reqs: int | None = None
    uniform: bool = True  # every request has the same query length (a uniform decode batch)

    def __post_init__(self) -> None:
        check_int("num_tokens", self.num_tokens, 1)
        if self.num_reqs is not None:
            check_int("num_reqs", self.num_reqs, 1, self.num_tokens)
        check_instance("uniform", self.uniform, bool)


def as_batch(batch: BatchDescriptor | int) -> BatchDescriptor:
    """A descriptor as given, or an int as a uniform batch of that many tokens."""
    return batch if isinstance(batch, BatchDescriptor) else BatchDescriptor(batch)


def crash_error(key: int) -> str:
    """The exception a failed lookup raises: the dict's `KeyError: key`, or `next()`'s
    StopIteration (key 0)."""
    return f"KeyError: {key}" if key else "StopIteration"


@dataclass(frozen=True)
class Dispatch:
    """What the engine does with one batch of `batch_size` tokens, rows or requests."""

    batch_size: int
    path: BatchPath
    graph_size: int | None  # the captured size replayed when path.replays, else None
    error: str | None  # the exception the real engine raises when path is CRASH, else None

    @property
    def padding_waste(self) -> int | None:
        """Padded slots computed for nothing: graph_size - batch_size on a graph, 0 eagerly, None
        on a crash."""
        if self.path.replays:
            return self.graph_size - self.batch_size
        return 0 if self.path is BatchPath.EAGER else None


@dataclass(frozen=True)
class Dispatches:
    """Many batches' Dispatch at once, one array per field (item i is batch i's Dispatch)."""

    batch_size: np.ndarray
    path: np.ndarray  # path codes, indexes into PATH_CODES
    graph_size: np.ndarray  # the replayed size where the batch replays, else 0
    key: np.ndarray  # the size looked up (V1: the padded token count), 0 when none
    crash_error: Callable[[int], str]  # the exception a crash at a key raises

    def __len__(self) -> int:
        return len(self.batch_size)

    def __getitem__(self, i: int) -> Dispatch:
        path = PATH_CODES[int(self.path[i])]
        return Dispatch(
            batch_size=int(self.batch_size[i]),
            path=path,
            graph_size=int(self.graph_size[i]) if path.replays else None,
            error=self.crash_error(int(self.key[i])) if path is BatchPath.CRASH else None,
        )

    def takes(self, *paths: BatchPath) -> np.ndarray:
        """Per batch, whether it takes one of `paths`."""
        codes = [code(p) for p in paths]
        # One path: a comparison, several times faster than isin (a crash map asks 18,000 times).
        return self.path == codes[0] if len(codes) == 1 else np.isin(self.path, codes)

    @property
    def replays(self) -> np.ndarray:
        """Per batch, whether it replays a captured graph."""
        return self.takes(*REPLAYS)

    def count(self, *paths: BatchPath) -> int:
        return int(self.takes(*paths).sum())

    def outcomes(self) -> tuple[Dispatch, ...]:
        return tuple(self[i] for i in range(len(self)))


def code(path: BatchPath) -> int:
    """The path's code in Dispatches' arrays."""
    return PATH_CODES.index(path)


# --- asked by engine name: vLLM V1's graph families and verify batches ---------------------------


def _v1_policy(engine):
    from graphlab.sizing.engines import V1_ENGINES, get_engine  # the engines import this module

    policy = get_engine(engine)
    check_choice("engine (graph families are vLLM V1's)", policy.name, V1_ENGINES)
    return policy


def graph_families(engine, cfg, capture_sizes=None):
    """The FULL and mixed graphs a vLLM V1 engine captures for cfg (graphlab.sizing.families;
    GraphlabError naming the V1 engines for any other)."""
    from graphlab.sizing.config import SizingConfig
    from graphlab.sizing.families import families_for

    return families_for(_v1_policy(engine), check_instance("cfg", cfg, SizingConfig), capture_sizes)


def decode_graph_sizes(engine, cfg) -> tuple[int, ...]:
    """Token counts of the FULL uniform-decode graphs vLLM captures for `cfg` (none when its
    cudagraph_mode has no separate FULL decode graphs)."""
    return graph_families(engine, cfg).full_sizes


def verify_batches(engine, cfg) -> list[dict]:
    """Every uniform decode batch cfg allows, 1..max_num_seqs requests of q tokens each (q = 1 +
    k, k from num_speculative_tokens_per_batch_size where set): its requests, query length and
    tokens, the path (full | piecewise | eager | crash), the graph it replays (None when eager or
    crashing) and the padding tokens."""
    families = graph_families(engine, cfg)
    num_reqs = np.arange(1, cfg.max_num_seqs + 1)
    query_lens = cfg.verify_query_lens(num_reqs)
    batches = families.dispatch_batches(num_reqs * query_lens, True, query_lens)
    return [
        dict(
            num_reqs=int(m),
            query_len=int(q),
            num_tokens=d.batch_size,
            path=d.path,
            graph_size=d.graph_size,
            padding_tokens=d.padding_waste or 0,
        )
        for m, q, d in zip(num_reqs, query_lens, batches.outcomes(), strict=True)
    ]
