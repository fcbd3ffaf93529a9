"""Reading a vLLM `--cudagraph-metrics` log (graphlab.sizing.log_reader) and auditing it against the
kit's dispatch (graphlab.sizing.log_audit) through `audit --vllm-log` and `plan --vllm-log`.

Tables here are pasted-issue shapes and broken logs; logs written by vLLM's own code are in
tests/against_vllm/test_vllm_log_vllm.py.
"""

import json
import os
import tracemalloc

import pytest

from graphlab.cli import main
from graphlab.errors import BadInput, UnreadableInput
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine
from graphlab.sizing.log_audit import audit_log, engine_for_version, logged_config
from graphlab.sizing.log_reader import read_vllm_log

PREFIX = "(APIServer pid=7) INFO 12-01 18:35:39 [cuda_graph.py:123] "
ARGS = (
    "(APIServer pid=7) INFO 12-01 18:35:01 [api_utils.py:286] non-default args: {'model_tag': "
    "'m', 'max_num_seqs': 6, 'speculative_config': {'method': 'ngram', "
    "'num_speculative_tokens': 6}, 'cudagraph_metrics': True}\n"
)
SETTINGS = "**CUDAGraph Config Settings:**\n\n- Mode: {mode}\n- Capture sizes: {sizes}\n\n"


def table(rows, paddings=True, mode="FULL_AND_PIECEWISE", sizes="[1, 2, 4, 8, 16, 24, 32, 40]"):
    """A CUDAGraph Stats block as vLLM writes it (rows: (unpadded, padded, mode, count))."""
    head = ["Unpadded Tokens", "Padded Tokens"] + ["Num Paddings"] * paddings
    head += ["Runtime Mode", "Count"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for n, p, m, c in rows:
        cells = [n, p] + [int(p) - int(n)] * paddings + [m, c]
        lines.append("| " + " | ".join(map(str, cells)) + " |")
    return SETTINGS.format(mode=mode, sizes=sizes) + "**CUDAGraph Stats:**\n\n" + "\n".join(lines)


def prefixed(text, prefix=PREFIX):
    return "".join(prefix + line + "\n" for line in text.split("\n"))


def write(tmp_path, text, name="vllm.log"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def one_error_line(capsys, *argv):
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    return err


def read_with_peak(path):
    """read_vllm_log(path) and the peak bytes Python allocated while reading it."""
    tracemalloc.start()
    try:
        return read_vllm_log(path), tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_intervals_are_summed_and_engines_kept_apart(tmp_path):
    log = ARGS
    docker = "2026-07-08T22:40:03.166647879Z " + PREFIX  # `docker logs -t`
    for engine, rows in ((0, [(21, 21, "FULL", 3)]), (1, [(21, 21, "FULL", 2)])):
        log += f"{PREFIX}Engine {engine:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        log += prefixed(table(rows + [(5, 8, "PIECEWISE", 1)]), docker if engine else PREFIX)
    log += f"{PREFIX}Engine 000: Avg prompt throughput: 1.0 tokens/s\n"
    log += prefixed(table([(21, 21, "FULL", 4)]))
    log += f"{PREFIX}Graph capturing finished in 7 secs, took 0.45 GiB\n"
    parsed = read_vllm_log(write(tmp_path, log))
    frame = parsed.frame().set_index(["engine", "unpadded_tokens"])
    assert parsed.intervals == 3 and parsed.engines == ("000", "001")
    assert frame.loc[("000", 21), "count"] == 7 and frame.loc[("001", 21), "count"] == 2
    assert frame.loc[("000", 5), "num_paddings"] == 3
    assert (parsed.value("max_num_seqs"), parsed.value("num_speculative_tokens")) == (6, 6)
    assert parsed.value("speculative_method") == "ngram"
    assert parsed.value("capture_sizes") == (1, 2, 4, 8, 16, 24, 32, 40)
    assert (parsed.value("capture_seconds"), parsed.value("capture_gib")) == (7.0, 0.45)
    assert any(note.startswith("data parallel") for note in audit_log(parsed).notes)


def test_a_data_parallel_aggregate_is_its_own_engine(tmp_path):
    log = f"{PREFIX}2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s\n"
    log += prefixed(table([(21, 21, "FULL", 3)]))
    assert read_vllm_log(write(tmp_path, log)).engines == ("aggregated",)


def test_a_pasted_table_without_num_paddings_reads_as_the_same_steps(tmp_path):
    rows = [(35, 35, "FULL", 4), (36, 40, "PIECEWISE", 2)]
    with_column = read_vllm_log(write(tmp_path, table(rows), "a.md")).frame()
    without = read_vllm_log(write(tmp_path, "  " + table(rows, paddings=False), "b.md")).frame()
    assert with_column.equals(without)


def test_the_audit_agrees_with_a_table_the_kit_predicts(tmp_path, capsys):
    # S = 6, k = 6 on vllm-0.33.0 (issue example): 21 and 35 tokens replay FULL graphs of 21 and
    # 35, a mixed batch of 36 the PIECEWISE 40; 28 tokens ran PIECEWISE at 32 where FULL 28 is
    # smaller: a mixed batch (a uniform one takes the smaller FULL graph), not PR 53407's class.
    rows = [(21, 21, "FULL", 5), (35, 35, "FULL", 4), (36, 40, "PIECEWISE", 2)]
    rows.append((28, 32, "PIECEWISE", 3))
    path = write(tmp_path, ARGS + prefixed(table(rows)))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0", "--json")
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert code == 0 and (data["schema"], data["command"]) == (2, "audit")
    assert all(r["agrees"] for r in data["rows"])
    lost = [r for r in data["rows"] if r["full_graph_could_serve"]]
    assert lost == []
    s = data["summary"]
    assert (s["steps"], s["steps_without_graph"], s["padding_tokens"]) == (14, 0, 2 * 4 + 3 * 4)
    assert s["disagreements"] == 0 and s["capture_sizes_agree"] is False
    for key in ("unpadded_tokens", "padded_tokens", "runtime_mode", "count", "kit_padded_tokens"):
        assert key in data["rows"][0]


def test_the_log_is_replayed_on_the_backend_runner_and_tier_given(tmp_path, capsys):
    # vLLM logs the configured cudagraph_mode (the front end's CompilationConfig); its workers lower
    # FULL to FULL_AND_PIECEWISE on a backend reporting UNIFORM_BATCH, so the mixed batch ran
    # PIECEWISE: only the deployment the flags give explains the row.
    rows = [(21, 21, "FULL", 5), (36, 42, "PIECEWISE", 2)]
    log = ARGS + prefixed(table(rows, mode="FULL", sizes="[7, 14, 21, 28, 35, 42]"))
    argv = ("--vllm-log", write(tmp_path, log), "--engine", "vllm-0.33.0", "--json")
    _, out, _ = run(capsys, "audit", *argv)
    assert [r["kit_runtime_mode"] for r in json.loads(out)["rows"]] == ["FULL", "FULL"]
    code, out, _ = run(
        capsys, "audit", *argv, "--attention-backend", "FLASHMLA", "--model-runner", "v1"
    )
    data = json.loads(out)
    assert code == 0 and [r["kit_runtime_mode"] for r in data["rows"]] == ["FULL", "PIECEWISE"]
    assert all(r["agrees"] for r in data["rows"])
    assert "model runner V1: --model-runner v1 (VLLM_USE_V2_MODEL_RUNNER=0)" in data["notes"]
    assert any(n.startswith("attention backend FLASHMLA (as named") for n in data["notes"])
    # an A100 (the small tier) runs FlashAttention 2, which reports UNIFORM_BATCH: the same lowering
    for flags in (("--attention-backend", "FLASHMLA"), ("--device-tier", "small")):
        code, out, _ = run(capsys, "plan", *argv, *flags)
        plan = json.loads(out)
        assert code == 0 and plan["cudagraph_mode"] == "FULL_AND_PIECEWISE"
        assert plan["current"]["families"]["uniform"]["steps"] == 5
    _, out, _ = run(capsys, "plan", *argv)
    assert json.loads(out)["cudagraph_mode"] == "FULL"


def test_a_disagreement_is_printed_first_with_the_version_assumed(tmp_path, capsys):
    # a version past the kit's newest release (0.34.0): audited with the default engine's rules
    log = "(APIServer pid=7) INFO 12-01 [core.py:133] Initializing a V1 LLM engine (v0.35.0)\n"
    log += ARGS + prefixed(table([(21, 24, "FULL", 5)], sizes="[7, 14, 21, 28, 35, 42]"))
    code, out, _ = run(capsys, "audit", "--vllm-log", write(tmp_path, log))
    first = out.splitlines()[0]
    assert code == 0 and first.startswith("DISAGREEMENT") and "vLLM 0.35.0" in first
    assert "assumed vllm-0.33.0" in first
    assert "21 tokens ran FULL at 24 (5 steps); kit: FULL at 21" in out
    (note,) = [line for line in out.splitlines() if line.startswith("note:") and "0.35.0" in line]
    assert "assumed vllm-0.33.0's rules" in note


def test_the_server_version_line_names_the_version(tmp_path):
    log = (
        f"{PREFIX}vLLM server version 0.13.0, serving model m\n" + ARGS + table([(7, 7, "FULL", 1)])
    )
    assert read_vllm_log(write(tmp_path, log)).value("vllm_version") == "0.13.0"


def test_versions_map_to_the_kits_engines():
    assert engine_for_version("0.13.0") == ("vllm-0.13.0", None)
    assert engine_for_version("0.32.0")[0] == engine_for_version("0.33.1")[0] == "vllm-0.33.0"
    assert engine_for_version("0.34.0") == ("vllm-0.34.0", None)
    assert "assumed vllm-0.33.0" in engine_for_version("0.35.0")[1]
    assert "does not name" in engine_for_version(None)[1]


def test_missing_config_names_the_missing_value(tmp_path, capsys):
    path = write(tmp_path, table([(4, 4, "FULL", 1)]))
    err = one_error_line(capsys, "audit", "--vllm-log", path)
    assert "does not say max_num_seqs" in err and "--max-num-seqs" in err
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4")
    assert "does not say num_speculative_tokens" in err
    code, out, _ = run(
        capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4", "--num-speculative-tokens", "0"
    )
    assert code == 0 and "note: max_num_batched_tokens: not in the log" in out


def test_a_flag_that_contradicts_the_log_names_both_values(tmp_path, capsys):
    path = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 1)])))
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--max-num-seqs", "8")
    assert f"max_num_seqs: the log says 6 ({path}:1), --max-num-seqs says 8" in err
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--cudagraph-mode", "PIECEWISE")
    assert "cudagraph_mode: the log says 'FULL_AND_PIECEWISE'" in err and "'PIECEWISE'" in err


