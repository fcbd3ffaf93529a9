"""How vLLM deploys a config: the model runner and the attention backend a release runs it on,
applied alike by `audit` and `plan` (graphlab.sizing.model_runner, graphlab.sizing.attention)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphlab.against_vllm.serve_args import ServeLine
from graphlab.errors import BadInput
from graphlab.sizing.attention import attention_support
from graphlab.sizing.attention_names import (
    ATTENTION_ENV_DEPRECATION,
    ATTENTION_ENV_DROPPED_IN,
    ATTENTION_OPTIONS_FROM,
    env_backend_name,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import SizingPolicy
from graphlab.sizing.full_cuda_graph import FLASH_ATTN_VERSIONS
from graphlab.sizing.model_runner import V0_FALLBACK_UNTIL, choose_model_runner, release_key


@dataclass(frozen=True)
class Deployment:
    """A config on the model runner and attention backend vLLM runs it on, and why those."""

    config: SizingConfig
    model_runner: str | None  # why that runner; None for engines without model runners
    attention: str | None  # which backend and the support it reports; None likewise
    backend: str | None  # the backend named (the --vllm-args line's, else --attention-backend)
    notes: tuple[str, ...]  # how the line's backend was read
    # What a result that does not name the runner and backend (plan's) prints beside it.
    said: tuple[str, ...]


def deployed(args, policy: SizingPolicy, version: str, cfg: SizingConfig, line) -> Deployment:
    """cfg as vLLM `version` deploys it: the model runner (--model-runner, else cfg's) and the
    attention backend (the --vllm-args line's, else --attention-backend, else vLLM's pick for
    --device-tier, with its FlashAttention version). Its `said`: the notes, then the runner where
    one was asked for (--model-runner or cfg's), the backend where one was named, either where the
    backend lowers cfg's cudagraph_mode. GraphlabError for either on an engine without them."""
    backend, notes = line_attention_backend(line, version, args.attention_backend)
    if not hasattr(policy, "model_runners"):  # vLLM V1's engines alone have both
        if (args.model_runner or cfg.model_runner) != "auto":
            raise BadInput(f"--model-runner is vLLM V1's; engine {policy.name!r} has none")
        for flag, value in (
            ("--attention-backend", backend),
            ("--attention-cg-support", args.attention_cg_support),
        ):
            if value is not None:
                raise BadInput(f"{flag} is vLLM V1's; engine {policy.name!r} has none")
        return Deployment(cfg, None, None, backend, notes, notes)
    runs, runner = apply_model_runner(policy, version, args.model_runner, cfg)
    chosen, support, attention = attention_support(
        version, backend, args.device_tier, args.attention_cg_support
    )
    runs = replace(runs, attention_cg_support=support, attention_backend=chosen)
    runs = replace(runs, flash_attn_version=FLASH_ATTN_VERSIONS[args.device_tier])
    lowered = policy.cudagraph_mode(runs) != policy.cudagraph_mode(cfg)
    said = list(notes)
    if args.model_runner is not None or cfg.model_runner != "auto" or lowered:
        said.append(f"model runner {runs.model_runner.upper()}: {runner}")
    if backend is not None or args.attention_cg_support is not None or lowered:
        said.append(attention)
    return Deployment(runs, runner, attention, backend, notes, tuple(said))


def apply_model_runner(
    policy: SizingPolicy, version: str, model_runner: str | None, cfg: SizingConfig
) -> tuple[SizingConfig, str]:
    """cfg with the model runner the release runs it on (`model_runner`, else cfg's), and why
    that one; GraphlabError naming the release and the reason where the kit does not model that
    runner of it."""
    requested = model_runner or cfg.model_runner
    runner, why = choose_model_runner(
        version,
        requested,
        cfg.speculative_method,
        cfg.num_speculative_tokens_per_batch_size is not None,
    )
    if runner not in policy.model_runners:
        raise BadInput(
            f"vLLM {version}: model runner {runner.upper()} is not modelled ({why}); "
            f"{policy.unmodelled_runner}"
        )
    # to 0.11.0 a chosen "v1" would read as VLLM_USE_V1=1 (graphlab.sizing.v1_early): auto stays
    keep = requested == "auto" and release_key(version) <= release_key(V0_FALLBACK_UNTIL)
    return replace(cfg, model_runner="auto" if keep else runner), why


def line_attention_backend(
    line: ServeLine | None, version: str, flag: str | None
) -> tuple[str | None, tuple[str, ...]]:
    """(the attention backend the --vllm-args line gives vLLM `version`, else `flag`, the kit's
    --attention-backend; the notes on how): VLLM_ATTENTION_BACKEND to 0.14.1 (overriding
    attention_config.backend from 0.13.0, AttentionConfig.__post_init__), --attention-backend and
    --attention-config's backend from 0.13.0, mutually exclusive (EngineArgs.
    create_engine_config). GraphlabError where vLLM refuses the line, or where the line and
    --attention-backend both name a backend."""
    if line is None or not version:
        return flag, ()
    env = dict(line.environment).get("VLLM_ATTENTION_BACKEND")
    option, nested, notes = line.attention_backend, line.attention_config_backend, []
    has_options = release_key(version) >= release_key(ATTENTION_OPTIONS_FROM)
    if (option or nested) and not has_options:
        given = "--attention-backend" if option else "--attention-config's backend"
        raise BadInput(
            f"--vllm-args: {given} does not exist in vLLM {version} (added in "
            f"{ATTENTION_OPTIONS_FROM}); that release reads VLLM_ATTENTION_BACKEND=NAME before "
            "`vllm serve`"
        )
    if env is not None and release_key(version) >= release_key(ATTENTION_ENV_DROPPED_IN):
        notes.append(
            f"VLLM_ATTENTION_BACKEND is not read by vLLM {version} (vllm/envs.py dropped it in "
            f"{ATTENTION_ENV_DROPPED_IN}; use --attention-backend): vLLM ignores it"
        )
        env = None
    elif env is not None:
        env, how = env_backend_name(version, env)
        notes += [how] if how else []
        if has_options:
            notes.append(f"vLLM logs a WARNING: {ATTENTION_ENV_DEPRECATION}")
            nested = env or nested  # the variable overrides attention_config.backend
    if option and nested:
        raise BadInput(
            f"--vllm-args: vLLM {version} refuses to start: ValueError: attention_backend and "
            "attention_config.backend are mutually exclusive"
            + (" (VLLM_ATTENTION_BACKEND sets attention_config.backend)" if env else "")
        )
    backend = option or nested or env
    if backend is not None and flag is not None:
        raise BadInput(
            f"--attention-backend {flag} and the --vllm-args line's attention backend {backend} "
            "are both given; drop --attention-backend"
        )
    return backend or flag, tuple(notes)
