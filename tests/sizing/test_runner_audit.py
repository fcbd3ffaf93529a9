"""One runner's audited batches (graphlab.sizing.runner_audit): the runs of equal outcomes the
audit prints and the summary's figures, on families whose dispatch is plain to read."""

from graphlab.sizing.dispatch import CUDAGraphMode
from graphlab.sizing.families import PlainFull, families_of
from graphlab.sizing.runner_audit import RunnerAudit, summarize

# PIECEWISE graphs at 4 and 8 tokens: 1-4 tokens pad to 4, 5-8 to 8, 9 and more run eagerly.
FAMILIES = families_of(CUDAGraphMode.PIECEWISE, [4, 8], 16, 1)


def audited(ns) -> RunnerAudit:
    batches = FAMILIES.dispatch_batches(ns, False)
    return RunnerAudit((4, 8), batches.outcomes(), summarize(batches))


def test_a_run_of_equal_outcomes_never_spans_a_batch_size_that_cannot_occur():
    # 5, 6 and 8 all replay the graph of 8; 7 is not among the batches, so 8 is a row of its own
    lines = audited([5, 6, 8]).format_lines("tokens")
    assert [line.split()[0] for line in lines[2:-1]] == ["5-6", "8"], lines


def test_the_mean_padding_waste_counts_an_eager_step_as_no_waste():
    # 3 pads to 4 (1 token), 8 replays 8 (none), 9 runs eagerly (none): 1 token over 3 steps
    summary = audited([3, 8, 9]).summary
    assert (summary.num_graph, summary.num_eager) == (2, 1)
    assert summary.mean_padding_waste == 1 / 3


def test_the_first_crash_names_the_batch_and_its_error_the_padded_size():
    # vLLM 0.12's plain FULL: 1 request of q = 2 tokens pads to the graph of 3, and 3 % 2 fails
    # the dispatcher's assertion; the batch that crashes is the 2-token one
    families = families_of(CUDAGraphMode.FULL, [3, 4], 4, 2, PlainFull.ASSERTS)
    summary = summarize(families.dispatch_batches([2, 4], True))
    assert summary.first_crash_n == 2 and summary.first_crash_error.endswith(": 3 % 2 != 0")


def test_the_eager_fraction_counts_eager_steps_not_crashes():
    # 2 tokens crash (pads to 3), 4 replays 4, 6 runs eagerly above the graphs: 1 eager of 3
    families = families_of(CUDAGraphMode.FULL, [3, 4], 4, 2, PlainFull.ASSERTS)
    summary = summarize(families.dispatch_batches([2, 4, 6], True))
    assert (summary.num_crash, summary.num_eager, summary.num_reachable) == (1, 1, 3)
    assert summary.eager_fraction == 1 / 3


# ---- what mutmut over sizing/runner_audit.py (2026-12-06) found untested ----------------------


def test_the_printed_audit_of_graphs_padding_and_eager_steps():
    # 2 and 4 pad to 4, 6 and 8 to 8 (runs stepping by 2), 9-11 above the graphs run eagerly
    assert audited([2, 4, 6, 8, 9, 10, 11]).format_lines("tokens") == [
        "capture_sizes (2): 4, 8",
        "batch size (tokens)  path   graph_size / error",
        "        2-4 step 2  piecewise  4",
        "        6-8 step 2  piecewise  8",
        "              9-11  eager  ",
        "summary: 7 reachable, 0 full, 4 piecewise, 3 eager, 0 crash; graph fraction 0.571; "
        "eager fraction 0.429; mean padding waste 0.57; no crash",
    ]


