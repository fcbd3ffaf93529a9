"""bench: tidy rows with provenance, CSVs written atomically, the `bench` command."""

import itertools
import json
import os
import re
import stat
import subprocess
import sys

import pandas as pd
import pytest
import torch
from helpers import ROOT, TINY

from graphlab.bench import export, measurements, suites, sweeps
from graphlab.bench.export import read_csv, write_checkpoint, write_csv_atomic
from graphlab.bench.provenance import FIELDS, computed_provenance, git_commit, with_provenance
from graphlab.cli import main
from graphlab.engine import runner
from graphlab.engine.device import BACKEND_VALUES
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import decode_graph_sizes
from graphlab.sizing.engines import get_engine
from graphlab.views.report import written_summary

V0 = sweeps.LATENCY_ENGINE


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    # cpu-emulated keeps this fixture to seconds; the default backend's rows are tested below.
    return sweeps.run_bench(TINY, "cpu", out, progress=False, backend="cpu-emulated")


def test_every_sweep_writes_its_csv(written):
    assert sorted(written) == sorted(sweeps.SWEEPS)
    for name, path in written.items():
        assert path.name == f"{name}.csv"
        assert len(pd.read_csv(path)) > 0


def test_every_row_carries_provenance_of_one_run(written):
    frames = {name: read_csv(path) for name, path in written.items()}
    for name, frame in frames.items():
        assert list(frame.columns[-len(FIELDS) :]) == list(FIELDS)
        assert frame[list(FIELDS)].notna().all().all(), name
        # One run: one id and suite in every file; on CPU one torch thread unless asked.
        assert set(frame["run_id"]) == {frames["latency"]["run_id"][0]}, name
        assert set(frame["suite"]) == {"tiny-test"} and set(frame["torch_threads"]) == {1}
        measured = name != "crash_map"
        assert set(frame["backend"]) == {"cpu-emulated" if measured else "computed"}, name
        assert set(frame["model"]) == {"tiny" if measured else "none"}, name
        assert set(frame["dtype"]) == {"float32" if measured else "none"}, name


def test_list_columns_are_json_and_empty_integers_load_as_integers(written):
    steps = read_csv(written["spec_decode_steps"])
    decode = steps[steps["kind"] == "decode"]
    lists = [json.loads(cell) for cell in decode["num_accepted_tokens_per_pos"]]
    k = TINY.spec_num_speculative_tokens[0]
    assert {len(cell) for cell in lists} == {0, k}  # steps without proposals have none
    spec = read_csv(written["spec_decode"])
    assert all(isinstance(json.loads(cell), list) for cell in spec["num_accepted_tokens_per_pos"])
    for name, column in (
        ("latency", "graph_size"),
        ("graph_memory", "pool_bytes"),
        ("spec_decode_steps", "graph_size"),
        ("crash_map", "first_crash_n"),
    ):
        frame = read_csv(written[name])
        assert str(frame[column].dtype) == "Int64", (name, column)
        assert frame[column].isna().any() or name == "crash_map", (name, column)
    text = written["latency"].read_text()
    assert ",4.0," not in text  # the padded size is written as an integer
    assert (
        read_csv(written["latency"])
        .set_index(["mode", "batch_size"])
        .loc[("graph", 3), "graph_size"]
        == 4
    )


def test_copy_bandwidth_is_the_latency_floors_denominator(written):
    copy = read_csv(written["copy_bandwidth"])
    assert len(copy) == 1 and copy.loc[0, "bytes_moved"] == 2 * copy.loc[0, "copy_bytes"]
    assert copy.loc[0, "bytes_per_s"] == pytest.approx(
        copy.loc[0, "bytes_moved"] / copy.loc[0, "median_ms"] * 1e3
    )
    latency = read_csv(written["latency"])
    assert set(latency["copy_bytes_per_s"]) == {copy.loc[0, "bytes_per_s"]}  # measured once
    assert (
        latency["bandwidth_floor_ms"] == latency["weight_bytes"] / latency["copy_bytes_per_s"] * 1e3
    ).all()


def test_timing_stats_tell_p90_from_the_median():
    # Nine fast steps and one slow one: the median stays fast, p90 moves into the gap.
    stats = measurements.timing_stats([1.0] * 9 + [11.0])
    assert (stats["median_ms"], stats["min_ms"]) == (1.0, 1.0)
    assert stats["p90_ms"] == pytest.approx(2.0)
    stats = measurements.timing_stats(range(1, 11))
    assert (stats["median_ms"], stats["p90_ms"]) == (5.5, pytest.approx(9.1))


