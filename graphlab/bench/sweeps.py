"""Benchmark sweeps as tidy DataFrames with provenance, and their CSV export.

One layer: a `BenchRun` resolves the device, sets the CPU thread count (one unless the caller
says otherwise) and builds the provenance block once; every sweep of the run (each a function
of a `Suite`) measures under it and stamps its rows with that block, so all CSVs of one
`run_bench` share `run_id` and `suite`. What is measured: the device's copy bandwidth, decode
step latency (eager and graph replay, against the bandwidth floor) and graph memory and capture
time per captured size, for the V0 guard (rows) and a V1 engine (tokens: the cliff past its
largest graph), speculative decoding per engine (summary and per step), and the crash map
computed from the sizing rules.

    from graphlab import bench
    frame = bench.latency_sweep("quick", device="cpu")   # one sweep, its own run
    paths = bench.run_bench("quick", "cpu", "build/bench")  # every sweep, one CSV each

The CSV columns are documented in data/README.md.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import gc
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from graphlab.bench.export import read_csv, write_csv_atomic
from graphlab.bench.provenance import as_computed, provenance, with_provenance
from graphlab.bench.spec_decode import spec_decode_benchmark

# The suites belong to bench's interface: bench.SUITES, bench.get_suite, bench.replace_suite.
from graphlab.bench.suites import Suite, get_suite
from graphlab.engine.device import resolve_device
from graphlab.engine.factory import make_runner
from graphlab.engine.graphs import GRAPH_POOLS
from graphlab.engine.memory import predict_pool_bytes
from graphlab.engine.model import LlamaForCausalLM, build_model
from graphlab.engine.runner import StepTimer
from graphlab.engine.v1_runner import uniform_decode_batch
from graphlab.errors import GraphlabError
from graphlab.progress import progress as progress_bar
from graphlab.sizing.audit import crash_map
from graphlab.sizing.engines import SizingConfig
from graphlab.specdec.engine import SpecDecodeConfig, run_speculative
from graphlab.specdec.requests import RequestLoad

SWEEPS = ("copy_bandwidth", "latency", "graph_memory", "spec_decode", "spec_decode_steps",
          "crash_map")
# The guard: batches past the capture limit run eagerly, so a latency sweep shows the cliff.
LATENCY_ENGINE = "vllm-0.6.0"
# Bytes of one copy: far past the H200's 60 MB L2 on CUDA; on CPU past the last-level cache.
COPY_BYTES = {"cuda": 2**30, "cpu": 2**26}
SEED = 0


# ---- the run: device, threads and provenance, once ------------------------------------------

@dataclass
class BenchRun:
    """One benchmark run: the suite, its resolved device and model, the provenance block."""

    suite: Suite
    device: torch.device
    preset: str
    dtype: str
    provenance: dict
    _copy: dict | None = field(default=None, repr=False)  # copy_bandwidth(), once

    def stamp(self, rows) -> pd.DataFrame:
        return with_provenance(rows, self.provenance)

    def model(self, num_slots: int, max_seq_len: int) -> LlamaForCausalLM:
        """The run's model with a KV cache of num_slots slots."""
        model = build_model(self.preset, seed=SEED, dtype=self.dtype, device=self.device)
        model.allocate_kv_cache(num_slots, max_seq_len)
        return model

    def copy_bandwidth(self) -> dict:
        """The device's copy bandwidth, measured at the first call of the run."""
        if self._copy is None:
            self._copy = measure_copy_bandwidth(self.device, COPY_BYTES[self.device.type],
                                                self.suite.repeats, self.suite.warmup)
        return self._copy


_ACTIVE: contextvars.ContextVar[BenchRun | None] = contextvars.ContextVar("bench_run",
                                                                          default=None)


@contextlib.contextmanager
def bench_run(suite: str | Suite = "quick", device: str = "auto",
              torch_threads: int | None = None):
    """Open a run; on CPU torch uses `torch_threads` (default 1) until it closes."""
    suite = get_suite(suite)
    dev = resolve_device(device)
    if torch_threads is not None and (isinstance(torch_threads, bool) or not isinstance(torch_threads, int)
                                      or torch_threads < 1):  # True is an int: not a thread count
        raise GraphlabError(f"torch_threads={torch_threads!r} must be an integer >= 1 or None")
    previous = torch.get_num_threads()
    # One thread: tiny steps gain nothing from more, and timings stop depending on the load.
    threads = torch_threads or (1 if dev.type == "cpu" else previous)
    torch.set_num_threads(threads)
    try:
        preset, dtype = suite.model_for(dev.type)
        run = BenchRun(suite, dev, preset, dtype,
                       provenance(dev, dtype=dtype, model=preset, suite=suite.name))
        token = _ACTIVE.set(run)
        try:
            yield run
        finally:
            _ACTIVE.reset(token)
    finally:
        torch.set_num_threads(previous)


