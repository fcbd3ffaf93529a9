"""Capture sizes and dispatch per engine: worked examples from the sources, and properties."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from graphlab.errors import BadInput, GraphlabError
from graphlab.sizing.batches import reachable_batch_sizes
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, BatchUnit, decode_graph_sizes
from graphlab.sizing.engines import (
    TABLE_ENGINES,
    V0_ENGINES,
    SGLang,
    TrtLlm,
    Vllm033,
    get_engine,
    pad0,
)
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
)

seqs = st.integers(min_value=1, max_value=600)
ks = st.integers(min_value=0, max_value=8)
tokens = st.one_of(st.none(), st.integers(min_value=1, max_value=20000))
engines = st.sampled_from(sorted(TABLE_ENGINES))


def outcome(engine, n, seqs, k=0, tokens=None):
    d = get_engine(engine).dispatch(n, SizingConfig(seqs, k, tokens))
    return d.path, d.graph_size, d.error


# --- worked examples ------------------------------------------------------------------------------


def test_pad0_matches_v0_rule():
    assert [pad0(n) for n in (1, 2, 3, 4, 5, 8, 9, 16, 17, 40, 255, 256, 257)] == [
        1,
        2,
        4,
        4,
        8,
        8,
        16,
        16,
        24,
        40,
        256,
        256,
        264,
    ]


def test_issue_7907_keyerror_40_and_16():
    # max_num_seqs 8, k 4: captured {1, 2, 4, 8}; 8 speculating sequences send 40 rows.
    assert get_engine("vllm-0.5.5").capture_sizes(SizingConfig(8, 4)) == (1, 2, 4, 8)
    assert outcome("vllm-0.5.5", 40, 8, 4) == ("crash", None, "KeyError: 40")
    assert outcome("vllm-0.5.5", 35, 8, 4) == ("crash", None, "KeyError: 40")
    assert outcome("vllm-0.5.5", 10, 8, 4) == ("crash", None, "KeyError: 16")
    assert outcome("vllm-0.5.5", 8, 8, 4) == ("graph", 8, None)
    assert outcome("vllm-0.5.5", 257, 8, 4) == ("eager", None, None)


def test_guard_and_adaptive_on_the_issue_config():
    assert outcome("vllm-0.6.0", 40, 8, 4) == ("eager", None, None)
    assert outcome("vllm-0.6.0", 7, 8, 4) == ("graph", 8, None)
    assert get_engine("adaptive").capture_sizes(SizingConfig(8, 4)) == (1, 2, 4, 8, 16, 24, 32, 40)
    assert outcome("adaptive", 35, 8, 4) == ("graph", 40, None)


def test_v0_lists_end_at_256_and_8192():
    assert len(get_engine("vllm-0.5.5").capture_sizes(SizingConfig(1000))) == 35
    assert get_engine("vllm-0.6.0").capture_sizes(SizingConfig(100000))[-1] == 8192
    assert get_engine("adaptive").capture_sizes(SizingConfig(4096, 8))[-1] == 8192  # the cap


def test_nano_vllm_stop_iteration_for_97_to_100():
    policy, cfg = get_engine("nano-vllm"), SizingConfig(100)
    assert policy.capture_sizes(cfg) == (1, 2, 4, 8, 16, 32, 48, 64, 80, 96)
    assert [policy.dispatch(n, cfg).error for n in range(97, 101)] == ["StopIteration"] * 4
    assert all(policy.dispatch(n, cfg).path == "graph" for n in range(1, 97))
    with pytest.raises(StopIteration):
        policy.padded_size(97, policy.capture_sizes(cfg))
    # No speculative decoding: k changes neither the sizes nor the outcome.
    assert policy.capture_sizes(SizingConfig(100, 5)) == policy.capture_sizes(cfg)
    assert outcome("nano-vllm", 600, 1000) == ("eager", None, None)


def test_vllm_033_uniform_decode_example():
    # S=4, k=2: grid to min(2*4*3, 512) = 24, plus decode sizes 3, 6, 12 (requests 1, 2, 4).
    assert get_engine("vllm-0.33.0").capture_sizes(SizingConfig(4, 2)) == (
        1,
        2,
        3,
        4,
        6,
        8,
        12,
        16,
        24,
    )
    # 9 tokens (3 requests) replay the FULL graph of 9: FULL sizes are these rounded up to multiples
    # of 3, up to 4*3 (vllm/v1/worker/gpu/cudagraph_utils.py `_init_candidates`, 0.33).
    assert outcome("vllm-0.33.0", 9, 4, 2) == ("full", 9, None)
    # k=0 adds max_num_seqs itself, and T when it fits under the ceiling.
    assert 100 in get_engine("vllm-0.33.0").capture_sizes(SizingConfig(100))
    assert get_engine("vllm-0.33.0").capture_sizes(SizingConfig(100, 0, 60))[-1] == 60


def test_vllm_033_memory_clamp_and_blackwell_ceiling():
    hopper, blackwell = get_engine("vllm-0.33.0"), Vllm033(default_max_graph_size=1024)
    cfg = SizingConfig(512, 8)
    assert hopper.capture_sizes(cfg)[-1] == 512
    assert blackwell.capture_sizes(cfg)[-1] == 1024
    assert outcome("vllm-0.33.0", 513, 512, 8) == ("eager", None, None)


def test_v1_012_013_and_startup_refusal():
    assert get_engine("vllm-0.12.0").capture_sizes(SizingConfig(4, 0)) == (1, 2, 4, 8)
    # 0.13 sizes by 2*S*(1+k); its V1 runner rounds to multiples of 1+k.
    assert get_engine("vllm-0.13.0").capture_sizes(SizingConfig(4, 1)) == (2, 4, 8, 16)
    refused = SizingConfig(1, 3)  # 0.12: sizes [1, 2], no multiple of 4 fits
    assert get_engine("vllm-0.12.0").capture_sizes(refused) == ()
    assert "No valid cudagraph sizes" in get_engine("vllm-0.12.0").startup_error(refused)
    assert get_engine("vllm-0.13.0").startup_error(refused) is None
    assert "max_num_seqs (300)" in get_engine("vllm-0.33.0").startup_error(
        SizingConfig(300, 0, 256)
    )


def test_peers():
    # SGLang on the reference H200 (> 80 GiB) extends its list to 256; an 80 GB GPU stops at 160.
    assert get_engine("sglang").capture_sizes(SizingConfig(256, 3))[-1] == 256
    assert SGLang(device_memory_gib=80).capture_sizes(SizingConfig(256, 3))[-1] == 152
    assert get_engine("sglang").capture_sizes(SizingConfig(20, 3)) == (
        1,
        2,
        3,
        4,
        5,
        6,
        7,
        8,
        10,
        12,
        14,
        16,
        18,
        20,
        21,
    )
    assert outcome("sglang", 257, 300, 3) == ("eager", None, None)
    assert SGLang(device_memory_gib=80).capture_sizes(SizingConfig(256, 0))[-1] == 160
    # TensorRT-LLM's defaults: max batch 128, no padding, so only exact sizes replay.
    assert get_engine("trtllm").capture_sizes(SizingConfig(300)) == (*range(1, 33), 64, 128)
    assert [outcome("trtllm", n, 300)[0] for n in (31, 33, 64, 130)] == [
        "graph",
        "eager",
        "graph",
        "eager",
    ]
    padded = TrtLlm(max_batch_size=300, enable_padding=True)
    assert padded.capture_sizes(SizingConfig(8)) == (1, 2, 4, *range(8, 129, 8), 192, 256, 300)
    assert padded.dispatch(130, SizingConfig(8)).graph_size == 192
    assert TrtLlm(max_batch_size=1000).capture_sizes(SizingConfig(8))[-4:] == (128, 256, 512, 1000)


def test_unknown_engine_and_bad_config_name_the_value():
    with pytest.raises(GraphlabError, match="'vllm-9'.*vllm-0.5.5.*trtllm"):
        get_engine("vllm-9")
    for kwargs, name in (
        (dict(max_num_seqs=0), "max_num_seqs"),
        (dict(max_num_seqs=4, num_speculative_tokens=-1), "num_speculative_tokens"),
        (dict(max_num_seqs=4, max_num_batched_tokens=0), "max_num_batched_tokens"),
        (dict(max_num_seqs=True), "max_num_seqs"),
    ):
        with pytest.raises(GraphlabError, match=name):
            SizingConfig(**kwargs)


# --- properties -----------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(engine=engines, s=seqs, k=ks, t=tokens)
def test_capture_sizes_sorted_unique_positive(engine, s, k, t):
    sizes = get_engine(engine).capture_sizes(SizingConfig(s, k, t))
    assert list(sizes) == sorted(set(sizes)) and all(x >= 1 for x in sizes)


@settings(max_examples=60, deadline=None)
@given(engine=engines, s=seqs, k=ks, t=tokens, n=st.integers(min_value=1, max_value=10000))
def test_padding_never_shrinks_and_graphs_are_captured(engine, s, k, t, n):
    policy, cfg = get_engine(engine), SizingConfig(s, k, t)
    d = policy.dispatch(n, cfg)
    if d.path.replays:  # V1's FULL graphs lie at capture sizes rounded up to multiples of 1 + k
        v1 = policy.batch_unit is BatchUnit.TOKENS
        captured = policy.capture_sizes(cfg) + (decode_graph_sizes(policy, cfg) if v1 else ())
        assert d.graph_size >= n and d.graph_size in captured
    assert (d.error is None) == (d.path != "crash")


@settings(max_examples=40, deadline=None)
@given(engine=st.sampled_from(V0_ENGINES[1:]), s=seqs, k=ks)
def test_guard_and_adaptive_never_crash(engine, s, k):
    policy, cfg = get_engine(engine), SizingConfig(s, k)
    batches = policy.dispatch_batches(np.arange(1, s * (k + 1) + 300), cfg)
    assert not batches.takes(BatchPath.CRASH).any()


@settings(max_examples=200, deadline=None)
@given(s=seqs, n=st.integers(min_value=1, max_value=5000))
def test_prefix_crashes_exactly_when_pad_exceeds_captures(s, n):
    crashes = get_engine("vllm-0.5.5").dispatch(n, SizingConfig(s)).path == "crash"
    assert crashes == (pad0(s) < pad0(n) <= 256)


@settings(max_examples=40, deadline=None)
@given(s=st.integers(min_value=1, max_value=1200), k=ks)
def test_adaptive_graphs_every_batch_expansion_size(s, k):
    cfg = SizingConfig(s, k)
    ns = reachable_batch_sizes(get_engine("adaptive"), cfg)
    batches = get_engine("adaptive").dispatch_batches(ns, cfg)
    graph, eager = batches.takes(BatchPath.GRAPH), batches.takes(BatchPath.EAGER)
    if pad0(s * (k + 1)) <= 8192:
        assert graph.all()
    else:
        assert graph[ns <= 8192].all() and eager[ns > 8192].all()


@settings(max_examples=60, deadline=None)
@given(
    engine=engines,
    s=st.integers(min_value=1, max_value=300),
    k=ks,
    n=st.integers(min_value=1, max_value=3000),
)
def test_dispatch_matches_a_real_dict_lookup(engine, s, k, n):
    # What a runner does with the three answers: graph_limit, padded_size, graph_runners[padded].
    policy, cfg = get_engine(engine), SizingConfig(s, k)
    sizes = policy.capture_sizes(cfg)
    graph_runners = {size: f"graph-{size}" for size in sizes}
    d = policy.dispatch(n, cfg)
    if d.path in (
        BatchPath.FULL,
        BatchPath.PIECEWISE,
    ):  # V1: two families (tests/sizing/test_v1_dispatch.py)
        return
    if not policy.tries_graph(n, cfg, sizes):
        assert d.path == "eager"
        return
    try:
        assert graph_runners[policy.padded_size(n, sizes)] == f"graph-{d.graph_size}"
    except KeyError as error:
        assert d.error == f"KeyError: {error.args[0]}"
    except StopIteration:
        assert d.error == "StopIteration"


# --- user-set capture settings --------------------------------------------------------------------


def test_explicit_settings_only_for_v1_engines():
    cfg = SizingConfig(8, 4, cudagraph_capture_sizes=[8, 1, 4])
    assert cfg.cudagraph_capture_sizes == (8, 1, 4)  # kept as given: vLLM logs it so
    for engine in TABLE_ENGINES:
        policy = get_engine(engine)
        if engine in ("vllm-0.12.0", "vllm-0.13.0", "vllm-0.33.0"):
            assert policy.capture_sizes(cfg)
            continue
        with pytest.raises(
            GraphlabError, match=f"'{engine}'.*vllm-0.12.0, vllm-0.13.0, vllm-0.33.0"
        ):
            policy.capture_sizes(cfg)
        with pytest.raises(GraphlabError, match=f"'{engine}'"):
            policy.sizing_warnings(SizingConfig(8, max_cudagraph_capture_size=8))


def test_explicit_settings_validated():
    for kwargs, named in (
        (dict(cudagraph_capture_sizes=()), "non-empty"),
        (dict(cudagraph_capture_sizes=(1, 0)), "cudagraph_capture_sizes entry"),
        (dict(cudagraph_capture_sizes="1,2"), "cudagraph_capture_sizes"),
        (dict(max_cudagraph_capture_size=0), "max_cudagraph_capture_size"),
    ):
        with pytest.raises(GraphlabError, match=named):
            SizingConfig(8, **kwargs)


def test_v1_012_013_round_user_sizes_and_refuse_when_none_fit():
    # 0.12/0.13 round user sizes up to multiples of 1 + k and keep those <= the largest.
    cfg = SizingConfig(8, 1, cudagraph_capture_sizes=(1, 2, 3, 8))
    assert get_engine("vllm-0.13.0").capture_sizes(cfg) == (2, 4, 8)
    assert get_engine("vllm-0.33.0").capture_sizes(cfg) == (
        1,
        2,
        3,
        8,
    )  # model runner V2 keeps them
    # All user sizes above T: nothing configured, nothing to round, no refusal.
    empty = SizingConfig(8, 3, 16, cudagraph_capture_sizes=(32, 64))
    assert (
        get_engine("vllm-0.12.0").capture_sizes(empty) == ()
        and get_engine("vllm-0.12.0").startup_error(empty) is None
    )
    assert "overridden by config []" in get_engine("vllm-0.12.0").sizing_warnings(empty)[0]
    refused = SizingConfig(8, 3, cudagraph_capture_sizes=(1, 2))
    assert "No valid cudagraph sizes" in get_engine("vllm-0.12.0").startup_error(refused)


@pytest.mark.parametrize(
    "field, limit",
    [
        ("max_num_seqs", MAX_NUM_SEQS_LIMIT),
        ("num_speculative_tokens", NUM_SPECULATIVE_TOKENS_LIMIT),
        ("max_num_batched_tokens", MAX_NUM_BATCHED_TOKENS_LIMIT),
        ("max_cudagraph_capture_size", MAX_NUM_BATCHED_TOKENS_LIMIT),
        ("cudagraph_capture_sizes", MAX_NUM_BATCHED_TOKENS_LIMIT),
    ],
)
def test_within_limits_accepts_the_limit_and_names_a_value_past_it(field, limit):
    def cfg(value):
        return SizingConfig(
            **{
                "max_num_seqs": 1,
                field: (1, value) if field == "cudagraph_capture_sizes" else value,
            }
        )

    assert cfg(limit).within_limits() == cfg(limit)
    with pytest.raises(BadInput, match=rf"^\S.* must be at most {limit}, got {limit + 1}$"):
        cfg(limit + 1).within_limits()


# --- what the mutation run found untested (docs/mutation.md) -------------------------------------


def test_pad0_of_one_batch_is_a_python_int():
    """A scalar comes back as int (a printed or JSON-dumped size reads 4, not np.int64(4))."""
    assert type(pad0(3)) is int and type(pad0(np.int64(3))) is int
    assert pad0(np.array([3, 9])).tolist() == [4, 16]


@pytest.mark.parametrize("engine", sorted(TABLE_ENGINES))
def test_graph_limit_of_a_config_is_that_of_its_captured_sizes(engine):
    """graph_limit(cfg) (what notebook 02 prints) reads the config's own captured sizes."""
    policy, cfg = get_engine(engine), SizingConfig(24, 2)
    assert policy.graph_limit(cfg) == policy.graph_limit(cfg, policy.capture_sizes(cfg))


