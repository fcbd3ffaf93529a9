"""vLLM V0's capture sizes and lookup (vllm/worker/model_runner.py), and the adaptive sizing PR 7999
debated: the policies graphlab.sizing.engines lists for V0, whose batches are rows of batch
expansion and whose lookup of an uncaptured padded size raises the real `KeyError`."""

from __future__ import annotations

import numpy as np

from graphlab.sizing.dispatch import BatchUnit
from graphlab.sizing.families import (
    round_up,
)
from graphlab.sizing.policy import (
    SizingPolicy,
)

# V0 (vllm/worker/model_runner.py): 1, 2, 4, then multiples of 8; 0.5.5 stops at 256, 0.6.0 at 8192.
_V0_ALIGNMENT = 8
_V0_SIZES_055 = np.array([1, 2, 4] + [_V0_ALIGNMENT * i for i in range(1, 33)])
_V0_SIZES_060 = np.array([1, 2, 4] + [_V0_ALIGNMENT * i for i in range(1, 1025)])


def pad0(n):
    """V0's `_get_graph_batch_size` of an int, or elementwise over an array: n if n <= 2, 4 if
    n <= 4, else n rounded up to a multiple of 8."""
    padded = np.where(n <= 2, n, np.where(n <= 4, 4, round_up(n, _V0_ALIGNMENT)))
    return int(padded) if np.ndim(padded) == 0 else padded


class _V0Policy(SizingPolicy):
    """V0 model runner: pads with pad0 and looks the padded size up in `graph_runners` (a dict)."""

    batch_unit = BatchUnit.ROWS

    def padded_sizes(self, ns: np.ndarray, capture_sizes) -> np.ndarray:
        # V0 pads by formula, whatever was captured: the key may be missing.
        return pad0(np.asarray(ns))


def _v0_max_graph_batch_size(n: int, sizes: np.ndarray) -> int:
    # vllm 0.6.0 _get_max_graph_batch_size: pad0(n) if it is a listed size, else the list's largest.
    return min(pad0(n), int(sizes[-1]))


class Vllm055(_V0Policy):
    """vllm 0.5.5, vllm/worker/model_runner.py: captures sizes <= pad0(max_num_seqs) but
    `_use_captured_graph` compares with 256 (the list's largest), so a larger batch pads to an
    uncaptured size and `graph_runners[virtual_engine][padded]` raises KeyError."""

    name = "vllm-0.5.5"

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs,)

    def _compute_capture_sizes(self, cfg):
        return _V0_SIZES_055[_V0_SIZES_055 <= pad0(cfg.max_num_seqs)]

    def graph_limit(self, cfg, capture_sizes=None):
        return int(_V0_SIZES_055[-1])


class Vllm060(_V0Policy):
    """vllm 0.6.0, vllm/worker/model_runner.py (the guard, as the v0.6.0 release's code shows):
    list extended to 8192 and `_use_captured_graph` compares with `max_batchsize_to_capture`, the
    largest captured size."""

    name = "vllm-0.6.0"

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs,)

    def _compute_capture_sizes(self, cfg):
        return _V0_SIZES_060[
            _V0_SIZES_060 <= _v0_max_graph_batch_size(cfg.max_num_seqs, _V0_SIZES_060)
        ]


class Adaptive(_V0Policy):
    """The remedy debated in vllm PR 7999, never shipped in V0: the 0.6.0 runner capturing up to
    pad0(max_num_seqs * (1 + k)). The PR proposed, in words, multiplying by k; x(1 + k) is what
    covers the whole expanded batch. Capped at 8192, the 0.6.0 list's largest (the kit's choice)."""

    name = "adaptive"

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs * cfg.decode_query_len,)

    def _compute_capture_sizes(self, cfg):
        limit = _v0_max_graph_batch_size(cfg.max_num_seqs * cfg.decode_query_len, _V0_SIZES_060)
        return _V0_SIZES_060[_V0_SIZES_060 <= limit]
