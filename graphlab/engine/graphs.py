"""Capture and replay of decode steps: one graph per batch size over shared static buffers.

On CUDA each size is a ``torch.cuda.CUDAGraph``, captured largest first by one `CaptureSession`
on one capture stream into one memory pool (``graph_pool="shared"``; ``"separate"`` gives each
size its own pool, for the memory study), after warm-up runs. Without CUDA the "cpu-emulated"
backend keeps the same static buffers, padding, lookup table and errors and runs the step
eagerly; its memory figures are predictions.
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
from dataclasses import dataclass, replace
from functools import partial

import torch

from graphlab.engine.compiled import compiled_step
from graphlab.engine.device import Backend, resolve_backend
from graphlab.engine.memory import MemorySnapshot, predict_graph_memory, predict_pool_bytes
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import (
    BadInput,
    GraphlabError,
    check_choice,
    check_instance,
    check_int,
    check_sizes,
)
from graphlab.sizing.dispatch import BatchPath
from graphlab.sizing.engines import GRAPH_POOLS

# vLLM V0 ran two warm-up steps per size before capturing (vllm/worker/model_runner.py).
NUM_WARMUPS = 2


@dataclass(frozen=True, kw_only=True)
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
    family: BatchPath | None = None  # vLLM V1's FULL | PIECEWISE; None for V0's graphs
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
        if n < rows:  # else three ops on empty views: ~7 µs, 5% of a tiny compiled step (CPU)
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


def check_kv_cache_version(model: LlamaForCausalLM, captured: int, size: int) -> None:
    """Refuse to replay a graph captured before the model's last allocate_kv_cache: a CUDA
    graph would write the freed cache and pad slot; every backend refuses alike."""
    if captured != model.kv_cache_version:
        raise GraphlabError(
            f"the model's KV cache was reallocated after the graph of {size} was captured: "
            "capture again (a new runner's capture_model()) before replaying"
        )


class CapturedGraph:
    """One size's graph (vLLM V0's CUDAGraphRunner); graph is None when emulated or compiled
    for a CPU (`step` is then the compiled step replay calls)."""

    def __init__(
        self,
        model: LlamaForCausalLM,
        buffers: StaticBuffers,
        size: int,
        *,
        graph: torch.cuda.CUDAGraph | None,
        step=None,
    ):
        self.model, self.buffers, self.size, self.graph = model, buffers, size, graph
        self.step = step
        self.kv_cache_version = model.kv_cache_version

    def replay(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> torch.Tensor:
        """Hidden states [n * q, hidden] of n rows of q tokens: a view of the static output,
        which the next replay overwrites (vLLM V0's CUDAGraphRunner returns its output buffer
        the same way); pass it to model.compute_logits before replaying again."""
        check_kv_cache_version(self.model, self.kv_cache_version, self.size)
        n = input_ids.numel()
        if n > self.size:
            unit = "rows" if self.buffers.query_len == 1 else "tokens"
            raise BadInput(
                f"a batch of {n} {unit} does not fit the graph captured for {self.size} {unit}"
            )
        self.buffers.fill(input_ids, positions, seq_slots, self.size)
        if self.graph is None:
            self.buffers.run(self.model, self.size, self.step)
        else:
            self.graph.replay()
        return self.buffers.hidden_states[:n]


class CaptureSession:
    """One capture_model: the capture stream, the graph pool, the loop's memory and the
    predictions, for every family the runner captures (nano-vllm's capture_cudagraph: one loop,
    one pool; vLLM V1 captures both families on one stream, gpu_model_runner.py capture_model).

    `capture(size, runnables, family)` records one size: FULL passes the whole step, PIECEWISE
    its pieces. What happens is asked of the Backend value: where it `captures_graphs`, every
    family records on one capture stream (the caching allocator reuses a freed block only on the
    stream that freed it: two streams would split a shared pool) into one pool ("shared") or one
    pool per size ("separate": a PIECEWISE size's pieces share theirs, so a size costs one
    prediction either way). Elsewhere a capture runs its runnables once; memory is predicted.
    Used as a context manager; on exit every record carries the loop's figure, measured from
    entry as vLLM's is, so it holds the capture stream's cuBLAS workspace (made at the first
    warm-up, every loop: entry clears the workspaces) as vLLM's does, and no per-capture figure
    does.
    """

    def __init__(
        self,
        model: LlamaForCausalLM,
        backend: Backend,
        graph_pool: str = "shared",
        num_warmups: int = NUM_WARMUPS,
    ):
        check_choice("graph_pool", graph_pool, GRAPH_POOLS)
        self.model, self.backend, self.graph_pool = model, backend, graph_pool
        self.num_warmups = check_int("num_warmups", num_warmups, 0)
        self.records: list[GraphRecord] = []
        self.predictions: list[int] = []  # each captured size's predicted bytes, in order
        self.stream = self.pool = self._start = None
        if backend.captures_graphs:
            self.stream = torch.cuda.Stream(model.device)
            if graph_pool == "shared":
                self.pool = torch.cuda.graph_pool_handle()

    def __enter__(self) -> CaptureSession:
        if self.stream is not None:
            # The heap frozen, so the gc.collect() torch.cuda.graph runs at each capture has little
            # to scan (vLLM freezes it around its loop too). No capture on a CPU backend collects,
            # and one collection of a process holding compiled code takes ~0.4 s there.
            gc.collect()
            gc.freeze()
            # PyTorch keeps a cuBLAS workspace per stream and hands out 32 pooled streams: cleared,
            # every loop makes its capture stream's anew, as vLLM's first capture loop does.
            torch.cuda.synchronize(self.model.device)
            torch._C._cuda_clearCublasWorkspaces()
            torch.cuda.empty_cache()  # the loop's start, cache emptied first, as vLLM measures
            self._start = MemorySnapshot.take(self.model.device)
        return self

    def __exit__(self, *exc) -> None:
        if self.stream is not None:
            gc.unfreeze()
        if exc[0] is not None:
            return
        loop_bytes = predict_pool_bytes(self.predictions, self.graph_pool)
        if self._start is not None:
            loop_bytes = self._start.free_bytes - MemorySnapshot.take(self.model.device).free_bytes
        # vLLM logs one figure for the whole loop ("Graph capturing finished in ... took ... GiB")
        self.records = [replace(r, capture_loop_bytes=loop_bytes) for r in self.records]

    def capture(
        self,
        size: int,
        runnables,
        family: BatchPath | None = None,
        *,
        query_len: int = 1,
        compile_cache: str = "none",
    ) -> list:
        """Capture one size: a graph per runnable, in order, after num_warmups passes over all
        of them; its GraphRecord joins self.records. Returns the graphs (None each when the
        backend captures none: the runnables then ran once, eagerly or compiled)."""
        model = self.model
        predicted = predict_graph_memory(
            model.config, size, model.max_seq_len, model.dtype, query_len
        )
        # inference_mode around the runs only, as vLLM captures (gpu_model_runner.py capture_model)
        # and the runner steps: the static buffers, made outside it, stay normal tensors.
        with torch.inference_mode():
            record = self._record if self.backend.captures_graphs else _run_once
            graphs, capture_ms, warmup_ms, measured = record(runnables)
        if measured is None:
            # a graph costs what it adds to the predicted pool (nothing once a larger one shares it)
            pool, pool_bytes = self.graph_pool, None
            memory = predict_pool_bytes(self.predictions + [predicted], pool)
            memory -= predict_pool_bytes(self.predictions, pool)
        else:
            memory, pool_bytes = measured
        self.predictions.append(predicted)
        self.records.append(
            GraphRecord(
                size=size,
                capture_ms=capture_ms,
                warmup_ms=warmup_ms,
                memory_bytes=memory,
                memory_kind="measured" if self.backend.memory_measured else "predicted",
                pool_bytes=pool_bytes,
                predicted_bytes=predicted,
                backend=self.backend.name,
                graph_pool=self.graph_pool,
                family=family,
                compile_cache=compile_cache,
            )
        )
        return graphs

    def _record(self, runnables):
        """(graphs, capture ms, warm-up ms, (free-memory drop, reserved growth)) of real captures
        on the session's stream, after the warm-up passes on that same stream."""
        device, stream = self.model.device, self.stream
        start = time.perf_counter()
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):
            for _ in range(self.num_warmups):
                for run in runnables:
                    run()
        torch.cuda.synchronize(device)
        warmup_ms = _ms_since(start)
        # Cached blocks released now, as torch.cuda.graph does on entry: the drop is the capture's.
        torch.cuda.empty_cache()
        before = MemorySnapshot.take(device)
        pool = self.pool if self.graph_pool == "shared" else torch.cuda.graph_pool_handle()
        start, graphs = time.perf_counter(), []
        for run in runnables:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph, pool=pool, stream=stream):
                run()
            graphs.append(graph)
        torch.cuda.synchronize(device)
        capture_ms = _ms_since(start)
        after = MemorySnapshot.take(device)
        drop = before.free_bytes - after.free_bytes
        return graphs, capture_ms, warmup_ms, (drop, after.reserved_bytes - before.reserved_bytes)