@pytest.mark.parametrize(
    "text, line, problem",
    [
        (table([(4, 4, "FULL", 1)]).rsplit("\n", 1)[0] + "\n| 8 | 8", 10, "has 2 cells"),
        ("| Unpadded Tokens | Padded Tokens | Runtime Mode | Count |\n", 1, "without its |---|"),
        (table([(4, 4, "FULL", "x1")]), 10, "Count cell 'x1' is not a whole number"),
        (table([(4, 4, "FULL_AND_PIECEWISE", 1)]), 10, "runtime mode 'FULL_AND_PIECEWISE'"),
        (table([(4, 4, "FULL", 1)], mode="BOGUS"), 3, "cudagraph mode 'BOGUS'"),
        (table([(8, 4, "FULL", 1)], paddings=False), 10, "is not a step vLLM logs"),
        ("INFO starting\nno tables here\n", 2, "no CUDAGraph Stats table"),
    ],
)
def test_a_malformed_log_is_one_line_naming_file_line_and_problem(
    tmp_path, capsys, text, line, problem
):
    path = write(tmp_path, text)
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4")
    assert err.startswith(f"error: {path}:{line}: ") and problem in err, err


def test_a_binary_file_is_refused_by_line(tmp_path, capsys):
    path = tmp_path / "weights.bin"
    path.write_bytes(b"| header\nok\n\x89PNG\x00\x01\x02\n")
    err = one_error_line(capsys, "plan", "--vllm-log", str(path))
    assert f"{path}:3: binary data" in err


def test_a_200_mb_log_is_streamed(tmp_path, capsys):
    # 200 MB of start-up noise, one table at the end: read line by line, never whole.
    path = tmp_path / "big.log"
    noise = (PREFIX + "x" * 2000 + "\n").encode()
    chunk = noise * 512
    with open(path, "wb") as out:
        for _ in range(200 * 2**20 // len(chunk)):
            out.write(chunk)
        out.write((ARGS + prefixed(table([(21, 21, "FULL", 2)]))).encode())
    parsed, peak = read_with_peak(path)
    assert path.stat().st_size > 200 * 10**6 and parsed.frame()["count"].sum() == 2
    assert peak < 20 * 2**20, peak
    with open(path, "ab") as out:
        out.write(b"\n| Unpadded Tokens | Padded Tokens | Runtime Mode | Count |\n")  # cut
    err = one_error_line(capsys, "audit", "--vllm-log", str(path), "--json")
    assert "without its |---| line" in err and f"{path}:" in err


def test_stdin_and_a_missing_file(tmp_path, capsys, monkeypatch):
    import io
    import sys

    text = ARGS + prefixed(table([(21, 21, "FULL", 2)]))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(text.encode())))
    code, out, _ = run(capsys, "audit", "--vllm-log", "-", "--json")
    assert code == 0 and json.loads(out)["source"] == "<stdin>"
    err = one_error_line(capsys, "audit", "--vllm-log", str(tmp_path / "none.log"))
    assert "cannot read --vllm-log" in err


def test_plan_replays_the_logged_steps_per_family(tmp_path, capsys):
    # S 6, k 6 (q 7): FULL graphs at the sizes rounded up to 7 (7, 14, 21, 28, 35), PIECEWISE at
    # the sizes; the mixed step of 36 tokens pads to 40
    rows = [(21, 21, "FULL", 5), (35, 35, "FULL", 4), (36, 40, "PIECEWISE", 2)]
    log = write(tmp_path, ARGS + prefixed(table(rows)))
    code, out, _ = run(capsys, "plan", "--vllm-log", log, "--max-graphs", "3", "--json")
    result = json.loads(out)
    assert code == 0 and result["command"] == "plan" and result["headline_kind"] == "plan"
    current, plan = result["current"], result["plan"]
    assert (current["padding_tokens"], current["steps_without_graph"]) == (8, 0)
    assert current["full_sizes"] == [7, 14, 21, 28, 35]
    # three sizes serve every step without padding: FULL 21 and 35 from sizes rounded up to 7
    assert (plan["num_sizes"], plan["padding_tokens"], plan["steps_without_graph"]) == (3, 0, 0)
    served = {(s["path"], s["graph_size"]): s["steps"] for s in plan["served"]}
    assert served == {("full", 21): 5, ("full", 35): 4, ("piecewise", 36): 2}
    assert result["vllm_flag"].startswith("--compilation-config")
    # a pasted table without the config: --vllm-args fills S and k, and its compilation config
    # is kept whole in the flag
    pasted = write(tmp_path, table(rows), "pasted.md")
    spec = '{"method": "ngram", "num_speculative_tokens": 6}'
    cc = '{"cudagraph_mode": "FULL_AND_PIECEWISE", "mode": 3}'
    line = f"vllm serve m --max-num-seqs 6 --speculative-config '{spec}' -cc '{cc}'"
    code, out, err = run(capsys, "plan", "--vllm-log", pasted, "--vllm-args", line, "--json")
    again = json.loads(out)
    assert code == 0 and again["plan"] == plan, err
    assert again["compilation_config"]["mode"] == 3


def test_plan_of_a_log_refuses_what_it_does_not_read(tmp_path, capsys):
    log = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 5)])))
    err = one_error_line(capsys, "plan", "--vllm-log", log, "--latency", "x.csv")
    assert "does not read --latency" in err


def test_the_audit_of_an_empty_capture_list_runs_every_step_without_a_graph(tmp_path):
    log = write(tmp_path, ARGS + prefixed(table([(7, 7, "NONE", 3)], mode="NONE", sizes="[]")))
    report = audit_log(read_vllm_log(log))
    assert report.summary()["steps_without_graph"] == 3 and report.rows.agrees.all()
    with pytest.raises(BadInput, match="refuses"):
        audit_log(read_vllm_log(log), {"max_num_batched_tokens": (2, "--x")})


def test_the_figure_counts_every_logged_step_by_mode(tmp_path):
    from graphlab.views.plots import plot_logged_steps

    rows = [
        (21, 21, "FULL", 5),
        (35, 35, "FULL", 4),
        (36, 40, "PIECEWISE", 2),
        (700, 700, "NONE", 3),
    ]
    frame = read_vllm_log(write(tmp_path, ARGS + prefixed(table(rows)))).frame()
    fig = plot_logged_steps(frame, "pasted table, not a GPU run")
    top = fig.axes[0]
    heights = {}
    for container, label in zip(top.containers, ("FULL", "PIECEWISE", "NONE")):
        heights[label] = sum(bar.get_height() for bar in container)
    assert heights == {"FULL": 9, "PIECEWISE": 2, "NONE": 3}
    title = fig._suptitle.get_text()
    assert "14 steps, 3 without a graph" in title and "not a GPU run" in title


def test_an_over_long_line_is_skipped_and_lines_still_counted(tmp_path, capsys):
    long_line = "x" * (3 * 2**20) + "\n"  # three reads' worth, one line
    text = ARGS + long_line + table([(21, 21, "FULL", 2)], mode="BOGUS")
    err = one_error_line(capsys, "audit", "--vllm-log", write(tmp_path, text))
    assert ":5: cudagraph mode 'BOGUS'" in err  # ARGS 1, the long line 2, the settings 3..
    text = ARGS + long_line + table([(21, 21, "FULL", 2)])
    assert read_vllm_log(write(tmp_path, text)).frame()["count"].sum() == 2


