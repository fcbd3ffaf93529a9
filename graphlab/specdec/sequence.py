"""A running request of the speculative engine, and the tensors a step builds from sequences."""

from __future__ import annotations

import torch

from graphlab.specdec.requests import Request


class RunningSequence:
    """A running request: its tokens, cache slot and how far the draft's cache is filled."""

    def __init__(self, index: int, request: Request, slot: int):
        self.index, self.request, self.slot = index, request, slot
        self.token_ids = list(request.prompt_token_ids)
        self.num_generated = 0
        self.draft_len = 0  # positions 0..draft_len-1 of the draft's cache hold this sequence

    @property
    def seq_len(self) -> int:
        return len(self.token_ids)

    @property
    def finished(self) -> bool:
        return self.num_generated >= self.request.max_tokens

    def append(self, tokens: list[int]) -> int:
        room = self.request.max_tokens - self.num_generated
        tokens = tokens[:room]
        self.token_ids += tokens
        self.num_generated += len(tokens)
        return len(tokens)


def long_tensor(values, device) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.long, device=device)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
