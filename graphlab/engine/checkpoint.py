"""Local Hugging Face Llama checkpoints in and out (config.json + safetensors), no download.

graphlab fuses q/k/v and gate/up into one matrix each; checkpoints keep Hugging Face's separate
projections, so loading copies each one into its row block of the fused matrix and saving writes
the row blocks back out (``LlamaForCausalLM.hf_parameters``). ``safetensors`` is imported only
when a checkpoint is read or written.
"""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path

import torch

from graphlab.engine.config import DTYPES, Llama3RopeScaling, ModelConfig, resolve_dtype
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import UnreadableInput, check_choice


def config_from_hf(hf: dict) -> ModelConfig:
    """A ModelConfig from a Hugging Face Llama config.json (transformers 4.x or 5.x layout)."""
    archs = hf.get("architectures") or ["LlamaForCausalLM"]
    if hf.get("model_type", "llama") != "llama" or "LlamaForCausalLM" not in archs:
        raise UnreadableInput(
            f"not a Llama checkpoint: model_type={hf.get('model_type')!r}, "
            f"architectures={archs}; expected llama / LlamaForCausalLM"
        )
    unsupported = {"attention_bias": False, "mlp_bias": False, "hidden_act": "silu"}
    for key, expected in unsupported.items():
        if hf.get(key, expected) != expected:
            raise UnreadableInput(
                f"unsupported {key}={hf[key]!r}; graphlab's Llama needs {expected!r}"
            )
    rope = dict(hf.get("rope_scaling") or {})
    rope.update(hf.get("rope_parameters") or {})
    theta = rope.pop("rope_theta", hf.get("rope_theta", 10000.0))
    rope_type = rope.pop("rope_type", rope.pop("type", "default"))
    check_choice("rope_type", rope_type, ("default", "llama3"))
    scaling = None
    if rope_type == "llama3":
        keys = {f.name for f in fields(Llama3RopeScaling)}
        scaling = Llama3RopeScaling(**{k: v for k, v in rope.items() if k in keys})
    config = ModelConfig(
        vocab_size=hf["vocab_size"],
        hidden_size=hf["hidden_size"],
        intermediate_size=hf["intermediate_size"],
        num_hidden_layers=hf["num_hidden_layers"],
        num_attention_heads=hf["num_attention_heads"],
        num_key_value_heads=hf.get("num_key_value_heads") or hf["num_attention_heads"],
        max_position_embeddings=hf.get("max_position_embeddings", 2048),
        rms_norm_eps=hf.get("rms_norm_eps", 1e-6),
        rope_theta=float(theta),
        tie_word_embeddings=hf.get("tie_word_embeddings", False),
        rope_scaling=scaling,
    )
    if hf.get("head_dim") not in (None, config.head_dim):
        raise UnreadableInput(
            f"unsupported head_dim={hf['head_dim']}; graphlab's Llama needs "
            f"hidden_size / num_attention_heads = {config.head_dim}"
        )
    return config


def config_to_hf(config: ModelConfig, dtype: torch.dtype) -> dict:
    """config.json for transformers and vLLM; both the 4.x and 5.x key names are written."""
    dtype_name = next(k for k, v in DTYPES.items() if v == dtype)
    rope = {"rope_type": "default"}
    if config.rope_scaling is not None:
        rope = {"rope_type": "llama3", **asdict(config.rope_scaling)}
    hf = {f.name: getattr(config, f.name) for f in fields(config) if f.name != "rope_scaling"}
    hf.update(
        architectures=["LlamaForCausalLM"],
        model_type="llama",
        hidden_act="silu",
        attention_bias=False,
        mlp_bias=False,
        head_dim=config.head_dim,
        torch_dtype=dtype_name,
        dtype=dtype_name,
        bos_token_id=1,
        eos_token_id=2,
        rope_scaling=None if config.rope_scaling is None else rope,
        rope_parameters={**rope, "rope_theta": config.rope_theta},
    )
    return hf


def load_checkpoint(path, dtype: str | torch.dtype | None = None, device="cpu") -> LlamaForCausalLM:
    """Load a local Hugging Face Llama directory (config.json + *.safetensors); no download."""
    from safetensors import safe_open

    path = Path(path)
    if not (path / "config.json").is_file():
        raise UnreadableInput(
            f"{path} has no config.json: expected a local Hugging Face Llama checkpoint directory"
        )
    files = sorted(path.glob("*.safetensors"))
    if not files:
        raise UnreadableInput(f"{path} has no *.safetensors weights")
    hf = json.loads((path / "config.json").read_text())
    config = config_from_hf(hf)
    if dtype is None:
        dtype = hf.get("dtype") or hf.get("torch_dtype") or "float32"
    model = LlamaForCausalLM(config, device=torch.device(device), dtype=resolve_dtype(dtype))
    state = {}
    for file in files:
        with safe_open(str(file), framework="pt") as f:
            for name in f.keys():  # noqa: SIM118 (safe_open is not iterable, only .keys())
                state[name] = f.get_tensor(name)
    if config.tie_word_embeddings:
        state.pop("lm_head.weight", None)  # some tied checkpoints store it anyway
    params = model.hf_parameters()  # a tied lm_head is the embedding, listed once
    missing, unexpected = params.keys() - state.keys(), state.keys() - params.keys()
    if missing or unexpected:
        raise UnreadableInput(
            f"checkpoint {path} does not match its config: missing "
            f"{sorted(missing)[:5]}, unexpected {sorted(unexpected)[:5]}"
        )
    with torch.no_grad():
        for name, param in params.items():
            if param.shape != state[name].shape:
                raise UnreadableInput(
                    f"checkpoint {path}: {name} has shape "
                    f"{tuple(state[name].shape)}, its config needs "
                    f"{tuple(param.shape)}"
                )
            param.copy_(state[name])
    return model.eval().requires_grad_(False)


def save_checkpoint(model: LlamaForCausalLM, path) -> None:
    """Write config.json + model.safetensors that transformers and vLLM load as Llama."""
    from safetensors.torch import save_file

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    # Hugging Face's separate projections, copied out of the fused matrices (safetensors refuses
    # views that share storage); a tied lm_head is left out (loaders re-tie it).
    state = {k: v.detach().to("cpu", copy=True) for k, v in model.hf_parameters().items()}
    save_file(state, str(path / "model.safetensors"), metadata={"format": "pt"})
    hf = config_to_hf(model.config, model.dtype)
    (path / "config.json").write_text(json.dumps(hf, indent=2) + "\n")
