"""How vLLM deploys a config: the model runner and the attention backend a release runs it on
(graphlab.sizing.model_runner, graphlab.sizing.attention), for audit and plan alike."""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphlab.errors import BadInput
from graphlab.sizing.attention import attention_support
from graphlab.sizing.batch_defaults import DEFAULT_DEVICE_TIER
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
    notes: tuple[str, ...]  # how the line's backend was read
    # What a result that does not name the runner and backend (plan's) prints beside it.
    said: tuple[str, ...]


def deploy(
    policy: SizingPolicy,
    version: str,
    cfg: SizingConfig,
    *,
    model_runner: str | None = None,
    backend: str | None = None,
    tier: str = DEFAULT_DEVICE_TIER,
    cg_support: str | None = None,
    notes: tuple[str, ...] = (),
) -> Deployment:
    """cfg as vLLM `version` deploys it: the model runner (`model_runner`, else cfg's) and the
    attention backend (`backend`, else vLLM's pick for device `tier`, with its FlashAttention
    version), reporting `cg_support` where it is given; `notes` say how the backend was read. Its
    `said`: the notes, then the runner where one was asked for (`model_runner` or cfg's), the
    backend where one was named or its support given, either where the backend lowers cfg's
    cudagraph_mode. BadInput for any of them on an engine without model runners (V0, the peers)."""
    if not hasattr(policy, "model_runners"):  # vLLM V1's engines alone have both
        if (model_runner or cfg.model_runner) != "auto":
            raise BadInput(f"--model-runner is vLLM V1's; engine {policy.name!r} has none")
        for flag, value in (
            ("--attention-backend", backend),
            ("--attention-cg-support", cg_support),
        ):
            if value is not None:
                raise BadInput(f"{flag} is vLLM V1's; engine {policy.name!r} has none")
        return Deployment(cfg, None, None, notes, notes)
    runs, runner = apply_model_runner(policy, version, model_runner, cfg)
    chosen, support, attention = attention_support(version, backend, tier, cg_support)
    runs = replace(runs, attention_cg_support=support, attention_backend=chosen)
    runs = replace(runs, flash_attn_version=FLASH_ATTN_VERSIONS[tier])
    lowered = policy.cudagraph_mode(runs) != policy.cudagraph_mode(cfg)
    said = list(notes)
    if model_runner is not None or cfg.model_runner != "auto" or lowered:
        said.append(f"model runner {runs.model_runner.upper()}: {runner}")
    if backend is not None or cg_support is not None or lowered:
        said.append(attention)
    return Deployment(runs, runner, attention, notes, tuple(said))


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
