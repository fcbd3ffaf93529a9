"""The files the stat logger (graphlab.against_vllm.stat_logger) writes for one engine index: the
steps it recorded as a vLLM log, their rows as a CSV, the kit's audit of them, and the capture
sizes planned for that traffic with the compilation config to set (`plan --vllm-log`'s JSON).

`vllm.log` holds lines vLLM itself writes: core.py's `Initializing a V1 LLM engine (vX) with
config: ...` (`VllmConfig.__str__`: model, speculative config, compilation config with the mode
and the capture sizes the engine resolved), scheduler.py's `Chunked prefill is enabled with
max_num_batched_tokens=N`, and `CUDAGraphLogging`'s table (vllm/compilation/cuda_graph.py) of
every step so far. vLLM's config dump omits max_num_seqs, so a `non-default args` line (the form
the kit's reader takes it from) carries the engine's resolved value. `graphlab audit --vllm-log`
and `graphlab plan --vllm-log` read the file as they read a server's log.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import fields
from pathlib import Path

from graphlab.errors import GraphlabError
from graphlab.sizing.log_audit import audit_log, logged_deployment
from graphlab.sizing.log_reader import GraphStep, read_vllm_log
from graphlab.sizing.planner.log_plan import log_plan_report

NO_STATS = (
    "no CUDAGraph stats recorded yet: vLLM reports them per step only when started with "
    "--cudagraph-metrics (ObservabilityConfig.cudagraph_metrics, v0.13.0 on)"
)
_log = logging.getLogger(__name__)


def log_text(vllm_config, engine_index: int, steps) -> str:
    """vllm.log's text for steps ({(unpadded, padded, paddings, runtime mode): count})."""
    import vllm
    from vllm.compilation.cuda_graph import CUDAGraphLogging, CUDAGraphStat

    compilation, scheduler = vllm_config.compilation_config, vllm_config.scheduler_config
    table = CUDAGraphLogging(compilation.cudagraph_mode, compilation.cudagraph_capture_sizes)
    # generate_metric_table counts `table.stats` with Counter(): a Counter of stats counts as is.
    table.stats = {CUDAGraphStat(*key): count for key, count in steps.items()}
    lines = [
        f"Initializing a V1 LLM engine (v{vllm.__version__}) with config: {vllm_config}",
        f"Chunked prefill is enabled with max_num_batched_tokens="
        f"{scheduler.max_num_batched_tokens}.",
        f"non-default args: {{'max_num_seqs': {scheduler.max_num_seqs}}}",
        f"Engine {engine_index:03d}: {sum(steps.values())} steps recorded by graphlab",
    ]
    return "\n".join(lines) + "\n" + table.generate_metric_table() + "\n"


def write_step_record(folder: Path, vllm_config, engine_index: int, steps) -> None:
    """folder's vllm.log, steps.csv, audit.txt, audit.json and plan.json for steps (each replaced
    whole). Never raises: a failure is logged as a warning and the server goes on."""
    try:
        log_path = folder / "vllm.log"
        _replace(log_path, log_text(vllm_config, engine_index, steps))
        if not steps:
            _replace(folder / "steps.csv", ",".join(f.name for f in fields(GraphStep)) + "\n")
            _replace(folder / "audit.txt", NO_STATS + "\n")
            return
        log = read_vllm_log(log_path)
        _replace(folder / "steps.csv", log.frame().to_csv(index=False))
        report = audit_log(log)
        _replace(folder / "audit.txt", report.format_table() + "\n")
        _replace(folder / "audit.json", json.dumps(report.to_dict(), indent=1) + "\n")
        _replace(folder / "plan.json", json.dumps(recorded_plan(log), indent=1) + "\n")
    except (GraphlabError, OSError, ValueError) as error:
        _log.warning("graphlab stat logger: cannot write %s: %s", folder, error)


def recorded_plan(log) -> dict:
    """`plan --vllm-log`'s report of the recorded log, or why there is none (a deployment that
    captured no graph, as vLLM on a CPU)."""
    policy, cfg, notes = logged_deployment(log, {})
    try:
        return log_plan_report(log, policy, cfg, notes)[1]
    except GraphlabError as error:
        return {"source": log.source, "error": str(error)}


def _replace(path: Path, text: str) -> None:
    """path holds text, or what it held before (a temporary file renamed over it)."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)