def test_assumed_mode_and_sizes_explain_a_disagreement_in_one_line_first(tmp_path, capsys):
    # a pasted table without mode or sizes: the kit assumes both, and says so before any row
    rows = [(21, 24, "FULL", 5), (9, 10, "PIECEWISE", 2), (10, 10, "NONE", 4)]
    stats = "**CUDAGraph Stats:**\n\n" + table(rows).split("**CUDAGraph Stats:**\n\n")[1]
    code, out, _ = run(capsys, "audit", "--vllm-log", write(tmp_path, ARGS + stats), "--top", "1")
    lines = out.splitlines()
    assert code == 0 and "DISAGREEMENT" not in out
    assert lines[0].startswith("3 of 3 rows differ from the kit's dispatch, which assumed")
    assert "cudagraph_mode (FULL_AND_PIECEWISE" in lines[0] and "capture sizes" in lines[0]
    assert "1 of 3 rows (the 1 most frequent per engine):" in out
    # PR 53407's class is a PIECEWISE row in a gap below a FULL graph, never an eager row
    assert "PR 53407" not in out


def test_a_closed_pipe_ends_quietly(tmp_path):
    import subprocess
    import sys

    rows = [(n, n, "NONE", 1) for n in range(1, 3000)]
    log = write(tmp_path, ARGS + prefixed(table(rows)))
    command = f"{sys.executable} -m graphlab audit --vllm-log {log} | head -1"
    done = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert done.stdout.count("\n") == 1 and done.stderr == "", done.stderr


def test_pr_53407s_class_is_a_piecewise_row_in_a_gap_below_a_full_graph(tmp_path, capsys):
    # q = 3, sizes [1, 2, 4, 8, 16, 24] (PR 53407's example): FULL graphs 3, 6, 9, 18, 24; 12
    # tokens (4 verify requests) took PIECEWISE 16 below FULL 18: flagged; eager rows never are
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 8").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 2"
    )
    rows = [(12, 16, "PIECEWISE", 3), (6, 6, "FULL", 2), (30, 30, "NONE", 1)]
    path = write(tmp_path, args + prefixed(table(rows, sizes="[1, 2, 4, 8, 16, 24]")))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--json")
    data = json.loads(out)
    lost = [(r["unpadded_tokens"], r["full_graph_could_serve"]) for r in data["rows"]]
    assert code == 0 and [row for row in lost if row[1]] == [(12, 18)]


def test_a_large_log_read_at_a_terminal_shows_progress_on_stderr(tmp_path, monkeypatch):
    import io

    from graphlab.sizing import log_reader

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    path = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 5)])))
    terminal = Terminal()
    monkeypatch.setattr(log_reader.sys, "stderr", terminal)
    read_vllm_log(path)  # below PROGRESS_BYTES: no bar
    assert terminal.getvalue() == ""
    monkeypatch.setattr(log_reader, "PROGRESS_BYTES", 1)
    assert read_vllm_log(path).steps[0].count == 5
    assert path in terminal.getvalue() and "B/s" in terminal.getvalue()


def test_an_eager_penalty_lets_the_log_plan_buy_coverage(tmp_path, capsys):
    # 36 tokens ran eagerly above the largest size, 32: by default the plan may leave it eager
    # (no more steps without a graph than now); at 100 tokens an eager step, a graph of 36 pays
    rows = [(21, 21, "FULL", 5), (36, 36, "NONE", 2)]
    log = write(tmp_path, ARGS + prefixed(table(rows, sizes="[1, 2, 4, 8, 16, 24, 32]")))
    common = ("plan", "--vllm-log", log, "--max-graphs", "2", "--json")
    _, out, _ = run(capsys, *common)
    plain = json.loads(out)["plan"]
    # a log the kit's rules do not reproduce (21 tokens at 24) is said before the plan
    bad = write(tmp_path, ARGS + prefixed(table([(21, 24, "FULL", 5)])), "bad.log")
    _, out, _ = run(capsys, "plan", "--vllm-log", bad)
    assert "differs from what vLLM logged (15, 0)" in out.splitlines()[0]
    _, out, _ = run(capsys, *common, "--eager-penalty", "100")
    priced = json.loads(out)
    assert (plain["padding_tokens"], plain["steps_without_graph"]) == (0, 2)
    assert priced["plan"]["steps_without_graph"] == 0 and 36 in priced["plan"]["capture_sizes"]
    assert priced["headline_kind"] == "plan" and priced["eager_penalty"] == 100


# ---- what the mutation campaign and the bad inputs of issue 50 found untested ------------------

HEADER = (
    "| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |\n"
    "|---|---|---|---|---|\n"
)


@pytest.mark.parametrize(
    "text, line, problem",
    [
        # paddings must be padded - unpadded: 8 - 4 is 4, not 3
        (HEADER + "| 4 | 8 | 3 | PIECEWISE | 1 |\n", 3, "is not a step vLLM logs"),
        (HEADER + "INFO the table was cut here\n", 1, "CUDAGraph Stats table has no rows"),
        (
            "| Unpadded Tokens | Padded Tokens | Runtime Mode |\n|---|---|---|\n| 4 | 4 | FULL |\n",
            1,
            "(missing ['Count'])",
        ),
        (HEADER + f"| {10**30} | {10**30} | 0 | FULL | 3 |\n", 3, "is not a whole number below"),
        # 10**15 itself has 16 digits, one more than the reader takes
        (HEADER + f"| 4 | 4 | 0 | FULL | {10**15} |\n", 3, "is not a whole number below 10**15"),
        (HEADER + "| ٣ | ٣ | 0 | FULL | 3 |\n", 3, "Unpadded Tokens cell '٣' is not a whole"),
        (ARGS + ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 9"), 2, "two runs in one log"),
        (HEADER + "| 4 | 4 | 0 | FULL | 0 |\n", 3, "is not a step vLLM logs"),  # no step
        (HEADER.replace("|---|\n", "|\n"), 2, "is not followed by its |---| line"),  # 4 of 5
        ("\0" + HEADER, 1, "binary data"),  # a NUL as the very first byte
    ],
)
def test_a_table_vllm_never_writes_is_refused(tmp_path, capsys, text, line, problem):
    path = write(tmp_path, text + prefixed(table([(4, 4, "FULL", 1)])))
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4")
    assert err.startswith(f"error: {path}:{line}: ") and problem in err, err


def test_a_second_args_line_with_the_same_values_is_one_run(tmp_path):
    log = read_vllm_log(write(tmp_path, ARGS + ARGS + prefixed(table([(4, 4, "FULL", 1)]))))
    assert log.max_num_seqs.value == 6 and log.max_num_seqs.line == 1


def test_an_over_long_line_is_never_held_nor_read(tmp_path):
    # 24 MiB in one line that names max_num_seqs: skipped unread, in memory a few blocks at most.
    path = tmp_path / "long.log"
    with open(path, "wb") as out:
        out.write(b"non-default args: {'max_num_seqs': 9, 'x': '")
        for _ in range(24):
            out.write(b"y" * 2**20)
        out.write(b"'}\n")
        out.write(table([(21, 21, "FULL", 2)]).encode())
    log, peak = read_with_peak(path)
    assert log.max_num_seqs is None and log.frame()["count"].sum() == 2
    assert peak < 8 * 2**20, peak


def test_a_config_dump_with_enforce_eager_ran_no_graphs(tmp_path):
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "speculative_config=None, enforce_eager=True, max_num_seqs=4\n"
    )
    stats = table([(4, 4, "NONE", 1)]).split("**CUDAGraph Stats:**")[1]  # no settings block
    log = read_vllm_log(write(tmp_path, dump + prefixed(stats)))
    assert log.value("cudagraph_mode") == "NONE" and log.cudagraph_mode.line == 1


def test_the_chunked_prefill_line_gives_max_num_batched_tokens(tmp_path):
    # vllm/config/scheduler.py logs "... max_num_batched_tokens=%d." with its full stop
    line = f"{PREFIX}Chunked prefill is enabled with max_num_batched_tokens=2048.\n"
    log = read_vllm_log(write(tmp_path, line + prefixed(table([(4, 4, "FULL", 1)]))))
    assert log.value("max_num_batched_tokens") == 2048 and log.max_num_batched_tokens.line == 1


def test_the_largest_whole_number_the_reader_takes_has_15_digits(tmp_path):
    log = read_vllm_log(write(tmp_path, prefixed(table([(4, 4, "FULL", 10**15 - 1)]))))
    assert log.steps[0].count == 10**15 - 1


def test_an_empty_capture_list_in_the_args_is_no_user_setting(tmp_path):
    # vLLM keeps [] under enforce_eager (VllmConfig.__post_init__); SizingConfig refuses ()
    args = ARGS.replace(
        "'max_num_seqs': 6",
        "'max_num_seqs': 6, 'compilation_config': {'cudagraph_capture_sizes': []}",
    )
    log = read_vllm_log(
        write(tmp_path, args + prefixed(table([(4, 4, "NONE", 1)], mode="NONE", sizes="[]")))
    )
    assert log.value("cudagraph_capture_sizes") == ()
    assert audit_log(log).cfg.cudagraph_capture_sizes is None


def test_one_line_naming_a_value_twice_is_not_two_runs(tmp_path):
    # A dump naming a mode and enforce_eager=True holds cudagraph_mode twice; one line is one run.
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "speculative_config=None, enforce_eager=True, max_num_seqs=4, "
        "compilation_config={'cudagraph_mode': <CUDAGraphMode.PIECEWISE: 1>}\n"
    )
    stats = table([(4, 4, "NONE", 1)]).split("**CUDAGraph Stats:**")[1]  # no settings block
    log = read_vllm_log(write(tmp_path, dump + prefixed(stats)))
    assert log.cudagraph_mode.line == 1


