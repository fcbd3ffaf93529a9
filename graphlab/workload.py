"""Which batch sizes n an engine's decode steps can produce for a config.

The unit follows the engine (`SizingPolicy.batch_unit`):
- "rows": vLLM V0's batch-expansion scorer turns each of B_s speculating sequences into k+1
  single-token rows and adds the B_0 others as one row each: n = B_s*(k+1) + B_0 over all
  B_s + B_0 <= max_num_seqs (B_s = 0 is plain decode);
- "tokens": vLLM V1 uniform decode, B requests of 1+k tokens each: n = B*(1+k), B in 1..S, and
  n <= max_num_batched_tokens (the V1 scheduler's token budget per step, vllm/v1/core/sched/
  scheduler.py `token_budget`);
- "requests": SGLang and TensorRT-LLM key graphs by request count (a verify step of B requests is
  graph B), and nano-vllm has no speculative decoding, so k never changes its workload: n in 1..S.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from graphlab.errors import GraphlabError
from graphlab.sizing import SizingConfig, SizingPolicy, get_engine


def _union_of_intervals(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sorted integers covered by [starts[i], ends[i]], given starts and ends both nondecreasing."""
    # A new run begins where an interval starts past the end of the one before it.
    breaks = np.flatnonzero(starts[1:] > ends[:-1] + 1) + 1
    run_starts = starts[np.concatenate(([0], breaks))]
    run_ends = ends[np.concatenate((breaks - 1, [len(ends) - 1]))]
    lengths = run_ends - run_starts + 1
    offsets = np.repeat(run_starts - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + offsets


@lru_cache(maxsize=8192)  # the three V0 engines of a crash map share each (S, k)
def batch_expansion_sizes(max_num_seqs: int, num_speculative_tokens: int) -> np.ndarray:
    """Every n = B_s*(k+1) + B_0 >= 1 with B_s + B_0 <= max_num_seqs, sorted, in O(max_num_seqs*(k+1));
    read-only (cached)."""
    speculating = np.arange(max_num_seqs + 1, dtype=np.int64)
    # For B_s fixed, B_0 runs over 0..S-B_s: n covers [B_s*(k+1), S + B_s*k].
    starts = speculating * (num_speculative_tokens + 1)
    ends = max_num_seqs + speculating * num_speculative_tokens
    sizes = _union_of_intervals(starts, ends)[1:]  # drop n = 0 (no sequence at all)
    sizes.flags.writeable = False
    return sizes


def batch_sizes_for_unit(batch_unit: str, max_num_seqs: int, num_speculative_tokens: int,
                         max_num_batched_tokens: int | None = None) -> np.ndarray:
    """The reachable n for an engine counting in batch_unit ("rows" | "tokens" | "requests");
    max_num_batched_tokens caps the "tokens" unit (None: no cap)."""
    if batch_unit == "rows":
        return batch_expansion_sizes(max_num_seqs, num_speculative_tokens)
    query_len = 1 + num_speculative_tokens if batch_unit == "tokens" else 1
    requests = max_num_seqs
    if batch_unit == "tokens" and max_num_batched_tokens is not None:
        requests = min(requests, max_num_batched_tokens // query_len)
    return np.arange(1, requests + 1, dtype=np.int64) * query_len


def reachable_batch_sizes(policy: SizingPolicy | str, cfg: SizingConfig) -> np.ndarray:
    """The sorted, unique batch sizes the policy's engine sees for cfg (in its batch_unit)."""
    policy = get_engine(policy)
    return batch_sizes_for_unit(policy.batch_unit, cfg.max_num_seqs, cfg.num_speculative_tokens,
                                policy.effective_max_num_batched_tokens(cfg))


# ---- request loads that produce these batches (speculative decoding, graphlab.spec_decode) ----

@dataclass(frozen=True)
class Request:
    prompt_token_ids: tuple[int, ...]
    max_tokens: int
    arrival_step: int = 0  # the engine step from which the scheduler may admit it


def make_requests(num_requests: int, max_num_seqs: int, max_tokens: int, max_model_len: int,
                  vocab_size: int, seed: int = 0) -> list[Request]:
    """A seeded load that reaches every kind of step.

    The first max_num_seqs requests arrive at once (so the first decode step has all slots
    speculating: n = max_num_seqs*(k+1)); the rest arrive one every few steps. Even-numbered
    requests stop after between max_tokens/4 and max_tokens tokens, so they finish at different
    steps; odd-numbered ones run until max_model_len, so their last tokens are decoded without
    proposals (plain rows beside speculating ones).
    """
    for name, value, low in (("num_requests", num_requests, 1), ("max_num_seqs", max_num_seqs, 1),
                             ("max_tokens", max_tokens, 1)):
        if value < low:
            raise GraphlabError(f"{name}={value}: must be >= {low}")
    rng = np.random.default_rng(seed)
    longest_prompt = max(2, min(16, max_model_len // 4))
    if max_model_len < longest_prompt + 2:
        raise GraphlabError(f"max_model_len={max_model_len} is too short for a load (need >= "
                            f"{longest_prompt + 2})")
    requests, arrival = [], 0
    for i in range(num_requests):
        prompt_len = int(rng.integers(2, longest_prompt + 1))
        room = max_model_len - prompt_len
        if i % 2:
            tokens = room  # runs into max_model_len: proposals stop near the end
        else:
            tokens = int(rng.integers(max(1, max_tokens // 4), max_tokens + 1))
        if i >= max_num_seqs:
            arrival += int(rng.integers(1, 4))
        prompt = tuple(int(t) for t in rng.integers(0, vocab_size, prompt_len))
        requests.append(Request(prompt, min(tokens, room), arrival))
    return requests


def coverage_requests(max_num_seqs: int, num_speculative_tokens: int, max_model_len: int,
                      vocab_size: int, seed: int = 0) -> list[Request]:
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
    k = num_speculative_tokens
    SizingConfig(max_num_seqs, k)  # raises on bad values
    if max_model_len < k + 3:
        raise GraphlabError(f"max_model_len={max_model_len}: a coverage load needs >= k + 3 = "
                            f"{k + 3} (a speculating prompt, its first token and k proposals)")
    rng = np.random.default_rng(seed)
    # Two prompt lengths, so a group's prefill needs at most two forwards.
    short = min(8, max_model_len - k - 2)                 # seq_len + k < max_model_len
    near_end = max_model_len - 2 if k else short          # seq_len + k >= max_model_len

    def prompt(length: int) -> tuple[int, ...]:
        return tuple(int(t) for t in rng.integers(0, vocab_size, length))

    requests = []
    for group, n in enumerate(batch_expansion_sizes(max_num_seqs, k).tolist()):
        speculating = 0
        if k:
            speculating = max(b for b in range(min(max_num_seqs, n // (k + 1)) + 1)
                              if n - b * (k + 1) <= max_num_seqs - b)
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
        if self.kind not in LOADS:
            raise GraphlabError(f"load {self.kind!r} is not one of {', '.join(LOADS)}")


def load_requests(load: RequestLoad, max_num_seqs: int, num_speculative_tokens: int,
                  max_model_len: int, vocab_size: int) -> list[Request]:
    """The requests of `load` for a config (coverage needs max_num_seqs and k, mixed does not)."""
    if load.kind == "mixed":
        return make_requests(load.num_requests, max_num_seqs, load.max_tokens, max_model_len,
                             vocab_size, load.seed)
    return coverage_requests(max_num_seqs, num_speculative_tokens, max_model_len, vocab_size,
                             load.seed)
