"""A decode model runner shaped like vLLM V0's, with the capture sizing of a graphlab.sizing engine.

`execute_model` decides as V0's `ModelRunner` did: `_use_captured_graph(n)` compares n with the
engine's graph limit, the batch is padded to `engine.padded_size(n)` (V0's
`_get_graph_batch_size`), and that key is looked up in the dict `self.graph_runners`. For
vllm-0.5.5 the limit is 256 whatever was captured, so the lookup itself raises
`KeyError: <padded>` (nothing here constructs it); vllm-0.6.0's guard runs larger batches
eagerly; adaptive captures up to pad0(max_num_seqs * (1 + k)). Graphs hold the decoder only;
the LM head runs after replay or the eager step, on the n real rows.

Also here: the two sweeps of the GPU check, `measure_latency` and `measure_graph_memory`, each
returning a list of dicts (one row per measurement).
"""

from __future__ import annotations

import gc
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch

from graphlab.errors import GraphlabError, check_choice
from graphlab.graphs import GRAPH_POOLS, NUM_WARMUPS, GraphRecord, capture_graphs, resolve_backend
from graphlab.memory import predict_pool_bytes
from graphlab.model import LlamaForCausalLM, build_model
from graphlab.provenance import provenance, resolve_device
from graphlab.sizing import V0_POLICIES, SizingConfig, SizingPolicy, get_policy

# H200 HBM copy bandwidth measured for this project (DESIGN.md §6); the datasheet says 4.8e12.
HBM_BYTES_PER_S = 4.3e12


@dataclass(frozen=True)
class StepRecord:
    """How one decode step ran."""

    batch_size: int
    path: str               # "graph" | "eager"
    graph_size: int | None  # the replayed graph's size on the graph path
    time_ms: float          # CUDA events on a GPU, perf_counter elsewhere
    backend: str            # the runner's backend: "cuda-graph" | "cpu-emulated"


class ModelRunner:
    """Decode steps of one model (whose KV cache is allocated) under one V0 sizing engine."""

    def __init__(self, model: LlamaForCausalLM, engine: str | SizingPolicy, cfg: SizingConfig,
                 backend: str = "auto", graph_pool: str = "shared", enforce_eager: bool = False,
                 num_warmups: int = NUM_WARMUPS):
        self.engine = get_policy(engine)
        check_choice("the V0-shaped runner's engine", self.engine.name, V0_POLICIES)
        if not isinstance(cfg, SizingConfig):
            raise GraphlabError(f"cfg must be a graphlab.sizing.SizingConfig, "
                                f"got {type(cfg).__name__}")
        self.backend = resolve_backend(model, backend, graph_pool)
        model.kv_cache()  # a clear error now rather than at the first step
        self.model, self.cfg, self.graph_pool = model, cfg, graph_pool
        self.enforce_eager, self.num_warmups = enforce_eager, num_warmups
        self.capture_sizes = self.engine.capture_sizes(cfg)
        self.graph_limit = self.engine.graph_limit(cfg, self.capture_sizes)
        self.graph_runners: dict = {}
        self.graph_records: list[GraphRecord] = []
        self.captured = False

    def capture_model(self) -> list[GraphRecord]:
        """Capture a graph per size of engine.capture_sizes(cfg), largest first (none if eager)."""
        if not self.enforce_eager:
            self.graph_runners, self.graph_records = capture_graphs(
                self.model, self.capture_sizes, self.backend, self.graph_pool, self.num_warmups)
        self.captured = True
        return self.graph_records

    def _use_captured_graph(self, batch_size: int) -> bool:
        return not self.enforce_eager and batch_size <= self.graph_limit

    def execute_model(self, input_ids: torch.Tensor, positions: torch.Tensor,
                      seq_slots: torch.Tensor) -> tuple[torch.Tensor, StepRecord]:
        """Decode one token per row: logits [n, vocab] (float32) and how the step ran.

        Rows may share a sequence slot (the batch-expansion scorer's k+1 rows do) as long as no
        two rows write the same (seq_slot, position) cache cell; there is no other limit on n.
        Inputs may live on any device; values are checked first (GraphlabError), then the graph
        lookup may raise the engine's own KeyError.
        """
        if not self.captured:
            raise GraphlabError("call capture_model() before execute_model()")
        for name, t in (("input_ids", input_ids), ("positions", positions),
                        ("seq_slots", seq_slots)):
            if not isinstance(t, torch.Tensor) or t.dim() != 1:
                raise GraphlabError(f"{name} must be a 1-D tensor (one decode token per row)")
        self.model.check_inputs(input_ids[:, None], positions[:, None], seq_slots)
        n = input_ids.shape[0]
        device = self.model.device
        input_ids, positions, seq_slots = (t.to(device, non_blocking=True)
                                           for t in (input_ids, positions, seq_slots))
        timer = StepTimer(device)
        with torch.no_grad():
            if self._use_captured_graph(n):
                padded = self.engine.padded_size(n, self.capture_sizes)
                graph_runner = self.graph_runners[padded]
                hidden = graph_runner.replay(input_ids, positions, seq_slots)
                path, graph_size = "graph", padded
            else:
                hidden = self.model.hidden_states(input_ids[:, None], positions[:, None],
                                                  seq_slots)[:, 0]
                path, graph_size = "eager", None
            logits = self.model.compute_logits(hidden)
        return logits, StepRecord(n, path, graph_size, timer.stop(), self.backend)


