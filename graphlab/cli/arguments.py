"""What every command's arguments share: the parser, argument types, --out checks and limits.

An argument type raises argparse.ArgumentTypeError with one line naming the value and what is
allowed; the parser turns every usage error into GraphlabError (exit status 2).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
from pathlib import Path

from graphlab.against_vllm.installed import installed_vllm_version
from graphlab.errors import BadInput, GraphlabError, check_int, check_output_file
from graphlab.sizing.attention import CG_SUPPORTS, RANGES
from graphlab.sizing.dispatch import CUDAGRAPH_MODES
from graphlab.sizing.engines import SizingPolicy, get_engine
from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT
from graphlab.sizing.model_runner import (
    MODEL_RUNNERS,
)
from graphlab.sizing.versions import DEFAULT_ENGINE, release_of, resolve_engine

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
# The `schema` key of every --json object; raised when a key changes meaning or goes.
JSON_SCHEMA = 2
# An option's name as typed, `--max_num_seqs` or `--max-num-seqs=4` (vLLM takes both spellings).
_OPTION = re.compile(r"--[A-Za-z0-9][A-Za-z0-9_-]*(=.*)?", re.DOTALL)


class Parser(argparse.ArgumentParser):
    """argparse whose usage errors become GraphlabError, so every bad input reads the same way."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # A negative range such as -1:4 is a value (refused by its type, by name), not an option.
        self._negative_number_matcher = re.compile(r"^-\d+(:-?\d+)?$|^-\d*\.\d+$")

    def error(self, message):
        raise BadInput(message)

    def parse_known_args(self, args=None, namespace=None):
        # vLLM's FlexibleArgumentParser reads --max_num_seqs as --max-num-seqs: so does the kit,
        # except in the value of --vllm-args, which vLLM's own parser reads.
        if args is not None:
            args = [
                word
                if i and args[i - 1] == "--vllm-args" or not _OPTION.fullmatch(word)
                else word.partition("=")[0].replace("_", "-") + "".join(word.partition("=")[1:])
                for i, word in enumerate(args)
            ]
        return super().parse_known_args(args, namespace)


class ReleaseEngine(str):
    """An engine name as --engine resolved it, where the name enters: its `policy`, and the vLLM
    release it stands for (`release`: the one given, --vllm-version 0.14.1, else the engine's own,
    "" for a peer's), so that model runner `auto` decides as that release does."""

    release: str = ""
    policy: SizingPolicy | None = None


def engine(value: str) -> str:
    """An argparse type: a name of graphlab.sizing.engines.ENGINES, a vLLM release (its engine,
    graphlab.sizing.versions) or "auto" (the installed vllm's release)."""
    try:
        if value == "auto":
            value = installed_vllm_version()
        given = release_of(value)
        name = ReleaseEngine(resolve_engine(value))
        name.policy = get_engine(name)
        name.release = given or getattr(name.policy, "release", "")
    except GraphlabError as error:
        # argparse keeps an ArgumentTypeError's own message (it would replace a ValueError's).
        raise argparse.ArgumentTypeError(str(error)) from None
    return name


# --engine's default, resolved as a given name is.
DEFAULT = engine(DEFAULT_ENGINE)


def add_vllm_version(parser: argparse.ArgumentParser) -> None:
    """--vllm-version X.Y.Z, the same as --engine X.Y.Z (the spelling a vLLM user types)."""
    parser.add_argument(
        "--vllm-version",
        dest="engine",
        type=engine,
        default=argparse.SUPPRESS,
        metavar="X.Y.Z",
        help="a vLLM release, 0.5.0 to 0.34.0: the same as --engine X.Y.Z (the engine whose "
        "rules that release shipped; refused with the reason where the kit does not model it)",
    )


def add_model_runner(parser: argparse.ArgumentParser) -> None:
    """--vllm-version and --model-runner."""
    add_vllm_version(parser)
    parser.add_argument(
        "--model-runner",
        choices=MODEL_RUNNERS,
        default=None,
        help="vLLM's model runner: v1 / v2 as VLLM_USE_V2_MODEL_RUNNER=0 / 1 force it; auto "
        "(default) decides as the release does: V1 before 0.22.0, then V2 unless the speculative "
        "method (from --vllm-args) is one V2 does not support (vLLM engines only); to 0.11.0 v1 "
        "is VLLM_USE_V1=1, the V1 engine even where vLLM would fall back to V0",
    )


