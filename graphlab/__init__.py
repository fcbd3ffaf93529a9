"""graphlab: CUDA graphs and speculative decoding in LLM serving, measured on a small Llama.

The layers are the subpackages, each importing only from those listed before it:

    errors, progress   bad input, unreadable files, what the machine lacks as errors; progress bars
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

from typing import TYPE_CHECKING

from graphlab.checkout import VERSION as __version__
from graphlab.errors import GraphlabError
from graphlab.lazy import lazy_exports

# The reader-facing names (the README's examples): name -> the module that defines it, the sizing
# layer first (no torch). Everything else is imported from its module, e.g.
# `from graphlab.sizing.dispatch import verify_batches`.
_EXPORTS = {
    "SizingConfig": "sizing.config",
    "audit": "sizing.audit",
    "crash_map": "sizing.crash_maps",
    "plan": "sizing.planner.plan",
    "Budget": "sizing.planner.optimum",
    "build_model": "engine.model",
    "make_runner": "engine.factory",
    "V0ModelRunner": "engine.v0_runner",
    "V1ModelRunner": "engine.v1_runner",
    "RequestLoad": "specdec.requests",
    "SpecDecodeConfig": "specdec.records",
    "run_speculative": "specdec.engine",
    "run_bench": "bench.sweeps",
}

if TYPE_CHECKING:  # what an IDE or type checker sees; at run time each loads on first use
    from graphlab.bench.sweeps import run_bench as run_bench
    from graphlab.engine.factory import make_runner as make_runner
    from graphlab.engine.model import build_model as build_model
    from graphlab.engine.v0_runner import V0ModelRunner as V0ModelRunner
    from graphlab.engine.v1_runner import V1ModelRunner as V1ModelRunner
    from graphlab.sizing.audit import audit as audit
    from graphlab.sizing.config import SizingConfig as SizingConfig
    from graphlab.sizing.crash_maps import crash_map as crash_map
    from graphlab.sizing.planner.optimum import Budget as Budget
    from graphlab.sizing.planner.plan import plan as plan
    from graphlab.specdec.engine import run_speculative as run_speculative
    from graphlab.specdec.records import SpecDecodeConfig as SpecDecodeConfig
    from graphlab.specdec.requests import RequestLoad as RequestLoad

__all__ = ["GraphlabError", "__version__", *_EXPORTS]
__getattr__, _ = lazy_exports(__name__, _EXPORTS)


def __dir__() -> list[str]:
    return sorted(__all__)
