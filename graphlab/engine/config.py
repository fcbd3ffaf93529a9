"""The model's shape: `ModelConfig` in Hugging Face's LlamaConfig vocabulary, the presets, dtypes.

A preset or a config, and a dtype name or a torch dtype, resolve here to what
graphlab.engine.model builds.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from graphlab.errors import BadInput, check_choice, check_int, lookup

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
            raise BadInput(
                f"bad llama3 rope scaling {self}: need factor > 0 and "
                "high_freq_factor > low_freq_factor > 0"
            )


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
        for name in (
            "vocab_size",
            "hidden_size",
            "intermediate_size",
            "num_hidden_layers",
            "num_attention_heads",
            "num_key_value_heads",
            "max_position_embeddings",
        ):
            check_int(f"ModelConfig.{name}", getattr(self, name), 1)
        if self.hidden_size % self.num_attention_heads:
            raise BadInput(
                f"hidden_size={self.hidden_size} is not divisible by "
                f"num_attention_heads={self.num_attention_heads}"
            )
        if self.num_attention_heads % self.num_key_value_heads:
            raise BadInput(
                f"num_attention_heads={self.num_attention_heads} is not divisible "
                f"by num_key_value_heads={self.num_key_value_heads}"
            )
        if self.head_dim % 2:
            raise BadInput(f"head_dim={self.head_dim} must be even for rotary embeddings")
        if self.rms_norm_eps <= 0 or self.rope_theta <= 0:
            raise BadInput(
                f"rms_norm_eps={self.rms_norm_eps} and rope_theta={self.rope_theta} must be > 0"
            )

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
    "tiny": ModelConfig(
        vocab_size=512,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        tie_word_embeddings=True,
    ),
    # ~100M parameters (100.1M with the tied embedding): launch-bound at batch 1 on a GPU.
    "100m": ModelConfig(
        vocab_size=32000,
        hidden_size=768,
        intermediate_size=2048,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=4,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
    ),
    # The shape of Llama-3.2-1B (1.24B parameters), random weights.
    "1b": ModelConfig(
        vocab_size=128256,
        hidden_size=2048,
        intermediate_size=8192,
        num_hidden_layers=16,
        num_attention_heads=32,
        num_key_value_heads=8,
        max_position_embeddings=131072,
        rms_norm_eps=1e-5,
        rope_theta=500000.0,
        tie_word_embeddings=True,
        rope_scaling=Llama3RopeScaling(),
    ),
}


def resolve_config(preset_or_config: str | ModelConfig) -> ModelConfig:
    return lookup("model preset", preset_or_config, PRESETS, ModelConfig)


def resolve_dtype(dtype: str | torch.dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype) and dtype in DTYPES.values():
        return dtype
    check_choice("dtype", dtype, DTYPES)
    return DTYPES[dtype]
