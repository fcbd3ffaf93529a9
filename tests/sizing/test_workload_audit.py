"""Reachable batch sizes, per-config audits, the crash map and atomic CSV export."""

import math
import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlab.bench.export import write_csv_atomic
from graphlab.errors import GraphlabError
from graphlab.sizing.audit import audit, audit_table
from graphlab.sizing.batches import batch_expansion_sizes, reachable_batch_sizes
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.crash_maps import CRASH_MAP_COLUMNS, crash_map
from graphlab.sizing.engines import get_engine


@settings(max_examples=80, deadline=None)
@given(s=st.integers(min_value=1, max_value=40), k=st.integers(min_value=0, max_value=8))
def test_batch_expansion_sizes_match_brute_force(s, k):
    brute = {b_s * (k + 1) + b_0 for b_s in range(s + 1) for b_0 in range(s + 1 - b_s)} - {0}
    assert batch_expansion_sizes(SizingConfig(s, k)).tolist() == sorted(brute)


def reachable(engine: str, cfg: SizingConfig) -> list[int]:
    return reachable_batch_sizes(get_engine(engine), cfg).tolist()


def test_workload_units():
    cfg = SizingConfig(8, 4)
    assert reachable("vllm-0.5.5", cfg)[-5:] == [30, 31, 32, 35, 36, 40][-5:]
    assert reachable("vllm-0.13.0", cfg) == [5, 10, 15, 20, 25, 30, 35, 40]
    for engine in ("sglang", "trtllm", "nano-vllm"):
        assert reachable(engine, cfg) == list(range(1, 9))
    assert reachable("vllm-0.6.0", SizingConfig(5, 0)) == [1, 2, 3, 4, 5]


def test_audit_of_the_issue_config():
    report = audit("vllm-0.5.5", SizingConfig(8, 4))
    s = report.summary
    assert report.capture_sizes == (1, 2, 4, 8)
    assert [d.batch_size for d in report.outcomes] == reachable("vllm-0.5.5", SizingConfig(8, 4))
    assert (s.num_graph, s.num_eager, s.num_crash, s.num_reachable) == (8, 0, 26, 34)
    assert (s.first_crash_n, s.first_crash_error) == (9, "KeyError: 16")
    assert next(d for d in report.outcomes if d.batch_size == 40).error == "KeyError: 40"
    # Waste over the 8 runs: n=3 pads to 4, n=5..7 pad to 8: 1 + 3 + 2 + 1 = 7.
    assert s.mean_padding_waste == pytest.approx(7 / 8)
    assert s.graph_fraction == pytest.approx(8 / 34)


def test_padding_waste_definition():
    report = audit("vllm-0.6.0", SizingConfig(8, 4))
    for d in report.outcomes:
        assert d.padding_waste == (d.graph_size - d.batch_size if d.path == "graph" else 0)
    runs = [d.padding_waste for d in report.outcomes]
    assert report.summary.mean_padding_waste == pytest.approx(sum(runs) / len(runs))
    assert report.summary.num_crash == 0 and report.summary.first_crash_n is None


def test_nano_vllm_audit():
    s = audit("nano-vllm", SizingConfig(100, 3)).summary
    assert (s.num_graph, s.num_crash, s.first_crash_n, s.first_crash_error) == (
        96,
        4,
        97,
        "StopIteration",
    )


def test_audit_to_dict_is_complete():
    d = audit("vllm-0.33.0", SizingConfig(4, 2)).to_dict()
    assert d["max_num_batched_tokens"] == 8192 and d["capture_sizes"] == sorted(d["capture_sizes"])
    assert [o["batch_size"] for o in d["outcomes"]] == [3, 6, 9, 12]
    assert d["summary"]["num_reachable"] == 4


