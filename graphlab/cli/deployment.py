"""How vLLM deploys a config: the model runner and the attention backend a release runs it on,
applied alike by `audit` and `plan` (graphlab.sizing.model_runner, graphlab.sizing.attention)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphlab.cli.serve_line import line_attention_backend
from graphlab.errors import GraphlabError
from graphlab.sizing.attention import attention_support
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

    def said(self, policy: SizingPolicy, cfg: SizingConfig, asked_runner: bool) -> tuple[str, ...]:
        """The sentences a result that does not name the runner and backend (plan's) prints
        beside it: the runner where one was asked for (asked_runner or cfg's), the backend where
        one was named, either where the backend lowers cfg's cudagraph_mode."""
        lowered = policy.cudagraph_mode(self.config) != policy.cudagraph_mode(cfg)
        notes = list(self.notes)
        if self.model_runner is not None and (
            asked_runner or cfg.model_runner != "auto" or lowered
        ):
            notes.append(f"model runner {self.config.model_runner.upper()}: {self.model_runner}")
        if self.attention is not None and (self.backend is not None or lowered):
            notes.append(self.attention)
        return tuple(notes)


def deployed(args, policy: SizingPolicy, version: str, cfg: SizingConfig, line) -> Deployment:
    """cfg as vLLM `version` deploys it: the model runner (--model-runner, else cfg's) and the
    attention backend (the --vllm-args line's, else --attention-backend, else vLLM's pick for
    --device-tier)."""
    backend, notes = line_attention_backend(line, version, args.attention_backend)
    cfg, runner = apply_model_runner(policy, version, args.model_runner, cfg)
    cfg, attention = apply_attention_backend(policy, version, backend, args.device_tier, cfg)
    return Deployment(cfg, runner, attention, backend, notes)


def apply_attention_backend(
    policy: SizingPolicy, version: str, backend: str | None, device_tier: str, cfg: SizingConfig
) -> tuple[SizingConfig, str | None]:
    """cfg with the attention backend's support level (`backend`, else vLLM's default on
    device_tier), and the sentence that says which (None for engines without one)."""
    if not hasattr(policy, "model_runners"):
        if backend is not None:
            raise GraphlabError(
                f"--attention-backend is vLLM V1's; engine {policy.name!r} has none"
            )
        return cfg, None
    backend, support, why = attention_support(version, backend, device_tier)
    fa = FLASH_ATTN_VERSIONS[device_tier]
    cfg = replace(cfg, attention_cg_support=support, attention_backend=backend)
    return replace(cfg, flash_attn_version=fa), why


def apply_model_runner(
    policy: SizingPolicy, version: str, model_runner: str | None, cfg: SizingConfig
) -> tuple[SizingConfig, str | None]:
    """cfg with the model runner the release runs it on (`model_runner`, else cfg's), and why
    that one (None for engines without model runners); GraphlabError naming the release and the
    reason where the kit does not model that runner of it."""
    requested = model_runner or cfg.model_runner
    if not hasattr(policy, "model_runners"):
        if requested != "auto":
            raise GraphlabError(f"--model-runner is vLLM V1's; engine {policy.name!r} has none")
        return cfg, None
    runner, why = choose_model_runner(
        version,
        requested,
        cfg.speculative_method,
        cfg.num_speculative_tokens_per_batch_size is not None,
    )
    if runner not in policy.model_runners:
        raise GraphlabError(
            f"vLLM {version}: model runner {runner.upper()} is not modelled ({why}); "
            f"{policy.unmodelled_runner}"
        )
    # to 0.11.0 a chosen "v1" would read as VLLM_USE_V1=1 (graphlab.sizing.v1_early): auto stays
    keep = requested == "auto" and release_key(version) <= release_key(V0_FALLBACK_UNTIL)
    return replace(cfg, model_runner="auto" if keep else runner), why
