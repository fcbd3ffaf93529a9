#!/usr/bin/env python3
"""Regenerate data/vllm_dynamic_vectors.json: dynamic speculative decoding
(speculative_config.num_speculative_tokens_per_batch_size, vLLM PR 32374, 0.24.0 on) on the
target side of every release that has it, from the released wheels' own code.

Developer script, never run by tests or at run time. For each release in VERSIONS it reads the
wheel's .py members (scripts/make_drafter_vectors.py's members-only zip, HTTP range requests)
without importing vllm, and records per seeded config (S, k, schedule, capture list, mode, model
runner):

- whether the wheel's `_get_v2_model_runner_unsupported_features` lets model runner V2 run
  dynamic speculation (its `speculative_config` block verbatim, method eagle): where it does
  not, vLLM falls back to model runner V1, and the V2 vectors are VLLM_USE_V2_MODEL_RUNNER=1's;
- the mode after the wheel's own `_maybe_override_dynamic_sd_cudagraph_mode` (run before the
  sizing, as `VllmConfig.__post_init__` does) and the WARNING it logs;
- the capture list after the wheel's `_set_cudagraph_sizes` (with the schedule) and rounding
  (make_sizing_vectors' `v1_engine`, every mode supported by the attention backend);
- model runner V2: the FULL uniform-decode graphs the wheel's own `CudaGraphManager` keeps and
  its `dispatch` of each verify batch of B = 1..S requests at the scheduler's query length
  1 + k(B) (`build_dynamic_sd_schedule_lookup`, verbatim);
- model runner V1: the wheel's own `CudagraphDispatcher.dispatch` of each verify batch
  (uniform_decode where 1 + k(B) is the configured 1 + k, as `_is_uniform_decode` tests), and
  the speculative methods whose schedule `_maybe_disable_dynamic_sd_for_v1` drops (0.33.0).

Only the standard library is used.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import random
import sys
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "vllm_dynamic_vectors.json"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


drafter_script = _load("make_drafter_vectors")
sizing = drafter_script.sizing
ns = sizing.ns

# One release inside each range of identical dynamic-speculation code, and their ends (0.22.0
# and 0.23.0 have no num_speculative_tokens_per_batch_size; 0.34.0: make_sizing_vectors).
VERSIONS = (
    "0.24.0", "0.25.0", "0.25.1", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0",
    "0.32.0", "0.33.0",
)  # fmt: skip
MODES = ("PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE", "NONE")
CONFIGS = 60  # seeded configs per release


def configs(version: str, seed: str = "graphlab-dynamic") -> list[tuple]:
    """(S, k, schedule, capture list or None, mode, runner), seeded per release."""
    rng = random.Random(f"{seed}-{version}")
    found = []
    for _ in range(CONFIGS):
        seqs = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(100, 300)])
        k = rng.randint(1, 7)
        sizes = None
        if rng.random() < 0.25:
            sizes = sorted(rng.sample(range(1, 600), rng.randint(1, 12)))
        found.append(
            (
                seqs,
                k,
                drafter_script.random_schedule(rng, seqs, k),
                sizes,
                rng.choice(MODES),
                rng.choice(("v1", "v2")),
            )
        )
    return found


def v2_takes_dynamic(src) -> bool:
    """Whether the wheel's `_get_v2_model_runner_unsupported_features` lets model runner V2 run
    an EAGLE config with a schedule (its `speculative_config` block, verbatim)."""
    check, self = sizing.v2_speculative_check(src)
    spec = ns(
        method="eagle",
        parallel_drafting=False,
        enable_adaptive_verification=False,
        use_heterogeneous_vocab=False,
        uses_dynamic_speculative_decoding=lambda: True,
    )
    unsupported: list[str] = []
    check(self, spec, unsupported, ns(NONE="NONE"))
    return not unsupported


def v1_drops_schedule_for(src) -> list[str]:
    """The speculative methods whose schedule the wheel's own `_maybe_disable_dynamic_sd_for_v1`
    drops on model runner V1 (static num_speculative_tokens instead; none before 0.33.0)."""
    member = "vllm/config/vllm.py"
    if not src.has(member, "_maybe_disable_dynamic_sd_for_v1", "VllmConfig"):
        return []
    names: dict = {"logger": sizing._Logger()}
    names["logger"].warning_once = names["logger"].warning
    check = src.exec_defs(member, ["_maybe_disable_dynamic_sd_for_v1"], names, cls="VllmConfig")[
        "_maybe_disable_dynamic_sd_for_v1"
    ]
    dropped = []
    for method in sizing.SPECULATIVE_METHODS:
        spec = ns(
            method=method,
            num_speculative_tokens=2,
            num_speculative_tokens_per_batch_size=[[1, 8, 1]],
            uses_dynamic_speculative_decoding=lambda: True,
        )
        check(ns(speculative_config=spec, use_v2_model_runner=False))
        if spec.num_speculative_tokens_per_batch_size is None:
            dropped.append(method)
    return dropped


def _path(mode_name: str) -> str:
    return "eager" if mode_name == "NONE" else mode_name.lower()


def release_vectors(version: str, src, seed: str) -> tuple[bool, list[dict]]:
    resolve, build, _, log, dispatcher = sizing.v1_engine(src)
    manager = sizing.v2_manager(src)
    names: dict = {}
    src.exec_defs(
        "vllm/v1/spec_decode/dynamic/utils.py",
        ["validate_and_normalize_dynamic_sd_schedule", "build_dynamic_sd_schedule_lookup"],
        names,
    )
    lookup = names["build_dynamic_sd_schedule_lookup"]
    takes = v2_takes_dynamic(src)
    vectors = []
    for seqs, k, schedule, sizes, mode, runner in configs(version, seed):
        entry = {
            "engine": f"vllm-{version}",
            "model_runner": runner,
            "cudagraph_mode": mode,
            "max_num_seqs": seqs,
            "num_speculative_tokens": k,
            "num_speculative_tokens_per_batch_size": schedule,
            "cudagraph_capture_sizes": sizes,
        }
        try:
            vc, _ = build(
                seqs, k, resolve(seqs, None), sizes and list(sizes), None, mode, runner == "v2",
                schedule,
            )  # fmt: skip
        except ValueError as error:
            vectors.append({**entry, "error": f"ValueError: {error}"})
            continue
        cc = vc.compilation_config
        query_lens = [1 + kb for kb in lookup(schedule, seqs, k)[1:]]
        entry |= {"resolved_mode": cc.cudagraph_mode.name, "warnings": list(log.lines)}
        # to 0.24.x model runner V2's CudaGraphManager.__init__ rounds the list itself
        m = manager(vc, k) if runner == "v2" else None
        entry["capture_sizes"] = sorted(cc.cudagraph_capture_sizes)
        batches = list(enumerate(query_lens, start=1))
        if m is not None:
            entry["full_graphs"] = sorted(
                [d.num_tokens, d.uniform_token_count]
                for descs in m._capture_descs.values()
                for d in descs
                if d.uniform_token_count
            )
            entry["verify"] = [sizing._v2_outcome(m, b * q, b, q)[1:] for b, q in batches]
        else:
            d = dispatcher(vc, k)
            verify = []
            for b, q in batches:
                runtime, desc = d.dispatch(b * q, uniform_decode=q == 1 + k, has_lora=False)
                graph = runtime.name != "NONE"
                verify.append([_path(runtime.name), desc.num_tokens if graph else None])
            entry["verify"] = verify
        vectors.append(entry)
    return takes, vectors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cache-dir", type=Path, default=drafter_script.DEFAULT_CACHE)
    # another seed draws configs the committed vectors do not hold (a held-out check)
    parser.add_argument("--seed", default="graphlab-dynamic")
    args = parser.parse_args()
    with urllib.request.urlopen(drafter_script.INDEX) as response:
        index = json.load(response)
    wheels, v2_takes, v1_drops, vectors = {}, {}, {}, []
    for version in VERSIONS:
        path, wheels[version] = drafter_script.fetch_members(version, args.cache_dir, index)
        src = sizing.WheelSource(path)
        v2_takes[version], found = release_vectors(version, src, args.seed)
        v1_drops[version] = v1_drops_schedule_for(src)
        vectors += found
        print(version, len(found), flush=True)
    out = {
        "provenance": {
            "script": "scripts/make_dynamic_vectors.py",
            "wheels": wheels,
            "configs_per_release": CONFIGS,
            "seed": args.seed,
        },
        "v2_takes_dynamic_speculation": v2_takes,
        "v1_drops_schedule_for": v1_drops,
        "vectors": vectors,
    }
    args.out.write_text(json.dumps(out, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