def test_the_same_capture_sizes_in_another_order_do_not_contradict_the_log(tmp_path):
    sizes = "'max_num_seqs': 6, 'cudagraph_capture_sizes': [7, 14]"
    args = ARGS.replace("'max_num_seqs': 6", sizes)
    log = read_vllm_log(write(tmp_path, args + prefixed(table([(7, 7, "FULL", 1)]))))
    cfg, _ = logged_config(log, {"cudagraph_capture_sizes": ((14, 7), "--cudagraph-capture-sizes")})
    assert sorted(cfg.cudagraph_capture_sizes) == [7, 14]
    with pytest.raises(BadInput, match="cudagraph_capture_sizes: the log says"):
        logged_config(log, {"cudagraph_capture_sizes": ((7, 21), "--cudagraph-capture-sizes")})


def test_a_fifo_or_a_descriptor_number_is_refused_at_once(tmp_path, capsys):
    fifo = tmp_path / "vllm.fifo"
    os.mkfifo(fifo)  # a reader of it would wait for a writer forever
    for command in ("audit", "plan"):
        err = one_error_line(capsys, command, "--vllm-log", str(fifo))
        assert f"--vllm-log {str(fifo)!r} is a FIFO; give a regular file" in err
    before = os.fstat(1)
    with pytest.raises(BadInput, match="--vllm-log must be a non-empty path, got 1"):
        read_vllm_log(1)
    assert os.fstat(1).st_ino == before.st_ino  # standard output still open


def test_only_a_whole_number_of_verify_requests_up_to_max_num_seqs_is_flagged(tmp_path):
    # S = 2, k = 3, FULL_AND_PIECEWISE over [6, 13, 16]: 4 tokens (1 request) on the PIECEWISE 6,
    # in the gap below the FULL 8, is PR 53407's class; 12 tokens on the PIECEWISE 13 are 3
    # requests, more than S, so no uniform verify batch; a NONE row never is.
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 2").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 3"
    )
    rows = [(4, 6, "PIECEWISE", 2), (12, 13, "PIECEWISE", 1), (8, 8, "NONE", 1)]
    mode, sizes = "FULL_AND_PIECEWISE", "[6, 13, 16]"
    path = write(tmp_path, args + prefixed(table(rows, mode=mode, sizes=sizes)))
    audit = audit_log(read_vllm_log(path))
    assert audit.cfg.max_num_seqs == 2 and audit.cfg.decode_query_len == 4
    assert audit.rows.full_graph_could_serve.tolist() == [8, 0, 0]


def test_what_the_engine_ran_wins_over_what_the_user_asked(tmp_path):
    # The user asked PIECEWISE; the engine's settings block says it ran NONE (e.g. -O0).
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 6, 'cudagraph_mode': 'PIECEWISE'")
    log = read_vllm_log(write(tmp_path, args + prefixed(table([(7, 7, "NONE", 1)], mode="NONE"))))
    assert log.value("cudagraph_mode") == "NONE" and log.cudagraph_mode.line == 4  # "- Mode:"


def test_a_full_row_under_plain_full_is_audited_as_the_mixed_batch_it_was(tmp_path):
    # vLLM 0.13.0 under plain FULL, k = 3: a uniform batch of 2 tokens would fail the dispatcher's
    # padding assertion, so a logged FULL step of 2 tokens was a mixed batch, on the FULL 2.
    log = f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m'\n"
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 4").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 3"
    )
    log += args + prefixed(table([(2, 2, "FULL", 1)], mode="FULL", sizes="[1, 2, 4, 8]"))
    audit = audit_log(read_vllm_log(write(tmp_path, log)))
    assert audit.engine == "vllm-0.13.0" and audit.cfg.cudagraph_mode == "FULL"
    row = audit.rows.iloc[0]
    assert (row.kit_runtime_mode, row.kit_padded_tokens, bool(row.agrees)) == ("FULL", 2, True)


def test_the_printed_table_fits_a_notebooks_width(tmp_path, capsys):
    # 07 prints it: at 135 columns JupyterLab wrapped each row, its last column on a line alone.
    log = ARGS + prefixed(table([(21, 21, "FULL", 5), (9, 14, "PIECEWISE", 2)]))
    code, out, _ = run(capsys, "audit", "--vllm-log", write(tmp_path, log))
    head = out.index("\n\n") + 2  # the table follows the summary's sentences
    count, *rows = out[head:].split("\nnote:")[0].splitlines()
    assert code == 0 and count == "2 of 2 rows:"
    assert rows[0].split()[:4] == ["tokens", "padded", "paddings", "mode"]
    assert max(len(row) for row in rows) <= 100


# What the independent mutation campaign of 2026-12-06 found untested (docs/mutation.md).


def test_a_row_of_no_tokens_is_not_a_step(tmp_path):
    # vLLM's dispatcher never runs a step of 0 tokens: such a row is not from its table.
    path = write(tmp_path, HEADER + "| 0 | 0 | 0 | NONE | 2 |\n")
    with pytest.raises(UnreadableInput, match=r":3: CUDAGraph Stats row .* is not a step vLLM"):
        read_vllm_log(path)


def test_a_mode_line_after_the_table_is_not_the_engines_setting(tmp_path):
    # The settings block ends with its table; another logger's "- Mode:" list item is not vLLM's.
    log = prefixed(table([(4, 4, "FULL", 1)])) + f"{PREFIX}- Mode: turbo\n"
    assert read_vllm_log(write(tmp_path, log)).value("cudagraph_mode") == "FULL_AND_PIECEWISE"


def test_a_nul_past_the_first_megabytes_of_an_over_long_line_is_binary(tmp_path):
    # The line is skipped in blocks after its first 2 MiB: each skipped block is checked too.
    path = tmp_path / "dump.bin"
    path.write_bytes(
        b"x" * (5 * 2**19) + b"\0" + b"x" * 2**19 + b"\n" + table([(4, 4, "FULL", 1)]).encode()
    )
    with pytest.raises(UnreadableInput, match=r":1: binary data"):
        read_vllm_log(path)


def test_a_config_dump_without_a_speculative_config_speculates_no_tokens(tmp_path):
    # core.py's dump prints speculative_config=None when vLLM drafts nothing: k = 0.
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "speculative_config=None, max_num_seqs=4\n"
    )
    log = read_vllm_log(write(tmp_path, dump + prefixed(table([(4, 4, "FULL", 1)]))))
    assert log.value("num_speculative_tokens") == 0 and log.num_speculative_tokens.line == 1
    assert audit_log(log).cfg.decode_query_len == 1


def test_an_over_long_line_ends_the_table_it_cuts(tmp_path):
    # A row after a skipped line may belong to another table: the cut table keeps its own rows.
    rows = table([(4, 4, "FULL", 1)]) + "\n" + "x" * (3 * 2**20) + "\n| 8 | 8 | 0 | FULL | 5 |\n"
    log = read_vllm_log(write(tmp_path, rows))
    assert log.intervals == 1 and log.frame()["count"].tolist() == [1]


def test_without_speculation_no_row_is_pr_53407s_class(tmp_path):
    # k = 0: a uniform batch is one token per request, FULL sizes are the capture sizes up to S,
    # so no gap exists; even a PIECEWISE row the kit disagrees with is not flagged.
    args = ARGS.replace("'num_speculative_tokens': 6", "'num_speculative_tokens': 0")
    rows = [(3, 3, "PIECEWISE", 2)]
    path = write(tmp_path, args + prefixed(table(rows, sizes="[1, 2, 4, 8]")))
    audit = audit_log(read_vllm_log(path))
    assert audit.cfg.decode_query_len == 1 and not audit.rows.agrees.any()
    assert audit.rows.full_graph_could_serve.tolist() == [0]


def test_a_piecewise_row_padded_to_the_full_graphs_own_size_is_not_flagged(tmp_path):
    # S = 2, k = 3 over [8, 16]: FULL 8; 4 tokens on the PIECEWISE 8 pad no more than FULL 8 would.
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 2").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 3"
    )
    path = write(tmp_path, args + prefixed(table([(4, 8, "PIECEWISE", 2)], sizes="[8, 16]")))
    audit = audit_log(read_vllm_log(path))
    assert audit.rows.full_graph_could_serve.tolist() == [0]


def test_only_the_flagged_rows_steps_count_as_ones_a_full_graph_could_serve(tmp_path):
    # the rows of test_only_a_whole_number_of_verify_requests...: 2 steps flagged of 4
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 2").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 3"
    )
    rows = [(4, 6, "PIECEWISE", 2), (12, 13, "PIECEWISE", 1), (8, 8, "NONE", 1)]
    path = write(tmp_path, args + prefixed(table(rows, sizes="[6, 13, 16]")))
    summary = audit_log(read_vllm_log(path)).summary()
    assert (summary["steps"], summary["steps_full_graph_could_serve"]) == (4, 2)


