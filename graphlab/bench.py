"""Benchmark sweeps as tidy DataFrames with provenance, and their CSV export.

This module orchestrates; the measuring lives where the thing measured lives:
`graphlab.runner.measure_latency` and `measure_graph_memory` (decode steps and captures),
`graphlab.spec_decode.spec_decode_benchmark` and `run_speculative` (speculative decoding per
sizing policy: summary and per step) and `graphlab.audit.crash_map` (computed from the sizing
rules). Each sweep here runs one of them over a `Suite`'s sizes and returns a DataFrame whose
every row carries the provenance block of `graphlab.provenance` (device, backend, versions,
dtype, model, commit, time).

    from graphlab.bench import latency_sweep, export
    frames = {"latency": latency_sweep("quick", device="cpu")}
    export(frames, "my_run")          # my_run/latency.csv, written atomically

The CSV columns are documented in data/README.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm.auto import tqdm

from graphlab.audit import crash_map
from graphlab.drafts import build_draft, build_target
from graphlab.errors import GraphlabError
from graphlab.export import write_csv_atomic
from graphlab.memory import graph_memory_bytes
from graphlab.provenance import FIELDS, provenance, resolve_device
from graphlab.runner import measure_graph_memory, measure_latency
from graphlab.sizing import V0_POLICIES
from graphlab.spec_decode import SpecDecodeConfig, SpecDecodeEngine, run_speculative
from graphlab.workload import RequestLoad, load_requests

# What a GPU run measures unless a suite names a model: the launch-bound ~100M model in bf16.
# On CPU the tiny model in float32 keeps a sweep to seconds (bf16 matmuls are slow there).
DEVICE_DEFAULTS = {"cuda": ("100m", "bfloat16"), "cpu": ("tiny", "float32")}
SWEEPS = ("latency", "graph_memory", "spec_decode", "spec_decode_steps", "crash_map")


@dataclass(frozen=True)
class Suite:
    """The sizes one `bench` run sweeps. preset/dtype None: DEVICE_DEFAULTS for the device."""

    name: str
    preset: str | None
    dtype: str | None
    latency_batch_sizes: tuple[int, ...]
    repeats: int
    warmup: int
    max_seq_len: int
    memory_max_num_seqs: int
    spec_policies: tuple[str, ...]
    spec_max_num_seqs: tuple[int, ...]
    spec_num_speculative_tokens: tuple[int, ...]
    spec_num_requests_per_seq: int
    spec_max_tokens: int
    spec_max_model_len: int
    crash_map_engines: tuple[str, ...] | str
    crash_map_max_num_seqs: range
    crash_map_k: range
    # The latency runner's capture limit (as the policy sizes it); batch sizes above it run
    # eagerly in graph mode (the eager cliff). None: max(latency_batch_sizes), no cliff.
    latency_max_num_seqs: int | None = None

    def __post_init__(self):
        positive = {"latency_batch_sizes": self.latency_batch_sizes,
                    "spec_max_num_seqs": self.spec_max_num_seqs,
                    "crash_map_max_num_seqs": self.crash_map_max_num_seqs,
                    "repeats": (self.repeats,), "max_seq_len": (self.max_seq_len,),
                    "memory_max_num_seqs": (self.memory_max_num_seqs,),
                    "spec_num_requests_per_seq": (self.spec_num_requests_per_seq,),
                    "spec_max_tokens": (self.spec_max_tokens,)}
        non_negative = {"warmup": (self.warmup,), "crash_map_k": self.crash_map_k,
                        "spec_num_speculative_tokens": self.spec_num_speculative_tokens}
        if self.latency_max_num_seqs is not None:  # None: the default capture limit
            positive["latency_max_num_seqs"] = (self.latency_max_num_seqs,)
        for bound, fields in ((1, positive), (0, non_negative)):
            for name, values in fields.items():
                if len(values) == 0 or any(not isinstance(v, int) or v < bound for v in values):
                    raise GraphlabError(f"suite {self.name!r}: {name}={values!r} must be "
                                        f"non-empty integers >= {bound}")
        bad = [p for p in self.spec_policies if p not in V0_POLICIES]
        if bad or not self.spec_policies:
            raise GraphlabError(f"suite {self.name!r}: spec_policies {bad or '()'} must be among "
                                f"{', '.join(V0_POLICIES)}")

    def model_for(self, device: str) -> tuple[str, str]:
        """(preset, dtype) this suite runs on a device of type 'cuda' or 'cpu'."""
        default = DEVICE_DEFAULTS["cuda" if device.startswith("cuda") else "cpu"]
        return self.preset or default[0], self.dtype or default[1]


SUITES = {
    # Seconds on two CPU cores: the shapes of every sweep, small.
    "quick": Suite(
        name="quick", preset="tiny", dtype="float32",
        latency_batch_sizes=tuple(range(1, 33)), repeats=10, warmup=3,
        max_seq_len=64, memory_max_num_seqs=32,
        spec_policies=("vllm-0.6.0", "adaptive"), spec_max_num_seqs=(8,),
        spec_num_speculative_tokens=(4,), spec_num_requests_per_seq=1, spec_max_tokens=16,
        spec_max_model_len=48,
        crash_map_engines=("vllm-0.5.5", "vllm-0.6.0", "adaptive"),
        crash_map_max_num_seqs=range(1, 33), crash_map_k=range(0, 9),
        latency_max_num_seqs=24),  # batches 25..32 fall off the graphs: the eager cliff
    # Minutes on a GPU: V0's whole capture list, and the full crash map.
    "full": Suite(
        name="full", preset=None, dtype=None,
        # Every size to 64 (the padding staircase), then V0's 8-stride sizes to 256 (the
        # capture limit) and on to 320, which run eagerly: the eager cliff.
        latency_batch_sizes=tuple(range(1, 65)) + tuple(range(72, 321, 8)),
        repeats=50, warmup=5, max_seq_len=256, memory_max_num_seqs=256,
        spec_policies=("vllm-0.6.0", "adaptive"), spec_max_num_seqs=(8, 32),
        spec_num_speculative_tokens=(2, 4), spec_num_requests_per_seq=2, spec_max_tokens=32,
        spec_max_model_len=96,
        crash_map_engines="all", crash_map_max_num_seqs=range(1, 513), crash_map_k=range(0, 9),
        latency_max_num_seqs=256),
}


def get_suite(suite: str | Suite) -> Suite:
    if isinstance(suite, Suite):
        return suite
    if suite not in SUITES:
        raise GraphlabError(f"unknown suite {suite!r}; allowed: {', '.join(SUITES)}")
    return SUITES[suite]


def with_provenance(rows, prov: dict[str, str]) -> pd.DataFrame:
    """Rows as a frame with the provenance columns last; a row's own value wins over prov's.

    A sweep that already stamped its rows (measure_latency does) keeps its stamp; one that
    named the model `preset` gets it under the provenance name `model`.
    """
    frame = pd.DataFrame(list(rows) if not isinstance(rows, pd.DataFrame) else rows)
    if "preset" in frame.columns and "model" not in frame.columns:
        frame = frame.rename(columns={"preset": "model"})
    for field in FIELDS:
        if field not in frame.columns:
            frame[field] = prov[field]
    own = [c for c in frame.columns if c not in FIELDS]
    return frame[own + list(FIELDS)]


def _setup(suite: str | Suite, device: str):
    suite = get_suite(suite)
    dev = str(resolve_device(device))
    preset, dtype = suite.model_for(dev)
    return suite, dev, preset, dtype, provenance(dev, dtype=dtype, model=preset)


def latency_sweep(suite: str | Suite = "quick", device: str = "auto") -> pd.DataFrame:
    """Decode step latency per batch size, eager and graph replay (measure_latency's rows).

    Graphs are captured up to suite.latency_max_num_seqs; larger batches run eagerly in graph
    mode too (under the vllm-0.6.0 guard), which is the eager cliff.
    """
    suite, dev, preset, dtype, prov = _setup(suite, device)
    rows = measure_latency(preset, dtype, dev, suite.latency_batch_sizes, suite.repeats,
                           suite.warmup, suite.max_seq_len,
                           max_num_seqs=suite.latency_max_num_seqs)
    return with_provenance(rows, prov)


def graph_memory_sweep(suite: str | Suite = "quick", device: str = "auto") -> pd.DataFrame:
    """Memory and capture time per captured size, shared and separate pools."""
    suite, dev, preset, dtype, prov = _setup(suite, device)
    rows = measure_graph_memory(preset, dtype, dev, suite.memory_max_num_seqs, suite.max_seq_len)
    return with_provenance(rows, prov)


def spec_decode_sweep(suite: str | Suite = "quick", device: str = "auto") -> pd.DataFrame:
    """Speculative decoding per engine: tokens/s, scorer graph share, acceptance (V1 and V0)."""
    suite, dev, preset, dtype, prov = _setup(suite, device)
    runs = [(SpecDecodeConfig(max_num_seqs=seqs, num_speculative_tokens=k, engine=engine,
                              max_model_len=suite.spec_max_model_len),
             RequestLoad(kind="mixed", num_requests=suite.spec_num_requests_per_seq * seqs,
                         max_tokens=suite.spec_max_tokens))
            for seqs in suite.spec_max_num_seqs for k in suite.spec_num_speculative_tokens
            for engine in suite.spec_policies]
    return with_provenance(spec_decode_benchmark(runs, preset=preset, dtype=dtype, device=dev),
                           prov)


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
            for engine in suite.spec_policies:
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


def crash_map_sweep(suite: str | Suite = "quick", device: str = "auto") -> pd.DataFrame:
    """The crash map over the suite's (max_num_seqs, k) grid; computed, so no memory_kind."""
    suite, _, _, _, prov = _setup(suite, device)
    frame = crash_map(suite.crash_map_engines, suite.crash_map_max_num_seqs, suite.crash_map_k)
    return with_provenance(frame, prov)


_SWEEP_FUNCTIONS = {"latency": latency_sweep, "graph_memory": graph_memory_sweep,
                    "spec_decode": spec_decode_sweep, "spec_decode_steps": spec_decode_steps_sweep,
                    "crash_map": crash_map_sweep}


def export(frames: dict[str, pd.DataFrame], out) -> dict[str, Path]:
    """Write each frame to out/<name>.csv atomically (a failed write leaves no partial file)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return {name: write_csv_atomic(frame, out / f"{name}.csv") for name, frame in frames.items()}


def run_bench(suite: str | Suite = "quick", device: str = "auto", out="build/bench",
              sweeps=SWEEPS, progress: bool = True) -> dict[str, Path]:
    """Run the sweeps in order, writing each CSV as soon as its sweep finishes.

    An interrupt or error leaves the CSVs of the finished sweeps complete and no partial file.
    """
    unknown = [s for s in sweeps if s not in _SWEEP_FUNCTIONS]
    if unknown:
        raise GraphlabError(f"unknown sweeps {unknown}; allowed: {', '.join(SWEEPS)}")
    suite = get_suite(suite)
    device = str(resolve_device(device))  # bad input fails before any sweep starts
    written = {}
    bar = tqdm(sweeps, desc=f"bench {suite.name}", unit="sweep", disable=not progress)
    for name in bar:
        bar.set_postfix_str(name)
        written |= export({name: _SWEEP_FUNCTIONS[name](suite, device)}, out)
    return written


def summary(paths: dict[str, Path]) -> str:
    """One line per written CSV: name, rows, backend and (where present) memory kind."""
    lines = []
    for name, path in paths.items():
        frame = pd.read_csv(path)
        kinds = (f", memory {'/'.join(sorted(frame['memory_kind'].dropna().unique()))}"
                 if "memory_kind" in frame.columns else "")
        lines.append(f"{path}: {len(frame)} rows, {'/'.join(sorted(frame['backend'].unique()))}"
                     f" on {'/'.join(sorted(frame['device'].unique()))}{kinds}")
    return "\n".join(lines)


def replace_suite(suite: str | Suite, **changes) -> Suite:
    """A suite with some fields changed, e.g. replace_suite('quick', repeats=3)."""
    return dataclasses.replace(get_suite(suite), **changes)


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
