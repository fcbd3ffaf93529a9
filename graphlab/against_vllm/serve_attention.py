"""The attention backend a `vllm serve` line names: the NAME=VALUE environment words that lead it
(`VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve ...`) and its --attention-backend and
--attention-config options, as the installed vLLM's parser leaves them, and which of them each
release reads (`line_backend`)."""

from __future__ import annotations

import re

from graphlab.errors import BadInput
from graphlab.sizing.attention_names import (
    ATTENTION_ENV_DEPRECATION,
    ATTENTION_ENV_DROPPED_IN,
    ATTENTION_OPTIONS_FROM,
    env_backend_name,
)
from graphlab.sizing.model_runner import release_key


def line_environment(words: list[str]) -> tuple[tuple[tuple[str, str], ...], list[str]]:
    """The leading shell assignments NAME=VALUE (after an optional `env`), and the words after."""
    start = 1 if words[:1] == ["env"] else 0
    end = start
    while end < len(words) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[end]):
        end += 1
    return tuple(tuple(w.split("=", 1)) for w in words[start:end]), words[end:]


def attention_backends(args) -> tuple[str | None, str | None]:
    """The backends the line's --attention-backend and --attention-config name (upper case)."""
    nested = getattr(getattr(args, "attention_config", None), "backend", None)
    named = (getattr(args, "attention_backend", None), getattr(nested, "name", nested))
    return tuple(None if value is None else str(value).upper() for value in named)


def line_backend(line, version: str, flag: str | None) -> tuple[str | None, tuple[str, ...]]:
    """(the attention backend the --vllm-args line (a ServeLine, None without one; serve_args
    builds it with this module's readers) gives vLLM `version`, else `flag`, the kit's
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