def test_the_printed_audit_names_a_crash_its_error_and_counts_full_graphs_apart():
    # vLLM 0.12's plain FULL at q = 2: 2 tokens pad to the graph of 3 and fail its assertion
    families = families_of(CUDAGraphMode.FULL, [3, 4], 4, 2, PlainFull.ASSERTS)
    batches = families.dispatch_batches([2, 4, 6], True)
    lines = RunnerAudit((3, 4), batches.outcomes(), summarize(batches)).format_lines("tokens")
    error = (
        "AssertionError: num_tokens_padded % uniform_decode_query_len == 0 "
        "(vllm/v1/cudagraph_dispatcher.py): 3 % 2 != 0"
    )
    assert lines[2:] == [
        f"                 2  crash  {error}",
        "                 4  full   4",
        "                 6  eager  ",
        "summary: 3 reachable, 1 full, 0 piecewise, 1 eager, 1 crash; graph fraction 0.333; "
        f"eager fraction 0.333; mean padding waste 0.00; first crash at n=2 ({error})",
    ]


def test_the_audit_as_json_holds_the_sizes_every_outcome_and_the_summary():
    assert audited([2, 4]).to_dict() == {
        "capture_sizes": [4, 8],
        "outcomes": [
            {"batch_size": 2, "path": "piecewise", "graph_size": 4, "error": None},
            {"batch_size": 4, "path": "piecewise", "graph_size": 4, "error": None},
        ],
        "summary": {
            "num_reachable": 2,
            "num_graph": 2,
            "num_eager": 0,
            "num_crash": 0,
            "graph_fraction": 1.0,
            "mean_padding_waste": 1.0,
            "first_crash_n": None,
            "first_crash_error": None,
            "num_piecewise": 2,
            "eager_fraction": 0.0,
        },
    }


def test_no_reachable_batch_has_no_fractions():
    import math

    summary = audited([]).summary
    assert summary.num_reachable == 0 and summary.first_crash_n is None
    assert all(
        math.isnan(x)
        for x in (summary.graph_fraction, summary.mean_padding_waste, summary.eager_fraction)
    )


def test_a_v0_runners_audit_counts_its_graphs_without_full_or_piecewise():
    # vLLM 0.6.0 at max_num_seqs = 4 captures 1, 2, 4 rows (V0 has one kind of graph)
    import numpy as np

    from graphlab.sizing.config import SizingConfig
    from graphlab.sizing.engines import get_engine

    policy, cfg = get_engine("vllm-0.6.0"), SizingConfig(4)
    batches = policy.dispatch_batches(np.array([1, 2, 3, 8, 9]), cfg)
    audit = RunnerAudit(policy.capture_sizes(cfg), batches.outcomes(), summarize(batches))
    assert audit.format_lines("rows")[2:] == [
        "                 1  graph  1",
        "                 2  graph  2",
        "                 3  graph  4",
        "               8-9  eager  ",
        "summary: 5 reachable, 3 graph, 2 eager, 0 crash; graph fraction 0.600; "
        "eager fraction 0.400; mean padding waste 0.20; no crash",
    ]


def test_the_first_crash_is_found_after_batches_that_replay():
    # plain FULL at q = 2 over graphs of 2 and 5: 2 tokens replay 2, 4 pad to 5 and fail 5 % 2
    families = families_of(CUDAGraphMode.FULL, [2, 5], 5, 2, PlainFull.ASSERTS)
    summary = summarize(families.dispatch_batches([2, 4], True))
    assert (summary.num_graph, summary.num_crash, summary.first_crash_n) == (1, 1, 4)
    assert summary.first_crash_error.endswith(": 5 % 2 != 0")


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


def test_crashes_with_different_errors_are_rows_of_their_own():
    # plain FULL at q = 2: 2 tokens pad to 3 and 4 to 5, each failing the assertion on its size
    families = families_of(CUDAGraphMode.FULL, [3, 5], 4, 2, PlainFull.ASSERTS)
    batches = families.dispatch_batches([2, 4], True)
    lines = RunnerAudit((3, 5), batches.outcomes(), summarize(batches)).format_lines("tokens")
    rows = lines[2:-1]
    assert [row.split()[0] for row in rows] == ["2", "4"], lines
    assert rows[0].endswith("3 % 2 != 0") and rows[1].endswith("5 % 2 != 0"), lines
