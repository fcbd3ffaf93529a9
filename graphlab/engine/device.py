"""The device a run uses and its graph backend: real CUDA graphs, compiled steps, or emulation.

torch is imported only inside the functions, so naming a backend or a device list costs no import.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from graphlab.errors import GraphlabError, check_choice

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
        raise GraphlabError(
            f"device {name!r} requested but torch {torch.__version__} sees no CUDA device"
        )
    return torch.device(name)


def backend_for(device) -> str:
    """Real graphs only exist on CUDA; everywhere else the runner emulates them eagerly."""
    return CUDA_GRAPH if device.type == "cuda" else CPU_EMULATED


def cost_backend_for(device) -> str:
    """Where a cost is measured: real graphs on CUDA, compiled steps on a CPU (which save
    dispatch overhead there as graphs save launches); cpu-emulated saves nothing by design."""
    return CUDA_GRAPH if device.type == "cuda" else CPU_COMPILED


def cost_backend(device, backend: str) -> str:
    """The backend a cost is measured on: `backend`, or cost_backend_for the device when
    "auto"."""
    return cost_backend_for(device) if backend == "auto" else backend


def pin_threads(threads: int = 1) -> int:
    """Set torch's CPU thread count (one by default, as `make notebooks` runs): small steps
    gain nothing from more, and on a shared machine extra threads stall. Returns it."""
    import torch

    if not isinstance(threads, int) or threads < 1:
        raise GraphlabError(f"threads={threads!r} must be an integer >= 1")
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