def test_each_engines_steps_without_a_graph_are_its_none_rows(tmp_path):
    log = ARGS
    for engine, rows in (
        (0, [(21, 21, "FULL", 3), (50, 50, "NONE", 2)]),
        (1, [(5, 8, "PIECEWISE", 4)]),
    ):
        log += f"{PREFIX}Engine {engine:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        log += prefixed(table(rows))
    per_engine = audit_log(read_vllm_log(write(tmp_path, log))).summary()["per_engine"]
    assert {e: v["steps_without_graph"] for e, v in per_engine.items()} == {"000": 2, "001": 0}


def test_a_same_count_headline_still_gives_its_compilation_config(tmp_path):
    # one graph pads 4 -> 8, worse than the current [4, 8]: the list of the current count leads
    from graphlab.sizing.config import SizingConfig
    from graphlab.sizing.engines import get_engine
    from graphlab.sizing.planner.log_plan import log_plan_report

    rows = [(4, 4, "PIECEWISE", 3), (8, 8, "PIECEWISE", 1)]
    log = read_vllm_log(write(tmp_path, prefixed(table(rows, mode="PIECEWISE", sizes="[4, 8]"))))
    cfg = SizingConfig(8, 0, cudagraph_mode="PIECEWISE")
    _, data = log_plan_report(log, get_engine("vllm-0.33.0"), cfg, max_graphs=1)
    assert data["headline_kind"] == "same_count"
    assert data["compilation_config"]["cudagraph_capture_sizes"] == [4, 8] and data["vllm_flag"]


# ---- what the third independent mutation campaign (2026-12-06) found untested ----------------


def test_a_stats_header_with_a_column_vllm_does_not_write_is_refused(tmp_path, capsys):
    # CUDAGraphLogging.generate_metric_table writes COLUMNS, no more
    head = HEADER.replace("| Count |", "| Count | Rank |").replace("|---|\n", "|---|---|\n")
    path = write(tmp_path, head + "| 4 | 4 | 0 | FULL | 1 | 0 |\n")
    err = one_error_line(
        capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4", "--num-speculative-tokens", "0"
    )
    assert err.startswith(f"error: {path}:1: CUDAGraph Stats header has columns"), err


def test_a_config_dumps_max_cudagraph_capture_size_is_vllms_resolved_value_not_a_setting(tmp_path):
    # the dump prints CompilationConfig after _set_cudagraph_sizes filled it in; only
    # `non-default args` says what the user set
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "speculative_config=None, max_num_seqs=4, compilation_config={'cudagraph_mode': "
        "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'max_cudagraph_capture_size': 8}\n"
    )
    log = read_vllm_log(write(tmp_path, dump + prefixed(table([(4, 4, "FULL", 1)]))))
    assert log.value("max_num_seqs") == 4 and log.max_cudagraph_capture_size is None
    assert audit_log(log).cfg.max_cudagraph_capture_size is None


def test_a_verify_sized_piecewise_row_above_every_graph_is_a_disagreement_not_pr_53407s(tmp_path):
    # 14 tokens are 2 requests of 1 + 6, but the logged graphs end at 8: the kit runs the batch
    # eagerly, so no FULL graph could have served it
    rows = table([(14, 16, "PIECEWISE", 3)], sizes="[1, 2, 4, 8]")
    row = audit_log(read_vllm_log(write(tmp_path, ARGS + prefixed(rows)))).rows.iloc[0]
    assert (row.kit_runtime_mode, row.agrees, row.full_graph_could_serve) == ("NONE", False, 0)


def test_a_separator_with_markdown_alignment_colons_is_the_tables_line(tmp_path):
    # a table pasted through a markdown editor gets |:---|---:|; the rows are still vLLM's
    head = HEADER.replace("|---|---|---|---|---|", "|:---|---:|:---:|---|---|")
    log = read_vllm_log(write(tmp_path, head + "| 4 | 4 | 0 | FULL | 1 |\n"))
    assert log.frame()[["unpadded_tokens", "count"]].values.tolist() == [[4, 1]]


def test_a_config_cudagraph_mode_that_is_none_of_vllms_modes_is_not_read(tmp_path):
    # compilation_config's cudagraph_mode None leaves vLLM's default; it is no mode of the log
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "speculative_config=None, max_num_seqs=4, compilation_config={'cudagraph_mode': None}\n"
    )
    stats = table([(4, 4, "FULL", 1)]).split("**CUDAGraph Stats:**")[1]  # no settings block
    log = read_vllm_log(write(tmp_path, dump + prefixed(stats)))
    assert log.cudagraph_mode is None and audit_log(log).cfg.cudagraph_mode is None


def test_the_summarys_tokens_count_each_row_once_per_step(tmp_path):
    # a row of count c is c steps of its tokens
    rows = [(21, 21, "FULL", 5), (36, 40, "PIECEWISE", 2)]
    summary = audit_log(read_vllm_log(write(tmp_path, ARGS + prefixed(table(rows))))).summary()
    assert (
        summary["tokens"]
        == 21 * 5 + 36 * 2
        == sum(m["tokens"] for m in summary["per_mode"].values())
    )


def test_one_engines_log_prints_no_per_engine_lines(tmp_path, capsys):
    # the per-engine lines split data parallel ranks; one engine's would repeat the totals
    one = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 3)])), "one.log")
    two = ARGS + "".join(
        f"{PREFIX}Engine {e:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        + prefixed(table([(21, 21, "FULL", 3)]))
        for e in (0, 1)
    )
    engine_lines = []
    for path in (one, write(tmp_path, two, "two.log")):
        code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
        assert code == 0, out
        engine_lines.append([line for line in out.splitlines() if " steps, " in line])
    assert engine_lines[0] == [] and len(engine_lines[1]) == 2, engine_lines


@pytest.mark.parametrize("command", ["audit", "plan"])
def test_vllm_args_beside_a_config_option_is_one_refusal_with_or_without_a_log(
    tmp_path, capsys, command
):
    # --vllm-log reads --vllm-args with the reader of the line's own config: the same words
    path = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 1)])))
    line = ["--vllm-args", "vllm serve m", "--max-num-seqs", "6", "--num-speculative-tokens", "2"]
    alone = one_error_line(capsys, command, "--engine", "vllm-0.33.0", *line)
    logged = one_error_line(capsys, command, "--vllm-log", path, *line)
    assert logged == alone
    assert "--vllm-args already sets the config; drop --max-num-seqs, --num-speculative-tokens" in (
        logged
    )


@pytest.mark.vllm
def test_a_vllm_args_line_over_the_kits_limits_is_refused_with_or_without_a_log(tmp_path, capsys):
    path = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 1)])))
    # k = 100 is over the kit's 64, which vLLM's parser accepts: the kit's limit, not the log's 6
    spec = '{"method": "ngram", "num_speculative_tokens": 100}'
    line = ["--vllm-args", f"vllm serve m --max-num-seqs 6 --speculative-config '{spec}'"]
    alone = one_error_line(capsys, "plan", *line)
    logged = one_error_line(capsys, "plan", "--vllm-log", path, *line)
    assert logged == alone
    assert "--vllm-args: num_speculative_tokens must be at most 64, got 100" in logged


def test_the_recorded_plan_is_the_commands_with_the_version_it_assumed(tmp_path, capsys):
    from graphlab.against_vllm.step_record import recorded_plan

    path = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 5)])))
    code, out, _ = run(capsys, "plan", "--vllm-log", path, "--json")
    command = json.loads(out)
    written = json.loads(json.dumps(recorded_plan(read_vllm_log(path))))
    assert code == 0 and written["notes"][0].startswith("the log does not name its vLLM version")
    assert {key: command[key] for key in written} == written


# ---- what branch coverage of the reader and the audit (2026-12-06) found untested -------------


def test_a_line_that_is_not_utf8_is_named_by_its_line(tmp_path, capsys):
    path = tmp_path / "latin1.log"
    path.write_bytes(ARGS.encode() + b"| Unpadded Tokens caf\xe9 |\n")
    err = one_error_line(capsys, "audit", "--vllm-log", str(path), "--max-num-seqs", "4")
    assert err == f"error: {path}:2: not UTF-8 text (a binary file?)\n"


def test_a_chunked_prefill_line_without_a_number_sets_nothing(tmp_path):
    # only vLLM's own "%d." form is a setting; a line cut or reworded is not read as one
    line = f"{PREFIX}Chunked prefill is enabled with max_num_batched_tokens=None.\n"
    log = read_vllm_log(write(tmp_path, line + prefixed(table([(4, 4, "FULL", 1)]))))
    assert log.max_num_batched_tokens is None


def test_the_audit_prints_vllms_capture_time_and_memory(tmp_path, capsys):
    captured = f"{PREFIX}Graph capturing finished in 7 secs, took 0.45 GiB\n"
    path = write(tmp_path, ARGS + captured + prefixed(table([(21, 21, "FULL", 3)])))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    assert code == 0 and "graph capture: 7 s, 0.45 GiB (vLLM's start-up line)" in out.splitlines()
    plain = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 3)])), "plain.log")
    code, out, _ = run(capsys, "audit", "--vllm-log", plain, "--engine", "vllm-0.33.0")
    assert code == 0 and "graph capture" not in out


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


