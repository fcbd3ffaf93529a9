"""What each backend captures, read from its Backend value, without CUDA.

torch.cuda's capture calls are replaced by a recorder (streams, pools, graphs, free memory), and
the V1 runner captures as it would on a GPU: which stream and pool every graph of both families
went to, and what the loop's memory figure counts, follow from the backend value alone.
"""

import contextlib

import pytest
import torch

from graphlab.engine import graphs, runner
from graphlab.engine.device import BACKEND_VALUES, BACKENDS, resolve_backend
from graphlab.engine.model import build_model
from graphlab.engine.v0_runner import V0ModelRunner
from graphlab.engine.v1_runner import V1ModelRunner
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig

GRAPH_BYTES, WORKSPACE_BYTES = 3, 1000  # what one capture and a stream's first use take
CFG = SizingConfig(max_num_seqs=4, num_speculative_tokens=1, max_num_batched_tokens=6)

pytestmark = pytest.mark.usefixtures("one_thread")


class FakeStream:
    def wait_stream(self, other):
        pass


class FakeCuda:
    """torch.cuda's capture API as a recorder: a stream's first use allocates a workspace (as
    cuBLAS's per-stream workspace), each capture takes GRAPH_BYTES."""

    def __init__(self):
        self.free, self.streams, self.pools, self.captures, self.used = 10**6, [], [], [], set()

    def Stream(self, device):  # noqa: N802 (torch's name)
        self.streams.append(FakeStream())
        return self.streams[-1]

    def clear_workspaces(self):  # torch._C._cuda_clearCublasWorkspaces
        self.free += WORKSPACE_BYTES * len(self.used)
        self.used.clear()

    def graph_pool_handle(self):
        self.pools.append(object())
        return self.pools[-1]

    @contextlib.contextmanager
    def stream(self, stream):
        if stream not in self.used:
            self.used.add(stream)
            self.free -= WORKSPACE_BYTES
        yield

    @contextlib.contextmanager
    def graph(self, graph, pool=None, stream=None):
        self.captures.append((pool, stream))
        yield
        self.free -= GRAPH_BYTES

    def install(self, monkeypatch):
        for name in ("Stream", "graph_pool_handle", "stream", "graph"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))
        monkeypatch.setattr(torch._C, "_cuda_clearCublasWorkspaces", self.clear_workspaces, False)
        monkeypatch.setattr(torch.cuda, "CUDAGraph", object)
        monkeypatch.setattr(torch.cuda, "current_stream", lambda device=None: None)
        monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: None)
        monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
        monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (self.free, 0))
        monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: 10**6 - self.free)


class EagerStep:
    """compiled_step's stand-in: the same call, run eagerly (no compile in a unit test)."""

    cache_state = "cold"

    def __init__(self, model):
        self.model = model

    def compile(self, input_ids, positions, seq_slots, rows):
        return self.model.hidden_states(input_ids[:rows], positions[:rows], seq_slots[:rows])


@pytest.fixture
def cuda(monkeypatch):
    fake = FakeCuda()
    fake.install(monkeypatch)
    monkeypatch.setattr(graphs, "compiled_step", EagerStep)
    # the CPU model stands in for a CUDA one: the backend value is taken as given
    monkeypatch.setattr(runner, "resolve_backend", lambda backend, device: backend)
    return fake


@pytest.fixture(scope="module")
def model():
    m = build_model("tiny", seed=0)
    m.allocate_kv_cache(8, 16)
    return m


def test_backend_values_say_what_they_capture():
    assert [
        (b, BACKEND_VALUES[b].captures_graphs, BACKEND_VALUES[b].compiled) for b in BACKENDS
    ] == [
        ("cuda-graph", True, False),
        ("compiled-cuda-graph", True, True),
        ("cpu-compiled", False, True),
        ("cpu-emulated", False, False),
    ]
    assert all(
        BACKEND_VALUES[b].memory_measured == BACKEND_VALUES[b].captures_graphs for b in BACKENDS
    )
    cpu = torch.device("cpu")
    assert resolve_backend("auto", cpu).name == "cpu-emulated"
    assert resolve_backend("auto", cpu, "costs").name in ("cpu-compiled", "cpu-emulated")
    assert resolve_backend(BACKEND_VALUES["cpu-emulated"], cpu) is BACKEND_VALUES["cpu-emulated"]
    with pytest.raises(GraphlabError, match="'cuda-graph' needs the model on a CUDA device"):
        resolve_backend("cuda-graph", cpu)


