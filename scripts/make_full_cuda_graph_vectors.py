#!/usr/bin/env python3
"""Regenerate data/vllm_full_cuda_graph_vectors.json: whether vLLM V1 0.9.0 to 0.10.0 starts
with compilation_config.full_cuda_graph=True (the kit's cudagraph_mode FULL) for an attention
backend on a device tier, read in every release of those (graphlab.sizing.full_cuda_graph).

Developer script, never run by tests or at run time. For each release it reads the wheel's .py
members (HTTP range requests on the wheel's zip, kept in a members-only zip under
build/wheel_members_full_graph/, git-ignored) without importing vllm, and over seeded configs
(a backend of graphlab.sizing.full_cuda_graph's table for the release, a device tier, max_num_seqs,
max_num_batched_tokens, the default capture list or a user one, PIECEWISE or FULL) runs, in the
order the wheel's `GPUModelRunner.initialize_attn_backend` loop has them:

- the runner's statements that test full_cuda_graph (0.9.0 to 0.9.1: FA3 alone; 0.9.2 on: the
  builder's `full_cudagraph_supported`), verbatim;
- the metadata builder's `__init__` statements that read full_cuda_graph or the FA version (the
  FlashAttention builder's FA2 and 992 refusals), verbatim, with the capture list the wheel's own
  `VllmConfig._set_cudagraph_sizes` and `CompilationConfig.init_with_cudagraph_sizes` leave
  (scripts/make_sizing_vectors.py `early_v1_engine`);
- `full_cudagraph_supported` evaluated along the builder's bases, and `get_flash_attn_version`
  run verbatim with the tier's compute capability (h100: 9.0, small: 8.0, b200: 10.0), every
  FlashAttention version available and no VLLM_FLASH_ATTN_VERSION.

A vector records the config and the ValueError vLLM raises (null: it starts). Only the standard
library is used.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import random
import sys
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "vllm_full_cuda_graph_vectors.json"
DEFAULT_CACHE = REPO_ROOT / "build" / "wheel_members_full_graph"
RELEASES = ("0.9.0", "0.9.0.1", "0.9.1", "0.9.2", "0.10.0")
MEMBER_PREFIXES = (
    "vllm/v1/attention/backends/",
    "vllm/attention/utils/fa_utils.py",
    "vllm/v1/worker/gpu_model_runner.py",
    "vllm/config.py",
)
RUNNER = "vllm/v1/worker/gpu_model_runner.py"
BACKENDS = "vllm/v1/attention/backends/"
FA_UTILS = "vllm/attention/utils/fa_utils.py"
CONFIGS = 240  # seeded configs per release

ns = __import__("types").SimpleNamespace


sys.path.insert(0, str(REPO_ROOT / "scripts"))
import make_attention_vectors as attention  # noqa: E402 (_Classes, TIERS, the drafter fetcher)

sizing = attention.sizing


def _function_of(statements: list[ast.stmt], params: list[str]):
    """A function of params whose body is the wheel's statements, verbatim."""
    node = ast.FunctionDef(
        name="statements",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(p) for p in params],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=copy.deepcopy(statements) + [ast.Pass()],
        decorator_list=[],
    )
    return node


def _mentions(node: ast.AST, *words: str) -> bool:
    text = ast.unparse(node)
    return any(word in text for word in words)


