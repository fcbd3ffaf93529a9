"""Benchmark sweeps as tidy DataFrames with provenance, and their CSV export.

One layer: a `BenchRun` resolves the device and the backend, sets the CPU thread count (one unless
the caller says otherwise) and builds the provenance block once; every sweep of the run (each a
function of the run, passed explicitly) measures under it and stamps its rows with that block, so
all CSVs of one `run_bench` share `run_id` and `suite`. What is measured: the device's copy
bandwidth, decode step latency (eager and graph replay, against the bandwidth floor) and graph
memory and capture time per captured size, for the V0 guard (rows) and a V1 engine (tokens: the
cliff past its largest graph), speculative decoding per engine (summary and per step), and the crash
map computed from the sizing rules.

    from graphlab.bench import sweeps
    frame = sweeps.latency_sweep("quick", device="cpu")   # one sweep, its own run
    paths = sweeps.run_bench("quick", "cpu", "build/bench")  # every sweep, one CSV each

The backend is the run's: "auto" measures costs where a captured size saves something, real
CUDA graphs on a GPU and `cpu-compiled` steps on a CPU (graphlab.engine.compiled); with
backend compiled-cuda-graph the latency sweep adds a third mode, "compiled-graph" (CUDA graphs
of the compiled step).
The rows of one model come from graphlab.bench.measurements; the CSV columns are documented in
data/README.md.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import torch

from graphlab.bench.export import (
    export_csvs,
    locked_folder,
    write_checkpoint,
    write_manifest,
)
from graphlab.bench.measurements import (
    SEED,
    graph_memory_points,
    latency_points,
    measure_copy_bandwidth,
    weight_bytes,
)
from graphlab.bench.provenance import as_computed, provenance, with_provenance
from graphlab.bench.sampling import Timing
from graphlab.bench.spec_decode import spec_decode_benchmark
from graphlab.bench.suites import Suite, get_suite
from graphlab.engine.device import BACKENDS, Backend, resolve_backend, resolve_device
from graphlab.engine.model import LlamaForCausalLM, build_model
from graphlab.engine.sdpa import probe_sdpa
from graphlab.errors import check_choice, check_int, check_path
from graphlab.progress import progress as progress_bar
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.crash_maps import crash_map
from graphlab.specdec.engine import SpecDecodeConfig, run_speculative
from graphlab.specdec.requests import RequestLoad

# The guard: batches past the capture limit run eagerly, so a latency sweep shows the cliff.
LATENCY_ENGINE = "vllm-0.6.0"
# Bytes of one copy: far past the H200's 60 MB L2 on CUDA; on CPU past the last-level cache.
COPY_BYTES = {"cuda": 2**30, "cpu": 2**26}


# ---- the run: device, threads and provenance, once ------------------------------------------


@dataclass
class BenchRun:
    """One benchmark run: the suite, its resolved device and model, the provenance block."""

    suite: Suite
    device: torch.device
    preset: str
    dtype: str
    backend: Backend
    provenance: dict
    _copy: dict | None = field(default=None, repr=False)  # copy_bandwidth(), once
    _sdpa: dict[int, str] = field(default_factory=dict, repr=False)  # sdpa_backend(), once each
    _models: dict[int, LlamaForCausalLM] = field(default_factory=dict, repr=False)  # per length
    out: Path | None = None  # run_bench's folder: where checkpoint() writes

    @property
    def timing(self) -> Timing:
        """How the run times its steps: the suite's rounds on the run's backend."""
        return Timing(self.backend, self.suite.repeats, self.suite.warmup)

    def stamp(self, rows) -> pd.DataFrame:
        return with_provenance(rows, self.provenance)

    def checkpoint(self, name: str, rows) -> None:
        """Write the rows so far as out/<name>.partial.csv (after each request count or capture
        loop), so a run stopped later keeps them beside, never over, a complete <name>.csv."""
        if self.out is not None and rows:
            write_checkpoint(self.stamp(rows), self.out, name)

    def sdpa_backend(self, max_seq_len: int) -> str:
        """The SDPA kernel of a one-token decode step of the run's model at max_seq_len, probed
        at the first call per length (the probe builds a model)."""
        if max_seq_len not in self._sdpa:
            self._sdpa[max_seq_len] = probe_sdpa(self.model(1, max_seq_len)).backend
        return self._sdpa[max_seq_len]

    def model(self, num_slots: int, max_seq_len: int) -> LlamaForCausalLM:
        """The run's model with a KV cache of at least num_slots slots: one per max_seq_len for
        the whole run, so its runners share one KV cache and its compiled step (cpu-compiled) is
        traced once for the run (models of one config share it too). Growing the cache moves its
        pad slot: build runners after this call, never keep one across it."""
        model = self._models.get(max_seq_len)
        if model is None:
            model = build_model(self.preset, seed=SEED, dtype=self.dtype, device=self.device)
            self._models[max_seq_len] = model
        if model.num_slots < num_slots:
            model.allocate_kv_cache(num_slots, max_seq_len)
        return model

    def copy_bandwidth(self) -> dict:
        """The device's copy bandwidth, measured at the first call of the run."""
        if self._copy is None:
            self._copy = measure_copy_bandwidth(
                self.device, COPY_BYTES[self.device.type], self.timing
            )
        return self._copy


