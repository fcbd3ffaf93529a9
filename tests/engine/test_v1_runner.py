"""The V1-shaped runner: token-count graphs, padding, spec decode through it, repro --json, sweeps.

Tests taking `backend` run on "cpu-emulated" everywhere and on "cuda-graph" where CUDA exists.
"""

import json
from types import SimpleNamespace

import pytest
import torch
from helpers import restore, snapshot

from graphlab.bench.measurements import graph_memory_rows, latency_rows
from graphlab.bench.sampling import Timing
from graphlab.cli import main
from graphlab.engine.device import BACKEND_VALUES
from graphlab.engine.memory import predict_graph_memory
from graphlab.engine.model import build_model
from graphlab.engine.v1_runner import V1ModelRunner, uniform_decode_batch
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath, decode_graph_sizes, verify_batches
from graphlab.sizing.engines import TABLE_ENGINES, V1_ENGINES, get_engine
from graphlab.specdec.drafts import build_draft, build_target
from graphlab.specdec.engine import SpecDecodeConfig, SpecDecodeEngine
from graphlab.specdec.requests import make_requests

NUM_SLOTS, MAX_SEQ_LEN = 40, 16
# max_num_batched_tokens = 24 puts the ceiling at 24 tokens: 12 requests x 4 tokens pass it.
SMALL = SizingConfig(max_num_seqs=12, num_speculative_tokens=3, max_num_batched_tokens=24)
CONFIGS = [
    SMALL,
    SizingConfig(12, 2),
    SizingConfig(8, 4, 20),
    SizingConfig(16, 1, 16),
    SizingConfig(6, 6),
]

needs_cuda = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"),
]
BACKENDS = [pytest.param("cpu-emulated"), pytest.param("cuda-graph", marks=needs_cuda)]

pytestmark = pytest.mark.usefixtures("one_thread")

# The table's V1 engines: the releases between them are checked against the wheels elsewhere.
TABLE_V1_ENGINES = tuple(n for n in TABLE_ENGINES if n in V1_ENGINES)


def make_model(backend, dtype="float32", seed=0):
    model = build_model(
        "tiny", seed=seed, dtype=dtype, device="cuda" if backend == "cuda-graph" else "cpu"
    )
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    return model


@pytest.fixture(scope="module")
def model():
    model = build_model("tiny", seed=0)
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    return model


def batch(num_reqs, q, seed=0, device="cpu"):
    """num_reqs requests on distinct slots, q tokens each at random positions p..p+q-1."""
    g = torch.Generator().manual_seed(seed)
    slots = torch.randperm(NUM_SLOTS, generator=g)[:num_reqs]
    start = torch.randint(0, MAX_SEQ_LEN - q + 1, (num_reqs, 1), generator=g)
    ids = torch.randint(0, 512, (num_reqs, q), generator=g)
    return tuple(t.to(device) for t in (ids, start + torch.arange(q), slots))


def runner_for(model, engine, cfg, **kwargs):
    runner = V1ModelRunner(model, engine, cfg, **kwargs)
    runner.capture_model()
    return runner


# ---- sizing: which graphs, and which one a batch replays ------------------------------------


@pytest.mark.parametrize("engine", TABLE_V1_ENGINES)
@pytest.mark.parametrize("cfg", CONFIGS)
def test_graphs_hold_whole_requests(engine, cfg):
    q, sizes = cfg.decode_query_len, get_engine(engine).capture_sizes(cfg)
    graphs = decode_graph_sizes(engine, cfg)
    assert graphs and all(g % q == 0 and g <= min(cfg.max_num_seqs * q, sizes[-1]) for g in graphs)
    if engine != "vllm-0.33.0":  # 0.12/0.13 rounded at start-up: the engine's own sizes
        assert graphs == tuple(s for s in sizes if s <= cfg.max_num_seqs * q)


