"""The API says no like the command line: a wrong type or value at a public entry point raises one
BadInput naming the argument, never a raw AttributeError or TypeError from deep inside."""

import argparse
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch

import graphlab as g
from graphlab.bench.costs import eager_ratio, guard_cost
from graphlab.bench.export import export_csvs, write_csv_atomic
from graphlab.bench.measurements import capture_cost, latency_rows
from graphlab.bench.provenance import with_provenance
from graphlab.bench.sampling import Timing
from graphlab.cli import main
from graphlab.cli.arguments import positive_float
from graphlab.engine.device import BACKEND_VALUES
from graphlab.engine.graphs import capture_graphs
from graphlab.engine.runner import REPLAY_RTOL, replay_check
from graphlab.engine.v1_runner import uniform_decode_batch
from graphlab.errors import BadInput, GraphlabError, UnreadableInput, check_float, check_sizes
from graphlab.sizing.audit import audit_table
from graphlab.sizing.batches import batch_expansion_sizes, reachable_batch_sizes
from graphlab.sizing.dispatch import decode_graph_sizes, verify_batches
from graphlab.sizing.log_reader import read_vllm_log
from graphlab.sizing.planner.inputs import read_graph_memory, read_latency

CFG = g.SizingConfig(8, 2)
EMULATED = BACKEND_VALUES["cpu-emulated"]
FRAME = pd.DataFrame({"a": [1]})

SIZING_CALLS = {
    "plan max_capture_size=0": (
        lambda: g.plan("vllm-0.33.0", CFG, max_capture_size=0),
        "max_capture_size",
    ),
    "plan max_capture_size=12.5": (
        lambda: g.plan("vllm-0.33.0", CFG, max_capture_size=12.5),
        "max_capture_size",
    ),
    "plan max_capture_size='8'": (
        lambda: g.plan("vllm-0.33.0", CFG, max_capture_size="8"),
        "max_capture_size",
    ),
    "plan cfg=None": (lambda: g.plan("vllm-0.33.0", None), "cfg must be a SizingConfig"),
    "plan cfg=dict": (
        lambda: g.plan("vllm-0.33.0", {"max_num_seqs": 8}),
        "cfg must be a SizingConfig",
    ),
    "plan budget=None": (
        lambda: g.plan("vllm-0.33.0", CFG, budget=None),
        "budget must be a Budget",
    ),
    "plan workload=list": (lambda: g.plan("vllm-0.33.0", CFG, workload=[1, 2]), "workload"),
    "plan latency strings": (lambda: g.plan("vllm-0.33.0", CFG, latency=("1", "2")), "latency"),
    "plan memory=str": (lambda: g.plan("vllm-0.33.0", CFG, memory="x"), "memory"),
    "audit cfg=None": (lambda: g.audit("vllm-0.5.5", None), "cfg must be a SizingConfig"),
    "audit cfg=dict": (lambda: g.audit("vllm-0.5.5", {"max_num_seqs": 8}), "cfg must be"),
    "audit_table cfg=None": (lambda: audit_table(["vllm-0.5.5"], None), "cfg must be"),
    "crash_map sizes iterator": (
        lambda: g.crash_map("vllm-0.5.5", iter([1, 2]), range(2)),
        "max_num_seqs_range",
    ),
    "crash_map k as text": (lambda: g.crash_map("vllm-0.5.5", range(1, 3), "01"), "k_range"),
    "decode_graph_sizes cfg=None": (
        lambda: decode_graph_sizes("vllm-0.33.0", None),
        "cfg must be",
    ),
    "reachable_batch_sizes cfg=None": (
        lambda: reachable_batch_sizes("vllm-0.6.0", None),
        "cfg must be",
    ),
    "batch_expansion_sizes cfg=None": (lambda: batch_expansion_sizes(None), "cfg must be"),
    "capture sizes dict": (
        lambda: g.SizingConfig(8, cudagraph_capture_sizes={8: 1}),
        "cudagraph_capture_sizes",
    ),
    "capture sizes iterator": (
        lambda: g.SizingConfig(8, cudagraph_capture_sizes=iter([8])),
        "cudagraph_capture_sizes",
    ),
    "capture sizes empty": (lambda: g.SizingConfig(8, cudagraph_capture_sizes=[]), "non-empty"),
    "Budget memory 0 MiB": (
        lambda: g.Budget(memory_mib=0),
        "memory budget must be a finite number > 0 MiB, got '0'",
    ),
    "verify_batches cfg=8": (
        lambda: verify_batches("vllm-0.33.0", 8),
        "cfg must be a SizingConfig, got int",
    ),
    "plan compilation_config text": (
        lambda: g.plan("vllm-0.33.0", CFG, compilation_config="x"),
        "compilation_config must be a dict, got str",
    ),
    "plan compilation_config object": (
        lambda: g.plan("vllm-0.33.0", CFG, compilation_config={"a": object()}),
        "compilation_config must hold JSON values only: Object of type object",
    ),
    "plan compilation_config NaN": (
        lambda: g.plan("vllm-0.33.0", CFG, compilation_config={"a": float("nan")}),
        "compilation_config must hold JSON values only",
    ),
    "read_vllm_log descriptor 1": (
        lambda: read_vllm_log(1),
        "--vllm-log must be a non-empty path, got 1",
    ),
}


