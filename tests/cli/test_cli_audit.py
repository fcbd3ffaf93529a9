"""`python -m graphlab audit | crash-map`: capture settings, vLLM command lines, refusals, the
table."""

import json
import os
import re
import subprocess
import sys

import pandas as pd
import pytest

from graphlab.cli import main
from graphlab.cli.arguments import EXIT_REFUSED
from graphlab.errors import Unavailable
from graphlab.sizing.batches import reachable_batch_sizes
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine
from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def audit_json(capsys, *argv):
    code, out, err = run_main(capsys, "audit", *argv, "--json")
    assert err == "", err
    return code, json.loads(out)


def test_issue_54933_explicit_maximum_in_json(capsys):
    code, data = audit_json(
        capsys,
        "--engine",
        "vllm-0.33.0",
        "--max-num-seqs",
        "6",
        "--num-speculative-tokens",
        "6",
        "--max-cudagraph-capture-size",
        "42",
    )
    assert code == 0 and data["warnings"] == ["Truncating max_cudagraph_capture_size to 40"]
    assert data["max_cudagraph_capture_size"] == 42 and data["capture_sizes"][-1] == 40
    assert {o["batch_size"]: o["path"] for o in data["outcomes"]}[42] == "eager"
    code, default = audit_json(
        capsys, "--engine", "vllm-0.33.0", "--max-num-seqs", "6", "--num-speculative-tokens", "6"
    )
    assert (
        default["warnings"] == []
        and {o["batch_size"]: o["graph_size"] for o in default["outcomes"]}[42] == 42
    )


def test_explicit_capture_sizes_flag(capsys):
    code, data = audit_json(
        capsys,
        "--engine",
        "vllm-0.13.0",
        "--max-num-seqs",
        "4",
        "--cudagraph-capture-sizes",
        "8,1,4,2,4",
        "--max-num-batched-tokens",
        "6",
    )
    assert (
        code == 0
        and data["cudagraph_capture_sizes"] == [8, 1, 4, 2, 4]
        and data["capture_sizes"] == [1, 2, 4]
    )
    assert data["warnings"] == [
        "cudagraph_capture_sizes specified in compilation_config [8, 1, 4, 2, 4] "
        "is overridden by config [1, 2, 4]"
    ]
    code, out, _ = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.13.0",
        "--max-num-seqs",
        "4",
        "--cudagraph-capture-sizes",
        "8,1,4,2,4",
        "--max-num-batched-tokens",
        "6",
    )
    assert "WARNING (logged by vLLM): cudagraph_capture_sizes specified" in out


@pytest.mark.parametrize(
    "argv, named",
    [
        (
            ["--engine", "vllm-0.5.5", "--max-num-seqs", "8", "--cudagraph-capture-sizes", "1,2"],
            ["'vllm-0.5.5'"],
        ),
        (
            ["--engine", "sglang", "--max-num-seqs", "8", "--max-cudagraph-capture-size", "8"],
            ["'sglang'"],
        ),
        (
            ["--engine", "vllm-0.33.0", "--max-num-seqs", "8", "--cudagraph-capture-sizes", "1,x"],
            ["'1,x'"],
        ),
        (
            ["--engine", "vllm-0.33.0", "--max-num-seqs", "8", "--cudagraph-capture-sizes", "0,4"],
            ["'0,4'"],
        ),
        (
            [
                "--engine",
                "vllm-0.33.0",
                "--max-num-seqs",
                "8",
                "--cudagraph-capture-sizes",
                "4,99999999999999999999999",
            ],
            ["'4,99999999999999999999999'", f"1..{MAX_NUM_BATCHED_TOKENS_LIMIT}"],
        ),
        (["--engine", "vllm-0.33.0"], ["--max-num-seqs"]),
        (
            ["--engine", "vllm-0.33.0", "--max-num-seqs", "8", "--vllm-args", "--max-num-seqs 4"],
            ["--max-num-seqs"],
        ),
        # shlex refuses it before vllm is imported
        (
            ["--engine", "vllm-0.33.0", "--vllm-args", "'unbalanced"],
            ['"\'unbalanced"', "No closing quotation"],
        ),
    ],
)
def test_bad_capture_settings_one_line_exit_2(capsys, argv, named):
    code, out, err = run_main(capsys, "audit", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert all(part in err for part in named), err


def test_refused_config_is_said_first_and_exits_3(capsys):
    argv = (
        "audit",
        "--engine",
        "vllm-0.12.0",
        "--max-num-seqs",
        "1",
        "--num-speculative-tokens",
        "3",
    )
    code, out, _ = run_main(capsys, *argv)
    assert code == EXIT_REFUSED == 3
    assert out.splitlines()[0].startswith(
        "the engine refuses to start with this config: ValueError: No valid cudagraph sizes"
    )
    code, out, _ = run_main(capsys, *argv, "--json")
    assert code == 3 and json.loads(out)["startup_error"].startswith("ValueError")
    code, out, _ = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.33.0",
        "--max-num-seqs",
        "8",
        "--cudagraph-capture-sizes",
        "1,2,4",
        "--max-cudagraph-capture-size",
        "8",
    )
    assert code == 3 and "should be consistent" in out.splitlines()[0]


