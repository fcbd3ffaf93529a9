"""Coverage of a config: the outcome of every reachable batch, and a crash map over (S, k).

Padding waste of one batch: graph_size - n when it replays a graph (slots computed for
nothing), 0 when it runs eagerly (no padding), undefined (None) when it crashes.
`mean_padding_waste` averages it over the reachable n that run (graph or eager), each n counted
once; NaN when none runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from functools import lru_cache

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from graphlab.errors import GraphlabError
from graphlab.sizing import ENGINES, PATHS, Dispatch, SizingConfig, SizingPolicy, crash_error, get_policy
from graphlab.workload import batch_sizes_for_unit, reachable_batch_sizes

CRASH_MAP_COLUMNS = (
    "engine",
    "max_num_seqs",
    "num_speculative_tokens",
    "max_num_batched_tokens",
    "first_crash_n",
    "num_crash",
    "num_reachable",
    "graph_fraction",
    "mean_padding_waste",
    "error",
    "startup_error",
)


@dataclass(frozen=True)
class AuditSummary:
    num_reachable: int
    num_graph: int
    num_eager: int
    num_crash: int
    graph_fraction: float  # num_graph / num_reachable
    mean_padding_waste: float  # see the module docstring
    first_crash_n: int | None
    first_crash_error: str | None  # e.g. "KeyError: 40", "StopIteration"


@dataclass(frozen=True)
class AuditReport:
    engine: str
    batch_unit: str
    config: SizingConfig
    max_num_batched_tokens: int | None  # the value the engine sizes with (None: not read)
    startup_error: str | None  # set when the engine refuses to start with this config
    warnings: tuple[str, ...]  # the WARNING lines the engine logs while sizing (vLLM V1)
    capture_sizes: tuple[int, ...]
    outcomes: tuple[Dispatch, ...]  # one per reachable n, ascending
    summary: AuditSummary

    def to_dict(self) -> dict:
        """A JSON-ready dict: config, capture sizes, every outcome and the summary."""
        return {
            "engine": self.engine,
            "batch_unit": self.batch_unit,
            "max_num_seqs": self.config.max_num_seqs,
            "num_speculative_tokens": self.config.num_speculative_tokens,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "startup_error": self.startup_error,
            "warnings": list(self.warnings),
            "cudagraph_capture_sizes": _listed(self.config.cudagraph_capture_sizes),
            "max_cudagraph_capture_size": self.config.max_cudagraph_capture_size,
            "capture_sizes": list(self.capture_sizes),
            "outcomes": [
                {"batch_size": d.batch_size, "path": d.path, "graph_size": d.graph_size, "error": d.error}
                for d in self.outcomes
            ],
            "summary": asdict(self.summary),
        }


def _listed(sizes):
    return None if sizes is None else list(sizes)


def _summarize(ns: np.ndarray, path: np.ndarray, waste: np.ndarray, keys: np.ndarray) -> AuditSummary:
    """Summary of per-n results: path indexes PATHS, waste per the module docstring (0 on a crash)."""
    counts = np.bincount(path, minlength=len(PATHS))
    runs = int(counts[0] + counts[1])
    first = int(np.argmax(path == 2)) if counts[2] else None
    return AuditSummary(
        num_reachable=len(ns),
        num_graph=int(counts[0]),
        num_eager=int(counts[1]),
        num_crash=int(counts[2]),
        graph_fraction=float(counts[0] / len(ns)) if len(ns) else float("nan"),
        mean_padding_waste=float(waste.sum() / runs) if runs else float("nan"),
        first_crash_n=None if first is None else int(ns[first]),
        first_crash_error=None if first is None else crash_error(int(keys[first])),
    )


def _outcome_arrays(policy: SizingPolicy, ns: np.ndarray, cfg: SizingConfig, capture_sizes=None):
    """Vectorized dispatch of ns: (path index, padding waste with 0 off the graph path, looked-up key)."""
    path, graph_size, keys = policy.dispatch_array(ns, cfg, capture_sizes)
    return path, np.where(path == 0, graph_size - ns, 0), keys


def audit(policy: SizingPolicy | str, cfg: SizingConfig) -> AuditReport:
    """Every batch size cfg can produce on the engine, with its path (graph / eager / crash)."""
    policy = get_policy(policy)
    sizes = policy.capture_sizes(cfg)
    ns = reachable_batch_sizes(policy, cfg)
    path, waste, keys = _outcome_arrays(policy, ns, cfg, sizes)
    outcomes = tuple(
        Dispatch(int(n), PATHS[p], int(n + w) if p == 0 else None, crash_error(int(k)) if p == 2 else None)
        for n, p, w, k in zip(ns, path, waste, keys)
    )
    return AuditReport(
        engine=policy.name,
        batch_unit=policy.batch_unit,
        config=cfg,
        max_num_batched_tokens=policy.effective_max_num_batched_tokens(cfg),
        startup_error=policy.startup_error(cfg),
        warnings=policy.sizing_warnings(cfg),
        capture_sizes=sizes,
        outcomes=outcomes,
        summary=_summarize(ns, path, waste, keys),
    )


def _workload_key(policy: SizingPolicy, cfg: SizingConfig) -> tuple:
    # The arguments of batch_sizes_for_unit that matter: request counts ignore k, rows ignore T.
    k = 0 if policy.batch_unit == "requests" else cfg.num_speculative_tokens
    tokens = policy.effective_max_num_batched_tokens(cfg) if policy.batch_unit == "tokens" else None
    return (policy.batch_unit, cfg.max_num_seqs, k, tokens)


# Shared by the engines with the same unit (the three V0 policies see the same rows).
_reachable_cached = lru_cache(maxsize=8192)(batch_sizes_for_unit)


@dataclass
class _SweepCache:
    """What a crash map reuses between cells."""

    summaries: dict = field(default_factory=dict)  # (sizing, workload) -> AuditSummary
    tables: dict = field(default_factory=dict)  # sizing -> per-n outcome columns over 0..largest n
    k_free_keys: dict = field(default_factory=dict)  # (engine, S, T) -> the sizing key at k = 0
    startup_errors: dict = field(default_factory=dict)  # sizing -> startup_error


def _cell_summary(policy: SizingPolicy, cfg: SizingConfig, largest_n: int, cache: _SweepCache):
    """Summary of one (engine, cfg) in a sweep whose batches reach at most largest_n.

    When the capture sizes ignore k, per-n outcomes are tabulated once per (engine, sizes) over
    0..largest_n and indexed by each k's reachable set; a summary whose sizes and workload both
    ignore k is reused as is. Returns (summary, startup_error).
    """
    workload = _workload_key(policy, cfg)
    sizing = (policy.name, policy.sizing_key(cfg))
    if sizing not in cache.startup_errors:
        cache.startup_errors[sizing] = policy.startup_error(cfg)
    if (sizing, workload) in cache.summaries:
        return cache.summaries[sizing, workload], cache.startup_errors[sizing]
    ns = _reachable_cached(*workload)
    base = (policy.name, cfg.max_num_seqs, cfg.max_num_batched_tokens)
    if base not in cache.k_free_keys:
        cache.k_free_keys[base] = policy.sizing_key(replace(cfg, num_speculative_tokens=0))
    if sizing[1] == cache.k_free_keys[base]:
        table = cache.tables.get(sizing)
        if table is None or len(table[0]) <= ns[-1]:
            dense = np.arange(max(largest_n, int(ns[-1])) + 1)
            table = cache.tables[sizing] = _outcome_arrays(policy, dense, cfg)
        path, waste, keys = (column[ns] for column in table)
    else:
        path, waste, keys = _outcome_arrays(policy, ns, cfg)
    summary = cache.summaries[sizing, workload] = _summarize(ns, path, waste, keys)
    return summary, cache.startup_errors[sizing]


def _parse_engines(engine) -> list[SizingPolicy]:
    if engine == "all":
        return list(ENGINES.values())
    if isinstance(engine, (str, SizingPolicy)):
        return [get_policy(engine)]
    return [get_policy(e) for e in engine]


def crash_map(
    engine="all",
    max_num_seqs_range=range(1, 513),
    k_range=range(0, 9),
    max_num_batched_tokens: int | None = None,
    progress: bool = False,
) -> pd.DataFrame:
    """One row per (engine, max_num_seqs, num_speculative_tokens): crashes, coverage, padding waste.

    error: the first crash's exception; startup_error: why the engine would refuse the config
    (vLLM V1 only; its row then shows what the sizing rule leaves: no graphs after a failed rounding).

    engine: a name, a policy, a list of them, or "all". first_crash_n is a nullable integer.
    progress: a tqdm bar on stderr, one step per engine.
    """
    policies = _parse_engines(engine)
    seqs_values, k_values = list(max_num_seqs_range), list(k_range)
    if not seqs_values or not k_values:
        raise GraphlabError("max_num_seqs and k ranges must not be empty")
    rows = []
    cache = _SweepCache()
    widest_query = 1 + max(k_values)
    for policy in tqdm(policies, desc="crash map", unit="engine", disable=not progress):
        for seqs in seqs_values:
            for k in k_values:
                cfg = SizingConfig(seqs, k, max_num_batched_tokens)
                # No batch exceeds max_num_seqs * (1 + k) in any unit.
                s, startup_error = _cell_summary(policy, cfg, seqs * widest_query, cache)
                rows.append(
                    (
                        policy.name,
                        seqs,
                        k,
                        policy.effective_max_num_batched_tokens(cfg),
                        s.first_crash_n,
                        s.num_crash,
                        s.num_reachable,
                        s.graph_fraction,
                        s.mean_padding_waste,
                        s.first_crash_error,
                        startup_error,
                    )
                )
    frame = pd.DataFrame.from_records(rows, columns=CRASH_MAP_COLUMNS)
    frame["first_crash_n"] = frame["first_crash_n"].astype("Int64")
    frame["max_num_batched_tokens"] = frame["max_num_batched_tokens"].astype("Int64")
    return frame
