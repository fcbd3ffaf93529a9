"""Dynamic speculation (speculative_config.num_speculative_tokens_per_batch_size) against the
installed vLLM's own functions: the scheduler's k per batch size
(vllm/v1/spec_decode/dynamic/utils.py `build_dynamic_sd_schedule_lookup`), the capture sizes
(vllm/config/vllm.py `_set_cudagraph_sizes`), model runner V2's FULL graphs and dispatch
(vllm/v1/worker/gpu/cudagraph_utils.py `CudaGraphManager._init_candidates` and `dispatch`), model
runner V1's mode override (`_maybe_override_dynamic_sd_cudagraph_mode`) and the schedule's
validation, all on stand-in objects holding only what they read.
"""

import random
from types import SimpleNamespace as ns

import numpy as np
import pytest
from helpers import random_schedule

from graphlab.against_vllm.cudagraph_stats import vllm_graph_manager
from graphlab.against_vllm.installed import installed_capture_sizes, quiet_vllm_import
from graphlab.errors import BadInput, GraphlabError
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, graph_families, verify_batches
from graphlab.sizing.engines import ENGINES, get_engine
from graphlab.sizing.model_runner import release_key

ENGINE = "vllm-0.33.0"
# The issue's worked example: batch sizes 1-32 speculate 4 tokens, 33-128 speculate 1.
ISSUE_SCHEDULE = ((1, 32, 4), (33, 128, 1))
V2_MODES = ("FULL_AND_PIECEWISE", "FULL_DECODE_ONLY", "FULL", "PIECEWISE")


@pytest.fixture(scope="module")
def vllm_dynamic():
    try:
        quiet_vllm_import()
        from vllm.config.vllm import VllmConfig
        from vllm.v1.spec_decode.dynamic import utils
    except ImportError as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"vllm is not importable: {error}")
    return utils, VllmConfig


def _configs(count=40, seed=47):
    rng = random.Random(seed)
    configs = []
    for _ in range(count):
        seqs, k = rng.choice([1, 3, 8, 24, 64, 128, 200, 256]), rng.randint(1, 7)
        sizes = None
        if rng.random() < 0.25:  # user-set capture sizes as well
            sizes = tuple(rng.sample(range(1, 600), rng.randint(1, 12)))
        configs.append(
            SizingConfig(
                seqs,
                k,
                cudagraph_capture_sizes=sizes,
                cudagraph_mode=rng.choice(V2_MODES),
                model_runner="v2",
                num_speculative_tokens_per_batch_size=random_schedule(rng, seqs, k),
            )
        )
    return configs


CONFIGS = _configs()


def _vllm_graphs(cfg):
    """vLLM's own manager for cfg: (its FULL graphs as (tokens, query length), the manager)."""
    mode = get_engine(ENGINE).cudagraph_mode(cfg)
    sizes = installed_capture_sizes(cfg)
    manager = vllm_graph_manager(
        cfg.max_num_seqs,
        cfg.decode_query_len,
        sizes,
        mode,
        [list(e) for e in cfg.num_speculative_tokens_per_batch_size],
    )
    from vllm.config.compilation import CUDAGraphMode as VllmMode

    # uniform-decode FULL graphs only: plain FULL's mixed graphs take any batch
    full = manager._capture_descs.get(VllmMode.FULL, [])
    graphs = sorted({(d.num_tokens, d.uniform_token_count) for d in full if d.uniform_token_count})
    return graphs, manager, VllmMode


def test_enough_configs_with_several_query_lengths():
    tiers = [len(cfg.decode_tiers) for cfg in CONFIGS]
    assert len(CONFIGS) >= 40 and sum(t > 1 for t in tiers) >= 20


@pytest.mark.vllm
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: str(c.num_speculative_tokens_per_batch_size))
def test_k_per_batch_size_is_the_schedulers(vllm_dynamic, cfg):
    utils, _ = vllm_dynamic
    schedule = [list(e) for e in cfg.num_speculative_tokens_per_batch_size]
    dense = utils.build_dynamic_sd_schedule_lookup(
        schedule, cfg.max_num_seqs, cfg.num_speculative_tokens
    )
    kit = cfg.verify_query_lens(np.arange(1, cfg.max_num_seqs + 1)) - 1
    assert kit.tolist() == dense[1:]