def test_help_documents_exit_status(capsys):
    with pytest.raises(SystemExit):
        main(["audit", "--help"])
    out = capsys.readouterr().out
    assert "exit status" in out and "3 the engine refuses" in " ".join(out.split())


def _table_runs(out):
    # "  first-last[ step s]  path  detail" rows of every runner's table.
    for line in out.splitlines():
        m = re.match(
            r"^\s+(\d+)(?:-(\d+))?(?: step (\d+))?\s+(graph|full|piecewise|eager|crash)\b", line
        )
        if m:
            first, last, step = int(m[1]), int(m[2] or m[1]), int(m[3] or 1)
            yield list(range(first, last + 1, step))


@pytest.mark.parametrize(
    "argv",
    [
        (
            "--engine",
            "vllm-0.33.0",
            "--max-num-seqs",
            "8",
            "--num-speculative-tokens",
            "4",
            "--max-num-batched-tokens",
            "16",
        ),
        ("--engine", "vllm-0.13.0", "--max-num-seqs", "40", "--num-speculative-tokens", "3"),
        ("--engine", "vllm-0.5.5", "--max-num-seqs", "8", "--num-speculative-tokens", "4"),
        ("--engine", "nano-vllm", "--max-num-seqs", "100"),
    ],
)
def test_table_ranges_cover_exactly_the_reachable_batches(capsys, argv):
    code, out, _ = run_main(capsys, "audit", *argv)
    engine, seqs = argv[1], int(argv[3])
    k = int(argv[5]) if len(argv) > 5 else 0
    tokens = int(argv[7]) if len(argv) > 7 else None
    listed = [n for run in _table_runs(out) for n in run]
    scorer = reachable_batch_sizes(get_engine(engine), SizingConfig(seqs, k, tokens)).tolist()
    proposer = list(range(1, 2 * seqs + 1)) if engine == "vllm-0.5.5" else []
    assert listed == scorer + proposer
    if tokens == 16:
        assert "max_num_batched_tokens=16" in out and not any(n > 16 for n in listed)


def test_v0_header_omits_token_budget_and_reports_both_runners(capsys):
    code, out, _ = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs",
        "8",
        "--num-speculative-tokens",
        "4",
    )
    assert code == 0 and "max_num_batched_tokens" not in out
    assert "proposer (draft model" in out and "9-16  crash  KeyError: 16" in out
    # One headline, first after the config: the scorer's KeyError: 40, then the draft's 16.
    assert out.splitlines()[1] == (
        "fails first: the scorer (target model), KeyError: 40 on the first decode step of a full "
        "batch (40 rows); fails next: the proposer (draft model), KeyError: 16 at n = 9..16 draft "
        "rows, once bonus tokens widen its batch"
    )
    code, data = audit_json(
        capsys, "--engine", "vllm-0.5.5", "--max-num-seqs", "8", "--num-speculative-tokens", "4"
    )
    assert (
        data["proposer"]["summary"]["first_crash_error"] == "KeyError: 16"
        and data["fails_first"] == "scorer"
    )


def test_crash_map_creates_folders_and_carries_provenance(tmp_path, capsys):
    out = tmp_path / "new" / "deeper" / "map.csv"
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
    assert code == 0 and out.exists()
    frame = pd.read_csv(out)
    assert {"git_commit", "timestamp", "vllm_version", "device"} <= set(frame.columns)
    assert set(frame.backend) == {"computed"} and frame.git_commit.notna().all()
    row = frame.query("max_num_seqs == 8 and num_speculative_tokens == 4").iloc[0]
    assert (row.proposer_first_crash_n, row.proposer_error, row.fails_first) == (
        9,
        "KeyError: 16",
        "scorer",
    )


