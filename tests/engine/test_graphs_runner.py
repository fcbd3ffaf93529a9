"""The V0-shaped runner on the cpu-emulated backend: sizing outcomes, the KeyError, padding."""

import dataclasses
import time

import pytest
import torch
from helpers import restore, snapshot

from graphlab.engine.config import PRESETS
from graphlab.engine.graphs import StaticBuffers, capture_graphs
from graphlab.engine.memory import gathered_kv_bytes, predict_graph_memory, predict_pool_bytes
from graphlab.engine.model import build_model
from graphlab.engine.runner import Span, StepTimer, cpu_clock
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import V0_ENGINES, get_engine

NUM_SLOTS, MAX_SEQ_LEN = 32, 16


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def model():
    model = build_model("tiny", seed=0)
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    return model


def batch(n, seed=0):
    """n decode rows of one token ([n, 1]) on distinct (seq_slot, position) cells; rows share
    slots once n > NUM_SLOTS."""
    g = torch.Generator().manual_seed(seed)
    cells = torch.randperm(NUM_SLOTS * MAX_SEQ_LEN, generator=g)[:n]
    ids = torch.randint(0, 512, (n,), generator=g)
    return ids[:, None], (cells % MAX_SEQ_LEN)[:, None], cells // MAX_SEQ_LEN


def step_outcome(runner, n):
    try:
        _, record = runner.execute_model(*batch(n))
    except KeyError as e:
        return "crash", None, f"KeyError: {e}"
    return record.path, record.graph_size, None


@pytest.mark.parametrize("engine", V0_ENGINES)
@pytest.mark.parametrize("max_num_seqs, k", [(8, 4), (32, 2), (100, 3)])
def test_runner_outcome_equals_sizing_dispatch_for_every_n(model, engine, max_num_seqs, k):
    cfg = SizingConfig(max_num_seqs=max_num_seqs, num_speculative_tokens=k)
    runner = V0ModelRunner(model, engine, cfg, backend="cpu-emulated")
    runner.capture_model()
    assert sorted(runner.graph_runners) == list(get_engine(engine).capture_sizes(cfg))
    for n in range(1, 301):
        expected = get_engine(engine).dispatch(n, cfg)
        assert step_outcome(runner, n) == (expected.path, expected.graph_size, expected.error), n


def test_prefix_runner_raises_the_engines_keyerror_40(model):
    runner = V0ModelRunner(model, "vllm-0.5.5", SizingConfig(8, num_speculative_tokens=4))
    runner.capture_model()
    assert sorted(runner.graph_runners) == [1, 2, 4, 8]
    with pytest.raises(KeyError) as info:
        runner.execute_model(*batch(40))
    assert str(info.value) == "40" and not isinstance(info.value, GraphlabError)
    # dispatch answers the padded size; the lookup in execute_model is what raises
    assert runner.dispatch(40) == ("graph", 40) and 40 not in runner.graph_runners
    # The guard runs the same batch eagerly; adaptive replays a graph of 40 rows.
    for engine, path in (("vllm-0.6.0", "eager"), ("adaptive", "graph")):
        other = V0ModelRunner(model, engine, SizingConfig(8, 4))
        other.capture_model()
        assert other.execute_model(*batch(40))[1].path == path


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_emulated_replay_equals_eager(dtype):
    # CPU GEMMs block rows by M, so a padded replay (M = graph size) may differ from an eager
    # step (M = n) in the last bits; with no padding (n == size) the two are bit-identical.
    model = build_model("tiny", seed=2, dtype=dtype)
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    cfg = SizingConfig(max_num_seqs=8, num_speculative_tokens=4)
    graphs = V0ModelRunner(model, "adaptive", cfg)
    graphs.capture_model()
    eager = V0ModelRunner(model, "adaptive", cfg, enforce_eager=True)
    eager.capture_model()
    start = snapshot(model)
    for n in range(1, 41):
        restore(model, start)
        replayed, record = graphs.execute_model(*batch(n, seed=n))
        restore(model, start)
        reference, eager_record = eager.execute_model(*batch(n, seed=n))
        assert (record.path, eager_record.path) == ("graph", "eager")
        if n == record.graph_size:
            assert torch.equal(replayed, reference), n
        else:
            torch.testing.assert_close(replayed, reference, atol=1e-5, rtol=0)