@pytest.mark.parametrize("call, named", SIZING_CALLS.values(), ids=SIZING_CALLS)
def test_sizing_entry_points_refuse_bad_arguments_by_name(call, named):
    with pytest.raises(BadInput, match=named):
        call()


@pytest.fixture(scope="module")
def model():
    return g.build_model("tiny")


TORCH_CALLS = {
    "export_csvs escaping name": (lambda m, d: export_csvs({"../escaped": FRAME}, d), "frame name"),
    "export_csvs empty name": (lambda m, d: export_csvs({"": FRAME}, d), "frame name"),
    "export_csvs hidden name": (
        lambda m, d: export_csvs({".latency": FRAME}, d),
        "frame name must be a non-empty file name without .* a leading '.', got '.latency'",
    ),
    "export_csvs NUL in name": (lambda m, d: export_csvs({"a\0b": FRAME}, d), "a NUL"),
    "export_csvs checkpoint name": (
        lambda m, d: export_csvs({"latency.partial": FRAME}, d),
        "frame name 'latency.partial' ends in '.partial', the name of a sweep's checkpoint",
    ),
    "export_csvs out /dev/null": (
        lambda m, d: export_csvs({"x": FRAME}, "/dev/null"),
        "out '/dev/null' is not a folder",
    ),
    "export_csvs a list": (lambda m, d: export_csvs([FRAME], d), "frames must be a dict"),
    "export_csvs frame None": (
        lambda m, d: export_csvs({"x": None}, d),
        "frame must be a DataFrame",
    ),
    "export_csvs out None": (lambda m, d: export_csvs({"x": FRAME}, None), "out must be"),
    "graph_size 2.5": (
        lambda m, d: write_csv_atomic(pd.DataFrame({"graph_size": [2.5]}), d / "g.csv"),
        "graph_size",
    ),
    "seed 2**64": (lambda m, d: g.SpecDecodeConfig(CFG, seed=2**64), "seed"),
    "SpecDecodeConfig sizing None": (lambda m, d: g.SpecDecodeConfig(None), "sizing"),
    "SpecDecodeConfig sizing dict": (
        lambda m, d: g.SpecDecodeConfig({"max_num_seqs": 4}),
        "sizing",
    ),
    "temperature text": (lambda m, d: g.SpecDecodeConfig(CFG, temperature="0.5"), "temperature"),
    "run_speculative config None": (lambda m, d: g.run_speculative(None), "config must be"),
    "run_speculative load dict": (
        lambda m, d: g.run_speculative(g.SpecDecodeConfig(CFG), {"a": 1}),
        "load must be",
    ),
    "RequestLoad count text": (lambda m, d: g.RequestLoad(num_requests="3"), "num_requests"),
    "make_runner cfg None": (lambda m, d: g.make_runner(m, "vllm-0.6.0", None), "cfg must be"),
    "make_runner model text": (
        lambda m, d: g.make_runner("tiny", "vllm-0.6.0", CFG),
        "model must be",
    ),
    "latency_rows cfg dict": (
        lambda m, d: latency_rows(m, "vllm-0.6.0", {"a": 1}, Timing(EMULATED)),
        "cfg must be",
    ),
    "uniform_decode_batch text": (lambda m, d: uniform_decode_batch("2", 1, m, 0), "num_reqs"),
    "capture_graphs sizes text": (lambda m, d: capture_graphs(m, "12"), "sizes must be"),
    "capture_graphs model text": (lambda m, d: capture_graphs("tiny", [1]), "model must be"),
    "capture_graphs num_warmups -1": (
        lambda m, d: capture_graphs(m, [1], num_warmups=-1),
        "num_warmups must be an integer >= 0, got -1",
    ),
    "with_provenance rows text": (lambda m, d: with_provenance("rows", {}), "rows must be"),
    "with_provenance prov empty": (lambda m, d: with_provenance([{"a": 1}], {}), "prov lacks"),
    "build_model seed 2**64": (lambda m, d: g.build_model("tiny", seed=2**64), "seed"),
    "build_model seed -1": (lambda m, d: g.build_model("tiny", seed=-1), "seed"),
    "build_model device bogus": (
        lambda m, d: g.build_model("tiny", device="bogus"),
        "device 'bogus' is not one of auto, cpu, cuda",
    ),
    "V0ModelRunner model text": (
        lambda m, d: g.V0ModelRunner("model", "vllm-0.6.0", CFG),
        "model must be a LlamaForCausalLM, got str",
    ),
    "V0ModelRunner num_warmups -1": (
        lambda m, d: g.V0ModelRunner(m, "vllm-0.6.0", CFG, num_warmups=-1),
        "num_warmups must be an integer >= 0, got -1",
    ),
    "guard_cost cfg None": (lambda m, d: guard_cost(m, None, Timing(EMULATED)), "cfg must be"),
    "guard_cost timing text": (
        lambda m, d: guard_cost(m, CFG, "fast"),
        "timing must be a Timing, got str",
    ),
    "Timing backend name": (
        lambda m, d: Timing("cpu-emulated"),
        "Timing's backend must be a resolved Backend",
    ),
    "Timing repeats 0": (
        lambda m, d: Timing(EMULATED, repeats=0),
        "repeats must be an integer >= 1, got 0",
    ),
    "Timing warmup -1": (
        lambda m, d: Timing(EMULATED, warmup=-1),
        "warmup must be an integer >= 0, got -1",
    ),
    "Timing precision 2": (
        lambda m, d: Timing(EMULATED, precision=2),
        r"precision \(or None\) must be a finite number in 0.0..1.0, got 2",
    ),
    "Timing max_repeats under repeats": (
        lambda m, d: Timing(EMULATED, repeats=6, max_repeats=5),
        r"max_repeats \(or None\) must be an integer >= 6, got 5",
    ),
    "capture_cost backend name": (
        lambda m, d: capture_cost(m, ("vllm-0.6.0",), CFG, "auto"),
        "backend must be a Backend, got str",
    ),
    "eager_ratio None": (lambda m, d: eager_ratio(None), "samples must be"),
    "run_bench out None": (lambda m, d: g.run_bench("quick", "cpu", None), "out must be"),
}