@pytest.mark.parametrize("engine", ["vllm-0.33.0", "vllm-0.13.0"])
@pytest.mark.parametrize("cfg", CONFIGS[:3])
def test_runner_outcome_follows_the_engines_dispatch_for_every_n(model, engine, cfg):
    # Up to 40 requests: past max_num_seqs and past the ceiling. Each step takes the path and
    # graph graphlab.sizing.dispatch names: FULL, PIECEWISE (a uniform batch no FULL graph
    # fits) or eager above the largest capture size.
    q, policy = cfg.decode_query_len, get_engine(engine)
    runner = runner_for(model, engine, cfg, backend="cpu-emulated")
    assert sorted(runner.graphs) == list(runner.capture_sizes)
    assert sorted(runner.piecewise_graphs) == list(policy.capture_sizes(cfg))
    seen = set()
    for num_reqs in range(1, NUM_SLOTS + 1):
        n = num_reqs * q
        _, record = runner.execute_model(*batch(num_reqs, q, seed=num_reqs))
        expected = policy.dispatch(n, cfg)
        seen.add(record.path)
        assert record.batch_size == n
        assert (record.path, record.graph_size) == (expected.path, expected.graph_size), n
    v1_paths = {BatchPath.FULL, BatchPath.PIECEWISE, BatchPath.EAGER}  # never CRASH
    assert {"full", "eager"} <= seen <= v1_paths


