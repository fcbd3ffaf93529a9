"""A decode model runner shaped like vLLM V0's, with the capture sizing of a graphlab.sizing.engines
engine.

`execute_model` decides as V0's `ModelRunner` did: `_use_captured_graph(n)` compares n with the
engine's graph limit, the batch is padded to `engine.padded_size(n)` (V0's
`_get_graph_batch_size`), and that key is looked up in the dict `self.graph_runners`. For
vllm-0.5.5 the limit is 256 whatever was captured, so the lookup itself raises
`KeyError: <padded>` (nothing here constructs it); vllm-0.6.0's guard runs larger batches
eagerly; adaptive captures up to pad0(max_num_seqs * (1 + k)). Graphs hold the decoder only;
the LM head runs after replay or the eager step, on the n real rows. V0's graphs hold one token per
row (q = 1); rows of more tokens run eagerly, as vLLM 0.6.3's MQAScorer ran (enforce_eager only).
"""

from __future__ import annotations

import torch

from graphlab.engine.graphs import CaptureSession, capture_full
from graphlab.engine.runner import DecodeRunner, StepRecord
from graphlab.sizing.dispatch import BatchPath, BatchUnit
from graphlab.sizing.engines import V0_ENGINES


class V0ModelRunner(DecodeRunner):
    """Decode steps of one model (whose KV cache is allocated) under one V0 sizing engine."""

    runner_shape, engines, batch_unit, query_len = "V0", V0_ENGINES, BatchUnit.ROWS, 1

    def _init_sizes(self) -> None:
        """The engine's sizes for cfg, what to capture, and where graphs stop."""
        self.capture_sizes = self.engine.capture_sizes(self.cfg)
        self.graph_limit = self.engine.graph_limit(self.cfg, self.capture_sizes)
        self.graph_runners: dict = {}

    def _capture_families(self, session: CaptureSession) -> None:
        """A graph per size of engine.capture_sizes(cfg), largest first."""
        self.graph_runners = capture_full(session, self.capture_sizes)

    def _use_captured_graph(self, batch_size: int) -> bool:
        return not self.enforce_eager and batch_size <= self.graph_limit

    def dispatch(self, batch_size: int) -> tuple[BatchPath, int | None]:
        """(GRAPH, padded size) when V0's _use_captured_graph(n) holds, else (EAGER, None);
        the padded size (V0's _get_graph_batch_size) need not have been captured: execute_model
        looks it up in graph_runners, where vllm-0.5.5's KeyError comes from."""
        if not self._use_captured_graph(batch_size):
            return BatchPath.EAGER, None
        return BatchPath.GRAPH, self.engine.padded_size(batch_size, self.capture_sizes)

    def execute_model(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        seq_slots: torch.Tensor,
        num_scheduled_tokens=None,
    ) -> tuple[torch.Tensor, StepRecord]:
        """One decode step of n rows of q tokens: logits [n, q, vocab] (float32) and how the step
        ran, its batch_size counting rows. At q = 1 the engine picks graph, eager or its
        KeyError; rows of q > 1 tokens run eagerly (num_scheduled_tokens changes nothing there).

        Rows may share a sequence slot (the batch-expansion scorer's k+1 rows do) as long as no
        two rows write the same (seq_slot, position) cache cell; there is no other limit on n.
        Inputs may live on any device; values are checked first (GraphlabError), then the graph
        lookup may raise the engine's own KeyError.
        """
        self._scheduled_tokens(input_ids, positions, seq_slots, num_scheduled_tokens)
        n, q = input_ids.shape
        path, padded = self.dispatch(n) if q == self.query_len else (BatchPath.EAGER, None)
        graph = None
        if path is BatchPath.GRAPH:
            graph = self.graph_runners[padded]  # an uncaptured padded size: V0's KeyError
        logits, timer = self._timed_step(graph, input_ids, positions, seq_slots)
        return logits, self._record(n, path, padded, timer)