def _run_once(runnables):
    """The "capture" of a backend without CUDA graphs: each runnable once, eagerly or compiled;
    (no graphs, its ms, no warm-up, nothing measured)."""
    start = time.perf_counter()
    for run in runnables:
        run()
    return [None] * len(runnables), _ms_since(start), 0.0, None


def _ms_since(start: float) -> float:
    return (time.perf_counter() - start) * 1e3


def capture_full(
    session: CaptureSession, sizes, query_len: int = 1, family: BatchPath | None = None
):
    """{size: CapturedGraph}: the whole step of every size (in tokens, rows of `query_len`
    tokens), captured largest first over one set of static buffers; family FULL on V1."""
    model, sizes = session.model, sorted(set(sizes), reverse=True)
    if not sizes:
        return {}
    if any(size % query_len for size in sizes):
        raise BadInput(
            f"capture sizes {sizes} must be multiples of query_len={query_len}: "
            f"a graph holds whole rows"
        )
    buffers = StaticBuffers(model, sizes[0], query_len)
    # The compiled backends' step: compiled at capture, called by replay (cpu) or recorded.
    step = compiled_step(model) if session.backend.compiled else None
    cache = "none" if step is None else step.cache_state
    graphs = {}
    for size in sizes:
        # the compiled backends compile at the model's first size; later sizes reuse it
        run = partial(buffers.run, model, size, None if step is None else step.compile)
        (graph,) = session.capture(size, [run], family, query_len=query_len, compile_cache=cache)
        replay_step = step if graph is None else None  # a real graph has recorded the step
        graphs[size] = CapturedGraph(model, buffers, size, graph=graph, step=replay_step)
    return graphs


def capture_graphs(
    model: LlamaForCausalLM,
    sizes,
    backend: str | Backend = "auto",
    graph_pool: str = "shared",
    num_warmups: int = NUM_WARMUPS,
    query_len: int = 1,
):
    """Capture every size of one family, largest first, in a session of its own (vLLM V0's
    capture_model); returns ({size: CapturedGraph}, [GraphRecord])."""
    check_instance("model", model, LlamaForCausalLM)
    sizes = check_sizes("sizes", sizes, 1)
    session = CaptureSession(model, resolve_backend(backend, model.device), graph_pool, num_warmups)
    with session:
        graphs = capture_full(session, sizes, query_len)
    return graphs, session.records
