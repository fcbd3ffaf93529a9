"""The one way a cost is measured: medians with bootstrap intervals, the three-way verdict, the
interleaved sampling, and the load record.

Synthetic samples with known truth: a clear effect must be called in its direction, no effect
must read as noise (in all but about 5% of seeded trials, the interval's level), and a real but
small effect drowned in noise must not be called.
"""

import itertools

import numpy as np
import pytest
from helpers import verdict_problems

from graphlab.bench import sampling
from graphlab.engine.device import BACKEND_VALUES
from graphlab.stats import (
    FASTER,
    MIN_SAMPLES,
    NO_DIFFERENCE,
    SLOWER,
    Comparison,
    busy,
    compare,
    median_ci,
    pooled,
    relative_half_width,
    verdict,
)
from graphlab.views.verdicts import load_warning, sentence


def _times(rng, n, scale, sigma):
    """n step times around `scale` ms with log-normal noise of `sigma`."""
    return scale * rng.lognormal(0.0, sigma, n)


def test_a_clear_effect_is_called_in_its_direction():
    rng = np.random.default_rng(1)
    slow, fast = _times(rng, 20, 1.5, 0.05), _times(rng, 20, 1.0, 0.05)
    assert compare(slow, fast).verdict == SLOWER
    assert compare(fast, slow).verdict == FASTER
    c = compare(slow, fast)
    assert c.low < c.ratio < c.high and 1.4 < c.ratio < 1.6
    assert sentence(c, "eager", "graph").startswith("eager is slower than graph: 1.")


def test_no_effect_reads_as_noise_at_about_the_interval_level():
    rng = np.random.default_rng(2)
    calls = [
        compare(_times(rng, 20, 1.0, 0.2), _times(rng, 20, 1.0, 0.2), resamples=500).verdict
        for _ in range(200)
    ]
    # 95% intervals: about 1 in 20 crosses 1 by chance; far more would mean a biased interval.
    assert calls.count(NO_DIFFERENCE) >= 0.88 * len(calls)


def test_a_small_effect_in_huge_noise_is_not_called():
    rng = np.random.default_rng(3)
    a, b = _times(rng, 10, 1.2, 1.5), _times(rng, 10, 1.0, 1.5)
    c = compare(a, b)
    assert c.verdict == NO_DIFFERENCE and c.low < 1 < c.high
    assert "shows no difference beyond noise from" in sentence(c, "eager", "graph")


def test_too_few_samples_give_no_verdict_whatever_the_interval():
    assert compare([3.0] * (MIN_SAMPLES - 1), [1.0] * (MIN_SAMPLES - 1)).verdict == NO_DIFFERENCE
    assert compare([3.0] * MIN_SAMPLES, [1.0] * MIN_SAMPLES).verdict == SLOWER


@pytest.mark.parametrize("seed", range(30))
def test_the_verdict_follows_the_interval_it_is_printed_with(seed):
    rng = np.random.default_rng(seed)
    c = compare(_times(rng, 12, rng.uniform(0.5, 2), 0.5), _times(rng, 12, 1.0, 0.5))
    expected = SLOWER if c.low > 1 else FASTER if c.high < 1 else NO_DIFFERENCE
    assert c.verdict == expected == verdict(c.low, c.high)


@pytest.mark.parametrize(
    "low, high, printed",
    [
        (1.004, 1.05, "CI 1.004-1.050"),  # "slower" beside 1.00-1.05 would read as a contradiction
        (0.93, 0.9996, "CI 0.9300-0.9996"),
        (0.97, 1.04, "CI 0.97-1.04"),  # no bound near 1: two decimals
        (1.0, 1.03, "CI 1.00-1.03"),  # exactly 1 is on no side
    ],
)
def test_a_bound_near_one_is_printed_on_its_side(low, high, printed):
    c = Comparison((low + high) / 2, low, high, 20)
    assert printed in c.interval
    if c.verdict != NO_DIFFERENCE:
        bound = float(printed.split()[1].split("-")[0 if c.verdict == SLOWER else 1])
        assert (bound > 1) if c.verdict == SLOWER else (bound < 1)


