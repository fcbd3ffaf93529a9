"""Coverage of a config: the outcome of every reachable batch (graphlab.sizing.crash_maps: over
a grid of (S, k)).

Padding waste of one batch: graph_size - n when it replays a graph (slots computed for
nothing), 0 when it runs eagerly (no padding), undefined (None) when it crashes.
`mean_padding_waste` averages it over the reachable n that run (graph or eager), each n counted
once; NaN when none runs.

V0 speculative decoding has two runners. The scorer (the target model) sees the batch-expansion
rows; the proposer (the draft model, vllm/spec_decode/multi_step_worker.py 0.5.5
`_expand_execute_model_request`) adds a copy without the bonus token of every sequence that got
one in the previous step and keeps that batch for all k draft steps: B_s + B_bonus <= 2*B_s rows,
B_s <= S, so 1..2S. The draft runner shares max_num_seqs, so its graphs are sized as with k = 0.
The scorer fails first: its first decode step already sends B_s*(k+1) rows, while the proposer's
batch only widens once bonus tokens exist.

vLLM V1 batches follow graphlab.sizing.families: a uniform decode batch replays a FULL graph (at a
capture size rounded up to a multiple of 1 + k) or, where none fits, a PIECEWISE one; V1 rows show
the family ("full" | "piecewise") as their path. Plain FULL on 0.12.0 to 0.17.x crashes where a
uniform batch pads to a non-multiple of 1 + k (the dispatcher's assertion, the V1 heir of V0's
KeyError). V1's drafter keeps graphs of its own (graphlab.sizing.drafter): with k > 0, a vLLM V1
report carries a second table, per kind of draft step the graphs and each decode step's draft batch
(`DrafterAudit`); the drafters of 0.12.0 to 0.34.0.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from graphlab.errors import BadInput, check_instance
from graphlab.sizing.batches import reachable_batch_sizes, verify_requests
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchUnit, Dispatch
from graphlab.sizing.drafter_audit import DrafterAudit, drafter_audit
from graphlab.sizing.engines import ENGINE_TABLE, SizingPolicy, get_engine
from graphlab.sizing.families import families_for
from graphlab.sizing.runner_audit import AuditSummary, RunnerAudit, summarize

# Work bounds that keep an audit to seconds on 2 CPU cores: an audit lists every reachable batch
# size (V0's batch expansion: 1..S*(1+k)).
MAX_AUDIT_BATCH_SIZES = 2**18


@dataclass(frozen=True)
class AuditReport:
    policy: SizingPolicy  # the engine's rules, resolved once: more batches dispatch on it
    config: SizingConfig
    max_num_batched_tokens: int | None  # the value the engine sizes with (None: not read)
    startup_error: str | None  # set when the engine refuses to start with this config
    warnings: tuple[str, ...]  # the WARNING lines the engine logs while sizing (vLLM V1)
    scorer: RunnerAudit  # the target model's runner (the only one without speculative decoding)
    proposer: RunnerAudit | None  # V0 with k > 0: the draft model's runner
    full_sizes: tuple[int, ...] | None = None  # vLLM V1: the FULL uniform-decode graphs' sizes
    cudagraph_mode: str | None = None  # vLLM V1: the mode in force (cfg's or the default)
    # vLLM V1: {query length: FULL graph sizes}, and per outcome its requests and query length
    full_sizes_by_query_len: dict[int, tuple[int, ...]] | None = None
    verify_shapes: tuple[tuple[int, int], ...] | None = None
    drafter: DrafterAudit | None = None  # vLLM V1 with k > 0: the draft side

    @property
    def engine(self) -> str:
        return self.policy.name

    @property
    def batch_unit(self) -> BatchUnit:
        return self.policy.batch_unit

    @property
    def dynamic(self) -> bool:
        """Whether cfg sets num_speculative_tokens_per_batch_size (dynamic speculation)."""
        return self.config.num_speculative_tokens_per_batch_size is not None

    @property
    def capture_sizes(self) -> tuple[int, ...]:
        return self.scorer.capture_sizes

    @property
    def outcomes(self) -> tuple[Dispatch, ...]:
        return self.scorer.outcomes

    @property
    def summary(self) -> AuditSummary:
        return self.scorer.summary

    @property
    def fails_first(self) -> str | None:
        """ "scorer" or "proposer": the runner whose crash a run meets first; None without a
        crash."""
        return fails_first(self.scorer.summary, self.proposer and self.proposer.summary)

    def to_dict(self) -> dict:
        """A JSON-ready dict: config, warnings, capture sizes, every outcome and the summary;
        "proposer" (same shape) for V0 engines with k > 0, "drafter" for V1 engines with k > 0."""
        data = {
            "engine": self.engine,
            "batch_unit": self.batch_unit,
            "max_num_seqs": self.config.max_num_seqs,
            "num_speculative_tokens": self.config.num_speculative_tokens,
            "max_num_batched_tokens": self.max_num_batched_tokens,
            "cudagraph_capture_sizes": _listed(self.config.cudagraph_capture_sizes),
            "max_cudagraph_capture_size": self.config.max_cudagraph_capture_size,
            "startup_error": self.startup_error,
            "warnings": list(self.warnings),
            **self.scorer.to_dict(),
        }
        if self.cudagraph_mode is not None:
            data |= {"cudagraph_mode": self.cudagraph_mode, "full_sizes": list(self.full_sizes)}
        if self.dynamic:
            schedule = self.config.num_speculative_tokens_per_batch_size
            data["num_speculative_tokens_per_batch_size"] = [list(e) for e in schedule]
            data["full_sizes_by_query_len"] = {
                str(q): list(sizes) for q, sizes in self.full_sizes_by_query_len.items()
            }
            for outcome, (reqs, q) in zip(data["outcomes"], self.verify_shapes, strict=True):
                outcome |= {"num_reqs": reqs, "query_len": q}
        if self.proposer is not None:
            data["proposer"] = self.proposer.to_dict()
            data["fails_first"] = self.fails_first
        if self.drafter is not None:
            data["drafter"] = self.drafter.to_dict()
        return data

    def format_table(self) -> str:
        """The text `python -m graphlab audit` prints: the refusal first if any, the config, vLLM's
        warnings, then each runner's table (scorer and proposer for V0 with k > 0; the drafter's
        draft steps after the target's for V1 with k > 0)."""
        cfg = self.config
        settings = [
            f"max_num_seqs={cfg.max_num_seqs}",
            f"num_speculative_tokens={cfg.num_speculative_tokens}",
        ]
        if self.max_num_batched_tokens is not None:
            settings.append(f"max_num_batched_tokens={self.max_num_batched_tokens}")
        if cfg.cudagraph_capture_sizes is not None:
            settings.append(
                f"cudagraph_capture_sizes={','.join(map(str, cfg.cudagraph_capture_sizes))}"
            )
        if cfg.max_cudagraph_capture_size is not None:
            settings.append(f"max_cudagraph_capture_size={cfg.max_cudagraph_capture_size}")
        if cfg.cudagraph_mode is not None:
            settings.append(f"cudagraph_mode={cfg.cudagraph_mode}")
        if self.dynamic:
            schedule = cfg.num_speculative_tokens_per_batch_size
            settings.append(f"num_speculative_tokens_per_batch_size={[list(e) for e in schedule]}")
        lines, first = [f"engine {self.engine}: {' '.join(settings)}"], headline(self)
        if first:
            lines.append(first)
        if self.startup_error:
            lines.insert(0, f"the engine refuses to start with this config: {self.startup_error}")
        lines += [f"WARNING (logged by vLLM): {line}" for line in self.warnings]
        if self.cudagraph_mode is not None:
            graphs = sum(map(len, self.full_sizes_by_query_len.values()))
            count = f"{graphs} at {len(self.full_sizes)} token counts" if self.dynamic else graphs
            lines.append(
                f"cudagraph_mode {self.cudagraph_mode}: FULL uniform-decode graphs "
                f"({count}): {', '.join(map(str, self.full_sizes)) or 'none'}; "
                "capture_sizes below serve the other batches"
            )
        if self.dynamic:
            lines += self._dynamic_lines()
        if self.proposer is None:
            drafter_lines = [] if self.drafter is None else self.drafter.format_lines()
            return "\n".join(lines + self.scorer.format_lines(self.batch_unit) + drafter_lines)
        lines += ["scorer (target model, batch-expansion rows):"] + self.scorer.format_lines(
            self.batch_unit
        )
        lines += ["proposer (draft model: B_s + B_bonus rows, graphs sized by max_num_seqs):"]
        lines += self.proposer.format_lines("rows")
        lines.append(first or "fails first: neither")
        return "\n".join(lines)

    def _dynamic_lines(self) -> list[str]:
        """FULL graphs per query length, and each verify batch's path by requests."""
        lines = [
            f"  at query length {q} ({len(sizes)}): {', '.join(map(str, sizes)) or 'none'}"
            for q, sizes in self.full_sizes_by_query_len.items()
        ]
        lines.append("verify batches by requests (1 + k tokens each, k by batch size):")
        runs: list[list] = []
        for (reqs, q), d in zip(self.verify_shapes, self.outcomes, strict=True):
            if runs and runs[-1][2:] == [q, d.path] and runs[-1][1] == reqs - 1:
                runs[-1][1] = reqs
            else:
                runs.append([reqs, reqs, q, d.path])
        for first, last, q, path in runs:
            span = str(first) if first == last else f"{first}-{last}"
            tokens = str(first * q) if first == last else f"{first * q}-{last * q}"
            lines.append(f"  requests {span:>9}  k={q - 1}  {tokens:>9} tokens  {path}")
        return lines