@pytest.mark.parametrize("backend", ["cuda-graph", "compiled-cuda-graph"])
def test_v1_full_and_piecewise_share_one_stream_and_one_pool(cuda, model, backend):
    r = V1ModelRunner(model, "vllm-0.33.0", CFG, backend=BACKEND_VALUES[backend])
    records = r.capture_model()
    pieces = len(model.model.layers) + 1
    full, piecewise = r.capture_sizes, r.piecewise_sizes
    assert full and piecewise
    # every FULL size one graph, every PIECEWISE size one graph per piece: all captured
    assert len(cuda.captures) == len(full) + pieces * len(piecewise)
    assert all(g.graph is not None for g in r.graphs.values())
    assert all(None not in g.pieces for g in r.piecewise_graphs.values())
    assert len(cuda.streams) == 1 and {s for _, s in cuda.captures} == set(cuda.streams)
    assert len(cuda.pools) == 1 and {p for p, _ in cuda.captures} == set(cuda.pools)
    assert [r.family for r in records] == ["full"] * len(full) + ["piecewise"] * len(piecewise)
    assert {r.memory_kind for r in records} == {"measured"} and {r.backend for r in records} == {
        backend
    }
    # the loop figure, as vLLM's: the graphs and one capture stream's workspace, not two
    assert {r.capture_loop_bytes for r in records} == {
        len(cuda.captures) * GRAPH_BYTES + WORKSPACE_BYTES
    }
    assert [r.memory_bytes for r in records[: len(full)]] == [GRAPH_BYTES] * len(full)
    assert [r.memory_bytes for r in records[len(full) :]] == [pieces * GRAPH_BYTES] * len(piecewise)


def test_every_capture_loop_counts_its_stream_workspace_though_the_stream_is_reused(
    cuda, model, monkeypatch
):
    # PyTorch hands out pooled streams (32 per device): a later runner may get a stream whose
    # cuBLAS workspace exists already; the loop still counts one, as a first loop does.
    stream = cuda.Stream(None)
    monkeypatch.setattr(torch.cuda, "Stream", lambda device: stream)
    loops = []
    for _ in range(2):
        r = V1ModelRunner(model, "vllm-0.33.0", CFG, backend=BACKEND_VALUES["cuda-graph"])
        records = r.capture_model()
        loops.append(records[0].capture_loop_bytes - sum(x.memory_bytes for x in records))
    assert loops == [WORKSPACE_BYTES, WORKSPACE_BYTES]


def test_separate_pools_are_one_per_size_shared_by_its_pieces(cuda, model):
    r = V1ModelRunner(
        model, "vllm-0.33.0", CFG, backend=BACKEND_VALUES["cuda-graph"], graph_pool="separate"
    )
    records = r.capture_model()
    pieces = len(model.model.layers) + 1
    assert len(cuda.pools) == len(records) == len(r.capture_sizes) + len(r.piecewise_sizes)
    per_pool = [sum(p is pool for p, _ in cuda.captures) for pool in cuda.pools]
    assert per_pool == [1] * len(r.capture_sizes) + [pieces] * len(r.piecewise_sizes)
    assert len(cuda.streams) == 1


@pytest.mark.parametrize("backend", ["cpu-emulated", "cpu-compiled"])
def test_cpu_backends_capture_nothing_and_predict_memory(cuda, model, backend):
    r = V0ModelRunner(model, "vllm-0.6.0", SizingConfig(4), backend=BACKEND_VALUES[backend])
    records = r.capture_model()
    assert cuda.captures == [] and cuda.streams == [] and cuda.pools == []
    assert {rec.memory_kind for rec in records} == {"predicted"}
    assert all(g.graph is None for g in r.graph_runners.values())
    # cpu-compiled replays its compiled step; cpu-emulated runs the step eagerly
    assert all(
        (g.step is not None) == (backend == "cpu-compiled") for g in r.graph_runners.values()
    )
