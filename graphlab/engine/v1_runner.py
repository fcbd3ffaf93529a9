"""A decode model runner shaped like vLLM V1's: CUDA graphs keyed by token count.

The runner captures the FULL uniform-decode graphs of `graphlab.sizing.dispatch` and replays the
one `decode_dispatch` names for each step. Where vLLM would fall back to PIECEWISE graphs (a
non-uniform batch, or a uniform one above the FULL graphs but within the capture sizes) this
runner has no piecewise graphs: the step runs eagerly, and its StepRecord says "eager". The graphs
hold the decoder only; the LM head runs after replay on the real tokens. Padding requests write
only the model's pad slot.
"""

from __future__ import annotations

import torch

from graphlab.engine.graphs import NUM_WARMUPS, GraphRecord
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.runner import DecodeRunner, StepRecord
from graphlab.errors import GraphlabError
from graphlab.sizing.dispatch import decode_dispatch, decode_graph_sizes
from graphlab.sizing.engines import V1_ENGINES, SizingConfig, SizingPolicy


class V1ModelRunner(DecodeRunner):
    """Uniform decode steps of one model (whose KV cache is allocated) under one V1 engine.

    `capture_sizes` are the token counts it captures graphs for (`decode_graph_sizes`),
    `engine_capture_sizes` the engine's configured list they come from, `graph_limit` the largest
    token count that replays a graph. StepRecord.batch_size counts tokens, V1's dispatch unit.
    """

    runner_shape, engines, batch_unit = "V1", V1_ENGINES, "tokens"

    def __init__(self, model: LlamaForCausalLM, engine: str | SizingPolicy, cfg: SizingConfig, *,
                 backend: str = "auto", graph_pool: str = "shared", enforce_eager: bool = False,
                 num_warmups: int = NUM_WARMUPS):
        super().__init__(model, engine, cfg, backend=backend, graph_pool=graph_pool,
                         enforce_eager=enforce_eager, num_warmups=num_warmups)
        error = self.engine.startup_error(self.cfg)
        if error:
            raise GraphlabError(f"{self.engine.name} refuses to start with {self.cfg}: {error}")
        self.query_len = self.cfg.decode_query_len
        self.engine_capture_sizes = self.engine.capture_sizes(self.cfg)
        self.capture_sizes = decode_graph_sizes(self.engine, self.cfg)
        self.graph_limit = self.capture_sizes[-1] if self.capture_sizes else 0
        self.graphs: dict = {}

    def capture_model(self) -> list[GraphRecord]:
        """Capture a graph per token count of capture_sizes, largest first (none if eager)."""
        self.graphs = self._capture(self.capture_sizes, self.query_len)
        return self.graph_records

    def dispatch(self, num_tokens: int, uniform_decode: bool = True) -> int | None:
        """The graph size a batch of num_tokens replays, or None (eager): the smallest captured
        size >= num_tokens for a uniform decode batch within the graph limit."""
        if self.enforce_eager or not uniform_decode:
            return None
        return decode_dispatch(self.capture_sizes, num_tokens)

    def execute_model(self, input_ids: torch.Tensor, positions: torch.Tensor,
                      seq_slots: torch.Tensor, num_scheduled_tokens=None):
        """One decode step of B requests x q tokens: logits [B, q, vocab] (float32) and a
        StepRecord whose batch_size is the step's token count.

        `num_scheduled_tokens` (per request, default q each) marks requests that vLLM would
        schedule with fewer tokens (a request without drafts sends 1): the batch is then not
        uniform, runs eagerly, and counts those tokens; the rows still carry q tokens, whose
        extra outputs the caller drops.
        """
        if not self.captured:
            raise GraphlabError("call capture_model() before execute_model()")
        q = self.query_len
        for name, t in (("input_ids", input_ids), ("positions", positions)):
            if not isinstance(t, torch.Tensor) or t.dim() != 2 or t.shape[1] != q:
                raise GraphlabError(f"{name} must be a [B, {q}] tensor: q = 1 + k tokens per "
                                    f"request (uniform decode)")
        self.model.check_inputs(input_ids, positions, seq_slots)
        num_reqs = input_ids.shape[0]
        num_tokens = num_reqs * q
        uniform = True
        if num_scheduled_tokens is not None:
            counts = [int(c) for c in num_scheduled_tokens]
            if len(counts) != num_reqs or not all(1 <= c <= q for c in counts):
                raise GraphlabError(f"num_scheduled_tokens must hold {num_reqs} values in "
                                    f"[1, {q}], got {counts}")
            num_tokens, uniform = sum(counts), all(c == q for c in counts)
        graph_size = self.dispatch(num_tokens, uniform)
        graph = None if graph_size is None else self.graphs[graph_size]
        logits, ms = self.timed_step(graph, input_ids, positions, seq_slots)
        path = "eager" if graph is None else "graph"
        return logits, StepRecord(num_tokens, path, graph_size, ms, self.backend)


def uniform_decode_batch(num_reqs: int, query_len: int, model: LlamaForCausalLM, position: int,
                         seed: int = 0):
    """num_reqs requests (slots 0..num_reqs-1) of query_len tokens at position..position+q-1."""
    if num_reqs > model.num_slots:
        raise GraphlabError(f"{num_reqs} requests need {num_reqs} slots; the cache has "
                            f"{model.num_slots}")
    if position + query_len > model.max_seq_len:
        raise GraphlabError(f"positions up to {position + query_len - 1} exceed the cache's "
                            f"max_seq_len={model.max_seq_len}")
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (num_reqs, query_len), generator=generator)
    positions = position + torch.arange(query_len).expand(num_reqs, -1)
    return (ids.to(model.device), positions.to(model.device),
            torch.arange(num_reqs, device=model.device))
