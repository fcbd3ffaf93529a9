"""What the two fixes cost, measured on this machine's backend.

`guard_cost` times the decode step of a V0 engine (the guard) and of an engine that captures every
size (adaptive), both in graph mode, stepping in turn at every batch size the scorer can send, and
keeps each sample; `eager_ratio` turns them into the guard's price per size (its step over the
covering engine's, with a bootstrap interval and the verdict of graphlab.stats), and
`guard_run_cost` into the milliseconds a run paid at the sizes it met. On CUDA a replay is a CUDA
graph; on a CPU a torch.compile'd step (cpu-compiled), which is not a CUDA graph.

`adaptive_price` is the other side: per k, the coverage adaptive sizing gains over the guard
against the graphs it captures, their capture time (after a warm-up capture, so that no engine
pays the process's first compile or allocation) and their graph memory. Padding priced in time
is graphlab.bench.priced.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial

import numpy as np
import pandas as pd

from graphlab.bench.measurements import capture_records, capture_summary
from graphlab.bench.provenance import provenance, with_provenance
from graphlab.bench.sampling import (
    Timing,
    compared_steps,
    comparison_columns,
    interleaved_steps,
    sample_rows,
    step_times,
)
from graphlab.engine.device import Backend
from graphlab.engine.factory import make_runner
from graphlab.engine.model import LlamaForCausalLM
from graphlab.engine.v1_runner import uniform_decode_batch
from graphlab.errors import BadInput, check_instance
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, BatchUnit, RunMode
from graphlab.sizing.engines import get_engine
from graphlab.stats import (
    CONFIDENCE,
    compare,
    decided,
    interim_confidence,
    machine_load,
    median_ci,
    pooled,
)

# What each per-size row of eager_ratio keeps from its samples: the figure's title reads them.
PROVENANCE_COLUMNS = ("backend", "clock", "device", "model", "dtype", "load_avg_1m", "cpus")


# The sizes the guard's headline pools: its eager steps just past its graphs (S 8, k 4).
POOLED_WINDOW = range(9, 17)


def guard_cost(
    model: LlamaForCausalLM,
    cfg: SizingConfig,
    timing: Timing,
    engine: str = "vllm-0.6.0",
    covering: str = "adaptive",
    preset: str = "custom",
    window=POOLED_WINDOW,
) -> pd.DataFrame:
    """Every timed step (long format: engine, batch_size, path, sample, time_ms, wall_ms, clock,
    load) of `engine` and `covering`, both in graph mode on timing.backend, at batch sizes
    1..max_num_seqs * (1 + k), the two stepping in turn (interleaved_steps, sampled until decided
    at timing.precision where `engine` runs eagerly), with provenance (`preset`: the model's
    name); the model's cache needs that many slots. Then the headline, `engine` over `covering`
    pooled over its eager sizes in `window` (pooled_cost), gets more rounds at those sizes until
    it is decided or each holds 8 x repeats pairs."""
    check_instance("cfg", cfg, SizingConfig)
    check_instance("timing", timing, Timing)
    backend, repeats, precision = timing.backend, timing.repeats, timing.precision
    runners = {name: make_runner(model, name, cfg, backend=backend) for name in (engine, covering)}
    for runner in runners.values():
        runner.capture_model()
    execute = {name: runner.execute_model for name, runner in runners.items()}
    steps, loads, batches = {}, {}, {}
    for size in range(1, cfg.max_num_seqs * cfg.decode_query_len + 1):
        batches[size] = uniform_decode_batch(size, runners[engine].query_len, model)
        eager = execute[engine](*batches[size])[1].path is BatchPath.EAGER
        loads[size] = machine_load()
        steps[size] = interleaved_steps(
            execute, batches[size], timing if eager else replace(timing, precision=None)
        )
    pooled_sizes = [n for n in window if n in steps and steps[n][engine][0].path is BatchPath.EAGER]
    more_rounds = Timing(backend, max(repeats // 2, 1), warmup=0, precision=None)
    # One look per batch of rounds, from the sizes' own samples up to 8 x repeats pairs each.
    start = len(steps[pooled_sizes[0]][engine]) if pooled_sizes else 0
    level = interim_confidence(1 + max(-(-(8 * repeats - start) // more_rounds.repeats), 0))
    while (
        precision is not None
        and pooled_sizes
        and len(steps[pooled_sizes[0]][engine]) < 8 * repeats
        and not decided(pooled_cost(steps, pooled_sizes, engine, covering, level), precision)
    ):
        for n in pooled_sizes:
            for label, more in interleaved_steps(execute, batches[n], more_rounds).items():
                steps[n][label] += more
    rows = [
        row
        for size, at in steps.items()
        for row in sample_rows(
            at, "engine", batch_size=size, backend=runners[engine].backend.name, **loads[size]
        )
    ]
    prov = provenance(model.device, dtype=str(model.dtype), model=preset, backend=backend.name)
    return with_provenance(rows, prov)


def pooled_cost(steps: dict, sizes, engine: str, covering: str, confidence: float = CONFIDENCE):
    """The pooled Comparison of `engine` over `covering` at `sizes`, each once, from
    {size: {engine: StepRecords}}, at `confidence`: the headline guard_cost samples for."""
    groups = ((step_times(steps[n][engine]), step_times(steps[n][covering]), 1) for n in sizes)
    return pooled(groups, confidence)[0]


def eager_ratio(
    samples: pd.DataFrame, engine: str = "vllm-0.6.0", covering: str = "adaptive"
) -> pd.DataFrame:
    """Per batch size, from guard_cost's samples: each engine's median step with its bootstrap
    interval, path and graph size, and `engine` over `covering` (guard_over_*: ratio, interval,
    verdict), the guard's price per step at that size; the provenance columns of the samples."""
    rows = []
    for size, at in check_instance("samples", samples, pd.DataFrame).groupby("batch_size"):
        mine, theirs = (at[at.engine == name].sort_values("sample") for name in (engine, covering))
        row = dict(
            batch_size=size,
            path=mine.path.iloc[0],
            covering_path=theirs.path.iloc[0],
            graph_size=mine.graph_size.iloc[0],
            covering_graph_size=theirs.graph_size.iloc[0],
            **{c: at[c].iloc[0] for c in PROVENANCE_COLUMNS if c in at},
        )
        for name, part in (("guard", mine), ("covering", theirs)):
            median, low, high = median_ci(part.time_ms)
            row |= {f"{name}_ms": median, f"{name}_ci_low": low, f"{name}_ci_high": high}
        comparison = compare(mine.time_ms.to_numpy(), theirs.time_ms.to_numpy())
        rows.append(row | comparison_columns(comparison, "guard_over") | {"samples": len(mine)})
    return pd.DataFrame(rows).set_index("batch_size")