def _current() -> BenchRun:
    run = _ACTIVE.get()
    if run is None:
        raise GraphlabError("a sweep body runs inside bench_run(); call the sweep function")
    return run


_SWEEP_FUNCTIONS = {}


def sweep(name: str):
    """Register a sweep body (suite, device) -> frame; the public function opens its own run."""
    def register(body):
        _SWEEP_FUNCTIONS[name] = body

        @functools.wraps(body)
        def run_sweep(suite: str | Suite = "quick", device: str = "auto",
                      torch_threads: int | None = None) -> pd.DataFrame:
            with bench_run(suite, device, torch_threads) as run:
                return body(run.suite, run.device)
        return run_sweep
    return register


# ---- measurements ---------------------------------------------------------------------------

def _batch(runner, num_reqs: int, seed: int = SEED):
    """num_reqs requests in slots 0..num_reqs-1 at position max_seq_len // 2, random tokens:
    rows of q = 1 + k tokens for a V1 runner, one token per row for a V0 one (k = 0)."""
    model = runner.model
    ids, positions, slots = uniform_decode_batch(num_reqs, runner.cfg.decode_query_len, model,
                                                 model.max_seq_len // 2, seed)
    return (ids, positions, slots) if runner.batch_unit == "tokens" else (ids[:, 0], positions[:, 0], slots)


def weight_bytes(model: LlamaForCausalLM) -> int:
    """Bytes of the unique parameters: what one decode step must read at least once."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


def timing_stats(times_ms) -> dict:
    """median_ms, p90_ms (linear interpolation between order statistics) and min_ms."""
    times = np.asarray(times_ms, dtype=float)
    return dict(median_ms=float(np.median(times)), p90_ms=float(np.percentile(times, 90)),
                min_ms=float(times.min()))


def measure_copy_bandwidth(device: torch.device, nbytes: int, repeats: int, warmup: int) -> dict:
    """One device-to-device copy of nbytes, timed `repeats` times; bytes read plus written / s."""
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
    return dict(copy_bytes=nbytes, bytes_moved=2 * nbytes, repeats=repeats, warmup=warmup,
                **stats, bytes_per_s=2 * nbytes / (stats["median_ms"] / 1e3))


def _sizing_columns(runner) -> dict:
    """What a runner's rows were measured under; V1 rows count tokens (q = 1 + k per request)."""
    cfg = runner.cfg
    return dict(engine=runner.engine.name, max_num_seqs=cfg.max_num_seqs,
                num_speculative_tokens=cfg.num_speculative_tokens,
                max_num_batched_tokens=cfg.max_num_batched_tokens,
                batch_unit=runner.batch_unit,
                graph_limit=runner.graph_limit, max_seq_len=runner.model.max_seq_len)


def cliff_request_counts(runner) -> tuple[int, ...]:
    """Request counts filling each captured size exactly, one past the last graph, and S."""
    q, seqs = runner.cfg.decode_query_len, runner.cfg.max_num_seqs
    exact = {size // q for size in runner.capture_sizes}
    beyond = {runner.graph_limit // q + 1, seqs}
    return tuple(sorted(r for r in exact | beyond if 1 <= r <= seqs))


def latency_rows(model: LlamaForCausalLM, engine: str, cfg: SizingConfig, num_reqs=None,
                 repeats: int = 20, warmup: int = 3) -> list[dict]:
    """Step latency per request count, eager and graph mode, one row per (count, mode).

    A V0 engine decodes one token per request; a V1 engine's verify step q = 1 + k tokens per
    request (batch_size counts tokens). num_reqs None: cliff_request_counts, across and beyond
    the largest graph (the cliff). Request i sits in slot i: the cache needs max(num_reqs) slots.
    """
    runners = {mode: make_runner(model, engine, cfg, enforce_eager=mode == "eager")
               for mode in ("eager", "graph")}
    for runner in runners.values():
        runner.capture_model()
    fixed, rows = _sizing_columns(runners["graph"]), []
    for reqs in num_reqs or cliff_request_counts(runners["graph"]):
        batch = _batch(runners["graph"], reqs)
        for mode, runner in runners.items():
            for _ in range(warmup):
                runner.execute_model(*batch)
            steps = [runner.execute_model(*batch)[1] for _ in range(repeats)]
            rows.append(dict(
                fixed, mode=mode, num_reqs=reqs, batch_size=steps[0].batch_size,
                path=steps[0].path, graph_size=steps[0].graph_size,
                **timing_stats([step.time_ms for step in steps]), repeats=repeats,
                warmup=warmup))
    return rows


def graph_memory_rows(model: LlamaForCausalLM, engine: str, cfg: SizingConfig,
                      graph_pools=GRAPH_POOLS) -> list[dict]:
    """Memory and time of every capture, per pool mode, in capture order (largest first).

    cumulative_bytes is the running total of memory_bytes (measured, or predicted when
    emulated); cumulative_predicted_bytes what the prediction says all graphs so far hold
    (running max for a shared pool, running sum for separate pools); predicted_over_measured
    their ratio where memory was measured. capture_size counts tokens for a V1 engine.
    """
    rows = []
    for graph_pool in graph_pools:
        runner = make_runner(model, engine, cfg, graph_pool=graph_pool)
        records = runner.capture_model()
        fixed = _sizing_columns(runner)
        for order, record in enumerate(records):
            done = records[:order + 1]
            fields = asdict(record)
            capture_size = fields.pop("size")  # rows (V0) or tokens (V1)
            measured = sum(r.memory_bytes for r in done)
            predicted = predict_pool_bytes([r.predicted_bytes for r in done], graph_pool)
            rows.append(dict(
                fixed, capture_order=order, capture_size=capture_size,
                num_reqs=capture_size // cfg.decode_query_len, **fields,
                cumulative_bytes=measured,
                cumulative_pool_bytes=(None if record.pool_bytes is None
                                       else sum(r.pool_bytes for r in done)),
                cumulative_predicted_bytes=predicted,
                predicted_over_measured=(predicted / measured if record.memory_kind ==
                                         "measured" and measured > 0 else None)))
        del runner, records
        gc.collect()
        if model.device.type == "cuda":
            torch.cuda.empty_cache()  # the next pool mode starts from released graphs
    return rows


# ---- sweeps ---------------------------------------------------------------------------------

def _configs(s: Suite, v0_max_num_seqs: int, v0_num_reqs=None):
    """(engine, sizing, request counts) of a sweep: the guard's, then the suite's V1 engine's."""
    yield LATENCY_ENGINE, SizingConfig(max_num_seqs=v0_max_num_seqs), v0_num_reqs
    if s.v1_sizing is not None:
        yield s.v1_engine, s.v1_sizing, None


@sweep("copy_bandwidth")
def copy_bandwidth_sweep(suite, device) -> pd.DataFrame:
    """The device's copy bandwidth: the denominator of latency.csv's bandwidth_floor_ms."""
    run = _current()
    return run.stamp([run.copy_bandwidth()])


@sweep("latency")
def latency_sweep(suite, device) -> pd.DataFrame:
    """Step latency, eager and graph replay, one row per (engine, request count, mode).

    The guard (vllm-0.6.0) captures for suite.latency_max_num_seqs (default
    max(latency_batch_sizes)), so batch sizes between captured ones are padded and larger ones
    run eagerly in graph mode too (its eager cliff). With suite.v1_sizing, the V1 engine's
    verify steps follow, across and beyond its largest token-count graph (the V1 cliff).
    """
    run = _current()
    s = run.suite
    rows = []
    for engine, cfg, num_reqs in _configs(s, s.latency_max_num_seqs or
                                          max(s.latency_batch_sizes), s.latency_batch_sizes):
        model = run.model(max(num_reqs or (cfg.max_num_seqs,)), s.max_seq_len)
        weights, bandwidth = weight_bytes(model), run.copy_bandwidth()["bytes_per_s"]
        rows += [dict(row, weight_bytes=weights, copy_bytes_per_s=bandwidth,
                      bandwidth_floor_ms=weights / bandwidth * 1e3)
                 for row in latency_rows(model, engine, cfg, num_reqs, s.repeats, s.warmup)]
        del model
    return run.stamp(rows)


@sweep("graph_memory")
def graph_memory_sweep(suite, device) -> pd.DataFrame:
    """graph_memory_rows of the guard at suite.memory_max_num_seqs, then of suite.v1_sizing."""
    run = _current()
    s = run.suite
    rows = []
    for engine, cfg, _ in _configs(s, s.memory_max_num_seqs):
        rows += graph_memory_rows(run.model(cfg.max_num_seqs, s.max_seq_len), engine, cfg)
    return run.stamp(rows)


@sweep("spec_decode")
def spec_decode_sweep(suite, device) -> pd.DataFrame:
    """Speculative decoding per engine: tokens/s, scorer graph share, acceptance (V1 and V0)."""
    run = _current()
    suite = run.suite
    runs = [(SpecDecodeConfig(max_num_seqs=seqs, num_speculative_tokens=k, engine=engine,
                              max_model_len=suite.spec_max_model_len),
             RequestLoad(kind="mixed", num_requests=suite.spec_num_requests_per_seq * seqs,
                         max_tokens=suite.spec_max_tokens))
            for seqs in suite.spec_max_num_seqs for k in suite.spec_num_speculative_tokens
            for engine in suite.spec_engines]
    return run.stamp(spec_decode_benchmark(runs, preset=run.preset, dtype=run.dtype,
                                           device=str(run.device)))


@sweep("spec_decode_steps")
def spec_decode_steps_sweep(suite, device) -> pd.DataFrame:
    """Every engine step of one speculative-decoding run per (engine, max_num_seqs, k).

    The per-step view behind spec_decode.csv: scorer and draft batch sizes, paths taken, padded
    size and step times, over the "coverage" load (every reachable scorer batch size once, so
    each size's path under each engine appears).
    """
    run = _current()
    suite, frames = run.suite, []
    for seqs in suite.spec_max_num_seqs:
        for k in suite.spec_num_speculative_tokens:
            for engine in suite.spec_engines:
                config = SpecDecodeConfig(max_num_seqs=seqs, num_speculative_tokens=k,
                                          engine=engine, max_model_len=suite.spec_max_model_len)
                _, output = run_speculative(config, RequestLoad(kind="coverage"),
                                            preset=run.preset, dtype=run.dtype,
                                            device=str(run.device))
                frames.append(output.steps_frame().assign(
                    engine=engine, proposer_engine=config.proposer_engine, scorer=config.scorer,
                    max_num_seqs=seqs, num_speculative_tokens=k))
    frame = pd.concat(frames, ignore_index=True)
    lead = ["engine", "proposer_engine", "scorer", "max_num_seqs", "num_speculative_tokens"]
    return run.stamp(frame[lead + [c for c in frame.columns if c not in lead]])


@sweep("crash_map")
def crash_map_sweep(suite, device) -> pd.DataFrame:
    """The crash map over the suite's (max_num_seqs, k) grid, computed from the sizing rules."""
    run = _current()
    frame = crash_map(run.suite.crash_map_engines, run.suite.crash_map_max_num_seqs,
                      run.suite.crash_map_k)
    return with_provenance(frame, as_computed(run.provenance))


# ---- export ---------------------------------------------------------------------------------

def export_csvs(frames: dict[str, pd.DataFrame], out) -> dict[str, Path]:
    """Write each frame to out/<name>.csv atomically (a failed write leaves no partial file)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return {name: write_csv_atomic(frame, out / f"{name}.csv") for name, frame in frames.items()}


def run_bench(suite: str | Suite = "quick", device: str = "auto", out="build/bench",
              sweeps=SWEEPS, progress: bool = True,
              torch_threads: int | None = None) -> dict[str, Path]:
    """Run the sweeps in order in one run, writing each CSV as soon as its sweep finishes.

    An interrupt or error leaves the CSVs of the finished sweeps complete and no partial file.
    """
    unknown = [s for s in sweeps if s not in _SWEEP_FUNCTIONS]
    if unknown:
        raise GraphlabError(f"unknown sweeps {unknown}; allowed: {', '.join(SWEEPS)}")
    written = {}
    with bench_run(suite, device, torch_threads) as run:  # bad input fails before any sweep
        Path(out).mkdir(parents=True, exist_ok=True)
        for name in progress_bar(sweeps, desc=f"bench {run.suite.name}", unit="sweep",
                                 disable=not progress):
            written |= export_csvs({name: _SWEEP_FUNCTIONS[name](run.suite, run.device)}, out)
    return written


def summary(paths: dict[str, Path]) -> str:
    """One line per written CSV: name, rows, backend and (where present) memory kind."""
    lines = []
    for name, path in paths.items():
        frame = read_csv(path)
        kinds = (f", memory {'/'.join(sorted(frame['memory_kind'].dropna().unique()))}"
                 if "memory_kind" in frame.columns else "")
        lines.append(f"{path}: {len(frame)} rows, {'/'.join(sorted(frame['backend'].unique()))}"
                     f" on {'/'.join(sorted(frame['device'].unique()))}{kinds}")
    return "\n".join(lines)
