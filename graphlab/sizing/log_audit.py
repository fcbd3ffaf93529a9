"""A vLLM log's steps beside the kit's own dispatch: does graphlab.sizing predict what vLLM ran?

Each row of the log's CUDAGraph Stats tables (graphlab.sizing.log_reader) is a batch of n tokens
that vLLM ran in a runtime mode at a padded size. The log does not say whether a batch was a
uniform decode (verify) batch, so the kit dispatches it in the family vLLM logged: a FULL row under
a mode with separate FULL decode graphs (FULL_AND_PIECEWISE, FULL_DECODE_ONLY) as a uniform decode
batch, every other row as a mixed batch (graphlab.sizing.families `GraphFamilies.dispatch`). The
graphs are the capture sizes the log names (what the engine captured), else the kit's own sizing.

A PIECEWISE row whose n is a whole number of verify requests (n = m * (1 + k), m <=
max_num_seqs, k > 0) padded below the smallest FULL graph >= n is flagged: if it was a uniform
verify batch, that FULL graph could have served it; the class vLLM PR 53407 fixed (uniform decode
batches in a gap between FULL sizes took the smaller PIECEWISE graph). An eager (NONE) row is
never that class.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from graphlab.errors import BadInput, GraphlabError, check_instance
from graphlab.sizing.config import SPLIT_CAPTURE_SETTINGS, SizingConfig
from graphlab.sizing.dispatch import (
    RUNTIME_MODES,
    STEP_MODES,
    BatchDescriptor,
    BatchPath,
    BatchUnit,
    CUDAGraphMode,
)
from graphlab.sizing.engines import (
    DEFAULT_MAX_NUM_BATCHED_TOKENS,
    ENGINES,
    V1_ENGINES,
    SizingPolicy,
    get_engine,
)
from graphlab.sizing.families import families_for
from graphlab.sizing.log_reader import VllmLog
from graphlab.sizing.versions import DEFAULT_ENGINE
from graphlab.sizing.versions import engine_for_version as release_engine

# The printed table's headings: its rows then fit 100 columns.
TABLE_HEADINGS = {
    "unpadded_tokens": "tokens",
    "padded_tokens": "padded",
    "num_paddings": "paddings",
    "runtime_mode": "mode",
    "kit_padded_tokens": "kit padded",
    "kit_runtime_mode": "kit mode",
    "full_graph_could_serve": "FULL could serve",
}
# SizingConfig's fields a log or the command line can set, and how the command line names them.
FIELDS = (
    "max_num_seqs",
    "num_speculative_tokens",
    "max_num_batched_tokens",
    "cudagraph_capture_sizes",
    "max_cudagraph_capture_size",
    "cudagraph_mode",
)
REQUIRED = ("max_num_seqs", "num_speculative_tokens")


def engine_for_version(version: str | None) -> tuple[str, str | None]:
    """(the kit engine whose rules a log of this vLLM version is audited with, a note saying what
    was assumed, or None where graphlab.sizing.versions maps the release to an engine)."""
    if version is None:
        return (
            DEFAULT_ENGINE,
            f"the log does not name its vLLM version: assumed {DEFAULT_ENGINE}'s rules",
        )
    try:
        return release_engine(version), None
    except GraphlabError as error:
        return DEFAULT_ENGINE, f"{error}; assumed {DEFAULT_ENGINE}'s rules"


def logged_config(log: VllmLog, given: dict) -> tuple[SizingConfig, tuple[str, ...]]:
    """The SizingConfig of the log's deployment: each field from the log, else from `given`
    ({field: (value, "--flag that gave it")}), else the engine's default (with a note saying so).
    GraphlabError naming both values where the log and a flag disagree, and naming the missing
    value where neither gives max_num_seqs or num_speculative_tokens."""
    values, notes = {}, []
    for name in FIELDS:
        logged = getattr(log, name)
        value, where = given.get(name, (None, None))
        if logged is not None and value is not None and _differs(name, logged.value, value):
            raise BadInput(
                f"{name}: the log says {logged.value!r} ({log.source}:{logged.line}), "
                f"{where} says {value!r}"
            )
        values[name] = logged.value if logged is not None else value
    for name in REQUIRED:
        if values[name] is None:
            raise BadInput(
                f"{log.source}: the log does not say {name} (vLLM logs it in `non-default args` "
                f"or its config dump); give --{name.replace('_', '-')} or --vllm-args"
            )
    if not values["cudagraph_capture_sizes"]:  # () in a log where vLLM captured nothing
        values["cudagraph_capture_sizes"] = None
    if values["max_num_batched_tokens"] is None:
        notes.append(
            f"max_num_batched_tokens: not in the log, assumed {DEFAULT_MAX_NUM_BATCHED_TOKENS}"
        )
    if values["cudagraph_mode"] is None:
        notes.append("cudagraph_mode: not in the log, assumed the engine's default")
    if log.capture_sizes is None:
        notes.append("capture sizes: not in the log, the kit's own sizing is used")
    split = {name: given[name][0] for name in SPLIT_CAPTURE_SETTINGS if name in given}
    return SizingConfig(**values, **split).within_limits(), tuple(notes)


def logged_deployment(
    log: VllmLog, given: dict, policy: SizingPolicy | None = None
) -> tuple[SizingPolicy, SizingConfig, tuple[str, ...]]:
    """(policy, config, notes) of the log's deployment: the config of `logged_config`, under
    `policy` or, None, the engine the log's vLLM version maps to (`engine_for_version`), the note
    saying what that assumed first."""
    cfg, notes = logged_config(log, given)
    if policy is None:
        name, note = engine_for_version(log.value("vllm_version"))
        policy, notes = ENGINES[name], (note,) * (note is not None) + notes
    _check_v1(policy)
    return policy, cfg, notes


def logged_release(log: VllmLog, policy: SizingPolicy) -> str:
    """The vLLM release whose rules deploy the log's config on `policy` (model runner, attention
    backend): the log's own version where graphlab.sizing.versions maps it to that engine, else
    the engine's release."""
    version = log.value("vllm_version")
    if version is not None and engine_for_version(version) == (policy.name, None):
        return version
    return getattr(policy, "release", "")