@contextlib.contextmanager
def bench_run(
    suite: str | Suite = "quick",
    device: str = "auto",
    torch_threads: int | None = None,
    backend: str | Backend = "auto",
):
    """Open a run; on CPU torch uses `torch_threads` (default 1) until it closes. backend
    "auto": what "auto" means for costs (graphlab.engine.device.AUTO), resolved here once; a
    name or a resolved Backend value."""
    suite = get_suite(suite)
    check_choice("backend", str(backend), ("auto",) + BACKENDS)
    dev = resolve_device(device)
    if torch_threads is not None:
        check_int("torch_threads (or None)", torch_threads, 1)
    previous = torch.get_num_threads()
    # One thread: tiny steps gain nothing from more, and timings stop depending on the load.
    threads = torch_threads or (1 if dev.type == "cpu" else previous)
    torch.set_num_threads(threads)
    try:
        preset, dtype = suite.model_for(dev.type)
        # A backend the device cannot run (or cpu-compiled without a compiler) is settled now.
        backend = resolve_backend(backend, dev, "costs")
        yield BenchRun(
            suite=suite,
            device=dev,
            preset=preset,
            dtype=dtype,
            backend=backend,
            provenance=provenance(
                dev, dtype=dtype, model=preset, suite=suite.name, backend=backend.name
            ),
        )
    finally:
        torch.set_num_threads(previous)


def _standalone(name: str, body):
    """The public sweep function: `body` (a run -> frame) in a run of its own."""

    def run_sweep(
        suite: str | Suite = "quick",
        device: str = "auto",
        torch_threads: int | None = None,
        backend: str = "auto",
    ) -> pd.DataFrame:
        with bench_run(suite, device, torch_threads, backend) as run:
            return body(run)

    run_sweep.__name__ = run_sweep.__qualname__ = f"{name}_sweep"
    run_sweep.__doc__ = body.__doc__
    return run_sweep


# ---- sweeps ---------------------------------------------------------------------------------


def _configs(s: Suite, v0_max_num_seqs: int, v0_num_reqs=None):
    """(engine, sizing, request counts) of a sweep: the guard's, then the suite's V1 engine's."""
    yield LATENCY_ENGINE, SizingConfig(max_num_seqs=v0_max_num_seqs), v0_num_reqs
    if s.v1_sizing is not None:
        yield s.v1_engine, s.v1_sizing, None


def _copy_bandwidth(run: BenchRun) -> pd.DataFrame:
    """The device's copy bandwidth: the denominator of latency.csv's bandwidth_floor_ms."""
    return run.stamp([run.copy_bandwidth()])


def _latency(run: BenchRun) -> pd.DataFrame:
    """Step latency, eager and graph replay, one row per (engine, request count, mode).

    The guard (vllm-0.6.0) captures for suite.latency_max_num_seqs (default
    max(latency_batch_sizes)), so batch sizes between captured ones are padded and larger ones
    run eagerly in graph mode too (its eager cliff). With suite.v1_sizing, the V1 engine's
    verify steps follow, across and beyond its largest token-count graph (the V1 cliff).
    """
    s, rows, samples = run.suite, [], []  # samples: every timed step, latency_samples.csv
    for engine, cfg, num_reqs in _configs(
        s, s.latency_max_num_seqs or max(s.latency_batch_sizes), s.latency_batch_sizes
    ):
        model = run.model(max(num_reqs or (cfg.max_num_seqs,)), s.max_seq_len)
        weights, bandwidth = weight_bytes(model), run.copy_bandwidth()["bytes_per_s"]
        floor = dict(
            weight_bytes=weights,
            copy_bytes_per_s=bandwidth,
            bandwidth_floor_ms=weights / bandwidth * 1e3,
        )
        for point in latency_points(model, engine, cfg, run.timing, num_reqs, samples=samples):
            rows += [dict(row, **floor) for row in point]
            run.checkpoint("latency", rows)
            run.checkpoint("latency_samples", samples)
    if run.out is not None and samples:  # every timed step beside latency.csv, complete now
        export_csvs({"latency_samples": run.stamp(samples)}, run.out)
    return run.stamp(rows)


def _graph_memory(run: BenchRun) -> pd.DataFrame:
    """graph_memory_rows of the guard at suite.memory_max_num_seqs, then of suite.v1_sizing."""
    s, rows = run.suite, []
    for engine, cfg, _ in _configs(s, s.memory_max_num_seqs):
        model = run.model(cfg.max_num_seqs, s.max_seq_len)
        for point in graph_memory_points(model, engine, cfg, run.backend):
            rows += point
            run.checkpoint("graph_memory", rows)
    return run.stamp(rows)


def _spec_configs(run: BenchRun):
    """A SpecDecodeConfig per (max_num_seqs, k, engine) of the suite, in that order."""
    suite = run.suite
    for seqs in suite.spec_max_num_seqs:
        for k in suite.spec_num_speculative_tokens:
            for engine in suite.spec_engines:
                yield SpecDecodeConfig(
                    SizingConfig(seqs, k),
                    engine=engine,
                    max_model_len=suite.spec_max_model_len,
                    backend=run.backend.name,
                )