def test_latency_rows_report_p90_apart_from_the_median(monkeypatch):
    # The two modes step in turn (AB BA...): with each tick twice, each (batch size, mode) still
    # times steps of 1..10 ms, whatever the phase.
    ticks = itertools.cycle([t for t in range(1, 11) for _ in range(2)])

    class Timer:
        clock = "fake"

        def __init__(self, device):
            pass

        def stop(self):
            self.ms = self.wall_ms = float(next(ticks))
            return self.ms

    monkeypatch.setattr(runner, "StepTimer", Timer)
    suite = suites.replace_suite(TINY, latency_batch_sizes=(1, 3), repeats=10, warmup=0)
    frame = sweeps.latency_sweep(suite, "cpu", backend="cpu-emulated")  # the timer is faked
    assert len(frame) == 2 * (2 + 5)  # V0: 2 batch sizes, V1: 5 request counts; 2 modes
    assert set(frame["median_ms"]) == {5.5} and set(frame["min_ms"]) == {1.0}
    assert frame["p90_ms"].tolist() == pytest.approx([9.1] * len(frame))


@pytest.mark.parametrize("name", sorted(suites.SUITES))
@pytest.mark.parametrize("model", [{}, {"preset": "100m", "dtype": "bfloat16"}])
def test_rows_name_the_preset_and_dtype_actually_run(name, model, monkeypatch):
    built = []

    def spy(preset, seed=0, dtype="float32", device="cpu"):
        built.append((preset, str(dtype)))
        # Tiny whatever was asked (seconds on CPU); the rows must still name what was asked.
        return build_model("tiny", seed=seed, dtype=dtype, device=device)

    build_model = sweeps.build_model
    monkeypatch.setattr(sweeps, "build_model", spy)
    suite = suites.replace_suite(
        name,
        latency_batch_sizes=(1, 2),
        latency_max_num_seqs=1,
        repeats=1,
        warmup=0,
        max_seq_len=8,
        memory_max_num_seqs=2,
        v1_sizing=SizingConfig(2, 1),
        **model,
    )
    preset, dtype = suite.model_for("cpu")
    for sweep in (sweeps.latency_sweep, sweeps.graph_memory_sweep):
        frame = sweep(suite, "cpu", backend="cpu-emulated")  # names, not costs: nothing compiled
        assert built == [(preset, dtype)]  # one model, which the V0 and V1 engines share
        assert set(frame["model"]) == {preset} and set(frame["dtype"]) == {dtype}
        assert set(frame["engine"]) == {V0, "vllm-0.33.0"}
        built.clear()


def test_measurements_use_one_cpu_thread_unless_asked(monkeypatch):
    seen = []
    monkeypatch.setattr(
        sweeps,
        "measure_copy_bandwidth",
        lambda *args: seen.append(torch.get_num_threads()) or {"bytes_per_s": 1},
    )
    before = torch.get_num_threads()
    assert set(sweeps.copy_bandwidth_sweep(TINY, "cpu")["torch_threads"]) == {1}
    assert set(sweeps.copy_bandwidth_sweep(TINY, "cpu", torch_threads=2)["torch_threads"]) == {2}
    assert seen == [1, 2] and torch.get_num_threads() == before
    with pytest.raises(GraphlabError, match="torch_threads .* got 0"):
        sweeps.copy_bandwidth_sweep(TINY, "cpu", torch_threads=0)


def test_graph_memory_rows_accumulate_per_pool(written):
    memory = read_csv(written["graph_memory"]).query("engine == @V0")
    shared, separate = (memory[memory["graph_pool"] == pool] for pool in ("shared", "separate"))
    assert list(shared["capture_size"]) == [4, 2, 1]  # largest first
    assert shared["cumulative_predicted_bytes"].iloc[-1] == shared["predicted_bytes"].iloc[0]
    assert separate["cumulative_predicted_bytes"].iloc[-1] == separate["predicted_bytes"].sum()
    # Emulated: nothing measured, so no predictor accuracy to state.
    assert memory["predicted_over_measured"].isna().all()
    assert set(memory["batch_unit"]) == {"rows"}
    assert (memory["num_reqs"] == memory["capture_size"]).all()


def test_v0_graph_memory_rows_hold_one_token_per_row_whatever_k(monkeypatch):
    # vLLM V0's scorer expands each request's 1 + k tokens into one-token rows (vllm/spec_decode/
    # batch_expansion.py, v0.6.0); its graphs are keyed by rows, up to pad(S) = 8 whatever k.
    from graphlab.engine.model import build_model

    model = build_model("tiny", device="cpu")
    model.allocate_kv_cache(8, 16)
    probed, probe = [], measurements.probe_sdpa
    monkeypatch.setattr(
        measurements, "probe_sdpa", lambda m, rows, q: probed.append((rows, q)) or probe(m, rows, q)
    )
    pools = ("shared", "separate")
    emulated = BACKEND_VALUES["cpu-emulated"]
    rows = measurements.graph_memory_rows(model, V0, SizingConfig(8, 2), emulated, pools)
    assert [r["capture_size"] for r in rows] == [8, 4, 2, 1] * 2
    assert [r["num_reqs"] for r in rows] == [8, 4, 2, 1] * 2
    # Each size's attention probed once, across both pool modes, as rows of one token.
    assert probed == [(8, 1), (4, 1), (2, 1), (1, 1)]


