#!/usr/bin/env python3
"""Run a vllm release's own sizing code on random configs and fail on the first config where the
kit's engine for that release answers differently.

Developer script (it reads the index and the wheels, so never run by the tests with the network).
scripts/check_vllm_releases.py says which releases the kit lists; this one says whether the
engine graphlab.sizing.versions maps a release to really is that release's code. For each release
it reads the wheel in place on PyPI (HTTP range requests on the zip, never the whole wheel),
extracts the sizing functions with scripts/make_sizing_vectors.py's own extraction for the
release's family, runs them on seeded configs, and compares every vector with the kit:

- early-v1 (0.8.0 to 0.11.x): `early_v1_vectors` (sizes and each batch's path);
- v1 (0.12.0 to 0.33.x; model runner V1 from 0.22.0): `v1_vectors` (sizes, dispatch, refusals);
- v2 (0.22.0 to 0.33.x, their default model runner V2): `v2_vectors` (graphs and dispatch);
- split (0.34.0 on): `v034_vectors` (prefill / decode graphs, recorded list, dispatch, drafter).

A release whose code the family's extraction cannot find fails loudly too (make_sizing_vectors
exits naming the missing function): the kit has no rule for it yet.

  scripts/check_release_code.py --release 0.34.0      one release (repeatable)
  scripts/check_release_code.py --unchecked           every index release from 0.8.0 on whose
                                                      sizing no data/vllm_sizing_vectors*.json
                                                      provenance has read
  scripts/check_release_code.py --vectors FILE        a recorded vectors file, offline

Exit 0 when every config matches, 1 at the first differing config (named, with what differs).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import urllib.request
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parent.parent)]

import make_sizing_vectors as msv  # noqa: E402
import numpy as np  # noqa: E402

from graphlab.errors import GraphlabError  # noqa: E402
from graphlab.sizing.config import SPLIT_CAPTURE_SETTINGS, SizingConfig  # noqa: E402
from graphlab.sizing.dispatch import PATH_CODES, BatchPath, graph_families  # noqa: E402
from graphlab.sizing.drafter import drafter  # noqa: E402
from graphlab.sizing.engines import get_engine  # noqa: E402
from graphlab.sizing.families import families_for  # noqa: E402
from graphlab.sizing.model_runner import release_key  # noqa: E402
from graphlab.sizing.versions import engine_for_version  # noqa: E402

DATA = msv.REPO_ROOT / "data"
SEED = "graphlab-release-check"
FIRST = "0.8.0"  # V0 releases are all read (data/vllm_sizing_vectors.json)
_RELEASE = re.compile(r"^\d+(\.\d+)+(\.post\d+)?$")  # no pre-releases (rc, dev)


# --- the comparisons: what the kit answers differently from one vector ([]: nothing) ------------


def _engine(release: str):
    return get_engine(engine_for_version(release))


def early_v1_mismatches(release: str, v: dict) -> list[str]:
    """An `early_v1_vectors` vector: the start-up error, the mode run, the sizes, and each
    uniform and mixed batch's path and padded size."""
    policy, sizes = _engine(release), v["cudagraph_capture_sizes"]
    cfg = SizingConfig(
        v["max_num_seqs"],
        v["num_speculative_tokens"],
        v["max_num_batched_tokens"],
        cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
        cudagraph_mode=v["cudagraph_mode"],
    )
    error = policy.startup_error(cfg)
    if "error" in v:
        return [] if (error or "").startswith(v["error"]) else [f"start-up error {error!r}"]
    if error:
        return [f"the kit refuses ({error}), vLLM starts"]
    found = []
    if policy.cudagraph_mode(cfg) != v["resolved_cudagraph_mode"]:
        found.append(f"mode {policy.cudagraph_mode(cfg).name}")
    if list(policy.capture_sizes(cfg)) != v["capture_sizes"]:
        found.append(f"capture sizes {list(policy.capture_sizes(cfg))}")
    for key in ("uniform", "mixed"):
        got = policy.dispatch_batches([b[0] for b in v[key]], cfg, uniform=key == "uniform")
        kit = [
            [int(n), PATH_CODES[p].value, int(size) if size else None]
            for n, p, size in zip(got.batch_size, got.path, got.graph_size, strict=True)
        ]
        found += [f"{key} {k} != {w}" for k, w in zip(kit, v[key], strict=True) if k != w][:3]
    return found


