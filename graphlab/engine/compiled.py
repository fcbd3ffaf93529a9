"""The compiled backends: a captured size runs a torch.compile'd decoder step.

``cpu-compiled``: each captured size runs a torch.compile'd step: on a CPU this removes per-op
dispatch overhead the way a CUDA graph removes launch overhead on a GPU; it is not a CUDA graph.
Capturing a size runs the compiled step once on the static buffers (the first size of a model
config pays the compile); replay fills the buffers as for a graph and calls it.
``compiled-cuda-graph`` (CUDA only) compiles the same step and then captures a real CUDA graph of
it, the route of vLLM V1 (torch.compile, then CUDA graphs of the compiled code;
vllm/compilation/) and of gpt-fast's ``mode="reduce-overhead"``.

One dynamic-shape compile serves every size (``dynamic=True``), batch 1 included, not one compile
per size, and every model of one config in the process, whatever its KV cache (measured on the tiny
preset, cold cache: the first model 30.5 s, a second model object 7.6 s when each had its own
compile, 0 s shared), and every query length: V0's decode (1 token a row) and V1's verify (1 + k)
share one graph. The rows and the query length are unbacked (``mark_unbacked``): dynamo specialises
a backed size of 1, which compiled batch 1 a second time for every model config, and query length 1
apart from the rest (the attention's decode-only view stays for eager steps,
`LlamaAttention.attend`). Measured with bench.timings' compiled figure on the tiny preset, one
torch thread, a 2-core VM shared with other jobs (torch 2.13): per-size compiles took 31 s for the
first size of a process (inductor's start-up included) and 4-6 s for each further size with a cold
inductor cache, 3 s then 0.2 s each with a warm one; the dynamic compile took 16 s, and batch 1's
own compile 4.5 s more before its dimension was unbacked. The V1 runner of the quick suite captures
64 sizes, about 5 minutes of per-size compiles cold, past the 90 s a notebook may take on the
2-core CI machine; the dynamic compile fits. Warm steps are as fast either way (eager / compiled
about 2.3x at batch 1, 1.7-2x at batch 8).

Replay runs under ``torch.compiler.set_stance("fail_on_recompile")``: a step that would compile
again raises instead of silently running something other than what was captured. Where inductor
cannot build (no C++ compiler on PATH), ``graphlab.engine.device.resolve_backend`` says so in one
line and the run falls back to ``cpu-emulated``, labelled as such.
"""

from __future__ import annotations

import functools
import time
from pathlib import Path

import torch

from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import GraphlabError

# Model configs (target, draft, test configs) a process may compile; past dynamo's default of 8
# per code object a fullgraph compile raises.
RECOMPILE_LIMIT = 64


def inductor_cache_state() -> str:
    """'warm' when inductor's on-disk FX graph cache holds entries, else 'cold'."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    fxgraph = Path(cache_dir()) / "fxgraph"
    return "warm" if fxgraph.is_dir() and any(fxgraph.iterdir()) else "cold"


def first_compile() -> float:
    """Seconds to compile and run a one-kernel function on the CPU with inductor: a check that
    cpu-compiled builds here, which on a new machine (or cache) also pays inductor's one-time
    set-up, kept on disk for every later compile: probing the CPU's vector ISAs (a test build and
    load each) and building the kernels' precompiled header. GraphlabError if the build fails."""
    start = time.perf_counter()
    try:
        torch.compile(lambda x: x.sin() * x.sum(), fullgraph=True)(torch.ones(8))
    except Exception as error:  # noqa: BLE001 - any failure to build means no compiled backend
        cause = getattr(error, "inner_exception", error)  # dynamo's wrapper names only the backend
        # Inductor's build errors run to pages (the command, the compiler's output): the first line.
        reason = f"{type(cause).__name__}: {(str(cause).strip().splitlines() or [''])[0]}"
        raise GraphlabError(f"torch.compile failed on this CPU ({reason})") from error
    return time.perf_counter() - start


def _rows(input_ids, positions, seq_slots, rows: int):
    """The first `rows` rows of each buffer, the rows and the query length unbacked (one symbol
    each for every tensor holding it): a backed size of 1 would be specialised, compiling batch
    1 and query length 1 (V0's decode) apart from the rest. Marks the given buffers too (their
    query length): another compile of them traces it unbacked as well."""
    mark = torch._dynamo.decorators.mark_unbacked
    # On the buffers too: the views keep them as their base, and dynamo guards the base's sizes.
    for tokens in (input_ids, positions):
        mark(tokens, 1, min=1, shape_id="query_len")
    views = input_ids[:rows], positions[:rows], seq_slots[:rows]
    for view in views:
        mark(view, 0, min=1, shape_id="rows")
    for view in views[:2]:
        mark(view, 1, min=1, shape_id="query_len")
    return views


@functools.cache
def _compiled():
    """One compiled function for every model: dynamo guards on the model's shapes, not on which
    model it is, so models of one config share a compile (a trace takes seconds per model)."""
    return torch.compile(LlamaForCausalLM.hidden_states, dynamic=True, fullgraph=True)


def _cache_dims_dynamic(model) -> None:
    # Module tensors are traced with static shapes by default; the cache's slots and length
    # change with a model's allocation, not its code.
    for k, v in model.kv_cache():
        for cache in (k, v):
            torch._dynamo.maybe_mark_dynamic(cache, 0)
            torch._dynamo.maybe_mark_dynamic(cache, 2)
    torch._dynamo.maybe_mark_dynamic(model.key_positions, 0)
    torch._dynamo.maybe_mark_dynamic(model.rope_cache, 0)


class CompiledStep:
    """model.hidden_states compiled, dynamic in rows and query length (one per model: its
    runners share it)."""

    def __init__(self, model):
        self.model = model
        self.cache_state = inductor_cache_state()  # before this model's first compile

    def compile(self, input_ids, positions, seq_slots, rows: int) -> torch.Tensor:
        """Hidden states of the first `rows` rows of the static buffers; may compile (capture)."""
        _cache_dims_dynamic(self.model)
        # specialize_float: dynamic=True would trace RMSNorm's eps as a symbolic float, and
        # inductor then restarts the whole trace to make it a tensor (~2.5 s per compile, cold).
        with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT, specialize_float=True):
            return _compiled()(self.model, *_rows(input_ids, positions, seq_slots, rows))

    def __call__(self, input_ids, positions, seq_slots, rows: int) -> torch.Tensor:
        """The same, for a row count already compiled (replay): raises rather than recompiling."""
        with torch.compiler.set_stance("fail_on_recompile"):
            return _compiled()(self.model, *_rows(input_ids, positions, seq_slots, rows))


def compiled_step(model) -> CompiledStep:
    """The model's compiled step, made on first use (per model: its runners share the compile)."""
    step = model.__dict__.get("_graphlab_compiled_step")
    if step is None:
        step = model.__dict__["_graphlab_compiled_step"] = CompiledStep(model)
    return step