def test_intervals_are_seeded_and_cover_the_median():
    rng = np.random.default_rng(4)
    x = _times(rng, 30, 1.0, 0.3)
    assert median_ci(x) == median_ci(x)
    median, low, high = median_ci(x)
    assert low <= median <= high and median == np.median(x)


def test_pooled_difference_and_ratio_agree_in_direction():
    rng = np.random.default_rng(5)
    groups = [(_times(rng, 15, 1.3, 0.1), _times(rng, 15, 1.0, 0.1), w) for w in (1, 4, 2)]
    ratio, (total, low, high) = pooled(groups)
    assert ratio.verdict == SLOWER and 0 < low < total < high
    assert ratio.num_samples == 45  # the pairs of all three groups
    expected = sum(w * (np.median(a) - np.median(b)) for a, b, w in groups)
    assert total == pytest.approx(expected)


def test_a_pooled_group_with_too_few_pairs_leaves_the_verdict_open():
    rng = np.random.default_rng(7)
    groups = [(_times(rng, n, 2.0, 0.05), _times(rng, n, 1.0, 0.05), 1) for n in (20, 3)]
    ratio, _ = pooled(groups)
    assert ratio.num_samples == 3 and ratio.verdict == NO_DIFFERENCE


def test_a_load_past_three_quarters_of_a_load_per_cpu_is_busy():
    assert not busy(dict(load_avg_1m=1.5, cpus=2)) and busy(dict(load_avg_1m=1.51, cpus=2))


def test_a_high_load_is_warned_about():
    assert load_warning(dict(load_avg_1m=1.0, cpus=2)) is None
    line = load_warning(dict(load_avg_1m=6.5, cpus=2))
    assert "6.50 on 2 CPUs" in line and line.startswith("WARNING")


def timing(repeats, warmup, precision=None, max_repeats=None):
    """A Timing for the stand-in runners (their backend is never asked)."""
    emulated = BACKEND_VALUES["cpu-emulated"]
    return sampling.Timing(emulated, repeats, warmup, precision, max_repeats)


class _Step:
    """A stand-in runner; called, it steps as interleaved_steps calls a runner's execute_model."""

    def __init__(self, label, log):
        self.label, self.log = label, log

    def __call__(self, *batch):
        return self.execute_model(*batch)

    def execute_model(self, *batch):
        self.log.append(self.label)
        record = type("Record", (), {"time_ms": 2.0 if self.label == "a" else 1.0})
        record.path, record.batch_size, record.graph_size = "eager", 1, None
        return None, record


def test_modes_are_sampled_in_turn_after_warm_up():
    log = []
    steps = sampling.interleaved_steps(
        {"a": _Step("a", log), "b": _Step("b", log)}, (), timing(repeats=4, warmup=2)
    )
    # two warm-up rounds, then four timed ones, the order rotated each round: AB BA AB BA
    assert log == ["a", "b"] * 2 + ["a", "b", "b", "a"] * 2
    assert [len(v) for v in steps.values()] == [4, 4]
    log.clear()
    three = {name: _Step(name, log) for name in "abc"}
    sampling.interleaved_steps(three, (), timing(repeats=3, warmup=0))
    assert "".join(log) == "abcbcacab"  # each runner once in each place


def test_sampling_stops_at_the_precision_or_the_cap():
    log = []
    runners = {"a": _Step("a", log), "b": _Step("b", log)}
    # Identical times: the interval is a point, precision reached after the first rounds.
    assert len(sampling.interleaved_steps(runners, (), timing(6, 0, precision=0.05))["a"]) == 6
    noisy = iter(np.random.default_rng(6).lognormal(0, 2, 1000))

    class Noisy(_Step):
        def execute_model(self, *batch):
            _, record = super().execute_model()
            record.time_ms = float(next(noisy))
            return None, record

    noisy_runners = {"a": Noisy("a", log), "b": Noisy("b", log)}
    taken = sampling.interleaved_steps(noisy_runners, (), timing(6, 0, precision=0.01))
    assert len(taken["a"]) == 24  # never precise enough: stops at 4 x repeats


