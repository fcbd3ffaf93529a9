"""What graphlab.sizing.drafter says of one kind of draft step (`DraftStep`), shared by model
runner V1's proposer (graphlab.sizing.drafter) and model runner V2's speculators
(graphlab.sizing.drafter_v2)."""

from __future__ import annotations

from dataclasses import dataclass

from graphlab.sizing.dispatch import CUDAGraphMode
from graphlab.sizing.families import GraphFamilies
from graphlab.sizing.model_runner import release_key

# Drafters that read the target's hidden states (V1 EagleProposer, V2 TargetDependentARSpeculator).
EAGLE_METHODS = ("eagle", "eagle3", "mtp")
# The families of a draft step that captures nothing: every batch eager.
NO_GRAPHS = GraphFamilies(CUDAGraphMode.NONE, (), (), None, 0)


@dataclass(frozen=True)
class DraftStep:
    """One kind of draft step: its name, how often a decode step runs it, the tokens each request
    brings to it, the graphs its dispatcher keeps, and how it is dispatched."""

    name: str
    repeats: int  # draft steps of this kind per decode step: 1, or k - 1
    query_len: int  # tokens per request of a decode step's draft batch
    families: GraphFamilies  # the graphs it can replay (none: every batch eager)
    uniform_decode: bool  # whether its dispatcher sees a uniform decode batch
    source: str  # the vLLM function that decides it
    # the request counts (first, last) it covers: one k of a dynamic schedule; None: every one
    requests: tuple[int, int] | None = None


def named(name: str, query_len: int, requests: tuple[int, int] | None) -> str:
    if requests is None:
        return name
    return f"{name} (k = {query_len - 1}, {requests[0]}..{requests[1]} requests)"


def since(table, release: str) -> str | None:
    """The entry of `table` ((first release, value), ascending) in force at `release`."""
    found = [value for first, value in table if release_key(first) <= release_key(release)]
    return found[-1] if found else None