def v1_mismatches(release: str, v: dict) -> list[str]:
    """A `v1_vectors` vector (or start-up error): the sizes and each batch's outcome, "graph" for
    any graph the wheel's dispatcher replays."""
    policy = _engine(release)
    cfg = SizingConfig(
        v["max_num_seqs"],
        v["num_speculative_tokens"],
        v["max_num_batched_tokens"],
        model_runner=v.get("model_runner", "auto"),
    )
    error = policy.startup_error(cfg)
    if "error" in v:
        return [] if error and v["error"].startswith(error) else [f"start-up error {error!r}"]
    if error:
        return [f"the kit refuses ({error}), vLLM starts"]
    found = []
    if list(policy.capture_sizes(cfg)) != v["capture_sizes"]:
        found.append(f"capture sizes {list(policy.capture_sizes(cfg))}")
    outcomes = policy.dispatch_batches(np.array([o[0] for o in v["outcomes"]]), cfg).outcomes()
    kit = [
        [d.batch_size, "graph" if d.path.replays else d.path, d.graph_size, d.error]
        for d in outcomes
    ]
    return found + [f"{k} != {w}" for k, w in zip(kit, v["outcomes"], strict=True) if k != w][:3]


def v2_mismatches(release: str, v: dict) -> list[str]:
    """A `v2_vectors` vector: the list, the FULL and mixed graphs, and each batch's outcome."""
    policy, sizes = _engine(release), v["cudagraph_capture_sizes"]
    cfg = SizingConfig(
        v["max_num_seqs"],
        v["num_speculative_tokens"],
        v["max_num_batched_tokens"],
        model_runner="v2",
        cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
        cudagraph_mode=v["cudagraph_mode"],
    )
    if policy.startup_error(cfg):
        return [f"the kit refuses ({policy.startup_error(cfg)}), vLLM starts"]
    found = []
    if list(policy.capture_sizes(cfg)) != v["capture_sizes"]:
        found.append(f"capture sizes {list(policy.capture_sizes(cfg))}")
    families = graph_families(policy, cfg)
    full = sorted({g[1] for g in v["graphs"] if g[3] is not None})
    mixed = sorted({g[1] for g in v["graphs"] if g[3] is None})
    if (list(families.full_sizes), list(families.mixed_sizes)) != (full, mixed):
        found.append(f"graphs {families.full_sizes} {families.mixed_sizes}")
    for key in ("uniform", "mixed"):
        got = families.dispatch_batches(np.array([o[0] for o in v[key]]), key == "uniform")
        kit = [[d.batch_size, d.path, d.graph_size] for d in got.outcomes()]
        found += [f"{key} {k} != {w}" for k, w in zip(kit, v[key], strict=True) if k != w][:3]
    return found


def split_config(v: dict) -> SizingConfig:
    """A `v034_vectors` setting as the kit's SizingConfig."""
    sizes, schedule = v["cudagraph_capture_sizes"], v["num_speculative_tokens_per_batch_size"]
    return SizingConfig(
        v["max_num_seqs"],
        v["num_speculative_tokens"],
        v["max_num_batched_tokens"],
        cudagraph_capture_sizes=None if sizes is None else tuple(sizes),
        max_cudagraph_capture_size=v["max_cudagraph_capture_size"],
        cudagraph_mode=v["cudagraph_mode"],
        performance_mode=v["performance_mode"],
        speculative_method=v["method"],
        attention_cg_support=v["attention_cg_support"],
        num_speculative_tokens_per_batch_size=None
        if schedule is None
        else tuple(map(tuple, schedule)),
        **{name: v[name] for name in SPLIT_CAPTURE_SETTINGS},
    )


def split_policy(release: str, data_center_blackwell: bool):
    """The kit's engine for release, with data-center Blackwell's 1024-token default ceiling."""
    policy = _engine(release)
    return type(policy)(1024) if data_center_blackwell else policy


def _outcomes(batches) -> list[list]:
    paths = [PATH_CODES[int(c)] for c in batches.path]
    return [
        [int(n), "eager" if p is BatchPath.EAGER else p.name.lower(), int(g) if p.replays else None]
        for n, p, g in zip(batches.batch_size, paths, batches.graph_size, strict=True)
    ]