def test_padding_writes_only_the_pad_row(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(max_num_seqs=32))
    runner.capture_model()
    eager = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(max_num_seqs=32), enforce_eager=True)
    eager.capture_model()
    start = snapshot(model)
    for n in (3, 5, 13, 27):
        ids, pos, seq_slots = batch(n, seed=n)
        restore(model, start)
        assert runner.execute_model(ids, pos, seq_slots)[1].graph_size > n  # padded
        padded = snapshot(model)
        restore(model, start)
        eager.execute_model(ids, pos, seq_slots)
        unpadded = snapshot(model)
        written = torch.zeros(NUM_SLOTS + 1, MAX_SEQ_LEN, dtype=torch.bool)
        written[seq_slots, pos[:, 0]] = True
        for (k, v), (ke, ve), (k0, v0) in zip(padded, unpadded, start):
            for c, ce, c0 in ((k, ke, k0), (v, ve, v0)):
                real = c[:NUM_SLOTS].transpose(1, 2)  # [slot, position, head, dim]
                untouched = ~written[:NUM_SLOTS]
                assert torch.equal(real[untouched], c0[:NUM_SLOTS].transpose(1, 2)[untouched])
                assert torch.equal(real[untouched], ce[:NUM_SLOTS].transpose(1, 2)[untouched])
                # Padded GEMMs (M = graph size) may differ from eager ones in the last bits of
                # these O(1) values; a misplaced write would differ by O(1).
                torch.testing.assert_close(
                    real[~untouched], ce[:NUM_SLOTS].transpose(1, 2)[~untouched], atol=1e-5, rtol=0
                )
                assert not torch.equal(c[NUM_SLOTS], c0[NUM_SLOTS])  # the pad row took them


def test_graphs_hold_hidden_states_and_logits_come_after(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    runner.capture_model()
    ids, pos, seq_slots = batch(3)
    logits, record = runner.execute_model(ids, pos, seq_slots)
    buffers = runner.graph_runners[4].buffers
    assert buffers.hidden_states.shape == (8, model.config.hidden_size)  # no [8, vocab] output
    assert torch.equal(logits[:, 0], model.compute_logits(buffers.hidden_states[:3]))
    assert logits.shape == (3, 1, model.config.vocab_size) and logits.dtype == torch.float32


def test_capture_never_writes_real_slots(model):
    start = snapshot(model)
    runner = V0ModelRunner(model, "adaptive", SizingConfig(8, 4))
    runner.capture_model()
    for (k, v), (k0, v0) in zip(model.kv_cache(), start):
        assert torch.equal(k[:NUM_SLOTS], k0[:NUM_SLOTS])
        assert torch.equal(v[:NUM_SLOTS], v0[:NUM_SLOTS])


def test_enforce_eager_never_captures(model):
    runner = V0ModelRunner(model, "vllm-0.5.5", SizingConfig(8, 4), enforce_eager=True)
    assert runner.capture_model() == [] and runner.graph_runners == {}
    _, record = runner.execute_model(*batch(40))
    assert (record.path, record.graph_size, record.backend) == ("eager", None, "cpu-emulated")
    assert record.time_ms > 0


def test_emulated_records_are_predicted(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(16))
    records = runner.capture_model()
    assert [r.size for r in records] == [16, 8, 4, 2, 1]  # largest first
    for r in records:
        assert r.memory_kind == "predicted" and r.pool_bytes is None
        assert r.predicted_bytes == predict_graph_memory(
            model.config, r.size, MAX_SEQ_LEN, torch.float32
        )
        assert r.capture_ms > 0 and r.backend == "cpu-emulated"
    # In the shared pool the largest graph's blocks serve every smaller one.
    assert [r.memory_bytes for r in records] == [records[0].predicted_bytes, 0, 0, 0, 0]
    separate = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(16), graph_pool="separate")
    assert all(r.memory_bytes == r.predicted_bytes for r in separate.capture_model())