@pytest.mark.parametrize("call, named", TORCH_CALLS.values(), ids=TORCH_CALLS)
def test_torch_entry_points_refuse_bad_arguments_by_name(call, named, model, tmp_path):
    with pytest.raises(BadInput, match=named):
        call(model, tmp_path)
    assert list(tmp_path.iterdir()) == [] and not (tmp_path.parent / "escaped.csv").exists()


def test_a_numpy_temperature_is_a_temperature():
    config = g.SpecDecodeConfig(CFG, temperature=np.float32(0.5))
    assert config.temperature == 0.5 and type(config.temperature) is float


def test_the_check_family_takes_numpy_values_and_refuses_lookalikes():
    assert check_sizes("sizes", np.array([1, 8]), 1) == (1, 8)
    assert check_float("x", np.float64(2.0), 0) == 2.0
    for bad in (True, "1", float("inf"), float("nan")):
        with pytest.raises(GraphlabError, match="x must be a finite number"):
            check_float("x", bad, 0)
    for bad in ({1: 2}, {1, 2}, iter([1]), "12", (1, 0)):
        with pytest.raises(GraphlabError, match="sizes"):
            check_sizes("sizes", bad, 1)


# ---- plan's input CSVs, read whole --------------------------------------------------------------

LATENCY = (
    "batch_unit,engine,model,dtype,num_speculative_tokens,mode,backend,batch_size,path,graph_size,median_ms\n"
    "tokens,vllm-0.33.0,tiny,float32,0,graph,cpu-emulated,1,full,1,1.0\n"
    "tokens,vllm-0.33.0,tiny,float32,0,eager,cpu-emulated,1,eager,,2.0\n"
    "rows,vllm-0.6.0,tiny,float32,0,graph,cpu-emulated,1,graph,1,{v0}\n"
)
MEMORY = (
    "batch_unit,engine,model,dtype,num_speculative_tokens,capture_size,memory_bytes,memory_kind,predicted_bytes,graph_pool\n"
    "tokens,vllm-0.33.0,tiny,float32,0,1,100,predicted,100,shared\n"
    "rows,vllm-0.6.0,tiny,float32,0,1,100,predicted,{v0},shared\n"
)  # fmt: skip


