"""Writing tables so a reader never finds a half-written file, in one format for every CSV.

Every CSV the kit writes holds lists as JSON (`[1, 0]`) and integers as integers, also in the
columns that may be empty (`INTEGER_COLUMNS`); `read_csv` loads those as pandas' nullable
`Int64` (a plain `pd.read_csv` would turn a column with one empty cell into floats).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

# Integer columns that may be empty (no graph, no crash, emulated, not applicable).
INTEGER_COLUMNS = (
    "graph_size",
    "pool_bytes",
    "cumulative_pool_bytes",
    "first_crash_n",
    "max_num_batched_tokens",
    "torch_threads",
    "num_reqs",
)


def write_csv_atomic(df: pd.DataFrame, path) -> Path:
    """Write df as CSV (csv_ready: JSON lists, integers) via a temporary file and os.replace.

    On any error the temporary file is removed and an existing file at path is left untouched.
    The file gets the permissions open() would give it (0666 less the umask), not mkstemp's 0600.
    """
    path = Path(path)
    df = csv_ready(df)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            df.to_csv(handle, index=False)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as error:
        os.unlink(tmp)
        # Name the CSV, not the temporary file (a full disk says neither).
        if isinstance(error, OSError):
            error.filename = str(path)
        raise
    return path


def csv_ready(df: pd.DataFrame) -> pd.DataFrame:
    """df with list cells as JSON text and INTEGER_COLUMNS as nullable integers."""
    df = df.copy()
    for column in df.columns:
        if column in INTEGER_COLUMNS:
            df[column] = pd.array(
                [None if pd.isna(v) else int(v) for v in df[column]], dtype="Int64"
            )
        elif df[column].dtype == object and df[column].map(_is_list).any():
            df[column] = df[column].map(
                lambda v: json.dumps(np.asarray(v).tolist()) if _is_list(v) else v
            )
    return df


def read_csv(path) -> pd.DataFrame:
    """A CSV written here, INTEGER_COLUMNS loaded as Int64 (list columns stay JSON text)."""
    header = pd.read_csv(path, nrows=0).columns
    return pd.read_csv(
        path, dtype={c: "Int64" for c in INTEGER_COLUMNS if c in header}, low_memory=False
    )  # one type per column, not per chunk


def _is_list(value) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def _umask() -> int:
    """The process umask; the only way to read it is to set it, so set it straight back."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