def add_attention_backend(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--attention-backend",
        type=str.upper,
        default=None,
        metavar="NAME",
        help="vLLM's attention backend (FLASH_ATTN, FLASHINFER, TRITON_ATTN, FLASHMLA, ...; read "
        f"in every release from vLLM {RANGES[0].first}): vLLM lowers cudagraph_mode to the "
        "AttentionCGSupport it reports, with a WARNING (0.9.0-0.10.0: refuses full_cuda_graph "
        "unless the backend allows it); --vllm-args may name it instead (VLLM_ATTENTION_BACKEND="
        "NAME before `vllm serve`, --attention-backend, --attention-config); default: vLLM's pick "
        "for --device-tier "
        "(FLASH_ATTN, FlashAttention 3 on the h100 tier)",
    )
    parser.add_argument(
        "--attention-cg-support",
        type=str.upper,
        choices=CG_SUPPORTS,
        default=None,
        metavar="LEVEL",
        help="the AttentionCGSupport the backend reports for your model "
        f"({', '.join(CG_SUPPORTS)}), where the kit's table cannot tell (FLASHINFER's depends "
        "on the model's heads and KV cache: on the b200 tier, where vLLM picks it, from 0.11.1, "
        "on h100 from 0.30.0, everywhere from 0.33.0) or to override it; vLLM's WARNING names "
        "it where it lowers cudagraph_mode",
    )


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


# '1,2,4,8' -> (1, 2, 4, 8), in the given order; vLLM's own spelling `1 2 4 8` is nargs="+".
capture_sizes = checked(
    lambda value: tuple(int(part) for part in value.split(",")),
    lambda sizes: min(sizes) >= 1 and max(sizes) <= MAX_NUM_BATCHED_TOKENS_LIMIT,
    f"comma-separated integers in 1..{MAX_NUM_BATCHED_TOKENS_LIMIT}",
)
# inf and nan too: a budget is a finite amount.
positive_float = checked(float, lambda number: 0 < number < float("inf"), "a finite number > 0")
nonnegative_float = checked(
    float, lambda number: 0 <= number < float("inf"), "a finite number >= 0"
)


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
        raise BadInput(f"cannot create --out {str(path)!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise GraphlabError(f"cannot write --out {str(path)!r}: {str(existing)!r} is not writable")


def check_out_folder(path) -> Path:
    """--out as a folder: an existing writable folder, or one that can be created. Checked before
    work."""
    if not str(path):
        raise BadInput("--out is empty; give a folder for the CSVs")
    if str(path) == "-":  # standard output where one CSV is written (crash-map), not a folder
        raise BadInput("--out '-' is standard output; give a folder for the CSVs")
    out = Path(path)
    if out.exists() and not out.is_dir():
        raise BadInput(f"--out {str(path)!r} is an existing file; give a folder for the CSVs")
    _check_writable(out, path)
    return out


def check_out_file(path) -> Path:
    """--out as a CSV file in a writable folder (created when missing). Checked before work."""
    if not str(path):
        raise BadInput("--out is empty; give a CSV file path")
    out = Path(path)
    if out.is_dir():
        raise BadInput(f"--out {str(path)!r} is a folder; give a CSV file path")
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
        type=str.upper,  # vLLM's validator takes any case (CompilationConfig, 0.32)
        choices=CUDAGRAPH_MODES,
        default=None,
        help="vLLM's compilation_config.cudagraph_mode, any case (vLLM V1 engines only; default: "
        "the version's, FULL_AND_PIECEWISE)",
    )


def add_speculative_method(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--speculative-method",
        default=None,
        metavar="METHOD",
        help="speculative_config's method (eagle, eagle3, mtp, draft_model, ngram, ...): which "
        "model runner vLLM picks, and for vLLM 0.12.0 to 0.34.0 the drafter's graphs (MTP model "
        "types such as deepseek_mtp count as mtp)",
    )


class _JoinedSizes(argparse.Action):
    """nargs="+" groups of sizes (`1 2,4 8`) stored as one tuple, in the given order."""

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, tuple(size for group in values for size in group))


def add_capture_sizes(parser: argparse.ArgumentParser) -> None:
    """--cudagraph-capture-sizes as vLLM spells it (`1 2 4 8`), or comma-separated: one tuple."""
    parser.add_argument(
        "--cudagraph-capture-sizes",
        type=capture_sizes,
        nargs="+",
        action=_JoinedSizes,
        default=None,
        metavar="N",
        help="vLLM's compilation_config.cudagraph_capture_sizes, space-separated as vLLM takes "
        "them (1 2 4 8) or comma-separated (vLLM V1 engines only)",
    )


def _finite(value):
    """value with every NaN or infinity replaced by None and every float rounded to 12
    significant digits (a sum of fractions prints 1.0, not 1.0000000000000002), in nested dicts
    and lists."""
    if isinstance(value, float):
        return float(f"{value:.12g}") if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def json_text(command: str, data: dict) -> str:
    """The one JSON object a command's --json prints: `schema` and `command` first, strict JSON
    (null where a number is undefined, never NaN; floats to 12 significant digits)."""
    return json.dumps({"schema": JSON_SCHEMA, "command": command, **_finite(data)}, allow_nan=False)
