"""What every command's arguments share: the parser, argument types, --out checks and limits.

An argument type raises argparse.ArgumentTypeError with one line naming the value and what is
allowed; the parser turns every usage error into GraphlabError (exit status 2).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
from pathlib import Path

from graphlab.against_vllm.installed import installed_vllm_version
from graphlab.errors import GraphlabError, check_int, check_output_file
from graphlab.sizing.engines import get_engine
from graphlab.sizing.families import CUDAGRAPH_MODES
from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT
from graphlab.sizing.versions import engine_for_version, resolve_engine

# repro's and crash-map's upper bounds (S, k and T: graphlab.sizing.limits's), so a huge value
# fails at once.
REPRO_MAX_NUM_SEQS_LIMIT = 1024  # repro runs the model: S sequences of KV cache
# A repro decodes about num_requests x max_model_len tokens on the CPU (~1 ms each): keep it to
# seconds.
REPRO_MAX_NUM_REQUESTS = 256
REPRO_MAX_MODEL_LEN = 1024  # KV cache positions per sequence
REPRO_MAX_TOKENS = 2**14  # num_requests x max_model_len
CRASH_MAP_MAX_NUM_SEQS = 4096  # a crash map sweeps every S in its range: keep it to seconds

# Exit status of `audit` when the engine would refuse to start with the config.
EXIT_REFUSED = 3


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors become GraphlabError, so every bad input reads the same way."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A negative range such as -1:4 is a value (refused by its type, by name), not an option.
        self._negative_number_matcher = re.compile(r"^-\d+(:-?\d+)?$|^-\d*\.\d+$")

    def error(self, message):
        raise GraphlabError(message)


def engine(value: str) -> str:
    """An argparse type: a name of graphlab.sizing.engines.ENGINES, a vLLM release (its engine,
    graphlab.sizing.versions) or "auto" (the installed vllm's release)."""
    try:
        if value == "auto":
            value = engine_for_version(installed_vllm_version())
        value = resolve_engine(value)
        get_engine(value)
    except GraphlabError as error:
        # argparse keeps an ArgumentTypeError's own message (it would replace a ValueError's).
        raise argparse.ArgumentTypeError(str(error)) from None
    return value


def int_in(minimum: int, maximum: int | None = None):
    """An argparse type: an integer in [minimum, maximum] (no upper bound when maximum is None)."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            number = value  # not an integer: check_int refuses the text as typed
        try:
            return check_int("", number, minimum, maximum)
        except GraphlabError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return parse


def int_range(minimum: int, maximum: int | None = None):
    """'A:B' -> range(A, B + 1), both ends inclusive, within [minimum, maximum]."""
    bound = f"{minimum} <= START <= END" + (f" <= {maximum}" if maximum is not None else "")

    def parse(value: str) -> range:
        parts = value.split(":")
        try:
            bounds = [int_in(minimum, maximum)(part) for part in parts] if len(parts) == 2 else None
        except argparse.ArgumentTypeError:
            bounds = None
        if bounds is None or bounds[0] > bounds[1]:
            raise argparse.ArgumentTypeError(f"must be START:END with {bound}, got {value!r}")
        return range(bounds[0], bounds[1] + 1)

    return parse


def checked(convert, valid, allowed: str):
    """An argparse type: convert(value) when it converts and is valid, else 'must be {allowed}'."""

    def parse(value: str):
        try:
            result = convert(value)
        except ValueError:
            result = None
        if result is None or not valid(result):
            raise argparse.ArgumentTypeError(f"must be {allowed}, got {value!r}")
        return result

    return parse


# '1,2,4,8' -> (1, 2, 4, 8), in the given order.
capture_sizes = checked(
    lambda value: tuple(int(part) for part in value.split(",")),
    lambda sizes: min(sizes) >= 1 and max(sizes) <= MAX_NUM_BATCHED_TOKENS_LIMIT,
    f"comma-separated integers in 1..{MAX_NUM_BATCHED_TOKENS_LIMIT}",
)
# inf and nan too: a budget is a finite amount.
positive_float = checked(float, lambda number: 0 < number < float("inf"), "a finite number > 0")


@contextlib.contextmanager
def writing_out(path):
    """An OSError while writing --out is bad input (missing folder, no permission), not a crash."""
    try:
        yield
    except OSError as error:
        raise GraphlabError(f"cannot write --out {path!r}: {error.strerror or error}") from None


def _check_writable(folder: Path, path) -> None:
    """GraphlabError unless folder is a writable folder or can be created (path: the --out
    given)."""
    existing = next(p for p in (folder, *folder.absolute().parents) if p.exists())
    if not existing.is_dir():
        raise GraphlabError(f"cannot create --out {str(path)!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GraphlabError(f"cannot write --out {str(path)!r}: {str(existing)!r} is not writable")


def check_out_folder(path) -> Path:
    """--out as a folder: an existing writable folder, or one that can be created. Checked before
    work."""
    if not str(path):
        raise GraphlabError("--out is empty; give a folder for the CSVs")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise GraphlabError(f"--out {str(path)!r} is an existing file; give a folder for the CSVs")
    _check_writable(out, path)
    return out


def check_out_file(path) -> Path:
    """--out as a CSV file in a writable folder (created when missing). Checked before work."""
    if not str(path):
        raise GraphlabError("--out is empty; give a CSV file path")
    out = Path(path)
    if out.is_dir():
        raise GraphlabError(f"--out {str(path)!r} is a folder; give a CSV file path")
    _check_writable(out.parent, path)
    check_output_file("--out", out)  # a device, FIFO or socket: writing would replace the node
    return out


def add_config_arguments(parser: argparse.ArgumentParser) -> None:
    """--max-num-batched-tokens and --cudagraph-mode, as audit, crash-map and plan read them."""
    parser.add_argument(
        "--max-num-batched-tokens",
        type=int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        help=f"token budget per step; only the vLLM V1 engines read it (default 8192, at most "
        f"{MAX_NUM_BATCHED_TOKENS_LIMIT})",
    )
    add_cudagraph_mode(parser)


def add_cudagraph_mode(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cudagraph-mode",
        choices=CUDAGRAPH_MODES,
        default=None,
        help="vLLM's compilation_config.cudagraph_mode (vLLM V1 engines only; default: the "
        "version's, FULL_AND_PIECEWISE)",
    )
