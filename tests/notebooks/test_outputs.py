"""Nothing lost, nothing overwritten: bench interrupted at several points over complete CSVs, two
runs on one --out, device nodes, FIFOs and sockets as outputs and inputs, a full disk."""

import contextlib
import io
import json
import os
import socket
import stat
import subprocess
import sys

import pandas as pd
import pytest

from graphlab.bench import export, suites, sweeps
from graphlab.bench.export import LOCK_NAME, locked_folder
from graphlab.cli import main
from graphlab.errors import GraphlabError
from helpers import TINY


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def bench_argv(out):
    return ["bench", "--device", "cpu", "--backend", "cpu-emulated", "--out", str(out)]


@pytest.fixture(scope="module")
def complete(tmp_path_factory):
    """A folder of complete CSVs from one whole run: what an interrupted run must not spoil."""
    out = tmp_path_factory.mktemp("complete")
    sweeps.run_bench(TINY, "cpu", out, progress=False, backend="cpu-emulated")
    return {p.name: p.read_bytes() for p in out.iterdir()}


def _interrupt_at(monkeypatch, target: str, when: str):
    """Ctrl-C just before or just after the file named target takes its name (os.replace)."""
    replace = os.replace

    def interrupted(src, dst, *args, **kwargs):
        if os.path.basename(dst) == target and when == "before":
            raise KeyboardInterrupt
        replace(src, dst, *args, **kwargs)
        if os.path.basename(dst) == target and when == "after":
            raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)


@pytest.mark.parametrize(
    "target, when",
    [
        ("latency.partial.csv", "before"),  # in the middle of the first checkpoint
        ("latency.partial.csv", "after"),  # right after it: 64 of 166 rows in the run
        ("graph_memory.partial.csv", "after"),
        ("graph_memory.csv", "before"),  # the whole table written, not yet named
        ("spec_decode.csv", "after"),  # a sweep done, the next not begun
    ],
)
def test_an_interrupt_never_replaces_a_complete_csv(
    target, when, complete, tmp_path, monkeypatch, capsys
):
    for name, data in complete.items():
        (tmp_path / name).write_bytes(data)
    monkeypatch.setitem(suites.SUITES, "quick", TINY)
    _interrupt_at(monkeypatch, target, when)
    code, out, err = run_cli(capsys, *bench_argv(tmp_path))
    monkeypatch.undo()
    assert code == 130 and out == "" and "Traceback" not in err
    line = err.strip().splitlines()[-1]
    prefix = f"interrupted: complete CSVs under {tmp_path}: "
    assert line.startswith(prefix)
    listed, _, partial = line[len(prefix) :].partition(
        "; partial (rows so far, not a whole sweep): "
    )
    listed = [] if listed == "none" else listed.split(", ")
    partial = partial.split(", ") if partial else []
    # The folder's manifest names the same CSVs as this run's as the one-line message does.
    manifest = json.loads((tmp_path / export.MANIFEST_NAME).read_text())
    assert manifest["state"] == "interrupted" and export.files_of_run(manifest) == listed
    for name, data in complete.items():
        now = (tmp_path / name).read_bytes()
        if name == export.MANIFEST_NAME:
            continue
        if name in listed:  # new and whole: as many rows as the complete run's, another run_id
            old, new = pd.read_csv(io.BytesIO(data)), pd.read_csv(tmp_path / name)
            assert set(new.run_id) != set(old.run_id)
            if name == "latency_samples.csv":  # sampled until decided: the same steps, not counts
                keys = ["engine", "num_reqs", "mode"]
                steps = [f[keys].drop_duplicates().to_numpy().tolist() for f in (new, old)]
                assert steps[0] == steps[1]
            else:
                assert len(new) == len(old)
        else:
            assert now == data, f"{name} changed but is not listed as complete"
    for name in partial:
        assert name.endswith(".partial.csv") and (tmp_path / name).is_file()
    expected = {
        "graph_memory.csv": ["copy_bandwidth.csv", "latency.csv", "latency_samples.csv"]
    }.get(target)
    if expected is not None:
        assert listed == expected
    if target.endswith(".partial.csv") and when == "after":
        assert partial == [target]
    leftovers = {p.name for p in tmp_path.iterdir()} - set(complete) - set(partial)
    assert leftovers == set(), "a temporary file or the lock was left behind"


