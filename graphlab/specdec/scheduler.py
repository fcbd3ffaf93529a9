"""The speculative engine's scheduler: which requests run, in which KV cache slot, until when.

As nano-vllm's Scheduler (nanovllm/engine/scheduler.py): a deque of waiting requests, in arrival
order, and the running sequences; here also a deque of free cache slots. A step either admits
(the engine then prefills the admitted sequences, as vLLM V0's scheduler did without chunked
prefill) or decodes every running sequence; after it, finished sequences retire and free their
slots.
"""

from __future__ import annotations

from collections import deque

from graphlab.specdec.requests import Request
from graphlab.specdec.sequence import RunningSequence


class Scheduler:
    """Admission by arrival step and free slot, and retirement at max_tokens (no EOS)."""

    def __init__(self, requests: list[Request], max_num_seqs: int):
        self.requests = requests
        self.waiting = deque(
            sorted(range(len(requests)), key=lambda i: (requests[i].arrival_step, i))
        )
        self.free_slots = deque(range(max_num_seqs))
        self.running: list[RunningSequence] = []
        self.done: list[RunningSequence | None] = [None] * len(requests)

    def is_finished(self) -> bool:
        return not self.waiting and not self.running

    def schedule(self, step: int) -> list[RunningSequence]:
        """Admit, in arrival order, the waiting requests that have arrived by `step` while a slot
        is free; the admitted sequences (to prefill) join the running ones."""
        admitted = []
        while (
            self.waiting and self.free_slots and self.requests[self.waiting[0]].arrival_step <= step
        ):
            i = self.waiting.popleft()
            admitted.append(RunningSequence(i, self.requests[i], self.free_slots.popleft()))
        self.running += admitted
        return admitted

    def postprocess(self) -> None:
        """Retire the finished sequences: their slots are free again, their tokens kept."""
        for seq in self.running:
            if seq.finished:
                self.free_slots.append(seq.slot)
                self.done[seq.index] = seq
        self.running = [seq for seq in self.running if not seq.finished]

    def outputs(self) -> list[list[int]]:
        """The generated token ids of every request, in request order."""
        return [s.token_ids[len(s.request.prompt_token_ids) :] for s in self.done]