@pytest.mark.parametrize("value", ["fast", "-1", "inf", ""])
def test_a_bad_latency_in_a_row_the_planner_drops_is_refused(value, tmp_path):
    path = tmp_path / "latency.csv"
    path.write_text(LATENCY.format(v0=value))
    with pytest.raises(UnreadableInput, match="line 4|median_ms"):
        read_latency(path)
    path.write_text(LATENCY.format(v0="3.0"))
    assert read_latency(path)[0].values.tolist() == [1.0]  # the V1 rows, V0's dropped


@pytest.mark.parametrize("value", ["-100", str(2**62), ""])
def test_a_bad_predicted_bytes_in_a_row_the_planner_drops_is_refused(value, tmp_path):
    path = tmp_path / "graph_memory.csv"
    path.write_text(MEMORY.format(v0=value))
    with pytest.raises(UnreadableInput, match="predicted_bytes"):
        read_graph_memory(path)


def test_a_row_with_an_extra_field_names_its_line(tmp_path):
    path = tmp_path / "latency.csv"
    rows = LATENCY.format(v0="3.0").splitlines()
    rows[1] += ",9.0"  # the first data row: pandas would shift every column by one
    path.write_text("\n".join(rows) + "\n")
    with pytest.raises(UnreadableInput, match="line 2 has 12 fields, the header 11"):
        read_latency(path)


# ---- the three mutants that survived the suite ------------------------------------------------


def test_memory_mib_refuses_inf_and_nan_at_argparse():
    for value in ("inf", "nan", "0", "-1"):
        with pytest.raises(argparse.ArgumentTypeError, match=f"a finite number > 0, got '{value}'"):
            positive_float(value)
    assert positive_float("1e3") == 1000.0


def test_memory_mib_inf_is_the_command_lines_own_message(tmp_path, capsys):
    memory = tmp_path / "graph_memory.csv"
    memory.write_text(MEMORY.format(v0="100"))
    argv = ["plan", "--max-num-seqs", "8", "--memory-mib", "inf", "--graph-memory", str(memory)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "error: argument --memory-mib: must be a finite number > 0, got 'inf'\n"
    )


@pytest.mark.parametrize("dtype", list(REPLAY_RTOL))
def test_a_replay_that_differs_from_eager_is_flagged(dtype):
    eager = torch.linspace(-10, 10, 64).to(dtype)
    close = eager.float() + 0.25 * REPLAY_RTOL[dtype] * 10  # a quarter of the tolerance
    far = eager.float() + 0.1 * 10  # 10% of the largest logit: a wrong graph, not rounding
    assert replay_check(close, eager, dtype)["replay_matches_eager"]
    checked = replay_check(far, eager, dtype)
    assert not checked["replay_matches_eager"]
    assert checked["logit_tolerance"] == pytest.approx(REPLAY_RTOL[dtype] * 10)
    assert REPLAY_RTOL[dtype] <= 2.0**-4  # at most 16 half-precision steps of the largest logit


