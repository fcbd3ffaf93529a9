"""One model's measured rows: decode step latency per batch and graph memory per capture.

The row builders behind the latency and graph_memory sweeps (graphlab.bench.sweeps), the guard's
cost and the V1 cliff: `latency_rows` times a runner's step per request count in eager and graph
mode, `graph_memory_rows` records every capture per pool mode; both take a model and a
SizingConfig and need no run; `capture_cost` sums each engine's captures into one table row
(`capture_summary`, also behind graphlab.bench.costs.adaptive_price). The device's copy
bandwidth (the latency rows' floor) lives here too. Every timed comparison goes through
graphlab.bench.sampling.interleaved_steps (the compared runners step in turn, to a stated
precision). The CSV columns are documented in data/README.md.
"""

from __future__ import annotations

import functools
import gc
from dataclasses import asdict

import numpy as np
import pandas as pd
import torch

from graphlab.bench.sampling import (
    Timing,
    comparison_columns,
    interleaved_steps,
    sample_rows,
    step_times,
)
from graphlab.engine.device import BACKEND_VALUES, COMPILED_CUDA_GRAPH, CUDA_GRAPH, Backend
from graphlab.engine.factory import make_runner
from graphlab.engine.memory import graph_memory_bytes, predict_pool_bytes
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.runner import StepTimer, replay_check
from graphlab.engine.sdpa import probe_sdpa
from graphlab.engine.v1_runner import uniform_decode_batch
from graphlab.errors import check_instance
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, RunMode
from graphlab.sizing.engines import GRAPH_POOLS, MIB
from graphlab.stats import compare, machine_load, median_ci

SEED = 0


