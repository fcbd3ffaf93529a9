"""Lazy re-exports for a package's public names (PEP 562): a name loads its module on first use."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str]):
    """`__getattr__` and `__dir__` for `package`, whose public names map to submodules
    (relative)."""

    def __getattr__(name: str):
        if name in exports:
            value = getattr(importlib.import_module(f"{package}.{exports[name]}"), name)
            globals_of_package = importlib.import_module(package).__dict__
            globals_of_package[name] = value  # later lookups skip this hook
            return value
        try:  # a submodule, e.g. graphlab.bench.sweeps
            return importlib.import_module(f"{package}.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"{package}.{name}":
                raise
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(exports)

    return __getattr__, __dir__
