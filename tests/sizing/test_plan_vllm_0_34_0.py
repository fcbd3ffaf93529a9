"""`plan` on vLLM 0.34.0 proposes 0.34.0's own capture settings, checked by feeding them back
through the 0.34.0 wheel's own config code.

scripts/make_plan_vectors.py writes data/vllm_plan_vectors_0_34_0.json: per seeded config, the
kit's proposal, then the graphs the wheel's verbatim `_set_cudagraph_sizes` /
`_split_cudagraph_capture_sizes`, `resolve_cudagraph_mode_and_sizes` and `CudaGraphManager`
build from exactly those settings, and the manager's `dispatch` of every uniform decode step.
A missing file is a failure, never a skip.
"""

import functools
import importlib.util
import json

import numpy as np
import pytest
from helpers import ROOT

from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import Vllm034
from graphlab.sizing.families import families_for
from graphlab.sizing.planner.optimum import Budget
from graphlab.sizing.planner.plan import plan

VECTORS = ROOT / "data" / "vllm_plan_vectors_0_34_0.json"
DECODE, PREFILL = "decode_cudagraph_capture_request_sizes", "prefill_cudagraph_capture_token_sizes"


@functools.cache
def _plan_vectors():
    """scripts/make_plan_vectors.py, whose `kit_setting` reads a record as the kit's engine and
    config (the one reading the vectors were made with)."""
    spec = importlib.util.spec_from_file_location(
        "make_plan_vectors", ROOT / "scripts" / "make_plan_vectors.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def mismatches(v: dict) -> list[str]:
    """Where the kit's plan of one record differs from what the wheel built from its proposal."""
    policy, cfg = _plan_vectors().kit_setting(v)
    result = plan(policy, cfg, budget=Budget(v["max_graphs"]))
    found = []
    if result.compilation != v["proposal"]:
        return [f"proposes {result.compilation}, recorded {v['proposal']}"]
    q = cfg.decode_query_len
    decode = sorted((g[1], g[3]) for g in v["graphs"] if g[3] is not None)
    prefill = sorted(g[1] for g in v["graphs"] if g[3] is None)
    mode = policy.cudagraph_mode(cfg)
    if DECODE in v["proposal"]:
        planned = sorted((s, q) for s in result.capture_sizes)
        # the prefill graphs stay those of the user's own settings
        kept = sorted(families_for(policy, cfg).mixed_sizes)
    else:
        planned = []
        kept = sorted(result.capture_sizes) if mode.mixed_mode() else []
    if decode != planned:
        found.append(f"vLLM's decode graphs {decode} != planned {planned}")
    if prefill != kept:
        found.append(f"vLLM's prefill graphs {prefill} != {kept}")
    wheel = [0 if u[2] is None else u[2] for u in v["uniform"]]
    if wheel != result.plan.padded.tolist():
        found.append(f"vLLM's uniform dispatch {wheel} != the plan's {result.plan.padded.tolist()}")
    return found


@pytest.fixture(scope="module")
def vectors():
    assert VECTORS.exists(), f"{VECTORS} is missing: run scripts/make_plan_vectors.py"
    data = json.loads(VECTORS.read_text())
    assert list(data["provenance"]["wheels"]) == ["0.34.0"]
    return data["vectors"]


def test_the_records_cover_both_kinds_of_proposal(vectors):
    assert len(vectors) >= 150
    assert sum(DECODE in v["proposal"] for v in vectors) >= 80
    assert sum(PREFILL in v["proposal"] and DECODE not in v["proposal"] for v in vectors) >= 40
    legacy = [v for v in vectors if v["cudagraph_capture_sizes"] or v["max_cudagraph_capture_size"]]
    assert len(legacy) >= 30 and sum(v["data_center_blackwell"] for v in vectors) >= 30
    assert {v["resolved_mode"] for v in vectors} >= {"PIECEWISE", "FULL", "FULL_DECODE_ONLY"}
    # never the deprecated settings, which vLLM 0.34.0 refuses beside its own
    assert not any(
        {"cudagraph_capture_sizes", "max_cudagraph_capture_size"} & set(v["proposal"])
        for v in vectors
    )


def test_the_proposed_settings_give_the_planned_graphs_in_vllm(vectors):
    failures = {i: m for i, v in enumerate(vectors) if (m := mismatches(v))}
    assert not failures, (
        f"{len(failures)} of {len(vectors)} differ, e.g. {list(failures.items())[:2]}"
    )


def test_a_deprecated_list_would_have_replaced_the_prefill_graphs(vectors):
    """The check bites: the plan as the deprecated cudagraph_capture_sizes (what `plan` printed
    before) gives the same decode graphs but replaces the prefill graphs vLLM keeps."""
    v = next(v for v in vectors if DECODE in v["proposal"] and not v["cudagraph_capture_sizes"])
    policy, cfg = _plan_vectors().kit_setting(v)
    result = plan(policy, cfg, budget=Budget(v["max_graphs"]))
    old = families_for(policy, cfg, result.capture_sizes)
    wheel_prefill = sorted(g[1] for g in v["graphs"] if g[3] is None)
    assert sorted(old.mixed_sizes) != wheel_prefill


def test_the_plan_words_decode_graphs_in_requests():
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "graphlab", "plan", "--engine", "vllm-0.34.0"]
        + ["--max-num-seqs", "16", "--num-speculative-tokens", "2"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    # 0.34.0's default: 9 decode graphs of requests rounded from its token sizes at q 3
    assert "default: 9 graphs of 1, 2, 3, 4, 6, 8, 11, 14, 16 requests" in done.stdout
    assert "plan   : 9 graphs of 1, 2, 4, 6, 8, 10, 12, 14, 16 requests" in done.stdout
    assert "the flag leaves the 18 up to 96 tokens as they are" in done.stdout
    assert done.stdout.rstrip().endswith(
        "vllm: --compilation-config "
        "'{\"decode_cudagraph_capture_request_sizes\": [1, 2, 4, 6, 8, 10, 12, 14, 16]}'"
    )


def test_a_one_size_workload_warns_in_decode_graphs():
    from graphlab.sizing.planner.inputs import Workload

    result = plan("vllm-0.34.0", SizingConfig(8, 1), Workload(np.array([6]), np.array([1.0]), "x"))
    assert result.compilation == {DECODE: [3]}
    assert "ONE decode graph, of 3 requests (6 tokens)" in result.warnings[0]
    # on 0.33.0 the one list replaces the PIECEWISE graphs too
    assert (
        "a prefill, a mixed batch) runs EAGERLY"
        in plan(
            "vllm-0.33.0", SizingConfig(8, 1), Workload(np.array([6]), np.array([1.0]), "x")
        ).warnings[0]
    )


def test_plan_of_a_0_34_0_log_sets_its_own_settings(tmp_path, capsys):
    """`plan --vllm-log` on vllm-0.34.0: the planned list as 0.34.0's prefill sizes and decode
    request counts, which give the graphs the plan was replayed on; a line's own decode setting
    (which no log states) reaches the config through --vllm-args."""
    from graphlab.cli import main

    # S 6, k 6 (ngram), FULL_AND_PIECEWISE on [1, 2, 4, ..., 40]: steps of 21 and 35 tokens
    # replayed FULL graphs, one of 36 padded to 40 on a PIECEWISE graph (vLLM's own log shapes)
    prefix = "(APIServer pid=7) INFO 12-01 18:35:39 [cuda_graph.py:123] "
    text = (
        "(APIServer pid=7) INFO 12-01 18:35:01 [api_utils.py:286] non-default args: {'model_tag': "
        "'m', 'max_num_seqs': 6, 'speculative_config': {'method': 'ngram', "
        "'num_speculative_tokens': 6}, 'cudagraph_metrics': True}\n"
    )
    block = [
        "**CUDAGraph Config Settings:**", "", "- Mode: FULL_AND_PIECEWISE",
        "- Capture sizes: [1, 2, 4, 8, 16, 24, 32, 40]", "", "**CUDAGraph Stats:**", "",
        "| Unpadded Tokens | Padded Tokens | Num Paddings | Runtime Mode | Count |",
        "|---|---|---|---|---|", "| 21 | 21 | 0 | FULL | 5 |", "| 35 | 35 | 0 | FULL | 4 |",
        "| 36 | 40 | 4 | PIECEWISE | 2 |",
    ]  # fmt: skip
    log = tmp_path / "vllm.log"
    log.write_text(text + "".join(f"{prefix}{line}\n" for line in block))
    argv = ["plan", "--vllm-log", str(log), "--engine", "vllm-0.34.0", "--max-graphs", "3"]
    assert main([*argv, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    flag = result["compilation_config"]
    assert not {"cudagraph_capture_sizes", "max_cudagraph_capture_size"} & set(flag)
    policy, cfg = Vllm034(), SizingConfig(6, 6)
    own = SizingConfig(
        6,
        6,
        prefill_cudagraph_capture_token_sizes=tuple(flag[PREFILL]),
        decode_cudagraph_capture_request_sizes=tuple(flag[DECODE]),
    )
    planned = families_for(policy, cfg, result["headline"]["capture_sizes"])
    assert families_for(policy, own) == planned
    assert (planned.full_graphs, result["headline"]["padding_tokens"]) == (((21, 7), (35, 7)), 0)