def test_crash_map_cells_agree_with_audit():
    frame = crash_map(["vllm-0.5.5", "nano-vllm", "vllm-0.13.0"], range(1, 41), range(0, 5))
    assert tuple(frame.columns) == CRASH_MAP_COLUMNS and len(frame) == 3 * 40 * 5
    assert str(frame["first_crash_n"].dtype) == "Int64"
    rng = np.random.default_rng(0)
    for i in rng.choice(len(frame), 40, replace=False):
        row = frame.iloc[i]
        s = audit(
            row.engine, SizingConfig(int(row.max_num_seqs), int(row.num_speculative_tokens))
        ).summary
        assert (row.num_crash, row.num_reachable) == (s.num_crash, s.num_reachable)
        assert row.graph_fraction == pytest.approx(s.graph_fraction)
        assert row.mean_padding_waste == pytest.approx(s.mean_padding_waste)
        if s.first_crash_n is None:
            assert pd.isna(row.first_crash_n) and pd.isna(row.error)
        else:
            assert (row.first_crash_n, row.error) == (s.first_crash_n, s.first_crash_error)
    issue = frame.query(
        "engine == 'vllm-0.5.5' and max_num_seqs == 8 and num_speculative_tokens == 4"
    ).iloc[0]
    assert (issue.first_crash_n, issue.error) == (9, "KeyError: 16")


def test_crash_map_all_engines_small_and_bad_input():
    frame = crash_map("all", range(1, 4), range(0, 2))
    assert frame.engine.nunique() == 9
    assert (
        frame.loc[frame.engine.isin(["vllm-0.6.0", "adaptive", "sglang", "trtllm"]), "num_crash"]
        .eq(0)
        .all()
    )
    assert frame.loc[frame.engine == "vllm-0.12.0", "max_num_batched_tokens"].eq(8192).all()
    assert frame.loc[frame.engine == "vllm-0.5.5", "max_num_batched_tokens"].isna().all()
    with pytest.raises(GraphlabError, match="engine 'vllm-7' is not one of vllm-0.5.5"):
        crash_map("vllm-7", range(1, 3), range(0, 1))


def test_write_csv_atomic_round_trip(tmp_path):
    frame = crash_map("vllm-0.5.5", range(1, 9), range(0, 5))
    path = write_csv_atomic(frame, tmp_path / "map.csv")
    back = pd.read_csv(path)
    assert (
        back.shape == frame.shape
        and back.first_crash_n.dropna().astype(int).tolist()
        == frame.first_crash_n.dropna().tolist()
    )
    assert os.listdir(tmp_path) == ["map.csv"]


def test_write_csv_atomic_leaves_nothing_partial(tmp_path, monkeypatch):
    path = tmp_path / "map.csv"
    path.write_text("old\n")

    def half_then_fail(self, handle, **kwargs):
        handle.write("engine,max_num_seqs\nvllm-0.5.5,")
        raise RuntimeError("disk full")

    monkeypatch.setattr(pd.DataFrame, "to_csv", half_then_fail)
    with pytest.raises(RuntimeError, match="disk full"):
        write_csv_atomic(pd.DataFrame({"a": [1]}), path)
    assert path.read_text() == "old\n" and os.listdir(tmp_path) == ["map.csv"]


def test_mean_padding_waste_nan_only_when_nothing_runs():
    s = audit("vllm-0.5.5", SizingConfig(1, 0)).summary
    assert not math.isnan(s.mean_padding_waste)


def test_v1_workload_stops_at_the_token_budget():
    # S=8, k=4, T=16: only 1..3 requests of 5 tokens fit a step; 20..40 tokens cannot occur.
    cfg = SizingConfig(8, 4, 16)
    assert reachable_batch_sizes(get_engine("vllm-0.33.0"), cfg).tolist() == [5, 10, 15]
    report = audit("vllm-0.33.0", cfg)
    assert [d.batch_size for d in report.outcomes] == [5, 10, 15]
    assert report.summary.num_eager == 0 and report.summary.graph_fraction == 1.0
    # Rows (V0) and requests ignore the token budget.
    assert (
        reachable_batch_sizes(get_engine("vllm-0.5.5"), cfg).max() == 40
        and reachable_batch_sizes(get_engine("sglang"), cfg).max() == 8
    )


@settings(max_examples=60, deadline=None)
@given(
    s=st.integers(min_value=1, max_value=300),
    k=st.integers(min_value=0, max_value=8),
    t=st.integers(min_value=1, max_value=3000),
)
def test_v1_reachable_tokens_are_whole_requests_within_budget(s, k, t):
    ns = reachable_batch_sizes(get_engine("vllm-0.13.0"), SizingConfig(s, k, t)).tolist()
    assert ns == [b * (k + 1) for b in range(1, s + 1) if b * (k + 1) <= t]


