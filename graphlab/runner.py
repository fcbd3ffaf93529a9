"""A decode model runner shaped like vLLM V0's, with the capture sizing of a graphlab.sizing engine.

`execute_model` decides as V0's `ModelRunner` did: `_use_captured_graph(n)` compares n with the
engine's graph limit, the batch is padded to `engine.padded_size(n)` (V0's
`_get_graph_batch_size`), and that key is looked up in the dict `self.graph_runners`. For
vllm-0.5.5 the limit is 256 whatever was captured, so the lookup itself raises
`KeyError: <padded>` (nothing here constructs it); vllm-0.6.0's guard runs larger batches
eagerly; adaptive captures up to pad0(max_num_seqs * (1 + k)). Graphs hold the decoder only;
the LM head runs after replay or the eager step, on the n real rows.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from graphlab.errors import GraphlabError, check_choice
from graphlab.graphs import NUM_WARMUPS, GraphRecord, capture_graphs, resolve_backend
from graphlab.model import LlamaForCausalLM
from graphlab.sizing import V0_ENGINES, SizingConfig, SizingPolicy, get_engine


@dataclass(frozen=True)
class StepRecord:
    """How one decode step ran."""

    batch_size: int
    path: str               # "graph" | "eager"
    graph_size: int | None  # the replayed graph's size on the graph path
    time_ms: float          # CUDA events on a GPU, perf_counter elsewhere
    backend: str            # the runner's backend: "cuda-graph" | "cpu-emulated"


class DecodeRunner:
    """What the V0- and V1-shaped runners share: a checked engine and config, the backend, the
    capture of a list of sizes, and one timed step (graph replay or eager) with the LM head after."""

    runner_shape, engines = "V0", V0_ENGINES  # the subclass's generation and the engines it takes

    def __init__(self, model: LlamaForCausalLM, engine: str | SizingPolicy, cfg: SizingConfig,
                 backend: str = "auto", graph_pool: str = "shared", enforce_eager: bool = False,
                 num_warmups: int = NUM_WARMUPS):
        self.engine = get_engine(engine)
        check_choice(f"the {self.runner_shape}-shaped runner's engine", self.engine.name,
                     self.engines)
        if not isinstance(cfg, SizingConfig):
            raise GraphlabError(f"cfg must be a graphlab.sizing.SizingConfig, "
                                f"got {type(cfg).__name__}")
        self.backend = resolve_backend(model, backend, graph_pool)
        model.kv_cache()  # a clear error now rather than at the first step
        self.model, self.cfg, self.graph_pool = model, cfg, graph_pool
        self.enforce_eager, self.num_warmups = enforce_eager, num_warmups
        self.graph_records: list[GraphRecord] = []
        self.captured = False

    def _capture(self, sizes, query_len: int = 1) -> dict:
        """{size: CapturedGraph} for every size, captured largest first (none if eager)."""
        graphs = {}
        if not self.enforce_eager:
            graphs, self.graph_records = capture_graphs(
                self.model, sizes, self.backend, self.graph_pool, self.num_warmups,
                query_len=query_len)
        self.captured = True
        return graphs

    def timed_step(self, graph, input_ids: torch.Tensor, positions: torch.Tensor,
              seq_slots: torch.Tensor) -> tuple[torch.Tensor, float]:
        """Logits [B, q, vocab] of a [B, q] batch, replayed on `graph` (None: eagerly), and the
        step's milliseconds."""
        device = self.model.device
        input_ids, positions, seq_slots = (t.to(device, non_blocking=True)
                                           for t in (input_ids, positions, seq_slots))
        timer = StepTimer(device)
        with torch.no_grad():
            if graph is None:
                logits = self.model(input_ids, positions, seq_slots)
            else:
                hidden = graph.replay(input_ids, positions, seq_slots).view(*input_ids.shape, -1)
                logits = self.model.compute_logits(hidden)
        return logits, timer.stop()


class ModelRunner(DecodeRunner):
    """Decode steps of one model (whose KV cache is allocated) under one V0 sizing engine."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.capture_sizes = self.engine.capture_sizes(self.cfg)
        self.graph_limit = self.engine.graph_limit(self.cfg, self.capture_sizes)
        self.graph_runners: dict = {}

    def capture_model(self) -> list[GraphRecord]:
        """Capture a graph per size of engine.capture_sizes(cfg), largest first (none if eager)."""
        self.graph_runners = self._capture(self.capture_sizes)
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
        graph = None
        if self._use_captured_graph(n):
            padded = self.engine.padded_size(n, self.capture_sizes)  # V0's _get_graph_batch_size
            graph = self.graph_runners[padded]  # the traceback line notebook 02 reads
        logits, ms = self.timed_step(graph, input_ids[:, None], positions[:, None], seq_slots)
        record = StepRecord(n, "eager" if graph is None else "graph",
                            None if graph is None else graph.size, ms, self.backend)
        return logits[:, 0], record


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