def test_prediction_grows_with_batch_and_cache_and_pools_combine():
    config = PRESETS["1b"]
    small, large = (predict_graph_memory(config, s, 256) for s in (8, 256))
    assert 0 < small < large
    assert predict_graph_memory(config, 8, 2048) > small
    # The dense K/V copy of every row's slot is most of a 1B step's graph at 256 positions.
    gathered = gathered_kv_bytes(config, 256, 256)
    assert gathered == 256 * 2 * 8 * 256 * 64 * 2 == 134_217_728
    assert 0.9 < gathered / large < 1
    # No LM head in the graph: the vocabulary does not count.
    bigger_vocab = dataclasses.replace(config, vocab_size=4 * config.vocab_size)
    assert predict_graph_memory(bigger_vocab, 256, 256) == large
    assert predict_pool_bytes([3, 5, 2], "shared") == 5
    assert predict_pool_bytes([3, 5, 2], "separate") == 10


def test_bad_inputs_are_clear_errors(model):
    cfg = SizingConfig(8)
    with pytest.raises(GraphlabError, match="engine 'vllm-9' is not one of"):
        V0ModelRunner(model, "vllm-9", cfg)
    with pytest.raises(
        GraphlabError,
        match="V0-shaped runner's engine 'vllm-0.13.0' is not one "
        "of vllm-0.5.5, vllm-0.6.0, adaptive",
    ):
        V0ModelRunner(model, "vllm-0.13.0", cfg)
    with pytest.raises(GraphlabError, match="graph_pool 'pooled'"):
        V0ModelRunner(model, "vllm-0.6.0", cfg, graph_pool="pooled")
    with pytest.raises(GraphlabError, match="backend 'tpu'"):
        V0ModelRunner(model, "vllm-0.6.0", cfg, backend="tpu")
    with pytest.raises(GraphlabError, match="needs the model on a CUDA device"):
        capture_graphs(model, [1], "cuda-graph")
    runner = V0ModelRunner(model, "vllm-0.6.0", cfg)
    ids, pos, seq_slots = batch(4)
    with pytest.raises(GraphlabError, match="capture_model"):
        runner.execute_model(ids, pos, seq_slots)
    runner.capture_model()
    with pytest.raises(GraphlabError, match="positions out of range.*max_seq_len=16"):
        runner.execute_model(ids, torch.full((4, 1), MAX_SEQ_LEN), seq_slots)
    with pytest.raises(GraphlabError, match="seq_slots out of range"):
        runner.execute_model(ids, pos, torch.full((4,), model.pad_slot))
    with pytest.raises(GraphlabError, match="same KV cache cell"):
        zeros = torch.zeros(4, dtype=torch.long)
        runner.execute_model(ids, zeros[:, None], zeros)
    with pytest.raises(GraphlabError, match=r"must both be \[n, L\]"):
        runner.execute_model(ids[:, 0], pos[:, 0], seq_slots)
    with pytest.raises(GraphlabError, match="does not fit the graph captured for 4"):
        runner.graph_runners[4].replay(*batch(5))
    unallocated = build_model("tiny")
    with pytest.raises(GraphlabError, match="allocate_kv_cache"):
        V0ModelRunner(unallocated, "vllm-0.6.0", cfg)


def test_a_cfg_of_another_type_is_named(model):
    with pytest.raises(GraphlabError) as error:
        V0ModelRunner(model, "vllm-0.6.0", {"max_num_seqs": 8})
    assert str(error.value) == "cfg must be a graphlab.sizing.config.SizingConfig, got dict"


