"""Timing statistics: medians with bootstrap intervals, and the one verdict every comparison uses.

A cost comparison on a shared machine is read through `compare(a, b)`: the ratio of the median
of a over the median of b, with a seeded percentile-bootstrap interval over the sample pairs
(samples are taken interleaved, a_i beside b_i, so a pair shares the load of its moment), and
`verdict(low, high)`: "slower" when the whole interval lies above 1, "faster" when below, and
"no difference beyond noise" otherwise. Sentences, titles and summary lines print the verdict
beside the interval it came from, never a bare `median > 1`. A comparison is sampled until it is
`decided` (the sequential rule of graphlab.bench.sampling): its interval excludes 1, or it lies
within +-EFFECT of its ratio (whatever difference there is, it is smaller than the effect); one
that reaches its cap undecided says that this machine cannot decide it. `machine_load` records
the load average with each run; `busy` says when it is high enough to widen the intervals.
Torch-free: numpy only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 0
# Fewer pairs than this give a bootstrap interval too coarse to call a direction.
MIN_SAMPLES = 6
SLOWER, FASTER, NO_DIFFERENCE = "slower", "faster", "no difference beyond noise"
VERDICTS = (SLOWER, FASTER, NO_DIFFERENCE)
# The effect a comparison is sampled to resolve: +-5% of the ratio, below the price differences
# the kit's conclusions rest on, and what a CPU's thread clock resolves in seconds of sampling.
EFFECT = 0.05
# Load average per CPU above which timings share the cores with other work.
HIGH_LOAD_PER_CPU = 0.75


def _resampled(n: int, resamples: int, seed: int) -> np.ndarray:
    """resamples x n indices drawn with replacement: one bootstrap sample per row."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def _percentiles(values: np.ndarray, confidence: float) -> tuple[float, float]:
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(values, (tail, 100 - tail))
    return float(low), float(high)


def median_ci(
    samples, confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float, float]:
    """(median, low, high): the samples' median and its percentile-bootstrap interval."""
    x = np.asarray(samples, dtype=float)
    medians = np.median(x[_resampled(len(x), resamples, seed)], axis=1)
    return (float(np.median(x)), *_percentiles(medians, confidence))


def bootstrap_interval(replicates, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """The percentile interval of a statistic's bootstrap replicates (computed by the caller)."""
    return _percentiles(np.asarray(replicates, dtype=float), confidence)


def verdict(low: float, high: float) -> str:
    """The direction an interval of a ratio (a over b) supports: a is slower when the whole
    interval lies above 1, faster when below 1, else no difference beyond noise."""
    if low > 1:
        return SLOWER
    if high < 1:
        return FASTER
    return NO_DIFFERENCE


def bound_digits(low: float, high: float, most: int = 6) -> int:
    """Decimals that print an interval's bounds on their own side of 1: two, more where a bound
    off 1 would print as 1.00 (a "slower" beside "1.00-1.05" reads as a contradiction)."""
    for digits in range(2, most + 1):
        if all(bound == 1 or round(bound, digits) != 1 for bound in (low, high)):
            return digits
    return most  # within 5e-7 of 1: printed as 1.000000, past any timing's resolution


@dataclass(frozen=True)
class Comparison:
    """median(a) / median(b), its bootstrap interval, and the verdict of that interval."""

    ratio: float
    low: float
    high: float
    num_samples: int
    confidence: float = CONFIDENCE

    @property
    def verdict(self) -> str:
        if self.num_samples < MIN_SAMPLES:
            return NO_DIFFERENCE
        return verdict(self.low, self.high)

    @property
    def interval(self) -> str:
        digits = bound_digits(self.low, self.high)
        return (
            f"{self.ratio:.{digits}f}x ({self.confidence:.0%} CI {self.low:.{digits}f}-"
            f"{self.high:.{digits}f}, {self.num_samples} pairs)"
        )

    @property
    def decided(self) -> bool:
        return decided(self)


def compare(
    a, b, confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = SEED
) -> Comparison:
    """a over b from paired samples (a[i] and b[i] taken back to back): the ratio of medians
    and its bootstrap interval, resampling pairs so that each keeps its shared moment."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"paired samples need equal, non-zero lengths, got {len(x)}, {len(y)}")
    idx = _resampled(len(x), resamples, seed)
    ratios = np.median(x[idx], axis=1) / np.median(y[idx], axis=1)
    low, high = _percentiles(ratios, confidence)
    return Comparison(float(np.median(x) / np.median(y)), low, high, len(x), confidence)


def relative_half_width(comparison: Comparison) -> float:
    """Half the interval's width over the ratio: the precision a comparison reached."""
    return (comparison.high - comparison.low) / 2 / comparison.ratio


def interim_confidence(looks: int, confidence: float = CONFIDENCE) -> float:
    """The level of each of `looks` interim intervals of a sequential comparison, so that a stop
    at any of them errs no more often than one interval at `confidence` (Bonferroni): stopping
    at the first 95% interval that excludes 1 calls a direction by chance far more often than 1
    in 20."""
    if looks < 1:
        raise ValueError(f"looks must be at least 1, got {looks}")
    return 1 - (1 - confidence) / looks


def decided(comparison: Comparison, effect: float = EFFECT) -> bool:
    """Whether a comparison needs no more samples: its interval excludes 1 (a direction), or it
    lies within +-effect of the ratio (whatever difference there is, it is smaller); never
    with fewer than MIN_SAMPLES pairs."""
    if comparison.num_samples < MIN_SAMPLES:
        return False
    return comparison.verdict != NO_DIFFERENCE or relative_half_width(comparison) <= effect


def machine_load() -> dict:
    """The 1-minute load average and the CPUs this process may use, to store with each run."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return dict(load_avg_1m=round(os.getloadavg()[0], 2), cpus=cpus)


def busy(load: dict) -> bool:
    """Whether machine_load's load average per CPU passes HIGH_LOAD_PER_CPU."""
    return load["load_avg_1m"] / load["cpus"] > HIGH_LOAD_PER_CPU


def pooled(
    groups, confidence: float = CONFIDENCE, resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[Comparison, tuple[float, float, float]]:
    """Over (a, b, weight) groups of paired samples (one group per batch size, weight the steps
    it stands for): the Comparison of sum(weight * median(a)) over sum(weight * median(b)), and
    (total, low, high) of sum(weight * (median(a) - median(b))); each group is resampled on its
    own and the bootstrap replicates are summed. The Comparison counts the pairs of all groups,
    or, when a group has fewer than MIN_SAMPLES, that group's count (no direction then)."""
    sums, replicates = np.zeros(2), np.zeros((2, resamples))
    counts = []
    for i, (a, b, weight) in enumerate(groups):
        pair = np.asarray([a, b], dtype=float)
        idx = _resampled(pair.shape[1], resamples, seed + i)
        sums += weight * np.median(pair, axis=1)
        replicates += weight * np.median(pair[:, idx], axis=2)
        counts.append(pair.shape[1])
    # Every pair taken, unless a group has too few for its own interval: then that count, which
    # keeps the verdict undecided (Comparison.verdict).
    count = sum(counts) if min(counts, default=0) >= MIN_SAMPLES else min(counts, default=0)
    ratio = Comparison(
        float(sums[0] / sums[1]),
        *_percentiles(replicates[0] / replicates[1], confidence),
        count,
        confidence,
    )
    difference = (
        float(sums[0] - sums[1]),
        *_percentiles(replicates[0] - replicates[1], confidence),
    )
    return ratio, difference