def test_a_run_probes_its_sdpa_kernel_once_per_length(monkeypatch):
    built, build = [], sweeps.build_model
    monkeypatch.setattr(sweeps, "build_model", lambda *a, **kw: built.append(a) or build(*a, **kw))
    with sweeps.bench_run(TINY, "cpu", backend="cpu-emulated") as run:
        kernel = run.sdpa_backend(24)
        assert run.sdpa_backend(24) == kernel and len(built) == 1
        run.sdpa_backend(16)
        assert len(built) == 2
    assert kernel in ("cpu_flash_attention", "cpu_math")


def test_graph_memory_has_a_row_per_captured_token_count_of_the_v1_engine(written):
    memory = read_csv(written["graph_memory"]).query("engine == 'vllm-0.33.0'")
    for pool in ("shared", "separate"):
        rows = memory[memory["graph_pool"] == pool]
        full, pieces = (rows[rows["family"] == family] for family in ("full", "piecewise"))
        assert list(full["capture_size"]) == [16, 8, 4]  # token counts of whole 4-token requests
        assert list(full["num_reqs"]) == [4, 2, 1]
        # PIECEWISE graphs at the raw sizes (cudagraph_capture_sizes 1, 2, 4, 8, 16), captured
        # after the FULL ones; they serve any batch of up to their size, so no request count.
        assert list(pieces["capture_size"]) == [16, 8, 4, 2, 1]
        assert pieces["num_reqs"].isna().all()
        assert list(rows["capture_order"]) == list(range(8))
    assert set(memory["batch_unit"]) == {"tokens"} and set(memory["num_speculative_tokens"]) == {3}
    assert set(memory["max_num_batched_tokens"]) == {16}


