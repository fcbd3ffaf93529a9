"""PIECEWISE graphs: the decoder captured piece by piece, with attention run eagerly between.

vLLM V1 compiles the model and splits it at every attention op (`splitting_ops`,
vllm/config/compilation.py); each piece between two attention calls is a CUDA graph per capture
size, while attention itself runs outside the graphs, so one graph of n tokens serves any batch
composition (prefill, mixed, decode) of up to n tokens (vllm/compilation/cuda_graph.py
`CUDAGraphWrapper`). Here a decoder of L layers has L + 1 pieces:

- piece 0: embedding, layer 0's input norm, q/k/v projection and rotary embedding;
- piece i (1..L-1): layer i-1's o_proj, residual, MLP, then layer i's norm, projection, rotary;
- piece L: the last o_proj, residual, MLP and the final norm.

Every size's pieces are captured in the runner's CaptureSession (largest size first): on the FULL
graphs' stream, into the runner's pool ("separate": one pool per size, which its pieces share).
Padding tokens run through the pieces only (attention never sees them). Backends that capture no
CUDA graphs run the same pieces eagerly on the same buffers.
"""

from __future__ import annotations

from functools import partial

import torch

from graphlab.engine.graphs import CaptureSession, check_kv_cache_version
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.sdpa import sdpa_context
from graphlab.sizing.dispatch import BatchPath


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
        self.kv_cache_version = buffers.model.kv_cache_version  # the rotary cache is in the pieces

    def replay(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> torch.Tensor:
        """Hidden states [n * L, hidden] of n rows of L tokens: pieces replayed, attention eager
        on the real tokens; a view of the static output, overwritten by the next replay."""
        b, model, tokens = self.buffers, self.buffers.model, input_ids.numel()
        check_kv_cache_version(model, self.kv_cache_version, self.size)
        b.input_ids[:tokens].copy_(input_ids.flatten())
        b.positions[:tokens].copy_(positions.flatten())
        b.input_ids[tokens : self.size].zero_()
        b.positions[tokens : self.size].zero_()
        cells, mask = model.cache_cells(positions, seq_slots), model.attention_mask(positions)
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


def capture_piecewise(session: CaptureSession, sizes) -> dict:
    """{size: PiecewiseGraph}: every size's pieces, largest first, captured in `session` (the
    FULL graphs' session: one stream, one pool) over one set of piece buffers."""
    sizes = sorted(set(int(s) for s in sizes), reverse=True)
    if not sizes:
        return {}
    buffers, graphs = PieceBuffers(session.model, sizes[0]), {}
    for size in sizes:
        runs = [partial(buffers.run_piece, i, size) for i in range(buffers.num_pieces)]
        pieces = session.capture(size, runs, BatchPath.PIECEWISE)
        graphs[size] = PiecewiseGraph(buffers, size, pieces)
    return graphs
