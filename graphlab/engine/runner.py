"""The decode runner base of the V0- and V1-shaped runners: config checks, graph capture in one
CaptureSession, dispatch, and the timed replay-or-eager step with the LM head after it
(`StepRecord` per step).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from graphlab.engine.device import Backend, resolve_backend
from graphlab.engine.graphs import NUM_WARMUPS, CaptureSession, GraphRecord
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import (
    BadInput,
    GraphlabError,
    check_choice,
    check_instance,
    check_int,
    check_sizes,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, BatchUnit
from graphlab.sizing.engines import GRAPH_POOLS, SizingPolicy, get_engine


@dataclass(frozen=True, kw_only=True)
class StepRecord:
    """How one decode step ran."""

    batch_size: int
    path: BatchPath  # V0: GRAPH | EAGER; V1: FULL | PIECEWISE | EAGER
    graph_size: int | None  # the replayed graph's size on the graph path
    time_ms: float  # on `clock`: CUDA events on a GPU, the torch thread's CPU time on a CPU
    wall_ms: float  # the same step on the wall clock, recorded beside it
    clock: str  # what time_ms was read on (CLOCKS' names, or "cuda_event")
    backend: str  # the runner's backend (graphlab.engine.device.BACKENDS)


class DecodeRunner:
    """What the V0- and V1-shaped runners share: a checked engine and config, the backend, one
    CaptureSession for all of a runner's graphs, and one timed step (graph replay or eager) with
    the LM head after. Each shape answers `dispatch(n) -> (path, size)` and runs one
    `execute_model(input_ids [B, q], positions [B, q], seq_slots [B], num_scheduled_tokens)` as
    check -> dispatch -> look up -> time -> record."""

    runner_shape: str  # the generation of vLLM's runner it models: "V0" or "V1"
    engines: tuple[str, ...]  # the engines it takes
    batch_unit: BatchUnit  # what StepRecord.batch_size counts: V0 rows, V1 tokens
    query_len: int  # tokens per request its graphs hold: V0 1, V1 1 + k

    def __init__(
        self,
        model: LlamaForCausalLM,
        engine: str | SizingPolicy,
        cfg: SizingConfig,
        *,
        backend: str | Backend = "auto",
        graph_pool: str = "shared",
        enforce_eager: bool = False,
        num_warmups: int = NUM_WARMUPS,
    ):
        check_instance("model", model, LlamaForCausalLM)
        num_warmups = check_int("num_warmups", num_warmups, 0)
        self.engine = get_engine(engine)  # a name enters here; make_runner passes a policy
        check_choice(
            f"the {self.runner_shape}-shaped runner's engine", self.engine.name, self.engines
        )
        if not isinstance(cfg, SizingConfig):
            raise BadInput(
                f"cfg must be a graphlab.sizing.config.SizingConfig, got {type(cfg).__name__}"
            )
        check_choice("graph_pool", graph_pool, GRAPH_POOLS)
        self.backend = resolve_backend(backend, model.device)
        model.kv_cache()  # a clear error now rather than at the first step
        self.model, self.cfg, self.graph_pool = model, cfg, graph_pool
        self.enforce_eager, self.num_warmups = enforce_eager, num_warmups
        self.graph_records: list[GraphRecord] = []
        self.captured = False
        self._init_sizes()

    def _init_sizes(self) -> None:
        """Each runner shape sets its capture sizes and graph limit here (V0 rows, V1 tokens)."""
        raise NotImplementedError

    def capture_model(self) -> list[GraphRecord]:
        """Capture every family's graphs, largest first, in one CaptureSession (none if eager);
        graph_records hold them in capture order."""
        if not self.enforce_eager:
            session = CaptureSession(self.model, self.backend, self.graph_pool, self.num_warmups)
            with session:
                self._capture_families(session)
            self.graph_records = session.records
        self.captured = True
        return self.graph_records

    def _capture_families(self, session: CaptureSession) -> None:
        """Each runner shape captures its families here (V0: one; V1: FULL, then PIECEWISE)."""
        raise NotImplementedError

    def dispatch(self, n: int) -> tuple[BatchPath, int | None]:
        """(path, the size looked up) of a batch of n (V0 rows, V1 tokens); (EAGER, None) off
        graphs."""
        raise NotImplementedError

    def _scheduled_tokens(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        seq_slots: torch.Tensor,
        num_scheduled_tokens=None,
    ) -> tuple[int, ...]:
        """The tokens each of a step's B requests schedules (default: all q of its row), after
        the checks every step makes; before the timer starts, as the checks read values (a GPU
        syncs)."""
        if not self.captured:
            raise GraphlabError("call capture_model() before execute_model()")
        self.model.check_inputs(input_ids, positions, seq_slots)
        num_reqs, q = input_ids.shape
        if num_scheduled_tokens is None:
            return (q,) * num_reqs
        counts = check_sizes("num_scheduled_tokens", num_scheduled_tokens, 1, q)
        if len(counts) != num_reqs:
            raise BadInput(
                f"num_scheduled_tokens must hold {num_reqs} values in [1, {q}], got {list(counts)}"
            )
        return counts

    def _record(
        self, batch_size: int, path: BatchPath, graph_size: int | None, timer: StepTimer
    ) -> StepRecord:
        return StepRecord(
            batch_size=batch_size,
            path=path,
            graph_size=graph_size,
            time_ms=timer.ms,
            wall_ms=timer.wall_ms,
            clock=timer.clock,
            backend=self.backend.name,
        )

    def _timed_step(
        self, graph, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> tuple[torch.Tensor, StepTimer]:
        """Logits [B, q, vocab] of a [B, q] batch, replayed on `graph` (None: eagerly), and the
        step's stopped StepTimer."""
        device = self.model.device
        input_ids, positions, seq_slots = (
            t.to(device, non_blocking=True) for t in (input_ids, positions, seq_slots)
        )
        timer = StepTimer(device)
        # As vLLM runs its model (gpu_model_runner.py's execute_model): no autograd bookkeeping.
        with torch.inference_mode():
            if graph is None:
                logits = self.model(input_ids, positions, seq_slots)
            else:
                hidden = graph.replay(input_ids, positions, seq_slots).view(*input_ids.shape, -1)
                logits = self.model.compute_logits(hidden)
        timer.stop()
        return logits, timer


