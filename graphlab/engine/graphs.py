"""Capture and replay of decode steps: one graph per batch size over shared static buffers.

On CUDA each size is a ``torch.cuda.CUDAGraph``, captured largest first into one memory pool
(``graph_pool="shared"``; ``"separate"`` gives each graph its own pool, for the memory study),
after warm-up runs. Without CUDA the "cpu-emulated" backend keeps the same static buffers,
padding, lookup table and errors and runs the step eagerly; its memory figures are predictions.
The "cpu-compiled" backend keeps them too and runs a torch.compile'd step instead, and
"compiled-cuda-graph" captures CUDA graphs of that compiled step (graphlab.engine.compiled).

Replay copies a batch of n rows into the static buffers, fills the rows up to the graph's size
with padding (token 0 at positions 0..q-1 of the model's pad slot, so padding writes only the pad
row of the KV cache), runs the graph of that size and returns the real rows' hidden states. A
row holds q tokens: 1 for V0's decode rows, 1 + k for V1's uniform decode requests. The graph
holds the decoder only: logits are computed after replay, outside it, as vLLM V0's
CUDAGraphRunner and nano-vllm do, so a graph's memory is the decoder's and not the LM head's
[size, vocab] output.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial

import torch

from graphlab.engine.compiled import compiled_step, resolve_compiled
from graphlab.engine.device import (
    BACKENDS,
    COMPILED_CUDA_GRAPH,
    CPU_COMPILED,
    CUDA_GRAPH,
    backend_for,
)
from graphlab.engine.memory import (
    CaptureLoop,
    MemorySnapshot,
    predict_graph_memory,
    predict_pool_bytes,
)
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import GraphlabError, check_choice
from graphlab.sizing.engines import GRAPH_POOLS

# vLLM V0 ran two warm-up steps per size before capturing (vllm/worker/model_runner.py).
NUM_WARMUPS = 2


@dataclass(frozen=True)
class GraphRecord:
    """What capturing one size cost (see graphlab.engine.memory for how each byte count is
    taken)."""

    size: int
    capture_ms: float  # the capture itself (cuda-graph) or the emulated capture's one run
    warmup_ms: float  # the warm-up runs before it
    memory_bytes: int  # free-memory drop (measured) or growth of the predicted pool
    memory_kind: str  # "measured" | "predicted"
    pool_bytes: int | None  # allocator reserved-bytes growth; None when emulated
    predicted_bytes: int  # the graph's own predicted need, recorded on every backend
    backend: str
    graph_pool: str
    family: str | None = None  # vLLM V1's "full" | "piecewise"; None for V0's graphs
    # The whole capture loop's free-memory drop, the figure vLLM V1 logs ("Graph capturing
    # finished in ... took ... GiB"); the predicted pool of all sizes when emulated.
    capture_loop_bytes: int | None = None
    compile_cache: str = "none"  # compiled backends: inductor's disk cache before the compile


class StaticBuffers:
    """The graph's inputs and output (nano-vllm's graph_vars), sized to the largest graph.

    A graph of `size` tokens holds size // query_len rows of query_len tokens each: one token per
    row for V0's decode, 1 + k for V1's uniform decode (vLLM's uniform_decode_query_len). The
    output is token-major, [tokens, hidden], as vLLM V1's model output is.
    """

    def __init__(self, model: LlamaForCausalLM, max_size: int, query_len: int = 1):
        device = model.device
        rows = max_size // query_len
        self.pad_slot, self.query_len = model.pad_slot, query_len
        self.input_ids = torch.zeros(rows, query_len, dtype=torch.long, device=device)
        # A padding row's tokens sit at positions 0..q-1 of the pad slot: distinct cells, causal.
        self.pad_positions = torch.arange(query_len, device=device)
        self.positions = self.pad_positions.repeat(rows, 1)
        # Start on the pad slot: warm-up and capture runs must not write into real sequences.
        self.seq_slots = torch.full((rows,), model.pad_slot, dtype=torch.long, device=device)
        self.hidden_states = torch.zeros(
            max_size, model.config.hidden_size, dtype=model.dtype, device=device
        )

    def fill(self, input_ids, positions, seq_slots, size: int) -> None:
        """Rows [0, n) from the batch, rows [n, size // q) padding that writes only the pad row."""
        n, rows = seq_slots.shape[0], size // self.query_len
        self.input_ids[:n].copy_(input_ids.reshape(n, -1), non_blocking=True)
        self.positions[:n].copy_(positions.reshape(n, -1), non_blocking=True)
        self.seq_slots[:n].copy_(seq_slots, non_blocking=True)
        self.input_ids[n:rows].zero_()
        self.positions[n:rows].copy_(self.pad_positions.expand(rows - n, -1))
        self.seq_slots[n:rows].fill_(self.pad_slot)

    def run(self, model: LlamaForCausalLM, size: int, step=None) -> None:
        """One step over the first `size` tokens, its hidden states into the static output;
        `step` (a compiled step) takes the whole buffers and the row count, and slices them."""
        rows = size // self.query_len
        if step is None:
            out = model.hidden_states(
                self.input_ids[:rows], self.positions[:rows], self.seq_slots[:rows]
            )
        else:
            out = step(self.input_ids, self.positions, self.seq_slots, rows)
        self.hidden_states[:size].copy_(out.view(size, -1))


class CapturedGraph:
    """One size's graph (vLLM V0's CUDAGraphRunner); graph is None when emulated or compiled
    for a CPU (`step` is then the compiled step replay calls)."""

    def __init__(
        self,
        model: LlamaForCausalLM,
        buffers: StaticBuffers,
        size: int,
        graph: torch.cuda.CUDAGraph | None,
        step=None,
    ):
        self.model, self.buffers, self.size, self.graph = model, buffers, size, graph
        self.step = step

    def replay(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> torch.Tensor:
        """Hidden states [n * q, hidden] of n rows of q tokens: a view of the static output,
        which the next replay overwrites (vLLM V0's CUDAGraphRunner returns its output buffer
        the same way); pass it to model.compute_logits before replaying again."""
        n = input_ids.numel()
        if n > self.size:
            unit = "rows" if self.buffers.query_len == 1 else "tokens"
            raise GraphlabError(
                f"a batch of {n} {unit} does not fit the graph captured for {self.size} {unit}"
            )
        self.buffers.fill(input_ids, positions, seq_slots, self.size)
        if self.graph is None:
            self.buffers.run(self.model, self.size, self.step)
        else:
            self.graph.replay()
        return self.buffers.hidden_states[:n]


def resolve_backend(model: LlamaForCausalLM, backend: str, graph_pool: str) -> str:
    """The backend for `model` ("auto": from its device), with backend and graph_pool checked."""
    check_choice("graph_pool", graph_pool, GRAPH_POOLS)
    return device_backend(model.device, backend)


def device_backend(device: torch.device, backend: str) -> str:
    """The backend a model on `device` runs ("auto": backend_for), checked against it."""
    if backend == "auto":
        backend = backend_for(device)
    check_choice("backend", backend, ("auto",) + BACKENDS)
    on_cuda = device.type == "cuda"
    if backend in (CUDA_GRAPH, COMPILED_CUDA_GRAPH) and not on_cuda:
        raise GraphlabError(
            f"backend {backend!r} needs the model on a CUDA device, "
            f"not {device}; use 'cpu-compiled' or 'cpu-emulated'"
        )
    if backend == CPU_COMPILED and on_cuda:
        raise GraphlabError(
            f"backend {backend!r} runs on a CPU model; on {device} use "
            f"'cuda-graph' or '{COMPILED_CUDA_GRAPH}'"
        )
    return resolve_compiled(backend, device)


def capture_record(size, predicted, predictions, timing, backend, graph_pool, **extra):
    """The GraphRecord of one capture; `predictions`, the loop's predicted bytes so far, gains
    this graph's. timing: (capture ms, warm-up ms, measured (drop, pool growth) or None)."""
    capture_ms, warmup_ms, measured = timing
    # Emulated, a graph costs what it adds to the predicted pool (nothing more once a larger
    # graph shares it), as the measured free-memory drop would.
    added = predict_pool_bytes(predictions + [predicted], graph_pool) - predict_pool_bytes(
        predictions, graph_pool
    )
    predictions.append(predicted)
    return GraphRecord(
        size=size,
        capture_ms=capture_ms,
        warmup_ms=warmup_ms,
        memory_bytes=added if measured is None else measured[0],
        memory_kind="predicted" if measured is None else "measured",
        pool_bytes=None if measured is None else measured[1],
        predicted_bytes=predicted,
        backend=backend,
        graph_pool=graph_pool,
        **extra,
    )


def capture_stream_and_pool(model: LlamaForCausalLM, on_cuda: bool, graph_pool: str, pool=None):
    """(capture stream, pool handle) for a capture loop; (None, None) off CUDA. A shared loop
    uses `pool` (another family's) or a new one; separate graphs get their own (None)."""
    if not on_cuda:
        return None, None
    if graph_pool == "shared" and pool is None:
        pool = torch.cuda.graph_pool_handle()
    # Warm up on the capture stream itself: per-stream state such as cuBLAS's workspace is
    # then allocated before the first capture rather than inside its pool.
    return torch.cuda.Stream(model.device), pool if graph_pool == "shared" else None


@contextmanager
def capture_context():
    """Around a capture loop: the heap frozen, so the gc.collect() torch runs at each capture has
    little to scan (vLLM freezes it around its loop too), and inference_mode, as vLLM captures
    (gpu_model_runner.py's capture_model) and as the runner's eager steps run."""
    gc.collect()
    gc.freeze()
    try:
        with torch.inference_mode():
            yield
    finally:
        gc.unfreeze()


def capture_graphs(
    model: LlamaForCausalLM,
    sizes,
    backend: str = "auto",
    graph_pool: str = "shared",
    num_warmups: int = NUM_WARMUPS,
    query_len: int = 1,
    pool=None,
):
    """Capture every size (in tokens, rows of `query_len` tokens), largest first; returns
    ({size: CapturedGraph}, [GraphRecord]). `pool`: a CUDA graph pool handle to share with
    other graphs (vLLM V1's two families); None makes one when graph_pool is "shared"."""
    backend = resolve_backend(model, backend, graph_pool)
    sizes = sorted(set(sizes), reverse=True)
    if not sizes:
        return {}, []
    if any(size % query_len for size in sizes):
        raise GraphlabError(
            f"capture sizes {sizes} must be multiples of query_len={query_len}: "
            f"a graph holds whole rows"
        )
    buffers = StaticBuffers(model, sizes[0], query_len)
    on_cuda = backend in (CUDA_GRAPH, COMPILED_CUDA_GRAPH)
    # The compiled backends' step: compiled at capture, called by replay (cpu) or recorded.
    step = compiled_step(model) if backend in (CPU_COMPILED, COMPILED_CUDA_GRAPH) else None
    cache = "none" if step is None else step.cache_state
    stream, pool = capture_stream_and_pool(model, on_cuda, graph_pool, pool)
    graphs, records, predictions = {}, [], []
    loop = CaptureLoop(model.device if on_cuda else torch.device("cpu"), graph_pool)
    with capture_context():
        for size in sizes:
            # the compiled backends compile at the model's first size and at batch 1
            run = partial(buffers.run, model, size, None if step is None else step.compile)
            (graph,), capture_ms, warmup_ms, measured = record_graphs(
                [run], model.device, pool, stream, num_warmups
            )
            predicted = predict_graph_memory(
                model.config, size, model.max_seq_len, model.dtype, query_len
            )
            graphs[size] = CapturedGraph(
                model, buffers, size, graph, None if graph is not None else step
            )
            records.append(
                capture_record(
                    size,
                    predicted,
                    predictions,
                    (capture_ms, warmup_ms, measured),
                    backend,
                    graph_pool,
                    compile_cache=cache,
                )
            )
    loop_bytes = loop.bytes(predictions)
    return graphs, [replace(r, capture_loop_bytes=loop_bytes) for r in records]


def record_graphs(runs, device: torch.device, pool, stream, num_warmups: int):
    """One graph per callable in `runs` (FULL: the whole step; PIECEWISE: each piece), recorded
    in order after `num_warmups` warm-up passes over all of them on the capture stream. Returns
    (graphs, capture ms, warm-up ms, (free-memory drop, reserved growth)); without a stream
    (not CUDA) each runs once, eagerly or compiled, and the graphs and measurement are None."""
    if stream is None:  # nothing to warm up or record: the "capture" is one run
        start = time.perf_counter()
        for run in runs:
            run()
        return [None] * len(runs), (time.perf_counter() - start) * 1e3, 0.0, None
    start = time.perf_counter()
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(num_warmups):
            for run in runs:
                run()
    torch.cuda.synchronize(device)
    warmup_ms = (time.perf_counter() - start) * 1e3
    # Release cached blocks now, as torch.cuda.graph would on entry, so the free-memory drop
    # is the capture's own.
    torch.cuda.empty_cache()
    before = MemorySnapshot.take(device)
    start, graphs = time.perf_counter(), []
    for run in runs:
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool, stream=stream):
            run()
        graphs.append(graph)
    torch.cuda.synchronize(device)
    capture_ms = (time.perf_counter() - start) * 1e3
    after = MemorySnapshot.take(device)
    measured = (before.free_bytes - after.free_bytes, after.reserved_bytes - before.reserved_bytes)
    return graphs, capture_ms, warmup_ms, measured
