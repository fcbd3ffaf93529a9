"""Progress of a loop on stderr: a tqdm bar when tqdm is installed, plain lines otherwise.

tqdm is imported at the first call, not at module load, so the package imports on a bare
torch machine (the lent GPU machine runs the check from a copied checkout).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator


def progress(
    iterable: Iterable,
    desc: str = "",
    unit: str = "it",
    disable: bool = False,
    total: int | None = None,
) -> Iterable:
    """`iterable`, reporting each finished item: tqdm's bar, or a line 'desc: i/N unit'."""
    if disable:
        return iterable
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return _lines(iterable, desc, unit, total)
    return tqdm(iterable, desc=desc, unit=unit, total=total)


def _lines(iterable: Iterable, desc: str, unit: str, total: int | None) -> Iterator:
    if total is None and hasattr(iterable, "__len__"):
        total = len(iterable)
    of = f"/{total}" if total is not None else ""
    done = 0
    for done, item in enumerate(iterable, 1):
        yield item
        print(f"{desc}: {done}{of} {unit}", file=sys.stderr, flush=True)