def test_the_crash_map_command_can_stamp_without_torch():
    code = (
        "import sys; from graphlab.bench.provenance import computed_provenance as c; "
        "p = c(suite='x');"
        "assert 'torch' not in sys.modules, 'torch imported'; print(p['backend'])"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=os.environ | {"PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0 and done.stdout.strip() == "computed", done.stderr
    frame = with_provenance(
        pd.DataFrame({"first_crash_n": [None, 40]}), computed_provenance(suite="crash-map")
    )
    assert list(frame.columns) == ["first_crash_n", *FIELDS]
    assert frame.loc[0, "model"] == "none" and pd.isna(frame.loc[0, "torch_threads"])


def test_memory_on_cpu_is_labelled_predicted(written):
    for name in ("graph_memory", "spec_decode"):
        assert set(pd.read_csv(written[name])["memory_kind"]) == {"predicted"}


def test_latency_rows_cover_both_modes_and_the_padded_size(written):
    frame = pd.read_csv(written["latency"]).query("engine == @V0")
    assert set(frame["mode"]) == {"eager", "graph"}
    graph = frame[frame["mode"] == "graph"].set_index("batch_size")
    assert graph.loc[3, "graph_size"] == 4  # V0 pads 3 rows to the size-4 graph
    assert (frame["p90_ms"] >= frame["median_ms"]).all()


def test_latency_sweep_shows_the_eager_cliff_past_the_capture_limit():
    suite = suites.replace_suite(TINY, latency_batch_sizes=(1, 3, 4, 5, 9), latency_max_num_seqs=4)
    # Paths and sizes are the runner's dispatch on any backend: the emulated one compiles nothing.
    frame = sweeps.latency_sweep(suite, "cpu", backend="cpu-emulated").query("engine == @V0")
    graph = frame[frame["mode"] == "graph"].set_index("batch_size")
    assert list(graph["path"]) == ["graph", "graph", "graph", "eager", "eager"]
    assert graph.loc[3, "graph_size"] == 4 and graph.loc[[5, 9], "graph_size"].isna().all()
    assert set(frame[frame["mode"] == "eager"]["path"]) == {"eager"}
    assert set(frame["max_num_seqs"]) == {4}


def test_latency_of_the_v1_engine_crosses_its_largest_graph(written):
    frame = read_csv(written["latency"])
    assert set(frame.query("engine == @V0")["batch_unit"]) == {"rows"}
    v1 = frame.query("engine == 'vllm-0.33.0'")
    assert set(v1["batch_unit"]) == {"tokens"} and set(v1["graph_limit"]) == {16}
    graph = v1[v1["mode"] == "graph"]
    # Each graph filled exactly (1, 2, 4 requests), one request past the last one, and S = 8.
    assert list(graph["num_reqs"]) == [1, 2, 4, 5, 8]
    assert list(graph["batch_size"]) == [4, 8, 16, 20, 32]
    assert list(graph["path"]) == ["full"] * 3 + ["eager"] * 2  # V1 rows name the family
    assert list(graph["graph_size"].astype("float")[:3]) == [4, 8, 16]
    assert set(v1[v1["mode"] == "eager"]["path"]) == {"eager"}
    assert (v1["bandwidth_floor_ms"] == v1["weight_bytes"] / v1["copy_bytes_per_s"] * 1e3).all()


def test_every_suite_sweeps_past_its_capture_limit():
    for suite in suites.SUITES.values():
        assert max(suite.latency_batch_sizes) > suite.latency_max_num_seqs, suite.name
        v1 = suite.v1_sizing  # the V1 cliff: S requests of 1 + k tokens pass the largest graph
        assert v1.max_num_seqs * v1.decode_query_len > decode_graph_sizes(suite.v1_engine, v1)[-1]


def test_spec_decode_steps_run_in_the_suites_dtype(monkeypatch):
    seen = []

    def spy(*args, **kwargs):
        seen.append(kwargs["dtype"])
        return run_speculative(*args, **kwargs)

    run_speculative = sweeps.run_speculative
    monkeypatch.setattr(sweeps, "run_speculative", spy)
    frame = sweeps.spec_decode_steps_sweep(
        suites.replace_suite(TINY, dtype="bfloat16"), "cpu", backend="cpu-emulated"
    )
    assert set(seen) == {"bfloat16"} and len(seen) == len(TINY.spec_engines)
    assert set(frame["dtype"]) == {"bfloat16"}


def test_csv_files_get_the_umask_permissions_not_mkstemps(tmp_path):
    frame = pd.DataFrame({"a": [1]})
    previous = os.umask(0o022)
    try:
        assert stat.S_IMODE(write_csv_atomic(frame, tmp_path / "a.csv").stat().st_mode) == 0o644
        os.umask(0o077)
        assert stat.S_IMODE(write_csv_atomic(frame, tmp_path / "b.csv").stat().st_mode) == 0o600
    finally:
        os.umask(previous)


def test_spec_decode_rows_per_engine(written):
    frame = pd.read_csv(written["spec_decode"])
    assert list(frame["engine"]) == list(TINY.spec_engines)
    by_engine = frame.set_index("engine")
    # Adaptive captures the expanded batch: every scorer step replays a graph.
    assert by_engine.loc["adaptive", "scorer_graph_fraction"] == 1.0
    assert by_engine.loc["vllm-0.6.0", "scorer_graph_fraction"] < 1.0


def test_spec_decode_steps_show_which_scorer_batches_lost_their_graphs(written):
    frame = pd.read_csv(written["spec_decode_steps"])
    decode = frame[frame["kind"] == "decode"]
    guard = decode[decode["engine"] == "vllm-0.6.0"]
    # max_num_seqs=2: the guard graphs up to 2 rows; expanded batches (2*(k+1) = 6) run eagerly.
    assert (guard[guard["path"] == "eager"]["batch_size"] > 2).all()
    assert (guard["batch_size"] == 6).any()
    assert set(decode[decode["engine"] == "adaptive"]["path"]) == {"graph"}
    assert set(frame["dtype"]) == {"float32"}


def test_crash_map_matches_the_worked_example(written):
    frame = pd.read_csv(written["crash_map"]).set_index(
        ["engine", "max_num_seqs", "num_speculative_tokens"]
    )
    assert frame.loc[("vllm-0.5.5", 4, 2), "num_crash"] > 0
    assert frame.loc[("vllm-0.6.0", 4, 2), "num_crash"] == 0


def test_with_provenance_keeps_a_rows_own_values():
    prov = dict.fromkeys(FIELDS, "x") | {"backend": "cpu-emulated"}
    frame = with_provenance([{"preset": "tiny", "backend": "cuda-graph", "v": 1}], prov)
    assert frame.loc[0, "backend"] == "cuda-graph"
    assert frame.loc[0, "model"] == "tiny" and "preset" not in frame.columns
    assert list(frame.columns) == ["v", *FIELDS]


def test_a_failing_sweep_leaves_finished_csvs_and_no_partial_file(tmp_path, monkeypatch):
    (tmp_path / "graph_memory.csv").write_text("old\n")

    def broken(run):
        raise KeyboardInterrupt  # as if the reader pressed Ctrl-C mid-sweep

    monkeypatch.setitem(sweeps._BODIES, "graph_memory", broken)
    with pytest.raises(KeyboardInterrupt):
        sweeps.run_bench(
            TINY, "cpu", tmp_path, sweeps=("crash_map", "graph_memory"), progress=False
        )
    crash = pd.read_csv(tmp_path / "crash_map.csv")
    assert len(crash) == 2 * 4 * 3
    assert (tmp_path / "graph_memory.csv").read_text() == "old\n"
    names = ["crash_map.csv", "graph_memory.csv", export.MANIFEST_NAME]
    assert sorted(p.name for p in tmp_path.iterdir()) == names
    # The manifest tells the interrupted run's CSV from the one it found there.
    manifest = json.loads((tmp_path / export.MANIFEST_NAME).read_text())
    assert manifest["state"] == "interrupted" and manifest["run_id"] == crash["run_id"][0]
    assert manifest["sweeps"] == ["crash_map", "graph_memory"]
    assert manifest["files"] == {"crash_map.csv": crash["run_id"][0], "graph_memory.csv": None}
    assert export.files_of_run(manifest) == ["crash_map.csv"]


def test_a_finished_run_says_complete_and_a_second_run_owns_only_its_files(tmp_path):
    first = sweeps.run_bench(TINY, "cpu", tmp_path, sweeps=("crash_map",), progress=False)
    files = export.written_files(first)
    manifest = json.loads((tmp_path / export.MANIFEST_NAME).read_text())
    assert files.csvs.to_dict("records") == [
        dict(
            path=first["crash_map"],
            rows=len(pd.read_csv(first["crash_map"])),
            backends=("computed",),
            devices=(manifest["run"]["device"],),
            memory_kinds=None,
        )
    ]
    assert files.manifests.to_dict("records") == [
        dict(
            path=tmp_path / export.MANIFEST_NAME,
            run_id=manifest["run_id"],
            state="complete",
            run_files=1,
            files=1,
        )
    ]
    assert f"run {manifest['run_id']} complete, 1 CSVs of this run of 1" in written_summary(files)
    frame = sweeps.crash_map_sweep(TINY, "cpu")  # another run's rows, another run_id
    export.export_csvs({"latency": frame}, tmp_path)
    sweeps.run_bench(TINY, "cpu", tmp_path, sweeps=("crash_map",), progress=False)
    manifest = json.loads((tmp_path / export.MANIFEST_NAME).read_text())
    assert manifest["state"] == "complete"
    assert export.files_of_run(manifest) == ["crash_map.csv"]
    assert manifest["files"]["latency.csv"] == frame["run_id"][0] != manifest["run_id"]


def test_an_interrupted_write_keeps_the_old_file(tmp_path, monkeypatch):
    target = tmp_path / "crash_map.csv"
    target.write_text("old\n")
    frame = sweeps.crash_map_sweep(TINY, "cpu")

    def interrupted(self, handle, **kwargs):
        handle.write("engine,max_num")  # half a header, then the interrupt
        raise KeyboardInterrupt

    monkeypatch.setattr(pd.DataFrame, "to_csv", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export.export_csvs({"crash_map": frame}, tmp_path)
    assert target.read_text() == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["crash_map.csv"]


def test_suite_fields_are_validated():
    with pytest.raises(GraphlabError, match="repeats=.*>= 1"):
        suites.replace_suite("quick", repeats=0)
    with pytest.raises(GraphlabError, match="latency_batch_sizes"):
        suites.replace_suite("quick", latency_batch_sizes=())
    with pytest.raises(GraphlabError, match="latency_max_num_seqs=.*>= 1"):
        suites.replace_suite("quick", latency_max_num_seqs=0)
    with pytest.raises(GraphlabError, match="spec_engines.*vllm-0.5.5"):
        suites.replace_suite("quick", spec_engines=("sglang",))
    with pytest.raises(GraphlabError, match="v1_engine 'vllm-0.6.0'.*vllm-0.33.0"):
        suites.replace_suite("quick", v1_engine="vllm-0.6.0")
    with pytest.raises(GraphlabError, match="v1_sizing must be"):
        suites.replace_suite("quick", v1_sizing=(160, 3))


def test_bad_suite_and_sweep_names():
    with pytest.raises(GraphlabError, match="quick"):
        suites.get_suite("medium")
    with pytest.raises(GraphlabError, match="latency"):
        sweeps.run_bench(TINY, "cpu", "unused", sweeps=("latncy",))


def test_bench_command_writes_csvs_and_a_summary(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(suites.SUITES, "quick", TINY)
    assert (
        main(["bench", "--device", "cpu", "--backend", "cpu-emulated", "--out", str(tmp_path)]) == 0
    )
    out = capsys.readouterr().out
    assert "crash_map.csv: 24 rows, computed on cpu" in out
    assert re.search(r"latency\.csv: \d+ rows, cpu-emulated on cpu", out)
    assert "graph_memory.csv" in out and "memory predicted" in out
    assert re.search(r"manifest\.json: run \S+ complete, 7 CSVs of this run of 7", out)
    # One CSV per sweep, and the latency sweep's every timed step beside its summary rows.
    expected = [f"{s}.csv" for s in sweeps.SWEEPS] + ["latency_samples.csv", "manifest.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(expected)


def test_a_cpu_latency_sweep_measures_compiled_steps_by_default():
    """Where a cost is shown, a CPU run's default backend is cpu-compiled, on every row."""
    suite = suites.replace_suite(
        TINY, latency_batch_sizes=(1, 2), latency_max_num_seqs=1, v1_sizing=None
    )
    frame = sweeps.latency_sweep(suite, "cpu")
    assert set(frame["backend"]) == {"cpu-compiled"}
    graph = frame[frame["mode"] == "graph"].set_index("batch_size")
    assert (graph.loc[1, "path"], graph.loc[2, "path"]) == ("graph", "eager")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_bench_command_refuses_cuda_without_a_gpu(tmp_path, capsys):
    assert main(["bench", "--device", "cuda", "--out", str(tmp_path)]) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_provenance_names_the_backend_and_reads_versions_without_importing_vllm():
    import sys

    from graphlab.bench.provenance import provenance

    imported_before = "vllm" in sys.modules
    prov = provenance("cpu", dtype=torch.bfloat16, model="tiny")
    assert list(prov) == list(FIELDS)
    assert prov["backend"] == "cpu-emulated" and prov["device"].startswith("cpu: ")
    assert prov["dtype"] == "bfloat16" and prov["torch_version"] == torch.__version__
    assert prov["vllm_version"] == "not installed" or prov["vllm_version"].startswith("vllm")
    assert imported_before or "vllm" not in sys.modules  # metadata only: no 10 s import


def test_provenance_rejects_unknown_devices():
    from graphlab.engine.device import resolve_device

    with pytest.raises(GraphlabError, match="auto, cpu, cuda"):
        resolve_device("tpu")


def test_git_commit_override_for_copies_without_git(monkeypatch):
    monkeypatch.setenv("GRAPHLAB_GIT_COMMIT", "abc123")
    assert git_commit() == "abc123"


def test_git_commit_is_dirty_by_tracked_content_not_by_status(tmp_path, monkeypatch):
    monkeypatch.delenv("GRAPHLAB_GIT_COMMIT", raising=False)

    def git(*args):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
            text=True,
        ).stdout

    git("init", "-q")
    # A clean filter like the notebooks' strip filter: the stored content drops "output" lines.
    git("config", "filter.strip.clean", "grep -v output || true")
    (tmp_path / ".gitattributes").write_text("*.nb filter=strip\n")
    notebook = tmp_path / "a.nb"
    notebook.write_text("cell\n")
    (tmp_path / "graphlab").mkdir()
    (tmp_path / "graphlab" / "__init__.py").write_text("")  # the kit's own checkout
    git("add", "-A")
    git("commit", "-q", "-m", "one")
    head = git("rev-parse", "--short=12", "HEAD").strip()
    assert git_commit(tmp_path) == head
    notebook.write_text("cell\noutput 42\n")  # run in place: status lists it, content is HEAD's
    assert "a.nb" in git("status", "--porcelain")
    assert git_commit(tmp_path) == head
    notebook.write_text("cell changed\n")
    assert git_commit(tmp_path) == head + "+dirty"
    notebook.write_text("cell\n")
    (tmp_path / "new.txt").write_text("untracked\n")  # untracked files are not the commit's
    assert git_commit(tmp_path) == head
    assert git_commit(tmp_path / "no-such-folder") == "unknown"


def test_git_commit_of_a_copy_inside_another_repository_is_none(tmp_path, monkeypatch):
    """graphlab installed in a venv inside someone's project records no commit, not theirs."""
    monkeypatch.delenv("GRAPHLAB_GIT_COMMIT", raising=False)

    def git(*args):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    site = tmp_path / "venv" / "site-packages"
    (site / "graphlab").mkdir(parents=True)
    (site / "graphlab" / "__init__.py").write_text("")
    (tmp_path / "app.py").write_text("")
    git("init", "-q")
    git("add", "app.py")
    git("commit", "-q", "-m", "their project")
    assert git_commit(site) == "none"
    git("add", "-A")  # even when their repository tracks the copy: it is not the top
    git("commit", "-q", "-m", "vendored")
    assert git_commit(site) == "none"
    assert git_commit(tmp_path) == "none"  # their top: no graphlab/ package tracked there


def test_package_version_of_a_missing_package():
    from graphlab.bench.provenance import package_version

    assert package_version("no_such_package_xyz") == "not installed"


def test_progress_without_tqdm_prints_plain_lines(monkeypatch, capsys):
    from graphlab.progress import progress

    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # import tqdm.auto now fails
    assert list(progress(["a", "b"], desc="bench quick", unit="sweep")) == ["a", "b"]
    assert capsys.readouterr().err.splitlines() == [
        "bench quick: 1/2 sweep",
        "bench quick: 2/2 sweep",
    ]
    assert list(progress(iter("xy"), desc="d", disable=True)) == ["x", "y"]
    assert capsys.readouterr().err == ""


def test_capture_cost_counts_each_engines_graphs_and_says_what_the_memory_is():
    from graphlab.engine.device import resolve_backend
    from graphlab.engine.model import build_model

    cfg = SizingConfig(8, 4)
    model = build_model("tiny", device="cpu")
    model.allocate_kv_cache(40, 32)
    costs = resolve_backend("auto", model.device, "costs")
    table = measurements.capture_cost(model, ("vllm-0.6.0", "adaptive"), cfg, costs)
    for engine in ("vllm-0.6.0", "adaptive"):
        sizes = get_engine(engine).capture_sizes(cfg)
        assert table.loc[engine, "graphs"] == len(sizes)
        assert table.loc[engine, "largest"] == max(sizes)
    # A cost: timed on the costs backend (cpu-compiled where inductor builds), as every cost is.
    assert set(table["backend"]) == {resolve_backend("auto", model.device, "costs").name}
    assert set(table["memory_kind"]) == {"predicted"}
    shared = table["graph memory (MiB), shared pool"]
    assert shared["adaptive"] > shared["vllm-0.6.0"] > 0  # 40 rows' graph against 8's


def test_provenance_names_cuda_and_cudnn_versions(monkeypatch):
    from graphlab.bench.provenance import provenance

    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.backends.cudnn, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.cudnn, "version", lambda: 90100)
    prov = provenance("cpu")
    assert (prov["cuda_version"], prov["cudnn_version"]) == ("12.4", "90100")


@pytest.mark.parametrize("threads", [True, 0, 1.5, "2"])
def test_bad_torch_threads_is_one_clear_error(tmp_path, threads):
    with pytest.raises(
        GraphlabError,
        match=rf"torch_threads \(or None\) must be an integer >= 1, got {re.escape(repr(threads))}",
    ):
        sweeps.run_bench("quick", "cpu", tmp_path, torch_threads=threads)
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_names_the_csv_and_those_already_complete(tmp_path, capsys, monkeypatch):
    (tmp_path / "latency.csv").write_text("an earlier run's\n")

    def full(suite, device, out, **kwargs):
        write_csv_atomic(pd.DataFrame({"a": [1]}), out / "copy_bandwidth.csv")
        write_checkpoint(pd.DataFrame({"a": [1]}), out, "latency")
        raise OSError(28, "No space left on device", str(out / "latency.csv"))

    monkeypatch.setattr(sweeps, "run_bench", full)
    assert main(["bench", "--out", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert err == (
        f"error: cannot write latency.csv under --out {str(tmp_path)!r}: No space left on device; "
        "complete CSVs: copy_bandwidth.csv; partial (rows so far, not a whole sweep): "
        "latency.partial.csv\n"
    )
    assert (tmp_path / "latency.csv").read_text() == "an earlier run's\n"


def test_write_csv_atomic_names_the_csv_it_could_not_write(tmp_path, monkeypatch):
    def no_space(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(pd.DataFrame, "to_csv", no_space)
    with pytest.raises(OSError) as raised:
        write_csv_atomic(pd.DataFrame({"a": [1]}), tmp_path / "latency.csv")
    assert raised.value.filename == str(tmp_path / "latency.csv") and list(tmp_path.iterdir()) == []


# ---- what the independent mutation campaign of 2026-12-06 found untested ----------------------


def test_a_csv_of_a_header_alone_belongs_to_no_run(tmp_path):
    # a CSV cut after its header (or a sweep that wrote no row) has no run_id to read
    (tmp_path / "latency.csv").write_text("run_id,engine\n")
    export.write_manifest(tmp_path, {"run_id": "r2"}, ["latency"], "running")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["files"] == {"latency.csv": None}
    assert export.files_of_run(manifest) == []


def test_a_list_column_with_an_empty_cell_is_still_written_as_json():
    frame = export.csv_ready(pd.DataFrame({"capture_sizes": [[1, 2], None, (4,)]}))
    cells = frame["capture_sizes"].tolist()
    assert (cells[0], cells[2]) == ("[1, 2]", "[4]") and pd.isna(cells[1])


def test_a_flag_in_an_integer_column_is_refused_not_written_as_1():
    with pytest.raises(
        GraphlabError, match="column 'graph_size' holds integers or blanks, got True"
    ):
        export.csv_ready(pd.DataFrame({"graph_size": [4, True]}))


# ---- what the third independent mutation campaign (2026-12-06) found untested ----------------


def test_writing_a_csv_leaves_the_callers_frame_as_it_was(tmp_path):
    # csv_ready turns lists into JSON text and integer columns into Int64 on its own copy
    frame = pd.DataFrame({"graph_size": [8, None], "sizes": [[1, 2], [4]]})
    before = frame.copy()
    write_csv_atomic(frame, tmp_path / "latency.csv")
    pd.testing.assert_frame_equal(frame, before)


def test_a_manifest_in_a_state_it_does_not_know_is_refused_unwritten(tmp_path):
    # a reader trusts "complete"; a misspelt state must not reach the file
    run = {"run_id": "r1"}
    with pytest.raises(GraphlabError, match="manifest state 'done' is not one of"):
        export.write_manifest(tmp_path, run, ["latency"], "done")
    assert not (tmp_path / "manifest.json").exists()


def test_a_stale_lock_file_with_a_longer_pid_names_only_the_new_holder(tmp_path):
    # a killed run's lock file is taken over; its pid must not trail the new one's digits
    (tmp_path / export.LOCK_NAME).write_text("123456789012\n")
    with export.locked_folder(tmp_path) as lock:
        assert lock.read_text() == f"{os.getpid()}\n"


# ---- what branch coverage of bench/export.py (2026-12-06) found untested ----------------------


def test_an_empty_csv_in_the_folder_belongs_to_no_run(tmp_path):
    # a file of no bytes (a copy cut at once) has no header to read: pandas' EmptyDataError
    (tmp_path / "notes.csv").write_text("")
    export.write_manifest(tmp_path, {"run_id": "r1"}, ["latency"], "complete")
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["files"] == {"notes.csv": None} and export.files_of_run(manifest) == []


def test_a_csv_in_a_folder_that_is_gone_names_the_csv(tmp_path):
    # mkstemp's own error names the temporary file's folder; the caller asked for the CSV
    path = tmp_path / "gone" / "latency.csv"
    with pytest.raises(FileNotFoundError) as raised:
        write_csv_atomic(pd.DataFrame({"a": [1]}), path)
    assert raised.value.filename == str(path)
    assert not (tmp_path / "gone").exists()


def test_a_text_cell_in_an_integer_column_is_refused_by_column_and_value(tmp_path):
    frame = pd.DataFrame({"graph_size": [8, "abc"]})
    with pytest.raises(GraphlabError) as raised:
        write_csv_atomic(frame, tmp_path / "latency.csv")
    assert str(raised.value) == "column 'graph_size' holds integers or blanks, got 'abc'"
    assert list(tmp_path.iterdir()) == []


def test_the_start_up_lock_check_makes_no_folder_and_leaves_no_lock(tmp_path):
    export.check_unlocked(tmp_path / "new")
    assert not (tmp_path / "new").exists()
    export.check_unlocked(tmp_path)
    assert list(tmp_path.iterdir()) == []  # the lock is taken and dropped, its file removed


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


def test_an_export_that_fails_keeps_the_sweeps_checkpoint(tmp_path):
    # the checkpoint goes only once the whole CSV is in place: a failed write loses no rows
    checkpoint = write_checkpoint(pd.DataFrame({"n": [1, 2]}), tmp_path, "latency")
    with pytest.raises(GraphlabError, match="column 'graph_size' holds integers or blanks"):
        export.export_csvs({"latency": pd.DataFrame({"graph_size": [2.5]})}, tmp_path)
    assert checkpoint.exists() and not (tmp_path / "latency.csv").exists()


def test_the_start_up_lock_check_leaves_a_file_given_as_out_to_the_folder_check(tmp_path):
    # a file is no folder to lock: the export then refuses it in one line, not an OSError here
    out = tmp_path / "results.csv"
    out.write_text("n\n1\n")
    export.check_unlocked(out)
    with pytest.raises(GraphlabError, match="is not a folder; give a folder for the CSVs"):
        export.export_csvs({"latency": pd.DataFrame({"n": [1]})}, out)
    assert out.read_text() == "n\n1\n"
