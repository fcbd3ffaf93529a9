"""Request loads for speculative decoding: which requests arrive when, and how long they run.

"mixed" draws prompts and lengths at random (continuous batching over time); "coverage" builds the
requests that make the scorer see every reachable batch size of a config.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from graphlab.errors import BadInput, check_choice, check_int
from graphlab.sizing.batches import batch_expansion_sizes
from graphlab.sizing.config import SizingConfig


@dataclass(frozen=True)
class Request:
    prompt_token_ids: tuple[int, ...]
    max_tokens: int
    arrival_step: int = 0  # the engine step from which the scheduler may admit it


def make_requests(
    num_requests: int,
    max_num_seqs: int,
    max_tokens: int,
    max_model_len: int,
    vocab_size: int,
    seed: int = 0,
) -> list[Request]:
    """A seeded load that reaches every kind of step.

    The first max_num_seqs requests arrive at once (so the first decode step has all slots
    speculating: n = max_num_seqs*(k+1)); the rest arrive one every few steps. Even-numbered
    requests stop after between max_tokens/4 and max_tokens tokens, so they finish at different
    steps; odd-numbered ones run until max_model_len, so their last tokens are decoded without
    proposals (plain rows beside speculating ones).
    """
    for name, value, low in (
        ("num_requests", num_requests, 1),
        ("max_num_seqs", max_num_seqs, 1),
        ("max_tokens", max_tokens, 1),
    ):
        if value < low:
            raise BadInput(f"{name}={value}: must be >= {low}")
    rng = np.random.default_rng(seed)
    longest_prompt = max(2, min(16, max_model_len // 4))
    if max_model_len < longest_prompt + 2:
        raise BadInput(
            f"max_model_len={max_model_len} is too short for a load (need >= {longest_prompt + 2})"
        )
    requests, arrival = [], 0
    for i in range(num_requests):
        prompt_len = int(rng.integers(2, longest_prompt + 1))
        room = max_model_len - prompt_len
        # odd requests run into max_model_len: proposals stop near the end
        tokens = room if i % 2 else int(rng.integers(max(1, max_tokens // 4), max_tokens + 1))
        if i >= max_num_seqs:
            arrival += int(rng.integers(1, 4))
        prompt = tuple(int(t) for t in rng.integers(0, vocab_size, prompt_len))
        requests.append(Request(prompt, min(tokens, room), arrival))
    return requests


def coverage_requests(
    sizing: SizingConfig, max_model_len: int, vocab_size: int, seed: int = 0
) -> list[Request]:
    """The inverse of batch_expansion_sizes: a seeded load whose scorer batches take every
    reachable size n = B_s*(k+1) + B_0, each once, ascending.

    Per size one group arrives: B_s requests with short prompts (room for k more tokens, so they
    speculate) and B_0 whose prompts end within k tokens of max_model_len (V0's rule gives them
    no proposals), split with the most speculating sequences (fewest requests). Every request
    asks for 2 tokens: the prefill step samples the first, the next (decode) step the second, so
    the whole group finishes in that one decode step whatever was accepted, and the next group,
    arriving two steps later, finds all slots free. What each decode step holds therefore
    depends on neither the draft nor the temperature.
    """
    max_num_seqs, k = sizing.max_num_seqs, sizing.num_speculative_tokens
    if max_model_len < k + 3:
        raise BadInput(
            f"max_model_len={max_model_len}: a coverage load needs >= k + 3 = "
            f"{k + 3} (a speculating prompt, its first token and k proposals)"
        )
    rng = np.random.default_rng(seed)
    # Two prompt lengths, so a group's prefill needs at most two forwards.
    short = min(8, max_model_len - k - 2)  # seq_len + k < max_model_len
    near_end = max_model_len - 2 if k else short  # seq_len + k >= max_model_len

    def prompt(length: int) -> tuple[int, ...]:
        return tuple(int(t) for t in rng.integers(0, vocab_size, length))

    requests = []
    for group, n in enumerate(batch_expansion_sizes(sizing).tolist()):
        speculating = 0
        if k:
            speculating = max(
                b
                for b in range(min(max_num_seqs, n // (k + 1)) + 1)
                if n - b * (k + 1) <= max_num_seqs - b
            )
        plain = n - speculating * (k + 1)
        requests += [Request(prompt(short), 2, 2 * group) for _ in range(speculating)]
        requests += [Request(prompt(near_end), 2, 2 * group) for _ in range(plain)]
    return requests


LOADS = ("mixed", "coverage")


@dataclass(frozen=True)
class RequestLoad:
    """Which load to generate: "mixed" (make_requests: num_requests, max_tokens) or "coverage"
    (coverage_requests, which sets its own number of requests and lengths)."""

    kind: str = "mixed"
    num_requests: int = 16
    max_tokens: int = 32
    seed: int = 0

    def __post_init__(self):
        check_choice("load", self.kind, LOADS)
        check_int("num_requests", self.num_requests, 1)
        check_int("max_tokens", self.max_tokens, 1)
        check_int("seed", self.seed, 0)


def load_requests(
    load: RequestLoad, sizing: SizingConfig, max_model_len: int, vocab_size: int
) -> list[Request]:
    """The requests of `load` for a config (coverage needs max_num_seqs and k, mixed does not)."""
    if load.kind == "mixed":
        return make_requests(
            load.num_requests,
            sizing.max_num_seqs,
            load.max_tokens,
            max_model_len,
            vocab_size,
            load.seed,
        )
    return coverage_requests(sizing, max_model_len, vocab_size, load.seed)