def test_the_mode_is_noted_as_assumed_only_where_the_log_does_not_name_it(tmp_path):
    rows = [(21, 21, "FULL", 1)]
    named = read_vllm_log(write(tmp_path, ARGS + prefixed(table(rows)), "named.log"))
    stats = "**CUDAGraph Stats:**\n\n" + table(rows).split("**CUDAGraph Stats:**\n\n")[1]
    unnamed = read_vllm_log(write(tmp_path, ARGS + prefixed(stats), "unnamed.log"))
    note = "cudagraph_mode: not in the log, assumed the engine's default"
    assert note not in logged_config(named, {})[1]
    assert note in logged_config(unnamed, {})[1]


def test_each_engines_padding_and_disagreements_are_its_own_rows_by_count(tmp_path):
    # engine 000's PIECEWISE 5 -> 8 agrees; engine 001's FULL 21 ran at 24 where the kit has 21
    log = ARGS
    for engine, rows in ((0, [(5, 8, "PIECEWISE", 4)]), (1, [(21, 24, "FULL", 2)])):
        log += f"{PREFIX}Engine {engine:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        log += prefixed(table(rows))
    audit = audit_log(read_vllm_log(write(tmp_path, log)), engine="vllm-0.33.0")
    per_engine = audit.summary()["per_engine"]
    assert {e: v["padding_tokens"] for e, v in per_engine.items()} == {"000": 3 * 4, "001": 3 * 2}
    assert {e: v["disagreements"] for e, v in per_engine.items()} == {"000": 0, "001": 1}


def test_capture_sizes_the_kit_would_not_capture_are_a_disagreement_where_every_row_agrees(
    tmp_path, capsys
):
    rows = [(21, 21, "FULL", 5), (36, 40, "PIECEWISE", 2)]
    path = write(tmp_path, ARGS + prefixed(table(rows)))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    assert code == 0 and out.startswith("DISAGREEMENT"), out
    assert "  capture sizes: vLLM logged [1, 2, 4, 8, 16, 24, 32, 40], the kit computes" in out


def test_top_keeps_each_engines_most_frequent_rows(tmp_path, capsys):
    log = ARGS
    for engine, full in ((0, (21, 21, "FULL", 5)), (1, (35, 35, "FULL", 3))):
        log += f"{PREFIX}Engine {engine:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        log += prefixed(table([full, (5, 8, "PIECEWISE", 1)]))
    path = write(tmp_path, log)
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0", "--top", "1")
    assert code == 0 and "2 of 4 rows (the 1 most frequent per engine):" in out, out


def test_the_audits_json_gives_vllms_capture_seconds_and_gib_apart(tmp_path):
    log = ARGS + prefixed(table([(21, 21, "FULL", 1)]))
    log += f"{PREFIX}Graph capturing finished in 7 secs, took 0.45 GiB\n"
    data = audit_log(read_vllm_log(write(tmp_path, log))).to_dict()
    assert (data["graph_capture_seconds"], data["graph_capture_gib"]) == (7.0, 0.45)


# ---- what mutmut over sizing/log_audit.py (2026-12-06) found untested -------------------------


def audit_json(capsys, path, *extra):
    code, out, _ = run(
        capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0", "--json", *extra
    )
    assert code == 0, out
    return json.loads(out)


def test_the_audits_json_says_what_the_log_holds_and_what_the_kit_assumed(tmp_path, capsys):
    captured = f"{PREFIX}Graph capturing finished in 7 secs, took 0.45 GiB\n"
    rows = [(21, 21, "FULL", 3), (5, 8, "PIECEWISE", 2)]
    data = audit_json(capsys, write(tmp_path, ARGS + captured + prefixed(table(rows))))
    assert set(data) == {
        "schema", "command", "source", "vllm_version", "engine", "intervals", "engines",
        "config", "speculative_method", "logged_capture_sizes", "kit_capture_sizes",
        "graph_capture_seconds", "graph_capture_gib", "notes", "summary", "rows",
    }  # fmt: skip
    assert (data["vllm_version"], data["engine"], data["intervals"]) == (None, "vllm-0.33.0", 1)
    assert (data["engines"], data["speculative_method"]) == (["000"], "ngram")
    assert data["logged_capture_sizes"] == [1, 2, 4, 8, 16, 24, 32, 40]
    assert data["kit_capture_sizes"] == list(get_engine("vllm-0.33.0").capture_sizes(
        SizingConfig(6, 6)
    ))  # fmt: skip
    assert (data["graph_capture_seconds"], data["graph_capture_gib"]) == (7.0, 0.45)
    assert data["config"] == {
        "max_num_seqs": 6, "num_speculative_tokens": 6, "max_num_batched_tokens": None,
        "cudagraph_capture_sizes": None, "max_cudagraph_capture_size": None,
        "cudagraph_mode": "FULL_AND_PIECEWISE",
    }  # fmt: skip
    assert data["notes"] == ["max_num_batched_tokens: not in the log, assumed 8192"]
    # the 2 PIECEWISE steps pad 5 tokens to 8: 6 padding tokens, all PIECEWISE's
    per_mode = data["summary"]["per_mode"]
    assert per_mode["PIECEWISE"] == {"steps": 2, "tokens": 10, "padding_tokens": 6}
    assert per_mode["FULL"] == {"steps": 3, "tokens": 63, "padding_tokens": 0}


def test_user_capture_sizes_are_a_json_list(tmp_path, capsys):
    args = ARGS.replace(
        "'max_num_seqs': 6,", "'max_num_seqs': 6, 'cudagraph_capture_sizes': [7, 21, 42],"
    )
    data = audit_json(
        capsys, write(tmp_path, args + prefixed(table([(21, 21, "FULL", 3)], sizes="[7, 21, 42]")))
    )
    assert data["config"]["cudagraph_capture_sizes"] == [7, 21, 42]


def test_a_log_without_mode_or_capture_sizes_says_both_were_assumed(tmp_path, capsys):
    text = "\n".join(
        line
        for line in table([(21, 21, "FULL", 3)]).split("\n")
        if not line.startswith("- ") and "Config Settings" not in line
    )
    data = audit_json(capsys, write(tmp_path, ARGS + prefixed(text)))
    assert data["notes"] == [
        "max_num_batched_tokens: not in the log, assumed 8192",
        "cudagraph_mode: not in the log, assumed the engine's default",
        "capture sizes: not in the log, the kit's own sizing is used",
    ]
    assert data["config"]["cudagraph_mode"] is None and data["logged_capture_sizes"] is None


def test_each_engines_figures_are_its_own_and_data_parallel_is_noted(tmp_path, capsys):
    # engine 0: 2 steps of 5 tokens padded to 8, engine 1: 3 such steps (3 padding tokens each)
    log = ARGS + "".join(
        f"{PREFIX}Engine {e:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        + prefixed(table([(21, 21, "FULL", 3), (5, 8, "PIECEWISE", 2 + e)]))
        for e in (0, 1)
    )
    data = audit_json(capsys, write(tmp_path, log))
    assert data["summary"]["per_engine"] == {
        "000": {"steps": 5, "steps_without_graph": 0, "padding_tokens": 6, "disagreements": 0},
        "001": {"steps": 6, "steps_without_graph": 0, "padding_tokens": 9, "disagreements": 0},
    }
    assert data["notes"][-1].startswith(
        "data parallel: vLLM pads each rank's step to the largest rank's token count "
        "(num_tokens_across_dp, vllm/v1/worker/gpu_model_runner.py), which the kit does not model"
    )
    one = audit_json(
        capsys, write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 3)])), "one.log")
    )
    assert not [n for n in one["notes"] if n.startswith("data parallel")]


def test_a_one_draft_verify_batch_on_a_smaller_piecewise_graph_is_pr_53407s_class(tmp_path):
    # k = 1 (q = 2), sizes [3, 5, 8]: FULL graphs 4, 6, 8; 2 tokens (1 request) ran on the
    # PIECEWISE 3 below the FULL 4
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 4").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 1"
    )
    rows = [(2, 3, "PIECEWISE", 2), (4, 4, "FULL", 1)]
    path = write(tmp_path, args + prefixed(table(rows, sizes="[3, 5, 8]")))
    audit = audit_log(read_vllm_log(path), engine="vllm-0.33.0")
    assert audit.cfg.decode_query_len == 2
    assert audit.rows.full_graph_could_serve.tolist() == [4, 0]


