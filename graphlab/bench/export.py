"""Writing tables so a reader never finds a half-written file, in one format for every CSV.

A finished table takes its final name `<name>.csv` only when it is whole; rows checkpointed
while a sweep runs go to `<name>.partial.csv`, so an interrupt or a full disk never replaces a
complete file with part of one. One writer per folder: `locked_folder` refuses a second run on
the same folder while the first one's process lives. A run's `manifest.json` says which of the
folder's CSVs it wrote and whether it finished, so a folder an interrupt left mixed (one CSV new,
the rest from an earlier run) says which files belong together; `written_files` reads a run's
CSVs and manifest back as frames for its summary (graphlab.views.report words it).

Every CSV the kit writes holds lists as JSON (`[1, 0]`) and integers as integers, also in the
columns that may be empty (`INTEGER_COLUMNS`); `read_csv` loads those as pandas' nullable
`Int64` (a plain `pd.read_csv` would turn a column with one empty cell into floats).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import tempfile
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pandas as pd

from graphlab.errors import (
    BadInput,
    GraphlabError,
    check_choice,
    check_file_name,
    check_instance,
    check_output_file,
    check_path,
)

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
PARTIAL_SUFFIX = ".partial.csv"  # rows of a sweep still running (or interrupted)
PARTIAL_NAME = PARTIAL_SUFFIX.removesuffix(".csv")
LOCK_NAME = ".graphlab.lock"  # holds the pid of the run writing the folder
MANIFEST_NAME = "manifest.json"
# A manifest's state: still writing (or killed outright), ended by an error or Ctrl-C, finished.
MANIFEST_STATES = ("running", "interrupted", "complete")


def write_csv_atomic(df: pd.DataFrame, path) -> Path:
    """Write df as CSV (csv_ready: JSON lists, integers) via a temporary file and os.replace.

    On any error the temporary file is removed and an existing file at path is left untouched.
    The file gets the permissions open() would give it (0666 less the umask), not mkstemp's 0600.
    """
    path = check_output_file("CSV path", path)
    df = csv_ready(check_instance("frame", df, pd.DataFrame))
    return _write_atomic(path, lambda handle: df.to_csv(handle, index=False))


def _write_atomic(path: Path, write) -> Path:
    """write(handle) into a temporary file beside path, then os.replace it onto path."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except PermissionError as error:  # a folder the user cannot write: name it, not the .tmp file
        raise GraphlabError(
            f"cannot write {str(path)!r}: {error.strerror} in folder {str(path.parent)!r}"
        ) from None
    except OSError as error:
        error.filename = str(path)
        raise
    try:
        with os.fdopen(fd, "w", newline="") as handle:
            write(handle)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as error:
        # Gone already when the interrupt came just after os.replace: then path is whole.
        Path(tmp).unlink(missing_ok=True)
        # Name the file, not the temporary one (a full disk says neither).
        if isinstance(error, OSError):
            error.filename = str(path)
        raise
    return path


def write_manifest(out, run: dict, sweeps, state: str) -> Path:
    """out/manifest.json, atomically: the run (`run`: its provenance block), the sweeps it was
    asked for, its state (MANIFEST_STATES) and, for every whole CSV in out, the run_id of its
    rows, so `files_of_run` and a reader both tell this run's CSVs from an earlier run's."""
    check_choice("manifest state", state, MANIFEST_STATES)
    out = Path(out)
    manifest = {
        "run_id": run["run_id"],
        "state": state,
        "sweeps": list(sweeps),
        "run": run,
        "files": {p.name: _run_id_of(p) for p in sorted(out.glob("*.csv")) if not _partial(p)},
    }
    text = json.dumps(manifest, indent=2, default=str) + "\n"
    return _write_atomic(out / MANIFEST_NAME, lambda handle: handle.write(text))


def files_of_run(manifest: dict) -> list[str]:
    """The CSVs of a manifest's folder that its run wrote (the rest are an earlier run's)."""
    return [name for name, run_id in manifest["files"].items() if run_id == manifest["run_id"]]


class WrittenFiles(NamedTuple):
    """What a run's CSVs hold (`csvs`: path, rows, and the sorted backends, devices and memory
    kinds, None without that column) and the manifests beside them (`manifests`: path, run_id,
    state, run_files of this run among `files` in the folder)."""

    csvs: pd.DataFrame
    manifests: pd.DataFrame