# How far a replay's logits may lie from the eager step's, relative to the largest eager logit:
# the padded shape may take other GEMM kernels, which sum in another order. 8 eps for the half
# types; float32's rounding grows ~100-fold over reordered sums of ~10^3 terms and a dozen layers.
REPLAY_RTOL = {torch.bfloat16: 2.0**-4, torch.float16: 2.0**-7, torch.float32: 2.0**-12}


def replay_check(replayed: torch.Tensor, eager: torch.Tensor, dtype: torch.dtype) -> dict:
    """max_abs_logit_diff of a replay against the eager step on the same batch, the tolerance
    (REPLAY_RTOL[dtype] x the largest eager logit) and replay_matches_eager."""
    if replayed.shape != eager.shape:
        raise BadInput(
            f"replayed logits {tuple(replayed.shape)} and eager logits "
            f"{tuple(eager.shape)} differ in shape"
        )
    diff = (replayed.float() - eager.float()).abs().max().item()
    tolerance = REPLAY_RTOL[dtype] * eager.float().abs().max().item()
    return dict(
        max_abs_logit_diff=diff,
        logit_tolerance=tolerance,
        replay_matches_eager=bool(diff <= tolerance),
    )


# Clocks a CPU step can be read on, in seconds. The default is the calling thread's CPU time:
# with one torch thread (OMP_NUM_THREADS=1) that thread does all of the step's work, and the time
# other processes hold the core is left out (on a shared machine, wall time is their noise too).
CLOCKS = {"thread_cpu": time.thread_time, "wall": time.perf_counter}


def cpu_clock() -> str:
    """thread_cpu with one torch thread; wall when more threads share the step's work (the
    calling thread's CPU time would leave theirs out)."""
    return "thread_cpu" if torch.get_num_threads() == 1 else "wall"


class Span:
    """A span timed on the host (a whole engine step, synced before it ends): wall time on a GPU,
    whose work the host only waits for; cpu_clock() on a CPU; the wall clock beside it."""

    def __init__(self, device: torch.device):
        self.clock = "wall" if device.type == "cuda" else cpu_clock()
        self.t0, self.wall0 = CLOCKS[self.clock](), time.perf_counter()

    def ms(self) -> float:
        return (CLOCKS[self.clock]() - self.t0) * 1e3

    def wall_ms(self) -> float:
        return (time.perf_counter() - self.wall0) * 1e3


class StepTimer:
    """Milliseconds of one step since creation: CUDA events on a GPU, cpu_clock() elsewhere;
    after stop(), `ms` on `clock` and `wall_ms` on the wall clock beside it."""

    def __init__(self, device: torch.device):
        self.cuda = device.type == "cuda"
        self.clock = "cuda_event" if self.cuda else cpu_clock()
        if self.cuda:
            self.start, self.end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            self.start.record()
        else:
            self.t0 = CLOCKS[self.clock]()
        self.wall0 = time.perf_counter()

    def stop(self) -> float:
        """The step's milliseconds on `clock` (also kept as `ms`, the wall's as `wall_ms`)."""
        if self.cuda:
            self.end.record()
            self.end.synchronize()
            self.ms = self.start.elapsed_time(self.end)
        else:
            self.ms = (CLOCKS[self.clock]() - self.t0) * 1e3
        self.wall_ms = (time.perf_counter() - self.wall0) * 1e3
        return self.ms
