"""Sizing: which batches each engine captures as graphs, and what a batch of n does (torch-free).

The sizing config (`config`) and vLLM V1's reading of its capture settings (`capture_settings`),
the engines' capture rules side by side (`engines`) and what a batch does on them (`outcomes`),
which engine a vLLM release is (`versions`), the batch sizes a config reaches (`batches`), vLLM
V1's graph families (`families`, by engine name: `dispatch`), the audit (`audit`), a vLLM
`--cudagraph-metrics` log read (`vllm_log`) and audited against the kit's dispatch (`log_audit`),
the crash map (`crash_maps`), the command line's limits (`limits`) and the capture-size planner
with its CSV inputs and result (`plan`, `plan_inputs`, `plan_result`). May import numpy, pandas,
`graphlab.errors` and `graphlab.progress` only: never torch, never another graphlab layer.
"""

from graphlab.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SizingConfig": "config",
        "SizingPolicy": "engines",
        "ENGINES": "engines",
        "V0_ENGINES": "engines",
        "V1_ENGINES": "engines",
        "get_engine": "engines",
        "pad0": "engines",
        "reachable_batch_sizes": "batches",
        "batch_expansion_sizes": "batches",
        "decode_graph_sizes": "dispatch",
        "verify_batches": "dispatch",
        "AuditReport": "audit",
        "crash_map": "crash_maps",
        "audit_table": "audit",
        "Plan": "plan_result",
        "Budget": "optimum",
        "read_vllm_log": "vllm_log",
        "audit_log": "log_audit",
    },
)
