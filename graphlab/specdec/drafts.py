"""Target and draft models for speculative decoding, built from a preset without downloads."""

from __future__ import annotations

import dataclasses

from graphlab.engine.config import ModelConfig
from graphlab.engine.model import LlamaForCausalLM, build_model
from graphlab.errors import check_choice, check_int

DRAFT_KINDS = ("truncated", "target", "random")
# Deliberately not build_model's non-degenerate default, whose random-weight text a truncated
# draft predicts ~5% of the time: at 0.06 the tiny target mostly repeats its last token, so the
# truncated draft is accepted ~25% (a random one ~1%) and acceptance reaches every position.
SPEC_WEIGHT_STD = 0.06


def build_target(
    preset: str | ModelConfig = "tiny",
    seed: int = 0,
    dtype="float32",
    device="cpu",
    weight_std: float = SPEC_WEIGHT_STD,
) -> LlamaForCausalLM:
    """build_model with weights of std `weight_std` (see SPEC_WEIGHT_STD)."""
    return build_model(preset, seed=seed, dtype=dtype, device=device, weight_std=weight_std)


def build_draft(
    target: LlamaForCausalLM, kind: str = "truncated", seed: int = 1, num_layers: int | None = None
) -> LlamaForCausalLM:
    """A draft with the target's vocabulary, built from the target without downloads.

    - "truncated": the target's embeddings, first `num_layers` layers (default half), final
      norm and lm_head: a cheaper draft that agrees with the target part of the time;
    - "target": a copy of the target (greedy acceptance is 1);
    - "random": the truncated shape with unrelated weights (seed `seed`): acceptance near chance.
    """
    check_choice("draft kind", kind, DRAFT_KINDS)
    layers = target.config.num_hidden_layers
    if kind == "target":
        num_layers = layers
    elif num_layers is None:
        num_layers = max(1, layers // 2)
    check_int("num_layers (of the target's)", num_layers, 1, layers)
    config = dataclasses.replace(target.config, num_hidden_layers=num_layers)
    if kind == "random":
        std = float(target.model.embed_tokens.weight.std())  # the target's scale, other values
        return build_model(config, seed, target.dtype, target.device, weight_std=std)
    draft = LlamaForCausalLM(config, device=target.device, dtype=target.dtype)
    shapes = draft.state_dict()
    draft.load_state_dict({name: t for name, t in target.state_dict().items() if name in shapes})
    return draft.eval().requires_grad_(False)