def test_the_audits_text_in_order_for_a_table_pasted_without_its_settings(tmp_path, capsys):
    # the kit's dispatch under assumed settings: the one-line explanation, the run's line, the
    # figures per mode, the top disagreement, the top row (no engine column for one engine),
    # then every note
    rows = [(21, 24, "FULL", 5), (9, 10, "PIECEWISE", 2), (10, 10, "NONE", 4)]
    stats = "**CUDAGraph Stats:**\n\n" + table(rows).split("**CUDAGraph Stats:**\n\n")[1]
    path = write(tmp_path, ARGS + prefixed(stats))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--top", "1")
    lines = out.splitlines()
    assert code == 0
    assert lines[0].endswith(
        "cudagraph_mode (FULL_AND_PIECEWISE, the engine's default); the capture sizes "
        "(vllm-0.33.0's own sizing); give them (flags or --vllm-args) to audit the rows "
        "(listed below)"
    )
    assert lines[1] == (
        f"vLLM (version not in the log) log {path}: 1 stats intervals, engines 000; audited with "
        "vllm-0.33.0 at max_num_seqs=6 num_speculative_tokens=6 max_num_batched_tokens=8192 "
        "cudagraph_mode=None"
    )
    assert lines[2] == (
        "steps 11 (163 tokens); without a graph: 4 steps (40 tokens); padding tokens spent: 17"
    )
    assert [line.split()[0] for line in lines[3:6]] == ["NONE", "PIECEWISE", "FULL"]
    assert lines[6:8] == [
        "what differs under those assumptions:",
        "  engine 000: 21 tokens ran FULL at 24 (5 steps); kit: FULL at 21",
    ]
    assert lines[8:10] == ["", "1 of 3 rows (the 1 most frequent per engine):"]
    assert lines[10].split()[:2] == ["tokens", "padded"]  # one engine: no engine column
    assert lines[11].split()[:5] == ["21", "24", "3", "FULL", "5"]
    assert lines[12:] == [
        "note: the log does not name its vLLM version: assumed vllm-0.33.0's rules",
        "note: max_num_batched_tokens: not in the log, assumed 8192",
        "note: cudagraph_mode: not in the log, assumed the engine's default",
        "note: capture sizes: not in the log, the kit's own sizing is used",
    ]


DATA_PARALLEL = (
    "data parallel: vLLM pads each rank's step to the largest rank's token count "
    "(num_tokens_across_dp, vllm/v1/worker/gpu_model_runner.py), which the kit does not model; "
    "such rows may disagree"
)


def test_an_aggregated_table_is_noted_as_data_parallel_after_the_other_notes(tmp_path, capsys):
    log = ARGS + f"{PREFIX}2 Engines Aggregated: Avg prompt throughput: 1.0 tokens/s\n"
    data = audit_json(capsys, write(tmp_path, log + prefixed(table([(21, 21, "FULL", 3)]))))
    assert data["engines"] == ["aggregated"]
    assert data["notes"] == ["max_num_batched_tokens: not in the log, assumed 8192", DATA_PARALLEL]


def test_pr_53407s_rows_are_printed_under_their_own_heading(tmp_path, capsys):
    # the example of test_pr_53407s_class_is_a_piecewise_row_in_a_gap_below_a_full_graph: 12
    # tokens ran PIECEWISE at 16 in 3 steps where a FULL graph of 18 could have served them
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 8").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 2"
    )
    rows = [(12, 16, "PIECEWISE", 3), (6, 6, "FULL", 2), (30, 30, "NONE", 1)]
    path = write(tmp_path, args + prefixed(table(rows, sizes="[1, 2, 4, 8, 16, 24]")))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    lines = out.splitlines()
    heading = (
        "3 steps ran on a smaller PIECEWISE graph although, as uniform verify batches, a FULL "
        "graph could have served them (PR 53407's class):"
    )
    assert code == 0 and heading in lines, out
    assert lines[lines.index(heading) + 1] == (
        "  12 tokens ran PIECEWISE at 16 (3 steps): FULL graph 18"
    )


def test_two_engines_text_names_both_and_gives_each_its_line(tmp_path, capsys):
    log = ARGS + "".join(
        f"{PREFIX}Engine {e:03d}: Avg prompt throughput: 1.0 tokens/s\n"
        + prefixed(table([(21, 21, "FULL", 3), (5, 8, "PIECEWISE", 2 + e)]))
        for e in (0, 1)
    )
    path = write(tmp_path, log)
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    lines = out.splitlines()
    run_line = next(i for i, line in enumerate(lines) if line.startswith("vLLM "))
    assert code == 0 and f"log {path}: 2 stats intervals, engines 000, 001;" in lines[run_line]
    assert lines[run_line + 1].startswith("steps 11 (151 tokens);")
    assert lines[run_line + 5 : run_line + 7] == [
        "  engine 000: 5 steps, 0 without a graph, 6 padding tokens, 0 rows disagree",
        "  engine 001: 6 steps, 0 without a graph, 9 padding tokens, 0 rows disagree",
    ]
    heading = lines.index("4 of 4 rows:") + 1  # each row says its engine
    assert lines[heading].split()[0] == "engine"
    assert [line.split()[0] for line in lines[heading + 1 : heading + 5]] == ["000"] * 2 + [
        "001"
    ] * 2


def test_capture_sizes_that_differ_alone_are_a_disagreement_said_first(tmp_path, capsys):
    # every row agrees with the kit's dispatch over the logged sizes; the sizes are not the kit's
    rows = [(21, 21, "FULL", 5), (35, 35, "FULL", 4), (36, 40, "PIECEWISE", 2)]
    kit = list(get_engine("vllm-0.33.0").capture_sizes(SizingConfig(6, 6)))
    path = write(tmp_path, ARGS + prefixed(table(rows)))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith("DISAGREEMENT between vLLM's log and graphlab's")
    assert lines[1] == (
        f"  capture sizes: vLLM logged [1, 2, 4, 8, 16, 24, 32, 40], the kit computes {kit}"
    )
    # without the mode line the kit assumes the mode, and says the sizes differ in that line
    no_mode = "\n".join(line for line in table(rows).split("\n") if not line.startswith("- Mode"))
    path = write(tmp_path, ARGS + prefixed(no_mode), "no_mode.log")
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(
        "0 of 3 rows and the capture sizes differ from the kit's dispatch, which assumed"
    ), out


# ---- what mutmut over log_audit.py (2026-12-06) left alive ------------------------------------


def test_assumed_settings_under_which_every_row_agrees_are_notes_not_a_disagreement(
    tmp_path, capsys
):
    # a table pasted without its settings whose one row the kit's default dispatch gives too: the
    # assumptions are said in the notes only, no "differ" line first nor "what differs" block
    stats = (
        "**CUDAGraph Stats:**\n\n"
        + table([(21, 21, "FULL", 5)]).split("**CUDAGraph Stats:**\n\n")[1]
    )
    path = write(tmp_path, ARGS + prefixed(stats))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0")
    lines = out.splitlines()
    assert code == 0 and lines[0].startswith(f"vLLM (version not in the log) log {path}:"), out
    assert "differ" not in out and "what differs under those assumptions:" not in lines, out
    assert lines[-2:] == [
        "note: cudagraph_mode: not in the log, assumed the engine's default",
        "note: capture sizes: not in the log, the kit's own sizing is used",
    ]


# What mutmut over sizing/log_reader.py found untested: the config lines' other keys, the dump's
# capture sizes, a dump silent on speculation, and the messages naming a bad number's setting.


def test_a_config_dumps_capture_sizes_are_what_the_engine_captured_not_a_user_setting(tmp_path):
    # the dump prints CompilationConfig after _set_cudagraph_sizes resolved its list
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', "
        "speculative_config=None, max_num_seqs=4, compilation_config={'cudagraph_mode': "
        "<CUDAGraphMode.FULL_AND_PIECEWISE: (2, 1)>, 'cudagraph_capture_sizes': [1, 2, 4]}\n"
    )
    stats = table([(4, 4, "FULL", 1)]).split("**CUDAGraph Stats:**")[1]  # no settings block
    log = read_vllm_log(write(tmp_path, dump + prefixed(stats)))
    assert log.value("capture_sizes") == (1, 2, 4) and log.capture_sizes.line == 1
    assert log.cudagraph_capture_sizes is None


def test_non_default_args_give_the_users_capture_limit_and_mode(tmp_path):
    args = ARGS.replace(
        "'max_num_seqs': 6",
        "'max_num_seqs': 6, 'compilation_config': {'cudagraph_mode': 'PIECEWISE', "
        "'max_cudagraph_capture_size': 16}",
    )
    stats = table([(4, 4, "PIECEWISE", 1)]).split("**CUDAGraph Stats:**")[1]  # no settings block
    log = read_vllm_log(write(tmp_path, args + prefixed(stats)))
    assert log.value("max_cudagraph_capture_size") == 16
    assert log.value("cudagraph_mode") == "PIECEWISE" and log.cudagraph_mode.line == 1


def test_a_config_dump_silent_on_speculation_leaves_the_draft_tokens_unknown(tmp_path):
    # only `speculative_config=None` says no draft tokens; a dump without it says nothing
    dump = (
        f"{PREFIX}Initializing a V1 LLM engine (v0.13.0) with config: model='m', max_num_seqs=4\n"
    )
    log = read_vllm_log(write(tmp_path, dump + prefixed(table([(4, 4, "FULL", 1)]))))
    assert log.value("max_num_seqs") == 4 and log.num_speculative_tokens is None


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            "'max_num_seqs': 6",
            "'max_num_seqs': 1234567890123456",
            "max_num_seqs '1234567890123456'",
        ),
        (
            "'num_speculative_tokens': 6",
            "'num_speculative_tokens': 1234567890123456",
            "num_speculative_tokens '1234567890123456'",
        ),
        ("[1, 2, 4, 8, 16, 24, 32, 40]", "[1, 2, x]", "capture size 'x'"),
    ],
)
def test_a_number_vllm_never_logs_is_named_by_its_setting(tmp_path, old, new, message):
    log = (ARGS + prefixed(table([(4, 4, "FULL", 1)]))).replace(old, new)
    with pytest.raises(
        UnreadableInput, match=f"^{tmp_path}.*:[0-9]+: {message} is not a whole number"
    ):
        read_vllm_log(write(tmp_path, log))


