"""`python -m graphlab audit | crash-map`: output schema, one-line errors, atomic CSV."""

import json
import os
import subprocess
import sys

import pandas as pd
import pytest

from graphlab.bench import sweeps
from graphlab.cli import main
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_audit_json_schema(capsys):
    code, out, err = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs",
        "8",
        "--num-speculative-tokens",
        "4",
        "--json",
    )
    assert code == 0 and err == ""
    data = json.loads(out)
    assert {
        "engine",
        "max_num_seqs",
        "num_speculative_tokens",
        "max_num_batched_tokens",
        "capture_sizes",
        "outcomes",
        "summary",
    } <= set(data)
    assert (data["engine"], data["max_num_seqs"], data["num_speculative_tokens"]) == (
        "vllm-0.5.5",
        8,
        4,
    )
    assert data["max_num_batched_tokens"] is None and data["capture_sizes"] == [1, 2, 4, 8]
    by_n = {o["batch_size"]: o for o in data["outcomes"]}
    assert set(by_n[1]) == {"batch_size", "path", "graph_size", "error"}
    assert by_n[40] == {
        "batch_size": 40,
        "path": "crash",
        "graph_size": None,
        "error": "KeyError: 40",
    }
    assert by_n[5] == {"batch_size": 5, "path": "graph", "graph_size": 8, "error": None}
    assert len(by_n) == data["summary"]["num_reachable"] == 34


def test_audit_table_compresses_runs(capsys):
    code, out, _ = run_main(capsys, "audit", "--engine", "nano-vllm", "--max-num-seqs", "100")
    assert code == 0
    assert "97-100  crash  StopIteration" in out
    assert "capture_sizes (10): 1, 2, 4, 8, 16" in out and "first crash at n=97" in out


def test_v1_json_reports_token_budget(capsys):
    code, out, _ = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.33.0",
        "--max-num-seqs",
        "4",
        "--num-speculative-tokens",
        "2",
        "--max-num-batched-tokens",
        "16",
        "--json",
    )
    data = json.loads(out)
    assert code == 0 and data["max_num_batched_tokens"] == 16 and max(data["capture_sizes"]) == 16


@pytest.mark.parametrize(
    "argv, named",
    [
        (["audit", "--engine", "vllm-9.9", "--max-num-seqs", "8"], "'vllm-9.9'"),
        (["audit", "--engine", "sglang", "--max-num-seqs", "0"], "got 0"),
        (["audit", "--engine", "sglang", "--max-num-seqs", "-4"], "got -4"),
        (
            [
                "audit",
                "--engine",
                "sglang",
                "--max-num-seqs",
                "4",
                "--num-speculative-tokens",
                "-1",
            ],
            "got -1",
        ),
        (["crash-map", "--engine", "nope", "--out", "x.csv"], "'nope'"),
        (["crash-map", "--k-range", "5:2", "--out", "x.csv"], "'5:2'"),
        (["crash-map", "--max-num-seqs-range", "0:3", "--out", "x.csv"], "'0:3'"),
    ],
)
def test_bad_input_one_line_exit_2(capsys, argv, named):
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and out == ""
    assert (
        err.count("\n") == 1
        and err.startswith("error: ")
        and named in err
        and "Traceback" not in err
    )
    if "--engine" in argv and named in ("'vllm-9.9'", "'nope'"):
        assert "vllm-0.5.5" in err and "trtllm" in err  # the allowed values
    if named in ("got 0", "got -4", "got -1"):
        assert "must be an integer in " in err  # the allowed range


def test_crash_map_csv_written_and_read_back(tmp_path, capsys):
    out = tmp_path / "map.csv"
    code, stdout, _ = run_main(
        capsys,
        "crash-map",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs-range",
        "1:16",
        "--k-range",
        "0:4",
        "--out",
        str(out),
    )
    assert code == 0 and "80 rows" in stdout
    frame = pd.read_csv(out)
    assert len(frame) == 80 and set(frame.num_speculative_tokens) == set(range(5))
    row = frame.query("max_num_seqs == 8 and num_speculative_tokens == 4").iloc[0]
    assert (row.first_crash_n, row.error) == (9, "KeyError: 16")


def test_crash_map_unwritable_out_leaves_nothing(tmp_path, capsys):
    (tmp_path / "a-file").write_text("")
    out = tmp_path / "a-file" / "map.csv"  # a folder that cannot be created
    code, _, err = run_main(
        capsys,
        "crash-map",
        "--engine",
        "nano-vllm",
        "--max-num-seqs-range",
        "1:4",
        "--out",
        str(out),
    )
    assert (
        code == 2 and err.count("\n") == 1 and "cannot create --out" in err and "is a file" in err
    )
    assert os.listdir(tmp_path) == ["a-file"]