def test_eager_steps_equal_the_model_and_record_their_requests(model):
    # [B, q] = 3 requests of 2 tokens, run eagerly whatever the size (an MQA verify step).
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8, 4), backend="cpu-emulated")
    runner.capture_model()
    ids = torch.randint(0, 512, (3, 2), generator=torch.Generator().manual_seed(0))
    pos, slots = torch.tensor([[4, 5], [0, 1], [9, 10]]), torch.tensor([2, 0, 7])
    with torch.inference_mode():
        expected = model(ids, pos, slots)
    for counts in (None, [2, 1, 2]):
        logits, record = runner.execute_model(ids, pos, slots, counts)
        assert torch.equal(logits, expected)
        assert (record.batch_size, record.path, record.graph_size, record.backend) == (
            3,
            "eager",
            None,
            "cpu-emulated",
        )
        assert record.time_ms > 0


def test_the_cpu_step_timer_counts_the_threads_cpu_time_and_the_wall_beside_it(one_thread):
    # A unit check, not a speed check: a sleep holds no CPU, so the one torch thread's clock
    # leaves it out (as it leaves out another process's turn on the core) and the wall keeps it;
    # a busy loop shows on both.
    before = time.perf_counter()
    timer = StepTimer(torch.device("cpu"))
    time.sleep(0.2)
    ms = timer.stop()
    outer_ms = (time.perf_counter() - before) * 1e3
    assert timer.clock == "thread_cpu" and ms == timer.ms
    assert ms < 50 and 200 <= timer.wall_ms <= outer_ms
    timer = StepTimer(torch.device("cpu"))
    end = time.thread_time() + 0.05
    while time.thread_time() < end:
        pass
    assert timer.stop() >= 50 and timer.wall_ms >= timer.ms * 0.99


# ---- what the mutation campaign of issue 50 found untested -------------------------------------


def test_a_smaller_batch_after_a_larger_one_pads_with_the_pad_slot_not_the_last_batchs(model):
    # One graph of 8 rows replays 7 rows, then 3: rows 3..7 of the static buffers still hold the
    # first batch's slots unless fill() pads them, and the padding tokens would overwrite those
    # sequences' K/V at positions 0 (the pad positions).
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    runner.capture_model()
    start = snapshot(model)
    try:
        first = batch(7, seed=1)
        assert runner.execute_model(*first)[1].graph_size == 8
        before = snapshot(model)
        ids, pos, seq_slots = batch(3, seed=2)
        assert runner.execute_model(ids, pos, seq_slots)[1].graph_size == 4
        ids, pos, seq_slots = batch(5, seed=3)
        assert runner.execute_model(ids, pos, seq_slots)[1].graph_size == 8
        second = snapshot(model)
    finally:
        restore(model, start)
    written = torch.zeros(NUM_SLOTS, MAX_SEQ_LEN, dtype=torch.bool)
    for _, p, s in (batch(3, seed=2), batch(5, seed=3)):
        written[s, p[:, 0]] = True
    for (k, v), (k1, v1) in zip(second, before):
        for c, c1 in ((k, k1), (v, v1)):
            # [slot, head, position, dim] -> which (slot, position) cells the two steps changed
            changed = (c[:NUM_SLOTS] != c1[:NUM_SLOTS]).any(dim=-1).any(dim=1)
            assert not (changed & ~written).any(), (changed & ~written).nonzero().tolist()


def test_capture_sizes_must_hold_whole_rows_of_query_len(model):
    with pytest.raises(GraphlabError) as error:
        capture_graphs(model, [8, 6], backend="cpu-emulated", query_len=4)
    assert str(error.value) == (
        "capture sizes [8, 6] must be multiples of query_len=4: a graph holds whole rows"
    )