def _vllm_full_dispatch(engine, cfg):
    """num_tokens -> FULL graph size or None, from the installed vLLM's own dispatch code:
    model runner V2's CudaGraphManager for 0.33, model runner V1's CudagraphDispatcher for 0.13,
    on stand-in configs holding graphlab's capture sizes (checked against vLLM elsewhere)."""
    from vllm.config.compilation import CUDAGraphMode
    from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
    from vllm.v1.worker.gpu.cudagraph_utils import CudaGraphManager

    sizes = list(get_engine(engine).capture_sizes(cfg))
    q, seqs = cfg.decode_query_len, cfg.max_num_seqs
    compilation = SimpleNamespace(
        cudagraph_capture_sizes=sizes,
        max_cudagraph_capture_size=sizes[-1],
        compile_sizes=None,
        cudagraph_specialize_lora=False,
    )
    mode = CUDAGraphMode.FULL_AND_PIECEWISE
    if engine == "vllm-0.33.0":
        manager = object.__new__(CudaGraphManager)
        manager.__dict__.update(
            vllm_config=SimpleNamespace(
                speculative_config=None, cache_config=SimpleNamespace(use_kda_recoverssm=False)
            ),
            compilation_config=compilation,
            max_num_reqs=seqs,
            decode_query_len=q,
            cudagraph_mode=mode,
            varlen_decode=False,
            lora_capture_cases=[0],
            ubatch_runner=None,
            _candidates={},
            _capture_descs={},
            _lora_dispatch_map={},
            _max_lora_case=0,
        )
        manager._init_candidates()
        manager._graphs_captured = True

        def dispatch(n):
            desc = manager.dispatch(n // q, n, q, 0)
            return desc.num_tokens if desc.cg_mode == CUDAGraphMode.FULL else None

        return dispatch
    dispatcher = object.__new__(CudagraphDispatcher)
    dispatcher.__dict__.update(
        vllm_config=SimpleNamespace(
            scheduler_config=SimpleNamespace(max_num_seqs=seqs), lora_config=None
        ),
        compilation_config=compilation,
        uniform_decode_query_len=q,
        specialize_lora_count=False,
        cudagraph_keys={CUDAGraphMode.PIECEWISE: set(), CUDAGraphMode.FULL: set()},
        keys_initialized=False,
    )
    dispatcher.initialize_cudagraph_keys(mode, q)

    def dispatch(n):
        runtime_mode, desc = dispatcher.dispatch(n, uniform_decode=True)
        return desc.num_tokens if runtime_mode == CUDAGraphMode.FULL else None

    return dispatch


@pytest.mark.vllm
@pytest.mark.parametrize("engine", ["vllm-0.33.0", "vllm-0.13.0"])
def test_runner_outcome_equals_installed_vllm_full_dispatch(model, engine):
    pytest.importorskip("vllm")
    cfgs = CONFIGS + [
        SizingConfig(s, k, t)
        for s in (3, 40, 100, 256)
        for k in (0, 2, 4, 7)
        for t in (None, 40, 300)
    ]
    for cfg in cfgs:
        if get_engine(engine).startup_error(cfg):
            continue
        q, vllm_dispatch = cfg.decode_query_len, _vllm_full_dispatch(engine, cfg)
        ours = V1ModelRunner(model, engine, cfg, backend="cpu-emulated")
        for num_reqs in range(1, cfg.max_num_seqs + 1):
            path, size = ours.dispatch(num_reqs * q)
            assert (size if path == "full" else None) == vllm_dispatch(num_reqs * q), (
                cfg,
                num_reqs,
            )
    # And through execute_model, on the small config: the step replays what vLLM would.
    runner, vllm_dispatch = runner_for(model, engine, SMALL), _vllm_full_dispatch(engine, SMALL)
    for num_reqs in range(1, SMALL.max_num_seqs + 1):
        record = runner.execute_model(*batch(num_reqs, 4, seed=num_reqs))[1]
        full = record.graph_size if record.path == "full" else None
        assert full == vllm_dispatch(num_reqs * 4)


def test_issue_54933_default_sizing_graphs_the_42_token_verify_batch():
    # S = 6, k = 6 (vllm issue 54933): the default sizing captures 42; the verify batch of all
    # six requests replays it with no padding.
    rows = verify_batches("vllm-0.33.0", SizingConfig(6, 6))
    assert [r["num_tokens"] for r in rows] == [7, 14, 21, 28, 35, 42]
    assert rows[-1] == dict(
        num_reqs=6, query_len=7, num_tokens=42, path="full", graph_size=42, padding_tokens=0
    )


def test_issue_54933_explicit_maximum_leaves_the_verify_batch_without_a_graph():
    # max_cudagraph_capture_size=42 is truncated to 40 (the grid's largest size <= 42), so the
    # 42-token verify batch of six requests runs eagerly (vllm issue 54933).
    cfg = SizingConfig(6, 6, max_cudagraph_capture_size=42)
    assert get_engine("vllm-0.33.0").capture_sizes(cfg)[-1] == 40
    assert decode_graph_sizes("vllm-0.33.0", cfg) == (7, 14, 21, 28, 35)
    assert verify_batches("vllm-0.33.0", cfg)[-1]["path"] == "eager"


def test_issue_54933_explicit_maximum_through_speculative_decoding():
    # The same settings as SpecDecodeConfig fields: the target's V1 runner captures up to 35
    # tokens, and every verify step of all six speculating requests (42 tokens) runs eagerly.
    config = SpecDecodeConfig(
        SizingConfig(6, 6, max_cudagraph_capture_size=42), engine="vllm-0.33.0", max_model_len=40
    )
    target = build_target("tiny", seed=0)
    load = make_requests(6, 6, 8, 40, target.config.vocab_size, seed=5)
    engine = SpecDecodeEngine(target, build_draft(target, "truncated", seed=1), config)
    assert engine.runner.capture_sizes == (7, 14, 21, 28, 35)
    decode = engine.generate(load).steps_frame().query("kind == 'decode'")
    full = decode[(decode.num_speculating == 6) & (decode.num_seqs == 6)]
    assert len(full) > 0 and set(full.batch_size) == {42}
    assert set(full.path) == {"eager"} and full.graph_size.isna().all()
    smaller = decode[(decode.num_speculating == decode.num_seqs) & (decode.batch_size <= 35)]
    assert set(smaller.path) <= {"full"}
    explicit = SpecDecodeConfig(
        SizingConfig(6, 6, cudagraph_capture_sizes=[7, 14]), engine="vllm-0.33.0"
    )
    assert explicit.sizing.cudagraph_capture_sizes == (7, 14)
    assert SpecDecodeEngine(
        target, build_draft(target, "truncated", seed=1), explicit
    ).runner.capture_sizes == (7, 14)
    with pytest.raises(GraphlabError, match="engine vllm-0.6.0: only the V1 engines"):
        SpecDecodeConfig(SizingConfig(6, 6, max_cudagraph_capture_size=42))
    with pytest.raises(GraphlabError, match="cudagraph_capture_sizes"):
        SpecDecodeConfig(SizingConfig(6, 6, cudagraph_capture_sizes=[]), engine="vllm-0.33.0")


# ---- replay, padding, stale rows --------------------------------------------------------------


# Emulated, an exact fit runs the same [rows, q] shapes as eager: bit-identical. One request
# short, the padded GEMMs (M = graph tokens) may differ from eager ones (M = n) in the last bits
# on CPU; on CUDA, replay and eager may pick different kernels (logits have std ~1.5). float32:
# the tiny model's logits lie within 9e-6 of a float64 run (measured), so two summation orders
# can differ by ~2e-5, past 1e-5's allowance at small logits: 1e-4, as the V0 GPU test.
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype, tol", [("float32", 1e-4), ("bfloat16", 6e-2)])
def test_replay_equals_eager_for_every_captured_size(backend, dtype, tol):
    model = make_model(backend, dtype, seed=2)
    device = model.device
    graphs = runner_for(model, "vllm-0.33.0", SMALL, backend=backend)
    eager = runner_for(model, "vllm-0.33.0", SMALL, backend=backend, enforce_eager=True)
    start, seen = snapshot(model), set()
    for size in graphs.capture_sizes:
        for num_reqs in sorted({size // 4, max(1, size // 4 - 1)}):
            outputs = []
            for runner in (graphs, eager):
                restore(model, start)
                outputs.append(runner.execute_model(*batch(num_reqs, 4, num_reqs, device)))
            (replayed, record), (reference, eager_record) = outputs
            assert (record.path, eager_record.path) == ("full", "eager")
            assert record.backend == backend
            assert replayed.shape == (num_reqs, 4, model.config.vocab_size)
            if record.graph_size == num_reqs * 4 and backend == "cpu-emulated":
                assert torch.equal(replayed, reference), num_reqs
            else:
                torch.testing.assert_close(replayed, reference, atol=tol, rtol=tol)
            seen.add(record.graph_size)
    assert seen == set(graphs.capture_sizes)


@pytest.mark.parametrize("backend", BACKENDS)
def test_padding_writes_only_the_pad_slot(backend):
    model = make_model(backend)
    graphs = runner_for(model, "vllm-0.33.0", SMALL, backend=backend)
    eager = runner_for(model, "vllm-0.33.0", SMALL, backend=backend, enforce_eager=True)
    start = snapshot(model)
    for k, v in start:  # an empty pad slot, to see what the padding writes there
        k[NUM_SLOTS].zero_()
        v[NUM_SLOTS].zero_()
    for num_reqs in (3, 5):  # 12 tokens on the 16-token graph, 20 on the 24-token one
        ids, pos, slots = batch(num_reqs, 4, num_reqs, model.device)
        restore(model, start)
        assert graphs.execute_model(ids, pos, slots)[1].graph_size > num_reqs * 4  # padded
        padded = snapshot(model)
        restore(model, start)
        eager.execute_model(ids, pos, slots)
        unpadded = snapshot(model)
        written = torch.zeros(NUM_SLOTS, MAX_SEQ_LEN, dtype=torch.bool, device=model.device)
        written[slots[:, None], pos] = True
        for (k, v), (ke, ve), (k0, v0) in zip(padded, unpadded, start):
            for c, ce, c0 in ((k, ke, k0), (v, ve, v0)):
                real, ref, first = (t[:NUM_SLOTS].transpose(1, 2) for t in (c, ce, c0))
                assert torch.equal(real[~written], first[~written])
                torch.testing.assert_close(real[written], ref[written], atol=1e-4, rtol=1e-4)
                # Padding requests wrote positions 0..q-1 of the pad slot, nothing past them.
                assert (c[NUM_SLOTS, :, :4] != 0).any(dim=-1).all()
                assert not c[NUM_SLOTS, :, 4:].any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_decreasing_sizes_leave_no_stale_slot_in_padded_rows(backend):
    model = make_model(backend)
    runner = runner_for(model, "vllm-0.33.0", SMALL, backend=backend)
    for step, num_reqs in enumerate((6, 5, 4, 3, 2, 1)):
        ids, pos, slots = batch(num_reqs, 4, 20 + step, model.device)
        before = snapshot(model)
        size = runner.execute_model(ids, pos, slots)[1].graph_size
        buffers, rows = runner.graphs[size].buffers, size // 4
        assert buffers.seq_slots[num_reqs:rows].tolist() == [model.pad_slot] * (rows - num_reqs)
        assert buffers.input_ids[num_reqs:rows].abs().sum() == 0
        assert buffers.positions[num_reqs:rows].tolist() == [[0, 1, 2, 3]] * (rows - num_reqs)
        written = torch.zeros(NUM_SLOTS, MAX_SEQ_LEN, dtype=torch.bool, device=model.device)
        written[slots[:, None], pos] = True
        for (k, v), (k0, v0) in zip(model.kv_cache(), before):
            for c, c0 in ((k, k0), (v, v0)):
                changed = (c[:NUM_SLOTS] != c0[:NUM_SLOTS]).any(dim=-1).any(dim=1)
                assert not (changed & ~written).any(), (num_reqs, size)


def test_bad_inputs_are_clear_errors(model):
    with pytest.raises(GraphlabError, match="V1-shaped runner's engine 'vllm-0.6.0'"):
        V1ModelRunner(model, "vllm-0.6.0", SMALL)
    with pytest.raises(GraphlabError, match="refuses to start.*max_num_batched_tokens"):
        V1ModelRunner(model, "vllm-0.33.0", SizingConfig(8, 1, 4))
    runner = V1ModelRunner(model, "vllm-0.33.0", SMALL)
    with pytest.raises(GraphlabError, match="capture_model"):
        runner.execute_model(*batch(2, 4))
    runner.capture_model()
    with pytest.raises(GraphlabError, match=r"\[B, 4\]"):
        runner.execute_model(*batch(2, 3))
    with pytest.raises(GraphlabError, match="num_scheduled_tokens"):
        runner.execute_model(*batch(2, 4), [4, 5])
    with pytest.raises(GraphlabError, match="does not fit the graph captured for 4 tokens"):
        runner.graphs[4].replay(*batch(2, 4))
    refused = r"scorer \(engine vllm-0.33.0 .*\) 'batch-expansion' is not one of mqa"
    with pytest.raises(GraphlabError, match=refused):
        SpecDecodeConfig(SizingConfig(4, 2), engine="vllm-0.33.0", scorer="batch-expansion")


def test_a_request_without_drafts_makes_the_batch_non_uniform(model):
    runner = runner_for(model, "vllm-0.33.0", SMALL)
    _, record = runner.execute_model(*batch(2, 4), [4, 1])
    # 5 tokens scheduled; the rows compute 8, which replay the PIECEWISE graph of 8.
    assert (record.batch_size, record.path, record.graph_size) == (5, "piecewise", 8)


# ---- speculative decoding through the V1 runner ----------------------------------------------


@pytest.fixture(scope="module")
def spec_setup():
    target = build_target("tiny", seed=0)
    load = make_requests(8, 4, 16, 32, target.config.vocab_size, seed=3)
    reference = SpecDecodeEngine(target, None, SpecDecodeConfig(SizingConfig(4), max_model_len=32))
    return target, load, reference.generate(load).outputs


@pytest.mark.parametrize("engine", TABLE_V1_ENGINES)
@pytest.mark.parametrize("kind", ["truncated", "target"])
def test_greedy_speculative_decoding_through_v1_equals_target_greedy(spec_setup, engine, kind):
    target, load, reference = spec_setup
    draft = build_draft(target, kind, seed=1)
    engine_ = SpecDecodeEngine(
        target, draft, SpecDecodeConfig(SizingConfig(4, 3), engine=engine, max_model_len=32)
    )
    assert isinstance(engine_.runner, V1ModelRunner) and engine_.config.scorer == "mqa"
    out = engine_.generate(load)
    assert out.outputs == reference
    decode = out.steps_frame().query("kind == 'decode'")
    # Each verify step scores 1 + k tokens per speculating request and 1 per other.
    tokens = decode.num_speculating * 4 + decode.num_seqs - decode.num_speculating
    assert (decode.batch_size == tokens).all()
    uniform = decode.num_speculating == decode.num_seqs
    # Non-uniform steps replay PIECEWISE graphs (dispatched at the B * (1 + k) tokens computed).
    assert (decode.path[~uniform] != "full").all()
    graphs = decode.path != "eager"
    assert (decode.graph_size[graphs] >= decode.batch_size[graphs]).all()
    if engine != "vllm-0.12.0":  # 0.12 stops at 2 * S = 8 tokens: the 16-token steps are eager
        assert graphs[uniform].all()
    if kind == "target":
        assert out.metrics.num_accepted_tokens == out.metrics.num_draft_tokens


@pytest.mark.parametrize("backend", BACKENDS)
def test_piecewise_replay_equals_eager_for_every_captured_size(backend):
    # Each PIECEWISE graph (pieces replayed, attention eager between them) against the model's
    # own eager forward, on a batch that fills it or leaves padding tokens.
    model = make_model(backend, "float32", seed=3)
    runner = runner_for(model, "vllm-0.33.0", SMALL, backend=backend)
    start = snapshot(model)
    assert (
        sorted(runner.piecewise_graphs) == list(runner.piecewise_sizes) and runner.piecewise_sizes
    )
    for size, graph in runner.piecewise_graphs.items():
        length = min(size, 4)
        ids, positions, slots = batch(max(1, size // length), length, size, model.device)
        restore(model, start)
        replayed = graph.replay(ids, positions, slots).clone()
        restore(model, start)
        with torch.no_grad():
            reference = model.hidden_states(ids, positions, slots).flatten(0, 1)
        # pieces run at the padded size (other GEMM kernels on CUDA): 1e-4, as full replay above
        torch.testing.assert_close(replayed, reference, atol=1e-4, rtol=1e-4)
    kinds = {r.family for r in runner.graph_records}
    assert kinds == {"full", "piecewise"}


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_kv_cache_reallocated_after_capture_refuses_every_replay(backend):
    # A CUDA graph keeps the old cache's addresses and pad slot: replaying it would write freed
    # memory, so FULL and PIECEWISE graphs both refuse until captured again.
    model = make_model(backend)
    runner = runner_for(model, "vllm-0.33.0", SMALL, backend=backend)
    ids, positions, slots = batch(1, 1, device=model.device)
    graphs = [min(runner.graphs.values(), key=lambda g: g.size)]
    graphs.append(min(runner.piecewise_graphs.values(), key=lambda g: g.size))
    for graph in graphs:
        graph.replay(ids, positions, slots)  # replays before the reallocation
    model.allocate_kv_cache(NUM_SLOTS + 1, MAX_SEQ_LEN)
    for graph in graphs:
        with pytest.raises(GraphlabError, match="reallocated after the graph of .* capture again"):
            graph.replay(ids, positions, slots)
    fresh = runner_for(model, "vllm-0.33.0", SMALL, backend=backend)
    _, record = fresh.execute_model(
        *batch(1, SMALL.num_speculative_tokens + 1, device=model.device)
    )
    assert record.path == "full"


# ---- the repro command and the sweeps ----------------------------------------------------------


@pytest.mark.parametrize("budget, eager_above", [(None, None), ("20", 20)])
def test_repro_json_shape(capsys, budget, eager_above):
    argv = [
        "repro",
        "--engine",
        "vllm-0.33.0",
        "--device",
        "cpu",
        "--num-requests",
        "8",
        "--max-tokens",
        "8",
        "--max-model-len",
        "24",
        "--json",
    ]
    assert main(argv + (["--max-num-batched-tokens", budget] if budget else [])) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result) == {
        "schema", "command", "engine", "capture_sizes", "full_sizes", "piecewise_sizes", "steps",
        "error",
    }  # fmt: skip
    sizes = result["full_sizes"]  # the FULL graphs; capture_sizes are the configured ones
    assert result["engine"] == "vllm-0.33.0" and sizes == sorted(sizes) and sizes
    assert all(s % 5 == 0 for s in sizes)  # k = 4: whole requests of 5 tokens
    assert result["steps"] and any(s["num_tokens"] == 40 for s in result["steps"])
    for step in result["steps"]:
        assert set(step) == {"num_tokens", "path", "graph_size"}
        if step["path"] == "full":
            assert step["graph_size"] in sizes and step["graph_size"] >= step["num_tokens"]
        elif step["path"] == "piecewise":
            assert step["graph_size"] >= step["num_tokens"]
        else:
            assert step["path"] == "eager" and step["graph_size"] is None
        if eager_above is not None and step["num_tokens"] > eager_above:
            assert step["path"] == "eager"


def test_sweeps_cross_the_ceiling_and_label_their_rows(model):
    timing = Timing(BACKEND_VALUES["cpu-emulated"], repeats=1, warmup=0)
    latency = latency_rows(model, "vllm-0.33.0", SMALL, timing)
    graph_rows = [r for r in latency if r["mode"] == "graph"]
    assert {(r["engine"], r["batch_unit"]) for r in latency} == {("vllm-0.33.0", "tokens")}
    # Each captured size filled exactly, one request past the last graph, and all 12 requests.
    assert [r["num_reqs"] for r in graph_rows] == [1, 2, 4, 6, 7, 12]
    for r in graph_rows:
        assert r["batch_size"] == 4 * r["num_reqs"] and r["graph_limit"] == 24
        assert (r["path"], r["graph_size"]) == (
            ("full", r["batch_size"]) if r["batch_size"] <= 24 else ("eager", None)
        )
    assert all(r["path"] == "eager" for r in latency if r["mode"] == "eager")
    rows = graph_memory_rows(
        model, "vllm-0.33.0", SMALL, BACKEND_VALUES["cpu-emulated"], ("shared",)
    )
    memory = [r for r in rows if r["family"] == "full"]
    assert [r["capture_size"] for r in memory] == [24, 16, 8, 4]
    pieces = [r["capture_size"] for r in rows if r["family"] == "piecewise"]
    assert pieces == sorted(get_engine("vllm-0.33.0").capture_sizes(SMALL), reverse=True)
    for r in memory:
        assert r["memory_kind"] == "predicted" and r["num_reqs"] * 4 == r["capture_size"]
        assert r["predicted_bytes"] == predict_graph_memory(
            model.config, r["capture_size"], MAX_SEQ_LEN, torch.float32, query_len=4
        )
    # A graph of 24 tokens in 6 requests gathers 6 requests' K/V, not 24 rows'.
    assert memory[0]["predicted_bytes"] < predict_graph_memory(
        model.config, 24, MAX_SEQ_LEN, torch.float32
    )


def test_uniform_decode_batch_rows(model):
    ids, pos, slots = uniform_decode_batch(3, 4, model, 5)
    assert ids.shape == pos.shape == (3, 4) and slots.tolist() == [0, 1, 2]
    assert pos.tolist() == [[5, 6, 7, 8]] * 3
    with pytest.raises(GraphlabError, match="max_seq_len"):
        uniform_decode_batch(3, 4, model, MAX_SEQ_LEN - 2)


# ---- what the mutation campaign of issue 50 found untested -------------------------------------


@pytest.mark.parametrize(
    "counts, named",
    [
        ([0, 4], "every num_scheduled_tokens entry must be an integer in 1..4, got 0"),
        ([4, 5], "every num_scheduled_tokens entry must be an integer in 1..4, got 5"),
        ([2.7, 4], "every num_scheduled_tokens entry must be an integer in 1..4, got 2.7"),
        ("abc", "num_scheduled_tokens must be a non-empty list or tuple of integers, got str"),
        ([4], "num_scheduled_tokens must hold 2 values in [1, 4], got [4]"),
    ],
)
def test_scheduled_token_counts_outside_one_to_q_are_refused(model, counts, named):
    runner = runner_for(model, "vllm-0.33.0", SMALL)
    with pytest.raises(GraphlabError) as error:
        runner.execute_model(*batch(2, 4), counts)
    assert str(error.value).startswith(named), error.value


def test_uniform_decode_batch_may_end_at_the_last_cache_position_not_past_it(model):
    last = MAX_SEQ_LEN - 4  # positions last..last+3 = MAX_SEQ_LEN - 1: the last cell
    assert uniform_decode_batch(2, 4, model, last)[1].max().item() == MAX_SEQ_LEN - 1
    with pytest.raises(GraphlabError, match=f"positions up to {MAX_SEQ_LEN} exceed"):
        uniform_decode_batch(2, 4, model, last + 1)


# ---- what the independent mutation campaign of 2026-12-06 found untested ----------------------


def test_uniform_decode_batch_may_use_every_slot_not_more(model):
    assert uniform_decode_batch(NUM_SLOTS, 1, model, 0)[2].tolist() == list(range(NUM_SLOTS))
    with pytest.raises(GraphlabError, match=f"{NUM_SLOTS + 1} requests need"):
        uniform_decode_batch(NUM_SLOTS + 1, 1, model, 0)


def test_plain_full_is_refused_by_the_v1_shaped_runner(model):
    # FULL graphs for every batch at the raw sizes: a family the runner does not capture
    with pytest.raises(GraphlabError, match="cudagraph_mode FULL .* is not modelled"):
        V1ModelRunner(model, "vllm-0.33.0", SizingConfig(8, 1, cudagraph_mode="FULL"))


# ---- what reading v1_runner.py line by line (2026-12-06) found untested -----------------------


def test_an_eager_runner_replays_no_graph_for_a_batch_the_graphs_serve(model):
    graphs = runner_for(model, "vllm-0.33.0", SMALL)
    eager = runner_for(model, "vllm-0.33.0", SMALL, enforce_eager=True)
    record = graphs.execute_model(*batch(2, 4))[1]
    assert (record.path, record.graph_size) == ("full", 8)
    record = eager.execute_model(*batch(2, 4))[1]
    assert (record.batch_size, record.path, record.graph_size) == (8, "eager", None)


def test_uniform_decode_batch_steps_mid_cache_by_default_and_follows_its_seed(model):
    ids, positions, _ = uniform_decode_batch(2, 4, model)
    start = MAX_SEQ_LEN // 2  # where the benches step
    assert positions.tolist() == [list(range(start, start + 4))] * 2
    assert torch.equal(
        uniform_decode_batch(2, 4, model, seed=7)[0], uniform_decode_batch(2, 4, model, seed=7)[0]
    )
    assert not torch.equal(ids, uniform_decode_batch(2, 4, model, seed=1)[0])


def test_a_piecewise_runner_has_no_full_graphs_and_no_graph_limit(model):
    cfg = SizingConfig(12, 3, 24, cudagraph_mode="PIECEWISE")
    runner = runner_for(model, "vllm-0.33.0", cfg)
    assert runner.capture_sizes == () and runner.graph_limit == 0
    assert runner.piecewise_sizes == get_engine("vllm-0.33.0").capture_sizes(cfg)
    record = runner.execute_model(*batch(2, 4))[1]
    assert (record.path, record.graph_size) == ("piecewise", 8)


# ---- what mutmut over engine/v1_runner.py (2026-12-06, later) found untested ------------------


def test_plain_full_is_refused_in_one_line_listing_the_modes_the_runner_takes(model):
    with pytest.raises(GraphlabError) as error:
        V1ModelRunner(model, "vllm-0.33.0", SizingConfig(8, 1, cudagraph_mode="FULL"))
    assert str(error.value) == (
        "cudagraph_mode FULL (FULL graphs for every batch) is not modelled by the V1-shaped "
        "runner; allowed: NONE, PIECEWISE, FULL_DECODE_ONLY, FULL_AND_PIECEWISE"
    )


def test_an_eager_runner_has_empty_graph_tables(model):
    runner = V1ModelRunner(model, "vllm-0.33.0", SizingConfig(8, 1), enforce_eager=True)
    runner.capture_model()
    assert (runner.graphs, runner.piecewise_graphs) == ({}, {})


@pytest.mark.parametrize(
    "args, message",
    [
        ((0, 4), "num_reqs must be an integer >= 1, got 0"),
        ((2, 0), "query_len must be an integer >= 1, got 0"),
        ((2, 4, -1), "position must be an integer >= 0, got -1"),
    ],
)
def test_a_bad_uniform_decode_batch_is_named(model, args, message):
    with pytest.raises(GraphlabError) as error:
        uniform_decode_batch(*args[:2], model, *args[2:])
    assert str(error.value) == message


def test_a_uniform_decode_batchs_tokens_are_its_seeds_draw_over_the_whole_vocabulary(model):
    # the seed's torch.Generator draws ids in [0, vocab_size): token 0 included
    ids = uniform_decode_batch(4, 4, model, 0, seed=7)[0]
    generator = torch.Generator().manual_seed(7)
    assert torch.equal(ids, torch.randint(0, 512, (4, 4), generator=generator))
