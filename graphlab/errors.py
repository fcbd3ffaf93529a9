"""The exception types for what the user gave or the machine lacks, and the checks that raise them.

Every one is a GraphlabError, which the command line prints on one line (exit status 2); catch it
for any refusal, or one kind:

- BadInput: a value, option or config is refused (a typo, a number out of range, options that
  conflict, a config vLLM refuses or the kit does not model); catch it to ask the user again.
- UnreadableInput: a file, folder, CSV, checkpoint or log the user named cannot be read, or its
  content is malformed (missing columns, bad rows, lines that do not parse); catch it to ask for
  another file.
- Unavailable: this machine lacks what the call needs (vllm not importable, no CUDA device,
  torch.compile failing); catch it to skip that part.

A plain GraphlabError is none of these: a write that failed, a vLLM run that failed or timed out,
a folder another run holds, or a call out of order (a replay before its capture).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import re
import stat
from pathlib import Path


class GraphlabError(ValueError):
    """A refusal the user can act on: the message names what and what is allowed.

    The command line prints it on one line and exits with status 2, so callers never see a
    traceback from deep inside for a typo.
    """


class BadInput(GraphlabError):
    """A value that is not allowed: a typo, a wrong type, a number out of range, options that
    conflict, a config vLLM refuses."""


class UnreadableInput(GraphlabError):
    """An input file that cannot be read (missing, no permission, not a regular file) or whose
    content is malformed (a missing column, a bad row, a line that does not parse)."""


class Unavailable(GraphlabError):
    """Raised where this machine lacks what the call needs: vllm, a CUDA device, torch.compile."""


def check_choice(name: str, value, allowed) -> None:
    """Raise BadInput unless `value` is one of `allowed` (the message lists them)."""
    try:
        known = value in allowed
    except TypeError:  # an unhashable value is in no dict
        known = False
    if not known:
        raise BadInput(f"{name} {value!r} is not one of {', '.join(map(str, allowed))}")


def check_int(name: str, value, minimum: int, maximum: int | None = None) -> int:
    """`value` as an int when it is an integer in minimum..maximum (None: no upper bound)."""
    # bool is an int subclass; a flag passed by mistake must not read as 1.
    integer = isinstance(value, numbers.Integral) and not isinstance(value, bool)
    if not integer or value < minimum or (maximum is not None and value > maximum):
        allowed = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        named = f"{name} " if name else ""  # "": argparse names the flag itself
        raise BadInput(f"{named}must be an integer {allowed}, got {value!r}")
    return int(value)


def lookup(name: str, value, table: dict, kind: type):
    """`value` itself when it is a `kind` already, else `table[value]` (BadInput listing
    the names when it is none of them): engines, model presets and suites by name or object."""
    if isinstance(value, kind):
        return value
    check_choice(name, value, table)
    return table[value]


def check_float(name: str, value, minimum: float, maximum: float | None = None) -> float:
    """`value` as a float when it is a finite real number in minimum..maximum (numpy scalars
    included; bool and numeric text are not numbers here)."""
    real = isinstance(value, numbers.Real) and not isinstance(value, bool)
    if (
        not real
        or not math.isfinite(value)
        or value < minimum
        or (maximum is not None and value > maximum)
    ):
        allowed = f">= {minimum}" if maximum is None else f"in {minimum}..{maximum}"
        raise BadInput(f"{name} must be a finite number {allowed}, got {value!r}")
    return float(value)


def check_sizes(name: str, value, minimum: int, maximum: int | None = None) -> tuple[int, ...]:
    """`value` as a non-empty tuple of ints in minimum..maximum: a list, tuple, range or 1-d array
    (not a dict, set, text or one-shot iterator, whose order or contents would be lost)."""
    if getattr(value, "ndim", None) == 1:  # a numpy array, without importing numpy here
        value = value.tolist()
    if not isinstance(value, (list, tuple, range)) or not len(value):
        raise BadInput(
            f"{name} must be a non-empty list or tuple of integers, got "
            f"{type(value).__name__} {value!r}"
        )
    return tuple(check_int(f"every {name} entry", v, minimum, maximum) for v in value)


def check_instance(name: str, value, kind: type):
    """`value` itself when it is a `kind`, else BadInput naming the type it is."""
    if not isinstance(value, kind):
        raise BadInput(f"{name} must be a {kind.__name__}, got {type(value).__name__}")
    return value


def check_json_object(name: str, value) -> dict | None:
    """`value` when None or a dict JSON can write (no objects, NaN or cycles)."""
    if value is None:
        return None
    check_instance(name, value, dict)
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise BadInput(f"{name} must hold JSON values only: {error}") from None
    return value


def check_path(name: str, value) -> Path:
    """`value` as a Path when it is non-empty text or a path object."""
    if not isinstance(value, (str, os.PathLike)) or not str(value):
        raise BadInput(f"{name} must be a non-empty path, got {value!r}")
    return Path(value)


def check_file_name(name: str, value) -> str:
    """A file name inside one folder: non-empty text without a path separator or NUL, not hidden
    (so neither . nor ..)."""
    if (
        not isinstance(value, str)
        or not value
        or value.startswith(".")
        or re.search(r"[/\\\0]", value)
    ):
        raise BadInput(
            f"{name} must be a non-empty file name without '/', '\\', a NUL or a leading '.', "
            f"got {value!r}"
        )
    return value


def _node_kind(mode: int) -> str | None:
    """What a non-regular file is ("a FIFO"), or None for a regular file."""
    for test, kind in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return kind
    return None if stat.S_ISREG(mode) else "not a regular file"


def check_input_file(name: str, path) -> Path:
    """`path` when it is an existing regular file (a FIFO would block the read, a device never
    end); UnreadableInput naming the option and what the path is otherwise (BadInput for a
    number: open() would take it for a descriptor and close it)."""
    path = check_path(name, path)
    try:
        mode = os.stat(path).st_mode
    except OSError as error:
        raise UnreadableInput(f"cannot read {name} {str(path)!r}: {error.strerror}") from None
    except ValueError:  # a NUL in the path
        raise BadInput(f"{name} {str(path)!r} holds a NUL byte; give a file path") from None
    kind = _node_kind(mode)
    if kind is not None:
        raise UnreadableInput(f"{name} {str(path)!r} is {kind}; give a regular file")
    return path


def check_output_file(name: str, path) -> Path:
    """`path` when it is a regular file or does not exist yet: writing replaces the file at path,
    which must never be a device, FIFO or socket (os.replace would swap the node itself)."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):  # a new path (its folder is checked apart)
        return path
    except OSError as error:
        raise GraphlabError(f"cannot write {name} {str(path)!r}: {error.strerror}") from None
    kind = _node_kind(mode)
    if kind is not None:
        raise BadInput(f"{name} {str(path)!r} is {kind}; give a regular file or a new path")
    return path
