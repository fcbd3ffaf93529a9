"""The attention backend a `vllm serve` line names: the NAME=VALUE environment words that lead it
(`VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve ...`) and its --attention-backend and
--attention-config options, as the installed vLLM's parser leaves them (graphlab.cli.serve_line
decides per release which of them vLLM reads)."""

from __future__ import annotations

import re


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
