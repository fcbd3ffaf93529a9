"""Engine: the Llama-family model, graph capture and replay, memory, and the V0/V1-shaped runners.

The torch layer. `make_runner` builds the runner an engine needs (V0: graphs keyed by rows,
V1: by tokens). May import `graphlab.sizing` and `graphlab.errors`; nothing above it.
"""

from graphlab.lazy import lazy_exports

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "ModelConfig": "config",
        "PRESETS": "config",
        "build_model": "model",
        "LlamaForCausalLM": "model",
        "load_checkpoint": "checkpoint",
        "save_checkpoint": "checkpoint",
        "capture_graphs": "graphs",
        "resolve_device": "device",
        "resolve_backend": "device",
        "Backend": "device",
        "graph_memory_bytes": "memory",
        "make_runner": "factory",
        "ModelRunner": "v0_runner",
        "V1ModelRunner": "v1_runner",
        "uniform_decode_batch": "v1_runner",
    },
)