def test_a_finished_sweep_drops_its_checkpoint(tmp_path):
    (tmp_path / "latency.partial.csv").write_text("rows of an interrupted run\n")
    frame = pd.DataFrame({"a": [1]})
    export.export_csvs({"latency": frame}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latency.csv"]


# ---- two runs on one --out --------------------------------------------------------------------

HOLD = (
    "import sys, time; from graphlab.bench.export import locked_folder\n"
    "with locked_folder(sys.argv[1]):\n"
    "    print('held', flush=True); time.sleep(600)\n"
)


@contextlib.contextmanager
def lock_held_by_another_process(folder):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert proc.stdout.readline() == "held\n"
        yield proc
    finally:
        proc.kill()
        proc.wait()


def test_a_second_run_on_one_out_is_refused_naming_the_first(tmp_path, capsys, monkeypatch):
    (tmp_path / "latency.csv").write_text("the first run's\n")
    monkeypatch.setitem(suites.SUITES, "quick", TINY)
    with lock_held_by_another_process(tmp_path) as first:
        code, out, err = run_cli(capsys, *bench_argv(tmp_path))
        assert code == 2 and out == ""
        assert err == (
            f"error: --out {str(tmp_path)!r} is in use by another run (pid {first.pid}, lock file "
            f"{str(tmp_path / LOCK_NAME)!r}); wait for it to end or give another --out\n"
        )
    assert (tmp_path / "latency.csv").read_text() == "the first run's\n"


def test_a_lock_left_by_a_killed_run_is_taken(tmp_path):
    with lock_held_by_another_process(tmp_path):
        pass  # killed with SIGKILL: its lock file stays, its lock does not
    assert (tmp_path / LOCK_NAME).is_file()
    with locked_folder(tmp_path) as lock:
        assert lock.read_text() == f"{os.getpid()}\n"
    assert list(tmp_path.iterdir()) == []


def test_one_process_cannot_take_its_own_folder_twice(tmp_path):
    refused = pytest.raises(GraphlabError, match=f"pid {os.getpid()}")
    with locked_folder(tmp_path), refused, locked_folder(tmp_path):
        pass


# ---- outputs and inputs that are not regular files --------------------------------------------


def _nodes(tmp_path):
    """A FIFO, a socket and (as root) a copy of /dev/full's node, all under tmp_path."""
    nodes = {}
    os.mkfifo(tmp_path / "fifo.csv")
    nodes["a FIFO"] = tmp_path / "fifo.csv"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.csv"))
    nodes["a socket"] = tmp_path / "sock.csv"
    try:
        os.mknod(tmp_path / "full.csv", stat.S_IFCHR | 0o666, os.makedev(1, 7))
        nodes["a character device"] = tmp_path / "full.csv"
    except PermissionError:  # mknod of a device needs root
        pass
    return nodes, server


def test_crash_map_refuses_to_replace_a_device_fifo_or_socket(tmp_path, capsys):
    nodes, server = _nodes(tmp_path)
    with server:
        for kind, path in nodes.items():
            before = os.stat(path)
            code, out, err = run_cli(
                capsys, "crash-map", "--engine", "vllm-0.5.5", "--max-num-seqs-range", "1:2",
                "--k-range", "0:0", "--out", str(path),
            )  # fmt: skip
            assert (code, out) == (2, "")
            assert (
                err == f"error: --out {str(path)!r} is {kind}; give a regular file or a new path\n"
            )
            after = os.stat(path)
            assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)


@pytest.mark.parametrize("option", ["--batch-sizes", "--steps"])
def test_plan_refuses_a_fifo_as_input_instead_of_blocking(option, tmp_path, capsys):
    nodes, server = _nodes(tmp_path)
    with server:
        for kind, path in nodes.items():
            code, out, err = run_cli(capsys, "plan", "--max-num-seqs", "4", option, str(path))
            assert (code, out) == (2, "")
            assert err == f"error: CSV {str(path)!r} is {kind}; give a regular file\n"


def test_plan_refuses_a_folder_as_input(tmp_path, capsys):
    code, _, err = run_cli(capsys, "plan", "--max-num-seqs", "4", "--batch-sizes", str(tmp_path))
    assert code == 2 and err == f"error: CSV {str(tmp_path)!r} is a folder; give a regular file\n"