# --- the V0 proposer (draft runner) ---------------------------------------------------------------


def test_proposer_batches_widen_with_bonus_tokens_and_crash_in_055():
    # S=8, k=4: draft batches B_s + B_bonus cover 1..16; graphs {1, 2, 4, 8}: 9..16 -> KeyError: 16.
    report = audit("vllm-0.5.5", SizingConfig(8, 4))
    proposer = report.proposer
    assert proposer.capture_sizes == (1, 2, 4, 8) and [
        d.batch_size for d in proposer.outcomes
    ] == list(range(1, 17))
    assert {d.error for d in proposer.outcomes if d.batch_size > 8} == {"KeyError: 16"}
    assert (proposer.summary.first_crash_n, proposer.summary.first_crash_error) == (
        9,
        "KeyError: 16",
    )
    assert report.fails_first == "scorer"  # its first decode step already sends 40 rows
    data = report.to_dict()
    assert (
        set(data["proposer"]) == {"capture_sizes", "outcomes", "summary"}
        and data["fails_first"] == "scorer"
    )
    assert data["outcomes"] == [
        {"batch_size": d.batch_size, "path": d.path, "graph_size": d.graph_size, "error": d.error}
        for d in report.outcomes
    ]  # top-level outcomes stay the scorer's
    # 0.6.0 runs those draft steps eagerly; adaptive sizes the draft runner as with k = 0 too.
    guard = audit("vllm-0.6.0", SizingConfig(8, 4)).proposer
    assert guard.summary.num_crash == 0 and guard.summary.num_eager == 8
    assert audit("adaptive", SizingConfig(8, 4)).proposer.capture_sizes == (1, 2, 4, 8)


def test_no_proposer_without_speculation_or_outside_v0():
    assert audit("vllm-0.5.5", SizingConfig(8, 0)).proposer is None
    assert "proposer" not in audit("vllm-0.33.0", SizingConfig(8, 4)).to_dict()
    assert "proposer" not in audit("sglang", SizingConfig(8, 4)).to_dict()


def test_crash_map_proposer_columns():
    frame = crash_map(["vllm-0.5.5", "vllm-0.6.0", "vllm-0.13.0"], range(1, 20), range(0, 4))
    for row in frame.itertuples():
        report = audit(row.engine, SizingConfig(row.max_num_seqs, row.num_speculative_tokens))
        if report.proposer is None:
            assert pd.isna(row.proposer_first_crash_n) and pd.isna(row.proposer_error)
        else:
            s = report.proposer.summary
            assert (s.first_crash_n is None) == pd.isna(row.proposer_first_crash_n)
            assert s.first_crash_n is None or (row.proposer_first_crash_n, row.proposer_error) == (
                s.first_crash_n,
                s.first_crash_error,
            )
        assert (row.fails_first if isinstance(row.fails_first, str) else None) == report.fails_first
    issue = frame.query(
        "engine == 'vllm-0.5.5' and max_num_seqs == 8 and num_speculative_tokens == 3"
    ).iloc[0]
    assert (issue.proposer_first_crash_n, issue.proposer_error, issue.fails_first) == (
        9,
        "KeyError: 16",
        "scorer",
    )


def test_audit_table_is_one_audit_per_engine_in_its_own_unit():
    cfg = SizingConfig(8, 4)
    table = audit_table(["vllm-0.5.5", "vllm-0.6.0", "adaptive", "vllm-0.33.0"], cfg)
    assert list(table.index) == ["vllm-0.5.5", "vllm-0.6.0", "adaptive", "vllm-0.33.0"]
    # Batch expansion sends 1..40 rows; V1 verifies 1..8 requests of 5 tokens.
    assert table["decode batches"].tolist() == ["1..40", "1..40", "1..40", "5..40"]
    assert table.loc["vllm-0.5.5", "crash"] > 0 and table.loc["vllm-0.6.0", "crash"] == 0
    assert table.loc["adaptive", "graph fraction"] == 1.0
    for engine, row in table.iterrows():
        s = audit(engine, cfg).summary
        assert (row["graph"], row["eager"], row["crash"]) == (s.num_graph, s.num_eager, s.num_crash)