def _check_v1(policy: SizingPolicy) -> None:
    """BadInput unless `policy` is a vLLM V1 engine: --cudagraph-metrics and its table are V1's."""
    if policy.batch_unit is not BatchUnit.TOKENS:
        raise BadInput(
            f"a vLLM log is audited with the vLLM V1 engines {', '.join(V1_ENGINES)}, "
            f"got {policy.name!r}"
        )


def _differs(name: str, logged, value) -> bool:
    if name == "cudagraph_capture_sizes":
        return sorted(logged) != sorted(value)
    return logged != value


@dataclass(frozen=True)
class LogAudit:
    """The log's rows beside the kit's dispatch, with the config and engine it was audited at."""

    log: VllmLog
    policy: SizingPolicy
    cfg: SizingConfig
    rows: pd.DataFrame  # the log's frame plus kit_padded_tokens, kit_runtime_mode, agrees, ...
    capture_sizes_agree: bool  # the logged sizes give the graphs the kit's sizing gives
    kit_capture_sizes: tuple[int, ...]
    notes: tuple[str, ...]

    @property
    def engine(self) -> str:
        return self.policy.name

    def summary(self) -> dict:
        r, n = self.rows, self.rows.unpadded_tokens * self.rows["count"]
        per_mode = {
            mode: {
                "steps": int(r["count"][r.runtime_mode == mode].sum()),
                "tokens": int(n[r.runtime_mode == mode].sum()),
                "padding_tokens": int((r.num_paddings * r["count"])[r.runtime_mode == mode].sum()),
            }
            for mode in RUNTIME_MODES
        }
        return {
            "steps": int(r["count"].sum()),
            "tokens": int(n.sum()),
            "steps_without_graph": per_mode["NONE"]["steps"],
            "tokens_without_graph": per_mode["NONE"]["tokens"],
            "padding_tokens": int((r.num_paddings * r["count"]).sum()),
            "disagreements": int((~r.agrees).sum()),
            "steps_full_graph_could_serve": int(r["count"][r.full_graph_could_serve > 0].sum()),
            "capture_sizes_agree": self.capture_sizes_agree,
            "per_mode": per_mode,
            "per_engine": {
                engine: {
                    "steps": int(rows["count"].sum()),
                    "steps_without_graph": int(
                        rows["count"][rows.runtime_mode == CUDAGraphMode.NONE].sum()
                    ),
                    "padding_tokens": int((rows.num_paddings * rows["count"]).sum()),
                    "disagreements": int((~rows.agrees).sum()),
                }
                for engine, rows in r.groupby("engine", sort=True)
            },
        }

    def assumptions(self) -> list[str]:
        """What the audit assumed because neither the log nor the command line said it."""
        assumed = []
        if self.cfg.cudagraph_mode is None:
            mode = self.policy.cudagraph_mode(self.cfg)
            assumed.append(f"cudagraph_mode ({mode}, the engine's default)")
        if self.log.capture_sizes is None:
            assumed.append(f"the capture sizes ({self.engine}'s own sizing)")
        return assumed

    def to_dict(self) -> dict:
        """Strict JSON values only (no NaN): ints, strings, booleans, None (`audit --json` adds
        `schema` and `command`)."""
        log = self.log
        config = {k: getattr(self.cfg, k) for k in FIELDS}
        config["cudagraph_capture_sizes"] = config["cudagraph_capture_sizes"] and list(
            config["cudagraph_capture_sizes"]
        )
        logged_sizes = log.value("capture_sizes")
        return {
            "source": log.source,
            "vllm_version": log.value("vllm_version"),
            "engine": self.engine,
            "intervals": log.intervals,
            "engines": list(log.engines),
            "config": config,
            "speculative_method": log.value("speculative_method"),
            "logged_capture_sizes": None if logged_sizes is None else list(logged_sizes),
            "kit_capture_sizes": list(self.kit_capture_sizes),
            "graph_capture_seconds": log.value("capture_seconds"),
            "graph_capture_gib": log.value("capture_gib"),
            "notes": list(self.notes),
            "summary": self.summary(),
            "rows": json.loads(self.rows.to_json(orient="records")),
        }

    def format_table(self, top: int | None = None) -> str:
        """The audit as text: a disagreement first (in one line when the audit assumed what the
        log does not say), the summary per mode and per engine, then the rows (with top, each
        engine's `top` most frequent)."""
        s, log = self.summary(), self.log
        version = log.value("vllm_version") or "(version not in the log)"
        lines = []
        bad = self.rows[~self.rows.agrees]
        assumed = self.assumptions()
        disagree = not bad.empty or not self.capture_sizes_agree
        if disagree and assumed:
            what = f"{len(bad)} of {len(self.rows)} rows" + (
                "" if self.capture_sizes_agree else " and the capture sizes"
            )
            lines.append(
                f"{what} differ from the kit's dispatch, which assumed what the log does not "
                f"say: {'; '.join(assumed)}; give them (flags or --vllm-args) to audit the rows "
                "(listed below)"
            )
        elif disagree:
            lines.append(
                f"DISAGREEMENT between vLLM's log and graphlab's {self.engine} rules (a kit bug, "
                f"or a vLLM version the kit does not model; log: vLLM {version}, assumed "
                f"{self.engine}):"
            )
            lines += self._disagreements(bad)
        cfg = self.cfg
        tokens = self.policy.effective_max_num_batched_tokens(cfg)
        lines += [
            f"vLLM {version} log {log.source}: {log.intervals} stats intervals, engines "
            f"{', '.join(log.engines)}; audited with {self.engine} at max_num_seqs="
            f"{cfg.max_num_seqs} num_speculative_tokens={cfg.num_speculative_tokens} "
            f"max_num_batched_tokens={tokens} "
            f"cudagraph_mode={cfg.cudagraph_mode}",
            f"steps {s['steps']} ({s['tokens']} tokens); without a graph: "
            f"{s['steps_without_graph']} steps ({s['tokens_without_graph']} tokens); padding "
            f"tokens spent: {s['padding_tokens']}",
        ]
        for mode, m in s["per_mode"].items():
            lines.append(
                f"  {mode:<9} {m['steps']:>8} steps {m['tokens']:>10} tokens "
                f"{m['padding_tokens']:>8} padding tokens"
            )
        if len(s["per_engine"]) > 1:
            lines += [
                f"  engine {engine}: {e['steps']} steps, {e['steps_without_graph']} without a "
                f"graph, {e['padding_tokens']} padding tokens, {e['disagreements']} rows disagree"
                for engine, e in s["per_engine"].items()
            ]
        if log.capture_seconds is not None:
            lines.append(
                f"graph capture: {log.value('capture_seconds'):g} s, "
                f"{log.value('capture_gib'):g} GiB (vLLM's start-up line)"
            )
        lost = self.rows[self.rows.full_graph_could_serve > 0]
        if not lost.empty:
            lines.append(
                f"{s['steps_full_graph_could_serve']} steps ran on a smaller PIECEWISE graph "
                "although, as uniform verify batches, a FULL graph could have served them (PR "
                "53407's class):"
            )
            lines += [
                f"  {r.unpadded_tokens} tokens ran {r.runtime_mode} at {r.padded_tokens} "
                f"({r.count} steps): FULL graph {r.full_graph_could_serve}"
                for r in lost.head(top or len(lost)).itertuples()
            ]
        if disagree and assumed:
            lines.append("what differs under those assumptions:")
            lines += self._disagreements(bad.head(top or len(bad)))
        rows = self.rows if top is None else self.rows.groupby("engine", sort=False).head(top)
        table = rows.drop(columns="engine") if len(log.engines) == 1 else rows
        shown = "" if len(rows) == len(self.rows) else f" (the {top} most frequent per engine)"
        # Short headings keep the table within 100 columns (to_dict and the JSON keep
        # the column names); a sentence may wrap, a table row must not.
        table = table.rename(columns=TABLE_HEADINGS).to_string(index=False)
        lines += ["", f"{len(rows)} of {len(self.rows)} rows{shown}:", table]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _disagreements(self, bad: pd.DataFrame) -> list[str]:
        lines = []
        if not self.capture_sizes_agree:
            lines.append(
                f"  capture sizes: vLLM logged {list(self.log.value('capture_sizes'))}, the kit "
                f"computes {list(self.kit_capture_sizes)}"
            )
        return lines + [
            f"  engine {row.engine}: {row.unpadded_tokens} tokens ran {row.runtime_mode} "
            f"at {row.padded_tokens} ({row.count} steps); kit: {row.kit_runtime_mode} at "
            f"{row.kit_padded_tokens}"
            for row in bad.itertuples()
        ]


