"""PIECEWISE graphs: the decoder captured piece by piece, with attention run eagerly between.

vLLM V1 compiles the model and splits it at every attention op (`splitting_ops`,
vllm/config/compilation.py); each piece between two attention calls is a CUDA graph per capture
size, while attention itself runs outside the graphs, so one graph of n tokens serves any batch
composition (prefill, mixed, decode) of up to n tokens (vllm/compilation/cuda_graph.py
`CUDAGraphWrapper`). Here a decoder of L layers has L + 1 pieces:

- piece 0: embedding, layer 0's input norm, q/k/v projection and rotary embedding;
- piece i (1..L-1): layer i-1's o_proj, residual, MLP, then layer i's norm, projection, rotary;
- piece L: the last o_proj, residual, MLP and the final norm.

Every size's pieces are captured into the runner's pool (largest size first); padding tokens run
through the pieces only (attention never sees them). The cpu-emulated backend runs the same pieces
eagerly on the same buffers.
"""

from __future__ import annotations

import gc
import time

import torch

from graphlab.engine.graphs import capture_record, resolve_backend
from graphlab.engine.memory import (
    MemorySnapshot,
    predict_graph_memory,
)
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.sdpa import sdpa_context


class PieceBuffers:
    """Token-major static buffers the pieces read and write, sized to the largest graph."""

    def __init__(self, model: LlamaForCausalLM, max_size: int):
        cfg, device, dtype = model.config, model.device, model.dtype
        heads, kv, d = cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim
        self.model = model
        self.input_ids = torch.zeros(max_size, dtype=torch.long, device=device)
        self.positions = torch.zeros(max_size, dtype=torch.long, device=device)
        self.residual = torch.zeros(max_size, cfg.hidden_size, dtype=dtype, device=device)
        self.q = torch.zeros(max_size, heads, d, dtype=dtype, device=device)
        self.k = torch.zeros(max_size, kv, d, dtype=dtype, device=device)
        self.v = torch.zeros(max_size, kv, d, dtype=dtype, device=device)
        self.attn = torch.zeros(max_size, heads * d, dtype=dtype, device=device)
        self.hidden_states = torch.zeros(max_size, cfg.hidden_size, dtype=dtype, device=device)

    @property
    def num_pieces(self) -> int:
        return len(self.model.model.layers) + 1

    def run_piece(self, i: int, size: int) -> None:
        """Piece i over the first `size` tokens (see the module docstring)."""
        layers, x = self.model.model.layers, self.residual[:size]
        if i == 0:
            x.copy_(self.model.model.embed_tokens(self.input_ids[:size]))
        else:
            done = layers[i - 1]
            x.add_(done.self_attn.o_proj(self.attn[:size]))
            x.add_(done.mlp(done.post_attention_layernorm(x)))
        if i == len(layers):
            self.hidden_states[:size].copy_(self.model.model.norm(x))
            return
        cos, sin = self.model.rotary(self.positions[:size])
        q, k, v = layers[i].self_attn.project(layers[i].input_layernorm(x), cos, sin)
        self.q[:size].copy_(q)
        self.k[:size].copy_(k)
        self.v[:size].copy_(v)


class PiecewiseGraph:
    """One size's pieces (None each when emulated) and the eager attention between them."""

    def __init__(self, buffers: PieceBuffers, size: int, pieces: list):
        self.buffers, self.size, self.pieces = buffers, size, pieces

    def replay(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> torch.Tensor:
        """Hidden states [n * L, hidden] of n rows of L tokens: pieces replayed, attention eager
        on the real tokens; a view of the static output, overwritten by the next replay."""
        b, model, tokens = self.buffers, self.buffers.model, input_ids.numel()
        b.input_ids[:tokens].copy_(input_ids.flatten())
        b.positions[:tokens].copy_(positions.flatten())
        b.input_ids[tokens : self.size].zero_()
        b.positions[tokens : self.size].zero_()
        _, _, cells, mask = model.attention_inputs(positions, seq_slots)
        # the eager attention runs on the same pinned SDPA kernel as the model's own step
        with sdpa_context(model.device):
            for i, piece in enumerate(self.pieces):
                if piece is None:
                    b.run_piece(i, self.size)
                else:
                    piece.replay()
                if i < len(model.model.layers):  # the attention op, outside the graphs
                    attn = model.model.layers[i].self_attn
                    q, k, v = b.q[:tokens], b.k[:tokens], b.v[:tokens]
                    b.attn[:tokens].copy_(attn.attend(q, k, v, cells, seq_slots, mask))
        return b.hidden_states[:tokens]


def capture_piecewise(
    model: LlamaForCausalLM,
    sizes,
    backend: str = "auto",
    graph_pool: str = "shared",
    num_warmups: int = 2,
    pool=None,
):
    """PIECEWISE graphs of every size, largest first: ({size: PiecewiseGraph}, [GraphRecord]).
    `pool`: a CUDA graph pool handle to share (the FULL graphs'); None makes one when shared."""
    backend = resolve_backend(model, backend, graph_pool)
    sizes = sorted(set(int(s) for s in sizes), reverse=True)
    if not sizes:
        return {}, []
    buffers = PieceBuffers(model, sizes[0])
    cuda = backend == "cuda-graph"
    stream = torch.cuda.Stream(model.device) if cuda else None
    if cuda and graph_pool == "shared" and pool is None:
        pool = torch.cuda.graph_pool_handle()
    graphs, records, predictions = {}, [], []
    gc.collect()
    gc.freeze()  # as graphs.capture_graphs: little for torch's per-capture gc to scan
    try:
        # inference_mode, as the FULL captures and vLLM's capture_model
        with torch.inference_mode():
            for size in sizes:
                pieces, capture_ms, warmup_ms, measured = _capture_size(
                    buffers, size, pool if graph_pool == "shared" else None, stream, num_warmups
                )
                predicted = predict_graph_memory(model.config, size, model.max_seq_len, model.dtype)
                graphs[size] = PiecewiseGraph(buffers, size, pieces)
                records.append(
                    capture_record(
                        size,
                        predicted,
                        predictions,
                        (capture_ms, warmup_ms, measured),
                        backend,
                        graph_pool,
                        family="piecewise",
                    )
                )
    finally:
        gc.unfreeze()
    return graphs, records


def _capture_size(buffers: PieceBuffers, size: int, pool, stream, num_warmups: int):
    """(pieces, capture ms, warm-up ms, (free-memory drop, reserved growth) or None)."""
    if stream is None:  # emulated: each piece runs once, eagerly
        start = time.perf_counter()
        for i in range(buffers.num_pieces):
            buffers.run_piece(i, size)
        return [None] * buffers.num_pieces, (time.perf_counter() - start) * 1e3, 0.0, None
    device = buffers.model.device
    start = time.perf_counter()
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(num_warmups):
            for i in range(buffers.num_pieces):
                buffers.run_piece(i, size)
    torch.cuda.synchronize(device)
    warmup_ms = (time.perf_counter() - start) * 1e3
    torch.cuda.empty_cache()
    before = MemorySnapshot.take(device)
    start, pieces = time.perf_counter(), []
    for i in range(buffers.num_pieces):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool, stream=stream):
            buffers.run_piece(i, size)
        pieces.append(graph)
    torch.cuda.synchronize(device)
    capture_ms = (time.perf_counter() - start) * 1e3
    after = MemorySnapshot.take(device)
    return (
        pieces,
        capture_ms,
        warmup_ms,
        (before.free_bytes - after.free_bytes, after.reserved_bytes - before.reserved_bytes),
    )
