"""A Llama-family decoder with a static KV cache that a CUDA graph can capture.

RMSNorm, rotary embeddings (Hugging Face's rotate_half layout, optional Llama 3 frequency
scaling), grouped-query attention and a SwiGLU MLP. Module names equal Hugging Face's, so a
checkpoint's state dict loads without renaming. The KV cache is preallocated once: one row per
sequence slot plus a pad row (``pad_slot``) that padded batch rows write into, so padding never
touches a real sequence's cache. A step reads only the tensors it is given plus the cache, which
is what makes a decode step capturable.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from graphlab.errors import GraphlabError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Llama3RopeScaling:
    """Llama 3.1+ rotary frequency scaling (rope_type "llama3" in Hugging Face configs)."""

    factor: float = 32.0
    low_freq_factor: float = 1.0
    high_freq_factor: float = 4.0
    original_max_position_embeddings: int = 8192

    def __post_init__(self):
        if not self.high_freq_factor > self.low_freq_factor > 0 or self.factor <= 0:
            raise GraphlabError(f"bad llama3 rope scaling {self}: need factor > 0 and "
                                "high_freq_factor > low_freq_factor > 0")


@dataclass(frozen=True)
class ModelConfig:
    vocab_size: int
    hidden_size: int
    intermediate_size: int
    num_hidden_layers: int
    num_attention_heads: int
    num_key_value_heads: int
    max_position_embeddings: int
    rms_norm_eps: float = 1e-5
    rope_theta: float = 10000.0
    tie_word_embeddings: bool = False
    rope_scaling: Llama3RopeScaling | None = None

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                     "num_attention_heads", "num_key_value_heads", "max_position_embeddings"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise GraphlabError(f"ModelConfig.{name}={value!r}: must be an integer >= 1")
        if self.hidden_size % self.num_attention_heads:
            raise GraphlabError(f"hidden_size={self.hidden_size} is not divisible by "
                                f"num_attention_heads={self.num_attention_heads}")
        if self.num_attention_heads % self.num_key_value_heads:
            raise GraphlabError(f"num_attention_heads={self.num_attention_heads} is not divisible "
                                f"by num_key_value_heads={self.num_key_value_heads}")
        if self.head_dim % 2:
            raise GraphlabError(f"head_dim={self.head_dim} must be even for rotary embeddings")
        if self.rms_norm_eps <= 0 or self.rope_theta <= 0:
            raise GraphlabError(f"rms_norm_eps={self.rms_norm_eps} and rope_theta="
                                f"{self.rope_theta} must be > 0")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_attention_heads

    def num_parameters(self) -> int:
        """Unique parameters (a tied embedding counts once)."""
        h, kv = self.hidden_size, self.num_key_value_heads * self.head_dim
        per_layer = 2 * h * h + 2 * h * kv + 3 * h * self.intermediate_size + 2 * h
        head = 0 if self.tie_word_embeddings else self.vocab_size * h
        return self.vocab_size * h + self.num_hidden_layers * per_layer + h + head


PRESETS: dict[str, ModelConfig] = {
    # CPU tests: head_dim 32 (the floor vLLM's CPU attention accepts), two layers, small vocab.
    "tiny": ModelConfig(vocab_size=512, hidden_size=128, intermediate_size=256,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=2048, tie_word_embeddings=True),
    # ~100M parameters (100.1M with the tied embedding): launch-bound at batch 1 on a GPU.
    "100m": ModelConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048,
                        num_hidden_layers=12, num_attention_heads=12, num_key_value_heads=4,
                        max_position_embeddings=4096, tie_word_embeddings=True),
    # The shape of Llama-3.2-1B (1.24B parameters), random weights.
    "1b": ModelConfig(vocab_size=128256, hidden_size=2048, intermediate_size=8192,
                      num_hidden_layers=16, num_attention_heads=32, num_key_value_heads=8,
                      max_position_embeddings=131072, rms_norm_eps=1e-5, rope_theta=500000.0,
                      tie_word_embeddings=True, rope_scaling=Llama3RopeScaling()),
}


def resolve_config(preset_or_config: str | ModelConfig) -> ModelConfig:
    if isinstance(preset_or_config, ModelConfig):
        return preset_or_config
    if preset_or_config not in PRESETS:
        raise GraphlabError(f"unknown model preset {preset_or_config!r}; "
                            f"known: {', '.join(PRESETS)}")
    return PRESETS[preset_or_config]


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    if dtype in DTYPES:
        return DTYPES[dtype]
    raise GraphlabError(f"unsupported dtype {dtype!r}; allowed: {', '.join(DTYPES)}")


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
    smooth = ((s.original_max_position_embeddings / wavelen - s.low_freq_factor)
              / (s.high_freq_factor - s.low_freq_factor))
    blended = (1 - smooth) * scaled / s.factor + smooth * scaled
    in_band = (wavelen >= high_wavelen) & (wavelen <= low_wavelen)
    return torch.where(in_band, blended, scaled)


class RMSNorm(nn.Module):
    def __init__(self, size: int, eps: float, device=None, dtype=None):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(size, device=device, dtype=dtype))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # Normalise in float32 (as Hugging Face does) so bf16 models match it.
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * x32.to(x.dtype)


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaAttention(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        h, d = config.hidden_size, config.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = (
            config.num_attention_heads, config.num_key_value_heads, d)
        kw = dict(bias=False, device=device, dtype=dtype)
        self.q_proj = nn.Linear(h, self.num_heads * d, **kw)
        self.k_proj = nn.Linear(h, self.num_kv_heads * d, **kw)
        self.v_proj = nn.Linear(h, self.num_kv_heads * d, **kw)
        self.o_proj = nn.Linear(self.num_heads * d, h, **kw)
        self.k_cache: torch.Tensor | None = None
        self.v_cache: torch.Tensor | None = None

    def forward(self, x, cos, sin, positions, slots, mask):
        n, length, _ = x.shape
        kv, d = self.num_kv_heads, self.head_dim
        group = self.num_heads // kv
        q = self.q_proj(x).view(n, length, self.num_heads, d).transpose(1, 2)
        k = self.k_proj(x).view(n, length, kv, d).transpose(1, 2)
        v = self.v_proj(x).view(n, length, kv, d)
        q = q * cos + rotate_half(q) * sin
        k = (k * cos + rotate_half(k) * sin).transpose(1, 2)
        # Write every row's K/V first, in place, so rows sharing a slot see each other's.
        cell = (slots[:, None], slice(None), positions)
        self.k_cache[cell] = k
        self.v_cache[cell] = v
        keys, values = self.k_cache[slots], self.v_cache[slots]  # [n, kv, max_seq_len, d]
        # Grouped-query attention without repeating K/V: fold each KV head's query group
        # into the query-length axis.
        q = q.reshape(n, kv, group * length, d)
        out = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
        out = out.reshape(n, self.num_heads, length, d).transpose(1, 2).reshape(n, length, -1)
        return self.o_proj(out)


class LlamaMLP(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        h, i = config.hidden_size, config.intermediate_size
        kw = dict(bias=False, device=device, dtype=dtype)
        self.gate_proj = nn.Linear(h, i, **kw)
        self.up_proj = nn.Linear(h, i, **kw)
        self.down_proj = nn.Linear(i, h, **kw)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, device, dtype)
        self.self_attn = LlamaAttention(config, device, dtype)
        self.post_attention_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps,
                                                device, dtype)
        self.mlp = LlamaMLP(config, device, dtype)

    def forward(self, x, cos, sin, positions, slots, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, positions, slots, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size,
                                         device=device, dtype=dtype)
        self.layers = nn.ModuleList(LlamaDecoderLayer(config, device, dtype)
                                    for _ in range(config.num_hidden_layers))
        self.norm = RMSNorm(config.hidden_size, config.rms_norm_eps, device, dtype)


class LlamaForCausalLM(nn.Module):
    def __init__(self, config: ModelConfig, device=None, dtype=None):
        super().__init__()
        self.config = config
        self.model = LlamaModel(config, device, dtype)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False,
                                 device=device, dtype=dtype)
        if config.tie_word_embeddings:
            self.lm_head.weight = self.model.embed_tokens.weight
        self.register_buffer("inv_freq", rope_inv_freq(config).to(device), persistent=False)
        self.num_slots = 0
        self.max_seq_len = 0

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

    def allocate_kv_cache(self, num_slots: int, max_seq_len: int, device=None,
                          dtype=None) -> None:
        """Preallocate [num_slots + 1, num_kv_heads, max_seq_len, head_dim] K and V per layer."""
        if not isinstance(num_slots, int) or num_slots < 1:
            raise GraphlabError(f"num_slots={num_slots!r}: must be an integer >= 1")
        limit = self.config.max_position_embeddings
        if not isinstance(max_seq_len, int) or not 1 <= max_seq_len <= limit:
            raise GraphlabError(f"max_seq_len={max_seq_len!r}: must be an integer in "
                                f"[1, max_position_embeddings={limit}]")
        device = self.device if device is None else torch.device(device)
        dtype = self.dtype if dtype is None else resolve_dtype(dtype)
        shape = (num_slots + 1, self.config.num_key_value_heads, max_seq_len,
                 self.config.head_dim)
        for layer in self.model.layers:
            layer.self_attn.k_cache = torch.zeros(shape, device=device, dtype=dtype)
            layer.self_attn.v_cache = torch.zeros(shape, device=device, dtype=dtype)
        self.register_buffer("key_positions", torch.arange(max_seq_len, device=device),
                             persistent=False)
        self.num_slots, self.max_seq_len = num_slots, max_seq_len

    def kv_cache(self) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """The (K, V) cache tensors of each layer, in place (not copies)."""
        if not self.num_slots:
            raise GraphlabError("no KV cache: call allocate_kv_cache(num_slots, max_seq_len) first")
        return [(layer.self_attn.k_cache, layer.self_attn.v_cache) for layer in self.model.layers]

    def check_inputs(self, input_ids: torch.Tensor, positions: torch.Tensor,
                     slots: torch.Tensor) -> None:
        """Raise GraphlabError for inputs forward() would mis-index (reads values: syncs a GPU)."""
        self.kv_cache()
        if input_ids.dim() != 2 or positions.shape != input_ids.shape:
            raise GraphlabError(f"input_ids {tuple(input_ids.shape)} and positions "
                                f"{tuple(positions.shape)} must both be [n, L]")
        if slots.shape != input_ids.shape[:1]:
            raise GraphlabError(f"slots {tuple(slots.shape)} must be [n] with "
                                f"n={input_ids.shape[0]}")
        if input_ids.shape[0] < 1 or input_ids.shape[1] < 1:
            raise GraphlabError(f"empty batch: input_ids shape {tuple(input_ids.shape)}")
        for name, t in (("input_ids", input_ids), ("positions", positions), ("slots", slots)):
            if t.dtype != torch.long:
                raise GraphlabError(f"{name} must be int64 (torch.long), got {t.dtype}")
        checks = (("input_ids", input_ids, self.config.vocab_size, "vocab_size"),
                  ("positions", positions, self.max_seq_len, "max_seq_len"),
                  ("slots", slots, self.num_slots, "num_slots"))
        cells = (slots[:, None].to(positions.device) * self.max_seq_len + positions).flatten()
        # All values in one tensor, so a GPU syncs once per step rather than once per check.
        stats = [x.to(positions.device) for _, t, _, _ in checks for x in (t.min(), t.max())]
        stats = torch.stack(stats + [(cells.sort().values.diff() == 0).any().long()]).tolist()
        for i, (name, _, bound, bound_name) in enumerate(checks):
            lo, hi = stats[2 * i], stats[2 * i + 1]
            if lo < 0 or hi >= bound:
                raise GraphlabError(f"{name} out of range: values in [{lo}, {hi}], allowed "
                                    f"[0, {bound - 1}] ({bound_name}={bound})")
        if stats[-1]:
            raise GraphlabError("two tokens in one step write the same KV cache cell "
                                "(same slot and position); each (slot, position) once per step")

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor,
                slots: torch.Tensor) -> torch.Tensor:
        """Logits [n, L, vocab] in float32; writes K/V at (slot, position) of every token.

        Token j of row i attends to cache positions <= positions[i, j] of slot slots[i].
        Values are not range-checked here (that would sync a GPU and break capture); callers
        validate with check_inputs.
        """
        if not self.num_slots:
            raise GraphlabError("no KV cache: call allocate_kv_cache(num_slots, max_seq_len) first")
        freqs = positions[..., None].float() * self.inv_freq  # [n, L, d/2], float32 as HF
        angles = torch.cat((freqs, freqs), dim=-1)[:, None]    # [n, 1, L, d]
        cos, sin = angles.cos().to(self.dtype), angles.sin().to(self.dtype)
        group = self.config.num_attention_heads // self.config.num_key_value_heads
        visible = self.key_positions <= positions[:, :, None]   # [n, L, max_seq_len]
        mask = visible[:, None, None].expand(-1, -1, group, -1, -1).flatten(2, 3)
        x = self.model.embed_tokens(input_ids)
        for layer in self.model.layers:
            x = layer(x, cos, sin, positions, slots, mask)
        return self.lm_head(self.model.norm(x)).float()


# Matrices get std INIT_GAIN / sqrt(hidden_size), so the logits' spread (about INIT_GAIN) and the
# attention scores' (about INIT_GAIN**2) are the same at every preset's width and depth, and the
# layers outweigh the input token's own embedding, which a tied lm_head would echo back: at a
# fixed 0.02 the tiny and 100m models' greedy text repeats its last token >90% of the time.
INIT_GAIN = 1.5


def default_init_std(config: ModelConfig) -> float:
    return INIT_GAIN / math.sqrt(config.hidden_size)


def init_weights(model: LlamaForCausalLM, seed: int, std: float | None = None) -> None:
    """Normal(0, std) matrices (std None: default_init_std), unit norms."""
    if std is None:
        std = default_init_std(model.config)
    generator = torch.Generator(device=model.device).manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if name.endswith("norm.weight"):
                param.fill_(1.0)
            else:
                param.normal_(0.0, std, generator=generator)


def build_model(preset_or_config: str | ModelConfig, seed: int = 0,
                dtype: str | torch.dtype = torch.float32, device="cpu") -> LlamaForCausalLM:
    """A model with seeded random weights (same seed and device -> same weights)."""
    config = resolve_config(preset_or_config)
    model = LlamaForCausalLM(config, device=torch.device(device), dtype=resolve_dtype(dtype))
    init_weights(model, seed)
    return model.eval().requires_grad_(False)


# ---- Hugging Face checkpoints -------------------------------------------------------------

def config_from_hf(hf: dict) -> ModelConfig:
    """A ModelConfig from a Hugging Face Llama config.json (transformers 4.x or 5.x layout)."""
    archs = hf.get("architectures") or ["LlamaForCausalLM"]
    if hf.get("model_type", "llama") != "llama" or "LlamaForCausalLM" not in archs:
        raise GraphlabError(f"not a Llama checkpoint: model_type={hf.get('model_type')!r}, "
                            f"architectures={archs}; expected llama / LlamaForCausalLM")
    unsupported = {"attention_bias": False, "mlp_bias": False, "hidden_act": "silu"}
    for key, expected in unsupported.items():
        if hf.get(key, expected) != expected:
            raise GraphlabError(f"unsupported {key}={hf[key]!r}; "
                                f"graphlab's Llama needs {expected!r}")
    rope = dict(hf.get("rope_scaling") or {})
    rope.update(hf.get("rope_parameters") or {})
    theta = rope.pop("rope_theta", hf.get("rope_theta", 10000.0))
    rope_type = rope.pop("rope_type", rope.pop("type", "default"))
    if rope_type not in ("default", "llama3"):
        raise GraphlabError(f"unsupported rope_type {rope_type!r}; allowed: default, llama3")
    scaling = None
    if rope_type == "llama3":
        keys = {f.name for f in fields(Llama3RopeScaling)}
        scaling = Llama3RopeScaling(**{k: v for k, v in rope.items() if k in keys})
    config = ModelConfig(
        vocab_size=hf["vocab_size"], hidden_size=hf["hidden_size"],
        intermediate_size=hf["intermediate_size"], num_hidden_layers=hf["num_hidden_layers"],
        num_attention_heads=hf["num_attention_heads"],
        num_key_value_heads=hf.get("num_key_value_heads") or hf["num_attention_heads"],
        max_position_embeddings=hf.get("max_position_embeddings", 2048),
        rms_norm_eps=hf.get("rms_norm_eps", 1e-6), rope_theta=float(theta),
        tie_word_embeddings=hf.get("tie_word_embeddings", False), rope_scaling=scaling)
    if hf.get("head_dim") not in (None, config.head_dim):
        raise GraphlabError(f"unsupported head_dim={hf['head_dim']}; graphlab's Llama needs "
                            f"hidden_size / num_attention_heads = {config.head_dim}")
    return config


def config_to_hf(config: ModelConfig, dtype: torch.dtype) -> dict:
    """config.json for transformers and vLLM; both the 4.x and 5.x key names are written."""
    dtype_name = next(k for k, v in DTYPES.items() if v == dtype)
    rope = {"rope_type": "default"}
    if config.rope_scaling is not None:
        rope = {"rope_type": "llama3", **asdict(config.rope_scaling)}
    hf = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "rope_scaling"}
    hf.update(architectures=["LlamaForCausalLM"], model_type="llama", hidden_act="silu",
              attention_bias=False, mlp_bias=False, head_dim=config.head_dim,
              torch_dtype=dtype_name, dtype=dtype_name, bos_token_id=1, eos_token_id=2,
              rope_scaling=None if config.rope_scaling is None else rope,
              rope_parameters={**rope, "rope_theta": config.rope_theta})
    return hf


def load_checkpoint(path, dtype: str | torch.dtype | None = None,
                    device="cpu") -> LlamaForCausalLM:
    """Load a local Hugging Face Llama directory (config.json + *.safetensors); no download."""
    from safetensors import safe_open

    path = Path(path)
    if not (path / "config.json").is_file():
        raise GraphlabError(f"{path} has no config.json: expected a local Hugging Face Llama "
                            "checkpoint directory")
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise GraphlabError(f"{path} has no *.safetensors weights")
    hf = json.loads((path / "config.json").read_text())
    config = config_from_hf(hf)
    if dtype is None:
        dtype = hf.get("dtype") or hf.get("torch_dtype") or "float32"
    model = LlamaForCausalLM(config, device=torch.device(device), dtype=resolve_dtype(dtype))
    state = {}
    for file in files:
        with safe_open(str(file), framework="pt") as f:
            for name in f.keys():
                state[name] = f.get_tensor(name)
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)  # some tied checkpoints store it anyway
    expected = {k for k in model.state_dict() if not (config.tie_word_embeddings
                                                      and k == "lm_head.weight")}
    missing, unexpected = expected - state.keys(), state.keys() - expected
    if missing or unexpected:
        raise GraphlabError(f"checkpoint {path} does not match its config: missing "
                            f"{sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}")
    model.load_state_dict(state, strict=False)
    return model.eval().requires_grad_(False)


def save_checkpoint(model: LlamaForCausalLM, path) -> None:
    """Write config.json + model.safetensors that transformers and vLLM load as Llama."""
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous().cpu() for k, v in model.state_dict().items()}
    if model.config.tie_word_embeddings:
        state.pop("lm_head.weight")  # shared storage; loaders re-tie it
    save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    hf = config_to_hf(model.config, model.dtype)
    (path / "config.json").write_text(json.dumps(hf, indent=2) + "\n")
