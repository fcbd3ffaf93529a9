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
