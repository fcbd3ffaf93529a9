"""Reading a vLLM `--cudagraph-metrics` log (graphlab.sizing.vllm_log) and auditing it against the
kit's dispatch (graphlab.sizing.log_audit) through `audit --vllm-log` and `plan --vllm-log`.

Tables here are pasted-issue shapes and broken logs; logs written by vLLM's own code are in
tests/test_vllm_log_vllm.py.
"""

import json
import tracemalloc

import pytest

from graphlab.cli import main
from graphlab.errors import GraphlabError
from graphlab.sizing.log_audit import SCHEMA, audit_log, engine_for_version
from graphlab.sizing.vllm_log import read_vllm_log

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
    # 35, a mixed batch of 36 the PIECEWISE 40; 28 tokens (4 verify requests) ran PIECEWISE at 32
    # where FULL 28 exists: the lost-FULL class.
    rows = [(21, 21, "FULL", 5), (35, 35, "FULL", 4), (36, 40, "PIECEWISE", 2)]
    rows.append((28, 32, "PIECEWISE", 3))
    path = write(tmp_path, ARGS + prefixed(table(rows)))
    code, out, _ = run(capsys, "audit", "--vllm-log", path, "--engine", "vllm-0.33.0", "--json")
    data = json.loads(out, parse_constant=lambda c: pytest.fail(f"not strict JSON: {c}"))
    assert code == 0 and data["schema"] == SCHEMA
    assert all(r["agrees"] for r in data["rows"])
    lost = [r for r in data["rows"] if r["full_graph_could_serve"]]
    assert [(r["unpadded_tokens"], r["full_graph_could_serve"]) for r in lost] == [(28, 28)]
    s = data["summary"]
    assert (s["steps"], s["steps_without_graph"], s["padding_tokens"]) == (14, 0, 2 * 4 + 3 * 4)
    assert s["disagreements"] == 0 and s["capture_sizes_agree"] is False
    for key in ("unpadded_tokens", "padded_tokens", "runtime_mode", "count", "kit_padded_tokens"):
        assert key in data["rows"][0]


def test_a_disagreement_is_printed_first_with_the_version_assumed(tmp_path, capsys):
    log = "(APIServer pid=7) INFO 12-01 [core.py:133] Initializing a V1 LLM engine (v0.34.0)\n"
    log += ARGS + prefixed(table([(21, 24, "FULL", 5)], sizes="[7, 14, 21, 28, 35, 42]"))
    code, out, _ = run(capsys, "audit", "--vllm-log", write(tmp_path, log))
    first = out.splitlines()[0]
    assert code == 0 and first.startswith("DISAGREEMENT") and "vLLM 0.34.0" in first
    assert "assumed vllm-0.33.0" in first
    assert "21 tokens ran FULL at 24 (5 steps); kit: FULL at 21" in out
    (note,) = [line for line in out.splitlines() if line.startswith("note:") and "0.34.0" in line]
    assert "assumed vllm-0.33.0's rules" in note


def test_the_server_version_line_names_the_version(tmp_path):
    log = (
        f"{PREFIX}vLLM server version 0.13.0, serving model m\n" + ARGS + table([(7, 7, "FULL", 1)])
    )
    assert read_vllm_log(write(tmp_path, log)).value("vllm_version") == "0.13.0"


def test_versions_map_to_the_kits_engines():
    assert engine_for_version("0.13.0") == ("vllm-0.13.0", None)
    assert engine_for_version("0.32.0")[0] == engine_for_version("0.33.1")[0] == "vllm-0.33.0"
    assert "assumed vllm-0.33.0" in engine_for_version("0.34.0")[1]
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
    tracemalloc.start()
    try:
        parsed = read_vllm_log(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
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


def test_plan_takes_the_logged_steps_as_its_workload(tmp_path, capsys):
    rows = [(21, 21, "FULL", 5), (35, 35, "FULL", 4), (36, 40, "PIECEWISE", 2)]
    log = write(tmp_path, ARGS + prefixed(table(rows)))
    csv = tmp_path / "steps.csv"
    csv.write_text("batch_size,count\n21,5\n35,4\n36,2\n")
    common = ("--max-graphs", "3", "--json")
    code, out, _ = run(capsys, "plan", "--vllm-log", log, *common)
    from_log = json.loads(out)
    code2, out2, _ = run(
        capsys, "plan", "--batch-sizes", str(csv), "--max-num-seqs", "6",
        "--num-speculative-tokens", "6", "--cudagraph-mode", "FULL_AND_PIECEWISE", *common,
    )  # fmt: skip
    from_csv = json.loads(out2)
    assert code == code2 == 0
    assert from_log["capture_sizes"] == from_csv["capture_sizes"]
    assert from_log["mean_padding_waste"] == from_csv["mean_padding_waste"]
    assert "vLLM's logged steps" in from_log["workload"]


def test_the_audit_of_an_empty_capture_list_runs_every_step_without_a_graph(tmp_path):
    log = write(tmp_path, ARGS + prefixed(table([(7, 7, "NONE", 3)], mode="NONE", sizes="[]")))
    report = audit_log(read_vllm_log(log))
    assert report.summary()["steps_without_graph"] == 3 and report.rows.agrees.all()
    with pytest.raises(GraphlabError, match="refuses"):
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


def test_the_printed_table_fits_a_notebooks_width(tmp_path, capsys):
    # 07 prints it: at 135 columns JupyterLab wrapped each row, its last column on a line alone.
    log = ARGS + prefixed(table([(21, 21, "FULL", 5), (9, 14, "PIECEWISE", 2)]))
    code, out, _ = run(capsys, "audit", "--vllm-log", write(tmp_path, log))
    head = out.index("\n\n") + 2  # the table follows the summary's sentences
    rows = out[head:].split("\nnote:")[0].splitlines()
    assert code == 0 and rows[0].split()[:4] == ["tokens", "padded", "paddings", "mode"]
    assert max(len(row) for row in rows) <= 100