def test_module_entry_point_and_help():
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    done = subprocess.run(
        [sys.executable, "-m", "graphlab", "audit", "--help"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (
        done.returncode == 0
        and "graph" in done.stdout
        and "eager" in done.stdout
        and "crash" in done.stdout
    )
    done = subprocess.run(
        [sys.executable, "-m", "graphlab", "audit", "--engine", "x", "--max-num-seqs", "1"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1


# --- parsing helpers and bench --------------------------------------------------------------------


def one_line_error(capsys, *argv):
    code, out, err = run_main(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and err.startswith("error: ")
    assert "Traceback" not in err
    return err


@pytest.mark.parametrize("value", ["99999999999999999999", str(MAX_NUM_BATCHED_TOKENS_LIMIT + 1)])
def test_huge_token_budget_fails_at_once_naming_the_limit(capsys, value):
    err = one_line_error(
        capsys,
        "audit",
        "--engine",
        "vllm-0.33.0",
        "--max-num-seqs",
        "8",
        "--max-num-batched-tokens",
        value,
    )
    assert f"got {value}" in err and f"1..{MAX_NUM_BATCHED_TOKENS_LIMIT}" in err


@pytest.mark.parametrize(
    "argv, limit",
    [
        (("audit", "--engine", "vllm-0.5.5", "--max-num-seqs", "99999999999999999999"), "1..65536"),
        (("audit", "--engine", "vllm-0.5.5", "--max-num-seqs", "10000000"), "1..65536"),
        (
            (
                "audit",
                "--engine",
                "vllm-0.5.5",
                "--max-num-seqs",
                "8",
                "--num-speculative-tokens",
                "65",
            ),
            "0..64",
        ),
        (("repro", "--max-num-seqs", "100000"), "1..1024"),
        (("repro", "--max-model-len", "100000"), "2..1024"),
        (("crash-map", "--max-num-seqs-range", "1:100000", "--out", "x.csv"), "<= 4096"),
        (
            ("plan", "--max-num-seqs", "65536", "--max-num-batched-tokens", "1048576"),
            "at most 2048",
        ),
    ],
)
def test_huge_values_fail_at_once_naming_the_limit(capsys, argv, limit):
    err = one_line_error(capsys, *argv)
    assert limit in err


def test_int_in_bounds(capsys):
    audit = ("audit", "--engine", "vllm-0.5.5", "--json", "--max-num-seqs")
    assert run_main(capsys, *audit, "65536")[0] == 0
    for bad in ("0", "65537", "99999999999999999999", "1e3", "", "x"):
        err = one_line_error(capsys, *audit, bad)
        assert "argument --max-num-seqs: must be an integer in 1..65536, got " in err, err
    err = one_line_error(capsys, "crash-map", "--k-range", "0:65", "--out", "x.csv")
    assert "argument --k-range: must be START:END with 0 <= START <= END <= 64, got '0:65'" in err


def test_bench_out_existing_file_fails_before_any_sweep(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweeps, "run_bench", lambda *a, **k: pytest.fail("a sweep ran"))
    target = tmp_path / "a-file"
    target.write_text("keep me")
    err = one_line_error(capsys, "bench", "--out", str(target))
    assert "existing file" in err and repr(str(target)) in err and target.read_text() == "keep me"


def test_bench_out_unwritable_fails_before_any_sweep(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(sweeps, "run_bench", lambda *a, **k: pytest.fail("a sweep ran"))
    (tmp_path / "file").write_text("")
    err = one_line_error(capsys, "bench", "--out", str(tmp_path / "file" / "below"))
    assert "cannot create --out" in err and "is a file" in err
    if os.geteuid() != 0:  # root writes anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        assert "not writable" in one_line_error(capsys, "bench", "--out", str(locked / "x"))


def test_bench_ctrl_c_names_the_finished_csvs(tmp_path, capsys, monkeypatch):
    stale = tmp_path / "out" / "crash_map.csv"
    stale.parent.mkdir()
    stale.write_text("from an earlier run\n")
    os.utime(stale, (0, 0))

    def interrupted(suite, device, out, **kwargs):
        (out / "latency.csv").write_text("engine\n")  # the first sweep finished
        raise KeyboardInterrupt

    monkeypatch.setattr(sweeps, "run_bench", interrupted)
    code, out, err = run_main(capsys, "bench", "--out", str(tmp_path / "out"))
    assert code == 130 and out == "" and "Traceback" not in err
    assert err == f"interrupted: complete CSVs under {tmp_path / 'out'}: latency.csv\n"


def test_bench_ctrl_c_in_a_real_run_exits_130_without_traceback(tmp_path):
    """SIGINT to `python -m graphlab bench` once its first sweep has started."""
    import signal
    import time

    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graphlab",
            "bench",
            "--device",
            "cpu",
            "--out",
            str(tmp_path / "out"),
        ],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    seen, deadline = "", time.monotonic() + 120
    while "bench quick" not in seen and time.monotonic() < deadline:  # the progress bar: sweeps run
        seen += proc.stderr.read(1)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert "bench quick" in seen
    assert proc.returncode == 130 and "Traceback" not in err
    assert (
        err.strip()
        .splitlines()[-1]
        .startswith(f"interrupted: complete CSVs under {tmp_path / 'out'}: ")
    )


# --- ranges, --out checks and work bounds ---------------------------------------------------------


def test_a_single_value_range_is_a_range(capsys, tmp_path):
    code, out, _ = run_main(
        capsys,
        "crash-map",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs-range",
        "3:3",
        "--k-range",
        "2:2",
        "--out",
        str(tmp_path / "map.csv"),
    )
    assert code == 0 and len(pd.read_csv(tmp_path / "map.csv")) == 1


def test_a_negative_range_is_named(capsys):
    err = one_line_error(capsys, "crash-map", "--max-num-seqs-range", "-1:4", "--out", "x.csv")
    assert "got '-1:4'" in err and "1 <= START <= END <= 4096" in err


@pytest.mark.parametrize("command", ["bench", "crash-map"])
def test_out_not_writable_fails_before_any_work(tmp_path, capsys, monkeypatch, command):
    # The check itself is mocked: as root (how CI runs) every folder is writable.
    from graphlab.sizing import crash_maps

    monkeypatch.setattr(sweeps, "run_bench", lambda *a, **k: pytest.fail("a sweep ran"))
    monkeypatch.setattr(
        crash_maps, "crash_map", lambda *a, **k: pytest.fail("the map was computed")
    )
    monkeypatch.setattr(os, "access", lambda path, mode: str(path) != str(tmp_path))
    err = one_line_error(capsys, command, "--out", str(tmp_path / "x.csv"))
    assert (
        f"cannot write --out {str(tmp_path / 'x.csv')!r}: {str(tmp_path)!r} is not writable" in err
    )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", ["bench", "crash-map"])
def test_empty_out_is_one_clear_line(capsys, command):
    assert "--out is empty" in one_line_error(capsys, command, "--out", "")


def test_crash_map_out_folder_fails_before_computing(tmp_path, capsys, monkeypatch):
    from graphlab.sizing import crash_maps

    monkeypatch.setattr(
        crash_maps, "crash_map", lambda *a, **k: pytest.fail("the map was computed")
    )
    assert "is a folder" in one_line_error(capsys, "crash-map", "--out", str(tmp_path))


def test_work_bounds_are_stated_and_applied(capsys):
    from graphlab.sizing.audit import MAX_AUDIT_BATCH_SIZES
    from graphlab.sizing.crash_maps import CRASH_MAP_MAX_BATCH_SIZES

    err = one_line_error(
        capsys, "crash-map", "--max-num-seqs-range", "1:4096", "--k-range", "0:64", "--out", "x.csv"
    )
    assert f"at most {CRASH_MAP_MAX_BATCH_SIZES}" in err and not os.path.exists("x.csv")
    err = one_line_error(
        capsys,
        "audit",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs",
        "65536",
        "--num-speculative-tokens",
        "64",
        "--json",
    )
    assert "reach 4257824 batch sizes" in err and f"at most {MAX_AUDIT_BATCH_SIZES}" in err
    for command, bound in (
        ("crash-map", CRASH_MAP_MAX_BATCH_SIZES),
        ("audit", MAX_AUDIT_BATCH_SIZES),
    ):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        assert f"at most {bound} batch sizes" in " ".join(capsys.readouterr().out.split())


def test_audit_api_applies_the_limits():
    from graphlab.sizing.audit import audit

    # S = 4127, k = 63 reach 262175 batch sizes: just past the 2**18 an audit lists.
    for cfg, named in (
        (SizingConfig(2**20, 64), "max_num_seqs must be at most 65536"),
        (SizingConfig(65536, 64), "audit lists at most"),
        (SizingConfig(4127, 63), "reach 262175 batch sizes"),
    ):
        with pytest.raises(GraphlabError, match=named):
            audit("vllm-0.5.5", cfg)


def test_ctrl_c_while_starting_prints_no_traceback():
    import signal
    import time

    env = dict(os.environ, PYTHONPATH=os.getcwd())
    # From the moment Python imports graphlab (its own start-up, site included, is Python's):
    # loading the command line, numpy and pandas, then the command.
    for delay in (0.25, 0.5, 1.0):
        proc = subprocess.Popen(
            [sys.executable, "-m", "graphlab", "plan", "--max-num-seqs", "8"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        # -SIGINT: the command had finished and Python was exiting (its handlers reset).
        assert "Traceback" not in err and proc.returncode in (0, 130, -signal.SIGINT), (delay, err)


INTERRUPTED_DURING_A_COMPILE = """
import concurrent.futures, subprocess, time
import graphlab.__main__ as entry, graphlab.cli as cli

def main():  # a command whose compile threads each wait for a compiler process, as inductor's
    pool = concurrent.futures.ThreadPoolExecutor(1)  # joined at the interpreter's exit
    pool.submit(subprocess.run, ["sleep", "600"])
    print("compiling", flush=True)
    try:
        time.sleep(600)
    except KeyboardInterrupt:
        return 130  # as graphlab.cli.main reports an interrupt

cli.main = main
entry.run()
"""


def test_an_interrupt_stops_the_compiler_jobs_the_exit_would_wait_for(tmp_path):
    """An interrupt sent to the process alone (not to its group, as a terminal does) must not
    leave the exit joining compile threads until their compiler processes finish."""
    import signal
    import time

    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen(
        [sys.executable, "-c", INTERRUPTED_DURING_A_COMPILE],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout.readline() == "compiling\n"
    deadline, child = time.monotonic() + 30, []
    while not child and time.monotonic() < deadline:  # the worker thread starts its process
        child = subprocess.run(["pgrep", "-P", str(proc.pid), "sleep"], capture_output=True,
                               text=True).stdout.split()  # fmt: skip
    assert len(child) == 1
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=60) == 130  # without the stop: the child's whole 600 s
    while os.path.exists(f"/proc/{child[0]}") and time.monotonic() < deadline:
        time.sleep(0.1)  # reaped by init once its parent is gone
    assert not os.path.exists(f"/proc/{child[0]}")


def _plan_json(capsys, *argv):
    code, out, err = run_main(capsys, *argv)
    assert code == 0 and err == "", err
    return json.loads(out)


def test_plan_follows_the_attention_backend_and_says_so(capsys):
    """vLLM 0.13.0's FlashInferBackend reports UNIFORM_SINGLE_TOKEN_DECODE (flashinfer.py): at
    q = 3 vLLM lowers the default FULL_AND_PIECEWISE to PIECEWISE, so the plan is PIECEWISE's."""
    argv = ["plan", "--engine", "vllm-0.13.0", "--max-num-seqs", "8"]
    argv += ["--num-speculative-tokens", "2", "--json"]
    named = _plan_json(capsys, *argv, "--attention-backend", "FLASHINFER")
    piecewise = _plan_json(capsys, *argv, "--cudagraph-mode", "PIECEWISE")
    default = _plan_json(capsys, *argv)
    same = ("capture_sizes", "default_capture_sizes", "default_full_sizes", "mean_padding_waste")
    assert {k: named[k] for k in same} == {k: piecewise[k] for k in same}
    assert default["default_full_sizes"] and not named["default_full_sizes"]
    assert any("AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE" in n for n in named["notes"])
    # FlashAttention 3 (the h100 tier's default) lowers nothing: nothing said about it
    assert not any("attention backend" in n or "model runner" in n for n in default["notes"])


def test_plan_on_the_model_runner_asked_for(capsys):
    """vLLM 0.33.0's model runner V1 rounds its whole list to multiples of 1+k
    (adjust_cudagraph_sizes_for_spec_decode): the default it compares with is V1's."""
    argv = ["plan", "--max-num-seqs", "8", "--num-speculative-tokens", "2", "--json"]
    v1 = _plan_json(capsys, *argv, "--model-runner", "v1")
    auto = _plan_json(capsys, *argv)
    assert all(size % 3 == 0 for size in v1["default_capture_sizes"])
    assert v1["default_capture_sizes"] != auto["default_capture_sizes"]
    assert "model runner V1: --model-runner v1 (VLLM_USE_V2_MODEL_RUNNER=0)" in v1["notes"]
