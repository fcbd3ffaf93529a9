"""Real CUDA graphs: replay equals eager, pool sharing saves memory, captures are recorded."""

import pytest
import torch

from graphlab.model import build_model
from graphlab.runner import ModelRunner
from graphlab.sizing import SizingConfig

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

NUM_SLOTS, MAX_SEQ_LEN = 64, 32


def cuda_model(dtype, preset="tiny"):
    model = build_model(preset, seed=0, dtype=dtype, device="cuda")
    model.allocate_kv_cache(NUM_SLOTS, MAX_SEQ_LEN)
    return model


def batch(n, seed=0):
    g = torch.Generator().manual_seed(seed)
    cells = torch.randperm(NUM_SLOTS * MAX_SEQ_LEN, generator=g)[:n]
    ids = torch.randint(0, 512, (n,), generator=g)
    return ids.cuda(), (cells % MAX_SEQ_LEN).cuda(), (cells // MAX_SEQ_LEN).cuda()


# bf16 replay and eager may pick different GEMM kernels for the padded shape; logits have std ~1.5.
@pytest.mark.parametrize("dtype, tol", [("float32", 1e-4), ("bfloat16", 6e-2)])
def test_replay_equals_eager_for_every_captured_size(dtype, tol):
    model = cuda_model(dtype)
    cfg = SizingConfig(max_num_seqs=NUM_SLOTS)
    graphs = ModelRunner(model, "vllm-0.6.0", cfg)
    graphs.capture_model()
    eager = ModelRunner(model, "vllm-0.6.0", cfg, enforce_eager=True)
    eager.capture_model()
    start = [(k.clone(), v.clone()) for k, v in model.kv_cache()]
    for size in graphs.capture_sizes:
        for n in sorted({size, max(1, size - 1)}):  # exact fit and one padded row
            outputs = []
            for runner in (graphs, eager):
                for (k, v), (k0, v0) in zip(model.kv_cache(), start):
                    k.copy_(k0), v.copy_(v0)
                outputs.append(runner.execute_model(*batch(n, seed=n)))
            (replayed, record), (reference, _) = outputs
            assert (record.path, record.graph_size, record.backend) == ("graph", size, "cuda-graph")
            torch.testing.assert_close(replayed, reference, atol=tol, rtol=tol)


def test_padding_writes_only_the_pad_row_on_cuda():
    model = cuda_model("float32")
    runner = ModelRunner(model, "vllm-0.6.0", SizingConfig(NUM_SLOTS))
    runner.capture_model()
    ids, pos, slots = batch(5, seed=1)
    before = [k.clone() for k, _ in model.kv_cache()]
    assert runner.execute_model(ids, pos, slots)[1].graph_size == 8
    untouched = torch.ones(NUM_SLOTS, MAX_SEQ_LEN, dtype=torch.bool, device="cuda")
    untouched[slots, pos] = False
    for (k, _), k0 in zip(model.kv_cache(), before):
        real, real0 = k[:NUM_SLOTS].transpose(1, 2), k0[:NUM_SLOTS].transpose(1, 2)
        assert torch.equal(real[untouched], real0[untouched])
        assert not torch.equal(real[~untouched], real0[~untouched])


def test_prefix_keyerror_on_cuda():
    model = cuda_model("bfloat16")
    runner = ModelRunner(model, "vllm-0.5.5", SizingConfig(8, num_speculative_tokens=4))
    runner.capture_model()
    with pytest.raises(KeyError, match="40"):
        runner.execute_model(*batch(40))


def test_shared_pool_costs_less_than_separate_pools_and_captures_are_recorded():
    model = cuda_model("bfloat16")
    totals = {}
    for graph_pool in ("shared", "separate"):
        runner = ModelRunner(model, "vllm-0.6.0", SizingConfig(NUM_SLOTS), graph_pool=graph_pool)
        records = runner.capture_model()
        assert [r.size for r in records] == sorted(runner.capture_sizes, reverse=True)
        assert all(r.capture_ms > 0 and r.warmup_ms > 0 for r in records)
        assert all(r.memory_kind == "measured" and r.predicted_bytes > 0 for r in records)
        totals[graph_pool] = (sum(r.pool_bytes for r in records),
                              sum(r.memory_bytes for r in records))
        del runner, records
        torch.cuda.empty_cache()
    assert totals["shared"][0] < totals["separate"][0]
    assert totals["shared"][1] < totals["separate"][1]