def _listed(sizes):
    return None if sizes is None else list(sizes)


def headline(report: AuditReport) -> str | None:
    """Which runner fails first and which would fail next, in one line (None without a crash).

    The first decode step of a full batch sends S*(1+k) scorer rows and no widened draft batch yet
    (no bonus tokens), so a scorer crash there comes first (S = 8, k = 4: KeyError: 40); the
    proposer's crash (KeyError: 16 at n = 9..16) needs bonus tokens from a previous step."""
    scorer, proposer = report.scorer, report.proposer
    crashes = proposer is not None and proposer.summary.num_crash
    if not report.scorer.summary.num_crash and not crashes:
        return None
    full = scorer.outcomes[-1] if scorer.outcomes else None
    if full is not None and full.error:
        line = (
            f"fails first: the scorer (target model), {full.error} on the first decode step of a "
            f"full batch ({full.batch_size} {report.batch_unit})"
        )
    elif scorer.summary.num_crash:
        line = (
            f"fails first: the scorer (target model), {scorer.summary.first_crash_error} at "
            f"n = {scorer.summary.first_crash_n} {report.batch_unit}"
        )
    else:
        line = "fails first: the proposer (draft model), once bonus tokens widen its batch"
    if crashes:
        error = proposer.summary.first_crash_error
        span = [d.batch_size for d in proposer.outcomes if d.error == error]
        where = f"n = {span[0]}..{span[-1]}" if span else f"n = {proposer.summary.first_crash_n}"
        line += (
            f"; {'fails next' if line.startswith('fails first: the scorer') else 'with'}: the "
            f"proposer (draft model), {error} at {where} draft rows, once bonus tokens widen "
            f"its batch"
        )
    return line


