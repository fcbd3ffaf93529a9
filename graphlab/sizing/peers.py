"""The peers' sizing policies: SGLang, nano-vllm and TensorRT-LLM, each from its own source."""

from __future__ import annotations

import math

import numpy as np

from graphlab.errors import check_int
from graphlab.sizing.dispatch import BatchUnit
from graphlab.sizing.policy import SizingPolicy

# The kit's reference device, an H200: nvidia-smi reports memory.total = 143771 MiB.
REFERENCE_DEVICE_MEMORY_GIB = 143771 / 1024


class SGLang(SizingPolicy):
    """sglang 0.4.6, python/sglang/srt/model_executor/cuda_graph_runner.py
    `get_batch_sizes_to_capture` and `replay_prepare` (bisect): graphs keyed by request count, so no
    lookup can miss. max_num_seqs maps to max_running_requests, so req_to_token_pool.size = S + 1
    (model_runner.py); cuda_graph_max_bs unset, dp_size 1; with k > 0 the speculative list. A GPU
    with more than 80 GiB (`get_device_memory_capacity() > 81920` MiB) adds 160..256:
    `device_memory_gib` defaults to the reference device, an H200 (141 GB), so the list reaches 256;
    pass 80 for an 80 GB A100/H100."""

    name = "sglang"
    batch_unit = BatchUnit.REQUESTS

    def __init__(self, device_memory_gib: float = REFERENCE_DEVICE_MEMORY_GIB) -> None:
        super().__init__()
        self.device_memory_gib = device_memory_gib

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs, cfg.num_speculative_tokens > 0)

    def _compute_capture_sizes(self, cfg):
        if cfg.num_speculative_tokens == 0:
            sizes = [1, 2, 4, 8] + list(range(16, 161, 8))
        else:
            sizes = list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 161, 16))
        if self.device_memory_gib * 1024 > 81920:
            sizes += list(range(160, 257, 8))
        pool = cfg.max_num_seqs + 1
        if max(sizes) > pool:  # the pool's last two sizes, so its largest batch is captured
            sizes += [pool - 1, pool]
        return [s for s in sizes if s <= pool]


class NanoVllm(SizingPolicy):
    """nano-vllm, nanovllm/engine/model_runner.py `capture_cudagraph` / `run_model`: captures
    [1, 2, 4, 8] + multiples of 16 up to min(max_num_seqs, 512); a decode batch <= 512 replays
    `graphs[next(x for x in graph_bs if x >= bs)]`. So it crashes (StopIteration) exactly when
    8 < S <= 512 and S is not a multiple of 16, for the batches above the last multiple of 16.
    It has no speculative decoding."""

    name = "nano-vllm"
    batch_unit = BatchUnit.REQUESTS

    def sizing_key(self, cfg):
        return (cfg.max_num_seqs,)

    def _compute_capture_sizes(self, cfg):
        return [1, 2, 4, 8] + list(range(16, min(cfg.max_num_seqs, 512) + 1, 16))

    def graph_limit(self, cfg, capture_sizes=None):
        return 512


class TrtLlm(SizingPolicy):
    """TensorRT-LLM PyTorch backend, tensorrt_llm/llmapi/llm_args.py `CudaGraphConfig.
    _generate_cuda_graph_batch_sizes` with its defaults (max_batch_size 128, enable_padding False).
    With padding: [1, 2, 4], multiples of 8 to 128, then +64 steps (PR 12895, 2026-04; before it
    powers of 2), then max_batch_size; a batch is padded with dummy requests to the next size.
    Without: 1..31, 32, 64, 128, powers of 2 below max_batch_size, then max_batch_size; only a
    batch of exactly a captured size replays (_torch/pyexecutor/cuda_graph_runner.py
    `_maybe_get_cuda_graph`), every other runs eagerly. Neither depends on max_num_seqs. The
    executor then drops sizes above max_batch_size and above max_num_tokens // (1 + draft length)
    (_torch/pyexecutor/model_engine.py `_filter_cuda_graph_batch_sizes`); the second filter keeps
    every size up to 128 while max_num_tokens >= 128 * (1 + draft length)."""

    name = "trtllm"
    batch_unit = BatchUnit.REQUESTS

    def __init__(self, max_batch_size: int = 128, enable_padding: bool = False) -> None:
        super().__init__()
        check_int("max_batch_size", max_batch_size, 1)
        self.max_batch_size, self.enable_padding = max_batch_size, enable_padding

    def sizing_key(self, cfg):
        return ()

    def _compute_capture_sizes(self, cfg):
        top = self.max_batch_size
        if self.enable_padding:
            sizes = [1, 2, 4] + [8 * i for i in range(1, 17)]
            while sizes[-1] + 64 <= top:
                sizes.append(sizes[-1] + 64)
        else:
            sizes = (
                list(range(1, 32))
                + [32, 64, 128]
                + [2**i for i in range(8, math.ceil(math.log2(top)))]
            )
        return [s for s in sizes if s <= top] + [top]

    def tries_graph(self, ns, cfg, capture_sizes):
        if self.enable_padding:
            return super().tries_graph(ns, cfg, capture_sizes)
        return np.isin(ns, capture_sizes)
