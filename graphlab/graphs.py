"""Capture and replay of decode steps: one graph per batch size over shared static buffers.

On CUDA each size is a ``torch.cuda.CUDAGraph``, captured largest first into one memory pool
(``graph_pool="shared"``; ``"separate"`` gives each graph its own pool, for the memory study),
after warm-up runs. Without CUDA the "cpu-emulated" backend keeps the same static buffers,
padding, lookup table and errors and runs the step eagerly; its memory figures are predictions.

Replay copies a batch of n rows into the static buffers, fills rows n..size-1 with padding
(token 0, position 0, the model's pad slot, so padding writes only the pad row of the KV cache),
runs the graph of that size and returns the n real rows' logits.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass

import torch

from graphlab.errors import GraphlabError
from graphlab.memory import MemorySnapshot, predict_graph_memory, predict_pool_bytes
from graphlab.model import LlamaForCausalLM
from graphlab.provenance import BACKENDS

GRAPH_POOLS = ("shared", "separate")
# vLLM V0 ran two warm-up steps per size before capturing (vllm/worker/model_runner.py).
NUM_WARMUPS = 2


@dataclass(frozen=True)
class GraphRecord:
    """What capturing one size cost (see graphlab.memory for how each byte count is taken)."""

    size: int
    capture_ms: float      # the capture itself (cuda-graph) or the emulated capture's one run
    warmup_ms: float       # the warm-up runs before it
    memory_bytes: int      # free-memory drop (measured) or growth of the predicted pool
    memory_kind: str       # "measured" | "predicted"
    pool_bytes: int | None  # allocator reserved-bytes growth; None when emulated
    predicted_bytes: int   # the graph's own predicted need, recorded on every backend
    backend: str
    graph_pool: str


class StaticBuffers:
    """The graph's inputs and output (nano-vllm's graph_vars), sized to the largest graph."""

    def __init__(self, model: LlamaForCausalLM, max_size: int):
        device = model.device
        self.pad_slot = model.pad_slot
        self.input_ids = torch.zeros(max_size, 1, dtype=torch.long, device=device)
        self.positions = torch.zeros(max_size, 1, dtype=torch.long, device=device)
        # Start on the pad slot: warm-up and capture runs must not write into real sequences.
        self.slots = torch.full((max_size,), model.pad_slot, dtype=torch.long, device=device)
        self.logits = torch.zeros(max_size, model.config.vocab_size, dtype=torch.float32,
                                  device=device)

    def fill(self, input_ids, positions, slots, size: int) -> None:
        """Rows [0, n) from the batch, rows [n, size) padding that writes only the pad row."""
        n = input_ids.shape[0]
        self.input_ids[:n, 0].copy_(input_ids, non_blocking=True)
        self.positions[:n, 0].copy_(positions, non_blocking=True)
        self.slots[:n].copy_(slots, non_blocking=True)
        self.input_ids[n:size].zero_()
        self.positions[n:size].zero_()
        self.slots[n:size].fill_(self.pad_slot)

    def run(self, model: LlamaForCausalLM, size: int) -> None:
        """One step over the first `size` rows, its logits written into the static output."""
        out = model(self.input_ids[:size], self.positions[:size], self.slots[:size])
        self.logits[:size].copy_(out[:, 0])


class CapturedGraph:
    """One batch size's graph (vLLM V0's CUDAGraphRunner); graph is None when emulated."""

    def __init__(self, model: LlamaForCausalLM, buffers: StaticBuffers, size: int,
                 graph: torch.cuda.CUDAGraph | None):
        self.model, self.buffers, self.size, self.graph = model, buffers, size, graph

    def replay(self, input_ids: torch.Tensor, positions: torch.Tensor,
               slots: torch.Tensor) -> torch.Tensor:
        """Logits [n, vocab] (a copy: the static output is overwritten by the next step)."""
        n = input_ids.shape[0]
        if n > self.size:
            raise GraphlabError(f"a batch of {n} rows does not fit the graph captured for "
                                f"{self.size} rows")
        self.buffers.fill(input_ids, positions, slots, self.size)
        if self.graph is None:
            self.buffers.run(self.model, self.size)
        else:
            self.graph.replay()
        return self.buffers.logits[:n].clone()


def capture_graphs(model: LlamaForCausalLM, sizes, backend: str, graph_pool: str = "shared",
                   num_warmups: int = NUM_WARMUPS):
    """Capture every size, largest first; returns ({size: CapturedGraph}, [GraphRecord])."""
    if backend not in BACKENDS:
        raise GraphlabError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}")
    if graph_pool not in GRAPH_POOLS:
        raise GraphlabError(f"graph_pool {graph_pool!r} is not one of {', '.join(GRAPH_POOLS)}")
    if backend == "cuda-graph" and model.device.type != "cuda":
        raise GraphlabError(f"backend 'cuda-graph' needs the model on a CUDA device, "
                            f"not {model.device}; use 'cpu-emulated'")
    sizes = sorted(set(sizes), reverse=True)
    if not sizes:
        return {}, []
    buffers = StaticBuffers(model, sizes[0])
    capture = _capture_cuda if backend == "cuda-graph" else _capture_emulated
    pool = stream = None
    if backend == "cuda-graph":
        pool = torch.cuda.graph_pool_handle() if graph_pool == "shared" else None
        # Warm up on the capture stream itself: per-stream state such as cuBLAS's workspace is
        # then allocated before the first capture rather than inside its pool.
        stream = torch.cuda.Stream(model.device)
    graphs, records, predictions = {}, [], []
    # Freeze the heap so the gc.collect() torch runs at each capture has little to scan
    # (vLLM does the same around its capture loop).
    gc.collect()
    gc.freeze()
    try:
        with torch.no_grad():
            for size in sizes:
                graph, capture_ms, warmup_ms, measured = capture(model, buffers, size, pool,
                                                                 stream, num_warmups)
                predicted = predict_graph_memory(model.config, size, model.max_seq_len,
                                                 model.dtype)
                # Emulated, a graph costs what it adds to the predicted pool (nothing more
                # once a larger graph shares it), as the measured free-memory drop would.
                added = (predict_pool_bytes(predictions + [predicted], graph_pool)
                         - predict_pool_bytes(predictions, graph_pool))
                predictions.append(predicted)
                graphs[size] = CapturedGraph(model, buffers, size, graph)
                records.append(GraphRecord(
                    size=size, capture_ms=capture_ms, warmup_ms=warmup_ms,
                    memory_bytes=added if measured is None else measured[0],
                    memory_kind="predicted" if measured is None else "measured",
                    pool_bytes=None if measured is None else measured[1],
                    predicted_bytes=predicted, backend=backend, graph_pool=graph_pool))
    finally:
        gc.unfreeze()
    return graphs, records


def _capture_emulated(model, buffers, size, pool, stream, num_warmups):
    # Nothing to warm up or record: the "capture" is one eager run on the static buffers.
    start = time.perf_counter()
    buffers.run(model, size)
    return None, (time.perf_counter() - start) * 1e3, 0.0, None


def _capture_cuda(model, buffers, size, pool, stream, num_warmups):
    device = model.device
    start = time.perf_counter()
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(num_warmups):
            buffers.run(model, size)
    torch.cuda.synchronize(device)
    warmup_ms = (time.perf_counter() - start) * 1e3
    # Release cached blocks now, as torch.cuda.graph would on entry, so the free-memory drop
    # is the capture's own.
    torch.cuda.empty_cache()
    before = MemorySnapshot.take(device)
    graph = torch.cuda.CUDAGraph()
    start = time.perf_counter()
    with torch.cuda.graph(graph, pool=pool, stream=stream):
        buffers.run(model, size)
    torch.cuda.synchronize(device)
    capture_ms = (time.perf_counter() - start) * 1e3
    after = MemorySnapshot.take(device)
    measured = (before.free_bytes - after.free_bytes,
                after.reserved_bytes - before.reserved_bytes)
    return graph, capture_ms, warmup_ms, measured
