"""Speculative decoding: request loads, drafts, the proposer, scorers and the rejection sampler.

`run_speculative(SpecDecodeConfig(...))` runs a target and a draft through the engine layer's
runners, step by step, as vLLM's spec-decode worker did. May import `graphlab.engine`,
`graphlab.sizing` and `graphlab.errors`.
"""
