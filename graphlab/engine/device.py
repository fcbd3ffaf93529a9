"""The device a run uses and its graph backend: real CUDA graphs, compiled steps, or emulation.

A backend is resolved once, at the entry point (a runner, a bench run), into a frozen `Backend`
value that the capture code asks (`captures_graphs`, `compiled`, `memory_measured`); "auto" is
defined here alone (AUTO). torch is imported only inside the functions, so naming a backend or a
device list costs no import.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from graphlab.errors import BadInput, Unavailable, check_choice

CUDA_GRAPH, COMPILED_CUDA_GRAPH = "cuda-graph", "compiled-cuda-graph"
CPU_COMPILED, CPU_EMULATED = "cpu-compiled", "cpu-emulated"
BACKENDS = (CUDA_GRAPH, COMPILED_CUDA_GRAPH, CPU_COMPILED, CPU_EMULATED)


DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device="auto"):
    """'auto' means CUDA when present; asking for CUDA on a machine without it is bad input."""
    import torch

    name = str(device)
    if not name.startswith("cuda:"):  # cuda:N names one GPU
        check_choice("device", name, DEVICES)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise Unavailable(
            f"device {name!r} requested but torch {torch.__version__} sees no CUDA device"
        )
    return torch.device(name)


@dataclass(frozen=True)
class Backend:
    """What a backend does, asked by the capture code instead of comparing names; its str() is
    the name every row, title and record carries, so no CPU timing reads as a CUDA graph's."""

    name: str
    device_type: str  # the device it runs on: "cuda" or "cpu"
    captures_graphs: bool  # real torch.cuda.CUDAGraph captures (so graph memory is measured)
    compiled: bool  # a torch.compile'd step (graphlab.engine.compiled)

    @property
    def memory_measured(self) -> bool:
        """Graph memory is measured around real captures, predicted everywhere else."""
        return self.captures_graphs

    def __str__(self) -> str:
        return self.name


BACKEND_VALUES = {
    b.name: b
    for b in (
        Backend(name=CUDA_GRAPH, device_type="cuda", captures_graphs=True, compiled=False),
        Backend(name=COMPILED_CUDA_GRAPH, device_type="cuda", captures_graphs=True, compiled=True),
        Backend(name=CPU_COMPILED, device_type="cpu", captures_graphs=False, compiled=True),
        Backend(name=CPU_EMULATED, device_type="cpu", captures_graphs=False, compiled=False),
    )
}
# What "auto" means, said once. Real graphs on CUDA. On a CPU the logic (runners, speculative
# decoding, dispatch) emulates them eagerly, while a cost is measured on compiled steps, which
# save per-op dispatch there as graphs save launches (cpu-emulated saves nothing by design).
AUTO = {
    "logic": {"cuda": CUDA_GRAPH, "cpu": CPU_EMULATED},
    "costs": {"cuda": CUDA_GRAPH, "cpu": CPU_COMPILED},
}


def resolve_backend(backend: str | Backend, device, purpose: str = "logic") -> Backend:
    """The Backend a model on `device` runs: a name or "auto" (AUTO[purpose]) checked against the
    device; cpu-compiled where inductor cannot build falls back to cpu-emulated, said in one
    line on stderr. A Backend value passes through, checked against the device again; the
    device as resolve_device takes it (a torch.device or its name)."""
    check_choice("backend purpose", purpose, AUTO)
    device = resolve_device(device)
    name = str(backend)
    check_choice("backend", name, ("auto",) + BACKENDS)
    if name == "auto":
        name = AUTO[purpose][device.type]
    chosen = BACKEND_VALUES[name]
    if chosen.device_type != device.type:
        where = (
            "needs the model on a CUDA device" if chosen.device_type == "cuda" else "runs on a CPU"
        )
        allowed = [b for b, v in BACKEND_VALUES.items() if v.device_type == device.type]
        raise BadInput(
            f"backend {name!r} {where}, not {device}; use {' or '.join(map(repr, allowed))}"
        )
    if chosen.compiled and device.type == "cpu":
        reason = compile_unavailable()  # only the CPU build needs a C++ compiler: ~1 s to probe
        if reason:
            _say_once(f"{reason}: running {CPU_EMULATED} instead of {CPU_COMPILED}")
            return BACKEND_VALUES[CPU_EMULATED]
    return chosen


@functools.cache
def compile_unavailable() -> str | None:
    """Why inductor cannot build C++ kernels here, or None when it can."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        compiler = get_cpp_compiler()
    except Exception as error:  # noqa: BLE001 - any failure to find a compiler means no compile
        return f"torch.compile unavailable ({type(error).__name__}: {error})"
    if shutil.which(compiler) is None:
        return f"torch.compile needs a C++ compiler; {compiler!r} is not on PATH"
    return None


@functools.cache
def _say_once(line: str) -> None:
    print(line, file=sys.stderr)


def pin_threads(threads: int = 1) -> int:
    """Set torch's CPU thread count (one by default): small steps gain nothing from more, and on
    a shared machine extra threads stall. Returns it."""
    import torch

    if not isinstance(threads, int) or threads < 1:
        raise BadInput(f"threads={threads!r} must be an integer >= 1")
    torch.set_num_threads(threads)
    return torch.get_num_threads()


def cpu_name() -> str:
    """The host processor, e.g. 'cpu: AMD EPYC (2 cores)'."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass  # not Linux: platform's answer stands
    return f"cpu: {model} ({os.cpu_count()} cores)"


def device_name(device) -> str:
    """A human name for the hardware, e.g. 'NVIDIA H200' or
    'cpu: AMD EPYC (2 cores, 1 torch thread)'.

    On CPU the torch thread count belongs to the name: it changes small-model step times
    severalfold.
    """
    import torch

    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    threads = torch.get_num_threads()
    return f"{cpu_name()[:-1]}, {threads} torch thread{'s' * (threads != 1)})"