def _sdpa_probe(model: LlamaForCausalLM, q: int):
    """tokens -> the SDPA kernel of the model's step of tokens // q requests of q tokens each,
    probed once per size (probe_sdpa runs the model)."""
    return functools.cache(lambda tokens: probe_sdpa(model, tokens // q, q).backend)


def weight_bytes(model: LlamaForCausalLM) -> int:
    """Bytes of the unique parameters: what one decode step must read at least once."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


def timing_stats(times_ms) -> dict:
    """median_ms with its bootstrap interval (ci_low_ms, ci_high_ms), p90_ms (linear
    interpolation between order statistics) and min_ms."""
    times = np.asarray(times_ms, dtype=float)
    median, low, high = median_ci(times)
    return dict(
        median_ms=median,
        ci_low_ms=low,
        ci_high_ms=high,
        p90_ms=float(np.percentile(times, 90)),
        min_ms=float(times.min()),
    )


def measure_copy_bandwidth(device: torch.device, nbytes: int, timing: Timing) -> dict:
    """One device-to-device copy of nbytes, timed timing.repeats times after timing.warmup
    untimed ones; bytes read plus written / s."""
    repeats, warmup = timing.repeats, timing.warmup
    src = torch.ones(nbytes, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    for _ in range(warmup):
        dst.copy_(src)
    times = []
    for _ in range(repeats):
        timer = StepTimer(device)
        dst.copy_(src)
        times.append(timer.stop())
    del src, dst
    if device.type == "cuda":
        torch.cuda.empty_cache()
    stats = timing_stats(times)
    return dict(
        copy_bytes=nbytes,
        bytes_moved=2 * nbytes,
        repeats=repeats,
        warmup=warmup,
        **stats,
        bytes_per_s=2 * nbytes / (stats["median_ms"] / 1e3),
    )


def _sizing_columns(runner) -> dict:
    """What a runner's rows were measured under; V1 rows count tokens (q = 1 + k per request)."""
    cfg = runner.cfg
    return dict(
        engine=runner.engine.name,
        max_num_seqs=cfg.max_num_seqs,
        num_speculative_tokens=cfg.num_speculative_tokens,
        max_num_batched_tokens=cfg.max_num_batched_tokens,
        batch_unit=runner.batch_unit,
        graph_limit=runner.graph_limit,
        max_seq_len=runner.model.max_seq_len,
    )


def cliff_request_counts(runner) -> tuple[int, ...]:
    """Request counts filling each captured size exactly, one past the last graph, and S."""
    q, seqs = runner.cfg.decode_query_len, runner.cfg.max_num_seqs
    exact = {size // q for size in runner.capture_sizes}
    beyond = {runner.graph_limit // q + 1, seqs}
    return tuple(sorted(r for r in exact | beyond if 1 <= r <= seqs))


def latency_modes(backend: Backend) -> dict[RunMode, Backend]:
    """{mode: runner backend}: eager and graph; asking for compiled-cuda-graph adds that third
    mode beside hand-captured CUDA graphs (opt-in: its compiles do not fit the GPU check's
    budget)."""
    if backend.name == COMPILED_CUDA_GRAPH:
        cuda_graph = BACKEND_VALUES[CUDA_GRAPH]
        return {
            RunMode.EAGER: cuda_graph,
            RunMode.GRAPH: cuda_graph,
            RunMode.COMPILED_GRAPH: backend,
        }
    return {RunMode.EAGER: backend, RunMode.GRAPH: backend}


def latency_rows(model: LlamaForCausalLM, engine: str, cfg: SizingConfig, *args, **kwargs):
    """latency_points' rows, every request count's, as one list."""
    return [row for point in latency_points(model, engine, cfg, *args, **kwargs) for row in point]


def latency_points(
    model: LlamaForCausalLM,
    engine: str,
    cfg: SizingConfig,
    timing: Timing,
    num_reqs=None,
    samples: list | None = None,
):
    """Step latency per request count, yielded count by count (a sweep keeps each as it comes),
    one row per (count, mode): eager and graph mode on timing.backend (and compiled-graph when
    that is compiled-cuda-graph, latency_modes).

    A V0 engine decodes one token per request; a V1 engine's verify step q = 1 + k tokens per
    request (batch_size counts tokens). num_reqs None: cliff_request_counts, across and beyond
    the largest graph (the cliff). Request i sits in slot i: the cache needs max(num_reqs) slots.
    The modes step in turn (interleaved_steps, sampled until eager over graph mode is decided at
    timing.precision, or max_repeats rounds; None: timing.repeats rounds); each replayed mode's
    row holds eager over it (eager_over_*: ratio, bootstrap interval, verdict), and every row
    the load average of its point. `samples`, when given, receives every timed step
    (sample_rows, long format). Each row names the SDPA kernel of its step's shape
    (sdpa_backend); a graph-path row compares its first replay's logits with the eager step's
    on the same batch (replay_check).
    """
    check_instance("timing", timing, Timing)
    runners = {
        mode: make_runner(
            model, engine, cfg, backend=mode_backend, enforce_eager=mode is RunMode.EAGER
        )
        for mode, mode_backend in latency_modes(timing.backend).items()
    }
    for runner in runners.values():
        runner.capture_model()
    execute = {mode: runner.execute_model for mode, runner in runners.items()}
    # Every row names the graph-mode runner's backend (compiled-graph rows say so in their mode).
    q = runners["graph"].query_len
    fixed = dict(_sizing_columns(runners["graph"]), backend=runners["graph"].backend.name)
    sdpa = _sdpa_probe(model, q)
    for reqs in num_reqs or cliff_request_counts(runners["graph"]):
        batch, rows = uniform_decode_batch(reqs, q, model), []
        checks, reference = {}, None
        for mode, step in execute.items():  # eager first: its logits are the reference
            logits, first = step(*batch)
            reference = logits if mode is RunMode.EAGER else reference
            # every replayed path (V0 graph, V1 full or piecewise) is checked against eager
            checks[mode] = (
                replay_check(logits, reference, model.dtype) if first.path.replays else {}
            )
        load = machine_load()
        steps = interleaved_steps(execute, batch, timing)
        if samples is not None:
            samples += sample_rows(steps, "mode", **fixed, num_reqs=reqs, **load)
        for mode, records in steps.items():
            versus = (
                comparison_columns(
                    compare(step_times(steps["eager"]), step_times(records)), "eager_over"
                )
                if mode is not RunMode.EAGER
                else {}
            )
            rows.append(
                dict(
                    fixed,
                    mode=mode,
                    num_reqs=reqs,
                    batch_size=records[0].batch_size,
                    path=records[0].path,
                    graph_size=records[0].graph_size,
                    **timing_stats(step_times(records)),
                    clock=records[0].clock,
                    repeats=len(records),
                    warmup=timing.warmup,
                    **versus,
                    **load,
                    sdpa_backend=sdpa(records[0].graph_size or reqs * q),
                    **checks[mode],
                )
            )
        yield rows


def release_graphs(device: torch.device) -> None:
    """Free the graphs of a dropped runner before the next capture: on CUDA collect it and return
    its pool's blocks (a CPU holds nothing to release, and ~0.1 s per collection adds up)."""
    if device.type == "cuda":
        gc.collect()
        torch.cuda.empty_cache()


def capture_records(
    model: LlamaForCausalLM,
    engine: str,
    cfg: SizingConfig,
    backend: Backend,
    graph_pool: str = "shared",
):
    """The GraphRecords of one runner's capture, its graphs released (release_graphs)."""
    check_instance("backend", backend, Backend)  # a name here would pick the logic backend
    records = make_runner(
        model, engine, cfg, backend=backend, graph_pool=graph_pool
    ).capture_model()
    release_graphs(model.device)
    return records


def capture_summary(records, graph_pool: str) -> dict:
    """What one capture list cost: graphs, largest size, their memory in graph_pool (measured on
    CUDA, predicted when emulated: memory_kind), the capture time (each capture plus its warm-up
    steps, summed), the compile cache and the backend."""
    memory, kind = graph_memory_bytes(records, graph_pool)
    return dict(
        num_graphs=len(records),
        largest_size=records[0].size,
        memory_bytes=memory,
        memory_kind=kind,
        capture_ms=sum(r.capture_ms + r.warmup_ms for r in records),
        compile_cache=records[0].compile_cache,
        backend=records[0].backend,
    )


def capture_cost(
    model: LlamaForCausalLM,
    engines,
    cfg: SizingConfig,
    backend: Backend,
    graph_pool: str = "shared",
) -> pd.DataFrame:
    """Per engine: capture_summary of its target runner's captures for cfg on `backend`, as a
    table, after one warm-up capture (its time, the process's compile included, in a column of
    its own)."""
    # The process's first compile and allocations land in a warm-up capture, not the first engine.
    warmup = capture_summary(
        capture_records(model, engines[0], cfg, backend, graph_pool), graph_pool
    )
    rows = []
    for engine in engines:
        records = capture_records(model, engine, cfg, backend, graph_pool)
        cost = capture_summary(records, graph_pool)
        rows.append(
            {
                "engine": engine,
                "graphs": cost["num_graphs"],
                "largest": cost["largest_size"],
                f"graph memory (MiB), {graph_pool} pool": cost["memory_bytes"] / MIB,
                "memory_kind": cost["memory_kind"],
                "capture time (ms)": cost["capture_ms"],
                "warm-up capture (ms), compile included": warmup["capture_ms"],
                "backend": cost["backend"],
            }
        )
    return pd.DataFrame(rows).set_index("engine")


def graph_memory_rows(model: LlamaForCausalLM, engine: str, cfg: SizingConfig, *args, **kwargs):
    """graph_memory_points' rows, every pool mode's, as one list."""
    return [
        row for point in graph_memory_points(model, engine, cfg, *args, **kwargs) for row in point
    ]


def graph_memory_points(
    model: LlamaForCausalLM,
    engine: str,
    cfg: SizingConfig,
    backend: Backend,
    graph_pools=GRAPH_POOLS,
):
    """Memory and time of every capture on `backend`, yielded per pool mode (one capture loop
    each), in capture order (largest first), after a warm-up capture of the same list
    (warmup_capture_ms: the process's compile lands there).

    cumulative_bytes is the running total of memory_bytes (measured, or predicted when
    emulated); cumulative_predicted_bytes what the prediction says all graphs so far hold
    (running max for a shared pool, running sum for separate pools); predicted_over_measured
    their ratio where memory was measured. capture_size counts tokens for a V1 engine.
    """
    # A warm-up capture first: the process's compile is its own column, not the first size's.
    warmup = capture_summary(
        capture_records(model, engine, cfg, backend, graph_pools[0]), graph_pools[0]
    )
    sdpa = None
    for graph_pool in graph_pools:
        rows = []
        runner = make_runner(model, engine, cfg, graph_pool=graph_pool, backend=backend)
        records = runner.capture_model()
        fixed, q = _sizing_columns(runner), runner.query_len
        sdpa = sdpa or _sdpa_probe(model, q)  # one probe per size across the pool modes
        for order, record in enumerate(records):
            done = records[: order + 1]
            fields = asdict(record)
            capture_size = fields.pop("size")  # rows (V0) or tokens (V1)
            measured = sum(r.memory_bytes for r in done)
            predicted = predict_pool_bytes([r.predicted_bytes for r in done], graph_pool)
            rows.append(
                dict(
                    fixed,
                    capture_order=order,
                    capture_size=capture_size,
                    # PIECEWISE graphs serve any batch of up to capture_size tokens, not requests
                    num_reqs=None if record.family == BatchPath.PIECEWISE else capture_size // q,
                    **fields,
                    sdpa_backend=sdpa(-(-capture_size // q) * q),  # whole requests' attention
                    warmup_capture_ms=warmup["capture_ms"],
                    cumulative_bytes=measured,
                    cumulative_pool_bytes=(
                        None if record.pool_bytes is None else sum(r.pool_bytes for r in done)
                    ),
                    cumulative_predicted_bytes=predicted,
                    predicted_over_measured=(
                        predicted / measured
                        if record.memory_kind == "measured" and measured > 0
                        else None
                    ),
                )
            )
        del runner, records
        release_graphs(model.device)  # the next pool mode starts from released graphs
        yield rows
