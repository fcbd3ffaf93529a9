"""graphlab: CUDA graphs and speculative decoding in LLM serving, measured on a small Llama.

The layers are the subpackages, each importing only from those listed before it:

    errors, progress   one error type, progress bars
    sizing/            torch-free: engine capture rules, reachable batches, V1 dispatch, audit, plan
    engine/            torch: model, capture/replay, memory, device, the V0- and V1-shaped runners
    specdec/           speculative decoding: requests, drafts, proposer, scorers, rejection sampler
    bench/             sweeps, suites, provenance, CSV export
    against_vllm/      the installed vLLM's sizing, `vllm serve` arguments, the cross-check
    views/             figures and widgets (read sizing and frames only)
    cli                `python -m graphlab`

The names below are the public face; each loads its module on first use (PEP 562), so
`import graphlab` and the sizing layer never import torch.

    import graphlab
    report = graphlab.audit("vllm-0.5.5", graphlab.SizingConfig(8, 4))
    report.summary.first_crash_error            # 'KeyError: 16'
"""

from __future__ import annotations

import os
import signal
import sys


def _quiet_interrupt(signum, frame):
    # At once: an exception raised inside a C extension's import would surface as an ImportError.
    sys.stderr.write("interrupted\n")
    os._exit(130)


# `python -m graphlab` while Python still locates the module (argv[0] is "-m" until then): Ctrl-C
# while the command line loads exits 130 without a traceback, nothing being written yet;
# graphlab.__main__ hands SIGINT back to the command line, which reports it itself.
if sys.argv[:1] == ["-m"]:
    signal.signal(signal.SIGINT, _quiet_interrupt)

from graphlab.errors import GraphlabError  # noqa: E402 (after the Ctrl-C handler, on purpose)
from graphlab.lazy import lazy_exports  # noqa: E402 (after the Ctrl-C handler, on purpose)

__version__ = "0.1.0"

# name -> module that defines it; the sizing layer first (no torch), then the engine and above.
_EXPORTS = {
    "SizingConfig": "sizing.config",
    "ENGINES": "sizing.engines",
    "V0_ENGINES": "sizing.engines",
    "V1_ENGINES": "sizing.engines",
    "get_engine": "sizing.engines",
    "pad0": "sizing.engines",
    "reachable_batch_sizes": "sizing.batches",
    "batch_expansion_sizes": "sizing.batches",
    "verify_batches": "sizing.dispatch",
    "audit": "sizing.audit",
    "AuditReport": "sizing.audit",
    "crash_map": "sizing.crash_maps",
    "audit_table": "sizing.audit",
    "decode_graph_sizes": "sizing.dispatch",
    "plan": "sizing.plan",
    "Plan": "sizing.plan_result",
    "Budget": "sizing.optimum",
    "ModelConfig": "engine.config",
    "PRESETS": "engine.config",
    "build_model": "engine.model",
    "load_checkpoint": "engine.checkpoint",
    "save_checkpoint": "engine.checkpoint",
    "capture_graphs": "engine.graphs",
    "make_runner": "engine.factory",
    "resolve_device": "engine.device",
    "resolve_backend": "engine.device",
    "pin_threads": "engine.device",
    "graph_memory_bytes": "engine.memory",
    "uniform_decode_batch": "engine.v1_runner",
    "ModelRunner": "engine.v0_runner",
    "V1ModelRunner": "engine.v1_runner",
    "RequestLoad": "specdec.requests",
    "SpecDecodeConfig": "specdec.records",
    "SpecDecodeEngine": "specdec.engine",
    "run_speculative": "specdec.engine",
    "build_target": "specdec.drafts",
    "build_draft": "specdec.drafts",
    "run_bench": "bench.sweeps",
    "latency_rows": "bench.measurements",
    "capture_cost": "bench.measurements",
    "guard_cost": "bench.costs",
    "eager_ratio": "bench.costs",
    "guard_run_cost": "bench.costs",
    "guard_report": "bench.costs",
    "reference_ratio": "bench.costs",
    "mode_lines": "bench.costs",
    "mode_summary": "bench.costs",
    "throughput_lines": "bench.costs",
    "piecewise_cost": "bench.costs",
    "priced_sizing": "bench.costs",
    "capped_cost": "bench.costs",
    "compare": "bench.stats",
    "verdict": "bench.stats",
    "machine_load": "bench.stats",
    "load_warning": "bench.stats",
    "adaptive_price": "bench.costs",
    "provenance": "bench.provenance",
    "describe": "bench.provenance",
    "with_provenance": "bench.provenance",
    "package_version": "bench.provenance",
}

__all__ = ["GraphlabError", "__version__", *_EXPORTS]
__getattr__, _ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