def guard_run_cost(
    samples: pd.DataFrame,
    steps_met,
    engine: str = "vllm-0.6.0",
    covering: str = "adaptive",
) -> dict:
    """What the guard cost over a run, from guard_cost's samples and {batch size: steps} the
    run met: `ms`, the sum of steps x (guard's median step - covering's) with its bootstrap
    interval (ms_ci_low, ms_ci_high), and the pooled comparison of the two engines' time over
    those steps (`comparison`, and its guard_over_*: ratio, interval, verdict); the
    milliseconds' interval and the ratio's come from the same resamples, so they agree."""
    steps_met, groups = {int(n): int(c) for n, c in dict(steps_met).items()}, []
    for size, count in steps_met.items():
        at = samples[samples.batch_size == size]
        mine, theirs = (at[at.engine == name].sort_values("sample") for name in (engine, covering))
        groups.append((mine.time_ms.to_numpy(), theirs.time_ms.to_numpy(), int(count)))
    comparison, (total, low, high) = pooled(groups)
    return dict(
        ms=total,
        ms_ci_low=low,
        ms_ci_high=high,
        steps=int(sum(steps_met.values())),
        comparison=comparison,
        **comparison_columns(comparison, "guard_over"),
    )


def adaptive_price(
    model: LlamaForCausalLM,
    max_num_seqs: int,
    backend: Backend,
    ks=range(9),
    engines=("vllm-0.6.0", "adaptive"),
    graph_pool: str = "shared",
    repeats: int = 3,
    preset: str | None = None,
) -> pd.DataFrame:
    """One row per (k, engine): coverage of the scorer's reachable batches (graph and eager
    fraction, from the sizing rules), graphs captured, their capture time on `model` and
    `backend` (capture plus warm-up steps summed over the list; median of `repeats` captures,
    the engines of one k capturing in turn; each engine after the first against it:
    capture_over_first_*, and `same_sizes_as_first` where both capture the same sizes, a control
    for noise rather than a comparison) and graph memory (measured on CUDA, predicted
    otherwise), with provenance (`preset`: the model's name). Captures write only the pad slot.

    First one warm-up capture of the longest list (its time is the warmup_capture_ms column):
    the process's first compile, allocations and kernel loads land there, not in the first
    engine measured.
    """
    if not isinstance(repeats, int) or repeats < 1:
        raise BadInput(f"repeats={repeats!r} must be an integer >= 1")
    policies = {engine: get_engine(engine) for engine in engines}  # names enter here, once
    engines = list(policies)
    configs = [(k, engine, SizingConfig(max_num_seqs, k)) for k in ks for engine in engines]
    longest = max(configs, key=lambda c: len(policies[c[1]].capture_sizes(c[2])))
    warmup = capture_records(model, longest[1], longest[2], backend, graph_pool)
    warmup_ms = capture_summary(warmup, graph_pool)["capture_ms"]
    rows = []
    for k in ks:
        cfg, costs = SizingConfig(max_num_seqs, k), {engine: [] for engine in engines}
        for _ in range(repeats):  # the engines capture in turn: a pair shares its moment's load
            for engine in engines:
                records = capture_records(model, engine, cfg, backend, graph_pool)
                costs[engine].append(capture_summary(records, graph_pool))
        first = [c["capture_ms"] for c in costs[engines[0]]]
        for engine in engines:
            summary, cost = audit(policies[engine], cfg).summary, costs[engine][-1]
            times = [c["capture_ms"] for c in costs[engine]]
            versus = compare(times, first) if engine != engines[0] else None
            rows.append(
                dict(
                    engine=engine,
                    max_num_seqs=max_num_seqs,
                    num_speculative_tokens=k,
                    num_graphs=cost["num_graphs"],
                    largest_size=cost["largest_size"],
                    num_reachable=summary.num_reachable,
                    graph_fraction=summary.graph_fraction,
                    eager_fraction=summary.eager_fraction,
                    capture_ms=float(np.median(times)),
                    repeats=repeats,
                    **(comparison_columns(versus, "capture_over_first") if versus else {}),
                    same_sizes_as_first=policies[engine].capture_sizes(cfg)
                    == policies[engines[0]].capture_sizes(cfg),
                    memory_bytes=cost["memory_bytes"],
                    memory_kind=cost["memory_kind"],
                    graph_pool=graph_pool,
                    compile_cache=cost["compile_cache"],
                    warmup_capture_ms=warmup_ms,
                )
            )
    prov = provenance(model.device, dtype=str(model.dtype), model=preset, backend=cost["backend"])
    return with_provenance(rows, prov)


