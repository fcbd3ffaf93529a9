"""What the two fixes cost, measured on this machine's backend: the data behind notebooks 03, 04.

`guard_cost` times the decode step of a V0 engine (the guard) at every batch size its scorer can
send, in eager and graph mode, and beside it the same sizes replayed by an engine that captures
them all (adaptive); at the batch sizes the guard runs eagerly, its step time over the covering
engine's replayed step is the guard's price per step (`eager_ratio`). On CUDA a replay is a CUDA
graph; on a CPU a torch.compile'd step (cpu-compiled), which is not a CUDA graph.

`adaptive_price` is the other side: per k, the coverage adaptive sizing gains over the guard
against the graphs it captures, their capture time (after a warm-up capture, so that no engine
pays the process's first compile or allocation) and their graph memory.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from graphlab.bench.measurements import capture_records, capture_summary, latency_rows
from graphlab.bench.provenance import provenance, with_provenance
from graphlab.engine.device import resolve_backend
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import GraphlabError, check_instance
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine


def guard_cost(
    model: LlamaForCausalLM,
    cfg: SizingConfig,
    engine: str = "vllm-0.6.0",
    covering: str = "adaptive",
    repeats: int = 10,
    warmup: int = 3,
    backend: str = "auto",
) -> pd.DataFrame:
    """Latency rows (latency.csv's columns) of `engine` and `covering` at batch sizes
    1..max_num_seqs * (1 + k), with provenance; the model's cache needs that many slots."""
    sizes = range(
        1, check_instance("cfg", cfg, SizingConfig).max_num_seqs * cfg.decode_query_len + 1
    )
    rows = [
        row
        for name in (engine, covering)
        for row in latency_rows(model, name, cfg, sizes, repeats, warmup, backend)
    ]
    # Each row keeps its own backend (latency_rows resolves "auto"); the block adds the rest.
    return with_provenance(rows, provenance(model.device, dtype=str(model.dtype)))


def eager_ratio(
    frame: pd.DataFrame, engine: str = "vllm-0.6.0", covering: str = "adaptive"
) -> pd.DataFrame:
    """Per batch size `engine` runs eagerly in graph mode: its median step, the covering
    engine's replayed step, and their ratio (the guard's price per step at that size)."""
    graph_mode = frame[check_instance("frame", frame, pd.DataFrame)["mode"] == "graph"]
    mine = graph_mode[(graph_mode.engine == engine) & (graph_mode.path == "eager")]
    theirs = graph_mode[(graph_mode.engine == covering) & (graph_mode.path == "graph")]
    table = mine.set_index("batch_size")[["median_ms"]].join(
        theirs.set_index("batch_size")[["median_ms"]],
        lsuffix="_eager",
        rsuffix="_replayed",
        how="inner",
    )
    table["eager_over_replayed"] = table["median_ms_eager"] / table["median_ms_replayed"]
    return table


def adaptive_price(
    model: LlamaForCausalLM,
    max_num_seqs: int,
    ks=range(9),
    engines=("vllm-0.6.0", "adaptive"),
    backend: str = "auto",
    graph_pool: str = "shared",
    repeats: int = 3,
    preset: str | None = None,
) -> pd.DataFrame:
    """One row per (k, engine): coverage of the scorer's reachable batches (graph and eager
    fraction, from the sizing rules), graphs captured, their capture time on `model` (capture
    plus warm-up steps summed over the list, compile included where a size compiles; median of
    `repeats` captures) and graph memory (measured on CUDA, predicted otherwise), with
    provenance (`preset`: the model's name). Captures write only the pad slot.

    First one warm-up capture of the longest list (its time is the warmup_capture_ms column):
    the process's first compile, allocations and kernel loads land there, not in the first
    engine measured.
    """
    if not isinstance(repeats, int) or repeats < 1:
        raise GraphlabError(f"repeats={repeats!r} must be an integer >= 1")
    backend = resolve_backend(backend, model.device, "costs").name
    configs = [(k, engine, SizingConfig(max_num_seqs, k)) for k in ks for engine in engines]
    longest = max(configs, key=lambda c: len(get_engine(c[1]).capture_sizes(c[2])))
    warmup = capture_records(model, longest[1], longest[2], backend, graph_pool)
    warmup_ms = capture_summary(warmup, graph_pool)["capture_ms"]
    rows = []
    for k, engine, cfg in configs:
        summary = audit(engine, cfg).summary
        costs = [
            capture_summary(capture_records(model, engine, cfg, backend, graph_pool), graph_pool)
            for _ in range(repeats)
        ]
        cost = costs[-1]  # graphs, memory and compile cache of the last capture
        rows.append(
            dict(
                engine=engine,
                max_num_seqs=max_num_seqs,
                num_speculative_tokens=k,
                num_graphs=cost["num_graphs"],
                largest_size=cost["largest_size"],
                num_reachable=summary.num_reachable,
                graph_fraction=summary.graph_fraction,
                eager_fraction=summary.eager_fraction,
                capture_ms=float(np.median([c["capture_ms"] for c in costs])),
                repeats=repeats,
                memory_bytes=cost["memory_bytes"],
                memory_kind=cost["memory_kind"],
                graph_pool=graph_pool,
                compile_cache=cost["compile_cache"],
                warmup_capture_ms=warmup_ms,
            )
        )
    prov = provenance(model.device, dtype=str(model.dtype), model=preset, backend=cost["backend"])
    return with_provenance(rows, prov)