def split_mismatches(release: str, v: dict) -> list[str]:
    """A `v034_vectors` vector: the mode, every graph, the recorded list, every uniform decode
    batch B*q (q from the dynamic schedule where set), the mixed batches and the drafter."""
    policy, cfg = split_policy(release, v["data_center_blackwell"]), split_config(v)
    if "error" in v:
        error = policy.startup_error(cfg)
        if not error:
            return [f"vLLM refuses ({v['error']}), the kit starts"]
        # the split's own refusals word for word (the attention backend's are worded elsewhere)
        split_error = "above max_" in v["error"] or "cannot be combined" in v["error"]
        return [f"{error} != {v['error']}"] if split_error and error != v["error"] else []
    if policy.startup_error(cfg):
        return [f"the kit refuses ({policy.startup_error(cfg)}), vLLM starts"]
    found, families = [], families_for(policy, cfg)
    resolved = v["resolved_mode"] if v["graphs"] else "NONE"
    if families.cudagraph_mode.name != resolved and families.full_graphs + families.mixed_sizes:
        found.append(f"mode {families.cudagraph_mode.name} != {resolved}")
    full = sorted((g[1], g[3]) for g in v["graphs"] if g[3] is not None)
    if sorted(families.full_graphs) != full:
        found.append(f"decode graphs {sorted(families.full_graphs)} != {full}")
    mixed = sorted(g[1] for g in v["graphs"] if g[3] is None)
    if sorted(families.mixed_sizes) != mixed:
        found.append(f"prefill graphs {sorted(families.mixed_sizes)} != {mixed}")
    if resolved != "NONE" and policy.recorded_capture_sizes(cfg) != v["recorded_capture_sizes"]:
        found.append(f"recorded {policy.recorded_capture_sizes(cfg)}")
    ns = np.array([u[0] for u in v["uniform"]])
    lens = ns // np.arange(1, len(ns) + 1)
    kit = _outcomes(policy.dispatch_batches(ns, cfg, query_lens=lens))
    found += [f"uniform {k} != {w}" for k, w in zip(kit, v["uniform"], strict=True) if k != w][:3]
    if "drafter" in v:
        found += _drafter_mismatches(policy, cfg, v["drafter"])
    mixed_ns = np.array([m[0] for m in v["mixed"]])
    kit = _outcomes(policy.dispatch_batches(mixed_ns, cfg, uniform=False))
    found += [f"mixed {k} != {w}" for k, w in zip(kit, v["mixed"], strict=True) if k != w][:3]
    return found


def _drafter_mismatches(policy, cfg: SizingConfig, wheel: dict) -> list[str]:
    """What the kit's drafter of cfg answers differently from the wheel's draft managers."""
    steps = {step.name: step for step in drafter(policy, cfg).steps}
    kinds = [("draft prefill", "prefill", wheel["prefill_query_len"])]
    kinds += [("draft decode", "decode", 1)] if cfg.num_speculative_tokens >= 2 else []
    found = []
    for name, key, query_len in kinds:
        families = steps[name].families
        full = sorted((g[1], g[3]) for g in wheel[f"{key}_graphs"] if g[3] is not None)
        mixed = sorted(g[1] for g in wheel[f"{key}_graphs"] if g[3] is None)
        if sorted(families.full_graphs) != full or sorted(families.mixed_sizes) != mixed:
            found.append(f"{name} graphs {families.full_graphs} {families.mixed_sizes}")
        ns = np.arange(1, cfg.max_num_seqs + 1) * query_len
        kit = _outcomes(families.dispatch_batches(ns, True, np.full_like(ns, query_len)))
        found += [f"{name} {k} != {w}" for k, w in zip(kit, wheel[key], strict=True) if k != w][:3]
    return found


COMPARE = {
    "early-v1": early_v1_mismatches,
    "v1": v1_mismatches,
    "v2": v2_mismatches,
    "split": split_mismatches,
}


def families_of_release(release: str) -> list[str]:
    """The extraction families that apply to a release (its default model runner first)."""
    key = release_key(release)
    if key < release_key(FIRST):
        raise SystemExit(f"vllm {release}: V0, read by scripts/make_sizing_vectors.py alone")
    if key < release_key("0.12.0"):
        return ["early-v1"]
    if key >= release_key("0.34.0"):
        return ["split"]
    if key >= release_key("0.22.0"):  # model runner V2 the default
        return ["v2", "v1"]
    return ["v1"]


def vector_family(release: str, v: dict) -> str | None:
    """Which comparison a recorded vector takes (None: a V0 vector, not this script's)."""
    if release_key(release) < release_key(FIRST):
        return None
    if v.get("model_runner") == "v2":
        return "v2"
    return families_of_release(release)[-1]


