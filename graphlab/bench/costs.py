"""What an eager step costs, measured on this machine's backend: the data behind notebook 03.

`guard_cost` times the decode step of a V0 engine (the guard) at every batch size its scorer can
send, in eager and graph mode, and beside it the same sizes replayed by an engine that captures
them all (adaptive); at the batch sizes the guard runs eagerly, its step time over the covering
engine's replayed step is the guard's price per step (`eager_ratio`). On CUDA a replay is a CUDA
graph; on a CPU a torch.compile'd step (cpu-compiled), which is not a CUDA graph.
"""

from __future__ import annotations

import pandas as pd

from graphlab.bench.provenance import provenance, with_provenance
from graphlab.bench.sweeps import latency_rows
from graphlab.engine.device import cost_backend_for
from graphlab.engine.model import LlamaForCausalLM
from graphlab.sizing.engines import SizingConfig


def guard_cost(model: LlamaForCausalLM, cfg: SizingConfig, engine: str = "vllm-0.6.0",
               covering: str = "adaptive", repeats: int = 10, warmup: int = 3,
               backend: str = "auto") -> pd.DataFrame:
    """Latency rows (latency.csv's columns) of `engine` and `covering` at batch sizes
    1..max_num_seqs * (1 + k), with provenance; the model's cache needs that many slots."""
    backend = cost_backend_for(model.device) if backend == "auto" else backend
    sizes = range(1, cfg.max_num_seqs * cfg.decode_query_len + 1)
    rows = [row for name in (engine, covering)
            for row in latency_rows(model, name, cfg, sizes, repeats, warmup, backend)]
    frame = pd.DataFrame(rows)
    prov = provenance(model.device, dtype=str(model.dtype), backend=frame.backend.iloc[0])
    return with_provenance(frame, prov)


def eager_ratio(frame: pd.DataFrame, engine: str = "vllm-0.6.0",
                covering: str = "adaptive") -> pd.DataFrame:
    """Per batch size `engine` runs eagerly in graph mode: its median step, the covering
    engine's replayed step, and their ratio (the guard's price per step at that size)."""
    graph_mode = frame[frame["mode"] == "graph"]
    mine = graph_mode[(graph_mode.engine == engine) & (graph_mode.path == "eager")]
    theirs = graph_mode[(graph_mode.engine == covering) & (graph_mode.path == "graph")]
    table = mine.set_index("batch_size")[["median_ms"]].join(
        theirs.set_index("batch_size")[["median_ms"]], lsuffix="_eager", rsuffix="_replayed",
        how="inner")
    table["eager_over_replayed"] = table["median_ms_eager"] / table["median_ms_replayed"]
    return table