def fails_first(scorer: AuditSummary, proposer: AuditSummary | None) -> str | None:
    if scorer.num_crash:
        return "scorer"
    return "proposer" if proposer is not None and proposer.num_crash else None


def has_proposer(policy: SizingPolicy, cfg: SizingConfig) -> bool:
    """Whether the engine runs a draft model with its own graphs (V0 engines, k > 0)."""
    return policy.batch_unit is BatchUnit.ROWS and cfg.num_speculative_tokens > 0


def proposer_batch_sizes(max_num_seqs: int) -> np.ndarray:
    """Rows of a V0 draft step: B_s + B_bonus with B_bonus <= B_s <= S, so every n in 1..2S."""
    return np.arange(1, 2 * max_num_seqs + 1, dtype=np.int64)


def _runner_audit(
    policy: SizingPolicy, cfg: SizingConfig, ns: np.ndarray, outcomes: bool, query_lens=None
) -> RunnerAudit:
    batches = policy.dispatch_batches(ns, cfg, query_lens=query_lens)
    return RunnerAudit(
        capture_sizes=policy.capture_sizes(cfg),
        outcomes=batches.outcomes() if outcomes else (),
        summary=summarize(batches),
    )


def proposer_audit(
    policy: SizingPolicy, cfg: SizingConfig, outcomes: bool = True
) -> RunnerAudit | None:
    if not has_proposer(policy, cfg):
        return None
    draft_cfg = replace(cfg, num_speculative_tokens=0)  # the draft runner's graphs ignore k
    return _runner_audit(policy, draft_cfg, proposer_batch_sizes(cfg.max_num_seqs), outcomes)


