"""What an engine does with a batch: one `Dispatch`, or many at once as `Dispatches` (arrays).

A batch takes one of three paths: it replays a captured graph, runs eagerly, or crashes (the real
engine's exception: V0's `KeyError`, nano-vllm's `StopIteration`, vLLM 0.12/0.13's assertion).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

# Path codes of `dispatch_batches`, indexes into PATHS.
GRAPH, EAGER, CRASH = 0, 1, 2
PATHS = ("graph", "eager", "crash")


def crash_error(key: int) -> str:
    """The exception a failed lookup raises: the dict's `KeyError: key`, or `next()`'s StopIteration
    (key 0)."""
    return f"KeyError: {key}" if key else "StopIteration"


@dataclass(frozen=True)
class Dispatch:
    """What the engine does with one batch of `batch_size` rows, tokens or requests."""

    batch_size: int
    path: str  # one of PATHS
    graph_size: int | None  # the captured size replayed when path == "graph", else None
    error: str | None  # the exception the real engine raises when path == "crash", else None
    # vLLM V1's graph family on the graph path: "full" | "piecewise" (None for V0 and peers)
    family: str | None = None

    @property
    def step_path(self) -> str:
        """What a row shows: V1's "full" | "piecewise" | "eager", else graph | eager | crash."""
        return self.family or self.path

    @property
    def padding_waste(self) -> int | None:
        """Padded slots computed for nothing: graph_size - batch_size on a graph, 0 eagerly, None on
        a crash."""
        if self.path == "graph":
            return self.graph_size - self.batch_size
        return 0 if self.path == "eager" else None


@dataclass(frozen=True)
class Dispatches:
    """What the engine does with many batches at once (`SizingPolicy.dispatch_batches`): one
    array per field, item i being batch i's Dispatch."""

    batch_size: np.ndarray
    path: np.ndarray  # path codes, indexes into PATHS
    graph_size: np.ndarray  # the replayed size on the graph path, else 0
    key: np.ndarray  # the size looked up (V1: the padded token count), 0 when none
    family: np.ndarray | None  # vLLM V1: "full" | "piecewise" | None per batch; None elsewhere
    crash_error: Callable[[int], str]  # the exception a crash at a key raises

    def __len__(self) -> int:
        return len(self.batch_size)

    def __getitem__(self, i: int) -> Dispatch:
        p = int(self.path[i])
        return Dispatch(
            batch_size=int(self.batch_size[i]),
            path=PATHS[p],
            graph_size=int(self.graph_size[i]) if p == GRAPH else None,
            error=self.crash_error(int(self.key[i])) if p == CRASH else None,
            family=None if self.family is None else self.family[i],
        )

    def outcomes(self) -> tuple[Dispatch, ...]:
        return tuple(self[i] for i in range(len(self)))
