"""The compiled backends: a captured size runs a torch.compile'd decoder step.

``cpu-compiled``: each captured size runs a torch.compile'd step: on a CPU this removes per-op
dispatch overhead the way a CUDA graph removes launch overhead on a GPU; it is not a CUDA graph.
Capturing a size runs the compiled step once on the static buffers (the first size of a model
config pays the compile); replay fills the buffers as for a graph and calls it.
``compiled-cuda-graph`` (CUDA only) compiles the same step and then captures a real CUDA graph of
it, the route of vLLM V1 (torch.compile, then CUDA graphs of the compiled code;
vllm/compilation/) and of gpt-fast's ``mode="reduce-overhead"``.

One dynamic-shape compile serves every row count and query length (V0's decode rows and V1's
verify requests) and every model of one config in the process, because per-size compiles would
cost minutes per capture list: rows and query length are traced unbacked
(``mark_unbacked(..., min=1)``), so a size of 1 gets no compile of its own; a torch without that
``min`` traces them backed, and the few sizes its guards split off compile apart, at capture.
Capture also keeps what dynamo handed inductor's compiled graph for that size (the weights, the
KV cache, views of the static buffers, the size itself), and replay calls that graph on exactly
those inputs, as a CUDA graph replays its recorded kernels on its recorded addresses: no guards,
no frame evaluation, no marks (vLLM 0.32's compile wrapper likewise drops dynamo's guards and
runs its compiled code directly once built: vllm/compilation/wrapper.py,
``TorchCompileWithNoGuardsWrapper``).
Like a CUDA graph, a replay then sees weights changed in place but not tensors replaced; the KV
cache's reallocation is refused as for a graph (``graphs.check_kv_cache_version``). Where inductor
cannot build, ``graphlab.engine.device.resolve_backend`` says so and the run falls back to
``cpu-emulated``.
The measurements behind these choices: docs/compiled_backend.md.
"""

from __future__ import annotations

import functools
import inspect
import time
from pathlib import Path

import torch

from graphlab.engine.model import LlamaForCausalLM
from graphlab.errors import GraphlabError, Unavailable

# Model configs (target, draft, test configs) a process may compile; past dynamo's default of 8
# per code object a fullgraph compile raises.
RECOMPILE_LIMIT = 64
# Unbacked rows and query length need mark_unbacked's min=1 (see the module docstring).
UNBACKED = "min" in inspect.signature(torch._dynamo.decorators.mark_unbacked).parameters

# Inductor's per-call checks of tensor shapes, strides and alignment (see _Inductor); the
# alignment check is younger than the size check, so each is turned off where this torch has it.
NO_RUNTIME_ASSERTS = {
    name: False
    for name in ("size_asserts", "alignment_asserts")
    if hasattr(torch._inductor.config, name)
}


def inductor_cache_state() -> str:
    """'warm' when inductor's on-disk FX graph cache holds entries, else 'cold'."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    fxgraph = Path(cache_dir()) / "fxgraph"
    return "warm" if fxgraph.is_dir() and any(fxgraph.iterdir()) else "cold"


def first_compile() -> float:
    """Seconds to compile and run a one-kernel function on the CPU with inductor: a check that
    cpu-compiled builds here, which on a new machine (or cache) also pays inductor's one-time
    set-up, kept on disk for every later compile: probing the CPU's vector ISAs (a test build and
    load each) and building the kernels' precompiled header. Unavailable if the build fails."""
    start = time.perf_counter()
    try:
        torch.compile(lambda x: x.sin() * x.sum(), fullgraph=True)(torch.ones(8))
    except Exception as error:  # noqa: BLE001 - any failure to build means no compiled backend
        cause = getattr(error, "inner_exception", error)  # dynamo's wrapper names only the backend
        # Inductor's build errors run to pages (the command, the compiler's output): the first line.
        reason = f"{type(cause).__name__}: {(str(cause).strip().splitlines() or [''])[0]}"
        raise Unavailable(f"torch.compile failed on this CPU ({reason})") from error
    return time.perf_counter() - start


def _rows(input_ids, positions, seq_slots, rows: int):
    """The first `rows` rows of each buffer."""
    return input_ids[:rows], positions[:rows], seq_slots[:rows]