def test_a_comparison_is_decided_by_a_direction_or_an_interval_within_the_effect():
    rng = np.random.default_rng(4)
    clear = compare(_times(rng, 20, 1.5, 0.05), _times(rng, 20, 1.0, 0.05))
    same = compare(_times(rng, 40, 1.0, 0.02), _times(rng, 40, 1.0, 0.02))
    wide = compare(_times(rng, 8, 1.0, 0.5), _times(rng, 8, 1.0, 0.5))
    assert clear.decided and "is slower than" in sentence(clear, "a", "b")
    assert same.verdict == NO_DIFFERENCE and same.decided
    said = sentence(same, "a", "b")
    assert "(any difference is under +-" in said and verdict_problems(said) == []
    assert wide.verdict == NO_DIFFERENCE and not wide.decided
    assert "this machine cannot decide it" in sentence(wide, "a", "b")
    # Too few pairs never decide, whatever the interval.
    assert not compare([1.0] * (MIN_SAMPLES - 1), [1.0] * (MIN_SAMPLES - 1)).decided


def _noisy_runners(log, scale_a, sigma, seed):
    rng = np.random.default_rng(seed)

    class Noisy(_Step):
        def execute_model(self, *batch):
            _, record = super().execute_model()
            record.time_ms = float(
                (scale_a if self.label == "a" else 1.0) * rng.lognormal(0, sigma)
            )
            return None, record

    return {"a": Noisy("a", log), "b": Noisy("b", log)}


def test_sequential_sampling_stops_once_the_interval_excludes_one():
    # A 30% effect in 15% noise: undecided after 6 pairs at +-1% precision, decided (slower)
    # long before the interval could reach +-1%, and well before the cap.
    runners = _noisy_runners([], 1.3, 0.15, seed=7)
    taken = sampling.interleaved_steps(runners, (), timing(6, 0, precision=0.01, max_repeats=200))
    c = compare(sampling.step_times(taken["a"]), sampling.step_times(taken["b"]))
    assert c.verdict == SLOWER and c.decided and 6 <= len(taken["a"]) < 60
    assert relative_half_width(c) > 0.01  # stopped by the direction, not by the precision


def test_sequential_sampling_waits_for_every_runner_against_the_first():
    # b steps as a does (decided at once); c alternates 0.5 and 2 ms, an interval around 1 that
    # never narrows to +-5%: sampling goes on for c's sake.
    swing = itertools.cycle([0.5, 2.0])

    class Timed(_Step):
        def execute_model(self, *batch):
            _, record = super().execute_model()
            record.time_ms = 1.0 if self.label != "c" else next(swing)
            return None, record

    log = []
    runners = {name: Timed(name, log) for name in "abc"}
    taken = sampling.interleaved_steps(runners, (), timing(6, 0, precision=0.05, max_repeats=30))
    assert len(taken["a"]) == 30  # the cap: a's and b's ratio alone would have stopped at 6


def test_sequential_sampling_with_no_difference_calls_a_direction_about_one_run_in_twenty(
    monkeypatch,
):
    # Up to 7 looks (8 pairs, then 4 more to 32): stopping at the first 95% interval that
    # excludes 1 would print a direction in ~15% of runs of two identical steps.
    def directions(trials=150):
        called = 0
        for seed in range(trials):
            runners = _noisy_runners([], 1.0, 0.3, seed)
            taken = sampling.interleaved_steps(
                runners, (), timing(8, 0, precision=0.01, max_repeats=32)
            )
            printed = compare(sampling.step_times(taken["a"]), sampling.step_times(taken["b"]))
            called += printed.verdict != NO_DIFFERENCE
        return called

    assert directions() <= 12  # 8% of 150: the interim levels keep the looks near 1 in 20
    monkeypatch.setattr(sampling, "interim_confidence", lambda looks: 0.95)
    assert directions() >= 18  # every look at 95%: 12% and more
