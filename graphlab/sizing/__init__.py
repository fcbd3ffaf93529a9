"""Sizing: which batches each engine captures as graphs, and what a batch of n does (torch-free).

The dispatch contract every engine answers (`dispatch`: a batch in, its path and padded size
out), the sizing config (`config`) and vLLM V1's reading of its capture settings
(`capture_settings`), the engines' capture rules side by side (`policy`, `engines`, `peers`),
which engine a vLLM release is (`versions`), the batch sizes a config reaches (`batches`), vLLM
V1's graph families and their rule values per release (`families`), the audit (`audit`), a vLLM
`--cudagraph-metrics` log read (`log_reader`) and audited against the kit's dispatch (`log_audit`),
the crash map (`crash_maps`), the command line's limits (`limits`) and the capture-size planner
(the `planner` subpackage). May import numpy, pandas, `graphlab.errors` and `graphlab.progress`
only: never torch, never another graphlab layer.
"""