@pytest.mark.vllm
@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: str(c.num_speculative_tokens_per_batch_size))
def test_capture_sizes_full_graphs_and_verify_batches_are_vllms(vllm_dynamic, cfg):
    utils, _ = vllm_dynamic
    policy = get_engine(ENGINE)
    assert policy.capture_sizes(cfg) == installed_capture_sizes(cfg)
    graphs, manager, modes = _vllm_graphs(cfg)
    assert list(graph_families(ENGINE, cfg).full_graphs) == graphs
    dense = utils.build_dynamic_sd_schedule_lookup(
        [list(e) for e in cfg.num_speculative_tokens_per_batch_size],
        cfg.max_num_seqs,
        cfg.num_speculative_tokens,
    )
    for row in verify_batches(ENGINE, cfg):
        reqs, query_len = row["num_reqs"], 1 + dense[row["num_reqs"]]
        assert row["query_len"] == query_len
        desc = manager.dispatch(reqs, reqs * query_len, query_len, 0)
        path = "eager" if desc.cg_mode == modes.NONE else desc.cg_mode.name.lower()
        graph = None if desc.cg_mode == modes.NONE else desc.num_tokens
        assert (row["path"], row["graph_size"]) == (path, graph), row


@pytest.mark.vllm
def test_issue_worked_example_is_what_vllms_code_gives(vllm_dynamic):
    # S = 128, [[1,32,4],[33,128,1]]: vLLM captures 85 FULL graphs, 48 at query length 5 and 37
    # at 2, and every verify batch replays a graph; 29 of them find no FULL graph at their query
    # length in the smallest FULL size above them and replay a PIECEWISE one.
    cfg = SizingConfig(128, 4, num_speculative_tokens_per_batch_size=ISSUE_SCHEDULE)
    graphs, manager, modes = _vllm_graphs(cfg)
    by_len = {q: sum(1 for _, length in graphs if length == q) for q in (2, 5)}
    assert (len(graphs), by_len) == (85, {2: 37, 5: 48})
    families = graph_families(ENGINE, cfg)
    assert {q: len(families.full_sizes_at(q)) for q in families.full_query_lens} == by_len
    rows = verify_batches(ENGINE, cfg)
    vllm_paths = [
        manager.dispatch(m, m * q, q, 0).cg_mode.name.lower()
        for m, q in ((r["num_reqs"], r["query_len"]) for r in rows)
    ]
    assert [r["path"] for r in rows] == vllm_paths
    assert "none" not in vllm_paths
    assert (vllm_paths.count("full"), vllm_paths.count("piecewise")) == (99, 29)
    report = audit(ENGINE, cfg)
    assert report.summary.num_eager == 0 and report.summary.num_graph == 128


@pytest.mark.vllm
@pytest.mark.parametrize("requested", V2_MODES + ("NONE",))
def test_model_runner_v1_runs_the_mode_vllm_overrides_to(vllm_dynamic, monkeypatch, requested):
    _, VllmConfig = vllm_dynamic
    import vllm.config.vllm as vllm_module
    from vllm.config.compilation import CUDAGraphMode as VllmMode

    logged = []
    monkeypatch.setattr(
        vllm_module, "logger", ns(warning_once=lambda msg, *args: logged.append(msg % args))
    )
    stand_in = ns(
        speculative_config=ns(uses_dynamic_speculative_decoding=lambda: True),
        compilation_config=ns(cudagraph_mode=VllmMode[requested]),
        use_v2_model_runner=False,
    )
    VllmConfig._maybe_override_dynamic_sd_cudagraph_mode(stand_in)
    cfg = SizingConfig(
        64,
        3,
        cudagraph_mode=requested,
        model_runner="v1",
        num_speculative_tokens_per_batch_size=((1, 16, 3), (17, 64, 1)),
    )
    for engine in ("vllm-0.33.0", "vllm-0.31.0"):
        policy = get_engine(engine)
        assert policy.cudagraph_mode(cfg) == stand_in.compilation_config.cudagraph_mode.name
        assert list(policy.sizing_warnings(cfg)) == logged
        assert graph_families(engine, cfg).full_sizes == ()


@pytest.mark.vllm
def test_model_runner_v2_keeps_its_full_graphs(vllm_dynamic, monkeypatch):
    _, VllmConfig = vllm_dynamic
    from vllm.config.compilation import CUDAGraphMode as VllmMode

    stand_in = ns(
        speculative_config=ns(uses_dynamic_speculative_decoding=lambda: True),
        compilation_config=ns(cudagraph_mode=VllmMode.FULL_AND_PIECEWISE),
        use_v2_model_runner=True,
    )
    VllmConfig._maybe_override_dynamic_sd_cudagraph_mode(stand_in)
    cfg = SizingConfig(64, 3, num_speculative_tokens_per_batch_size=((1, 64, 2),))
    assert get_engine(ENGINE).cudagraph_mode(cfg) == stand_in.compilation_config.cudagraph_mode.name
    assert get_engine(ENGINE).sizing_warnings(cfg) == ()


