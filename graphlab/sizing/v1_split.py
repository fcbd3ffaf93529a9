"""vLLM 0.34.0: model runner V2 alone, with the capture list split into prefill graphs keyed by
token count and decode graphs keyed by request count per query length
(`VllmConfig._split_cudagraph_capture_sizes`; data/vllm_sizing_vectors_0_34_0.json)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from graphlab.errors import BadInput, GraphlabError
from graphlab.sizing.capture_settings import (
    decode_capture_shapes,
    decode_request_grid,
    prefill_token_grid,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, CUDAGraphMode
from graphlab.sizing.families import (
    Candidates,
    GraphFamilies,
)
from graphlab.sizing.model_runner import choose_model_runner
from graphlab.sizing.policy import (
    DEFAULT_GRAPH_CEILING,
)
from graphlab.sizing.v1_releases import Vllm033

# 0.34.0 on data-center Blackwell: the prefill graphs' and the decode graphs' token ceiling.
_WIDE_MAX_TOKENS = 8192
# The methods whose one-token draft decodes take the request grid up to S (0.34.0's
# `get_draft_decode_cudagraph_request_sizes`; single-module MTP assumed).
_GRID_DRAFTERS = ("eagle", "eagle3", "mtp", "draft_model")
# `_split_cudagraph_capture_sizes`' refusal of both kinds of settings at once.
_COMBINED_SIZES = (
    "The deprecated cudagraph_capture_sizes and max_cudagraph_capture_size cannot be combined "
    "with the prefill and decode CUDA graph capture sizes; set only the latter."
)


def keeps_decode_graphs(mode: CUDAGraphMode) -> bool:
    """Whether a CudaGraphManager under `mode` captures decode graphs keyed by request count (a
    separate FULL decode routine: FULL_DECODE_ONLY, FULL_AND_PIECEWISE); other modes run uniform
    decode batches on the prefill graphs by token count."""
    return mode.separate_routine() and mode.decode_mode() is BatchPath.FULL


@dataclass(frozen=True)
class _Split:
    """What `_split_cudagraph_capture_sizes` resolves for one config."""

    prefill: tuple[int, ...]  # prefill graphs' token counts
    shapes: tuple[tuple[int, int], ...]  # decode graphs' (requests, query length)
    recorded: tuple[int, ...]  # the cudagraph_capture_sizes it records
    warnings: tuple[str, ...]
    error: str | None  # the ValueError vLLM raises at start-up, if any
    requests: tuple[int, ...] = ()  # decode_cudagraph_capture_request_sizes as resolved
    budget: int | None = None  # max_decode_cudagraph_capture_tokens as resolved


def _explicit(sizes, limit: int, cap: int | None, name: str, cap_name: str, warnings: list):
    """`_split_cudagraph_capture_sizes`' `explicit`: user sizes kept within [1, limit] (a WARNING
    names those dropped), GraphlabError above the cap; None where unset."""
    if sizes is None:
        return None
    kept = sorted({s for s in sizes if 1 <= s <= limit})
    if len(kept) < len(set(sizes)):
        warnings.append(
            f"Dropping {sorted(set(sizes) - set(kept))} from {name}: outside [1, {limit}]."
        )
    if cap is not None and kept and kept[-1] > cap:
        raise BadInput(f"{name} holds {kept[-1]}, above {cap_name}={cap}.")
    return kept


# `_split_cudagraph_capture_sizes`' WARNING where the deprecated capture settings are used.
_DEPRECATED_SIZES = (
    "cudagraph_capture_sizes and max_cudagraph_capture_size are deprecated. Set the token counts "
    "of prefill CUDA graphs with prefill_cudagraph_capture_token_sizes or "
    "max_prefill_cudagraph_capture_tokens, and the request counts of decode CUDA graphs with "
    "decode_cudagraph_capture_request_sizes or max_decode_cudagraph_capture_requests."
)


class Vllm034(Vllm033):
    """vllm 0.34.0: model runner V2 alone (model runner V1 removed). `_set_cudagraph_sizes` makes
    0.33.0's list, then `_split_cudagraph_capture_sizes` (vllm/config/vllm.py) splits it:
    prefill graphs (every batch that is not uniform decode) at its token counts, and decode graphs
    keyed by request count, min(ceil(s / L), S) for each size s and query length L with
    ceil(s / L) * L <= the largest size. On data-center Blackwell without the deprecated settings
    the defaults widen instead: prefill graphs on `prefill_cudagraph_capture_grid` up to
    min(8192, T), decode graphs on `decode_cudagraph_capture_grid` up to S within 8192 tokens
    (the 1024-token ceiling of 0.33.0 still makes the list the split starts from).
    `decode_cudagraph_capture_shapes` keeps per L the request counts up to min(the most requests
    running at L, tokens // L), the first one above captured at that limit. `CudaGraphManager.
    dispatch` (vllm/v1/worker/gpu/cudagraph_utils.py) gives a uniform batch the smallest decode
    graph of its own query length that holds its requests, else the smallest prefill graph
    >= n (Candidates.BY_QUERY_LEN). `resolve_cudagraph_mode_and_sizes` no longer rounds: it lowers
    the mode to the attention backend's support as 0.33.0 does; its kv_cache_config and
    max_num_reqs only refuse a Mamba model with fewer cache blocks than max_num_seqs, and
    piecewise_capture_available (False only for a model with neither a compiled submodule nor
    breakable graphs) drops PIECEWISE parts: the kit assumes a compiled, non-Mamba model.
    The five new settings (SizingConfig's SPLIT_CAPTURE_SETTINGS) replace the split's sources
    where set, as `_split_cudagraph_capture_sizes` reads them. Not modelled: adaptive
    verification (varlen decode graphs), LoRA, microbatching and the drafter."""

    name = "vllm-0.34.0"
    release = "0.34.0"
    model_runners = ("v2",)
    unmodelled_runner = "vLLM 0.34.0 has model runner V2 only"
    v2_candidates = Candidates.BY_QUERY_LEN
    splits_capture_sizes = True

    def model_runner(self, cfg: SizingConfig) -> tuple[str, str]:
        """("v2", why); GraphlabError for --model-runner v1, which vLLM 0.34.0 refuses."""
        runner, why = choose_model_runner(self.release, cfg.model_runner, cfg.speculative_method)
        if runner != "v2":
            raise BadInput(f"{self.name}: {why}")
        return runner, why

    def sizing_key(self, cfg):
        return (
            *super().sizing_key(cfg),
            cfg.speculative_method,
            *cfg.split_capture_settings.items(),
        )

    def _legacy_sizes(self, cfg: SizingConfig) -> bool:
        """Whether the deprecated cudagraph_capture_sizes / max_cudagraph_capture_size is set."""
        return cfg.cudagraph_capture_sizes is not None or cfg.max_cudagraph_capture_size is not None

    def _wide_defaults(self, cfg: SizingConfig) -> bool:
        """Data-center Blackwell without the deprecated settings: the wider default grids."""
        return self.default_max_graph_size > DEFAULT_GRAPH_CEILING and not self._legacy_sizes(cfg)

    def _decode_budget(self, cfg: SizingConfig) -> int | None:
        """max_decode_cudagraph_capture_tokens as resolved (8192 under the wide defaults)."""
        wide = _WIDE_MAX_TOKENS if self._wide_defaults(cfg) else None
        return cfg.max_decode_cudagraph_capture_tokens or wide

    def decode_token_limit(self, cfg: SizingConfig) -> int:
        """The most tokens a decode graph of cfg holds: max_num_batched_tokens within the decode
        token budget (`_split_cudagraph_capture_sizes`' decode_max_tokens)."""
        tokens = self.effective_max_num_batched_tokens(cfg)
        return min(tokens, self._decode_budget(cfg) or tokens)

    def _split(self, cfg: SizingConfig) -> _Split:
        """`_split_cudagraph_capture_sizes` of cfg (vllm/config/vllm.py), cached like the capture
        sizes."""
        key = ("split", self.sizing_key(cfg))
        if key not in self._cache:
            shared, _, error = self._configured(cfg)
            self._cache[key] = (
                _Split((), (), (), (), error) if error or not shared else self._resolve(cfg, shared)
            )
        return self._cache[key]

    def _resolve(self, cfg: SizingConfig, shared: list[int]) -> _Split:
        tokens, seqs = self.effective_max_num_batched_tokens(cfg), cfg.max_num_seqs
        tiers = dict(cfg.decode_tiers)  # get_decode_cudagraph_query_lens
        legacy = self._legacy_sizes(cfg)
        # `uses_split_sizes`: the decode token budget alone does not count
        split = set(cfg.split_capture_settings) - {"max_decode_cudagraph_capture_tokens"}
        wide = self._wide_defaults(cfg)
        budget = self._decode_budget(cfg)
        warnings = [_DEPRECATED_SIZES] if legacy and not split else []
        try:
            prefill = _explicit(
                cfg.prefill_cudagraph_capture_token_sizes,
                tokens,
                cfg.max_prefill_cudagraph_capture_tokens,
                "prefill_cudagraph_capture_token_sizes",
                "max_prefill_cudagraph_capture_tokens",
                warnings,
            )
            requests = _explicit(
                cfg.decode_cudagraph_capture_request_sizes,
                seqs,
                cfg.max_decode_cudagraph_capture_requests,
                "decode_cudagraph_capture_request_sizes",
                "max_decode_cudagraph_capture_requests",
                warnings,
            )
        except GraphlabError as refused:
            return _Split((), (), (), tuple(warnings), f"ValueError: {refused}")
        if prefill is None and (cfg.max_prefill_cudagraph_capture_tokens is not None or wide):
            most = cfg.max_prefill_cudagraph_capture_tokens
            most = _WIDE_MAX_TOKENS if most is None else most
            prefill = prefill_token_grid(min(most, tokens), cfg.performance_mode == "interactivity")
        elif prefill is None:
            prefill = shared
        if requests is None and (cfg.max_decode_cudagraph_capture_requests is not None or wide):
            most = cfg.max_decode_cudagraph_capture_requests
            requests = decode_request_grid(seqs if most is None else min(most, seqs))
        elif requests is None:
            # the request counts each query length rounds the shared sizes up to, within them
            requests = {
                min(-(-s // q), seqs) for s in shared for q in tiers if -(-s // q) * q <= shared[-1]
            }
        decode_tokens = self.decode_token_limit(cfg)
        shapes = decode_capture_shapes(requests, tiers, decode_tokens)
        decode = {n * q for n, q in shapes}
        if (
            requests
            and cfg.num_speculative_tokens >= 2
            and cfg.speculative_method in _GRID_DRAFTERS
        ):
            drafts = decode_capture_shapes(decode_request_grid(seqs), {1: seqs}, decode_tokens)
            decode |= {n for n, _ in drafts}
        requested = CUDAGraphMode(cfg.cudagraph_mode or self.default_cudagraph_mode)
        with_prefill = (legacy and not split) or requested.mixed_mode()
        recorded = decode | set(prefill) if with_prefill else decode
        if legacy and split:
            # only a config resolved before (its list already the split's) passes
            if list(shared) not in (sorted(decode | set(prefill)), sorted(decode)):
                return _Split((), (), (), tuple(warnings), f"ValueError: {_COMBINED_SIZES}")
            recorded = set(shared)
        return _Split(
            tuple(prefill),
            tuple(shapes),
            tuple(sorted(recorded)),
            tuple(warnings),
            None,
            tuple(sorted(requests)),
            budget,
        )

    def split_settings(self, cfg: SizingConfig) -> dict | None:
        """0.34.0's own settings that give cfg's graphs without the deprecated ones: the prefill
        token sizes and decode request counts `_split_cudagraph_capture_sizes` resolved, and the
        decode token budget where dropping the deprecated settings would narrow it (8192 on
        data-center Blackwell). None where no such settings do: a mode without prefill graphs
        lowered to one with them and no decode graph left, whose recorded list the deprecated
        list alone keeps non-empty."""
        split, tokens = self._split(cfg), self.effective_max_num_batched_tokens(cfg)
        out = {
            "prefill_cudagraph_capture_token_sizes": list(split.prefill),
            "decode_cudagraph_capture_request_sizes": list(split.requests),
        }
        without = replace(cfg, cudagraph_capture_sizes=None, max_cudagraph_capture_size=None)
        if self.decode_token_limit(without) < self.decode_token_limit(cfg):
            out["max_decode_cudagraph_capture_tokens"] = tokens
        own = replace(without, **{name: tuple(v) if isinstance(v, list) else v
                                  for name, v in out.items()})  # fmt: skip
        return out if self.split_families(own) == self.split_families(cfg) else None

    def decode_request_sizes(self, cfg: SizingConfig) -> list[int]:
        """The decode graphs' request counts (decode_cudagraph_capture_request_sizes, resolved)."""
        return list(self._split(cfg).requests)

    def recorded_capture_sizes(self, cfg: SizingConfig) -> list[int]:
        """The cudagraph_capture_sizes vLLM records (and logs) after the split: every decode
        graph's tokens, the one-token draft decodes' request grid up to S (EAGLE, EAGLE-3, MTP,
        draft_model with k >= 2: `get_draft_decode_cudagraph_request_sizes`), and the prefill
        sizes unless the mode has no mixed graphs and the deprecated settings are unset."""
        return list(self._split(cfg).recorded)

    def split_families(self, cfg: SizingConfig, capture_sizes=None) -> GraphFamilies:
        """cfg's graphs (or, given another list than cfg's `capture_sizes`, those of that list set
        as the deprecated cudagraph_capture_sizes): decode graphs where the mode keeps a separate
        decode routine, prefill graphs in its mixed mode."""
        own = (list(self.capture_sizes(cfg)), self.recorded_capture_sizes(cfg))
        if capture_sizes is not None and list(capture_sizes) not in own:
            cfg = replace(
                cfg,
                cudagraph_capture_sizes=tuple(int(s) for s in capture_sizes),
                max_cudagraph_capture_size=None,
            )
        return self._families(cfg, self.cudagraph_mode(cfg), self._split(cfg).shapes)

    def speculator_families(
        self,
        cfg: SizingConfig,
        query_len: int,
        mode: CUDAGraphMode,
        request_sizes=None,
        tiers: dict[int, int] | None = None,
    ) -> GraphFamilies:
        """The graphs of a drafter's `CudaGraphManager` on cfg (vllm/v1/worker/gpu/spec_decode/):
        `mode`, uniform decode batches of `query_len` tokens per request up to S requests (or of
        each query length of `tiers` up to its widest batch), the target's decode request sizes
        (or `request_sizes`), capped by the recorded largest size
        (`decode_cudagraph_capture_max_tokens`), and the target's prefill sizes."""
        split = self._split(cfg)
        requests = split.requests if request_sizes is None else request_sizes
        most = min(max(split.recorded, default=0), split.budget or max(split.recorded, default=0))
        shapes = decode_capture_shapes(requests, tiers or {query_len: cfg.max_num_seqs}, most)
        return self._families(cfg, mode, shapes)

    def _families(self, cfg: SizingConfig, mode: CUDAGraphMode, shapes) -> GraphFamilies:
        """A CudaGraphManager's graphs under `mode`: decode graphs at `shapes` (requests, query
        length) where the mode keeps a separate decode routine, prefill graphs in its mixed mode."""
        split = self._split(cfg)
        graphs = tuple(sorted((n * q, q) for n, q in shapes)) if keeps_decode_graphs(mode) else ()
        mixed = tuple(split.prefill) if mode.mixed_mode() else ()
        # no sizes recorded at all: vLLM sets cudagraph_mode NONE; or none of this mode's kinds
        if split.error or self._lowered(cfg)[2] or not (split.recorded and (graphs or mixed)):
            return GraphFamilies(CUDAGraphMode.NONE, (), (), None, 0)
        return GraphFamilies(
            mode,
            tuple(sorted({n for n, _ in graphs})),
            mixed,
            mode.mixed_mode(),
            max((*mixed, *(n for n, _ in graphs))),
            full_graphs=graphs,
            candidates=Candidates.BY_QUERY_LEN,
        )

    def _compute_capture_sizes(self, cfg):
        # the prefill graphs' token counts: 0.34.0's list for every batch but uniform decode
        return [] if self._lowered(cfg)[0] is CUDAGraphMode.NONE else list(self._split(cfg).prefill)

    def sizing_warnings(self, cfg):
        return super().sizing_warnings(cfg) + self._split(cfg).warnings

    def startup_error(self, cfg):
        tokens = self.effective_max_num_batched_tokens(cfg)
        if tokens < cfg.max_num_seqs:  # vllm/config/scheduler.py, SchedulerConfig validation
            return super().startup_error(cfg)
        return self._split(cfg).error or self._lowered(cfg)[2]
