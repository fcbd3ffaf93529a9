"""One way to build a decode runner: V0-shaped for the engines keyed by rows, V1-shaped for those
keyed by tokens (each engine's `batch_unit`)."""

from __future__ import annotations

from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.runner import DecodeRunner
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.engine.v1_runner import V1ModelRunner
from graphlab.errors import check_choice, check_instance
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import SizingPolicy, get_engine

# The runner of each batch unit an engine may count in.
RUNNERS = {runner.batch_unit: runner for runner in (V0ModelRunner, V1ModelRunner)}


def make_runner(
    model: LlamaForCausalLM, engine: str | SizingPolicy, cfg: SizingConfig, **options
) -> DecodeRunner:
    """The runner `engine` needs for `model` under `cfg`; options are the runners' keywords
    (backend, graph_pool, enforce_eager, num_warmups)."""
    check_instance("model", model, LlamaForCausalLM)
    check_instance("cfg", cfg, SizingConfig)
    policy = get_engine(engine)  # a name enters here; a policy passes through
    check_choice(f"the runner of {policy.name}'s batch_unit", policy.batch_unit, RUNNERS)
    return RUNNERS[policy.batch_unit](model, policy, cfg, **options)
