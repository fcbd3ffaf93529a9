"""Engine: the Llama-family model, graph capture and replay, memory, and the V0/V1-shaped runners.

The torch layer. `make_runner` builds the runner an engine needs (V0: graphs keyed by rows,
V1: by tokens). May import `graphlab.sizing` and `graphlab.errors`; nothing above it.
"""