# --- --vllm-args: the installed vLLM's own parser -------------------------------------------------


@pytest.mark.vllm
def test_vllm_args_read_by_vllms_parser(capsys):
    pytest.importorskip("vllm")
    line = (
        "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 6 --max-num-batched-tokens 4096 "
        '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 6, '
        '"prompt_lookup_max": 4}\' '
        "-cc.max_cudagraph_capture_size 42"
    )
    code, data = audit_json(capsys, "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert (
        data["max_num_seqs"],
        data["num_speculative_tokens"],
        data["max_num_batched_tokens"],
    ) == (6, 6, 4096)
    assert data["max_cudagraph_capture_size"] == 42 and data["warnings"] == [
        "Truncating max_cudagraph_capture_size to 40"
    ]
    code, data = audit_json(
        capsys,
        "--engine",
        "vllm-0.13.0",
        "--vllm-args",
        "--model m --cudagraph-capture-sizes 1 2 4 8",
    )
    assert (
        data["cudagraph_capture_sizes"] == [1, 2, 4, 8] and data["max_num_seqs"] == 1024
    )  # vLLM's H200 default
    code, out, err = run_main(
        capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", "m --max-num-seqz 4"
    )
    assert (
        code == 2
        and err.count("\n") == 1
        and "vLLM's argument parser rejects" in err
        and "max-num-seqz" in err
    )


def test_vllm_args_without_vllm_is_a_clear_error(monkeypatch):
    from graphlab.against_vllm.serve_args import read_vllm_args

    for name in (
        "vllm",
        "vllm.engine",
        "vllm.engine.arg_utils",
        "vllm.utils",
        "vllm.utils.argparse_utils",
        "vllm.entrypoints",
        "vllm.entrypoints.launchers",
        "vllm.entrypoints.launchers.cli_args",
    ):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(Unavailable, match="vllm is not importable .*to read --vllm-args"):
        read_vllm_args("--max-num-seqs 4")


@pytest.mark.vllm
def test_bad_vllm_args_one_line_naming_the_value(capsys):
    pytest.importorskip("vllm")
    cases = {  # --vllm-args -> what the error names: the value, and the limit where one applies
        "vllm serve M --speculative-config '[1]'": [
            "speculative_config must be a JSON object, got [1]"
        ],
        "M --max-num-seqs 100000000 --max-num-batched-tokens 1000000000": [
            "max_num_seqs",
            "100000000",
            "65536",
        ],
        "M --max-num-batched-tokens 1000000000": [
            "max_num_batched_tokens",
            "1000000000",
            "1048576",
        ],
        "M -cc.cudagraph_capture_sizes '[4, 99999999999999999999999]'": [
            "99999999999999999999999",
            "1048576",
        ],
        "M -cc.max_cudagraph_capture_size 2000000": [
            "max_cudagraph_capture_size",
            "2000000",
            "1048576",
        ],
        "M --speculative-config '{\"num_speculative_tokens\": 65}'": [
            "num_speculative_tokens",
            "65",
            "64",
        ],
        # pydantic's four-line ValidationError, on one line without its URL
        'M -cc \'{"cudagraph_capture_sizes": "x"}\'': [
            "cudagraph_capture_sizes",
            "input_value='x'",
        ],
    }
    for line, named in cases.items():
        code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
        assert code == 2 and out == "" and err.count("\n") == 1, (line, err)
        assert err.startswith(
            ("error: --vllm-args", "error: vLLM's argument parser rejects --vllm-args")
        ), err
        assert all(part in err for part in named) and "pydantic.dev" not in err, (line, err)


@pytest.mark.vllm
def test_vllm_args_print_nothing_from_vllms_import():
    pytest.importorskip("vllm")
    env = {key: value for key, value in os.environ.items() if key != "VLLM_LOGGING_LEVEL"}
    env["PYTHONPATH"] = os.getcwd()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "graphlab",
            "audit",
            "--engine",
            "vllm-0.33.0",
            "--vllm-args",
            "vllm serve M --speculative-config '[1]'",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 2 and done.stdout == "", done.stdout
    assert done.stderr.count("\n") == 1 and "JSON object" in done.stderr, done.stderr


