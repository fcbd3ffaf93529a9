"""graphlab.sizing.deployment: a config on the model runner and attention backend a release runs
it on, as audit and plan deploy it (the lowering itself is checked against the wheels in
test_sizing_attention.py)."""

import json

import pytest

from graphlab.cli import main
from graphlab.errors import BadInput
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.deployment import deploy
from graphlab.sizing.engines import get_engine

V033 = get_engine("vllm-0.33.0")


def test_an_a100_lowers_full_and_says_which_runner_and_backend():
    cfg = SizingConfig(4, 2, cudagraph_mode="FULL")
    found = deploy(V033, "0.33.0", cfg, tier="small")  # FlashAttention 2 reports UNIFORM_BATCH
    assert found.config.attention_cg_support == "UNIFORM_BATCH"
    assert found.config.flash_attn_version == 2 and found.config.model_runner == "v2"
    assert V033.cudagraph_mode(found.config) == "FULL_AND_PIECEWISE"
    runner, attention = found.said
    assert runner.startswith("model runner V2: vLLM 0.33.0 runs model runner V2 by default")
    assert attention.startswith("attention backend FLASH_ATTN (vLLM's default for a dense model")
    # on the h100 tier FlashAttention 3 reports ALWAYS: nothing lowered, nothing said
    assert deploy(V033, "0.33.0", cfg).said == ()
    # a support the user gives is said even where it lowers nothing
    (given,) = deploy(V033, "0.33.0", cfg, cg_support="ALWAYS").said
    assert given.endswith(
        "reports AttentionCGSupport.ALWAYS for the model, as "
        "--attention-cg-support gives, vllm/v1/attention/backends/flash_attn.py)"
    )


def test_the_command_line_deploys_as_the_function_does(capsys):
    cfg = SizingConfig(4, 2, cudagraph_mode="FULL")
    found = deploy(V033, "0.33.0", cfg, model_runner="v1", backend="FLASHMLA")
    code = main(
        ["audit", "--vllm-version", "0.33.0", "--max-num-seqs", "4", "--num-speculative-tokens",
         "2", "--cudagraph-mode", "FULL", "--model-runner", "v1", "--attention-backend",
         "flashmla", "--json"]
    )  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["cudagraph_mode"] == V033.cudagraph_mode(found.config)
    assert (data["model_runner"], data["attention_cg_support"]) == ("v1", "UNIFORM_BATCH")
    assert (
        data["attention"] == found.attention and data["model_runner_reason"] == found.model_runner
    )


@pytest.mark.parametrize(
    "option, named",
    [
        ({"model_runner": "v2"}, "--model-runner"),
        ({"backend": "FLASHINFER"}, "--attention-backend"),
        ({"cg_support": "NEVER"}, "--attention-cg-support"),
    ],
)
def test_engines_without_model_runners_refuse_them(option, named):
    with pytest.raises(BadInput, match=rf"^{named} is vLLM V1's; engine 'sglang' has none$"):
        deploy(get_engine("sglang"), "", SizingConfig(4), **option)
    assert deploy(get_engine("sglang"), "", SizingConfig(4)).config == SizingConfig(4)
