"""Which batch sizes n an engine's decode steps can produce for a config.

The unit follows the engine (`SizingPolicy.batch_unit`):
- "rows": vLLM V0's batch-expansion scorer turns each of B_s speculating sequences into k+1
  single-token rows and adds the B_0 others as one row each: n = B_s*(k+1) + B_0 over all
  B_s + B_0 <= max_num_seqs (B_s = 0 is plain decode);
- "tokens": vLLM V1 uniform decode, B requests of 1+k tokens each: n = B*(1+k), B in 1..S, and
  n <= max_num_batched_tokens (the V1 scheduler's token budget per step, vllm/v1/core/sched/
  scheduler.py `token_budget`); under dynamic speculation k = k(B), so n is not monotone in B;
- "requests": SGLang and TensorRT-LLM key graphs by request count (a verify step of B requests is
  graph B), and nano-vllm has no speculative decoding, so k never changes its workload: n in 1..S.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from graphlab.errors import check_instance
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchUnit
from graphlab.sizing.engines import SizingPolicy


def _union_of_intervals(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Sorted integers covered by [starts[i], ends[i]], given starts and ends both nondecreasing."""
    # A new run begins where an interval starts past the end of the one before it.
    breaks = np.flatnonzero(starts[1:] > ends[:-1] + 1) + 1
    run_starts = starts[np.concatenate(([0], breaks))]
    run_ends = ends[np.concatenate((breaks - 1, [len(ends) - 1]))]
    lengths = run_ends - run_starts + 1
    offsets = np.repeat(run_starts - (np.cumsum(lengths) - lengths), lengths)
    return np.arange(int(lengths.sum()), dtype=np.int64) + offsets


def batch_expansion_sizes(cfg: SizingConfig) -> np.ndarray:
    """Every n = B_s*(k+1) + B_0 >= 1 with B_s + B_0 <= max_num_seqs, sorted, in
    O(max_num_seqs*(k+1)); read-only (cached)."""
    return _batch_expansion_sizes(check_instance("cfg", cfg, SizingConfig))


@lru_cache(maxsize=8192)  # the three V0 engines of a crash map share each config
def _batch_expansion_sizes(cfg: SizingConfig) -> np.ndarray:
    seqs, k = cfg.max_num_seqs, cfg.num_speculative_tokens
    speculating = np.arange(seqs + 1, dtype=np.int64)
    # For B_s fixed, B_0 runs over 0..S-B_s: n covers [B_s*(k+1), S + B_s*k].
    starts = speculating * (k + 1)
    ends = seqs + speculating * k
    sizes = _union_of_intervals(starts, ends)[1:]  # drop n = 0 (no sequence at all)
    sizes.flags.writeable = False
    return sizes


def verify_requests(policy: SizingPolicy, cfg: SizingConfig) -> np.ndarray:
    """vLLM V1 ("tokens"): the request counts B in 1..S whose uniform decode batch fits the token
    budget, ascending."""
    requests = np.arange(1, cfg.max_num_seqs + 1, dtype=np.int64)
    tokens = policy.effective_max_num_batched_tokens(cfg)
    return requests[requests * cfg.verify_query_lens(requests) <= tokens]


def reachable_batch_sizes(policy: SizingPolicy, cfg: SizingConfig) -> np.ndarray:
    """The batch sizes the policy's engine sees for cfg (in its batch_unit: "rows" of batch
    expansion, sorted and unique; "tokens" of 1 + k per request up to max_num_batched_tokens, one
    per `verify_requests`, in that order; or "requests")."""
    check_instance("cfg", cfg, SizingConfig)
    if policy.batch_unit is BatchUnit.ROWS:
        return _batch_expansion_sizes(cfg)  # cfg checked above
    if policy.batch_unit is BatchUnit.TOKENS:
        requests = verify_requests(policy, cfg)
        return requests * cfg.verify_query_lens(requests)
    return np.arange(1, cfg.max_num_seqs + 1, dtype=np.int64)