def test_drafter_table_follows_the_target_table(capsys):
    # vLLM 0.33, EAGLE, S = 8, k = 3 on model runner V2: the draft prefill replays the target's
    # FULL graphs, the draft decodes FULL_DECODE_ONLY graphs of 1, 2, 4, 8 tokens.
    argv = ["--engine", "vllm-0.33.0", "--max-num-seqs", "8", "--num-speculative-tokens", "3"]
    code, out, err = run_main(capsys, "audit", *argv, "--speculative-method", "eagle")
    assert code == 0 and err == ""
    lines = out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("drafter"))
    assert lines[first - 1].startswith("summary: 8 reachable")  # after the target's table
    assert "model runner V2" in lines[first]
    assert lines[first + 1].startswith("draft prefill (1 per decode step, 4 tokens per request")
    decode = next(line for line in lines if line.startswith("draft decode"))
    assert "2 per decode step" in decode and "FULL uniform graphs: 1, 2, 4, 8" in decode
    code, data = audit_json(capsys, *argv, "--speculative-method", "eagle", "--model-runner", "v1")
    drafter = data["drafter"]
    assert drafter["model_runner"] == "v1"
    assert [s["cudagraph_mode"] for s in drafter["steps"]] == ["PIECEWISE", "PIECEWISE"]
    assert [o["batch_size"] for o in drafter["steps"][1]["outcomes"]] == list(range(1, 9))


def test_drafter_of_an_older_release_with_an_mtp_model_type(capsys):
    # vLLM 0.25.0, S = 4, k = 2, deepseek_mtp (vLLM's SpeculativeConfig renames it mtp): model
    # runner V2's AutoRegressiveSpeculator, whose draft decodes replay FULL graphs of 1, 2, 4.
    argv = ["--engine", "0.25.0", "--max-num-seqs", "4", "--num-speculative-tokens", "2"]
    code, data = audit_json(capsys, *argv, "--speculative-method", "deepseek_mtp")
    drafter = data["drafter"]
    assert code == 0 and drafter["speculative_method"] == "mtp"
    assert drafter["model_runner"] == "v2" and "AutoRegressiveSpeculator" in drafter["note"]
    assert [s["name"] for s in drafter["steps"]] == ["draft prefill", "draft decode"]
    assert drafter["steps"][1]["full_sizes"] == [1, 2, 4]
    # before 0.26.0 draft_model's V1 drafter is never keyed: every draft step eager; 0.26.0
    # (PR 47460) replays the target's PIECEWISE graphs
    code, data = audit_json(capsys, *argv, "--speculative-method", "draft_model")
    steps = data["drafter"]["steps"]
    assert data["drafter"]["model_runner"] == "v1" and "PR 47460" in data["drafter"]["note"]
    assert {o["path"] for s in steps for o in s["outcomes"]} == {"eager"}
    argv[1] = "0.26.0"
    code, data = audit_json(capsys, *argv, "--speculative-method", "draft_model")
    assert code == 0 and data["engine"] == "vllm-0.26.0"
    steps = data["drafter"]["steps"]
    assert {o["path"] for s in steps for o in s["outcomes"]} == {"piecewise"}


def test_drafter_of_a_method_without_graphs_is_one_line(capsys):
    argv = ["--engine", "vllm-0.33.0", "--max-num-seqs", "4", "--num-speculative-tokens", "2"]
    code, out, _ = run_main(capsys, "audit", *argv, "--speculative-method", "ngram")
    drafter = [line for line in out.splitlines() if "drafter" in line or "draft " in line]
    assert code == 0 and drafter == [
        "drafter (speculative method 'ngram'): speculative method 'ngram' has no draft model: no "
        "drafter graphs"
    ]
    code, data = audit_json(capsys, *argv)
    assert data["drafter"]["steps"] == [] and "not given" in data["drafter"]["note"]


def test_speculative_method_and_vllm_args_together_is_refused(capsys):
    code, out, err = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.33.0",
        "--speculative-method",
        "eagle",
        "--vllm-args",
        "m --max-num-seqs 4",
    )
    assert code == 2 and "--speculative-method" in err and err.count("\n") == 1
