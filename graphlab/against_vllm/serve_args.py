"""A `vllm serve` command line read by the installed vLLM's own argument parser into a
SizingConfig, with the line's compilation config kept whole for the planner's flag."""

from __future__ import annotations

import json
import re
import shlex
import sys
from dataclasses import dataclass, field

from graphlab.against_vllm.installed import importing_vllm
from graphlab.against_vllm.serve_attention import attention_backends, line_environment
from graphlab.errors import BadInput, GraphlabError, UnreadableInput, lookup
from graphlab.sizing.batch_defaults import (
    DEFAULT_DEVICE_TIER,
    DEVICE_TIERS,
    DeviceTier,
)
from graphlab.sizing.config import PERFORMANCE_MODES, SPLIT_CAPTURE_SETTINGS, SizingConfig
from graphlab.sizing.dispatch import CUDAGRAPH_MODES
from graphlab.sizing.limits import MAX_NUM_SEQS_LIMIT

# The older spelling of `vllm serve` (vllm/entrypoints/openai/api_server.py, 0.32).
API_SERVER_MODULE = "vllm.entrypoints.openai.api_server"
# Both spellings of the compilation config flag (vllm/engine/arg_utils.py, 0.32).
COMPILATION_FLAGS = ("--compilation-config", "-cc")
# Top-level flags vLLM copies into compilation_config; a compilation config with capture sizes on
# the same line is vLLM's "mutually exclusive" error (`EngineArgs.create_engine_config`).
CAPTURE_FLAGS = ("--cudagraph-capture-sizes", "--max-cudagraph-capture-size")
# A serve line is a few KiB even with a JSON compilation config; past this it is not one.
MAX_LINE_CHARS = 1 << 16


@dataclass(frozen=True)
class ServeLine:
    """What a `vllm serve` line says about CUDA graphs: the config, and what the planner keeps."""

    config: SizingConfig
    # The compilation config vLLM receives (the last --compilation-config / -cc, dotted keys
    # merged into it), as JSON values; {} when the line sets none.
    compilation_config: dict = field(default_factory=dict)
    # How the line reached its settings: defaults assumed, -O levels, --enforce-eager.
    notes: tuple[str, ...] = ()
    # The config's batch settings the line leaves unset: vLLM's defaults on the device tier.
    from_defaults: tuple[str, ...] = ()
    # The words after the entrypoint, and the flags a planned compilation config replaces.
    words: tuple[str, ...] = ()
    replaced_flags: tuple[str, ...] = ()
    # The line's leading NAME=VALUE environment words (`VLLM_ATTENTION_BACKEND=FLASHINFER vllm
    # serve ...`), and the backends its --attention-backend and --attention-config name, as given.
    environment: tuple[tuple[str, str], ...] = ()
    attention_backend: str | None = None
    attention_config_backend: str | None = None

    def with_flag(self, flag_words: list[str]) -> str:
        """The line as `vllm serve ...` with its capture and compilation flags (and their values)
        replaced by flag_words: appending alone loses to a top-level capture flag (vLLM's
        "mutually exclusive" error) or a dotted -cc.KEY (merged and appended after it)."""
        kept, values = [], 0  # values: how many of the next words are a dropped flag's
        for word in self.words:
            key = word.partition("=")[0].partition(".")[0]
            key = key.replace("_", "-") if key.startswith("--") else key
            if key in CAPTURE_FLAGS + COMPILATION_FLAGS:
                # --cudagraph-capture-sizes takes every size that follows (nargs="+").
                many = key == "--cudagraph-capture-sizes"
                values = 0 if "=" in word else len(self.words) if many else 1
            elif values and not word.startswith("-"):
                values -= 1
            else:
                values = 0
                kept.append(word)
        environment = [f"{name}={value}" for name, value in self.environment]
        return shlex.join([*environment, "vllm", "serve", *kept, *flag_words])


def _entrypoint_words(command_line: str) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The environment words that lead the line (line_environment), and its words after `vllm
    serve` or `python -m vllm.entrypoints.openai.api_server`."""
    if not isinstance(command_line, str) or not command_line.strip():
        raise BadInput(
            f"--vllm-args must be a `vllm serve MODEL ...` line, got {_shown(command_line)}"
        )
    if len(command_line) > MAX_LINE_CHARS:
        raise BadInput(
            f"--vllm-args holds {len(command_line)} characters, more than a serve line's "
            f"{MAX_LINE_CHARS}: {_shown(command_line)}"
        )
    try:
        words = shlex.split(command_line)
    except ValueError as error:  # shlex's "No closing quotation" / "No escaped character"
        raise BadInput(
            f"--vllm-args {_shown(command_line)} is not a shell command line: {error}"
        ) from None
    environment, words = line_environment(words)
    if words[:2] == ["vllm", "serve"]:
        return environment, words[2:]
    if words and re.fullmatch(r"(.*/)?python[0-9.]*", words[0]):
        if words[1:3] != ["-m", API_SERVER_MODULE]:
            raise BadInput(
                f"--vllm-args: a python command line must run `-m {API_SERVER_MODULE}`, got "
                f"{' '.join(words[:3])!r}"
            )
        return environment, words[3:]
    if words[:1] == ["vllm"]:
        raise BadInput(
            f"--vllm-args: the vllm command must be `vllm serve`, got {' '.join(words[:2])!r}"
        )
    return environment, words


def _shown(value) -> str:
    """value's repr, cut to its first 60 characters: an error names a long line, not repeats it."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:60]}... ({len(text)} characters)"


def _flag_values(words: list[str], names) -> list[tuple[str, str | None]]:
    """(flag, value) for every `NAME VALUE`, `NAME=VALUE` and dotted `NAME.KEY VALUE` word, with
    underscores read as dashes (vLLM's FlexibleArgumentParser)."""
    found = []
    for i, word in enumerate(words):
        key, eq, value = word.partition("=")
        head, dot, rest = key.partition(".")
        head = head.replace("_", "-") if head.startswith("--") else head
        key = head + dot + rest
        if head in names:
            found.append((key, value if eq else (words[i + 1] if i + 1 < len(words) else None)))
    return found


def _with_suffixed_numbers_as_zero(text: str) -> str:
    """A compilation config with its bare `8k`-style numbers as 0, so that its JSON shape can be
    checked: vLLM expands them in dataclass configs (`_expand_json_human_readable_numbers`)."""
    parts = re.split(r'("(?:[^"\\]|\\.)*")', text)  # quoted strings at the odd indices
    parts[::2] = [re.sub(r"\b\d+(?:\.\d+)?[kKmMgGtT]\b", "0", part) for part in parts[::2]]
    return "".join(parts)


def _check_before_import(words: list[str]) -> None:
    """The checks that need no vLLM (importing it takes ~20 s): JSON configs, cudagraph_mode."""
    for key, value in _flag_values(words, (*COMPILATION_FLAGS, "--speculative-config", "-sc")):
        if value is None:
            raise BadInput(f"--vllm-args: {key} needs a value")
        name = key.split(".", 1)[0]
        what = "compilation_config" if name in COMPILATION_FLAGS else "speculative_config"
        if "." in key:
            mode = value.strip("'\"") if key == f"{name}.cudagraph_mode" else None
        else:
            try:
                value = json.loads(
                    _with_suffixed_numbers_as_zero(value) if name in COMPILATION_FLAGS else value
                )
            except json.JSONDecodeError as error:
                raise BadInput(
                    f"--vllm-args: {name} {_shown(value)} is not JSON ({error.msg} at character "
                    f"{error.pos})"
                ) from None
            if not isinstance(value, dict):
                raise BadInput(
                    f"--vllm-args: {what} must be a JSON object, got {json.dumps(value)}"
                )
            mode = value.get("cudagraph_mode") if name in COMPILATION_FLAGS else None
        if isinstance(mode, str) and mode.upper() not in CUDAGRAPH_MODES:
            # vLLM's validator raises a bare KeyError here (CompilationConfig, 0.32).
            raise BadInput(
                f"--vllm-args: cudagraph_mode {mode!r} is not one of {', '.join(CUDAGRAPH_MODES)} "
                "(any case)"
            )
    for _, value in _flag_values(words, ("--max-num-seqs",)):
        if re.fullmatch(r"[0-9]+", value or "") is None:  # vLLM's type is int
            raise BadInput(f"--vllm-args: --max-num-seqs {_shown(value)} is not an integer")
        # the kit's bound (graphlab.sizing.limits); int() refuses over 4300 digits
        if len(value) > 20 or not 1 <= int(value) <= MAX_NUM_SEQS_LIMIT:
            shown = value if len(value) <= 20 else f"a number of {len(value)} digits"
            raise BadInput(
                f"--vllm-args: max_num_seqs must be an integer in 1..{MAX_NUM_SEQS_LIMIT}, "
                f"got {shown}"
            )
    for i, word in enumerate(words):  # -O3, -O 3, -O=3 (FlexibleArgumentParser)
        level = word[2:].lstrip("=") if word.startswith("-O") and word != "-O" else None
        if word == "-O" and i + 1 < len(words):
            level = words[i + 1]
        if level is not None and level not in ("0", "1", "2", "3"):
            raise BadInput(f"--vllm-args: optimization level {level!r} is not one of 0, 1, 2, 3")
    for _, value in _flag_values(words, ("--performance-mode",)):
        if value not in PERFORMANCE_MODES:
            raise BadInput(
                f"--vllm-args: --performance-mode {value!r} is not one of "
                f"{', '.join(PERFORMANCE_MODES)}"
            )


def _parse(words: list[str]):
    """(args, the argument list vLLM's parser ended with) from vLLM's own `vllm serve` parser."""
    if sys.stderr.isatty():
        print("reading --vllm-args: importing vllm (~20 s)...", file=sys.stderr, flush=True)
    with importing_vllm("to read --vllm-args"):
        from vllm.entrypoints.launchers.cli_args import make_arg_parser
        from vllm.utils.argparse_utils import FlexibleArgumentParser

    class Parser(FlexibleArgumentParser):
        # One line: no usage dump, and a pydantic error's lines joined without its URL.
        def error(self, message):
            lines = [
                line.strip() for line in message.splitlines() if "errors.pydantic.dev" not in line
            ]
            raise BadInput(
                f"vLLM's argument parser rejects --vllm-args: {'; '.join(filter(None, lines))}"
            )

        # FlexibleArgumentParser hands argparse its rewritten list (dotted keys merged to JSON);
        # 0.34.0's capture settings are taken out of it first, since this parser refuses them.
        def parse_known_args(self, args=None, namespace=None):
            self.processed, self.split = _take_split_settings(list(args or []))
            return super().parse_known_args(self.processed, namespace)

    parser = Parser(prog="vllm serve")
    try:
        args = make_arg_parser(parser).parse_args(words)
    except OSError as error:  # `--config FILE` is read while parsing
        raise UnreadableInput(
            f"--vllm-args: cannot read {error.filename!r}: {error.strerror}"
        ) from None
    except GraphlabError:  # Parser.error's line already (a ValueError too): not wrapped twice
        raise
    except (KeyError, ValueError) as error:  # a validator's bare error, or vLLM's own ValueError
        raise BadInput(f"vLLM's argument parser rejects --vllm-args: {error}") from None
    return args, parser.processed, parser.split


def _take_split_settings(processed: list[str]) -> tuple[list[str], dict]:
    """The parser's argument list without vLLM 0.34.0's five capture settings
    (SPLIT_CAPTURE_SETTINGS, `CompilationConfig`, vllm/config/compilation.py, 0.34.0), which the
    installed vLLM's CompilationConfig refuses as unknown fields, and those of the last
    compilation config (argparse keeps the last; dotted -cc.KEY words are merged into one
    appended after the others)."""
    from vllm.engine.arg_utils import _expand_json_human_readable_numbers

    out, taken = list(processed), {}
    for i, word in enumerate(out):
        key, eq, value = word.partition("=")
        at = i if eq else i + 1
        if key not in COMPILATION_FLAGS or at >= len(out):
            continue
        try:
            config = json.loads(_expand_json_human_readable_numbers(value if eq else out[at]))
        except ValueError:
            continue  # vLLM's own parser words the error
        if not isinstance(config, dict):
            continue
        taken = {name: config.pop(name) for name in SPLIT_CAPTURE_SETTINGS if name in config}
        if taken:
            out[at] = f"{key}={json.dumps(config)}" if eq else json.dumps(config)
    return out, taken


def _compilation_dict(processed: list[str]) -> dict:
    """The last compilation config argparse saw, as JSON values (argparse keeps the last)."""
    from vllm.engine.arg_utils import _expand_json_human_readable_numbers

    found = _flag_values(processed, COMPILATION_FLAGS)
    return json.loads(_expand_json_human_readable_numbers(found[-1][1])) if found else {}


def _cudagraph_mode(args, notes: list[str]) -> str | None:
    """The mode vLLM runs with (`VllmConfig.__post_init__`, 0.32): --enforce-eager NONE; else the
    user's, or the optimization level's default; PIECEWISE parts dropped without vLLM's
    compilation, and no graphs at all under stock torch.compile."""
    from pydantic import TypeAdapter, ValidationError
    from vllm.config.compilation import CompilationMode, CUDAGraphMode
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, OptimizationLevel

    try:
        level = TypeAdapter(OptimizationLevel).validate_python(int(args.optimization_level))
    except (ValueError, ValidationError):
        raise BadInput(
            f"--vllm-args: optimization level {args.optimization_level!r} is not one of 0, 1, 2, 3"
        ) from None
    compilation = args.compilation_config
    if args.enforce_eager:
        notes.append("--enforce-eager: vLLM captures no CUDA graphs (cudagraph_mode NONE)")
        return "NONE"
    mode = user_mode = compilation.cudagraph_mode
    if mode is None:
        mode = OPTIMIZATION_LEVEL_TO_CONFIG[level]["compilation_config"]["cudagraph_mode"]
        if level != OptimizationLevel.O2:
            notes.append(f"-O{int(level)}: vLLM's default cudagraph_mode there is {mode.name}")
    compile_mode = compilation.mode
    if compile_mode is None:
        compile_mode = CompilationMode.VLLM_COMPILE if level > 0 else CompilationMode.NONE
    if mode.requires_piecewise_compilation() and compile_mode != CompilationMode.VLLM_COMPILE:
        notes.append(
            f"cudagraph_mode {mode.name} without vLLM's compilation becomes "
            f"{mode.without_piecewise().name} (`_normalize_piecewise_cudagraph_mode`)"
        )
        mode = mode.without_piecewise()
    if compile_mode == CompilationMode.STOCK_TORCH_COMPILE and mode != CUDAGraphMode.NONE:
        notes.append(
            f"stock torch.compile (compilation mode {int(compile_mode)}): vLLM captures no CUDA "
            f"graphs, cudagraph_mode {mode.name} becomes NONE (model runner V2: "
            "`_disable_cudagraphs_for_v2_stock_torch_compile`; V1: `GPUModelRunner.load_model` "
            "compiles the model and returns before wrapping it in CUDAGraphWrapper)"
        )
        return "NONE"
    # Left unset, the mode is each engine's own default (FULL_AND_PIECEWISE from 0.11 on).
    return None if user_mode is None and mode == CUDAGraphMode.FULL_AND_PIECEWISE else mode.name


def _num_speculative_tokens(speculative_config) -> int:
    if speculative_config is None:
        return 0
    if not isinstance(speculative_config, dict):  # e.g. from a --config YAML file
        raise BadInput(
            f"--vllm-args: speculative_config must be a JSON object, got "
            f"{json.dumps(speculative_config)}"
        )
    k = speculative_config.get("num_speculative_tokens")
    if k is None:
        raise BadInput(
            "--vllm-args: speculative_config must give num_speculative_tokens (vLLM would "
            "read it from the draft model's config, which is not loaded here)"
        )
    return k


def read_vllm_args(command_line: str, tier: str | DeviceTier = DEFAULT_DEVICE_TIER) -> ServeLine:
    """The sizing-relevant options of a `vllm serve` line (or `python -m
    vllm.entrypoints.openai.api_server ...`), parsed by the installed vLLM's own `vllm serve`
    parser (`make_arg_parser`; no model is resolved or loaded): max_num_seqs and
    max_num_batched_tokens (unset: vLLM's defaults on device `tier`, a graphlab.sizing.
    batch_defaults.DeviceTier or its name, named in `from_defaults`), speculative_config's
    num_speculative_tokens and num_speculative_tokens_per_batch_size,
    cudagraph_capture_sizes / max_cudagraph_capture_size as flags or inside compilation_config
    (both at once is vLLM's "mutually exclusive" error), vLLM 0.34.0's five prefill / decode
    capture settings inside compilation_config (JSON or dotted -cc.KEY; the engine decides
    whether it has them), cudagraph_mode after -O levels and
    --enforce-eager, and --performance-mode. Malformed JSON and an unknown cudagraph_mode are
    refused before vLLM is imported. GraphlabError for anything vLLM rejects, a value above the
    kit's limits (SizingConfig.within_limits), or without vllm.
    """
    environment, words = _entrypoint_words(command_line)
    tier = lookup("device tier", tier, DEVICE_TIERS, DeviceTier)  # before the slow import
    _check_before_import(words)
    args, processed, split = _parse(words)
    notes: list[str] = []
    settings = {"cudagraph_mode": _cudagraph_mode(args, notes)}
    compilation = args.compilation_config
    for name in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        flag, nested = getattr(args, name), getattr(compilation, name, None)
        if flag is not None and nested is not None:
            raise BadInput(
                f"--vllm-args: {name} and compilation_config.{name} are mutually exclusive"
            )
        settings[name] = flag if flag is not None else nested
    mode = args.performance_mode
    settings["performance_mode"] = None if mode == "balanced" else mode
    default_seqs, default_tokens = tier.batch_defaults(mode)
    unset = tuple(
        name for name in ("max_num_seqs", "max_num_batched_tokens") if getattr(args, name) is None
    )
    note = tier.assumed_note(mode, unset)
    k = _num_speculative_tokens(args.speculative_config)  # its refusals say --vllm-args already
    try:
        config = SizingConfig(
            max_num_seqs=default_seqs if args.max_num_seqs is None else args.max_num_seqs,
            num_speculative_tokens=k,
            # which model runner vLLM picks depends on it (graphlab.sizing.model_runner)
            speculative_method=(args.speculative_config or {}).get("method"),
            num_speculative_tokens_per_batch_size=(args.speculative_config or {}).get(
                "num_speculative_tokens_per_batch_size"
            ),
            max_num_batched_tokens=default_tokens
            if args.max_num_batched_tokens is None
            else args.max_num_batched_tokens,
            **settings,
            **{name: tuple(v) if isinstance(v, list) else v for name, v in split.items()},
        ).within_limits()  # the kit's bounds, which vLLM's parser does not know
    except GraphlabError as error:  # the same kind of error, saying where the value came from
        raise type(error)(f"--vllm-args: {error}") from None
    replaced = [key for key, _ in _flag_values(words, CAPTURE_FLAGS + COMPILATION_FLAGS)]
    flag_backend, config_backend = attention_backends(args)
    return ServeLine(
        config=config,
        compilation_config=_compilation_dict(processed) | split,
        notes=tuple(filter(None, [note, *notes])),
        from_defaults=unset,
        words=tuple(words),
        replaced_flags=tuple(dict.fromkeys(replaced)),
        environment=environment,
        attention_backend=flag_backend,
        attention_config_backend=config_backend,
    )
