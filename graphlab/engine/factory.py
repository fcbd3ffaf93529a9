"""One way to build a decode runner: V0-shaped for the engines keyed by rows, V1-shaped for those
keyed by tokens (each engine's `batch_unit`)."""

from __future__ import annotations

from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.runner import DecodeRunner
from graphlab.engine.v0_runner import ModelRunner
from graphlab.engine.v1_runner import V1ModelRunner
from graphlab.errors import check_instance
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import ALL_V1_ENGINES, SizingPolicy, get_engine


def make_runner(
    model: LlamaForCausalLM, engine: str | SizingPolicy, cfg: SizingConfig, **options
) -> DecodeRunner:
    """The runner `engine` needs for `model` under `cfg`; options are the runners' keywords
    (backend, graph_pool, enforce_eager, num_warmups)."""
    check_instance("model", model, LlamaForCausalLM)
    check_instance("cfg", cfg, SizingConfig)
    policy = get_engine(engine)
    runner_class = V1ModelRunner if policy.name in ALL_V1_ENGINES else ModelRunner
    return runner_class(model, policy, cfg, **options)