def test_the_default_graph_limit_is_the_largest_given_size_and_0_for_none():
    policy, cfg = get_engine("vllm-0.6.0"), SizingConfig(8)
    assert policy.graph_limit(cfg) == 8
    assert policy.graph_limit(cfg, (1, 2, 4)) == 4 and policy.graph_limit(cfg, ()) == 0


@pytest.mark.parametrize("engine", ["vllm-0.5.5", "vllm-0.6.0", "adaptive", "vllm-0.33.0"])
def test_dispatch_uses_the_sizes_it_is_given_not_the_configs(engine):
    """The planner evaluates other size lists than the engine's default: a batch above the
    given sizes must leave them (eager, or V0.5.5's KeyError), one below replays them."""
    policy = get_engine(engine)
    cfg = SizingConfig(64, 0)  # the default captures 1..64
    default = policy.dispatch_batches([3, 40], cfg)
    given = policy.dispatch_batches([3, 40], cfg, (4,))
    assert default.replays.tolist() == [True, True]
    assert given.replays[0] and given.graph_size[0] == 4
    assert given[1].path == (BatchPath.CRASH if engine == "vllm-0.5.5" else BatchPath.EAGER)


@pytest.mark.parametrize("engine", sorted(TABLE_ENGINES))
def test_batches_off_the_graphs_have_size_and_key_0_in_integers(engine):
    """Dispatches' documented zeros: graph_size is 0 off the graph path, and the looked-up key is
    0 where the engine tries no graph (never inf or nan from a division), all integers."""
    policy, cfg = get_engine(engine), SizingConfig(8, 4)
    batches = policy.dispatch_batches(np.arange(1, 200), cfg)
    assert batches.graph_size.dtype.kind == "i" and batches.key.dtype.kind == "i"
    assert (batches.graph_size[~batches.replays] == 0).all()
    if policy.batch_unit is not BatchUnit.TOKENS:  # V1 keys are the padded token counts
        assert (batches.key[batches.takes(BatchPath.EAGER)] == 0).all()