def test_a_padded_step_records_its_real_batch_size(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    runner.capture_model()
    _, record = runner.execute_model(*batch(5))
    assert (record.batch_size, record.path, record.graph_size) == (5, "graph", 8)


def test_two_rows_on_one_cell_are_refused_wherever_they_sit_in_the_batch(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    runner.capture_model()
    ids = torch.tensor([[1], [2], [3]])
    # cells 0*16+3, 1*16+3, 0*16+3: the duplicates are not next to each other in batch order
    with pytest.raises(GraphlabError, match="same KV cache cell"):
        runner.execute_model(ids, torch.tensor([[3], [3], [3]]), torch.tensor([0, 1, 0]))
    with pytest.raises(GraphlabError, match="same KV cache cell"):
        runner.execute_model(ids, torch.tensor([[5], [2], [5]]), torch.tensor([4, 9, 4]))


# ---- what the independent mutation campaign of 2026-12-06 found untested ----------------------


def test_padding_rows_are_token_0_at_the_pad_positions_of_the_pad_slot(model):
    # A batch of 1 request after one of 4 in the same 8-token buffers: the 3 padding rows hold
    # token 0 at positions 0..q-1 of the pad slot, as vLLM zeroes a padded step's trailing
    # input ids and positions (vllm/v1/worker/gpu/input_batch.py, gpu_model_runner.py).
    buffers = StaticBuffers(model, 8, query_len=2)
    ids, pos = torch.arange(1, 9).reshape(4, 2), 5 + torch.arange(2).repeat(4, 1)
    buffers.fill(ids, pos, torch.arange(4), 8)
    buffers.fill(ids[:1], pos[:1], torch.arange(1), 8)
    assert buffers.input_ids.tolist() == [[1, 2], [0, 0], [0, 0], [0, 0]]
    assert buffers.positions.tolist() == [[5, 6], [0, 1], [0, 1], [0, 1]]
    assert buffers.seq_slots.tolist() == [0] + [model.pad_slot] * 3


@pytest.mark.parametrize("graph_pool", ["shared", "separate"])
def test_an_emulated_capture_loops_figure_is_its_pools_prediction(model, graph_pool):
    # a shared pool's loop holds the largest graph's blocks only, not every graph's
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(16), graph_pool=graph_pool)
    records = runner.capture_model()
    predicted = [r.predicted_bytes for r in records]
    loop = max(predicted) if graph_pool == "shared" else sum(predicted)
    assert {r.capture_loop_bytes for r in records} == {loop}


# ---- what the fourth independent mutation campaign (2026-12-06) found untested ----------------


def test_a_size_given_twice_is_one_graph(model):
    # vLLM keeps a capture list deduplicated (VllmConfig._set_cudagraph_sizes): one graph a size
    graphs, records = capture_graphs(model, [4, 2, 4])
    assert sorted(graphs) == [2, 4]
    assert [r.size for r in records] == [4, 2]


def test_a_replay_after_the_cache_is_reallocated_names_the_graphs_size():
    model = build_model("tiny", seed=0)
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    graphs, _ = capture_graphs(model, [8])
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)  # the cache's second version
    with pytest.raises(GraphlabError) as error:
        graphs[8].replay(*batch(3))
    assert str(error.value) == (
        "the model's KV cache was reallocated after the graph of 8 was captured: "
        "capture again (a new runner's capture_model()) before replaying"
    )


def test_a_step_shared_by_two_torch_threads_is_timed_on_the_wall():
    # the calling thread's CPU time would leave the other thread's work out
    previous = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        assert cpu_clock() == "wall"
        assert StepTimer(torch.device("cpu")).clock == "wall"
    finally:
        torch.set_num_threads(previous)


# ---- what mutmut over engine/graphs.py with its own test files found untested (2026-12-06, later)


def test_capture_graphs_holds_v0s_one_token_rows_by_default(model):
    # a graph of 3 rows of one token each (vLLM V0's decode graphs), replayed as the eager step
    ids, pos, seq_slots = batch(2, seed=4)
    start = snapshot(model)
    try:
        graphs, records = capture_graphs(model, [3])
        replayed = graphs[3].replay(ids, pos, seq_slots).clone()
        eager = model.hidden_states(ids, pos, seq_slots)
    finally:
        restore(model, start)
    assert [r.size for r in records] == [3]
    torch.testing.assert_close(replayed, eager.view(2, -1))


