"""The compiled-cuda-graph backend on CUDA: graphs captured over the torch.compile'd step.

Apart from tests/engine/test_gpu.py because its first compile is cold (Triton, 15-45 s): the GPU
check runs it as its optional last step, so its time cannot cut the other GPU tests short.
"""

import pytest
import torch
from helpers import batch, make_model, restore, runner, snapshot

from graphlab.sizing.config import SizingConfig

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compiled_cuda_graph_replay_equals_eager_for_every_captured_size():
    """The third GPU mode: CUDA graphs captured over the torch.compile'd step (vLLM V1's route)."""
    model = make_model("cuda-graph", "float32")
    cfg = SizingConfig(16)
    graphs = runner(model, "compiled-cuda-graph", cfg=cfg)
    eager = runner(model, "cuda-graph", cfg=cfg, enforce_eager=True)
    assert {r.backend for r in graphs.graph_records} == {"compiled-cuda-graph"}
    assert all(r.memory_kind == "measured" for r in graphs.graph_records)
    start = snapshot(model)
    for size in graphs.capture_sizes:
        outputs = []
        for r in (graphs, eager):
            restore(model, start)
            outputs.append(r.execute_model(*batch(size, model.device, seed=size)))
        (replayed, record), (reference, _) = outputs
        assert (record.path, record.graph_size) == ("graph", size)
        torch.testing.assert_close(replayed, reference, atol=1e-4, rtol=1e-4)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_compiled_cuda_graph_v1_verify_replay_equals_eager():
    """V1's verify step (1 + k tokens a row) over the same compile as V0's decode: the query
    length is unbacked, so this case runs the compiled attention's general path on CUDA."""
    from graphlab.bench.measurements import latency_rows
    from graphlab.bench.sampling import Timing
    from graphlab.engine.device import BACKEND_VALUES

    model = make_model("cuda-graph", "float32")
    cfg = SizingConfig(8, num_speculative_tokens=3)
    timing = Timing(BACKEND_VALUES["compiled-cuda-graph"], repeats=1, warmup=0)
    rows = latency_rows(model, "vllm-0.33.0", cfg, timing, [1, 2, 8])
    compiled = [row for row in rows if row["mode"] == "compiled-graph"]
    assert [row["path"] for row in compiled] == ["full"] * 3
    for row in compiled:
        assert row["replay_matches_eager"], (row["batch_size"], row["max_abs_logit_diff"])
