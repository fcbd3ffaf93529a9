"""Writing tables so a reader never finds a half-written file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd


def write_csv_atomic(df: pd.DataFrame, path) -> Path:
    """Write df as CSV to path via a temporary file in the same directory and os.replace.

    On any error the temporary file is removed and an existing file at path is left untouched.
    The file gets the permissions open() would give it (0666 less the umask), not mkstemp's 0600.
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            df.to_csv(handle, index=False)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    """The process umask; the only way to read it is to set it, so set it straight back."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