def test_capture_graphs_names_a_bad_model_or_size_list():
    with pytest.raises(GraphlabError) as error:
        capture_graphs("tiny", [1])
    assert str(error.value) == "model must be a LlamaForCausalLM, got str"
    model = build_model("tiny")
    model.allocate_kv_cache(1, 8)
    with pytest.raises(GraphlabError) as error:
        capture_graphs(model, "12")
    assert str(error.value) == "sizes must be a non-empty list or tuple of integers, got str '12'"


@pytest.mark.parametrize(
    "query_len, size, rows, message",
    [
        (1, 2, 3, "a batch of 3 rows does not fit the graph captured for 2 rows"),
        (2, 4, 3, "a batch of 6 tokens does not fit the graph captured for 4 tokens"),
    ],
)
def test_a_batch_larger_than_its_graph_is_named_in_rows_or_tokens(
    model, query_len, size, rows, message
):
    # V0's graphs count rows of one token; V1's uniform-decode graphs count tokens
    graphs, _ = capture_graphs(model, [size], query_len=query_len)
    ids = torch.ones(rows, query_len, dtype=torch.long)
    positions = torch.arange(query_len).repeat(rows, 1)
    with pytest.raises(GraphlabError) as error:
        graphs[size].replay(ids, positions, torch.arange(rows))
    assert str(error.value) == message


# ---- what mutmut over engine/runner.py with its own test file found untested (2026-12-06, later)


def test_a_step_before_capture_and_too_many_scheduled_tokens_are_named(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    with pytest.raises(GraphlabError) as error:
        runner.execute_model(*batch(2))
    assert str(error.value) == "call capture_model() before execute_model()"
    runner.capture_model()
    # a row of q = 1 token cannot schedule 2 (vLLM schedules at most the row's 1 + k)
    with pytest.raises(GraphlabError) as error:
        runner.execute_model(*batch(2), num_scheduled_tokens=[1, 2])
    assert str(error.value) == (
        "every num_scheduled_tokens entry must be an integer in 1..1, got 2"
    )


def test_a_step_record_names_its_clock_and_its_wall_time(model):
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    runner.capture_model()
    before = time.perf_counter()
    _, record = runner.execute_model(*batch(3))
    outer_ms = (time.perf_counter() - before) * 1e3
    assert record.clock == "thread_cpu"  # one torch thread (the module's fixture)
    assert 0 < record.wall_ms <= outer_ms


def test_a_span_reads_the_threads_cpu_time_and_the_wall_beside_it():
    # the spec-decode engine's whole-step span: a sleep holds no CPU, a busy loop does
    before = time.perf_counter()
    span = Span(torch.device("cpu"))
    time.sleep(0.2)
    ms, wall_ms = span.ms(), span.wall_ms()
    assert span.clock == "thread_cpu"
    assert ms < 50 and 200 <= wall_ms <= (time.perf_counter() - before) * 1e3
    # milliseconds of the thread's CPU time, no more than the readings around the span
    first = time.thread_time()
    span = Span(torch.device("cpu"))
    while time.thread_time() < first + 0.2:
        pass
    ms = span.ms()
    assert 190 <= ms <= (time.thread_time() - first) * 1e3
    # a GPU's work runs beside the host thread, which only waits for it: the wall clock
    assert Span(torch.device("cuda")).clock == "wall"


def test_a_runners_bad_model_warm_up_count_or_count_list_is_named(model):
    with pytest.raises(GraphlabError) as error:
        V0ModelRunner("tiny", "vllm-0.6.0", SizingConfig(8))
    assert str(error.value) == "model must be a LlamaForCausalLM, got str"
    with pytest.raises(GraphlabError) as error:
        V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8), num_warmups=-1)
    assert str(error.value) == "num_warmups must be an integer >= 0, got -1"
    # vLLM V0's two warm-up runs per size (vllm/worker/model_runner.py)
    assert V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8)).num_warmups == 2
    runner = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(8))
    runner.capture_model()
    with pytest.raises(GraphlabError) as error:
        runner.execute_model(*batch(2), num_scheduled_tokens=[1])
    assert str(error.value) == "num_scheduled_tokens must hold 2 values in [1, 1], got [1]"
