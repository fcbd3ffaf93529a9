"""The V1-shaped runner's two sweeps, as rows (lists of dicts) for latency.csv and graph_memory.csv.

`measure_v1_latency`: verify-step latency against its token count, with graphs and eagerly,
across and beyond the largest FULL decode graph (the cliff at vLLM's 512-token ceiling when
S * (1 + k) > 512). `measure_v1_graph_memory`: memory and time of each capture, per captured token
count. Both take a model whose KV cache is allocated and return rows without provenance (the
bench adds it, with the weight-bandwidth columns); `batch_size` and `capture_size` count tokens,
and the rows add `num_speculative_tokens`, `num_reqs` and `batch_unit` to the V0 sweeps' columns.

    model = build_model("tiny"); model.allocate_kv_cache(160, 64)
    rows = measure_v1_latency(model, "vllm-0.33.0", SizingConfig(160, 3), repeats=5)
"""

from __future__ import annotations

import gc
from dataclasses import asdict

import numpy as np
import torch

from graphlab.graphs import GRAPH_POOLS
from graphlab.memory import predict_pool_bytes
from graphlab.model import LlamaForCausalLM
from graphlab.sizing import SizingConfig
from graphlab.v1_runner import V1ModelRunner, uniform_decode_batch

# The cliff's default: 256 requests x 4 tokens reach 1024 tokens, twice vLLM's 512 ceiling.
CLIFF_CONFIG = SizingConfig(max_num_seqs=256, num_speculative_tokens=3)


def cliff_request_counts(runner: V1ModelRunner) -> tuple[int, ...]:
    """Request counts filling each captured size exactly, one past the last graph, and S."""
    q, seqs = runner.query_len, runner.cfg.max_num_seqs
    exact = {size // q for size in runner.capture_sizes}
    beyond = {runner.graph_limit // q + 1, seqs}
    return tuple(sorted(r for r in exact | beyond if 1 <= r <= seqs))


def _fixed_columns(model: LlamaForCausalLM, engine: str, cfg: SizingConfig) -> dict:
    return dict(engine=engine, max_num_seqs=cfg.max_num_seqs,
                num_speculative_tokens=cfg.num_speculative_tokens,
                max_num_batched_tokens=cfg.max_num_batched_tokens, batch_unit="tokens",
                max_seq_len=model.max_seq_len)


def measure_v1_latency(model: LlamaForCausalLM, engine: str = "vllm-0.33.0",
                       cfg: SizingConfig = CLIFF_CONFIG, num_reqs=None, repeats: int = 20,
                       warmup: int = 3, seed: int = 0) -> list[dict]:
    """Verify-step latency per token count (num_reqs requests x q tokens), eager and graph
    mode, one row per (token count, mode); num_reqs None: cliff_request_counts. Request i sits
    in slot i at position max_seq_len // 2, so the cache needs max(num_reqs) slots."""
    runners = {"eager": V1ModelRunner(model, engine, cfg, enforce_eager=True),
               "graph": V1ModelRunner(model, engine, cfg)}
    for runner in runners.values():
        runner.capture_model()
    q, fixed = cfg.decode_query_len, _fixed_columns(model, engine, cfg)
    rows = []
    for reqs in num_reqs or cliff_request_counts(runners["graph"]):
        batch = uniform_decode_batch(reqs, q, model, model.max_seq_len // 2, seed)
        for mode, runner in runners.items():
            for _ in range(warmup):
                runner.execute_model(*batch)
            steps = [runner.execute_model(*batch)[1] for _ in range(repeats)]
            times = np.array([s.time_ms for s in steps])
            rows.append(dict(
                fixed, backend=runner.backend, mode=mode, num_reqs=reqs, batch_size=reqs * q,
                path=steps[0].path, graph_size=steps[0].graph_size,
                graph_limit=runners["graph"].graph_limit, median_ms=float(np.median(times)),
                p90_ms=float(np.percentile(times, 90)), min_ms=float(times.min()),
                repeats=repeats, warmup=warmup))
    return rows


def measure_v1_graph_memory(model: LlamaForCausalLM, engine: str = "vllm-0.33.0",
                            cfg: SizingConfig = CLIFF_CONFIG,
                            graph_pools=GRAPH_POOLS) -> list[dict]:
    """Memory and time of every capture per pool mode, in capture order (largest first), with
    the cumulative columns of the V0 graph-memory sweep; capture_size in tokens."""
    fixed, rows = _fixed_columns(model, engine, cfg), []
    for graph_pool in graph_pools:
        runner = V1ModelRunner(model, engine, cfg, graph_pool=graph_pool)
        records = runner.capture_model()
        for order, record in enumerate(records):
            done = records[:order + 1]
            fields = asdict(record)
            capture_size = fields.pop("size")
            rows.append(dict(
                fixed, capture_order=order, capture_size=capture_size,
                num_reqs=capture_size // runner.query_len, **fields,
                cumulative_bytes=sum(r.memory_bytes for r in done),
                cumulative_pool_bytes=(None if record.pool_bytes is None
                                       else sum(r.pool_bytes for r in done)),
                cumulative_predicted_bytes=predict_pool_bytes(
                    [r.predicted_bytes for r in done], graph_pool)))
        del runner, records
        gc.collect()
        if model.device.type == "cuda":
            torch.cuda.empty_cache()  # the next pool mode starts from released graphs
    return rows