def _marked_rows(input_ids, positions, seq_slots, rows: int):
    """_rows with the rows and the query length unbacked (one symbol each for every tensor
    holding it), where this torch can (UNBACKED). Marks the given buffers too: the views keep
    them as their base, and dynamo guards the base's sizes."""
    views = _rows(input_ids, positions, seq_slots, rows)
    if UNBACKED:
        mark = torch._dynamo.decorators.mark_unbacked
        for tokens in (input_ids, positions):
            mark(tokens, 1, min=1, shape_id="query_len")
        for view in views:
            mark(view, 0, min=1, shape_id="rows")
        for view in views[:2]:
            mark(view, 1, min=1, shape_id="query_len")
    return views


class _Inductor:
    """torch.compile's inductor backend (``compile_fx``, what ``backend="inductor"`` runs) that
    remembers the compiled graph and the inputs dynamo passed it on its latest call."""

    def __init__(self):
        self.last_call = None

    def __call__(self, graph_module, example_inputs):
        from torch._inductor.compile_fx import compile_fx

        # The size/stride and alignment checks of every input and extern kernel's output run on
        # each call (over a quarter of a tiny step's time); replay passes the inputs dynamo's guards
        # checked at capture, so they can only pass (a CUDA graph checks nothing either).
        compiled = compile_fx(graph_module, example_inputs, config_patches=NO_RUNTIME_ASSERTS)

        def call(*args):
            self.last_call = compiled, args
            return compiled(*args)

        return call


@functools.cache
def _compiled():
    """(backend, compiled function), one for every model: dynamo guards on the model's shapes,
    not on which model it is, so models of one config share a compile (a trace takes seconds
    per model)."""
    backend = _Inductor()
    compiled = torch.compile(
        LlamaForCausalLM.hidden_states, backend=backend, dynamic=True, fullgraph=True
    )
    return backend, compiled


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
    runners share it), and the inputs each captured (buffers, rows) replays."""

    def __init__(self, model):
        self.model = model
        self.cache_state = inductor_cache_state()  # before this model's first compile
        # (id of the buffers' input_ids, rows) -> (input_ids, compiled graph, its inputs); the
        # entry holds input_ids, so the id stays its own while the entry lives.
        self.captured = {}
        self.kv_cache_version = model.kv_cache_version

    def compile(self, input_ids, positions, seq_slots, rows: int) -> torch.Tensor:
        """Hidden states of the first `rows` rows of the static buffers; may compile (capture)."""
        if self.kv_cache_version != self.model.kv_cache_version:
            # Inputs recorded before hold the freed cache, and their graphs refuse to replay.
            self.captured.clear()
            self.kv_cache_version = self.model.kv_cache_version
        _cache_dims_dynamic(self.model)
        backend, compiled = _compiled()
        # specialize_float: dynamic=True would trace RMSNorm's eps as a symbolic float, and
        # inductor then restarts the whole trace to make it a tensor (~2.5 s per compile, cold).
        with (
            torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT, specialize_float=True),
            # Backed rows would be duck-sized into an equal model dim's symbol (32 rows, head_dim
            # 32) and specialized with it: a static compile for that row count alone.
            torch.fx.experimental._config.patch(use_duck_shape=UNBACKED),
        ):
            out = compiled(self.model, *_marked_rows(input_ids, positions, seq_slots, rows))
        self.captured[id(input_ids), rows] = (input_ids, *backend.last_call)
        return out

    def __call__(self, input_ids, positions, seq_slots, rows: int) -> torch.Tensor:
        """The same, for buffers and a row count captured by compile (replay): the compiled
        graph on the inputs it was captured with; GraphlabError for any others."""
        captured = self.captured.get((id(input_ids), rows))
        if captured is None:
            raise GraphlabError(
                f"no compiled step was captured for {rows} rows of these buffers: capture first"
            )
        _, graph, inputs = captured
        return graph(*inputs)[0]


def compiled_step(model) -> CompiledStep:
    """The model's compiled step, made on first use (per model: its runners share the compile)."""
    step = model.__dict__.get("_graphlab_compiled_step")
    if step is None:
        step = model.__dict__["_graphlab_compiled_step"] = CompiledStep(model)
    return step
