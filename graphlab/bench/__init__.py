"""Bench: sweeps that measure latency, graph memory and speculative decoding, with provenance and
CSV export.

`run_bench(suite, device, out)` runs every sweep of a suite and writes one CSV each; a sweep alone
(`latency_sweep("quick", device="cpu")`) returns its tidy DataFrame. May import every layer below
it (engine, specdec, sizing); `provenance` and `export` stay torch-free for the crash map.
"""

from graphlab.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "run_bench": "sweeps",
        "bench_run": "sweeps",
        "latency_sweep": "sweeps",
        "graph_memory_sweep": "sweeps",
        "spec_decode_sweep": "sweeps",
        "spec_decode_steps_sweep": "sweeps",
        "crash_map_sweep": "sweeps",
        "copy_bandwidth_sweep": "sweeps",
        "latency_rows": "measurements",
        "graph_memory_rows": "measurements",
        "capture_cost": "measurements",
        "SWEEPS": "sweeps",
        "LATENCY_ENGINE": "sweeps",
        "summary": "sweeps",
        "export_csvs": "export",
        "SUITES": "suites",
        "Suite": "suites",
        "get_suite": "suites",
        "replace_suite": "suites",
        "spec_decode_benchmark": "spec_decode",
    },
)
