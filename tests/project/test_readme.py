"""The README's "Using graphlab in your own code" examples run as printed, and say what they return;
`make lab`, its way into the notebooks, starts a JupyterLab that answers on loopback."""

import ast
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import pytest
from helpers import ROOT

README = ROOT / "README.md"


def _examples() -> list[str]:
    text = README.read_text()
    section = text.split("## Using graphlab in your own code", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def _claims(block: str):
    """(expression, value) for each line `expr  # literal` whose comment opens with a Python
    literal."""
    for line in block.splitlines():
        code, _, comment = line.partition("  # ")
        if not comment or "=" in code.split("(")[0]:
            continue
        for end in range(len(comment), 0, -1):  # the longest prefix that is a literal
            try:
                yield code.strip(), ast.literal_eval(comment[:end])
                break
            except (ValueError, SyntaxError):
                continue


def test_the_readme_has_examples_with_claims():
    blocks = _examples()
    assert len(blocks) >= 4 and sum(len(list(_claims(b))) for b in blocks) >= 4


@pytest.mark.parametrize("index", range(len(_examples())))
def test_readme_example_runs_and_returns_what_it_says(index, tmp_path, monkeypatch, one_thread):
    monkeypatch.chdir(tmp_path)  # examples write under build/
    block = _examples()[index]
    namespace: dict = {}
    exec(compile(block, f"README example {index + 1}", "exec"), namespace)
    for expression, value in _claims(block):
        assert eval(expression, namespace) == value, expression


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(
    shutil.which("make") is None or not (ROOT / ".venv/bin/python").exists(),
    reason="needs make and a built .venv",
)
def test_make_lab_serves_the_notebooks_on_loopback(tmp_path):
    port, token = _free_port(), secrets.token_hex(16)
    env = {
        **os.environ,
        "JUPYTER_TOKEN": token,
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
    }
    # -o: the venv's stamp counts as up to date; building the venv is `make test`'s step, not this.
    command = ["make", "--no-print-directory", "-o", ".venv/.installed", "lab", f"LAB_PORT={port}"]
    # the server holds its own copy of the log's file descriptor
    with open(tmp_path / "lab.log", "w") as log:
        server = subprocess.Popen(
            command,
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # one group to stop
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{port}/api/contents?token={token}", timeout=5
                ) as answer:
                    listing = json.load(answer)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    tail = (tmp_path / "lab.log").read_text()[-2000:]
                    pytest.fail(f"`make lab` did not answer: {tail}")
                time.sleep(0.5)
        names = {item["name"] for item in listing["content"]}
        assert "00_setup_check.ipynb" in names and "02_the_crash.ipynb" in names
        text = (tmp_path / "lab.log").read_text()
        assert "pip install" not in text, "make lab rebuilt the venv"
        assert f"http://127.0.0.1:{port}/" in text  # the address it prints is the loopback one
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)
    with pytest.raises(OSError):  # stopped: nothing answers on the port any more
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)


def test_the_readme_states_every_gpu_target_with_its_threshold():
    from graphlab.bench.targets import TARGETS

    rows = re.findall(r"^  \| (.+?) \| ([≥≤]) ([\d.]+) \|", README.read_text(), flags=re.M)
    stated = {name.split(", `")[0]: (float(value), sign == "≥") for name, sign, value in rows}
    assert stated == TARGETS