def audit(policy: SizingPolicy | str, cfg: SizingConfig) -> AuditReport:
    """Every batch size cfg can produce on the engine, with its path (graph / eager / crash).

    GraphlabError above the kit's limits (`SizingConfig.within_limits`) or MAX_AUDIT_BATCH_SIZES
    sizes.
    """
    policy = get_engine(policy)  # a name enters here; a policy passes through
    check_instance("cfg", cfg, SizingConfig)
    ns = reachable_batch_sizes(policy, cfg.within_limits())
    if len(ns) > MAX_AUDIT_BATCH_SIZES:
        raise BadInput(
            f"max_num_seqs={cfg.max_num_seqs}, k={cfg.num_speculative_tokens} reach {len(ns)} "
            f"batch sizes on {policy.name}; audit lists at most {MAX_AUDIT_BATCH_SIZES} "
            "(lower max_num_seqs or num_speculative_tokens)"
        )
    families, requests, query_lens, drafter_report = None, None, None, None
    if policy.batch_unit is BatchUnit.TOKENS:  # vLLM V1
        families = families_for(policy, cfg)
        requests = verify_requests(policy, cfg)
        query_lens = cfg.verify_query_lens(requests)
        drafter_report = drafter_audit(policy, cfg, requests)
    return AuditReport(
        policy=policy,
        config=cfg,
        max_num_batched_tokens=policy.effective_max_num_batched_tokens(cfg),
        startup_error=policy.startup_error(cfg),
        warnings=policy.sizing_warnings(cfg),
        scorer=_runner_audit(policy, cfg, ns, outcomes=True, query_lens=query_lens),
        proposer=proposer_audit(policy, cfg),
        full_sizes=None if families is None else families.full_sizes,
        cudagraph_mode=None if families is None else families.cudagraph_mode,
        full_sizes_by_query_len=None
        if families is None
        else {q: families.full_sizes_at(q) for q in families.full_query_lens},
        verify_shapes=None
        if families is None
        else tuple(zip(requests.tolist(), query_lens.tolist(), strict=True)),
        drafter=drafter_report,
    )


def audit_table(engines, cfg: SizingConfig) -> pd.DataFrame:
    """One row per engine for cfg: its captured sizes, the decode batches it receives (in its
    batch_unit) and their paths, graph fraction and mean padding waste; indexed by engine."""
    rows = []
    for policy in parse_engines(engines):
        report = audit(policy, cfg)
        s, sizes, ns = report.summary, report.capture_sizes, report.outcomes
        rows.append(
            {
                "engine": policy.name,
                "batch_unit": policy.batch_unit,
                "captured sizes": len(sizes),
                "largest": max(sizes, default=None),
                "decode batches": f"{ns[0].batch_size}..{ns[-1].batch_size}",
                "graph": s.num_graph,
                "eager": s.num_eager,
                "crash": s.num_crash,
                "graph fraction": s.graph_fraction,
                "mean padding waste": s.mean_padding_waste,
            }
        )
    return pd.DataFrame(rows).set_index("engine")


def parse_engines(engine) -> list[SizingPolicy]:
    """The policies an `engines` argument names (audit_table's, crash_map's): "all" for the
    table's, one name or policy, or several; where those names enter."""
    if engine == "all":
        return [row.policy for row in ENGINE_TABLE]
    names = [engine] if isinstance(engine, (str, SizingPolicy)) else engine
    return [get_engine(name) for name in names]
