"""Benchmark sweeps as tidy DataFrames with provenance, and their CSV export.

One layer: a `BenchRun` resolves the device, sets the CPU thread count (one unless the caller
says otherwise) and builds the provenance block once; every sweep of the run (each a function
of a `Suite`) measures under it and stamps its rows with that block, so all CSVs of one
`run_bench` share `run_id` and `suite`. What is measured: the device's copy bandwidth, decode
step latency (eager and graph replay, against the bandwidth floor), graph memory and capture
time per captured size, speculative decoding per sizing policy (summary and per step), and the
crash map computed from the sizing rules.

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

from graphlab.audit import crash_map
from graphlab.drafts import build_draft, build_target
from graphlab.errors import GraphlabError
from graphlab.export import read_csv, write_csv_atomic
from graphlab.graphs import GRAPH_POOLS
from graphlab.memory import graph_memory_bytes, predict_pool_bytes
from graphlab.model import LlamaForCausalLM, build_model
from graphlab.progress import progress as progress_bar
from graphlab.provenance import as_computed, provenance, resolve_device, with_provenance
from graphlab.runner import ModelRunner, StepTimer
from graphlab.sizing import SizingConfig
from graphlab.spec_decode import SpecDecodeConfig, SpecDecodeEngine, run_speculative
# The suites belong to bench's interface: bench.SUITES, bench.get_suite, bench.replace_suite.
from graphlab.suites import SUITES, Suite, get_suite, replace_suite
from graphlab.workload import RequestLoad, load_requests

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
    if torch_threads is not None and (not isinstance(torch_threads, int) or torch_threads < 1):
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


def _setup(suite, device):
    """(suite, device, preset, dtype, provenance) of the open run, resolved when it opened."""
    run = _current()
    return run.suite, str(run.device), run.preset, run.dtype, run.provenance


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

def decode_batch(n: int, model: LlamaForCausalLM, position: int, seed: int = SEED):
    """n decode rows, one per slot (slots 0..n-1), all at `position`, random tokens."""
    if n > model.num_slots:
        raise GraphlabError(f"a batch of {n} rows needs {n} slots; the cache has {model.num_slots}")
    generator = torch.Generator().manual_seed(seed)
    input_ids = torch.randint(0, model.config.vocab_size, (n,), generator=generator)
    return (input_ids.to(model.device), torch.full((n,), position, device=model.device),
            torch.arange(n, device=model.device))


def weight_bytes(model: LlamaForCausalLM) -> int:
    """Bytes of the unique parameters: what one decode step must read at least once."""
    return sum(p.numel() * p.element_size() for p in model.parameters())


def timing_stats(times_ms) -> dict:
    """median_ms, p90_ms (linear interpolation between order statistics) and min_ms."""
    times = np.asarray(times_ms, dtype=float)
    return dict(median_ms=float(np.median(times)), p90_ms=float(np.percentile(times, 90)),
                min_ms=float(times.min()))


def measure_copy_bandwidth(device: torch.device, nbytes: int, repeats: int,
                           warmup: int) -> dict:
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


# ---- sweeps ---------------------------------------------------------------------------------

@sweep("copy_bandwidth")
def copy_bandwidth_sweep(suite, device) -> pd.DataFrame:
    """The device's copy bandwidth: the denominator of latency.csv's bandwidth_floor_ms."""
    run = _current()
    return run.stamp([run.copy_bandwidth()])


@sweep("latency")
def latency_sweep(suite, device) -> pd.DataFrame:
    """Decode step latency per batch size, eager and graph replay, one row per (size, mode).

    Graphs are captured for suite.latency_max_num_seqs (default max(latency_batch_sizes)), so
    batch sizes between captured ones are padded and larger ones run eagerly in graph mode too
    (the guard's eager cliff). Every row is one slot per sequence at position max_seq_len // 2.
    """
    run = _current()
    s = run.suite
    model = run.model(max(s.latency_batch_sizes), s.max_seq_len)
    cfg = SizingConfig(max_num_seqs=s.latency_max_num_seqs or max(s.latency_batch_sizes))
    runners = {"eager": ModelRunner(model, LATENCY_ENGINE, cfg, enforce_eager=True),
               "graph": ModelRunner(model, LATENCY_ENGINE, cfg)}
    for runner in runners.values():
        runner.capture_model()
    weights, bandwidth = weight_bytes(model), run.copy_bandwidth()["bytes_per_s"]
    rows = []
    for n in s.latency_batch_sizes:
        batch = decode_batch(n, model, s.max_seq_len // 2)
        for mode, runner in runners.items():
            for _ in range(s.warmup):
                runner.execute_model(*batch)
            steps = [runner.execute_model(*batch)[1] for _ in range(s.repeats)]
            rows.append(dict(
                engine=LATENCY_ENGINE, mode=mode, max_num_seqs=cfg.max_num_seqs, batch_size=n,
                path=steps[0].path, graph_size=steps[0].graph_size,
                **timing_stats([step.time_ms for step in steps]), repeats=s.repeats,
                warmup=s.warmup, max_seq_len=s.max_seq_len, weight_bytes=weights,
                copy_bytes_per_s=bandwidth, bandwidth_floor_ms=weights / bandwidth * 1e3))
    return run.stamp(rows)


@sweep("graph_memory")
def graph_memory_sweep(suite, device) -> pd.DataFrame:
    """Memory and time of every capture, per pool mode, in capture order (largest first).

    cumulative_bytes is the running total of memory_bytes (measured, or predicted when
    emulated); cumulative_predicted_bytes what the prediction says all graphs so far hold
    (running max for a shared pool, running sum for separate pools); predicted_over_measured
    their ratio where memory was measured.
    """
    run = _current()
    s = run.suite
    model = run.model(s.memory_max_num_seqs, s.max_seq_len)
    cfg = SizingConfig(max_num_seqs=s.memory_max_num_seqs)
    rows = []
    for graph_pool in GRAPH_POOLS:
        runner = ModelRunner(model, LATENCY_ENGINE, cfg, graph_pool=graph_pool)
        records = runner.capture_model()
        for order, record in enumerate(records):
            done = records[:order + 1]
            fields = asdict(record)
            measured = sum(r.memory_bytes for r in done)
            predicted = predict_pool_bytes([r.predicted_bytes for r in done], graph_pool)
            rows.append(dict(
                engine=LATENCY_ENGINE, max_num_seqs=cfg.max_num_seqs, max_seq_len=s.max_seq_len,
                capture_order=order, capture_size=fields.pop("size"), **fields,
                cumulative_bytes=measured,
                cumulative_pool_bytes=(None if record.pool_bytes is None
                                       else sum(r.pool_bytes for r in done)),
                cumulative_predicted_bytes=predicted,
                predicted_over_measured=(predicted / measured if record.memory_kind ==
                                         "measured" and measured > 0 else None)))
        del runner, records
        gc.collect()
        if run.device.type == "cuda":
            torch.cuda.empty_cache()  # the next pool mode starts from released graphs
    return run.stamp(rows)


@sweep("spec_decode")
def spec_decode_sweep(suite: str | Suite = "quick", device: str = "auto") -> pd.DataFrame:
    """Speculative decoding per engine: tokens/s, scorer graph share, acceptance (V1 and V0)."""
    suite, dev, preset, dtype, prov = _setup(suite, device)
    runs = [(SpecDecodeConfig(max_num_seqs=seqs, num_speculative_tokens=k, engine=engine,
                              max_model_len=suite.spec_max_model_len),
             RequestLoad(kind="mixed", num_requests=suite.spec_num_requests_per_seq * seqs,
                         max_tokens=suite.spec_max_tokens))
            for seqs in suite.spec_max_num_seqs for k in suite.spec_num_speculative_tokens
            for engine in suite.spec_engines]
    return with_provenance(spec_decode_benchmark(runs, preset=preset, dtype=dtype, device=dev),
                           prov)


@sweep("spec_decode_steps")
def spec_decode_steps_sweep(suite: str | Suite = "quick", device: str = "auto") -> pd.DataFrame:
    """Every engine step of one speculative-decoding run per (engine, max_num_seqs, k).

    The per-step view behind spec_decode.csv: scorer and draft batch sizes, paths taken, padded
    size and step times, over the "coverage" load (every reachable scorer batch size once, so
    each size's path under each engine appears).
    """
    suite, dev, preset, dtype, prov = _setup(suite, device)
    frames = []
    for seqs in suite.spec_max_num_seqs:
        for k in suite.spec_num_speculative_tokens:
            for engine in suite.spec_engines:
                config = SpecDecodeConfig(max_num_seqs=seqs, num_speculative_tokens=k,
                                          engine=engine, max_model_len=suite.spec_max_model_len)
                _, output = run_speculative(config, RequestLoad(kind="coverage"), preset=preset,
                                            dtype=dtype, device=dev)
                frames.append(output.steps_frame().assign(
                    engine=engine, proposer_engine=config.proposer_engine, scorer=config.scorer,
                    max_num_seqs=seqs, num_speculative_tokens=k))
    frame = pd.concat(frames, ignore_index=True)
    lead = ["engine", "proposer_engine", "scorer", "max_num_seqs", "num_speculative_tokens"]
    return with_provenance(frame[lead + [c for c in frame.columns if c not in lead]], prov)


@sweep("crash_map")
def crash_map_sweep(suite, device) -> pd.DataFrame:
    """The crash map over the suite's (max_num_seqs, k) grid, computed from the sizing rules."""
    run = _current()
    frame = crash_map(run.suite.crash_map_engines, run.suite.crash_map_max_num_seqs,
                      run.suite.crash_map_k)
    return with_provenance(frame, as_computed(run.provenance))


# ---- export ---------------------------------------------------------------------------------

def export(frames: dict[str, pd.DataFrame], out) -> dict[str, Path]:
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
            written |= export({name: _SWEEP_FUNCTIONS[name](run.suite, run.device)}, out)
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


# ---- speculative decoding: one row per run -------------------------------------------------

def spec_decode_benchmark(runs, *, preset: str = "tiny", draft: str = "truncated",
                          dtype: str = "float32", device: str = "auto",
                          warmup: bool = True) -> list[dict]:
    """Speculative decoding throughput, one row per (SpecDecodeConfig, RequestLoad) in `runs`.

    Per run: decode tokens per second, the share of scorer steps that replayed a graph, the
    largest scorer and draft batches, both runners' graph memory from their GraphRecords, and
    the acceptance figures (graphlab.rejection.SpecDecodeMetrics: vLLM V1's counts, V0's
    rates). Runs with the same config seed share one target and draft (kind `draft`); runs
    with the same load and (max_num_seqs, k) decode the same requests. Capture is not timed;
    with `warmup` the first max_num_seqs requests run once before the timed run (first-call
    kernel setup stays out of the numbers).
    """
    dev = resolve_device(device)
    models, rows = {}, []
    for config, load in runs:
        if config.seed not in models:
            target = build_target(preset, seed=config.seed, dtype=dtype, device=dev)
            models[config.seed] = target, build_draft(target, draft, seed=config.seed + 1)
        target, drafter = models[config.seed]
        k, seqs = config.num_speculative_tokens, config.max_num_seqs
        requests = load_requests(load, seqs, k, config.max_model_len, target.config.vocab_size)
        engine = SpecDecodeEngine(target, drafter if k else None, config)
        records = engine.capture_model()
        if warmup:
            engine.generate(requests[:seqs])
        result = engine.generate(requests)
        frame = result.steps_frame()
        decode = frame[frame.kind == "decode"]
        memory, kind = graph_memory_bytes(records["target"], config.graph_pool)
        draft_memory, _ = graph_memory_bytes(records.get("draft", []), config.graph_pool)
        tokens, seconds = int(decode.num_generation_tokens.sum()), float(decode.step_ms.sum()) / 1e3
        rows.append(dict(
            preset=preset, dtype=dtype, backend=engine.runner.backend, engine=config.engine,
            proposer_engine=config.proposer_engine, scorer=config.scorer, max_num_seqs=seqs,
            num_speculative_tokens=k, draft=draft, temperature=config.temperature,
            load=load.kind, num_requests=len(requests), decode_tokens=tokens, decode_s=seconds,
            tokens_per_s=tokens / seconds,
            scorer_graph_fraction=float((decode.path == "graph").mean()),
            max_scorer_batch_size=int(decode.batch_size.max()),
            max_draft_batch_size=int(decode.draft_batch_size.max()),
            num_target_graphs=len(records["target"]), target_graph_memory_bytes=memory,
            draft_graph_memory_bytes=draft_memory, memory_kind=kind,
            **{name: value for name, value in result.metrics.as_dict().items()
               if name != "num_speculative_tokens"}))
    return rows
