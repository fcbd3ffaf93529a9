"""Padding priced in time: per engine, the mean step over every reachable batch once, each batch
charged its padded graph's measured step or, when it runs eagerly, its eager step (latency_rows'
medians), with a bootstrap interval from the step samples and each engine's mean step against a
reference engine's (graphlab.stats' verdict).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from graphlab.bench.sampling import comparison_columns
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, RunMode
from graphlab.sizing.engines import get_engine
from graphlab.sizing.planner.inputs import SizeTable
from graphlab.sizing.planner.plan import uniform_workload
from graphlab.sizing.planner.result import evaluate
from graphlab.stats import Comparison, bootstrap_interval


class _StepPrices:
    """latency_rows' frame as (graph, eager) SizeTables: graph mode's median at each replayed
    size, eager mode's at each n (the median of the rows at one size), from the frame's medians
    or from any [resamples, rows] array of them (the bootstrap's), grouped once."""

    def __init__(self, latency: pd.DataFrame):
        self.latency, self.backend = latency, "/".join(sorted(latency.backend.unique()))
        graph = (latency["mode"] == RunMode.GRAPH) & (latency.path != BatchPath.EAGER)
        eager = (latency["mode"] == RunMode.EAGER) & (latency.path == BatchPath.EAGER)
        self.groups = [
            self._grouped(latency.graph_size.where(graph)),
            self._grouped(latency.batch_size.where(eager)),
        ]

    @staticmethod
    def _grouped(sizes: pd.Series) -> dict:
        """{size: row positions} of the rows a size's price is read from (NaN: none)."""
        kept = sizes.reset_index(drop=True).dropna().astype(int)
        return {size: rows.to_numpy() for size, rows in kept.groupby(kept).groups.items()}

    def tables(self, median_ms=None) -> list[tuple[SizeTable, SizeTable]]:
        """One (graph, eager) pair per row of median_ms ([resamples, rows]; None: the frame's)."""
        ms = np.atleast_2d(self.latency.median_ms.to_numpy() if median_ms is None else median_ms)
        columns = [
            (
                np.array(sorted(groups)),
                np.stack([np.median(ms[:, groups[n]], axis=1) for n in sorted(groups)], axis=1),
            )
            for groups in self.groups
        ]
        return [
            tuple(
                SizeTable(sizes, values[r], what, self.backend)
                for (sizes, values), what in zip(columns, ("graph steps", "eager steps"))
            )
            for r in range(len(ms))
        ]


def _mean_steps(policies: dict, cfg: SizingConfig, prices) -> dict:
    """{engine: its mean step over every reachable batch once, priced with (graph, eager)
    SizeTables} for {engine: policy} whose config does not crash."""
    return {
        engine: evaluate(
            policy, cfg, policy.capture_sizes(cfg), uniform_workload(policy, cfg), latency=prices
        ).mean_step_ms
        for engine, policy in policies.items()
    }


def _resampled_medians(latency: pd.DataFrame, samples: pd.DataFrame, resamples: int):
    """[resamples, rows]: each row of latency's frame its median_ms from bootstrap resamples of
    its request count's rounds (both modes of a round drawn together: they shared its moment)."""
    rng, medians = np.random.default_rng(0), {}
    for reqs, at in samples.groupby("num_reqs"):
        table = at.pivot(index="sample", columns="mode", values="time_ms")
        drawn = table.to_numpy()[rng.integers(0, len(table), (resamples, len(table)))]
        for mode, column in zip(table.columns, np.median(drawn, axis=1).T):
            medians[(reqs, mode)] = column
    return np.stack([medians[key] for key in zip(latency.num_reqs, latency["mode"])], axis=1)


def priced_sizing(
    engines,
    cfg: SizingConfig,
    latency: pd.DataFrame,
    samples: pd.DataFrame | None = None,
    reference: str = "adaptive",
    resamples: int = 400,
) -> pd.DataFrame:
    """Per engine, every reachable batch n once: graph fraction, mean padding waste (the audit's:
    over the batches that run, an eager step counting 0) and the mean step priced with measured
    step times (latency_rows' frame: graph mode's median at each replayed size, eager mode's at
    each n), which charges an eager step its eager time. An engine whose config crashes gets no
    price. With latency_rows' `samples`, the mean step's 95% bootstrap interval
    (mean_step_ci_low, mean_step_ci_high) and each engine's mean step over `reference`'s
    (over_reference_*: ratio, interval, verdict, and the pairs behind it), every request
    count's rounds resampled."""
    policies = {engine: get_engine(engine) for engine in engines}  # names enter here, once
    summaries = {engine: audit(policy, cfg).summary for engine, policy in policies.items()}
    priced = {e: p for e, p in policies.items() if not summaries[e].num_crash}
    prices = _StepPrices(latency)
    means = _mean_steps(priced, cfg, prices.tables()[0])
    rows = []
    for engine, policy in policies.items():
        outcome = evaluate(policy, cfg, policy.capture_sizes(cfg), uniform_workload(policy, cfg))
        rows.append(
            dict(
                engine=engine,
                graph_fraction=outcome.graph_fraction,
                mean_padding_waste=summaries[engine].mean_padding_waste,  # as the audit table
                mean_step_ms=means.get(engine),
                priced_on=prices.backend,
            )
        )
    table = pd.DataFrame(rows).set_index("engine")
    if samples is None:
        return table
    replicates = pd.DataFrame(
        [
            _mean_steps(priced, cfg, tables)
            for tables in prices.tables(_resampled_medians(latency, samples, resamples))
        ]
    )
    pairs = int(samples.groupby(["num_reqs", "mode"]).size().min())
    for engine in priced:
        low, high = bootstrap_interval(replicates[engine])
        table.loc[engine, ["mean_step_ci_low", "mean_step_ci_high"]] = low, high
        if engine != reference:
            versus = Comparison(
                means[engine] / means[reference],
                *bootstrap_interval(replicates[engine] / replicates[reference]),
                pairs,
            )
            columns = comparison_columns(versus, "over_reference") | {"over_reference_pairs": pairs}
            for column, value in columns.items():
                table.loc[engine, column] = value
    return table