def test_a_replay_exactly_at_the_tolerance_matches_and_reports_its_diff():
    # The bound is inclusive; tolerance = 2^-12 x the largest eager logit (4): 2^-10, exact here.
    eager = torch.tensor([[4.0, -2.0, 1.0]])
    at, past = eager.clone(), eager.clone()
    at[0, 1] += 2.0**-10
    past[0, 1] += 2.0**-9
    assert replay_check(at, eager, torch.float32) == dict(
        max_abs_logit_diff=2.0**-10, logit_tolerance=2.0**-10, replay_matches_eager=True
    )
    assert replay_check(past, eager, torch.float32)["replay_matches_eager"] is False


def test_a_replay_of_another_shape_names_both():
    with pytest.raises(GraphlabError) as error:
        replay_check(torch.zeros(2, 3), torch.zeros(2, 4), torch.float32)
    assert str(error.value) == "replayed logits (2, 3) and eager logits (2, 4) differ in shape"


# ---- fast refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["repro", "--temperature", "5", "--device", "cpu"],
        ["repro", "--engine", "vllm-0.6.0", "--cudagraph-mode", "FULL", "--device", "cpu"],
    ],
)
def test_repro_refuses_bad_arguments_without_importing_torch(argv):
    code = (
        "import sys\nfrom graphlab.cli import main\nstatus = main(sys.argv[1:])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\nsys.exit(status)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1


# ---- what issue 50's bad calls raised raw --------------------------------------------------------


def test_meta_tensors_have_no_values_to_run(model):
    allocated = g.build_model("tiny")
    allocated.allocate_kv_cache(4, 8)
    runner = g.V0ModelRunner(allocated, "vllm-0.6.0", CFG)
    runner.capture_model()
    meta = torch.zeros(2, dtype=torch.long, device="meta")
    with pytest.raises(
        GraphlabError,
        match=r"input_ids must be a tensor with values, got tensor\(\.\.\., device='meta'",
    ):
        runner.execute_model(meta, meta, meta)
    ids = torch.zeros(1, 1, dtype=torch.long)
    with pytest.raises(GraphlabError, match=r"seq_slots must be a tensor with values, got \[0\]"):
        allocated.check_inputs(ids, ids, [0])


def test_an_export_onto_a_file_or_an_unwritable_folder_names_the_csv(tmp_path, monkeypatch):
    onto = tmp_path / "a_file"
    onto.write_text("kept\n")
    with pytest.raises(GraphlabError, match=f"out {str(onto)!r} is not a folder"):
        export_csvs({"x": FRAME}, onto)
    assert onto.read_text() == "kept\n"

    def refused(*args, dir, **kwargs):
        raise PermissionError(13, "Permission denied", f"{dir}/.x.csv.abc.tmp")

    monkeypatch.setattr("tempfile.mkstemp", refused)
    with pytest.raises(GraphlabError) as error:
        export_csvs({"x": FRAME}, tmp_path / "out")
    assert str(error.value) == (
        f"cannot write {str(tmp_path / 'out' / 'x.csv')!r}: Permission denied in folder "
        f"{str(tmp_path / 'out')!r}"
    )


def test_a_replay_below_the_eager_logits_is_flagged_too():
    eager = torch.linspace(-10, 10, 64)
    below = eager - 0.1 * 10  # 10% of the largest logit under every eager one
    checked = replay_check(below, eager, torch.float32)
    assert checked["max_abs_logit_diff"] == pytest.approx(1.0)
    assert not checked["replay_matches_eager"]


def test_replayed_logits_of_another_shape_with_as_many_values_are_refused():
    # [B * q, vocab] against [B, q, vocab]: same values, but not the same rows
    with pytest.raises(GraphlabError, match=r"replayed logits \(6, 4\) and eager logits"):
        replay_check(torch.zeros(6, 4), torch.zeros(2, 3, 4), torch.float32)
