#!/usr/bin/env python3
"""Write data/vllm_plan_vectors_0_34_0.json: `plan`'s proposals on vLLM 0.34.0 fed back through
the 0.34.0 wheel's own config code.

Developer script, never run by tests. On seeded random configs it asks graphlab's planner for a
plan on vllm-0.34.0 (its own capture settings: decode_cudagraph_capture_request_sizes or
prefill_cudagraph_capture_token_sizes, the deprecated cudagraph_capture_sizes dropped), then sets
exactly those settings on the wheel's verbatim `VllmConfig._set_cudagraph_sizes` /
`_split_cudagraph_capture_sizes`, `CompilationConfig.resolve_cudagraph_mode_and_sizes` and model
runner V2's `CudaGraphManager` (scripts/make_sizing_vectors.py `v034_engine`, the wheel read in
place from PyPI with HTTP range requests) and records the graphs vLLM builds and its dispatch of
every uniform decode step B*(1+k), B = 1..S. tests/sizing/test_plan_vllm_0_34_0.py checks that the
kit still proposes the recorded settings and that vLLM's graphs and dispatch are the planned ones.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import urllib.request
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]
import make_sizing_vectors as msv  # noqa: E402

from graphlab.errors import GraphlabError  # noqa: E402
from graphlab.sizing.config import SizingConfig  # noqa: E402
from graphlab.sizing.engines import Vllm034  # noqa: E402
from graphlab.sizing.planner.optimum import Budget  # noqa: E402
from graphlab.sizing.planner.plan import plan  # noqa: E402

OUT = msv.REPO_ROOT / "data" / "vllm_plan_vectors_0_34_0.json"
SEED, COUNT = "graphlab-plan-0.34.0", 160
MODES = (None, None, "FULL_AND_PIECEWISE", "FULL_DECODE_ONLY", "PIECEWISE", "FULL")


def settings(rng: random.Random) -> dict:
    """One seeded config as the kit's SizingConfig fields, the budget and data-center Blackwell."""
    s = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(1, 512)])
    k = rng.choice([0, rng.randint(1, 3), rng.randint(1, 7)])
    sizes = user_max = decode_tokens = None
    if rng.random() < 0.2:
        sizes = sorted(rng.sample(range(1, 700), rng.randint(1, 10)))
    elif rng.random() < 0.1:
        user_max = rng.randint(s, 1100)
    if rng.random() < 0.15:
        decode_tokens = rng.randint(16, 2000)
    return {
        "max_num_seqs": s,
        "num_speculative_tokens": k,
        "max_num_batched_tokens": rng.choice([8192, 2048, max(s, rng.randint(s, 4 * s + 600))]),
        "cudagraph_mode": rng.choice(MODES),
        "cudagraph_capture_sizes": sizes,
        "max_cudagraph_capture_size": user_max,
        "max_decode_cudagraph_capture_tokens": decode_tokens,
        "method": rng.choice(["ngram", "eagle"]) if k else None,
        "max_graphs": rng.choice([None, rng.randint(1, 12)]),
        "data_center_blackwell": rng.random() < 0.25,
    }


def kit_setting(v: dict) -> tuple[Vllm034, SizingConfig]:
    """The kit's engine and config of one record."""
    sizes = v["cudagraph_capture_sizes"]
    cfg = SizingConfig(
        v["max_num_seqs"],
        v["num_speculative_tokens"],
        v["max_num_batched_tokens"],
        cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
        max_cudagraph_capture_size=v["max_cudagraph_capture_size"],
        cudagraph_mode=v["cudagraph_mode"],
        speculative_method=v["method"],
        max_decode_cudagraph_capture_tokens=v["max_decode_cudagraph_capture_tokens"],
    )
    return Vllm034(1024) if v["data_center_blackwell"] else Vllm034(), cfg


def kit_plan(v: dict):
    """The kit's plan of one record's config."""
    return plan(*kit_setting(v), budget=Budget(v["max_graphs"]))


def wheel_setting(v: dict, proposal: dict, default_mode: str) -> dict:
    """The wheel engine's setting: the record's config with only the proposed settings."""
    return {
        "max_num_seqs": v["max_num_seqs"],
        "num_speculative_tokens": v["num_speculative_tokens"],
        "max_num_batched_tokens": v["max_num_batched_tokens"],
        "cudagraph_mode": proposal.get("cudagraph_mode", default_mode),
        "cudagraph_capture_sizes": None,
        "max_cudagraph_capture_size": None,
        "performance_mode": None,
        "num_speculative_tokens_per_batch_size": None,
        "method": v["method"],
        "data_center_blackwell": v["data_center_blackwell"],
        "attention_cg_support": "ALWAYS",
    } | {name: proposal.get(name) for name in msv.V034_SPLIT_SETTINGS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    with urllib.request.urlopen(msv.PYPI_JSON, timeout=60) as r:
        index = json.load(r)
    src, wheel = msv.remote_wheel(msv.V034_VERSION, index)
    build = msv.v034_engine(src)
    rng, records = random.Random(SEED), []
    while len(records) < COUNT:
        v = settings(rng)
        try:
            result = kit_plan(v)
        except GraphlabError:
            continue  # the kit refuses to plan (e.g. no graphs): nothing to feed back
        proposal = result.compilation
        s = wheel_setting(v, proposal, result.policy.default_cudagraph_mode)
        vc, m, resolved = build(s)
        graphs = sorted(
            [d.cg_mode.name, d.num_tokens, d.num_reqs, d.uniform_token_count]
            for descs in m._capture_descs.values()
            for d in descs
        )
        q = 1 + v["num_speculative_tokens"]
        reachable = range(1, min(v["max_num_seqs"], v["max_num_batched_tokens"] // q) + 1)
        uniform = [msv._v2_outcome(m, b * q, b, q) for b in reachable]
        records.append(
            v
            | {
                "proposal": proposal,
                "resolved_mode": resolved.name,
                "graphs": graphs,
                "uniform": uniform,
            }
        )
    payload = msv.vectors_payload(
        {msv.V034_VERSION: wheel},
        {msv.V034_VERSION: list(dict.fromkeys(src.taken))},
        __doc__.split("\n\n")[1].replace("\n", " "),
        records,
    )
    msv.write_json_atomic(payload, args.out)
    print(f"{args.out}: {len(records)} plans")
    return 0


if __name__ == "__main__":
    sys.exit(main())