def first_difference(family: str, release: str, vectors: list[dict]) -> tuple[dict, list] | None:
    """The first vector the kit answers differently, with what differs; None: all match. A
    config the kit refuses outright counts as a difference."""
    for v in vectors:
        try:
            found = COMPARE[family](release, v)
        except GraphlabError as refused:
            found = [f"the kit refuses the config: {refused}"]
        if found:
            return v, found
    return None


def report(family: str, release: str, vectors: list[dict]) -> int:
    """Print the outcome of one release's vectors of one family; 0 if all match, else 1."""
    engine = engine_for_version(release)
    differs = first_difference(family, release, vectors)
    if differs is None:
        print(f"vllm {release} ({family}): {len(vectors)} configs all match the kit's {engine}")
        return 0
    v, found = differs
    config = {k: val for k, val in v.items() if not isinstance(val, (list, dict)) or k in (
        "cudagraph_capture_sizes", "num_speculative_tokens_per_batch_size", *SPLIT_CAPTURE_SETTINGS
    )}  # fmt: skip
    print(
        f"vllm {release} ({family}) DIFFERS from the kit's {engine} at config {json.dumps(config)}"
        f": {'; '.join(found)}"
    )
    return 1


# --- where the vectors come from ------------------------------------------------------------------


def live_vectors(family: str, release: str, src, count: int) -> list[dict]:
    """The family's vectors from the release's own functions (make_sizing_vectors' extraction)."""
    if family == "early-v1":
        return msv.early_v1_vectors(release, src, SEED, count)
    if family == "v1":
        vectors, errors, _ = msv.v1_vectors(release, src)
        return vectors + errors
    if family == "v2":
        return msv.v2_vectors(release, src)
    return msv.v034_vectors(src, msv.v034_settings(SEED, count))


def recorded_vectors(path: Path) -> list[tuple[str, str, list[dict]]]:
    """(family, release, vectors) of a recorded vectors file, per release and family."""
    data = json.loads(path.read_text())
    wheels = list(data["provenance"]["wheels"])
    groups: dict = {}
    for v in data["vectors"] + data.get("startup_errors", []):
        release = v["engine"].removeprefix("vllm-") if "engine" in v else wheels[0]
        family = vector_family(release, v)
        if family is not None:
            groups.setdefault((family, release), []).append(v)
    return [(family, release, vectors) for (family, release), vectors in groups.items()]


def checked_releases() -> set[str]:
    """Every release whose sizing a data/vllm_sizing_vectors*.json file's provenance says was
    read (the drafter's, the oracle's and the plan's vectors check other things)."""
    found = set()
    for path in DATA.glob("vllm_sizing_vectors*.json"):
        wheels = json.loads(path.read_text()).get("provenance", {}).get("wheels", {})
        found |= set(wheels)
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--release", action="append", help="a vllm release, e.g. 0.34.0")
    which.add_argument(
        "--unchecked",
        action="store_true",
        help=f"every index release from {FIRST} on that no sizing vectors file has read",
    )
    which.add_argument("--vectors", type=Path, help="a recorded vectors file (offline)")
    parser.add_argument(
        "--count", type=int, default=120, help="seeded configs per release (early-v1, split)"
    )
    args = parser.parse_args(argv)
    if args.vectors is not None:
        for family, release, vectors in recorded_vectors(args.vectors):
            if report(family, release, vectors):
                return 1
        return 0
    with urllib.request.urlopen(msv.PYPI_JSON, timeout=60) as r:
        index = json.load(r)
    releases = args.release
    if args.unchecked:
        listed = [v for v in index["releases"] if _RELEASE.match(v) and index["releases"][v]]
        done = checked_releases()
        releases = sorted(
            (v for v in listed if release_key(v) >= release_key(FIRST) and v not in done),
            key=release_key,
        )
        print(f"{len(releases)} index releases from {FIRST} on not read yet: {', '.join(releases)}")
    for release in releases:
        try:
            engine_for_version(release)
        except GraphlabError as unmapped:
            print(f"vllm {release}: the kit maps it to no engine ({unmapped})")
            return 1
        src, _ = msv.remote_wheel(release, index)
        for family in families_of_release(release):
            if report(family, release, live_vectors(family, release, src, args.count)):
                return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