def written_files(paths: dict[str, Path]) -> WrittenFiles:
    """The CSVs run_bench wrote (its {name: path}) read back, and their folder's manifest, when
    a run wrote one there: what a finished run shows its reader."""
    csvs = []
    for path in paths.values():
        frame = read_csv(path)
        kinds = frame.get("memory_kind")
        csvs.append(
            dict(
                path=path,
                rows=len(frame),
                backends=tuple(sorted(frame["backend"].unique())),
                devices=tuple(sorted(frame["device"].unique())),
                memory_kinds=None if kinds is None else tuple(sorted(kinds.dropna().unique())),
            )
        )
    manifests = []
    for path in sorted({p.parent / MANIFEST_NAME for p in paths.values()}):
        if path.exists():
            manifest = json.loads(path.read_text())
            manifests.append(
                dict(
                    path=path,
                    run_id=manifest["run_id"],
                    state=manifest["state"],
                    run_files=len(files_of_run(manifest)),
                    files=len(manifest["files"]),
                )
            )
    return WrittenFiles(
        pd.DataFrame(csvs, columns=["path", "rows", "backends", "devices", "memory_kinds"]),
        pd.DataFrame(manifests, columns=["path", "run_id", "state", "run_files", "files"]),
    )


def _run_id_of(path: Path) -> str | None:
    """The run_id of a CSV's first row; None for a file without one (not written by a run)."""
    try:
        first = pd.read_csv(path, nrows=1, usecols=lambda column: column == "run_id")
    except (ValueError, pd.errors.ParserError, pd.errors.EmptyDataError):
        return None
    return str(first["run_id"][0]) if len(first) and "run_id" in first else None


def _partial(path: Path) -> bool:
    return path.name.endswith(PARTIAL_SUFFIX)


def export_csvs(frames: dict[str, pd.DataFrame], out) -> dict[str, Path]:
    """Write each frame to out/<name>.csv atomically (a failed write leaves no partial file) and
    drop its checkpoint, out/<name>.partial.csv, once the whole table is in place."""
    check_instance("frames", frames, dict)
    for name in frames:
        if check_file_name("frame name", name).endswith(PARTIAL_NAME):
            raise BadInput(
                f"frame name {name!r} ends in {PARTIAL_NAME!r}, the name of a sweep's checkpoint"
            )
    out = check_path("out", out)
    if out.exists() and not out.is_dir():
        raise BadInput(f"out {str(out)!r} is not a folder; give a folder for the CSVs")
    out.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, frame in frames.items():
        written[name] = write_csv_atomic(frame, out / f"{name}.csv")
        partial_path(out, name).unlink(missing_ok=True)
    return written


def write_checkpoint(frame: pd.DataFrame, out, name: str) -> Path:
    """The rows of an unfinished sweep, as out/<name>.partial.csv: never the final name."""
    return write_csv_atomic(frame, partial_path(out, check_file_name("frame name", name)))


def partial_path(out, name: str) -> Path:
    return Path(out) / f"{name}{PARTIAL_SUFFIX}"


@contextlib.contextmanager
def locked_folder(out):
    """Hold an exclusive lock on out/.graphlab.lock, which names this process's pid, while writing
    out; GraphlabError naming the holder's pid when another run holds it. The kernel drops the
    lock when its process dies, so a lock file left by a killed run is stale and simply taken."""
    lock = Path(out) / LOCK_NAME
    while True:
        fd = os.open(lock, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            owner = os.read(fd, 32).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise GraphlabError(
                f"--out {str(out)!r} is in use by another run (pid {owner}, lock file "
                f"{str(lock)!r}); wait for it to end or give another --out"
            ) from None
        # The holder before us may have removed the file after we opened it: lock the one there.
        if _same_file(fd, lock):
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        yield lock
    finally:
        lock.unlink(missing_ok=True)  # while still held, so no other run holds a removed file
        os.close(fd)


def check_unlocked(out) -> None:
    """GraphlabError, as locked_folder's, when another run holds out's lock now: a start-up check
    before slow imports (the run itself still takes the lock)."""
    if Path(out).is_dir():
        with locked_folder(out):
            pass


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.stat(path).st_ino == os.fstat(fd).st_ino
    except FileNotFoundError:
        return False


def csv_ready(df: pd.DataFrame) -> pd.DataFrame:
    """df with list cells as JSON text and INTEGER_COLUMNS as nullable integers."""
    df = df.copy()
    for column in df.columns:
        if column in INTEGER_COLUMNS:
            df[column] = pd.array([_integer(column, v) for v in df[column]], dtype="Int64")
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


def _integer(column: str, value) -> int | None:
    """A cell of an integer column, None when empty; GraphlabError for 2.5 (int() would write 2)."""
    if pd.isna(value):
        return None
    try:
        integer = int(value) == value
    except (TypeError, ValueError):
        integer = False
    if not integer or isinstance(value, bool):
        raise BadInput(f"column {column!r} holds integers or blanks, got {value!r}")
    return int(value)


def _is_list(value) -> bool:
    return isinstance(value, (list, tuple, np.ndarray))


def _umask() -> int:
    """The process umask; the only way to read it is to set it, so set it straight back."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask
