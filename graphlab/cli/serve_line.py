"""`--vllm-args` and `--device-tier` for `audit` and `plan`, with or without --vllm-log: a `vllm
serve` line as the config, read by graphlab.against_vllm.serve_args and held to the kit's limits
and the engine's release; and what a --vllm-log run takes from the line or the config options."""

from __future__ import annotations

import argparse
from dataclasses import replace

from graphlab.against_vllm.serve_args import ServeLine, read_vllm_args
from graphlab.against_vllm.serve_attention import line_backend
from graphlab.errors import BadInput
from graphlab.sizing.batch_defaults import (
    DEFAULT_DEVICE_TIER,
    DEVICE_TIERS,
    LARGE_TIER_FROM,
    describe_tiers,
)
from graphlab.sizing.config import SPLIT_CAPTURE_SETTINGS, SizingConfig
from graphlab.sizing.deployment import Deployment, deploy
from graphlab.sizing.log_audit import FIELDS
from graphlab.sizing.log_reader import VllmLog, read_vllm_log
from graphlab.sizing.model_runner import release_key
from graphlab.sizing.policy import PERFORMANCE_MODE_FROM, SizingPolicy


def add_vllm_args(parser: argparse.ArgumentParser) -> None:
    """--vllm-args and --device-tier, the defaults a line without max_num_seqs is sized with."""
    parser.add_argument(
        "--vllm-args",
        default=None,
        metavar='"..."',
        help="a `vllm serve` (or `python -m vllm.entrypoints.openai.api_server`) command line: "
        "its sizing options (max_num_seqs, max_num_batched_tokens, speculative_config, capture "
        "sizes, vLLM 0.34.0's prefill / decode capture settings, cudagraph_mode, -O level, "
        "--enforce-eager, --performance-mode, the attention backend as VLLM_ATTENTION_BACKEND=NAME "
        "before `vllm serve` or --attention-backend / --attention-config) are read with the "
        "installed vLLM's own parser; importing vLLM takes ~20 s, so malformed JSON and "
        "unknown modes are refused before it; not combinable with the config options above",
    )
    parser.add_argument(
        "--device-tier",
        choices=tuple(DEVICE_TIERS),
        default=DEFAULT_DEVICE_TIER,
        help="vLLM's defaults for what --vllm-args leaves unset, max_num_seqs / "
        f"max_num_batched_tokens by device (EngineArgs.get_batch_defaults): {describe_tiers()}; "
        f"default {DEFAULT_DEVICE_TIER}",
    )


# The config options of `audit` and `plan` that a --vllm-args line sets instead (each command has
# some of them), in the order an error names them: the log's fields and the speculative method.
CONFIG_OPTIONS = (*FIELDS, "speculative_method")


def config_options(args: argparse.Namespace) -> dict:
    """The command's config options as given (option name -> value, None where unset)."""
    return {name: getattr(args, name) for name in CONFIG_OPTIONS if hasattr(args, name)}


def _defaults_tier(version: str, device_tier: str) -> tuple[str, tuple[str, ...]]:
    """The tier whose batch defaults vLLM `version` gives a device of `device_tier`, and the note
    where they are another tier's: before LARGE_TIER_FROM, get_batch_defaults has no >= 160 GiB
    tier and gives a B200 the h100 tier's (its attention backend stays a B200's)."""
    early = bool(version) and release_key(version) < release_key(LARGE_TIER_FROM)
    if device_tier != "b200" or not early:
        return device_tier, ()
    return "h100", (
        f"vLLM {version} has no >= 160 GiB tier (get_batch_defaults, first in {LARGE_TIER_FROM}): "
        "a B200 gets the h100 tier's batch defaults there",
    )


def read_serve_line(
    command_line: str | None,
    device_tier: str,
    given: dict,
    policy: SizingPolicy | None = None,
    version: str = "",
) -> ServeLine | None:
    """The ServeLine of --vllm-args (None without it), for every command and --vllm-log alike;
    GraphlabError naming any of the config options in `given` (name -> value) that are set as
    well; with the engine `policy` of vLLM `version` (None under --vllm-log, whose engine the log
    names), also a setting the release does not have."""
    if command_line is None:
        return None
    flags = [f"--{name.replace('_', '-')}" for name, value in given.items() if value is not None]
    if flags:
        raise BadInput(f"--vllm-args already sets the config; drop {', '.join(flags)}")
    tier, tier_note = _defaults_tier(version, device_tier)
    line = read_vllm_args(command_line, tier)
    if line.from_defaults:
        line = replace(line, notes=(*tier_note, *line.notes))
    if policy is None:  # --vllm-log: the release is the log's
        return line
    split = line.config.split_capture_settings
    if split and not policy.splits_capture_sizes:
        raise BadInput(
            f"--vllm-args sets {' / '.join(split)}, which {policy.name} does not have (vLLM "
            "added the prefill and decode capture settings in 0.34.0; --vllm-version 0.34.0)"
        )
    mode = line.config.performance_mode
    if mode is not None and not getattr(policy, "has_performance_mode", False):
        raise BadInput(
            f"--vllm-args sets --performance-mode {mode}, which {policy.name} does not have "
            f"(vLLM added it in {PERFORMANCE_MODE_FROM})"
        )
    return line


def read_logged(args) -> tuple[VllmLog, dict, ServeLine | None]:
    """The --vllm-log log, what the command line gives its config ({SizingConfig field: (value,
    where)}: the config options, or the --vllm-args line's settings but those it leaves to vLLM's
    defaults) and the line (None without --vllm-args)."""
    log = read_vllm_log(args.vllm_log)
    options = config_options(args)
    line = read_serve_line(args.vllm_args, args.device_tier, options)
    if line is None:
        given = {
            name: (options[name], f"--{name.replace('_', '-')}")
            for name in FIELDS
            if options.get(name) is not None
        }
        return log, given, None
    given = {  # with vLLM 0.34.0's prefill / decode settings, which no log states
        name: (getattr(line.config, name), "--vllm-args")
        for name in (*FIELDS, *SPLIT_CAPTURE_SETTINGS)
        if getattr(line.config, name) is not None and name not in line.from_defaults
    }
    return log, given, line


def deployed(
    args, policy: SizingPolicy, version: str, cfg: SizingConfig, line: ServeLine | None
) -> Deployment:
    """cfg deployed on what the command line asks (graphlab.sizing.deployment): --model-runner,
    the --vllm-args line's attention backend or --attention-backend, --attention-cg-support and
    --device-tier."""
    backend, notes = line_backend(line, version, args.attention_backend)
    return deploy(
        policy,
        version,
        cfg,
        model_runner=args.model_runner,
        backend=backend,
        tier=args.device_tier,
        cg_support=args.attention_cg_support,
        notes=notes,
    )


def deployed_config(
    args, policy: SizingPolicy, version: str
) -> tuple[Deployment, ServeLine | None]:
    """The config the command line gives (its --vllm-args line, else its config options) as vLLM
    `version` deploys it (`deployed`), and the line (None without --vllm-args); BadInput without
    max_num_seqs."""
    options = config_options(args)
    line = read_serve_line(args.vllm_args, args.device_tier, options, policy, version)
    if line is not None:
        cfg = line.config
    elif args.max_num_seqs is None:
        raise BadInput("--max-num-seqs is required (or give --vllm-args)")
    else:
        k = args.num_speculative_tokens or 0
        cfg = SizingConfig(**{**options, "num_speculative_tokens": k}).within_limits()
    return deployed(args, policy, version, cfg, line), line