BAD_SCHEDULES = [
    [],
    [[1, 32, 4], [30, 128, 1]],  # overlapping
    [[1, 32, 4], [32, 128, 1]],  # 32 in both ranges
    [[2, 32, 4]],  # does not start at 1
    [[1, 0, 4]],  # not positive
    [[0, 4, 4]],
    [[5, 3, 1], [1, 2, 1]],  # start above end
    [[1, 8, -1]],  # negative k
    [[1, 8]],  # not a triple
    [[1, 8, 2, 4]],
    "1-8:2",
]


@pytest.mark.vllm
@pytest.mark.parametrize("schedule", BAD_SCHEDULES, ids=str)
def test_bad_schedules_vllm_refuses_are_one_line_errors(vllm_dynamic, schedule):
    utils, _ = vllm_dynamic
    with pytest.raises(ValueError):
        utils.build_dynamic_sd_schedule_lookup(schedule, 128, 4)
    with pytest.raises(BadInput) as error:
        SizingConfig(128, 4, num_speculative_tokens_per_batch_size=schedule)
    assert "\n" not in str(error.value) and "num_speculative_tokens_per_batch_size" in str(
        error.value
    )


@pytest.mark.vllm
def test_a_schedule_without_speculation_is_refused_as_vllm_does(vllm_dynamic):
    utils, _ = vllm_dynamic
    with pytest.raises(ValueError, match="vllm_num_speculative_tokens must be > 0"):
        utils.build_dynamic_sd_schedule_lookup([[1, 8, 2]], 8, 0)
    with pytest.raises(BadInput, match="needs num_speculative_tokens > 0"):
        SizingConfig(8, 0, num_speculative_tokens_per_batch_size=[[1, 8, 2]])


def test_the_schedule_is_kept_sorted_and_hashable():
    cfg = SizingConfig(128, 4, num_speculative_tokens_per_batch_size=[[33, 128, 1], [1, 32, 4]])
    assert cfg.num_speculative_tokens_per_batch_size == ISSUE_SCHEDULE
    assert hash(cfg) == hash(
        SizingConfig(128, 4, num_speculative_tokens_per_batch_size=ISSUE_SCHEDULE)
    )


@pytest.mark.parametrize(
    "engine",
    [name for name, policy in ENGINES.items() if not policy.models_dynamic_speculation],
)
def test_engines_without_the_option_name_the_release_that_added_it(engine):
    cfg = SizingConfig(8, 2, num_speculative_tokens_per_batch_size=((1, 8, 1),))
    with pytest.raises(GraphlabError, match=r"vLLM added it in 0\.24\.0 \(PR 32374\)") as error:
        get_engine(engine).capture_sizes(cfg)
    assert "\n" not in str(error.value)


def test_dynamic_engines_are_every_release_from_0_24_0():
    # their wheels' own code: tests/sizing/test_dynamic_vectors.py (0.34.0: test_vllm_0_34_0.py)
    assert sorted(
        release_key(p.release) for p in ENGINES.values() if p.models_dynamic_speculation
    ) == [
        release_key(r)
        for r in ("0.24.0", "0.25.0", "0.26.0", "0.29.0", "0.31.0", "0.33.0", "0.34.0")
    ]
    for name, policy in ENGINES.items():
        if getattr(policy, "release", None):
            dynamic = release_key(policy.release) >= release_key("0.24.0")
            assert policy.models_dynamic_speculation == dynamic, name


def test_uniform_batches_need_their_query_length_where_full_graphs_have_several():
    cfg = SizingConfig(128, 4, num_speculative_tokens_per_batch_size=ISSUE_SCHEDULE)
    families = graph_families(ENGINE, cfg)
    with pytest.raises(GraphlabError, match=r"query lengths \(2, 5\)"):
        families.dispatch_batches([10])


def test_the_planner_refuses_a_schedule_it_does_not_model():
    from graphlab.sizing.planner.plan import plan

    cfg = SizingConfig(128, 4, num_speculative_tokens_per_batch_size=ISSUE_SCHEDULE)
    with pytest.raises(GraphlabError, match="plan does not model num_speculative_tokens_per"):
        plan(ENGINE, cfg)


def test_a_uniform_batch_of_a_query_length_no_full_graph_has_takes_no_full_graph():
    # 0.34.0 looks up FULL graphs of the batch's own query length only (Candidates.BY_QUERY_LEN)
    cfg = SizingConfig(128, 4, num_speculative_tokens_per_batch_size=ISSUE_SCHEDULE)
    families = graph_families("vllm-0.34.0", cfg)
    assert families.full_query_lens == (2, 5)
    batch = families.dispatch_batches([4], True, [4])[0]
    assert batch.path is not BatchPath.FULL, batch