def test_write_csv_atomic_refuses_a_node(tmp_path):
    nodes, server = _nodes(tmp_path)
    with server:
        for kind, path in nodes.items():
            with pytest.raises(GraphlabError, match=f"is {kind}"):
                export.write_csv_atomic(pd.DataFrame({"a": [1]}), path)
            assert not stat.S_ISREG(os.stat(path).st_mode)


# ---- a full disk -------------------------------------------------------------------------------


@pytest.fixture
def small_tmpfs(tmp_path):
    """A 64 KiB tmpfs (root only; elsewhere the simulated ENOSPC test in test_bench_export)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


def test_a_full_disk_keeps_the_complete_csvs_and_says_which_failed(
    small_tmpfs, complete, capsys, monkeypatch
):
    for name in ("latency.csv", "graph_memory.csv"):
        (small_tmpfs / name).write_bytes(complete[name])
    # Fill the disk but for a few KiB: the small tables fit, the latency checkpoint does not.
    ballast = small_tmpfs / "ballast"
    with contextlib.suppress(OSError), open(ballast, "wb") as handle:
        while True:
            handle.write(b"\0" * 1024)
            handle.flush()
    ballast.write_bytes(ballast.read_bytes()[: -4 * 1024])
    monkeypatch.setitem(suites.SUITES, "quick", TINY)
    code, out, err = run_cli(capsys, *bench_argv(small_tmpfs))
    line = err.strip().splitlines()[-1]  # after the progress bar
    assert code == 2 and out == "" and "No space left on device" in line, line
    failed = line.split("error: cannot write ")[1].split(" ")[0]
    listed = line.split("complete CSVs: ")[1].split(";")[0].split(", ")
    # The manifest, rewritten after each sweep, may be the file the full disk refuses.
    assert (failed.endswith(".csv") or failed == export.MANIFEST_NAME) and failed not in listed
    for name in listed:
        if name != "none":
            assert len(pd.read_csv(small_tmpfs / name)) == len(
                pd.read_csv(io.BytesIO(complete[name]))
            )
    for name in ("latency.csv", "graph_memory.csv"):
        if name not in listed:
            assert (small_tmpfs / name).read_bytes() == complete[name]
    assert not [p for p in small_tmpfs.iterdir() if p.name.endswith(".tmp")]


# ---- issue 50: refusals before the slow start, and a folder named "-" --------------------------

REFUSED_BEFORE_TORCH = (
    "import sys; from graphlab.cli import main\n"
    "code = main(['bench', '--device', 'cpu', '--out', sys.argv[1]])\n"
    "print(code, 'torch' in sys.modules)\n"
)


def test_a_second_bench_is_refused_before_torch_is_imported(tmp_path):
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    with lock_held_by_another_process(tmp_path) as first:
        second = subprocess.run(
            [sys.executable, "-c", REFUSED_BEFORE_TORCH, str(tmp_path)],
            capture_output=True, text=True, env=env, timeout=60,
        )  # fmt: skip
    assert second.stdout == "2 False\n", second.stderr
    assert second.stderr == (
        f"error: --out {str(tmp_path)!r} is in use by another run (pid {first.pid}, lock file "
        f"{str(tmp_path / LOCK_NAME)!r}); wait for it to end or give another --out\n"
    )


def test_bench_out_dash_is_refused_not_made_a_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "bench", "--out", "-")
    assert (code, out) == (2, "")
    assert err == "error: --out '-' is standard output; give a folder for the CSVs\n"
    assert list(tmp_path.iterdir()) == []


def test_the_lock_itself_refuses_a_second_holder_in_another_process(tmp_path):
    # Without fcntl.flock both would "hold" the folder: the second must be refused by the kernel's
    # lock, not by the lock file's presence (a killed run leaves one that is taken).
    with (
        lock_held_by_another_process(tmp_path) as first,
        pytest.raises(GraphlabError) as refused,
        locked_folder(tmp_path),
    ):
        pass
    assert f"in use by another run (pid {first.pid}," in str(refused.value)
    with locked_folder(tmp_path):  # the holder gone (killed): taken
        pass