def test_one_batch_dispatches_on_the_sizes_it_is_given():
    policy, cfg = get_engine("vllm-0.6.0"), SizingConfig(64)
    assert (
        policy.dispatch(3, cfg, (4,)).graph_size == 4 and policy.dispatch(40, cfg).path == "graph"
    )
    assert policy.dispatch(40, cfg, (4,)).path == "eager"


def test_the_cached_sizes_are_read_only():
    """Every caller shares one cached array per config: writing into it raises."""
    sizes = get_engine("vllm-0.6.0").capture_array(SizingConfig(8))
    with pytest.raises(ValueError, match="read-only"):
        sizes[0] = 3


def test_a_capture_setting_on_an_engine_without_one_names_the_settings_and_the_readers():
    with pytest.raises(GraphlabError) as error:
        get_engine("vllm-0.6.0").capture_sizes(SizingConfig(8, max_cudagraph_capture_size=16))
    assert str(error.value).startswith(
        "engine 'vllm-0.6.0' has no cudagraph_capture_sizes / max_cudagraph_capture_size / "
        "cudagraph_mode setting; only "
    )


def test_interactivity_is_part_of_what_v1_sizes_are_cached_by():
    """The same config with and without --performance-mode interactivity, asked in turn."""
    policy = get_engine("vllm-0.33.0")
    plain = policy.capture_sizes(SizingConfig(64, 0))
    fast = policy.capture_sizes(SizingConfig(64, 0, performance_mode="interactivity"))
    assert set(range(1, 33)) <= set(fast) and not set(range(1, 33)) <= set(plain)
    assert policy.capture_sizes(SizingConfig(64, 0)) == plain