def reference_ratio(reference: pd.DataFrame, smallest: int, largest: int) -> pd.DataFrame:
    """A committed latency CSV's V0 rows (batch_unit rows: never V1 tokens) at batch sizes
    smallest..largest where graph mode replayed a graph (sizes where both modes ran eagerly
    say nothing about a graph), one row per (model, batch_size) with eager over graph."""
    unit = reference.get("batch_unit", BatchUnit.ROWS).fillna(BatchUnit.ROWS)  # older CSVs: none
    rows = reference[unit == BatchUnit.ROWS]
    near = rows[rows.batch_size.between(smallest, largest)]
    graph = (near["mode"] == RunMode.GRAPH) & (near.path != BatchPath.EAGER)
    replayed = near[graph][["model", "batch_size"]]
    kept = near.merge(replayed, on=["model", "batch_size"])
    table = kept.pivot_table(index=["model", "batch_size"], columns="mode", values="median_ms")
    if table.empty:
        return table.assign(**{"eager / graph": []})
    table["eager / graph"] = table["eager"] / table["graph"]
    return table


def piecewise_cost(
    model: LlamaForCausalLM, engine: str, cfg: SizingConfig, num_reqs: int, timing: Timing
) -> pd.DataFrame:
    """One V1 step of num_reqs requests three ways, stepping in turn: uniform (every request
    1 + k tokens: a FULL graph), mixed (the first request without drafts, 1 token: PIECEWISE
    graphs, attention eager) and eager (enforce_eager). One row per way: its path, graph size,
    median with interval, and (mixed, eager) its time over the FULL step's (compared_steps'
    over_ref_*: ratio, interval, verdict), with provenance."""
    check_instance("timing", timing, Timing)
    graph = make_runner(model, engine, cfg, backend=timing.backend)
    eager = make_runner(model, engine, cfg, backend=timing.backend, enforce_eager=True)
    for runner in (graph, eager):
        runner.capture_model()
    q = cfg.decode_query_len
    mixed = [1] + [q] * (num_reqs - 1)
    steps = {
        "uniform": graph.execute_model,
        "mixed": partial(graph.execute_model, num_scheduled_tokens=mixed),
        "eager": eager.execute_model,
    }
    batch = uniform_decode_batch(num_reqs, q, model)
    rows = compared_steps(steps, batch, "uniform", timing)
    prov = provenance(model.device, dtype=str(model.dtype), backend=timing.backend.name)
    return with_provenance(rows, prov)


def capped_cost(
    model: LlamaForCausalLM, engine: str, configs: dict, num_reqs: int, timing: Timing
) -> pd.DataFrame:
    """One uniform step of num_reqs requests under each of `configs` ({label: SizingConfig} of
    one engine, e.g. an explicit max_cudagraph_capture_size against the default), the runners
    stepping in turn; rows as compared_steps, each against the first config's step."""
    check_instance("timing", timing, Timing)
    runners = {
        label: make_runner(model, engine, c, backend=timing.backend) for label, c in configs.items()
    }
    for runner in runners.values():
        runner.capture_model()
    first = next(iter(runners))
    batch = uniform_decode_batch(num_reqs, runners[first].query_len, model)
    steps = {label: runner.execute_model for label, runner in runners.items()}
    rows = compared_steps(steps, batch, first, timing)
    prov = provenance(model.device, dtype=str(model.dtype), backend=timing.backend.name)
    return with_provenance(rows, prov)
