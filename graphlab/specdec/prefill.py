"""The prefill of newly admitted requests: eager forwards over their prompts, as vLLM V0's
scheduler ran a prefill step (no chunked prefill)."""

from __future__ import annotations

import torch

from graphlab.engine.model import LlamaForCausalLM
from graphlab.specdec.sequence import long_tensor


def prefill(model: LlamaForCausalLM, prompts: list[list[int]], slots: list[int]) -> torch.Tensor:
    """Eager forwards over the prompts, each prompt's last logits [B, vocab].

    Prompts are right-padded within groups whose longest is at most twice the shortest: padding
    costs under 2x, and a step needs at most ~log2(max_model_len) forwards. A padded row writes
    K/V past its prompt in its own slot: harmless, since a token attends only to positions <= its
    own and every later step writes its cells before reading them.
    """
    device = model.device
    logits = torch.empty(len(prompts), model.config.vocab_size, device=device)
    order = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))
    while order:
        rows = [i for i in order if len(prompts[i]) <= 2 * len(prompts[order[0]])]
        order = order[len(rows) :]
        lengths = long_tensor([len(prompts[i]) for i in rows], device)
        longest = len(prompts[rows[-1]])
        ids = long_tensor(
            [list(prompts[i]) + [0] * (longest - len(prompts[i])) for i in rows], device
        )
        positions = torch.arange(longest, device=device).expand(len(rows), -1)
        row_slots = long_tensor([slots[i] for i in rows], device)
        model.check_inputs(ids, positions, row_slots)
        out = model(ids, positions, row_slots)
        logits[long_tensor(rows, device)] = out[torch.arange(len(rows), device=device), lengths - 1]
    return logits