def _spec_decode(run: BenchRun) -> pd.DataFrame:
    """Speculative decoding per engine: tokens/s, scorer graph share, acceptance (V1 and V0)."""
    suite = run.suite
    runs = [
        (
            config,
            RequestLoad(
                kind="mixed",
                num_requests=suite.spec_num_requests_per_seq * config.sizing.max_num_seqs,
                max_tokens=suite.spec_max_tokens,
            ),
        )
        for config in _spec_configs(run)
    ]
    frame = pd.DataFrame(
        spec_decode_benchmark(runs, preset=run.preset, dtype=run.dtype, device=str(run.device))
    )
    return run.stamp(frame.assign(sdpa_backend=run.sdpa_backend(suite.spec_max_model_len)))


def _spec_decode_steps(run: BenchRun) -> pd.DataFrame:
    """Every engine step of one speculative-decoding run per (engine, max_num_seqs, k).

    The per-step view behind spec_decode.csv: scorer and draft batch sizes, paths taken, padded
    size and step times, over the "coverage" load (every reachable scorer batch size once, so
    each size's path under each engine appears).
    """
    suite, frames = run.suite, []
    for config in _spec_configs(run):
        _, output = run_speculative(
            config,
            RequestLoad(kind="coverage"),
            preset=run.preset,
            dtype=run.dtype,
            device=str(run.device),
        )
        frames.append(
            output.steps_frame().assign(
                engine=config.engine,
                proposer_engine=config.proposer_engine,
                scorer=config.scorer,
                max_num_seqs=config.sizing.max_num_seqs,
                num_speculative_tokens=config.sizing.num_speculative_tokens,
            )
        )
    frame = pd.concat(frames, ignore_index=True)
    lead = ["engine", "proposer_engine", "scorer", "max_num_seqs", "num_speculative_tokens"]
    frame = frame[lead + [c for c in frame.columns if c not in lead]]
    return run.stamp(frame.assign(sdpa_backend=run.sdpa_backend(suite.spec_max_model_len)))


def _crash_map(run: BenchRun) -> pd.DataFrame:
    """The crash map over the suite's (max_num_seqs, k) grid, computed from the sizing rules."""
    frame = crash_map(
        run.suite.crash_map_engines, run.suite.crash_map_max_num_seqs, run.suite.crash_map_k
    )
    return with_provenance(frame, as_computed(run.provenance))


# Each sweep's body, in run_bench's order; each public function runs it in a run of its own.
_BODIES = {
    "copy_bandwidth": _copy_bandwidth,
    "latency": _latency,
    "graph_memory": _graph_memory,
    "spec_decode": _spec_decode,
    "spec_decode_steps": _spec_decode_steps,
    "crash_map": _crash_map,
}
SWEEPS = tuple(_BODIES)
copy_bandwidth_sweep = _standalone("copy_bandwidth", _copy_bandwidth)
latency_sweep = _standalone("latency", _latency)
graph_memory_sweep = _standalone("graph_memory", _graph_memory)
spec_decode_sweep = _standalone("spec_decode", _spec_decode)
spec_decode_steps_sweep = _standalone("spec_decode_steps", _spec_decode_steps)
crash_map_sweep = _standalone("crash_map", _crash_map)


# ---- export ---------------------------------------------------------------------------------


def run_bench(
    suite: str | Suite = "quick",
    device: str = "auto",
    out="build/bench",
    sweeps=SWEEPS,
    progress: bool = True,
    torch_threads: int | None = None,
    backend: str = "auto",
) -> dict[str, Path]:
    """Run the sweeps in order in one run, writing each CSV as soon as its sweep finishes.

    An interrupt or error leaves the CSVs of the finished sweeps complete, an earlier run's CSV
    of an unfinished sweep as it was, and that sweep's rows so far as <name>.partial.csv;
    out/manifest.json names the CSVs this run wrote and its state (export.write_manifest). A
    second run on the same `out` while this one lives is refused (export.locked_folder).
    """
    out = check_path("out", out)
    for name in sweeps:
        check_choice("sweep", name, SWEEPS)
    written = {}
    with bench_run(suite, device, torch_threads, backend) as run:  # bad input fails first
        Path(out).mkdir(parents=True, exist_ok=True)
        run.out = Path(out)
        with locked_folder(out):
            write_manifest(out, run.provenance, sweeps, "running")
            try:
                for name in progress_bar(
                    sweeps, desc=f"bench {run.suite.name}", unit="sweep", disable=not progress
                ):
                    written |= export_csvs({name: _BODIES[name](run)}, out)
                    write_manifest(out, run.provenance, sweeps, "running")
            except BaseException:
                # Best effort: on a full disk the error that stopped the run is the one to report.
                with contextlib.suppress(OSError):
                    write_manifest(out, run.provenance, sweeps, "interrupted")
                raise
            write_manifest(out, run.provenance, sweeps, "complete")
    return written