class Release:
    """One wheel's full_cuda_graph checks."""

    def __init__(self, version: str, src):
        self.version, self.src = version, src
        loop = next(
            n
            for n in ast.walk(src.node(RUNNER, "initialize_attn_backend", "GPUModelRunner"))
            if isinstance(n, ast.For)
        )
        # the loop body's statements in order: the runner's full_cuda_graph test, the builder's
        # construction (`attn_metadata_builder_i = ...get_builder_cls()(...)`)
        self.steps = []
        for stmt in loop.body:
            if isinstance(stmt, ast.If) and _mentions(stmt.test, "full_cuda_graph"):
                self.steps.append(("runner", stmt))
            elif isinstance(stmt, ast.Assign) and _mentions(stmt, "get_builder_cls()"):
                self.steps.append(("builder", stmt))
        if [kind for kind, _ in self.steps].count("runner") != 1:
            raise SystemExit(f"{version}: no single full_cuda_graph test in the runner's loop")
        files = [m for m in src.zip.namelist() if m.startswith(BACKENDS)]
        self.classes = attention._Classes(src, files)
        self.log = sizing._Logger()
        self.fa_version = {tier: self._fa_version(cap) for tier, cap in attention.TIERS.items()}
        self.capture = sizing.early_v1_engine(src)[0]

    def _fa_version(self, cap) -> int:
        platform = ns(
            get_device_capability=lambda: ns(major=cap[0], minor=cap[1]),
            is_xpu=lambda: False,
        )
        namespace = {
            "current_platform": platform,
            "is_fa_version_supported": lambda v: True,
            "fa_version_unsupported_reason": lambda v: None,
            "envs": ns(VLLM_FLASH_ATTN_VERSION=None),
            "logger": self.log,
        }
        fn = attention._exec_function(self.src.node(FA_UTILS, "get_flash_attn_version"), namespace)
        return fn()

    def builder_of(self, cls: str) -> str:
        return self.classes.lookup(cls, "get_builder_cls")[2].body[-1].value.id

    def supported(self, builder: str, fa: int) -> bool | None:
        found = self.classes.lookup(builder, "full_cudagraph_supported")
        if found is None:  # 0.9.0 to 0.9.1 have no such attribute
            return None
        return sizing.evaluate(found[2], {"get_flash_attn_version": lambda *a: fa})

    def _builder_init(self, builder: str, fa: int, cc, max_num_seqs: int) -> None:
        """The builder's __init__ statements that read full_cuda_graph or the FA version."""
        found = self.classes.lookup(builder, "__init__")
        if found is None:
            return
        body = [s for s in found[2].body if _mentions(s, "full_cuda_graph", "get_flash_attn")]
        params = ["self", "runner", "vllm_config", "compilation_config"]
        namespace = {
            "get_flash_attn_version": lambda *a: fa,
            "torch": ns(zeros=lambda *a, **k: None, int32=None),
            "_DEFAULT_MAX_NUM_SPLITS_FOR_CUDA_GRAPH": 16,
            "logger": self.log,
        }
        fn = attention._exec_function(_function_of(body, params), namespace)
        vllm_config = ns(compilation_config=cc, scheduler_config=ns(max_num_seqs=max_num_seqs))
        runner = ns(
            vllm_config=vllm_config, max_num_reqs=max_num_seqs, device=None, full_cuda_graph=True
        )
        self_ = ns(runner=runner, compilation_config=cc, device=None, vllm_config=vllm_config)
        fn(self_, runner, vllm_config, cc)

    def start(self, cls: str, tier: str, seqs: int, tokens: int, user, mode: str):
        """The ValueError initialize_attn_backend raises, or None."""
        sizes = self.capture(seqs, 0, tokens, user, mode)[0]
        full = mode == "FULL"
        cc = ns(full_cuda_graph=full, cudagraph_capture_sizes=sorted(sizes, reverse=True))
        fa, builder = self.fa_version[tier], self.builder_of(cls)
        backend_cls = type(cls, (), {})
        made = ns(full_cudagraph_supported=self.supported(builder, fa))
        runner = ns(
            vllm_config=ns(compilation_config=cc), full_cuda_graph=full, compilation_config=cc
        )
        namespace = {"get_flash_attn_version": lambda *a: fa, "logger": self.log}
        try:
            for kind, stmt in self.steps:
                if kind == "builder":
                    if full:
                        self._builder_init(builder, fa, cc, seqs)
                    continue
                params = ["self", "attn_backend_i", "attn_metadata_builder_i"]
                fn = attention._exec_function(_function_of([stmt], params), namespace)
                fn(runner, backend_cls, made)
        except ValueError as exc:
            return f"ValueError: {exc}"
        return None


def release_vectors(version: str, src, seed: str) -> dict:
    sys.path.insert(0, str(REPO_ROOT))
    from graphlab.sizing.full_cuda_graph import full_graph_range

    table = full_graph_range(version).classes
    release = Release(version, src)
    missing = [c for c in table.values() if c not in release.classes.by_name]
    if missing:
        raise SystemExit(f"{version}: {missing} not in the wheel")
    rng = random.Random(f"{seed}-{version}")
    vectors = []
    for _ in range(CONFIGS):
        name, tier = rng.choice(sorted(table)), rng.choice(sorted(attention.TIERS))
        seqs = rng.choice((1, 4, 8, 16, 64, 128, 256, 512, 1024))
        user = None
        if rng.random() < 0.5:
            user = sorted(rng.sample(range(1, 2049), rng.randint(1, 4)))
        tokens = max(seqs, *(user or [1])) + rng.choice((0, 64, 2048, 8192))
        mode = "FULL" if rng.random() < 0.85 else "PIECEWISE"
        error = release.start(table[name], tier, seqs, tokens, user, mode)
        vectors.append(
            {
                "backend": name,
                "device_tier": tier,
                "max_num_seqs": seqs,
                "max_num_batched_tokens": tokens,
                "cudagraph_capture_sizes": user,
                "cudagraph_mode": mode,
                "error": error,
            }
        )
    return {
        "flash_attn_version": release.fa_version,
        "full_cudagraph_supported": {
            name: {
                tier: release.supported(release.builder_of(cls), fa)
                for tier, fa in release.fa_version.items()
            }
            for name, cls in table.items()
        },
        "taken": sorted(set(src.taken)),
        "vectors": vectors,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", default="graphlab-full-cuda-graph")
    args = parser.parse_args(argv)
    index = json.load(urllib.request.urlopen(attention.drafter.INDEX))
    releases = {}
    for version in RELEASES:
        path, wheel = attention.drafter.fetch_members(
            version, args.cache_dir, index, MEMBER_PREFIXES
        )
        record = release_vectors(version, sizing.WheelSource(path), args.seed)
        releases[version] = record | {"wheel": wheel}
        refused = sum(v["error"] is not None for v in record["vectors"])
        print(version, f"{refused} of {len(record['vectors'])} refused", flush=True)
    payload = {
        "generated_by": "scripts/make_full_cuda_graph_vectors.py",
        "seed": args.seed,
        "notes": __doc__.split("\n\n", 1)[1].strip(),
        "releases": releases,
    }
    sizing.write_json_atomic(payload, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
