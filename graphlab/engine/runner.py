"""The decode runner base of the V0- and V1-shaped runners: config checks, graph capture into
one pool, and the timed replay-or-eager step with the LM head after it (`StepRecord` per step).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from graphlab.engine.graphs import (
    NUM_WARMUPS,
    GraphRecord,
    capture_graphs,
    resolve_backend,
)
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import GraphlabError, check_choice
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import V0_ENGINES, SizingPolicy, get_engine


@dataclass(frozen=True)
class StepRecord:
    """How one decode step ran."""

    batch_size: int
    path: str  # V0: "graph" | "eager"; V1: "full" | "piecewise" | "eager"
    graph_size: int | None  # the replayed graph's size on the graph path
    time_ms: float  # CUDA events on a GPU, perf_counter elsewhere
    backend: str  # the runner's backend (graphlab.engine.device.BACKENDS)


class DecodeRunner:
    """What the V0- and V1-shaped runners share: a checked engine and config, the backend, the
    capture of a list of sizes, and one timed step (graph replay or eager) with the LM head
    after."""

    runner_shape, engines = "V0", V0_ENGINES  # the subclass's generation and the engines it takes
    batch_unit = "rows"  # what StepRecord.batch_size counts: V0 rows, V1 tokens

    def __init__(
        self,
        model: LlamaForCausalLM,
        engine: str | SizingPolicy,
        cfg: SizingConfig,
        *,
        backend: str = "auto",
        graph_pool: str = "shared",
        enforce_eager: bool = False,
        num_warmups: int = NUM_WARMUPS,
    ):
        self.engine = get_engine(engine)
        check_choice(
            f"the {self.runner_shape}-shaped runner's engine", self.engine.name, self.engines
        )
        if not isinstance(cfg, SizingConfig):
            raise GraphlabError(
                f"cfg must be a graphlab.sizing.config.SizingConfig, got {type(cfg).__name__}"
            )
        self.backend = resolve_backend(model, backend, graph_pool)
        model.kv_cache()  # a clear error now rather than at the first step
        self.model, self.cfg, self.graph_pool = model, cfg, graph_pool
        self.enforce_eager, self.num_warmups = enforce_eager, num_warmups
        self.graph_records: list[GraphRecord] = []
        self.captured = False
        self._init_sizes()

    def _init_sizes(self) -> None:
        """Each runner shape sets its capture sizes and graph limit here (V0 rows, V1 tokens)."""
        raise NotImplementedError

    def _capture(self, sizes, query_len: int = 1, pool=None) -> dict:
        """{size: CapturedGraph} for every size, captured largest first (none if eager)."""
        graphs = {}
        if not self.enforce_eager:
            graphs, self.graph_records = capture_graphs(
                self.model,
                sizes,
                self.backend,
                self.graph_pool,
                self.num_warmups,
                query_len=query_len,
                pool=pool,
            )
        self.captured = True
        return graphs

    def timed_step(
        self, graph, input_ids: torch.Tensor, positions: torch.Tensor, seq_slots: torch.Tensor
    ) -> tuple[torch.Tensor, float]:
        """Logits [B, q, vocab] of a [B, q] batch, replayed on `graph` (None: eagerly), and the
        step's milliseconds."""
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
        return logits, timer.stop()


# How far a replay's logits may lie from the eager step's, relative to the largest eager logit:
# the padded shape may take other GEMM kernels, which sum in another order. 8 eps for the half
# types; float32's rounding grows ~100-fold over reordered sums of ~10^3 terms and a dozen layers.
REPLAY_RTOL = {torch.bfloat16: 2.0**-4, torch.float16: 2.0**-7, torch.float32: 2.0**-12}


def replay_check(replayed: torch.Tensor, eager: torch.Tensor, dtype: torch.dtype) -> dict:
    """max_abs_logit_diff of a replay against the eager step on the same batch, the tolerance
    (REPLAY_RTOL[dtype] x the largest eager logit) and replay_matches_eager."""
    if replayed.shape != eager.shape:
        raise GraphlabError(
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
