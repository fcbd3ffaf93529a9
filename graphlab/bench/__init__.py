"""Bench: sweeps that measure latency, graph memory and speculative decoding, with provenance and
CSV export.

`run_bench(suite, device, out)` runs every sweep of a suite and writes one CSV each; a sweep alone
(`latency_sweep("quick", device="cpu")`) returns its tidy DataFrame. May import every layer below
it (engine, specdec, sizing); `provenance` and `export` stay torch-free for the crash map.
"""
