"""A decode model runner shaped like vLLM V1's: two graph families keyed by token count.

The runner captures the graphs `graphlab.sizing.dispatch.graph_families` names for its engine and
cudagraph_mode, into one pool: FULL uniform-decode graphs (whole requests of q = 1 + k tokens) and
PIECEWISE graphs (graphlab.engine.piecewise: the pieces between attention calls, attention eager)
at the raw capture sizes, and replays the one `GraphFamilies.dispatch` names for each step; its
StepRecord's path says "full", "piecewise" or "eager". A non-uniform step (some requests scheduled
with fewer tokens) still computes q tokens per row here, so it is dispatched at those B * q tokens.
cudagraph_mode FULL (FULL graphs for every batch at the raw sizes) is not modelled. The graphs hold
the decoder only; the LM head runs after replay on the real tokens. Padding requests write only the
model's pad slot.

The kit's speculative engine drafts on the V0-shaped runner (graphlab.specdec); which graphs vLLM
0.33's drafters capture and replay: graphlab.sizing.drafter.
"""

from __future__ import annotations

import torch

from graphlab.engine.graphs import CaptureSession, capture_full
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.piecewise import capture_piecewise
from graphlab.engine.runner import DecodeRunner, StepRecord
from graphlab.errors import BadInput, check_int
from graphlab.sizing.dispatch import BatchPath, BatchUnit, graph_families
from graphlab.sizing.engines import V1_ENGINES


class V1ModelRunner(DecodeRunner):
    """Uniform decode steps of one model (whose KV cache is allocated) under one V1 engine.

    `capture_sizes` are the token counts of its FULL uniform-decode graphs, `piecewise_sizes`
    those of its PIECEWISE graphs, and `graph_limit` the largest token count that replays a FULL
    graph. StepRecord.batch_size counts tokens, V1's dispatch unit.
    """

    runner_shape, engines, batch_unit = "V1", V1_ENGINES, BatchUnit.TOKENS

    def _init_sizes(self) -> None:
        """The engine's sizes for cfg, what to capture, and where graphs stop."""
        error = self.engine.startup_error(self.cfg)
        if error:
            raise BadInput(f"{self.engine.name} refuses to start with {self.cfg}: {error}")
        self.families = graph_families(self.engine, self.cfg)
        if self.families.mixed_family is BatchPath.FULL:
            raise BadInput(
                "cudagraph_mode FULL (FULL graphs for every batch) is not modelled "
                "by the V1-shaped runner; allowed: NONE, PIECEWISE, "
                "FULL_DECODE_ONLY, FULL_AND_PIECEWISE"
            )
        self.query_len = self.cfg.decode_query_len
        self.capture_sizes = self.families.full_sizes
        self.piecewise_sizes = self.families.by_family[BatchPath.PIECEWISE]
        self.graph_limit = self.capture_sizes[-1] if self.capture_sizes else 0
        self.graphs: dict = {}
        self.piecewise_graphs: dict = {}

    def _capture_families(self, session: CaptureSession) -> None:
        """The FULL graphs, then the PIECEWISE ones, largest first, in one session (one stream,
        one pool), as vLLM V1's capture_model captures both; each record names its family."""
        self.graphs = capture_full(session, self.capture_sizes, self.query_len, BatchPath.FULL)
        self.piecewise_graphs = capture_piecewise(session, self.piecewise_sizes)

    def dispatch(
        self, num_tokens: int, uniform_decode: bool = True
    ) -> tuple[BatchPath, int | None]:
        """(path, the size looked up) of a batch of num_tokens: (FULL | PIECEWISE, graph size)
        or (EAGER, None), by graphlab.sizing.families' rule (no CRASH: the FULL mixed family,
        the only one whose uniform batches assert, is refused by _init_sizes)."""
        if self.enforce_eager:
            return BatchPath.EAGER, None
        batches = self.families.dispatch_batches([num_tokens], uniform_decode)
        path = batches[0].path
        return path, None if path is BatchPath.EAGER else int(batches.key[0])

    def execute_model(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        seq_slots: torch.Tensor,
        num_scheduled_tokens=None,
    ) -> tuple[torch.Tensor, StepRecord]:
        """One decode step of B requests x q tokens: logits [B, q, vocab] (float32) and a
        StepRecord whose batch_size is the step's token count.

        `num_scheduled_tokens` (per request, default q each) marks requests that vLLM would
        schedule with fewer tokens (a request without drafts sends 1): the batch is then not
        uniform and counts those tokens; the rows still carry q tokens, whose extra outputs the
        caller drops, so it is dispatched at B * q tokens (PIECEWISE where captured).
        """
        counts = self._scheduled_tokens(input_ids, positions, seq_slots, num_scheduled_tokens)
        num_reqs, q = input_ids.shape
        if q != self.query_len:
            raise BadInput(
                f"input_ids must be a [B, {self.query_len}] tensor: q = 1 + k tokens per "
                f"request (uniform decode), got {tuple(input_ids.shape)}"
            )
        # uniform: the counts sum to B * q; otherwise the rows still carry B * q tokens
        path, graph_size = self.dispatch(num_reqs * q, all(c == q for c in counts))
        graph = None
        if path.replays:
            piecewise = path is BatchPath.PIECEWISE
            graph = (self.piecewise_graphs if piecewise else self.graphs)[graph_size]
        logits, timer = self._timed_step(graph, input_ids, positions, seq_slots)
        return logits, self._record(sum(counts), path, graph_size, timer)


def uniform_decode_batch(
    num_reqs: int, query_len: int, model: LlamaForCausalLM, position: int | None = None, seed=0
):
    """num_reqs requests (slots 0..num_reqs-1) of query_len tokens at position..position+q-1,
    random tokens; position None: the middle of the cache (max_seq_len // 2), where the benches
    step."""
    num_reqs, query_len = check_int("num_reqs", num_reqs, 1), check_int("query_len", query_len, 1)
    if position is None:
        position = model.max_seq_len // 2
    position = check_int("position", position, 0)
    if num_reqs > model.num_slots:
        raise BadInput(
            f"{num_reqs} requests need {num_reqs} slots; the cache has {model.num_slots}"
        )
    if position + query_len > model.max_seq_len:
        raise BadInput(
            f"positions up to {position + query_len - 1} exceed the cache's "
            f"max_seq_len={model.max_seq_len}"
        )
    generator = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, model.config.vocab_size, (num_reqs, query_len), generator=generator)
    positions = position + torch.arange(query_len).expand(num_reqs, -1)
    return (
        ids.to(model.device),
        positions.to(model.device),
        torch.arange(num_reqs, device=model.device),
    )
