"""A Llama-family decoder with a static KV cache that a CUDA graph can capture.

RMSNorm, rotary embeddings (Hugging Face's rotate_half layout, optional Llama 3 scaling),
grouped-query attention and a SwiGLU MLP, q/k/v and gate/up projections fused into one matrix each
(as vLLM and gpt-fast do) so a step launches fewer kernels; ``hf_parameters()`` names every weight
as Hugging Face does (graphlab.engine.checkpoint). The KV cache is preallocated once: a row per
sequence slot plus a pad row (``pad_slot``) that padded batch rows write into. A step reads only
its tensors and the cache (what makes it capturable); the LM head runs after it, outside any graph.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from graphlab.engine.config import ModelConfig, resolve_config, resolve_dtype
from graphlab.engine.device import resolve_device
from graphlab.engine.sdpa import sdpa_context
from graphlab.errors import BadInput, GraphlabError, check_int


def rope_inv_freq(config: ModelConfig) -> torch.Tensor:
    """Rotary inverse frequencies in float32, with Llama 3 scaling when configured."""
    d = config.head_dim
    inv_freq = 1.0 / (config.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
    s = config.rope_scaling
    if s is None:
        return inv_freq
    # Long wavelengths are slowed by `factor`, short ones kept, the band between interpolated.
    wavelen = 2 * math.pi / inv_freq
    low_wavelen = s.original_max_position_embeddings / s.low_freq_factor
    high_wavelen = s.original_max_position_embeddings / s.high_freq_factor
    scaled = torch.where(wavelen > low_wavelen, inv_freq / s.factor, inv_freq)
    smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) / (
        s.high_freq_factor - s.low_freq_factor
    )
    blended = (1 - smooth) * scaled / s.factor + smooth * scaled
    in_band = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(in_band, blended, scaled)


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # rms_norm normalises in float32 and rounds to x's dtype; scaling after that rounding is
        # Hugging Face's order (bit for bit on CPU in bf16, where scaling inside would not be).
        return self.weight * F.rms_norm(x, self.weight.shape, eps=self.eps)


class Linear(nn.Linear):
    """A bias-free nn.Linear that multiplies weight @ x^T and returns its transpose (a view).

    The same product as F.linear with the GEMM's operands swapped: MKL runs this order faster at
    a decode step's few tokens (docs/cpu_kernels.md); at one token both are the same call.
    The output has unit stride along tokens: elementwise ops and the next Linear take it as is.
    """

    def __init__(self, in_features: int, out_features: int, device=None, dtype=None):
        super().__init__(in_features, out_features, bias=False, device=device, dtype=dtype)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:  # [..., in_features] as nn.Linear takes it, via the [tokens, in] case
            return self(x.flatten(0, -2)).unflatten(0, x.shape[:-1])
        return torch.mm(self.weight, x.t()).t()


class MergedLinear(Linear):
    """One matrix for several Hugging Face projections, stacked by rows (vLLM's
    QKVParallelLinear and MergedColumnParallelLinear): one GEMM instead of several."""

    def __init__(self, in_features: int, parts: dict[str, int], device=None, dtype=None):
        super().__init__(in_features, sum(parts.values()), device=device, dtype=dtype)
        self.parts = parts  # Hugging Face module name -> rows, in stacking order


class LlamaAttention(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        h, d = config.hidden_size, config.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = (
            config.num_attention_heads,
            config.num_key_value_heads,
            d,
        )
        self.qkv_proj = MergedLinear(
            h,
            {
                "q_proj": self.num_heads * d,
                "k_proj": self.num_kv_heads * d,
                "v_proj": self.num_kv_heads * d,
            },
            device,
            dtype,
        )
        self.o_proj = Linear(self.num_heads * d, h, device, dtype)
        self.k_cache: torch.Tensor | None = None
        self.v_cache: torch.Tensor | None = None

    def forward(self, x, cos, sin, cells, seq_slots, mask):
        return self.o_proj(self.attend(*self.project(x, cos, sin), cells, seq_slots, mask))

    def project(self, x, cos, sin):
        """q [tokens, heads, d], k and v [tokens, kv, d]: the projection and rotary embedding
        before the attention op (inside vLLM's compiled pieces)."""
        heads, kv, d = self.num_heads, self.num_kv_heads, self.head_dim
        # Contiguous: CPU flash attention needs a unit-stride head_dim, else SDPA runs math.
        qkv = self.qkv_proj(x).contiguous().view(x.shape[0], heads + 2 * kv, d)
        qk, v = qkv.split([heads + kv, kv], dim=1)
        # Hugging Face's rotate_half(x) is roll(x) with the first half negated: sin carries it.
        qk = torch.addcmul(qk * cos, qk.roll(d // 2, dims=-1), sin)
        q, k = qk.split([heads, kv], dim=1)
        return q, k, v

    def attend(self, q, k, v, cells, seq_slots, mask):
        """The attention op, [tokens, heads * d] before o_proj: K/V written into the cache, then
        attention over each row's slot (where vLLM splits its compiled model)."""
        heads, kv, d = self.num_heads, self.num_kv_heads, self.head_dim
        n = seq_slots.shape[0]
        length, group = q.shape[0] // n, heads // kv
        # Write every token's K/V first, in place, so rows sharing a slot see each other's.
        self.k_cache[cells] = k
        self.v_cache[cells] = v
        # A dense copy of each row's whole slot, [n, kv, max_seq_len, d]: SDPA needs contiguous
        # keys per row, where paged attention reads the cache blocks in place. index_select copies
        # whole rows, faster than advanced indexing (aten::index) on a CPU (docs/cpu_kernels.md).
        keys = self.k_cache.index_select(0, seq_slots)
        values = self.v_cache.index_select(0, seq_slots)
        # Grouped-query attention without repeating K/V: fold each KV head's query group into
        # the query-length axis, [n, kv, group * length, d] (a plain view when decoding). A
        # compiled step takes the general path at every length: one compile serves them all.
        decoding = not torch.compiler.is_compiling() and length == 1
        if decoding:
            q = q.reshape(n, kv, group, d)
        else:
            q = q.reshape(n, length, kv, group, d).permute(0, 2, 3, 1, 4).flatten(2, 3)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        if not decoding:
            out = out.view(n, kv, group, length, d).permute(0, 3, 1, 2, 4)
        return out.reshape(n * length, heads * d)


class LlamaMLP(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        h, i = config.hidden_size, config.intermediate_size
        self.gate_up_proj = MergedLinear(h, {"gate_proj": i, "up_proj": i}, device, dtype)
        self.down_proj = Linear(i, h, device, dtype)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, dim=-1)
        return self.down_proj(F.silu(gate) * up)


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, device, dtype)
        self.self_attn = LlamaAttention(config, device, dtype)
        self.post_attention_layernorm = RMSNorm(
            config.hidden_size, config.rms_norm_eps, device, dtype
        )
        self.mlp = LlamaMLP(config, device, dtype)

    def forward(self, x, cos, sin, cells, seq_slots, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, cells, seq_slots, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(
            config.vocab_size, config.hidden_size, device=device, dtype=dtype
        )
        self.layers = nn.ModuleList(
            LlamaDecoderLayer(config, device, dtype) for _ in range(config.num_hidden_layers)
        )
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, device, dtype)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config, device, dtype)
        self.lm_head = Linear(config.hidden_size, config.vocab_size, device, dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.num_slots = 0
        self.max_seq_len = 0
        self.kv_cache_version = 0  # bumped by allocate_kv_cache: graphs hold the old addresses
        # Plain attributes as the K/V caches, not buffers, which a compiled step traces static.
        self.key_positions = self.rope_cache = None

    @property
    def pad_slot(self) -> int:
        """The cache row padded batch rows write into (one past the real slots)."""
        return self.num_slots

    @property
    def device(self) -> torch.device:
        return self.lm_head.weight.device

    @property
    def dtype(self) -> torch.dtype:
        return self.lm_head.weight.dtype

    def hf_parameters(self) -> dict[str, torch.Tensor]:
        """Every parameter under its Hugging Face name, in Hugging Face's module order; fused
        matrices appear as their row blocks (views: writing one writes the model)."""
        params = {}
        for name, param in self.named_parameters():
            module_name = name.rpartition(".")[0]
            module = self.get_submodule(module_name)
            if not isinstance(module, MergedLinear):
                params[name] = param
                continue
            parent = module_name.rpartition(".")[0]
            for part, rows in zip(module.parts, param.split(list(module.parts.values()))):
                params[f"{parent}.{part}.weight"] = rows
        return params

    def allocate_kv_cache(self, num_slots: int, max_seq_len: int, device=None, dtype=None) -> None:
        """Preallocate [num_slots + 1, num_kv_heads, max_seq_len, head_dim] K and V per layer,
        and the rotary cos/sin of every position below max_seq_len (older graphs then refuse)."""
        check_int("num_slots", num_slots, 1)
        limit = self.config.max_position_embeddings
        check_int("max_seq_len (up to max_position_embeddings)", max_seq_len, 1, limit)
        device = self.device if device is None else torch.device(device)
        dtype = self.dtype if dtype is None else resolve_dtype(dtype)
        shape = (num_slots + 1, self.config.num_key_value_heads, max_seq_len, self.config.head_dim)
        for layer in self.model.layers:
            layer.self_attn.k_cache = torch.zeros(shape, device=device, dtype=dtype)
            layer.self_attn.v_cache = torch.zeros(shape, device=device, dtype=dtype)
        key_positions = self.key_positions = torch.arange(max_seq_len, device=device)
        # Angles in float32 and cos/sin rounded to the model dtype, as Hugging Face computes them
        # each step; sin's first half negated for the roll in LlamaAttention.
        freqs = key_positions[:, None].float() * rope_inv_freq(self.config).to(device)
        sin = freqs.sin()
        rope = torch.stack((torch.cat((freqs, freqs), -1).cos(), torch.cat((-sin, sin), -1)), 1)
        self.rope_cache = rope.to(self.dtype)
        self.num_slots, self.max_seq_len = num_slots, max_seq_len
        self.kv_cache_version += 1  # graphs captured before refuse to replay

    def kv_cache(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The (K, V) cache tensors of each layer, in place (not copies)."""
        if not self.num_slots:
            raise GraphlabError("no KV cache: call allocate_kv_cache(num_slots, max_seq_len) first")
        return [(layer.self_attn.k_cache, layer.self_attn.v_cache) for layer in self.model.layers]

    def check_inputs(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> None:
        """Raise GraphlabError for inputs forward() would mis-index (reads values: syncs a GPU)."""
        self.kv_cache()
        named = (("input_ids", input_ids), ("positions", positions), ("seq_slots", seq_slots))
        for name, t in named:
            if not isinstance(t, torch.Tensor) or t.is_meta:  # meta: no values to check or run
                raise BadInput(f"{name} must be a tensor with values, got {t!r:.40}")
            if t.dtype != torch.long:
                raise BadInput(f"{name} must be int64 (torch.long), got {t.dtype}")
        if input_ids.dim() != 2 or positions.shape != input_ids.shape:
            raise BadInput(
                f"input_ids {tuple(input_ids.shape)} and positions "
                f"{tuple(positions.shape)} must both be [n, L]"
            )
        if seq_slots.shape != input_ids.shape[:1]:
            raise BadInput(
                f"seq_slots {tuple(seq_slots.shape)} must be [n] with n={input_ids.shape[0]}"
            )
        if input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
            raise BadInput(f"empty batch: input_ids shape {tuple(input_ids.shape)}")
        checks = (
            ("input_ids", input_ids, self.config.vocab_size, "vocab_size"),
            ("positions", positions, self.max_seq_len, "max_seq_len"),
            ("seq_slots", seq_slots, self.num_slots, "num_slots"),
        )
        cells = (seq_slots[:, None].to(positions.device) * self.max_seq_len + positions).flatten()
        # All values in one tensor, so a GPU syncs once per step rather than once per check.
        stats = [x.to(positions.device) for _, t, _, _ in checks for x in (t.min(), t.max())]
        stats = torch.stack(stats + [(cells.sort().values.diff() == 0).any().long()]).tolist()
        for i, (name, _, bound, bound_name) in enumerate(checks):
            lo, hi = stats[2 * i], stats[2 * i + 1]
            if lo < 0 or hi >= bound:
                raise BadInput(
                    f"{name} out of range: values in [{lo}, {hi}], allowed "
                    f"[0, {bound - 1}] ({bound_name}={bound})"
                )
        if stats[-1]:
            raise BadInput(
                "two tokens in one step write the same KV cache cell "
                "(same seq_slot and position); each (seq_slot, position) once "
                "per step"
            )

    def hidden_states(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> torch.Tensor:
        """The decoder's output after the final norm, [n, L, hidden] in the model dtype: what a
        CUDA graph captures. Writes K/V at (seq_slot, position) of every token.

        Token j of row i attends to cache positions <= positions[i, j] of slot seq_slots[i].
        Values are not range-checked here (that would sync a GPU and break capture); callers
        validate with check_inputs.
        """
        # Not num_slots: a compile guards on an int's value (graphlab.engine.compiled shares it).
        if self.rope_cache is None:
            raise GraphlabError("no KV cache: call allocate_kv_cache(num_slots, max_seq_len) first")
        n, length = input_ids.shape
        cos, sin, cells, mask = self.attention_inputs(positions, seq_slots)
        x = self.model.embed_tokens(input_ids.flatten())  # [n * L, hidden]
        with sdpa_context(x.device):
            for layer in self.model.layers:
                x = layer(x, cos, sin, cells, seq_slots, mask)
        return self.model.norm(x).view(n, length, self.config.hidden_size)

    def rotary(self, tokens: torch.Tensor):
        """cos, sin [tokens, 1, head_dim] of the flattened positions."""
        return self.rope_cache.index_select(0, tokens)[:, None].unbind(2)

    def attention_inputs(self, positions: torch.Tensor, seq_slots: torch.Tensor):
        """(cos, sin, cache cells, additive causal mask) of one step's [n, L] positions."""
        cos, sin = self.rotary(positions.flatten())
        return cos, sin, self.cache_cells(positions, seq_slots), self.attention_mask(positions)

    def cache_cells(self, positions: torch.Tensor, seq_slots: torch.Tensor):
        """The KV cache cells (slot, all heads, position) of one step's [n, L] tokens."""
        tokens = positions.flatten()
        return seq_slots.repeat_interleave(positions.shape[1]), slice(None), tokens

    def attention_mask(self, positions: torch.Tensor) -> torch.Tensor:
        """The additive mask SDPA gets, [n, 1, group * L, max_seq_len] in the model dtype: 0 at
        cache positions <= each token's position, -inf after; built once per step, not per layer."""
        group = self.config.num_attention_heads // self.config.num_key_value_heads
        future = self.key_positions > positions[:, None, :, None]  # [n, 1, L, max_seq_len]
        mask = torch.zeros(future.shape, dtype=self.dtype, device=future.device)
        return mask.masked_fill_(future, float("-inf")).repeat(1, 1, group, 1)

    def compute_logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """The LM head over hidden states, in float32 (run outside the graph, as vLLM does);
        contiguous, as nn.Linear would return them."""
        return self.lm_head(hidden).float().contiguous()

    def forward(
        self, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> torch.Tensor:
        """Logits [n, L, vocab] in float32; writes K/V at (seq_slot, position) of every token."""
        return self.compute_logits(self.hidden_states(input_ids, positions, seq_slots))


# Matrices get std INIT_GAIN / sqrt(hidden_size), so the logits' spread (about INIT_GAIN) and the
# attention scores' (about INIT_GAIN**2) are the same at every preset's width and depth, and the
# layers outweigh the input token's own embedding, which a tied lm_head would echo back: at a
# fixed 0.02 the tiny and 100m models' greedy text repeats its last token >90% of the time.
INIT_GAIN = 1.5


def default_init_std(config: ModelConfig) -> float:
    return INIT_GAIN / math.sqrt(config.hidden_size)


def init_weights(model: LlamaForCausalLM, seed: int, std: float | None = None) -> None:
    """Normal(0, std) matrices (std None: default_init_std), unit norms; drawn per Hugging Face
    parameter in its order, so fusing projections did not change any seed's weights."""
    if std is None:
        std = default_init_std(model.config)
    generator = torch.Generator(device=model.device).manual_seed(seed)
    with torch.no_grad():
        for name, param in model.hf_parameters().items():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.normal_(0.0, std, generator=generator)


def build_model(
    preset_or_config: str | ModelConfig,
    seed: int = 0,
    dtype: str | torch.dtype = torch.float32,
    device="cpu",
    weight_std: float | None = None,
) -> LlamaForCausalLM:
    """A model with seeded random weights (same seed and device -> same weights); weight_std
    as init_weights' std."""
    config = resolve_config(preset_or_config)
    seed = check_int("seed", seed, 0, 2**63 - 1)  # torch.Generator.manual_seed's int64
    model = LlamaForCausalLM(config, device=resolve_device(device), dtype=resolve_dtype(dtype))
    init_weights(model, seed, std=weight_std)
    return model.eval().requires_grad_(False)
