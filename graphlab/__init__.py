"""graphlab: CUDA graphs and speculative decoding in LLM serving, measured on a small Llama.

The names below are the public face; each loads its module on first use (PEP 562), so
`import graphlab` and the sizing half never import torch. The functions named like their
modules are reached through them (Python binds a package attribute to an imported submodule):
`graphlab.audit.audit`, `graphlab.plan.plan`, `graphlab.provenance.provenance`.

    import graphlab
    report = graphlab.audit.audit("vllm-0.5.5", graphlab.SizingConfig(8, 4))
    report.summary.first_crash_error            # 'KeyError: 16'
"""

from __future__ import annotations

import importlib

from graphlab.errors import GraphlabError

__version__ = "0.1.0"

# name -> module that defines it; the sizing half first (no torch), then the engine half.
_EXPORTS = {
    # capture sizing, workloads, coverage, planning (numpy and pandas only)
    "SizingConfig": "sizing", "ENGINES": "sizing", "V0_ENGINES": "sizing", "V1_ENGINES": "sizing",
    "get_engine": "sizing", "pad0": "sizing",
    "reachable_batch_sizes": "workload", "batch_expansion_sizes": "workload",
    "RequestLoad": "workload",
    "AuditReport": "audit", "crash_map": "audit",
    "Plan": "plan", "Budget": "plan",
    # the model, its graphs and the runners (torch)
    "ModelConfig": "model", "PRESETS": "model", "build_model": "model",
    "load_checkpoint": "checkpoint", "save_checkpoint": "checkpoint",
    "capture_graphs": "graphs",
    "ModelRunner": "runner", "V1ModelRunner": "v1_runner",
    # speculative decoding
    "SpecDecodeConfig": "spec_records", "SpecDecodeEngine": "spec_decode",
    "run_speculative": "spec_decode", "build_target": "drafts", "build_draft": "drafts",
    # measurement and export
    "run_bench": "bench",
}

__all__ = ["GraphlabError", "__version__", *_EXPORTS]


def __getattr__(name: str):
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f"graphlab.{_EXPORTS[name]}"), name)
        globals()[name] = value  # later lookups skip this hook
        return value
    try:  # a submodule, e.g. graphlab.bench or graphlab.plots
        return importlib.import_module(f"graphlab.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"graphlab.{name}":
            raise
    raise AttributeError(f"module 'graphlab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