def audit_log(log: VllmLog, given: dict | None = None, engine: str | None = None) -> LogAudit:
    """The log's rows beside the kit's dispatch for its config (see `logged_config`), under
    `engine` or the one its vLLM version maps to (`engine_for_version`)."""
    policy, cfg, notes = logged_deployment(
        log, given or {}, None if engine is None else get_engine(engine)
    )
    return audit_deployment(log, policy, cfg, notes)


def audit_deployment(
    log: VllmLog, policy: SizingPolicy, cfg: SizingConfig, notes: tuple[str, ...] = ()
) -> LogAudit:
    """The log's rows beside the kit's dispatch for a deployment already resolved
    (`logged_deployment`, then the model runner and attention backend it runs on)."""
    check_instance("policy", policy, SizingPolicy)
    check_instance("cfg", cfg, SizingConfig)
    _check_v1(policy)
    if len(log.engines) > 1 or "aggregated" in log.engines:
        notes += (
            "data parallel: vLLM pads each rank's step to the largest rank's token count "
            "(num_tokens_across_dp, vllm/v1/worker/gpu_model_runner.py), which the kit does not "
            "model; such rows may disagree",
        )
    error = policy.startup_error(cfg)
    if error:
        raise BadInput(f"{policy.name} refuses the log's config: {error}")
    logged = log.value("capture_sizes")
    default = families_for(policy, cfg)
    families = default if logged is None else families_for(policy, cfg, logged)
    q = cfg.decode_query_len
    frame = log.frame()
    kit_sizes, kit_modes, could = [], [], []
    for row in frame.itertuples():
        n = row.unpadded_tokens
        uniform = row.runtime_mode == CUDAGraphMode.FULL and bool(families.full_sizes)
        kit = families.dispatch(BatchDescriptor(n, uniform=uniform))
        kit_sizes.append(kit.graph_size or n)
        kit_modes.append(STEP_MODES.get(kit.path, "CRASH"))
        verify = q > 1 and n % q == 0 and n // q <= cfg.max_num_seqs
        full = families.dispatch(BatchDescriptor(n))
        # PR 53407's class: a smaller PIECEWISE graph in a gap below the FULL one (never NONE)
        lost = (
            verify
            and row.runtime_mode == CUDAGraphMode.PIECEWISE
            and full.path is BatchPath.FULL
            and row.padded_tokens < full.graph_size
        )
        could.append(full.graph_size if lost else 0)
    frame["kit_padded_tokens"] = kit_sizes
    frame["kit_runtime_mode"] = kit_modes
    frame["agrees"] = (frame.kit_padded_tokens == frame.padded_tokens) & (
        frame.kit_runtime_mode == frame.runtime_mode
    )
    frame["full_graph_could_serve"] = could  # 0: none, or not a whole number of verify requests
    return LogAudit(
        log=log,
        policy=policy,
        cfg=cfg,
        rows=frame,
        capture_sizes_agree=families == default,
        kit_capture_sizes=policy.capture_sizes(cfg) if default.limit else (),
        notes=notes,
    )