class StepTimer:
    """Milliseconds of device work since creation: CUDA events on a GPU, perf_counter elsewhere."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.start, self.end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            self.start.record()
        else:
            self.t0 = time.perf_counter()

    def stop(self) -> float:
        if not self.cuda:
            return (time.perf_counter() - self.t0) * 1e3
        self.end.record()
        self.end.synchronize()
        return self.start.elapsed_time(self.end)


# ---- sweeps for the GPU check (and the CPU dry run) ----------------------------------------

def decode_batch(n: int, model: LlamaForCausalLM, position: int, seed: int = 0):
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


def measure_latency(preset: str = "100m", dtype: str = "bfloat16", device: str = "auto",
                    batch_sizes=(1, 2, 4, 8, 16, 32, 64, 128, 256), repeats: int = 50,
                    warmup: int = 5, max_seq_len: int = 256, policy: str = "vllm-0.6.0",
                    seed: int = 0, max_num_seqs: int | None = None) -> list[dict]:
    """Step latency per batch size, eager and graph replay, one row per (batch size, mode).

    Graphs are captured for policy.capture_sizes(max_num_seqs) (default: max(batch_sizes)), so
    batch sizes between captured ones are padded, and batch sizes past the graph limit run
    eagerly in graph mode too: under vllm-0.6.0's guard, sweeping beyond max_num_seqs shows the
    eager cliff. The KV cache has max(batch_sizes) slots, so every batch fits; every row is one
    slot per sequence at position max_seq_len // 2.
    """
    dev = resolve_device(device)
    model = build_model(preset, seed=seed, dtype=dtype, device=dev)
    model.allocate_kv_cache(max(batch_sizes), max_seq_len)
    cfg = SizingConfig(max_num_seqs=max(batch_sizes) if max_num_seqs is None else max_num_seqs)
    runners = {"eager": ModelRunner(model, policy, cfg, enforce_eager=True),
               "graph": ModelRunner(model, policy, cfg)}
    for runner in runners.values():
        runner.capture_model()
    weights = weight_bytes(model)
    floor_ms = weights / HBM_BYTES_PER_S * 1e3
    origin = provenance(dev, dtype=dtype, model=preset)
    rows = []
    for n in batch_sizes:
        batch = decode_batch(n, model, max_seq_len // 2, seed)
        for mode, runner in runners.items():
            for _ in range(warmup):
                runner.execute_model(*batch)
            steps = [runner.execute_model(*batch)[1] for _ in range(repeats)]
            times = np.array([s.time_ms for s in steps])
            rows.append(dict(
                origin, backend=runner.backend, engine=runner.policy.name, mode=mode,
                max_num_seqs=cfg.max_num_seqs, batch_size=n, path=steps[0].path,
                graph_size=steps[0].graph_size,
                median_ms=float(np.median(times)), p90_ms=float(np.percentile(times, 90)),
                min_ms=float(times.min()), repeats=repeats, warmup=warmup,
                max_seq_len=max_seq_len, weight_bytes=weights,
                bandwidth_floor_ms=floor_ms))
    return rows


def measure_graph_memory(preset: str = "100m", dtype: str = "bfloat16", device: str = "auto",
                         max_num_seqs: int = 256, max_seq_len: int = 256,
                         policy: str = "vllm-0.6.0", graph_pools=GRAPH_POOLS,
                         seed: int = 0) -> list[dict]:
    """Memory and time of every capture, per pool mode, in capture order (largest first).

    Cumulative columns run in that order: cumulative_bytes is the running total of memory_bytes,
    i.e. what all graphs captured so far hold (measured, or predicted when emulated);
    cumulative_predicted_bytes is what the prediction says they hold on any backend (running max
    of predicted_bytes for a shared pool, running sum for separate pools).
    """
    dev = resolve_device(device)
    model = build_model(preset, seed=seed, dtype=dtype, device=dev)
    model.allocate_kv_cache(max_num_seqs, max_seq_len)
    cfg = SizingConfig(max_num_seqs=max_num_seqs)
    origin = provenance(dev, dtype=dtype, model=preset)
    rows = []
    for graph_pool in graph_pools:
        runner = ModelRunner(model, policy, cfg, graph_pool=graph_pool)
        records = runner.capture_model()
        for order, record in enumerate(records):
            done = records[:order + 1]
            fields = asdict(record)
            capture_size = fields.pop("size")
            rows.append(dict(
                origin, engine=runner.policy.name, max_num_seqs=max_num_seqs,
                max_seq_len=max_seq_len, capture_order=order, capture_size=capture_size,
                **fields, cumulative_bytes=sum(r.memory_bytes for r in done),
                cumulative_pool_bytes=(None if record.pool_bytes is None
                                       else sum(r.pool_bytes for r in done)),
                cumulative_predicted_bytes=predict_pool_bytes(
                    [r.predicted_bytes for r in done], graph_pool)))
        del runner, records
        gc.collect()
        if dev.type == "cuda":
            torch.cuda.empty_cache()  # the next pool mode starts from released graphs
    return rows


# The GPU check's targets (DESIGN.md §6): name -> (threshold, whether the value must reach it
# from above (True: value >= threshold) or stay under it).
TARGETS = {
    "replay speedup at batch 1 (eager / graph)": (4.0, True),
    "graph step at batch 1 / weight-bandwidth floor": (1.6, False),
    "slowest capture (ms)": (50.0, False),
    "shared pool / largest graph's own pool": (1.25, False),
}


def summarize_targets(latency: list[dict], memory: list[dict], small: str,
                      large: str) -> list[dict]:
    """One row per target, from measure_latency and measure_graph_memory rows.

    `small` names the preset of the launch-bound targets (100m on the GPU check), `large` the
    one held against the weight-bandwidth floor (1b); the shared-pool ratio is given for both.
    Memory compares pool_bytes where measured, the predictions otherwise (memory_kind says which).
    """
    def at_batch_1(preset, mode):
        return next(r for r in latency
                    if r["model"] == preset and r["mode"] == mode and r["batch_size"] == 1)

    def captures(preset, pool):
        return [r for r in memory if r["model"] == preset and r["graph_pool"] == pool]

    def pool_ratio(preset):
        shared, separate = captures(preset, "shared"), captures(preset, "separate")
        kind = shared[0]["memory_kind"]
        key = "pool_bytes" if kind == "measured" else "memory_bytes"
        largest = max(separate, key=lambda r: r["capture_size"])
        return (preset, sum(r[key] for r in shared) / largest[key], shared[0]["backend"], kind)

    graph_1, eager_1, large_1 = (at_batch_1(small, "graph"), at_batch_1(small, "eager"),
                                 at_batch_1(large, "graph"))
    small_captures = captures(small, "shared")
    values = {
        "replay speedup at batch 1 (eager / graph)": [
            (small, eager_1["median_ms"] / graph_1["median_ms"], graph_1["backend"], None)],
        "graph step at batch 1 / weight-bandwidth floor": [
            (large, large_1["median_ms"] / large_1["bandwidth_floor_ms"], large_1["backend"],
             None)],
        "slowest capture (ms)": [
            (small, max(r["capture_ms"] for r in small_captures), small_captures[0]["backend"],
             None)],
        "shared pool / largest graph's own pool": [
            pool_ratio(preset) for preset in dict.fromkeys((small, large))],
    }
    rows = []
    for name, results in values.items():
        threshold, at_least = TARGETS[name]
        for preset, value, backend, kind in results:
            met = value >= threshold if at_least else value <= threshold
            rows.append(dict(target=name, model=preset, value=value, threshold=threshold,
                             met=met, backend=backend, memory_kind=kind))
    return rows
