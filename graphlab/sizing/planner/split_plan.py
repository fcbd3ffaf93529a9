"""A plan in vLLM 0.34.0's own capture settings.

0.34.0 deprecates cudagraph_capture_sizes and max_cudagraph_capture_size (a WARNING at start-up)
and combining them with its prefill / decode settings is a ValueError
(`VllmConfig._split_cudagraph_capture_sizes`, vllm/config/vllm.py, 0.34.0). A plan of uniform
decode steps of B*q tokens is therefore proposed as what 0.34.0 sizes them by: under a mode with
a separate FULL decode routine (FULL_AND_PIECEWISE, FULL_DECODE_ONLY) as
`decode_cudagraph_capture_request_sizes`, B = size / q requests per graph at query length q,
leaving the prefill graphs as they were; under PIECEWISE or FULL, where uniform decode batches run
on the prefill graphs by token count, as `prefill_cudagraph_capture_token_sizes`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphlab.sizing.config import SPLIT_CAPTURE_SETTINGS, SizingConfig
from graphlab.sizing.families import GraphFamilies
from graphlab.sizing.planner.result import compilation_with_sizes
from graphlab.sizing.v1_split import keeps_decode_graphs

# The deprecated settings the proposal drops (vLLM refuses them beside the split settings).
DEPRECATED = ("cudagraph_capture_sizes", "max_cudagraph_capture_size")
DECODE_SIZES = "decode_cudagraph_capture_request_sizes"
PREFILL_SIZES = "prefill_cudagraph_capture_token_sizes"


@dataclass(frozen=True)
class SplitProposal:
    """The settings a 0.34.0 user sets for a plan: the whole compilation config, and cfg with
    them set (to dispatch the plan as vLLM would)."""

    compilation: dict
    config: SizingConfig
    decode: bool  # the plan sizes decode graphs (requests); False: prefill graphs (tokens)


def plans_decode_graphs(policy, cfg: SizingConfig) -> bool:
    """Whether cfg's mode on 0.34.0 keeps decode graphs, the ones uniform decode steps replay."""
    return keeps_decode_graphs(policy.cudagraph_mode(cfg))


def planned_graphs(policy, cfg: SizingConfig, default: GraphFamilies) -> tuple[int, int | None]:
    """The graphs the plan sizes: (how many of them the default keeps, the most tokens one may
    hold below max_num_batched_tokens, else None). On 0.34.0 under a mode with decode graphs:
    its decode graphs (of `default`, the default's families), at most their token limit and S
    requests (vLLM drops request counts above max_num_seqs); else the capture list (0.34.0: the
    prefill graphs)."""
    if policy.splits_capture_sizes and plans_decode_graphs(policy, cfg):
        limit = min(policy.decode_token_limit(cfg), cfg.max_num_seqs * cfg.decode_query_len)
        return len(default.full_graphs) or 1, limit
    return len(policy.capture_sizes(cfg)), None


def split_proposal(policy, cfg: SizingConfig, user: dict | None, sizes) -> SplitProposal:
    """The user's compilation config (or cfg's mode and split settings without one) with the
    deprecated settings dropped and the plan's sizes set as 0.34.0 counts them. Where the
    deprecated list set the prefill graphs, they are kept as `prefill_cudagraph_capture_token_sizes`
    (the sizes vLLM resolved from it), so that only the planned graphs change."""
    q, sizes = cfg.decode_query_len, [int(s) for s in sizes]
    out = {name: _json(value) for name, value in cfg.split_capture_settings.items()}
    if user is None and cfg.cudagraph_mode is not None:
        out["cudagraph_mode"] = cfg.cudagraph_mode
    out |= {k: v for k, v in (user or {}).items() if k not in DEPRECATED}
    decode = plans_decode_graphs(policy, cfg)
    if decode:
        legacy = (
            cfg.cudagraph_capture_sizes is not None or cfg.max_cudagraph_capture_size is not None
        )
        if legacy and PREFILL_SIZES not in out:
            out[PREFILL_SIZES] = list(policy.capture_sizes(cfg))
        out.pop("max_decode_cudagraph_capture_requests", None)  # the list sets its maximum
        out[DECODE_SIZES] = [s // q for s in sizes]
    else:
        out.pop("max_prefill_cudagraph_capture_tokens", None)
        out[PREFILL_SIZES] = sizes
    settings = {name: _config_value(out.get(name)) for name in SPLIT_CAPTURE_SETTINGS}
    proposed = replace(
        cfg, cudagraph_capture_sizes=None, max_cudagraph_capture_size=None, **settings
    )
    return SplitProposal(out, proposed, decode)


def _json(value):
    """A SizingConfig value as JSON holds it (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


def _config_value(value):
    """A JSON value as a SizingConfig field holds it (a list as a tuple)."""
    return tuple(value) if isinstance(value, list) else value


def log_compilation(policy, cfg: SizingConfig, user: dict | None, sizes) -> dict:
    """The compilation config for a capture list planned from a log (graphlab.sizing.planner.
    log_plan plans one list for both families): on 0.34.0 that list's graphs in 0.34.0's own
    settings (`Vllm034.split_settings`), the deprecated ones dropped; before, and where only the
    deprecated list gives those graphs, the list itself."""
    listed = replace(cfg, cudagraph_capture_sizes=tuple(int(s) for s in sizes))
    listed = replace(listed, max_cudagraph_capture_size=None)
    own = policy.split_settings(listed) if policy.splits_capture_sizes else None
    if own is None:  # before 0.34.0, or a list only the deprecated setting expresses
        return compilation_with_sizes(user, cfg.cudagraph_mode, sizes)
    out = (
        {}
        if user is not None or cfg.cudagraph_mode is None
        else {"cudagraph_mode": cfg.cudagraph_mode}
    )
    out |= {k: v for k, v in (user or {}).items() if k not in DEPRECATED}
    return out | own