def test_a_cut_capture_size_list_is_refused(tmp_path):
    log = prefixed(table([(4, 4, "FULL", 1)], sizes="[1, 2, 4"))
    with pytest.raises(UnreadableInput, match=r":4: capture sizes '\[1, 2, 4' are not a list like"):
        read_vllm_log(write(tmp_path, log))


HEADER_LINE = HEADER.split("\n")[0] + "\n"
COLUMNS = ["Unpadded Tokens", "Padded Tokens", "Num Paddings", "Runtime Mode", "Count"]
WHOLE = "is not a whole number below 10**15"


@pytest.mark.parametrize(
    "text, line, message",
    [
        (
            HEADER_LINE + "INFO the table was cut here\n",
            1,
            "CUDAGraph Stats header without its |---| line (a cut table?)",
        ),
        (
            HEADER + "INFO the table was cut here\n",
            1,
            "CUDAGraph Stats table has no rows (a cut table?)",
        ),
        (
            HEADER_LINE + "| 4 | 4 | 0 | FULL | 1 |\n",
            2,
            "CUDAGraph Stats header is not followed by its |---| line: '| 4 | 4 | 0 | FULL | 1 |'",
        ),
        (
            HEADER + "| 4 | 4 | 0 | FULL |\n",
            3,
            "CUDAGraph Stats row has 4 cells, its header 5 (a cut table?): '4 | 4 | 0 | FULL'",
        ),
        (
            HEADER + "| 4 | 4 | 0 | EAGER | 1 |\n",
            3,
            "runtime mode 'EAGER' is not one vLLM logs (NONE, PIECEWISE, FULL)",
        ),
        (
            HEADER + "| 4 | 8 | 3 | PIECEWISE | 1 |\n",
            3,
            "CUDAGraph Stats row '4 | 8 | 3 | PIECEWISE | 1' is not a step vLLM logs (needs 1 <= "
            "unpadded <= padded, paddings = padded - unpadded, count >= 1)",
        ),
        (
            HEADER_LINE.replace("Count |", "Count | Foo |"),
            1,
            f"CUDAGraph Stats header has columns {[*COLUMNS, 'Foo']}; vLLM's are {COLUMNS}",
        ),
        (HEADER + f"| 4 | 4 | 0 | FULL | {'x' * 40} |\n", 3, f"Count cell '{'x' * 40}' {WHOLE}"),
        (
            HEADER + f"| 4 | 4 | 0 | FULL | {'x' * 41} |\n",
            3,
            f"Count cell '{'x' * 40}... (41 characters)' {WHOLE}",
        ),
        (
            "**CUDAGraph Config Settings:**\n- Mode: EAGER\n",
            2,
            "cudagraph mode 'EAGER' is not one vLLM has (NONE, PIECEWISE, FULL, FULL_DECODE_ONLY, "
            "FULL_AND_PIECEWISE)",
        ),
    ],
)
def test_a_broken_table_is_named_at_its_line_in_one_sentence(tmp_path, capsys, text, line, message):
    path = write(tmp_path, text + prefixed(table([(4, 4, "FULL", 1)])))
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4")
    assert err == f"error: {path}:{line}: {message}\n"


def test_a_log_without_a_table_says_how_vllm_writes_one(tmp_path, capsys):
    path = write(tmp_path, ARGS)
    err = one_error_line(capsys, "audit", "--vllm-log", path, "--max-num-seqs", "4")
    assert err == (
        f"error: {path}:1: no CUDAGraph Stats table (vLLM logs one per stats interval when "
        "started with --cudagraph-metrics, v0.13.0 on, with stats logging on; model runner V2 "
        "logged none before PR 52358, vLLM issue 52728)\n"
    )


def test_a_step_of_one_token_is_read(tmp_path):
    # a single request decoding without speculation: vLLM logs 1 unpadded token
    log = read_vllm_log(write(tmp_path, prefixed(table([(1, 1, "FULL", 3)]))))
    assert [(s.unpadded_tokens, s.padded_tokens, s.count) for s in log.steps] == [(1, 1, 3)]


def test_vllm_0_34_0s_capture_settings_given_beside_a_log_reach_its_config(tmp_path):
    # a log names none of 0.34.0's split settings; --vllm-args gives them, as values
    log = read_vllm_log(write(tmp_path, ARGS + prefixed(table([(7, 7, "FULL", 1)]))))
    given = {
        "max_decode_cudagraph_capture_requests": (4, "--vllm-args"),
        "decode_cudagraph_capture_request_sizes": ((1, 2, 4), "--vllm-args"),
    }
    cfg, _ = logged_config(log, given)
    assert cfg.max_decode_cudagraph_capture_requests == 4
    assert tuple(cfg.decode_cudagraph_capture_request_sizes) == (1, 2, 4)


def test_top_cuts_pr_53407s_rows_to_the_most_frequent_too(tmp_path, capsys):
    # q = 3 on sizes [1, 2, 4, 8, 16, 24]: 12 and 15 tokens both ran PIECEWISE at 16 below FULL 18
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 8").replace(
        "'num_speculative_tokens': 6", "'num_speculative_tokens': 2"
    )
    rows = [(12, 16, "PIECEWISE", 3), (15, 16, "PIECEWISE", 2)]
    path = write(tmp_path, args + prefixed(table(rows, sizes="[1, 2, 4, 8, 16, 24]")))
    for top, listed in ((None, [12, 15]), (1, [12])):
        flags = () if top is None else ("--top", str(top))
        code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0", *flags)
        lines = out.splitlines()
        heading = next(i for i, line in enumerate(lines) if "(PR 53407's class):" in line)
        assert code == 0 and lines[heading].startswith("5 steps ran on a smaller PIECEWISE graph")
        shown = [
            line
            for line in lines[heading + 1 :]
            if line.startswith("  ") and "FULL graph 18" in line
        ]
        assert [int(line.split()[0]) for line in shown] == listed, out


def test_a_v0_engine_is_refused_for_a_log_naming_the_v1_engines(tmp_path, capsys):
    # --cudagraph-metrics and its table are V1's: V0 engines have no cudagraph_mode to audit with
    path = write(tmp_path, ARGS + prefixed(table([(21, 21, "FULL", 5)])))
    for flags in ((), ("--attention-backend", "FLASH_ATTN"), ("--model-runner", "v2")):
        argv = ("audit", "--vllm-log", path, "--engine", "vllm-0.6.0", *flags)
        err = one_error_line(capsys, *argv)  # plan's --engine lists the V1 engines alone
        assert "audited with the vLLM V1 engines vllm-0.12.0" in err and "got 'vllm-0.6.0'" in err


def test_the_log_is_deployed_with_its_own_releases_rules(tmp_path, capsys):
    # FLASHINFER's support depends on the model on the h100 tier from 0.30.0 (its engine is
    # vllm-0.29.0, whose release reads it as UNIFORM_SINGLE_TOKEN_DECODE): the log's 0.30.0 decides
    version = "(APIServer pid=7) INFO 12-01 [core.py:133] Initializing a V1 LLM engine (v{})\n"
    rows = prefixed(table([(21, 21, "FULL", 5)], sizes="[7, 14, 21, 28, 35, 42]"))
    argv = ("audit", "--attention-backend", "FLASHINFER", "--json")
    log = write(tmp_path, version.format("0.30.0") + ARGS + rows, "v030.log")
    err = one_error_line(capsys, *argv, "--vllm-log", log)
    assert "the AttentionCGSupport vLLM 0.30.0's FlashInferBackend reports depends on the" in err
    code, out, _ = run(capsys, *argv, "--vllm-log", log, "--attention-cg-support", "UNIFORM_BATCH")
    assert code == 0 and json.loads(out)["engine"] == "vllm-0.29.0"
    log = write(tmp_path, version.format("0.29.0") + ARGS + rows, "v029.log")
    code, out, _ = run(capsys, *argv, "--vllm-log", log)
    assert code == 0 and any(
        "reports AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE" in note
        for note in json.loads(out)["notes"]
    )


def test_a_log_past_the_kits_limits_is_refused(tmp_path, capsys):
    args = ARGS.replace("'max_num_seqs': 6", "'max_num_seqs': 70000")
    path = write(tmp_path, args + prefixed(table([(21, 21, "FULL", 5)])))
    for command in ("audit", "plan"):
        err = one_error_line(capsys, command, "--vllm-log", path)
        assert err == "error: max_num_seqs must be at most 65536, got 70000\n"


def test_the_summarys_disagreements_are_rows_not_steps(tmp_path, capsys):
    # two disagreeing rows of 5 and 3 steps, one agreeing row: 2 disagreements, 8 steps of them
    rows = [(21, 24, "FULL", 5), (35, 40, "FULL", 3), (36, 40, "PIECEWISE", 2)]
    path = write(tmp_path, ARGS + prefixed(table(rows)))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0", "--json")
    data = json.loads(out)
    assert code == 0 and [r["agrees"] for r in data["rows"]] == [False, False, True]
    assert data["summary"]["disagreements"] == 2
