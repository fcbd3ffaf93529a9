"""A crash map: the audit's summary for every (engine, max_num_seqs, k) of a grid.

Cells whose captured sizes and reachable batches agree share one summary, and the V0 draft
runner's outcome is audited once per max_num_seqs, so a 9 x 512 x 9 map takes seconds. The
columns are CRASH_MAP_COLUMNS (data/README.md, crash_map.csv); graphlab.sizing.audit says what
each summary counts.
"""

from __future__ import annotations

import pandas as pd

from graphlab.errors import BadInput, check_sizes
from graphlab.progress import progress as progress_bar
from graphlab.sizing.audit import fails_first, parse_engines, proposer_audit
from graphlab.sizing.batches import reachable_batch_sizes, verify_requests
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchUnit
from graphlab.sizing.drafter_audit import drafter_audit
from graphlab.sizing.engines import SizingPolicy
from graphlab.sizing.runner_audit import summarize

# A crash map sweeps, per engine and S, up to S*(1+k) sizes for each k: keep it to seconds on
# 2 CPU cores.
CRASH_MAP_MAX_BATCH_SIZES = 2**26

CRASH_MAP_COLUMNS = (
    "engine",
    "max_num_seqs",
    "num_speculative_tokens",
    "max_num_batched_tokens",
    "first_crash_n",
    "num_crash",
    "num_reachable",
    "graph_fraction",
    "eager_fraction",
    "mean_padding_waste",
    "error",
    "startup_error",
    "proposer_first_crash_n",
    "proposer_error",
    "fails_first",
    "drafter_graph_fraction",
)


def crash_map(
    engine="all",
    max_num_seqs_range=range(1, 513),
    k_range=range(0, 9),
    max_num_batched_tokens: int | None = None,
    progress: bool = False,
    cudagraph_mode: str | None = None,
    model_runner: str = "auto",
    speculative_method: str | None = None,
) -> pd.DataFrame:
    """One row per (engine, max_num_seqs, num_speculative_tokens): crashes, coverage, padding waste.

    error: the scorer's first crash; startup_error: why the engine would refuse the config
    (vLLM V1 only; its row then shows what the sizing rule leaves: no graphs after a failed
    rounding). proposer_first_crash_n / proposer_error: the V0 draft runner's first crash (null
    elsewhere); fails_first: "scorer" or "proposer" (graphlab.sizing.audit's docstring says why),
    null without a crash.

    engine: a name, a policy, a list of them, or "all". The *_n columns are nullable integers.
    progress: a tqdm bar on stderr, one step per engine.
    GraphlabError when the sweep would cover more than CRASH_MAP_MAX_BATCH_SIZES batch sizes.
    cudagraph_mode: vLLM's compilation_config.cudagraph_mode for the V1 engines (None: the default);
    the other engines have no such setting and keep their rows. model_runner: vLLM's model
    runner for the V1 engines ("auto": each engine's release decides). speculative_method: the
    V1 engines' speculative_config method, which picks the model runner and the drafter;
    drafter_graph_fraction is the share of the drafter's forward passes that replay a graph
    (graphlab.sizing.drafter `DrafterAudit.graph_fraction`), NaN where no drafter is modelled.
    """
    policies = parse_engines(engine)
    seqs_values = list(check_sizes("max_num_seqs_range", max_num_seqs_range, 1))
    k_values = list(check_sizes("k_range", k_range, 0))
    sweep = len(policies) * sum(seqs_values) * sum(1 + k for k in k_values)
    if sweep > CRASH_MAP_MAX_BATCH_SIZES:
        raise BadInput(
            f"a crash map over max_num_seqs {seqs_values[0]}..{seqs_values[-1]}, k "
            f"{k_values[0]}..{k_values[-1]} and {len(policies)} engine(s) sweeps "
            f"{sweep} batch sizes; at most {CRASH_MAP_MAX_BATCH_SIZES} (narrow the "
            "ranges or pick one engine)"
        )
    rows, summaries = [], {}
    for policy in progress_bar(policies, desc="crash map", unit="engine", disable=not progress):
        for seqs in seqs_values:
            # The draft runner's outcome depends on S only: one audit for every k > 0.
            proposer = proposer_audit(policy, SizingConfig(seqs, 1), outcomes=False)
            v1 = policy.batch_unit is BatchUnit.TOKENS  # only vLLM V1 reads these two
            for k in k_values:
                cfg = SizingConfig(
                    seqs,
                    k,
                    max_num_batched_tokens,
                    cudagraph_mode=cudagraph_mode if v1 else None,
                    model_runner=model_runner if v1 else "auto",
                    speculative_method=speculative_method if v1 else None,
                )
                # Cells with the same captured sizes and reachable batches share a summary (for
                # engines counting requests, k changes neither).
                key = (policy.name, policy.sizing_key(cfg), _workload_key(policy, cfg))
                if key not in summaries:
                    ns = reachable_batch_sizes(policy, cfg)
                    summaries[key] = summarize(policy.dispatch_batches(ns, cfg))
                s = summaries[key]
                p = proposer.summary if proposer is not None and k > 0 else None
                drafter = None
                if v1 and k > 0 and speculative_method is not None:
                    requests = verify_requests(policy, cfg)
                    drafter = drafter_audit(policy, cfg, requests, outcomes=False)
                rows.append(
                    dict(
                        engine=policy.name,
                        max_num_seqs=seqs,
                        num_speculative_tokens=k,
                        max_num_batched_tokens=policy.effective_max_num_batched_tokens(cfg),
                        first_crash_n=s.first_crash_n,
                        num_crash=s.num_crash,
                        num_reachable=s.num_reachable,
                        graph_fraction=s.graph_fraction,
                        eager_fraction=s.eager_fraction,
                        mean_padding_waste=s.mean_padding_waste,
                        error=s.first_crash_error,
                        startup_error=policy.startup_error(cfg),
                        proposer_first_crash_n=p and p.first_crash_n,
                        proposer_error=p and p.first_crash_error,
                        fails_first=fails_first(s, p),
                        drafter_graph_fraction=drafter.graph_fraction if drafter else float("nan"),
                    )
                )
    frame = pd.DataFrame.from_records(rows, columns=CRASH_MAP_COLUMNS)
    for column in ("first_crash_n", "max_num_batched_tokens", "proposer_first_crash_n"):
        frame[column] = frame[column].astype("Int64")
    return frame


def _workload_key(policy: SizingPolicy, cfg: SizingConfig) -> tuple:
    # What reachable_batch_sizes depends on: requests ignore k, only tokens read T.
    k = 0 if policy.batch_unit is BatchUnit.REQUESTS else cfg.num_speculative_tokens
    tokens = (
        policy.effective_max_num_batched_tokens(cfg)
        if policy.batch_unit is BatchUnit.TOKENS
        else None
    )
    return policy.batch_unit, cfg.max_num_seqs, k, tokens
