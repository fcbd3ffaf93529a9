"""graphlab inside a vLLM server: a stat logger that records every step's CUDA graph stat and
audits that traffic with the kit's log audit.

vLLM loads the `vllm.stat_logger_plugins` entry point group (vllm/plugins/__init__.py) in
`AsyncLLM.__init__` (vllm/v1/engine/async_llm.py, 0.32; `vllm serve` builds one) and makes one
logger per engine index (`PerEngineStatLoggerAdapter`, vllm/v1/metrics/loggers.py) from the
engine's real VllmConfig. Each step's `SchedulerStats.cudagraph_stats` (a `CUDAGraphStat`:
unpadded and padded tokens, runtime mode) is set only under `--cudagraph-metrics`
(`ObservabilityConfig.cudagraph_metrics`, gpu_model_runner.py).

Opt-in: GRAPHLAB_VLLM_STEPS names an output folder. Unset, the logger keeps nothing, writes
nothing and imports nothing of graphlab beyond this module and the package's top level (record()
returns at once). Set, per
engine index it writes DIR/engine_000/ (every GRAPHLAB_VLLM_STEPS_INTERVAL seconds, default 60,
and at exit): `vllm.log` (the engine's config as vLLM logs it, then one CUDAGraph Stats table of
every step so far: what `graphlab audit|plan --vllm-log` read), `steps.csv` (its rows),
`audit.txt` / `audit.json` (the kit's audit of those steps) and `plan.json` (the plan for them).
"""

from __future__ import annotations

import atexit
import os
import time
from collections import Counter
from pathlib import Path

from vllm.v1.metrics.loggers import StatLoggerBase

FOLDER_ENV = "GRAPHLAB_VLLM_STEPS"
INTERVAL_ENV = "GRAPHLAB_VLLM_STEPS_INTERVAL"
DEFAULT_INTERVAL_S = 60.0


class GraphStepLogger(StatLoggerBase):
    """Counts each step's (unpadded, padded, paddings, runtime mode) for one engine index."""

    def __init__(self, vllm_config, engine_index: int = 0):
        self.vllm_config, self.engine_index = vllm_config, engine_index
        folder = os.environ.get(FOLDER_ENV)
        self.folder = Path(folder) / f"engine_{engine_index:03d}" if folder else None
        if self.folder is None:
            return
        self.interval_s = float(os.environ.get(INTERVAL_ENV) or DEFAULT_INTERVAL_S)
        self.steps: Counter = Counter()
        self.next_write = time.monotonic() + self.interval_s
        self.folder.mkdir(parents=True, exist_ok=True)
        atexit.register(self.write)

    def record(self, scheduler_stats, iteration_stats, mm_cache_stats=None, engine_idx=0):
        if self.folder is None or scheduler_stats is None:
            return
        stat = scheduler_stats.cudagraph_stats
        if stat is not None:
            key = (stat.num_unpadded_tokens, stat.num_padded_tokens, stat.num_paddings)
            self.steps[(*key, str(stat.runtime_mode))] += 1
        if time.monotonic() >= self.next_write:
            self.write()

    def log_engine_initialized(self):
        if self.folder is not None:
            self.write()

    def write(self) -> None:
        """The folder's files for every step so far (each replaced whole)."""
        from graphlab.against_vllm.step_record import write_step_record

        self.next_write = time.monotonic() + self.interval_s
        write_step_record(self.folder, self.vllm_config, self.engine_index, self.steps)
