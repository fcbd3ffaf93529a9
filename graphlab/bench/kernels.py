"""The aten ops (and kernel-launching ops) one eager decode step dispatches, per preset: the
launches a CUDA graph replays at once, and what a CPU pays per op.

A TorchDispatchMode sees every aten op the step dispatches, after autograd and Python: the
runner's input checks, the model, the LM head. Forward hooks on the decoder layers attribute each
op to a layer or to "outside" (embedding, final norm, LM head, checks). An op counts as a kernel
unless it only makes a view (its schema returns an alias it does not write: view, transpose,
expand, slice, ...) or reads a value back (``_local_scalar_dense``, a host sync); on CUDA the
device kernels torch.profiler records are counted too. ``ops_rows(presets)`` gives one row per
preset (``python -m graphlab.bench.timings --only ops`` prints it).
"""

from __future__ import annotations

import collections

import pandas as pd
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from graphlab.bench.provenance import provenance
from graphlab.engine.device import resolve_device
from graphlab.engine.model import build_model
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath

OUTSIDE = "outside"
HOST_SYNCS = {"_local_scalar_dense"}


def makes_view(func) -> bool:
    """True for ops whose result aliases an input without writing it (no kernel runs)."""
    returns = func._schema.returns
    return bool(returns) and all(
        r.alias_info is not None and not r.alias_info.is_write for r in returns
    )


class OpCounter(TorchDispatchMode):
    """Counts dispatched aten ops by the decoder layer active when each was dispatched."""

    def __init__(self):
        super().__init__()
        self.where = OUTSIDE
        self.ops = collections.Counter()  # (where, op name) -> count
        self.kernels = collections.Counter()  # where -> count of kernel-launching ops

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        self.ops[self.where, name] += 1
        if not makes_view(func) and name not in HOST_SYNCS:
            self.kernels[self.where] += 1
        return func(*args, **(kwargs or {}))

    def total(self, where=None) -> int:
        return sum(c for (w, _), c in self.ops.items() if where is None or w == where)


def count_step(
    preset: str, device: torch.device, dtype: str, batch_size: int, max_seq_len: int
) -> tuple[dict, OpCounter]:
    """One eager decode step of `preset` counted: its row (ops per step and per layer, kernel
    ops, device kernels on CUDA) and the counter (ops by layer and name)."""
    model = build_model(preset, seed=0, dtype=dtype, device=device)
    model.allocate_kv_cache(batch_size, max_seq_len)
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(batch_size), enforce_eager=True)
    runner.capture_model()
    ids = (torch.arange(batch_size, device=device) % model.config.vocab_size)[:, None]
    positions = torch.full((batch_size, 1), max_seq_len // 2, device=device)
    slots = torch.arange(batch_size, device=device)
    runner.execute_model(ids, positions, slots)  # warm-up: lazy initialisation is not a step
    counter = OpCounter()
    hooks = []
    for i, layer in enumerate(model.model.layers):
        hooks.append(
            layer.register_forward_pre_hook(lambda *_, i=i: setattr(counter, "where", f"layer{i}"))
        )
        hooks.append(layer.register_forward_hook(lambda *_: setattr(counter, "where", OUTSIDE)))
    with counter:
        runner.execute_model(ids, positions, slots)
    device_kernels = None
    if device.type == "cuda":
        from torch.profiler import ProfilerActivity, profile

        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            runner.execute_model(ids, positions, slots)
            torch.cuda.synchronize(device)
        device_kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
    for hook in hooks:
        hook.remove()
    layers = model.config.num_hidden_layers
    in_layers = counter.total() - counter.total(OUTSIDE)
    kernels_in_layers = sum(c for w, c in counter.kernels.items() if w != OUTSIDE)
    row = dict(
        preset=preset,
        num_hidden_layers=layers,
        batch_size=batch_size,
        max_seq_len=max_seq_len,
        path=BatchPath.EAGER,
        ops_per_step=counter.total(),
        ops_per_layer=in_layers / layers,
        ops_outside_layers=counter.total(OUTSIDE),
        kernel_ops_per_step=sum(counter.kernels.values()),
        kernel_ops_per_layer=kernels_in_layers / layers,
        device_kernels_per_step=device_kernels,
    )
    del model, runner
    return row, counter


def ops_rows(
    presets=("tiny", "100m"),
    device="auto",
    dtype: str = "float32",
    batch_size: int = 1,
    max_seq_len: int = 256,
) -> pd.DataFrame:
    """One row per preset with the provenance columns: what a graph replay stands in for."""
    device = resolve_device(device)
    rows = []
    with torch.no_grad():
        for preset in presets:
            row, _ = count_step(preset, device, dtype, batch_size, max_seq_len)
            rows.append(dict(provenance(device, dtype=dtype, model=preset), **row))
    return pd.DataFrame(rows)
