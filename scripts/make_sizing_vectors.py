#!/usr/bin/env python3
"""Regenerate data/vllm_sizing_vectors.json (and data/vllm_sizing_vectors_model_runner_v1.json,
data/vllm_sizing_vectors_model_runner_v2.json, data/vllm_sizing_vectors_0_34_0.json) from the
released vLLM wheels' own sizing code.
Run scripts/check_vllm_releases.py first: it fails when the index has a release
graphlab.sizing.versions.RELEASES lacks.

Developer script, never run by tests or at run time. It downloads the vllm wheels V0_VERSIONS,
V1_VERSIONS and RUNNER_VERSIONS from PyPI into a cache (build/wheels/, git-ignored), reads their
.py members with zipfile WITHOUT importing vllm (the wheels need CUDA), pulls the sizing
definitions out with `ast`, execs them in small namespaces with stand-in config objects, and
records, per (engine, max_num_seqs, num_speculative_tokens, max_num_batched_tokens), the captured
sizes and the path (graph / eager / crash) a batch of n rows (V0) or n tokens (V1) takes; and,
per release, which model runner a speculative method gets and how cudagraph_mode is lowered to
an attention backend's support.

What is verbatim and what is mirrored by hand is listed in the output's provenance
("functions" and "notes"). Only the standard library is used. Output is deterministic apart
from provenance.generated_at.
"""

from __future__ import annotations

import argparse
import ast
import collections
import copy
import dataclasses
import datetime
import enum
import functools
import hashlib
import itertools
import json
import os
import random
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path
from typing import NamedTuple

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "vllm_sizing_vectors.json"
# Model runner V1's vectors of the releases that default to model runner V2, kept apart so that
# the main file's "vectors" stay those of each release's default runner.
RUNNER_V1_NAME = "vllm_sizing_vectors_model_runner_v1.json"
# Model runner V2's graphs and dispatch of the releases before 0.32.0 that default to it.
RUNNER_V2_NAME = "vllm_sizing_vectors_model_runner_v2.json"
# V1 before 0.12.0 (0.8.0 to 0.11.2), read from the wheels on PyPI with HTTP range requests.
EARLY_V1_NAME = "vllm_sizing_vectors_v1_early.json"
DEFAULT_CACHE = REPO_ROOT / "build" / "wheels"

# The modelled releases, and one release inside each wider range of graphlab.sizing.versions
# (0.5.4: the 0.5 guard; 0.6.3: the MQA scorer's release; 0.15.1 and 0.16.0: 0.13's rules through
# a rewritten dispatcher; 0.14.x runs 0.13.0's functions unchanged; 0.19.0: 0.18's rules;
# 0.20.0: rounding in resolve_cudagraph_mode_and_sizes; 0.21.0: 0.20.1's rules; 0.6.6.post1 and
# 0.7.3: V0 sized in vllm/config.py, as from 0.6.5).
V0_VERSIONS = ("0.5.4", "0.5.5", "0.6.0", "0.6.3", "0.6.6.post1", "0.7.3")
V1_VERSIONS = (
    "0.12.0",
    "0.13.0",
    "0.15.1",
    "0.16.0",
    "0.17.0",
    "0.18.0",
    "0.19.0",
    "0.20.0",
    "0.21.0",
    # model runner V1 of the releases that default to V2 (0.22.0 to 0.28.0: 0.20.1's answers;
    # 0.29.0/0.30.0 and 0.31.0 to 0.33.0: uniform-decode sizes, rounded)
    "0.22.0",
    "0.25.0",
    "0.28.0",
    "0.29.0",
    "0.30.0",
    "0.31.0",
    "0.33.0",
)

# Model runner V2 (vllm/v1/worker/gpu/cudagraph_utils.py changed in each of these); 0.22.1, 0.25.1
# and 0.27.1 are byte-identical to their x.y.0 in every member read.
V2_VERSIONS = (
    "0.22.0", "0.23.0", "0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0",
    "0.31.0",
)  # fmt: skip

# V1 before 0.12.0: both ends of each range of graphlab.sizing.versions (0.10.0 and 0.11.0 alone).
EARLY_V1_VERSIONS = (
    "0.8.0", "0.8.2", "0.8.3", "0.8.4", "0.8.5", "0.8.5.post1", "0.9.0", "0.9.2", "0.10.0",
    "0.10.1", "0.10.2", "0.11.0", "0.11.1", "0.11.2",
)  # fmt: skip

# Which model runner vLLM picks: one release from each range of identical
# `VllmConfig._get_v2_model_runner_unsupported_features` speculative-method tests.
RUNNER_VERSIONS = ("0.22.0", "0.24.0", "0.25.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")
SPECULATIVE_METHODS = (
    "ngram", "ngram_gpu", "eagle", "eagle3", "mtp", "draft_model", "suffix", "medusa",
    "mlp_speculator", "custom_class", "dflash", "dspark", "extract_hidden_states",
)  # fmt: skip
# How the mode is lowered to the attention backend's support: 0.13.0's
# GPUModelRunner._check_and_update_cudagraph_mode, 0.25.0's and 0.33.0's
# CompilationConfig.resolve_cudagraph_mode_and_sizes.
ATTENTION_VERSIONS = ("0.13.0", "0.25.0", "0.33.0")
CG_SUPPORTS = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")
# cudagraph_mode vectors: every mode through the wheel's own CudagraphDispatcher (uniform decode).
MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
MODE_MAX_NUM_SEQS = (1, 3, 6, 8, 13, 40, 73)
# Edge values around the padding steps (1, 2, 4, multiples of 8), 128/256/512 and the V0 cap,
# plus five seeded random values so that no policy can be tuned to the edge list alone.
# fmt: off
EDGE_MAX_NUM_SEQS = (
    1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 100, 127, 128, 129, 255, 256, 257, 300, 512,
    1000, 1024,
)
# fmt: on
MAX_NUM_SEQS = tuple(
    sorted(
        set(EDGE_MAX_NUM_SEQS)
        | set(random.Random("graphlab-sizing-vectors").sample(range(1, 1025), 5))
    )
)
NUM_SPECULATIVE_TOKENS = tuple(range(9))
MAX_NUM_BATCHED_TOKENS = (None, 256, 512, 2048, 8192)
# Releases past 0.13.0 (read for the version map): the default and two budgets below the ceiling
# (300 is off the grid: 0.20.1 on capture it).
LATER_MAX_NUM_BATCHED_TOKENS = (None, 300, 512)
# Sampling of n per vector (see sample_batch_sizes); limit edges beyond the cap still count.
EDGE_BATCH_SIZES = (1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17)
SAMPLE_CAP = 300
EXPLICIT_SETTINGS = 150  # user-set capture settings per V1 version
STEP_POINTS = 3
RANDOM_POINTS = 2
# V1 defaults are resolved as an OpenAI-API server on one H200 (>= 70 GiB, not an A100).
H200_MEMORY_BYTES = 143771 * 2**20
H200_NAME = "NVIDIA H200"
STAND_IN_MAX_MODEL_LEN = 8192


# --------------------------------------------------------------------------- wheels and ast


def fetch_wheel(version: str, cache_dir: Path) -> Path:
    """Return the cached wheel for vllm==version, downloading it with pip if absent."""
    found = sorted(cache_dir.glob(f"vllm-{version}-*.whl"))
    if not found:
        cache_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"vllm=={version}",
                "--no-deps",
                "--only-binary=:all:",
                "-d",
                str(cache_dir),
            ],
            check=True,
        )
        found = sorted(cache_dir.glob(f"vllm-{version}-*.whl"))
    if len(found) != 1:
        raise SystemExit(f"expected one wheel for vllm=={version} in {cache_dir}, found {found}")
    return found[0]


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


class WheelSource:
    """The .py members of one wheel, parsed on demand; names taken verbatim are recorded."""

    def __init__(self, path: Path):
        self.zip = zipfile.ZipFile(path)
        self.trees: dict[str, ast.Module] = {}
        self.taken: list[str] = []

    def tree(self, member: str) -> ast.Module:
        if member not in self.trees:
            self.trees[member] = ast.parse(self.zip.read(member).decode("utf-8"), member)
        return self.trees[member]

    def has(self, member: str, name: str, cls: str | None = None) -> bool:
        return _find(self.tree(member), name, cls) is not None

    def node(self, member: str, name: str, cls: str | None = None) -> ast.AST:
        found = _find(self.tree(member), name, cls)
        if found is None:
            raise SystemExit(f"{member}: {cls + '.' if cls else ''}{name} not found")
        self.taken.append(f"{member}:{cls + '.' if cls else ''}{name}")
        return found

    def exec_defs(
        self, member: str, names: list[str], namespace: dict, cls: str | None = None
    ) -> dict:
        """Exec the named top-level (or class-member) definitions verbatim into namespace."""
        body = [_plain_function(self.node(member, name, cls)) for name in names]
        module = ast.fix_missing_locations(ast.Module(body=body, type_ignores=[]))
        exec(compile(module, f"<{member}>", "exec"), namespace)
        return namespace

    def expr(self, member: str, func: str, cls: str | None, pick, label: str) -> ast.expr:
        """The first expression inside cls.func for which pick(node) returns it (verbatim)."""
        for sub in ast.walk(self.node(member, func, cls)):
            got = pick(sub)
            if got is not None:
                self.taken[-1] += f" [{label}]"
                return got
        raise SystemExit(f"{member}: {cls}.{func}: {label} not found")


def _find(tree: ast.Module, name: str, cls: str | None) -> ast.AST | None:
    scope = tree.body
    if cls is not None:
        owner = next((n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls), None)
        if owner is None:
            return None
        scope = owner.body
    for node in scope:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name:
            return node
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return node
    return None


def _plain_function(node: ast.AST) -> ast.AST:
    """Drop decorators, annotations and function-local imports; the logic is left untouched.

    Annotations name vllm types that are not loaded here; the only local import
    (`from vllm.usage.usage_lib import UsageContext`) is replaced by a stand-in in the namespace.
    """
    if not isinstance(node, ast.FunctionDef):
        return node
    node = copy.deepcopy(node)
    node.decorator_list = []
    node.returns = None
    for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
        arg.annotation = None
    for parent in ast.walk(node):  # 0.28.0 on import current_platform inside an `if`
        for field in ("body", "orelse"):
            block = getattr(parent, field, None)
            if isinstance(block, list) and block:
                kept = [s for s in block if not isinstance(s, (ast.Import, ast.ImportFrom))]
                setattr(parent, field, kept or [ast.Pass()])
    return node


def evaluate(expr: ast.expr, namespace: dict):
    return eval(
        compile(ast.fix_missing_locations(ast.Expression(expr)), "<expr>", "eval"), dict(namespace)
    )


def _assign_to(target: str):
    """A picker for `target = <value>` (target is a name or self.attribute); returns <value>."""

    def pick(node):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            t = node.targets[0]
            name = (
                t.id
                if isinstance(t, ast.Name)
                else (f"self.{t.attr}" if isinstance(t, ast.Attribute) else None)
            )
            if name == target:
                return node.value
        return None

    return pick


class _Logger:
    """Stand-in for vllm's logger: the sizing code only logs; WARNING lines are kept in `lines`."""

    def __init__(self):
        self.lines: list[str] = []

    def warning(self, msg, *args):
        self.lines.append(msg % args if args else msg)

    def __getattr__(self, _name):
        return lambda *args, **kwargs: None


ns = types.SimpleNamespace

# --------------------------------------------------------------------------- sampling of n


def sample_batch_sizes(
    reach: int, capture_sizes: list[int], graph_limit: int, max_num_seqs: int, q: int, key: str
) -> list[int]:
    """Deterministic sample of n in [1, reach]: padding edges, the graph limit, workload
    points n = B*q, the largest reachable n, and seeded picks of capture-size steps and n."""
    cap = min(reach, SAMPLE_CAP)
    rng = random.Random(key)
    points = set(EDGE_BATCH_SIZES)
    points |= {graph_limit, graph_limit + 1, max_num_seqs, max_num_seqs + 1}
    points |= {capture_sizes[-1], capture_sizes[-1] + 1} if capture_sizes else set()
    points |= {b * q for b in (1, 2, 3, max_num_seqs // 2, max_num_seqs - 1, max_num_seqs)}
    points.add(reach)
    # c + 1 is the first n that pads past the captured size c.
    steps = [c for c in capture_sizes if c < cap]
    points |= {c + 1 for c in rng.sample(steps, min(STEP_POINTS, len(steps)))}
    points |= {rng.randint(1, cap) for _ in range(RANDOM_POINTS)}
    near = {p for p in points if 1 <= p <= cap}
    # Points above the cap are kept only where the outcome may change (limit edges, reach).
    far = {
        p
        for p in points
        if cap < p <= reach
        and (p in (graph_limit, graph_limit + 1, reach) or p - 1 in capture_sizes[-1:])
    }
    return sorted(near | far)


# --------------------------------------------------------------------------- V0 (0.5.5, 0.6.0)

V0_MEMBER = "vllm/worker/model_runner.py"


def v0_config_sizing(src: WheelSource):
    """0.6.5 on: runner(S) and pad(runner, n) from vllm/config.py's VllmConfig._set_cudagraph_sizes
    (the V0 branch), CompilationConfig.init_with_cudagraph_sizes and VllmConfig.pad_for_cudagraph;
    the runner's max_batchsize_to_capture is compilation_config.max_capture_size (its __init__)."""
    config = "vllm/config.py"
    names = {"envs": ns(VLLM_USE_V1=False), "logger": _Logger()}
    cc_cls = type(
        "CompilationConfig",
        (),
        src.exec_defs(config, ["init_with_cudagraph_sizes"], dict(names), cls="CompilationConfig"),
    )
    vc_cls = type(
        "VllmConfig",
        (),
        src.exec_defs(
            config, ["_set_cudagraph_sizes", "pad_for_cudagraph"], dict(names), cls="VllmConfig"
        ),
    )

    def runner(max_num_seqs: int):
        cc = cc_cls()
        cc.__dict__.update(
            cudagraph_capture_sizes=None, candidate_compile_sizes=None, compile_sizes=None
        )
        vc = vc_cls()
        vc.__dict__.update(
            scheduler_config=ns(max_num_seqs=max_num_seqs),
            model_config=ns(enforce_eager=False),
            compilation_config=cc,
        )
        vc._set_cudagraph_sizes()
        return ns(
            model_config=vc.model_config,
            max_seq_len_to_capture=8192,
            max_batchsize_to_capture=cc.max_capture_size,
            vllm_config=vc,
        )

    return runner, lambda r, n: r.vllm_config.pad_for_cudagraph(n)


def v0_engine(src: WheelSource):
    """capture_sizes(S), graph_limit(S) and dispatch(n, ...) built from one V0 model_runner.py."""
    if not src.has(V0_MEMBER, "_BATCH_SIZES_TO_CAPTURE"):  # 0.6.5 on: sized in vllm/config.py
        runner, pad = v0_config_sizing(src)
        module_ns = src.exec_defs(
            V0_MEMBER, ["_use_captured_graph"], {}, cls="ModelInputForGPUBuilder"
        )
        return _v0_functions(
            runner,
            # 0.7.0 renamed the captured list capture_sizes -> cudagraph_capture_sizes
            lambda s: sorted(
                vars(runner(s).vllm_config.compilation_config).get("capture_sizes")
                or runner(s).vllm_config.compilation_config.cudagraph_capture_sizes
            ),
            pad,
            module_ns["_use_captured_graph"],
        )
    names = ["_BATCH_SIZE_ALIGNMENT", "_BATCH_SIZES_TO_CAPTURE", "_get_graph_batch_size"]
    if src.has(V0_MEMBER, "_get_max_graph_batch_size"):
        names.append("_get_max_graph_batch_size")
    module_ns = src.exec_defs(V0_MEMBER, names, {})
    src.exec_defs(V0_MEMBER, ["_use_captured_graph"], module_ns, cls="ModelInputForGPUBuilder")
    capture_exprs = [
        src.expr(V0_MEMBER, "capture_model", "GPUModelRunnerBase", _assign_to(t), t)
        for t in ("graph_batch_size", "batch_size_capture_list")
    ]
    init_max = None
    if "_get_max_graph_batch_size" in module_ns:
        init_max = src.expr(
            V0_MEMBER,
            "__init__",
            "GPUModelRunnerBase",
            _assign_to("self.max_batchsize_to_capture"),
            "self.max_batchsize_to_capture",
        )

    def runner(max_num_seqs: int):
        # The attributes GPUModelRunnerBase.__init__ sets that the sizing code reads.
        self = ns(
            scheduler_config=ns(max_num_seqs=max_num_seqs),
            model_config=ns(enforce_eager=False),
            max_seq_len_to_capture=8192,
        )
        if init_max is not None:
            self.max_batchsize_to_capture = evaluate(init_max, {**module_ns, "self": self})
        return self

    def capture_sizes(max_num_seqs: int) -> list[int]:
        local = {**module_ns, "self": runner(max_num_seqs)}
        local["graph_batch_size"] = evaluate(capture_exprs[0], local)
        return sorted(evaluate(capture_exprs[1], local))

    return _v0_functions(
        runner,
        capture_sizes,
        lambda _, n: module_ns["_get_graph_batch_size"](n),
        module_ns["_use_captured_graph"],
    )


def _v0_functions(runner, capture_sizes, pad, verbatim):
    """graph_limit and dispatch from a release's runner stand-in, its padding and its verbatim
    _use_captured_graph."""

    def use(builder, n: int) -> bool:
        # 0.6.3 added a decode_only parameter; the others read builder.decode_only.
        if "decode_only" in verbatim.__code__.co_varnames[: verbatim.__code__.co_argcount]:
            return verbatim(builder, n, True, 1)
        return verbatim(builder, n, 1)

    def graph_limit(max_num_seqs: int) -> int:
        # The largest n for which _use_captured_graph holds (it is monotone in n).
        builder = ns(decode_only=True, runner=runner(max_num_seqs))
        n = 1
        while use(builder, n + 1):
            n += 1
        return n if use(builder, n) else 0

    def dispatch(n: int, max_num_seqs: int, graph_runners: dict):
        builder = ns(decode_only=True, runner=runner(max_num_seqs))
        if not use(builder, n):
            return [n, "eager", None, None]
        graph_batch_size = pad(builder.runner, n)
        try:
            graph_runners[graph_batch_size]  # execute_model: self.graph_runners[ve][size]
        except KeyError as exc:
            return [n, "crash", None, f"KeyError: {exc}"]
        return [n, "graph", graph_batch_size, None]

    return capture_sizes, graph_limit, dispatch


def v0_vectors(version: str, src: WheelSource) -> list[dict]:
    capture_sizes, graph_limit, dispatch = v0_engine(src)
    vectors = []
    for max_num_seqs in MAX_NUM_SEQS:
        sizes = capture_sizes(max_num_seqs)
        limit = graph_limit(max_num_seqs)
        graph_runners = {size: f"CUDAGraphRunner[{size}]" for size in sizes}
        for k in NUM_SPECULATIVE_TOKENS:
            q = k + 1
            # Batch expansion: n = B_s*(k+1) + B_0 rows with B_s + B_0 <= max_num_seqs.
            reach = max_num_seqs * q
            key = f"vllm-{version}/{max_num_seqs}/{k}"
            batch_sizes = sample_batch_sizes(reach, sizes, limit, max_num_seqs, q, key)
            vectors.append(
                {
                    "engine": f"vllm-{version}",
                    "max_num_seqs": max_num_seqs,
                    "num_speculative_tokens": k,
                    "max_num_batched_tokens": None,
                    "capture_sizes": sizes,
                    "outcomes": [dispatch(n, max_num_seqs, graph_runners) for n in batch_sizes],
                }
            )
    return vectors


# --------------------------------------------------------------------------- V1 (0.12.0, 0.13.0)


def runner_field(version: str) -> dict:
    """{"model_runner": "v1"} for a release that defaults to model runner V2 (the vectors come
    from model runner V1's functions), else {}."""
    key = [int(part) for part in version.split(".")[:3]]
    return {"model_runner": "v1"} if key >= [0, 22, 0] else {}


def v1_engine(src: WheelSource):
    comp, vcfg = "vllm/config/compilation.py", "vllm/config/vllm.py"
    args, sched = "vllm/engine/arg_utils.py", "vllm/config/scheduler.py"
    runner, disp = "vllm/v1/worker/gpu_model_runner.py", "vllm/v1/cudagraph_dispatcher.py"
    log = _Logger()
    # _maybe_override_dynamic_sd_cudagraph_mode's WARNING (no other sizing code here logs once)
    log.warning_once = log.warning
    # An H200 (compute capability 9.0) for the platform checks 0.28.0 on make while sizing.
    hopper = ns(is_device_capability_family=lambda family: family == 90)
    module_ns: dict = {"enum": enum, "logger": log, "current_platform": hopper}
    src.exec_defs(comp, ["CUDAGraphMode"], module_ns)
    src.exec_defs("vllm/utils/math_utils.py", ["round_up"], module_ns)
    dynamic = "vllm/v1/spec_decode/dynamic/utils.py"  # 0.24.0 on (vllm PR 32374)
    if dynamic in src.zip.namelist():
        # _set_cudagraph_sizes imports it inside the function (0.29.0 on): given as a global
        names = ["validate_and_normalize_dynamic_sd_schedule", "build_dynamic_sd_schedule_lookup"]
        src.exec_defs(dynamic, names, module_ns)
    # 0.16 moved the padding table into CudagraphDispatcher: then the dispatcher pads.
    cc_names = [
        name
        for name in (
            "post_init_cudagraph_sizes",
            "compute_bs_to_padded_graph_size",
            "adjust_cudagraph_sizes_for_spec_decode",
        )
        if src.has(comp, name, "CompilationConfig")
    ]
    cc_methods = src.exec_defs(comp, cc_names, dict(module_ns), cls="CompilationConfig")
    vc_names = [
        name
        for name in (
            "_set_cudagraph_sizes",
            "pad_for_cudagraph",
            "_maybe_override_dynamic_sd_cudagraph_mode",
        )
        if src.has(vcfg, name, "VllmConfig")
    ]
    vc_methods = src.exec_defs(vcfg, vc_names, dict(module_ns), cls="VllmConfig")
    pads_in_config = "compute_bs_to_padded_graph_size" in cc_names
    mode = module_ns["CUDAGraphMode"]

    usage = enum.Enum("UsageContext", ["LLM_CLASS", "OPENAI_API_SERVER"])
    platform = ns(
        get_device_total_memory=lambda: H200_MEMORY_BYTES,
        get_device_name=lambda: H200_NAME,
        is_tpu=lambda: False,
        is_device_capability=lambda capability: capability in ((9, 0), 90),  # 0.33.0: GB10 test
        is_cpu=lambda: False,
    )
    sched_consts = {}
    for name in ("DEFAULT_MAX_NUM_BATCHED_TOKENS", "DEFAULT_MAX_NUM_SEQS"):
        sched_consts[name] = evaluate(src.node(sched, name, "SchedulerConfig").value, {})
    args_ns = src.exec_defs(
        args,
        ["get_batch_defaults", "_set_default_max_num_seqs_and_batched_tokens_args"],
        {
            "current_platform": platform,
            "GiB_bytes": 1 << 30,
            "UsageContext": usage,
            "logger": _Logger(),
            "SchedulerConfig": ns(**sched_consts),
        },
        cls="EngineArgs",
    )
    verify_ns = src.exec_defs(
        sched, ["verify_max_model_len"], {"logger": _Logger()}, cls="SchedulerConfig"
    )

    def adjust_pick(node):
        # gpu_model_runner: `if <test>: self.compilation_config.adjust_cudagraph_sizes_...`
        if isinstance(node, ast.If) and any(
            isinstance(c, ast.Attribute) and c.attr == "adjust_cudagraph_sizes_for_spec_decode"
            for c in ast.walk(node.body[0])
        ):
            return node.test
        return None

    # 0.20.0 moved the rounding into CompilationConfig.resolve_cudagraph_mode_and_sizes.
    resolves = src.has(comp, "resolve_cudagraph_mode_and_sizes", "CompilationConfig")
    adjust_test = src.expr(
        comp if resolves else runner,
        "resolve_cudagraph_mode_and_sizes" if resolves else "_check_and_update_cudagraph_mode",
        "CompilationConfig" if resolves else "GPUModelRunner",
        adjust_pick,
        "if-test guarding adjust_cudagraph_sizes_for_spec_decode",
    )

    def eager_pick(node):
        # CudagraphDispatcher.dispatch: the first `if`, whose body returns NONE (eager).
        return node.test if isinstance(node, ast.If) else None

    eager_test = pads_in_config and src.expr(
        disp,
        "dispatch",
        "CudagraphDispatcher",
        eager_pick,
        "first if-test (returns CUDAGraphMode.NONE)",
    )

    compilation_cls = type("CompilationConfig", (), {k: cc_methods[k] for k in cc_names})
    vllm_cls = type("VllmConfig", (), {k: vc_methods[k] for k in vc_names})

    def resolve_max_num_batched_tokens(max_num_seqs: int, tokens: int | None) -> int:
        engine_args = ns(
            pipeline_parallel_size=1,
            tensor_parallel_size=1,
            max_num_batched_tokens=tokens,
            max_num_seqs=max_num_seqs,
            enable_chunked_prefill=True,
            performance_mode="balanced",  # read from 0.17.0 on; vLLM's default
        )
        # A classmethod in vLLM, called as self.get_batch_defaults(world_size).
        engine_args.get_batch_defaults = types.MethodType(
            args_ns["get_batch_defaults"], engine_args
        )
        set_defaults = args_ns["_set_default_max_num_seqs_and_batched_tokens_args"]
        extra = ()
        if "parallel_config" in set_defaults.__code__.co_varnames:  # 0.20.0 on: no batched DP MoE
            extra = (ns(use_batched_dp_moe=False),)
        set_defaults(
            engine_args,
            usage.OPENAI_API_SERVER,
            ns(max_model_len=STAND_IN_MAX_MODEL_LEN, is_multimodal_model=False),
            *extra,
        )
        scheduler = ns(
            max_num_batched_tokens=engine_args.max_num_batched_tokens,
            max_num_seqs=max_num_seqs,
            enable_chunked_prefill=True,
            max_num_partial_prefills=1,
            max_long_partial_prefills=1,
            long_prefill_token_threshold=0,
            max_num_active_seqs=None,  # 0.31.0 on; vLLM's default
        )
        verify_ns["verify_max_model_len"](scheduler, STAND_IN_MAX_MODEL_LEN)
        return engine_args.max_num_batched_tokens

    def build(
        max_num_seqs: int,
        k: int,
        tokens: int,
        user_sizes=None,
        user_max=None,
        cudagraph_mode="FULL_AND_PIECEWISE",
        use_v2_model_runner=False,
        schedule=None,
    ):
        """schedule: num_speculative_tokens_per_batch_size (dynamic speculation), or None."""
        log.lines.clear()
        cc = compilation_cls()
        cc.__dict__.update(
            cudagraph_mode=mode[cudagraph_mode],
            cudagraph_capture_sizes=user_sizes,
            max_cudagraph_capture_size=user_max,
            compile_sizes=None,
            pass_config=ns(enable_sp=False),
            bs_to_padded_graph_size=None,
        )
        vc = vllm_cls()
        vc.__dict__.update(
            model_config=ns(enforce_eager=False),
            compilation_config=cc,
            scheduler_config=ns(max_num_seqs=max_num_seqs, max_num_batched_tokens=tokens),
            speculative_config=(
                ns(
                    num_speculative_tokens=k,
                    num_speculative_tokens_per_batch_size=schedule,
                    uses_dynamic_speculative_decoding=lambda: schedule is not None,
                )
                if k
                else None
            ),
            parallel_config=ns(tensor_parallel_size=1, data_parallel_size=1),
            lora_config=None,
            performance_mode="balanced",  # read from 0.17.0 on; vLLM's default
            num_speculative_tokens=k,  # a VllmConfig property read from 0.22.0 on
            uniform_decode_query_len=1 + k,  # and this one from 0.29.0 on
            use_v2_model_runner=use_v2_model_runner,  # a property, read from 0.25.0 on
        )
        if schedule is not None:  # VllmConfig.__post_init__ runs it before the sizing
            vc._maybe_override_dynamic_sd_cudagraph_mode()
        vc._set_cudagraph_sizes()
        config_sizes = list(cc.cudagraph_capture_sizes)
        # gpu_model_runner: uniform_decode_query_len = 1 + num_speculative_tokens.
        q = 1 + k
        if evaluate(
            adjust_test,
            {
                "cudagraph_mode": cc.cudagraph_mode,
                "CUDAGraphMode": mode,
                "self": ns(uniform_decode_query_len=q),
                "uniform_decode_query_len": q,  # a parameter of resolve_cudagraph_mode_and_sizes
                # its parameter from 0.25.0 on (True from model runner V2's GPUModelRunner)
                "use_v2_model_runner": use_v2_model_runner,
            },
        ):
            adjust = cc.adjust_cudagraph_sizes_for_spec_decode
            # (q, tensor_parallel_size) to 0.31.0; 0.32.0 on drop the second
            adjust(q, 1) if adjust.__code__.co_argcount == 3 else adjust(q)
        return vc, config_sizes

    last = []  # [(vc, its dispatcher)]: one dispatcher per built config

    def dispatch(n: int, vc, k: int) -> list:
        if not pads_in_config:  # the wheel's own dispatcher pads (uniform decode)
            if not last or last[0][0] is not vc:
                last[:] = [(vc, dispatcher(vc, k))]
            runtime, desc = last[0][1].dispatch(n, uniform_decode=True, has_lora=False)
            graph = runtime.name != "NONE"
            return [n, "graph" if graph else "eager", desc.num_tokens if graph else None, None]
        dispatcher_ns = ns(
            keys_initialized=True,
            cudagraph_mode=vc.compilation_config.cudagraph_mode,
            compilation_config=vc.compilation_config,
        )
        if evaluate(eager_test, {"self": dispatcher_ns, "num_tokens": n, "CUDAGraphMode": mode}):
            return [n, "eager", None, None]
        return [n, "graph", vc.pad_for_cudagraph(n), None]

    def dispatcher(vc, k: int):
        """The wheel's own CudagraphDispatcher (its __init__'s attributes set by hand), keys
        initialized for the config's mode as GPUModelRunner does after capture-size resolution."""
        names = {"enum": enum, "NamedTuple": NamedTuple, "logger": _Logger()}
        # 0.17.0 made BatchDescriptor a frozen dataclass and the dispatcher `replace`s it
        names |= {"dataclass": dataclasses.dataclass, "replace": dataclasses.replace}
        src.exec_defs("vllm/forward_context.py", ["BatchDescriptor"], names)
        names |= {"CUDAGraphMode": mode, "VllmConfig": object, "product": itertools.product}
        cls = src.exec_defs(disp, ["CudagraphDispatcher"], names)["CudagraphDispatcher"]
        d = cls.__new__(cls)
        d.__dict__.update(
            vllm_config=vc,
            compilation_config=vc.compilation_config,
            uniform_decode_query_len=1 + k,
            cudagraph_keys={mode.PIECEWISE: set(), mode.FULL: set()},
            keys_initialized=False,
        )
        d.initialize_cudagraph_keys(vc.compilation_config.cudagraph_mode, 1 + k)
        return d

    return resolve_max_num_batched_tokens, build, dispatch, log, dispatcher


def mode_vectors(version: str, src: WheelSource) -> list[dict]:
    """Every cudagraph_mode: capture sizes and each uniform decode batch B*(k+1), B = 1..S, through
    the wheel's own CudagraphDispatcher.dispatch: [n, path, graph size, error]."""
    resolve, build, _, _, dispatcher = v1_engine(src)
    vectors = []
    for cudagraph_mode in MODES:
        for max_num_seqs in MODE_MAX_NUM_SEQS:
            for k in range(7):
                tokens = resolve(max_num_seqs, None)
                try:
                    vc, _ = build(max_num_seqs, k, tokens, None, None, cudagraph_mode)
                except ValueError:  # refused at start-up: the startup_errors vectors cover those
                    continue
                d, q = dispatcher(vc, k), k + 1
                outcomes = []
                for n in range(q, max_num_seqs * q + 1, q):
                    try:
                        runtime, desc = d.dispatch(n, uniform_decode=True, has_lora=False)
                    except AssertionError:
                        outcomes.append([n, "crash", None, "AssertionError"])
                        continue
                    path = {"NONE": "eager"}.get(runtime.name, runtime.name.lower())
                    outcomes.append([n, path, None if path == "eager" else desc.num_tokens, None])
                vectors.append(
                    {
                        "engine": f"vllm-{version}",
                        **runner_field(version),
                        "cudagraph_mode": cudagraph_mode,
                        "max_num_seqs": max_num_seqs,
                        "num_speculative_tokens": k,
                        "max_num_batched_tokens": None,
                        "capture_sizes": list(vc.compilation_config.cudagraph_capture_sizes),
                        "outcomes": outcomes,
                    }
                )
    return vectors


V2_MEMBER = "vllm/v1/worker/gpu/cudagraph_utils.py"
# CudaGraphManager's methods that decide its graphs and dispatch (those a release has).
V2_METHODS = (
    "__init__",
    "_build_lora_dispatch_map",
    "_resolve_effective_loras",
    "_maybe_ubatch_twin",
    "_init_candidates",
    "dispatch",
)
V2_MODES = ("PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
V2_SETTINGS = 60  # seeded user-set capture lists per release


def v2_manager_class(src: WheelSource, names: dict) -> type:
    """The wheel's own CudaGraphManager class (its deciding methods verbatim) in `names`, which
    holds CUDAGraphMode and the helpers its methods call."""
    names |= {
        "enum": enum,
        "dataclass": dataclasses.dataclass,
        "replace": dataclasses.replace,
        "defaultdict": collections.defaultdict,
        "product": itertools.product,
        "groupby": itertools.groupby,
        # one pipeline stage, no graph pool, no breakable graphs (stand-ins for what __init__ asks)
        "get_pp_group": lambda: ns(is_first_rank=True, is_last_rank=True),
        "current_platform": ns(get_global_graph_pool=lambda: None),
        "is_breakable_cudagraph_enabled": lambda *config: False,
    }
    src.exec_defs(V2_MEMBER, ["BatchExecutionDescriptor", "_is_compatible"], names)
    methods = [m for m in V2_METHODS if src.has(V2_MEMBER, m, "CudaGraphManager")]
    return type(
        "CudaGraphManager",
        (),
        src.exec_defs(V2_MEMBER, methods, dict(names), cls="CudaGraphManager"),
    )


def v2_manager(src: WheelSource):
    """A function (vc, k) -> the wheel's own model runner V2 `CudaGraphManager` for the config
    `build` made (verbatim __init__, _init_candidates and dispatch, with BatchExecutionDescriptor
    and _is_compatible; no LoRA, no microbatching, no varlen decode, graphs marked captured)."""
    names: dict = {"enum": enum, "logger": _Logger()}
    src.exec_defs("vllm/config/compilation.py", ["CUDAGraphMode"], names)
    src.exec_defs("vllm/utils/math_utils.py", ["round_up"], names)
    dynamic = "vllm/v1/spec_decode/dynamic/utils.py"
    if dynamic in src.zip.namelist():  # _init_candidates imports it inside (0.29.0 on)
        names_ = ["validate_and_normalize_dynamic_sd_schedule", "build_dynamic_sd_schedule_lookup"]
        src.exec_defs(dynamic, names_, names)
    cls = v2_manager_class(src, names)

    def manager(vc, k: int):
        vc.cache_config = ns(use_kda_recoverssm=False)  # 0.31.0 on: no recoverSSM workspace
        # the mode resolve_cudagraph_mode_and_sizes returns, as this namespace's CUDAGraphMode
        mode = names["CUDAGraphMode"][vc.compilation_config.cudagraph_mode.name]
        m = cls(vc, "cuda", mode, 1 + k)
        m._graphs_captured = True
        return m

    return manager


def v2_settings(version: str) -> list[tuple]:
    """(S, k, user capture list or None, mode): every mode on an edge grid with vLLM's default
    list, then seeded user-set lists (off-stride sizes, sizes past S*q)."""
    grid = [(s, k, None, m) for m in V2_MODES for s in MODE_MAX_NUM_SEQS for k in range(7)]
    rng = random.Random("graphlab-model-runner-v2")
    for _ in range(V2_SETTINGS):
        sizes = sorted(rng.sample(range(1, 600), rng.randint(1, 12)))
        grid.append((rng.randint(1, 80), rng.randint(0, 7), sizes, rng.choice(V2_MODES)))
    return grid


def _v2_outcome(manager, n: int, reqs: int, uniform_token_count: int | None) -> list:
    """[n, path, padded tokens or None] of the manager's own dispatch (no LoRA: 0 active, from
    0.24.0 a parameter)."""
    code = manager.dispatch.__code__
    extra = (0,) if "num_active_loras" in code.co_varnames[: code.co_argcount] else ()
    desc = manager.dispatch(reqs, n, uniform_token_count, *extra)
    path = {"NONE": "eager"}.get(desc.cg_mode.name, desc.cg_mode.name.lower())
    return [n, path, None if path == "eager" else desc.num_tokens]


def v2_vectors(version: str, src: WheelSource) -> list[dict]:
    """Model runner V2 of a release: per setting, the list the manager is given (after
    resolve_cudagraph_mode_and_sizes with use_v2_model_runner=True where the release has that
    parameter), the graphs `_init_candidates` keeps, and what the wheel's own `dispatch` returns
    for every uniform decode batch B*(k+1), B = 1..S, and for a mixed batch of n tokens (min(n, S)
    requests, no uniform token count) at n = 1 and at c and c+1 for every capture size c."""
    resolve, build, _, _, _ = v1_engine(src)
    manager = v2_manager(src)
    vectors = []
    for s, k, sizes, mode in v2_settings(version):
        q, tokens = 1 + k, resolve(s, None)
        try:
            vc, configured = build(s, k, tokens, sizes and list(sizes), None, mode, True)
            m = manager(vc, k)
        except ValueError:  # refused at start-up (the start-up vectors cover these)
            continue
        given = sorted(vc.compilation_config.cudagraph_capture_sizes)
        outcome = functools.partial(_v2_outcome, m)
        mixed_ns = sorted({1} | {n for c in given for n in (c, c + 1)})
        vectors.append(
            {
                "engine": f"vllm-{version}",
                "model_runner": "v2",
                "cudagraph_mode": mode,
                "max_num_seqs": s,
                "num_speculative_tokens": k,
                "max_num_batched_tokens": None,
                "cudagraph_capture_sizes": sizes,
                "config_capture_sizes": configured,
                "capture_sizes": given,
                "graphs": sorted(
                    [d.cg_mode.name, d.num_tokens, d.num_reqs, d.uniform_token_count]
                    for descs in m._capture_descs.values()
                    for d in descs
                ),
                "uniform": [outcome(b * q, b, q) for b in range(1, s + 1)],
                "mixed": [outcome(n, min(n, s), None) for n in mixed_ns],
            }
        )
    return vectors


def explicit_settings() -> list[tuple]:
    """Seeded user settings (S, k, T, cudagraph_capture_sizes, max_cudagraph_capture_size): sizes
    beyond T, duplicates, unsorted lists, maxima off the grid or above T, both set (half
    consistent)."""
    rng = random.Random("graphlab-explicit-capture-sizes")
    settings = []
    for i in range(EXPLICIT_SETTINGS):
        s, k = rng.randint(1, 600), rng.randint(0, 8)
        t = rng.choice([None, rng.randint(s, 3000)])
        sizes = [rng.randint(1, 1100) for _ in range(rng.randint(1, 12))]
        sizes += sizes[: rng.randint(0, 2)]
        user_max = rng.choice([rng.randint(1, 1100), rng.randint(1, 64)])
        kept = [x for x in sizes if x <= (t or 8192)]
        if i % 3 == 2 and kept and rng.random() < 0.5:
            user_max = max(kept)
        settings.append((s, k, t, sizes if i % 3 else None, user_max if i % 3 != 1 else None))
    return settings


def explicit_vectors(version: str, src: WheelSource) -> list[dict]:
    """Capture sizes, WARNING lines and start-up error of the V1 sizing for user-set settings."""
    resolve, build, _, log, _ = v1_engine(src)
    vectors = []
    for s, k, t, sizes, user_max in explicit_settings():
        entry = {
            "engine": f"vllm-{version}",
            **runner_field(version),
            "max_num_seqs": s,
            "num_speculative_tokens": k,
            "max_num_batched_tokens": t,
            "cudagraph_capture_sizes": sizes,
            "max_cudagraph_capture_size": user_max,
        }
        try:
            vc, _ = build(s, k, resolve(s, t), None if sizes is None else list(sizes), user_max)
            entry.update(
                capture_sizes=list(vc.compilation_config.cudagraph_capture_sizes), error=None
            )
        except ValueError as exc:
            entry.update(capture_sizes=[], error=f"ValueError: {exc}")
        vectors.append({**entry, "warnings": list(log.lines)})
    return vectors


def v1_vectors(version: str, src: WheelSource) -> tuple[list[dict], list[dict], int]:
    """Vectors, start-up errors, and the value max_num_batched_tokens=None resolves to."""
    resolve, build, dispatch, _, _ = v1_engine(src)
    vectors, startup_errors, defaults = [], [], set()
    for max_num_seqs in MAX_NUM_SEQS:
        for k in NUM_SPECULATIVE_TOKENS:
            later = version not in ("0.12.0", "0.13.0")
            for tokens in LATER_MAX_NUM_BATCHED_TOKENS if later else MAX_NUM_BATCHED_TOKENS:
                head = {
                    "engine": f"vllm-{version}",
                    **runner_field(version),
                    "max_num_seqs": max_num_seqs,
                    "num_speculative_tokens": k,
                    "max_num_batched_tokens": tokens,
                }
                try:
                    resolved = resolve(max_num_seqs, tokens)
                    if tokens is None:
                        defaults.add(resolved)
                    vc, config_sizes = build(max_num_seqs, k, resolved)
                except ValueError as exc:
                    startup_errors.append({**head, "error": f"ValueError: {exc}"})
                    continue
                sizes = list(vc.compilation_config.cudagraph_capture_sizes)
                q = k + 1
                # Uniform decode: B requests of q tokens each, B <= max_num_seqs.
                reach = max_num_seqs * q
                limit = vc.compilation_config.max_cudagraph_capture_size
                key = f"vllm-{version}/{max_num_seqs}/{k}/{tokens}"
                batch_sizes = sample_batch_sizes(reach, sizes, limit, max_num_seqs, q, key)
                vector = {**head, "capture_sizes": sizes}
                if config_sizes != sizes:
                    vector["config_capture_sizes"] = config_sizes
                vectors.append({**vector, "outcomes": [dispatch(n, vc, k) for n in batch_sizes]})
    if len(defaults) != 1:
        raise SystemExit(f"max_num_batched_tokens=None resolved to {sorted(defaults)}")
    return vectors, startup_errors, defaults.pop()


# --------------------------------------------------------------------------- model runner


def v2_speculative_check(src: WheelSource):
    """(check(self, speculative_config, unsupported, CUDAGraphMode), a config with nothing else
    set): the `if speculative_config is not None:` block of the wheel's
    `_get_v2_model_runner_unsupported_features`, verbatim, appending to `unsupported`."""
    member = "vllm/config/vllm.py"
    func = src.node(member, "_get_v2_model_runner_unsupported_features", "VllmConfig")
    block = next(
        node
        for node in func.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "speculative_config is not None"
    )
    src.taken[-1] += " [its speculative_config block]"
    wrapper = ast.parse("def check(self, speculative_config, unsupported, CUDAGraphMode): pass")
    wrapper.body[0].body = [copy.deepcopy(block)]
    namespace: dict = {}
    exec(compile(ast.fix_missing_locations(wrapper), f"<{member}>", "exec"), namespace)
    self = ns(
        parallel_config=ns(pipeline_parallel_size=1),
        lora_config=None,
        compilation_config=ns(cudagraph_mode="FULL_AND_PIECEWISE"),
    )
    return namespace["check"], self


def runner_vectors(version: str, src: WheelSource) -> dict:
    """Per speculative method, whether the wheel's `_get_v2_model_runner_unsupported_features`
    lets model runner V2 run it: its `if speculative_config is not None:` block, verbatim, on a
    config with nothing else set (no parallel drafting, pipeline parallelism, LoRA, dynamic
    speculation or adaptive verification)."""
    check, self = v2_speculative_check(src)
    runs = {}
    for method in SPECULATIVE_METHODS:
        spec = ns(
            method=method,
            parallel_drafting=False,
            enable_adaptive_verification=False,
            use_heterogeneous_vocab=False,
            uses_dynamic_speculative_decoding=lambda: False,
        )
        unsupported: list[str] = []
        check(self, spec, unsupported, ns(NONE="NONE"))
        runs[method] = not unsupported
    return {"release": version, "v2_runs_method": runs}


# --------------------------------------------------------------------------- attention


def attention_vectors(version: str, src: WheelSource) -> list[dict]:
    """Every cudagraph_mode x AttentionCGSupport x q in 1..3 through the wheel's own lowering
    (verbatim, with VLLM_COMPILE and attention among the splitting ops, the -O2/-O3 default):
    the mode it keeps, its WARNING lines and the ValueError it raises."""
    comp, runner = "vllm/config/compilation.py", "vllm/v1/worker/gpu_model_runner.py"
    log = _Logger()
    names: dict = {"enum": enum, "logger": log, "Enum": enum.Enum}
    src.exec_defs(comp, ["CUDAGraphMode", "CompilationMode"], names)
    support_member = next(
        member
        for member in ("vllm/v1/attention/backend.py", "vllm/v1/attention/backends/utils.py")
        if member in src.zip.namelist() and src.has(member, "AttentionCGSupport")
    )
    src.exec_defs(support_member, ["AttentionCGSupport"], names)
    mode, support_enum = names["CUDAGraphMode"], names["AttentionCGSupport"]
    in_runner = src.has(runner, "_check_and_update_cudagraph_mode", "GPUModelRunner") and (
        not src.has(comp, "resolve_cudagraph_mode_and_sizes", "CompilationConfig")
    )
    if in_runner:
        fn = src.exec_defs(
            runner, ["_check_and_update_cudagraph_mode"], names, cls="GPUModelRunner"
        )["_check_and_update_cudagraph_mode"]
    else:
        fn = src.exec_defs(
            comp, ["resolve_cudagraph_mode_and_sizes"], names, cls="CompilationConfig"
        )["resolve_cudagraph_mode_and_sizes"]
    vectors = []
    for mode_name, level, q in itertools.product(MODES, CG_SUPPORTS, (1, 2, 3)):
        log.lines.clear()
        cc = ns(
            cudagraph_mode=mode[mode_name],
            mode=names["CompilationMode"].VLLM_COMPILE,
            splitting_ops_contain_attention=lambda: True,
            use_inductor_graph_partition=False,
            adjust_cudagraph_sizes_for_spec_decode=lambda *args: None,
            cudagraph_capture_sizes=[],
        )
        support = support_enum[level]
        try:
            if in_runner:
                builder = ns(get_cudagraph_support=lambda config, spec, s=support: s)
                backend = type(
                    "FlashAttentionBackend", (), {"get_builder_cls": lambda b=builder: b}
                )
                self = ns(
                    compilation_config=cc,
                    vllm_config=None,
                    uniform_decode_query_len=q,
                    parallel_config=ns(tensor_parallel_size=1),
                    cudagraph_dispatcher=ns(initialize_cudagraph_keys=lambda *args: None),
                )
                fn(self, [{backend}], [ns(kv_cache_spec=None)])
            else:
                params = fn.__code__.co_varnames[: fn.__code__.co_argcount]
                extra = {"use_v2_model_runner": False} if "use_v2_model_runner" in params else {}
                cc.cudagraph_mode = fn(cc, support, "FlashAttentionBackend", q, **extra)
            resolved, error = cc.cudagraph_mode.name, None
        except ValueError as exc:
            resolved, error = None, f"ValueError: {exc}"
        vectors.append(
            {
                "engine": f"vllm-{version}",
                "cudagraph_mode": mode_name,
                "support": level,
                "query_len": q,
                "resolved": resolved,
                "warnings": list(log.lines),
                "error": error,
            }
        )
    return vectors


# --------------------------------------------------------------------------- main

NOTES = (
    "V0 (0.5.5, 0.6.0): verbatim from vllm/worker/model_runner.py: _BATCH_SIZE_ALIGNMENT, "
    "_BATCH_SIZES_TO_CAPTURE, _get_graph_batch_size, _get_max_graph_batch_size (0.6.0 only; "
    "absent in 0.5.5), ModelInputForGPUBuilder._use_captured_graph (exec'd as a function, called "
    "with a stand-in self: decode_only=True, enforce_eager=False, max_seq_len_to_capture=8192, "
    "max_decode_seq_len=1), and from GPUModelRunnerBase.capture_model the two expressions "
    "`graph_batch_size = ...` and `batch_size_capture_list = [...]` (plus, 0.6.0, the __init__ "
    "expression `self.max_batchsize_to_capture = _get_max_graph_batch_size(...)`), evaluated "
    "with the wheel's own constants. Mirrored by hand: build() padding n to "
    "_get_graph_batch_size(n) when _use_captured_graph holds, and execute_model's "
    "graph_runners[virtual_engine][graph_batch_size] as a real dict lookup over the captured "
    "sizes (a missing key is the crash, 'KeyError: <size>'). Outcomes are per n rows; V0 capture "
    "does not depend on k, k only sets the reach n <= max_num_seqs*(k+1) of batch expansion. "
    "V1 (0.12.0, 0.13.0): verbatim: CUDAGraphMode, round_up, CompilationConfig."
    "post_init_cudagraph_sizes / compute_bs_to_padded_graph_size / "
    "adjust_cudagraph_sizes_for_spec_decode, VllmConfig._set_cudagraph_sizes / "
    "pad_for_cudagraph, EngineArgs.get_batch_defaults / "
    "_set_default_max_num_seqs_and_batched_tokens_args, SchedulerConfig.verify_max_model_len and "
    "DEFAULT_* constants, the if-test in GPUModelRunner._check_and_update_cudagraph_mode that "
    "guards adjust_cudagraph_sizes_for_spec_decode, and the first if-test of "
    "CudagraphDispatcher.dispatch (eager when num_tokens > max_cudagraph_capture_size). "
    "Decorators, annotations and the function-local UsageContext import are stripped. "
    "Stand-ins (mirrored by hand): cudagraph_mode = FULL_AND_PIECEWISE (the O2/O3 default) "
    "assumed to survive attention-backend resolution (FlashAttention on Hopper supports "
    "ALWAYS (FA3) or UNIFORM_BATCH (FA2), both keep FULL decode graphs); tensor_parallel_size=1 "
    "(no sequence-parallel rounding); enforce_eager=False; no LoRA, no data parallel; "
    "uniform_decode_query_len = 1 + num_speculative_tokens; platform = one H200 "
    "(143771 MiB, 'NVIDIA H200'), usage context OPENAI_API_SERVER, max_model_len 8192, chunked "
    "prefill on, so max_num_batched_tokens=null resolves to 8192 for every max_num_seqs "
    "in the grid (an LLM-class engine would get 16384, a <70 GiB GPU "
    "2048 (API) / 8192 (LLM class): all >= 512, so the capture sizes are the same). "
    "capture_sizes is what the runner captures and the dispatcher pads to (after "
    "adjust_cudagraph_sizes_for_spec_decode when k >= 1); config_capture_sizes, present only "
    "where it differs, is compilation_config.cudagraph_capture_sizes straight after "
    "VllmConfig._set_cudagraph_sizes. "
    "V1 outcomes are per n tokens (uniform decode sends n = B*(k+1)); the FULL-vs-PIECEWISE "
    "choice is not recorded (both are 'graph' at the same padded size). Configurations vLLM "
    "refuses at start-up (SchedulerConfig: max_num_batched_tokens < max_num_seqs; 0.12.0: "
    "adjust_cudagraph_sizes_for_spec_decode finds no multiple of k+1 <= the largest size) are "
    "listed under startup_errors, not vectors. "
    f"Grid: max_num_seqs in {list(MAX_NUM_SEQS)}, num_speculative_tokens 0..8, "
    "max_num_batched_tokens (V1) in [null, 256, 512, 2048, 8192] (V0 records null; V1 releases "
    "after 0.13.0: [null, 300, 512]). "
    f"Sample of n per vector, within 1..reach (reach = max_num_seqs*(k+1), the most rows "
    f"(V0) or tokens (V1) a decode step can send): {list(EDGE_BATCH_SIZES)}, the graph limit L "
    f"and L+1, the largest captured size c_max and c_max+1, max_num_seqs and +1, B*(k+1) for "
    f"B in (1, 2, 3, S//2, S-1, S), reach itself, c+1 for {STEP_POINTS} seeded-random captured "
    f"sizes c and {RANDOM_POINTS} seeded-random n (seed = the vector's key string); points "
    f"above {SAMPLE_CAP} are kept only at L, L+1, c_max+1 and reach. "
    f"explicit: {EXPLICIT_SETTINGS} seeded user settings per V1 version "
    "(compilation_config.cudagraph_capture_sizes and/or max_cudagraph_capture_size) through the "
    "same verbatim _set_cudagraph_sizes and adjust_cudagraph_sizes_for_spec_decode, with the "
    "WARNING lines its logger receives (formatted msg % args) and the ValueError it raises "
    "(capture_sizes [] then). "
    "modes: per V1 version, every cudagraph_mode (assumed to survive attention-backend "
    f"resolution, as above) for max_num_seqs in {list(MODE_MAX_NUM_SEQS)}, k 0..6, "
    "max_num_batched_tokens null: the capture sizes after the same verbatim sizing and gated "
    "rounding, and every uniform decode batch n = B*(k+1), B = 1..S, through the wheel's own "
    "CudagraphDispatcher (verbatim class, with forward_context.BatchDescriptor; attributes its "
    "__init__ sets given by hand, lora off) after initialize_cudagraph_keys(mode, k+1): "
    "[n, 'full' | 'piecewise' | 'eager' | 'crash', padded size, 'AssertionError' on a crash]. "
    "Configs refused at start-up are left out. "
    "0.5.4, 0.6.3, 0.15.1, 0.16.0 and 0.19.0 stand for the wider release ranges of "
    "graphlab.sizing.versions; 0.6.3's _use_captured_graph takes decode_only as an argument "
    "(passed True). 0.6.6.post1 and 0.7.3 (as from 0.6.5) size V0 graphs in vllm/config.py: "
    "verbatim "
    "VllmConfig._set_cudagraph_sizes (envs.VLLM_USE_V1 False, its V0 default), "
    "CompilationConfig.init_with_cudagraph_sizes (no user sizes) and VllmConfig.pad_for_cudagraph, "
    "with the runner's max_batchsize_to_capture = compilation_config.max_capture_size (0.7.0 "
    "renamed the captured list to cudagraph_capture_sizes) and the "
    "padded size looked up among the captured sizes. From 0.16.0 the padding table lives in "
    "CudagraphDispatcher (_compute_bs_to_padded_graph_size) and VllmConfig.pad_for_cudagraph "
    "is gone: there the "
    "vectors' outcomes come from the wheel's own dispatcher (uniform decode), as the modes' do. "
    "0.22.0, 0.25.0, 0.28.0, 0.29.0, 0.30.0, 0.31.0 and 0.33.0 default to model runner V2: "
    'their entries are model runner V1\'s ("model_runner": "v1"; '
    "resolve_cudagraph_mode_and_sizes called with use_v2_model_runner=False, then the wheel's "
    "CudagraphDispatcher), written to vllm_sizing_vectors_model_runner_v1.json; stand-ins added "
    "for them: num_speculative_tokens and uniform_decode_query_len on the VllmConfig stand-in, "
    "uses_dynamic_speculative_decoding() False, is_multimodal_model False, max_num_active_seqs "
    "None, an H200's is_device_capability / is_device_capability_family (9.0). "
    "model_runners: per release in RUNNER_VERSIONS and speculative method, whether the verbatim "
    "`if speculative_config is not None:` block of VllmConfig._get_v2_model_runner_unsupported_"
    "features names it (no parallel drafting, pipeline parallelism, LoRA, dynamic speculation or "
    "adaptive verification). attention: per ATTENTION_VERSIONS release, every cudagraph_mode x "
    "AttentionCGSupport x q in 1..3 through the verbatim GPUModelRunner._check_and_update_"
    "cudagraph_mode (0.13.0; one backend class named FlashAttentionBackend reporting the support) "
    "or CompilationConfig.resolve_cudagraph_mode_and_sizes (0.25.0: use_v2_model_runner False; "
    "0.33.0), with VLLM_COMPILE and attention among the splitting ops: the mode kept, the WARNING "
    "lines and the ValueError."
)


V2_NOTES = (
    "Model runner V2 of V2_VERSIONS, per setting (S, k, user capture list or null, "
    "cudagraph_mode): the edge grid max_num_seqs in "
    f"{list(MODE_MAX_NUM_SEQS)} x k 0..6 x {list(V2_MODES)} with vLLM's default list, and "
    f"{V2_SETTINGS} seeded user lists (seed 'graphlab-model-runner-v2'); max_num_batched_tokens "
    "null (8192, as the V1 vectors resolve it). config_capture_sizes: the list straight after "
    "the verbatim VllmConfig._set_cudagraph_sizes (the V1 vectors' stand-ins); capture_sizes: "
    "the list the manager holds after the verbatim resolve_cudagraph_mode_and_sizes rounding "
    "test (use_v2_model_runner=True, GPUModelRunner's argument from 0.25.0; 0.22.0 to 0.24.0 "
    "have no such parameter) and the verbatim CudaGraphManager.__init__ (which to 0.24.0 calls "
    "adjust_cudagraph_sizes_for_spec_decode itself). graphs: every descriptor `_init_candidates` "
    "keeps, [cg_mode, num_tokens, num_reqs, uniform_token_count]. uniform: [n, path, padded "
    "tokens or null] of the verbatim `dispatch(B, B*(k+1), k+1, 0)` for B = 1..S; mixed: of "
    "`dispatch(min(n, S), n, None, 0)` at n = 1 and at c and c+1 for every capture size c "
    "(the outcome of a mixed batch changes only there). Verbatim: BatchExecutionDescriptor, "
    "_is_compatible, CudaGraphManager.__init__ / _build_lora_dispatch_map / "
    "_resolve_effective_loras / _maybe_ubatch_twin / _init_candidates / dispatch (those the "
    "release has), CUDAGraphMode, round_up. Stand-ins: one pipeline stage, no graph pool, no "
    "breakable graphs, no LoRA, no microbatching, no varlen decode (no adaptive verification), "
    "no dynamic speculation, no recoverSSM, graphs marked captured; the mode is assumed to "
    "survive attention-backend resolution, as in the V1 vectors. Settings vLLM refuses at "
    "start-up are left out."
)


def model_runner_v2_payload(cache_dir: Path) -> dict:
    """data/vllm_sizing_vectors_model_runner_v2.json: model runner V2 of V2_VERSIONS."""
    wheels, functions, vectors = {}, {}, []
    for version in V2_VERSIONS:
        path = fetch_wheel(version, cache_dir)
        wheels[version] = {"file": path.name, "sha256": sha256_of(path)}
        src = WheelSource(path)
        vectors += v2_vectors(version, src)
        functions[version] = list(dict.fromkeys(src.taken))
    return vectors_payload(wheels, functions, V2_NOTES, vectors)


# --------------------------------------------------------------------------- 0.34.0

# 0.34.0 removes model runner V1 and splits the capture sizes into prefill token counts and decode
# request counts (VllmConfig._split_cudagraph_capture_sizes): read apart from the releases above.
V034_VERSION = "0.34.0"
V034_NAME = "vllm_sizing_vectors_0_34_0.json"
V034_SETTINGS = 420
V034_SEED = "graphlab-vllm-0.34.0"
V034_SPLIT_SETTINGS = (
    "prefill_cudagraph_capture_token_sizes",
    "max_prefill_cudagraph_capture_tokens",
    "decode_cudagraph_capture_request_sizes",
    "max_decode_cudagraph_capture_requests",
    "max_decode_cudagraph_capture_tokens",
)
# The methods whose drafter 0.34.0's vectors record (single-module MTP; no dynamic schedule).
V034_DRAFTERS = ("eagle", "eagle3", "mtp", "draft_model")
V034_METHODS = ("eagle", "eagle3", "mtp", "draft_model", "ngram", "suffix")
V034_MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
V034_CONFIG_NAMES = (
    "CUDAGraphMode",
    "decode_cudagraph_capture_shapes",
    "decode_cudagraph_capture_max_tokens",
    "_walk_grid",
    "prefill_cudagraph_capture_grid",
    "decode_cudagraph_capture_grid",
    "varlen_decode_cudagraph_capture_grid",
)
V034_VLLM_CONFIG_METHODS = (
    "_set_cudagraph_sizes",
    "_split_cudagraph_capture_sizes",
    "get_decode_cudagraph_query_lens",
    "get_draft_decode_cudagraph_request_sizes",
    "get_varlen_decode_cudagraph_token_sizes",
)


def v034_engine(src: WheelSource):
    """A function (setting) -> the wheel's own resolved config and CudaGraphManager: the verbatim
    VllmConfig._set_cudagraph_sizes with _split_cudagraph_capture_sizes and its helpers, then the
    verbatim CompilationConfig.resolve_cudagraph_mode_and_sizes and CudaGraphManager (no Mamba
    layers, piecewise capture available: a VLLM_COMPILE model), as GPUModelRunner builds them."""
    comp, vcfg = "vllm/config/compilation.py", "vllm/config/vllm.py"
    names: dict = {"enum": enum, "bisect": __import__("bisect"), "math": __import__("math")}
    names |= {"logger": _Logger()}
    src.exec_defs(comp, list(V034_CONFIG_NAMES), names)
    src.exec_defs("vllm/utils/math_utils.py", ["round_up", "cdiv"], names)
    dyn = "vllm/v1/spec_decode/dynamic/utils.py"
    src.exec_defs(
        dyn,
        ["validate_and_normalize_dynamic_sd_schedule", "build_dynamic_sd_schedule_lookup"],
        names,
    )
    support = enum.Enum(
        "AttentionCGSupport",
        {"ALWAYS": 3, "UNIFORM_BATCH": 2, "UNIFORM_SINGLE_TOKEN_DECODE": 1, "NEVER": 0},
    )
    compile_mode = enum.Enum("CompilationMode", ["NONE", "STOCK_TORCH_COMPILE", "VLLM_COMPILE"])
    cc_methods = src.exec_defs(
        comp,
        ["post_init_cudagraph_sizes", "resolve_cudagraph_mode_and_sizes"],
        dict(names, CompilationMode=compile_mode, AttentionCGSupport=support),
        cls="CompilationConfig",
    )
    vc_globals = src.exec_defs(vcfg, list(V034_VLLM_CONFIG_METHODS), dict(names), cls="VllmConfig")
    vllm_cls = type("VllmConfig", (), {n: vc_globals[n] for n in V034_VLLM_CONFIG_METHODS})
    cc_names = ("post_init_cudagraph_sizes", "resolve_cudagraph_mode_and_sizes")
    compilation_cls = type("CompilationConfig", (), {n: cc_methods[n] for n in cc_names})
    mode = names["CUDAGraphMode"]
    manager_cls = v2_manager_class(src, names)

    def build(s: dict):
        """(vc, manager, resolved mode) for one setting; ValueError/AssertionError as vLLM's."""
        names["logger"].lines.clear()
        blackwell = s["data_center_blackwell"]
        platform = ns(is_device_capability_family=lambda family: blackwell and family == 100)
        # the function-local `from vllm.platforms import current_platform` (and the dynamic
        # speculation lookup) are dropped by _plain_function: given as globals instead
        vc_globals["current_platform"] = platform
        cc = compilation_cls()
        cc.__dict__.update(
            cudagraph_mode=mode[s["cudagraph_mode"]],
            cudagraph_capture_sizes=s["cudagraph_capture_sizes"],
            max_cudagraph_capture_size=s["max_cudagraph_capture_size"],
            **{name: s[name] for name in V034_SPLIT_SETTINGS},
            compile_sizes=None,
            mode=compile_mode.VLLM_COMPILE,
            use_inductor_graph_partition=False,
            splitting_ops_contain_attention=lambda: True,
        )
        k, schedule = s["num_speculative_tokens"], s["num_speculative_tokens_per_batch_size"]
        spec = None
        if k:
            spec = ns(
                num_speculative_tokens=k,
                num_speculative_tokens_per_batch_size=schedule,
                uses_dynamic_speculative_decoding=lambda: schedule is not None,
                method=s["method"],
                use_multi_module_mtp=lambda: False,
                use_gemma4_mtp=lambda: False,
                enable_adaptive_verification=False,
            )
        vc = vllm_cls()
        vc.__dict__.update(
            model_config=ns(enforce_eager=False),
            compilation_config=cc,
            scheduler_config=ns(
                max_num_seqs=s["max_num_seqs"], max_num_batched_tokens=s["max_num_batched_tokens"]
            ),
            speculative_config=spec,
            parallel_config=ns(tensor_parallel_size=1, data_parallel_size=1),
            cache_config=ns(use_kda_recoverssm=False),
            performance_mode=s["performance_mode"] or "balanced",
            num_speculative_tokens=k,
            uniform_decode_query_len=1 + k,
        )
        vc._set_cudagraph_sizes()
        resolved = cc.resolve_cudagraph_mode_and_sizes(
            support[s["attention_cg_support"]],
            "FlashAttentionBackend",
            1 + k,
            kv_cache_config=ns(has_mamba_layers=False, num_blocks=1 << 20),
            max_num_reqs=s["max_num_seqs"],
            piecewise_capture_available=True,
        )
        query_lens = vc.get_decode_cudagraph_query_lens(1 + k)
        m = manager_cls(vc, "cuda", names["CUDAGraphMode"][resolved.name], query_lens)
        m._graphs_captured = True
        return vc, m, resolved

    def drafter(vc, resolved, s: dict):
        """The draft prefill's and draft decodes' managers as 0.34.0's speculators build them
        (target_dependent_ar / standalone_ar and autoregressive/speculator.py
        init_cudagraph_manager)."""
        prefill_len = s["num_speculative_tokens"] + (2 if s["method"] == "draft_model" else 1)
        prefill = manager_cls(vc, "cuda", resolved, vc.get_decode_cudagraph_query_lens(prefill_len))
        decode_mode = mode.FULL_DECODE_ONLY if resolved.decode_mode() == mode.FULL else mode.NONE
        decode = manager_cls(
            vc,
            "cuda",
            decode_mode,
            {1: s["max_num_seqs"]},
            decode_request_sizes=vc.get_draft_decode_cudagraph_request_sizes(),
        )
        prefill._graphs_captured = decode._graphs_captured = True
        return prefill_len, prefill, decode

    build.drafter = drafter
    return build


def v034_settings(seed: str, count: int) -> list[dict]:
    """Seeded random settings: S, k, T, mode, attention support, performance mode, the deprecated
    capture list or maximum, a dynamic speculation schedule, data-center Blackwell, and 0.34.0's
    prefill / decode capture settings."""
    rng = random.Random(seed)
    settings = []
    for _ in range(count):
        s = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(1, 1024)])
        k = rng.choice([0, 0, rng.randint(1, 3), rng.randint(1, 8)])
        tokens = rng.choice([8192, 8192, 2048, 16384, rng.randint(s, 4 * s + 600)])
        sizes = user_max = schedule = None
        if rng.random() < 0.2:
            sizes = sorted(rng.sample(range(1, 700), rng.randint(1, 12)))
        elif rng.random() < 0.12:
            user_max = rng.randint(1, 1100)
        if k >= 2 and rng.random() < 0.3:
            cuts = sorted(rng.sample(range(2, max(3, s + 40)), rng.randint(1, 3)))
            starts = [1, *cuts]
            ends = [c - 1 for c in cuts] + [max(cuts[-1], s + 40)]
            schedule = [[a, b, rng.randint(0, k)] for a, b in zip(starts, ends, strict=True)]
        settings.append(
            {
                "max_num_seqs": s,
                "num_speculative_tokens": k,
                "max_num_batched_tokens": max(tokens, s),
                "cudagraph_mode": rng.choice(V034_MODES[1:] * 3 + V034_MODES[:1]),
                "attention_cg_support": rng.choice(
                    ["ALWAYS"] * 5 + ["UNIFORM_BATCH", "UNIFORM_SINGLE_TOKEN_DECODE", "NEVER"]
                ),
                "performance_mode": "interactivity" if rng.random() < 0.15 else None,
                "cudagraph_capture_sizes": sizes,
                "max_cudagraph_capture_size": user_max,
                "num_speculative_tokens_per_batch_size": schedule,
                "method": rng.choice(V034_METHODS) if k else None,
                "data_center_blackwell": rng.random() < 0.25,
            }
            | _split_settings(rng)
        )
    return settings


def _split_settings(rng: random.Random) -> dict:
    """0.34.0's prefill / decode capture settings: each set in about a sixth of the settings
    (lists may be empty or hold sizes out of range, maxima may refuse a list)."""
    draws = {
        "prefill_cudagraph_capture_token_sizes": lambda: sorted(
            rng.sample(range(1, 1200), rng.randint(0, 8))
        ),
        "max_prefill_cudagraph_capture_tokens": lambda: rng.randint(0, 3000),
        "decode_cudagraph_capture_request_sizes": lambda: sorted(
            rng.sample(range(1, 300), rng.randint(0, 8))
        ),
        "max_decode_cudagraph_capture_requests": lambda: rng.randint(0, 300),
        "max_decode_cudagraph_capture_tokens": lambda: rng.randint(1, 4000),
    }
    return {name: draw() if rng.random() < 0.16 else None for name, draw in draws.items()}


def _dense_query_lens(s: dict) -> list[int]:
    """Per batch of B = 1..S requests, the query length a uniform decode batch of B has (the
    scheduler's dense schedule, or 1 + k)."""
    q, schedule = 1 + s["num_speculative_tokens"], s["num_speculative_tokens_per_batch_size"]
    if schedule is None:
        return [q] * s["max_num_seqs"]
    lens = []
    for b in range(1, s["max_num_seqs"] + 1):
        k = [entry[2] for entry in schedule if entry[0] <= b][-1]
        lens.append(1 + min(k, s["num_speculative_tokens"]))
    return lens


def _v034_drafter(managers, s: dict) -> dict:
    """The draft managers' graphs and the dispatch of each request count B = 1..S: the draft
    prefill's uniform batch of B*L tokens at query length L, a draft decode's of B tokens."""
    prefill_len, prefill, decode = managers

    def graphs(m):
        return sorted(
            [d.cg_mode.name, d.num_tokens, d.num_reqs, d.uniform_token_count]
            for descs in m._capture_descs.values()
            for d in descs
        )

    batches = range(1, s["max_num_seqs"] + 1)
    return {
        "prefill_query_len": prefill_len,
        "prefill_graphs": graphs(prefill),
        "prefill": [_v2_outcome(prefill, b * prefill_len, b, prefill_len) for b in batches],
        "decode_graphs": graphs(decode),
        "decode": [_v2_outcome(decode, b, b, 1) for b in batches],
    }


def v034_vectors(src: WheelSource, settings: list[dict]) -> list[dict]:
    """Per setting: vLLM's recorded cudagraph_capture_sizes, prefill token sizes and decode request
    sizes, the resolved mode, every graph the manager keeps, and the wheel's own `dispatch` of each
    uniform decode batch B*q (q from the dynamic schedule where set), B = 1..S, and of a mixed batch
    of n tokens (min(n, S) requests) at n = 1 and at c and c + 1 for every graph's token count c;
    or the error vLLM raises at start-up."""
    build = v034_engine(src)
    vectors = []
    for s in settings:
        entry = dict(s)
        try:
            vc, m, resolved = build(s)
        except (ValueError, AssertionError) as exc:
            vectors.append(entry | {"error": f"{type(exc).__name__}: {exc}"})
            continue
        cc = vc.compilation_config
        graphs = sorted(
            [d.cg_mode.name, d.num_tokens, d.num_reqs, d.uniform_token_count]
            for descs in m._capture_descs.values()
            for d in descs
        )
        lens = _dense_query_lens(s)
        uniform = [_v2_outcome(m, b * q, b, q) for b, q in enumerate(lens, start=1)]
        mixed_ns = sorted({1} | {n for g in graphs for n in (g[1], g[1] + 1)})
        mixed = [_v2_outcome(m, n, min(n, s["max_num_seqs"]), None) for n in mixed_ns]
        draft = {}
        if s["method"] in V034_DRAFTERS and s["num_speculative_tokens_per_batch_size"] is None:
            draft = {"drafter": _v034_drafter(build.drafter(vc, resolved, s), s)}
        vectors.append(
            entry
            | draft
            | {
                "recorded_capture_sizes": list(cc.cudagraph_capture_sizes),
                "prefill_sizes": cc.prefill_cudagraph_capture_token_sizes,
                "decode_request_sizes": cc.decode_cudagraph_capture_request_sizes,
                "resolved_mode": resolved.name,
                "graphs": graphs,
                "uniform": uniform,
                "mixed": mixed,
            }
        )
    return vectors


# --------------------------------------------------------------------------- V1 before 0.12.0

PYPI_JSON = "https://pypi.org/pypi/vllm/json"
EARLY_V1_SETTINGS = 400  # seeded configs per release
# The H200 API server's max_num_batched_tokens when unset (EngineArgs._set_default_args_v1 to
# 0.10.2, _set_default_args in 0.11.x: >= 70 GiB and not an A100, OPENAI_API_SERVER: 8192).
EARLY_V1_DEFAULT_TOKENS = 8192


class _RangeFile:
    """A read-only, seekable view of a remote file through HTTP range requests (zipfile reads the
    central directory and the members it is asked for, never the whole wheel)."""

    def __init__(self, url: str):
        import urllib.request

        self.url, self.pos, self._request = url, 0, urllib.request
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=60) as r:
            self.size = int(r.headers["Content-Length"])

    def seekable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        self.pos = (0, self.pos, self.size)[whence] + offset
        return self.pos

    def read(self, n=-1):
        end = self.size if n is None or n < 0 else min(self.size, self.pos + n)
        if end <= self.pos:
            return b""
        headers = {"Range": f"bytes={self.pos}-{end - 1}"}
        with self._request.urlopen(self._request.Request(self.url, headers=headers)) as r:
            data = r.read()
        self.pos += len(data)
        return data


def remote_wheel(version: str, index: dict) -> tuple[WheelSource, dict]:
    """The x86_64 wheel of vllm==version on PyPI, read in place, and its provenance (PyPI's
    declared sha256: the wheel is never downloaded whole)."""
    import urllib.parse

    wheel = next(
        f
        for f in index["releases"][version]
        if f["filename"].endswith(".whl") and "x86_64" in f["filename"]
    )
    src = WheelSource.__new__(WheelSource)
    src.zip = zipfile.ZipFile(_RangeFile(urllib.parse.urljoin(PYPI_JSON, wheel["url"])))
    src.trees, src.taken = {}, []
    return src, {"file": wheel["filename"], "sha256": wheel["digests"]["sha256"]}


def _early_member(src: WheelSource, *members: str) -> str:
    return next(m for m in members if m in src.zip.namelist())


def early_v1_engine(src: WheelSource):
    """A function (S, k, T, user sizes, mode) -> (captured sizes, dispatch(n, uniform)) built
    from one 0.8.0-0.11.2 wheel: VllmConfig._set_cudagraph_sizes and pad_for_cudagraph,
    CompilationConfig.init_with_cudagraph_sizes (to 0.11.0) or post_init_cudagraph_sizes,
    compute_bs_to_padded_graph_size and adjust_cudagraph_sizes_for_spec_decode under
    _check_and_update_cudagraph_mode's own test (0.11.x), and CudagraphDispatcher (0.10.1 on),
    verbatim; the model runner's padding test (n <= the largest captured size) by hand."""
    config = _early_member(src, "vllm/config/vllm.py", "vllm/config/__init__.py", "vllm/config.py")
    comp = _early_member(src, "vllm/config/compilation.py", "vllm/config.py")
    sched = _early_member(src, "vllm/config/scheduler.py", "vllm/config.py")
    disp = "vllm/v1/cudagraph_dispatcher.py"
    has_dispatcher = disp in src.zip.namelist()
    names: dict = {"enum": enum, "logger": _Logger(), "envs": ns(VLLM_USE_V1=True)}
    mode = None
    if src.has(comp, "CUDAGraphMode"):
        mode = src.exec_defs(comp, ["CUDAGraphMode"], names)["CUDAGraphMode"]
    names["CUDAGraphMode"] = mode
    if "vllm/utils/math_utils.py" in src.zip.namelist():
        src.exec_defs("vllm/utils/math_utils.py", ["round_up"], names)
    cc_names = [
        n
        for n in (
            "init_with_cudagraph_sizes",
            "post_init_cudagraph_sizes",
            "compute_bs_to_padded_graph_size",
            "adjust_cudagraph_sizes_for_spec_decode",
        )
        if src.has(comp, n, "CompilationConfig")
    ]
    cc_cls = type(
        "CompilationConfig", (), src.exec_defs(comp, cc_names, dict(names), cls="CompilationConfig")
    )
    vc_cls = type(
        "VllmConfig",
        (),
        src.exec_defs(
            config, ["_set_cudagraph_sizes", "pad_for_cudagraph"], dict(names), cls="VllmConfig"
        ),
    )
    # The scheduler's default cuda_graph_sizes (0.9.0 to 0.11.0): the field's default, then
    # __post_init__'s `if not self.cuda_graph_sizes:` assignment where it has one.
    default_sizes = None
    if src.has(sched, "cuda_graph_sizes", "SchedulerConfig"):
        factory = src.node(sched, "cuda_graph_sizes", "SchedulerConfig").value.keywords[0].value
        default_sizes = evaluate(factory, {})()
    post_init = None
    if default_sizes == []:
        post_init = src.expr(
            sched,
            "__post_init__",
            "SchedulerConfig",
            _assign_to("self.cuda_graph_sizes"),
            "self.cuda_graph_sizes",
        )
    adjust_test = None
    if "adjust_cudagraph_sizes_for_spec_decode" in cc_names:
        adjust_test = src.expr(
            "vllm/v1/worker/gpu_model_runner.py",
            "_check_and_update_cudagraph_mode",
            "GPUModelRunner",
            lambda node: (
                node.test
                if isinstance(node, ast.If)
                and any(
                    isinstance(c, ast.Attribute)
                    and c.attr == "adjust_cudagraph_sizes_for_spec_decode"
                    for c in ast.walk(node.body[0])
                )
                else None
            ),
            "if-test guarding adjust_cudagraph_sizes_for_spec_decode",
        )
    dispatcher_cls = None
    if has_dispatcher:
        d_names = {"enum": enum, "NamedTuple": NamedTuple, "logger": _Logger()}
        d_names |= {"product": itertools.product, "Optional": None}
        src.exec_defs("vllm/forward_context.py", ["BatchDescriptor"], d_names)
        d_names |= {"CUDAGraphMode": mode, "VllmConfig": object}
        dispatcher_cls = src.exec_defs(disp, ["CudagraphDispatcher"], d_names)
        descriptor = d_names["BatchDescriptor"]
        dispatcher_cls = dispatcher_cls["CudagraphDispatcher"]

    def build(max_num_seqs, k, tokens, user_sizes, cudagraph_mode):
        cc = cc_cls()
        cc.__dict__.update(
            cudagraph_capture_sizes=None if user_sizes is None else list(user_sizes),
            compile_sizes=None,
            max_cudagraph_capture_size=None,
            pass_config=ns(enable_sequence_parallelism=False, enable_sp=False),
            cudagraph_mode=mode and mode[cudagraph_mode],
            full_cuda_graph=cudagraph_mode == "FULL",
        )
        scheduler = ns(
            max_num_seqs=max_num_seqs, max_num_batched_tokens=tokens, cuda_graph_sizes=None
        )
        if default_sizes is not None:
            scheduler.cuda_graph_sizes = list(default_sizes)
            if post_init is not None:
                scheduler.cuda_graph_sizes = evaluate(post_init, {"self": scheduler, "min": min})
        vc = vc_cls()
        vc.__dict__.update(
            model_config=ns(enforce_eager=False),
            compilation_config=cc,
            scheduler_config=scheduler,
            parallel_config=ns(tensor_parallel_size=1),
        )
        vc._set_cudagraph_sizes()
        q = 1 + k
        if adjust_test is not None and evaluate(
            adjust_test,
            {"cudagraph_mode": cc.cudagraph_mode, "CUDAGraphMode": mode,
             "self": ns(uniform_decode_query_len=q)},
        ):  # fmt: skip
            cc.adjust_cudagraph_sizes_for_spec_decode(q, 1)
        sizes = sorted(cc.cudagraph_capture_sizes)
        if cudagraph_mode == "NONE":  # capture_model returns at once; no padding either
            return [], lambda n, uniform: [n, "eager", None]
        d = None
        if dispatcher_cls is not None:
            d = dispatcher_cls.__new__(dispatcher_cls)
            d.__dict__.update(
                vllm_config=ns(scheduler_config=scheduler, lora_config=None),
                compilation_config=cc,
                cudagraph_mode=cc.cudagraph_mode,
                cudagraph_keys={mode.PIECEWISE: set(), mode.FULL: set()},
                keys_initialized=False,
            )
            d.initialize_cudagraph_keys(cc.cudagraph_mode, q)

        def dispatch(n, uniform):
            # gpu_model_runner.py: pad where n <= cudagraph_batch_sizes[-1] (the largest size)
            padded = vc.pad_for_cudagraph(n) if sizes and n <= sizes[-1] else n
            if d is None:  # no dispatcher: every padded batch replays the mode's graph
                if padded == n and not (sizes and n <= sizes[-1]):
                    return [n, "eager", None]
                return [n, "full" if cudagraph_mode == "FULL" else "piecewise", padded]
            fields = {"num_tokens": padded, "uniform_decode": uniform}
            if "has_lora" in descriptor._fields:
                fields["has_lora"] = False
            runtime, desc = d.dispatch(descriptor(**fields))
            if runtime.name == "NONE":
                return [n, "eager", None]
            return [n, runtime.name.lower(), desc.num_tokens]

        return sizes, dispatch

    # The modes the release has, its default first: CUDAGraphMode's (0.10.1 on), the default the
    # first assignment under VllmConfig.__post_init__'s `if ...cudagraph_mode is None:`; else
    # PIECEWISE and, with full_cuda_graph (0.9.0 on, default False), FULL.
    if mode is not None:
        default = src.expr(
            config, "__post_init__", "VllmConfig", _default_mode_pick, "default cudagraph_mode"
        )
        default = evaluate(default, {"CUDAGraphMode": mode}).name
        return build, [default] + [m.name for m in mode if m.name != default]
    full = src.has(comp, "full_cuda_graph", "CompilationConfig")
    return build, ["PIECEWISE", "FULL"] if full else ["PIECEWISE"]


def _default_mode_pick(node):
    """In `if <...>.cudagraph_mode is None:`, the value of the first assignment to cudagraph_mode
    (breadth first: the branch vLLM takes for a compiled model with no pooler)."""
    test = getattr(node, "test", None)
    if not (
        isinstance(node, ast.If)
        and isinstance(test, ast.Compare)
        and isinstance(test.ops[0], ast.Is)
        and getattr(test.left, "attr", None) == "cudagraph_mode"
    ):
        return None
    for sub in ast.walk(ast.Module(body=node.body, type_ignores=[])):
        if isinstance(sub, ast.Assign) and getattr(sub.targets[0], "attr", None) == (
            "cudagraph_mode"
        ):
            return sub.value
    return None


def early_v1_settings(seed: str, count: int) -> list[tuple]:
    """Seeded configs (S, k, T, user cudagraph_capture_sizes or None, mode index; 0: the
    release's default)."""
    rng = random.Random(seed)
    settings = []
    for i in range(count):
        s = rng.choice([rng.randint(1, 40), rng.randint(1, 1024), rng.choice(EDGE_MAX_NUM_SEQS)])
        k = rng.randint(0, 8)
        t = rng.choice([None, None, 256, 300, 512, 2048, rng.randint(s, 4096)])
        t = None if t is None else max(t, s)  # T < S is refused by SchedulerConfig
        sizes = None
        if i % 5 == 4:
            sizes = [rng.randint(1, 600) for _ in range(rng.randint(1, 10))]
        settings.append((s, k, t, sizes, rng.randrange(6)))
    return settings


def early_v1_vectors(version: str, src: WheelSource, seed: str, count: int) -> list[dict]:
    """Per seeded config and mode the release has: captured sizes, and [n, path, padded size]
    for uniform decode batches B*(k+1) (B sampled in 1..S) and mixed batches of n tokens."""
    build, modes = early_v1_engine(src)
    vectors = []
    for s, k, t, sizes, pick in early_v1_settings(seed, count):
        given = ([None, *modes])[pick % (len(modes) + 1)]  # None: the release's default
        cudagraph_mode = given or modes[0]
        q, tokens = 1 + k, t or EARLY_V1_DEFAULT_TOKENS
        head = {
            "engine": f"vllm-{version}",
            "cudagraph_mode": given,
            "resolved_cudagraph_mode": cudagraph_mode,
            "max_num_seqs": s,
            "num_speculative_tokens": k,
            "max_num_batched_tokens": t,
            "cudagraph_capture_sizes": sizes,
        }
        captured, dispatch = build(s, k, tokens, sizes, cudagraph_mode)
        if captured and captured[-1] > tokens:  # _dummy_run asserts during capture
            vectors.append({**head, "error": "AssertionError"})
            continue
        limit = captured[-1] if captured else 0
        key = f"vllm-{version}/{s}/{k}/{t}/{cudagraph_mode}"
        ns_ = sample_batch_sizes(min(s * q, tokens), captured, limit, s, q, key)
        # request counts: 1..64, S/2, S-1, S, and the first to reach each captured size
        reqs = {*range(1, 65), s // 2, s - 1, s, *((c + q - 1) // q for c in captured)}
        reqs = sorted(b for b in reqs if 1 <= b <= s and b * q <= tokens)
        vectors.append(
            {
                **head,
                "capture_sizes": captured,
                "uniform": [dispatch(b * q, True) for b in reqs if b >= 1],
                "mixed": [dispatch(n, False) for n in ns_],
            }
        )
    return vectors


V034_NOTES = (
    f"vLLM {V034_VERSION} (model runner V2 only), {V034_SETTINGS} seeded random settings (seed "
    f"'{V034_SEED}'): S, k, T, cudagraph_mode, the attention backend's AttentionCGSupport "
    "(backend named FlashAttentionBackend), performance_mode, the deprecated "
    "cudagraph_capture_sizes or max_cudagraph_capture_size, a dynamic speculation schedule "
    "(num_speculative_tokens_per_batch_size), the speculative method and data-center Blackwell "
    "(is_device_capability_family(100)). Verbatim: VllmConfig._set_cudagraph_sizes, "
    "_split_cudagraph_capture_sizes, get_decode_cudagraph_query_lens, get_draft_decode_"
    "cudagraph_request_sizes; CompilationConfig.resolve_cudagraph_mode_and_sizes and "
    "post_init_cudagraph_sizes; decode_cudagraph_capture_shapes, decode_cudagraph_capture_max_"
    "tokens and the grids; build_dynamic_sd_schedule_lookup; CudaGraphManager as for the model "
    "runner V2 vectors. Stand-ins: a VLLM_COMPILE model whose splitting ops hold attention, "
    "piecewise capture available, no Mamba layers (kv_cache_config only refuses Mamba models "
    "short of cache blocks), max_num_reqs = S, no adaptive verification, single-module MTP; "
    "each of the five new prefill / decode capture settings set in about a sixth of the "
    "settings. recorded_capture_sizes / prefill_sizes / "
    "decode_request_sizes: the compilation config after resolution; graphs: [cg_mode, "
    "num_tokens, num_reqs, uniform_token_count] of every descriptor; uniform: [n, path, padded "
    "tokens or null] of `dispatch(B, B*q, q, 0)` for B = 1..S, q from the scheduler's dense "
    "schedule; mixed: of `dispatch(min(n, S), n, None, 0)` at n = 1 and at c, c+1 for every "
    "graph's token count c; error: what vLLM raises at start-up instead. drafter (EAGLE, "
    "EAGLE-3, single-module MTP, draft_model; no dynamic schedule): the graphs of the draft "
    "prefill's and the draft decodes' managers as the speculators' init_cudagraph_manager builds "
    "them, and the dispatch of each request count B = 1..S (B*L tokens at the prefill's query "
    "length L; B tokens at query length 1)."
)


def v034_payload(cache_dir: Path) -> dict:
    """data/vllm_sizing_vectors_0_34_0.json: 0.34.0's graphs and dispatch."""
    path = fetch_wheel(V034_VERSION, cache_dir)
    src = WheelSource(path)
    vectors = v034_vectors(src, v034_settings(V034_SEED, V034_SETTINGS))
    wheels = {V034_VERSION: {"file": path.name, "sha256": sha256_of(path)}}
    functions = {V034_VERSION: list(dict.fromkeys(src.taken))}
    return vectors_payload(wheels, functions, V034_NOTES, vectors)


EARLY_V1_NOTES = (
    "V1 before 0.12.0, read in place from each wheel on PyPI (HTTP range requests; sha256 as "
    "PyPI declares it). Verbatim: VllmConfig._set_cudagraph_sizes and pad_for_cudagraph, "
    "CompilationConfig.init_with_cudagraph_sizes / post_init_cudagraph_sizes / "
    "compute_bs_to_padded_graph_size / adjust_cudagraph_sizes_for_spec_decode, the "
    "SchedulerConfig.cuda_graph_sizes default and its __post_init__ assignment, the default "
    "cudagraph_mode VllmConfig.__post_init__ assigns (0.10.1 on; PIECEWISE before), the if-test of "
    "GPUModelRunner._check_and_update_cudagraph_mode guarding the rounding, BatchDescriptor and "
    "CudagraphDispatcher (0.10.1 on). By hand: the model runner's padding test (n <= the "
    "largest captured size, else no padding), that a dispatcher-less release replays its one "
    "graph kind at the padded size (PIECEWISE, or FULL with full_cuda_graph=True; FlashAttention "
    "can_run_in_cudagraph is True), that NONE captures nothing, that a user size above "
    "max_num_batched_tokens fails _dummy_run's assertion at capture, max_num_batched_tokens=None "
    "as the H200 API server's 8192, TP = 1, no LoRA, and the mode surviving attention-backend "
    "resolution (AttentionCGSupport.ALWAYS)."
)


# The methods each release's V1 oracle is asked about: the names a user writes, every MTP model
# type of graphlab.sizing.speculative among them (SizingConfig normalises those to "mtp").
ORACLE_METHODS = (
    "ngram", "[ngram]", "eagle", "eagle3", "medusa", "mlp_speculator", "draft_model", "suffix",
    "mtp", "deepseek_mtp", "mimo_mtp", "glm4_moe_mtp", "ernie_mtp", "qwen3_next_mtp",
    "longcat_flash_mtp",
)  # fmt: skip
EARLY_V1_ORACLE_NAME = "vllm_v1_early_oracle.json"


def early_v1_oracle(version: str, src: WheelSource) -> dict:
    """Per speculative method as the user writes it and per VLLM_USE_V1 (unset, the default, or
    "1"), which engine the wheel's `EngineArgs._is_v1_supported_oracle` gives it: its statements
    that read the speculative settings (the `is_*_enabled` flags and the `if` blocks), verbatim,
    in order, on a line that sets nothing else, with the wheel's own `_raise_or_fallback` and
    `_warn_or_fallback`: "v1", "v0" (a block returned False: vLLM's fallback to the V0 engine),
    or the error raised. 0.8.0 to 0.8.2 read the method as --speculative-model (no
    speculative_config)."""
    member = "vllm/engine/arg_utils.py"
    if not src.has(member, "_is_v1_supported_oracle", "EngineArgs"):
        return {"release": version, "VLLM_USE_V1": None}  # V0 removed: the V1 engine alone
    func = src.node(member, "_is_v1_supported_oracle", "EngineArgs")
    words = ("speculative", "ngram", "eagle", "medusa")
    body = [
        node
        for node in func.body
        if isinstance(node, (ast.If, ast.Assign)) and any(w in ast.unparse(node) for w in words)
    ]
    src.taken[-1] += " [its speculative statements]"
    wrapper = ast.parse("def check(self):\n    return True")
    wrapper.body[0].body[:0] = [copy.deepcopy(node) for node in body]
    engines = {}
    for env in ("unset", "1"):
        envs = ns(is_set=lambda name, env=env: env != "unset", VLLM_USE_V1=env == "1")
        helpers = [h for h in ("_raise_or_fallback", "_warn_or_fallback") if src.has(member, h)]
        namespace = src.exec_defs(member, helpers, {"envs": envs, "logger": _Logger()})
        exec(compile(ast.fix_missing_locations(wrapper), f"<{member}>", "exec"), namespace)
        for method in ORACLE_METHODS:
            self = ns(
                speculative_config={"method": method, "num_speculative_tokens": 2},
                speculative_model=method,
                num_speculative_tokens=2,
            )
            try:
                engine = "v1" if namespace["check"](self) else "v0"
            except NotImplementedError as error:
                engine = f"NotImplementedError: {error}"
            engines.setdefault(env, {})[method] = engine
    return {"release": version, "VLLM_USE_V1": engines}


def early_v1_oracle_payload() -> dict:
    """data/vllm_v1_early_oracle.json: the V1 oracle's answer per method, EARLY_V1_VERSIONS."""
    import urllib.request

    with urllib.request.urlopen(PYPI_JSON, timeout=60) as r:
        index = json.load(r)
    wheels, functions, oracles = {}, {}, []
    for version in EARLY_V1_VERSIONS:
        src, wheels[version] = remote_wheel(version, index)
        oracles.append(early_v1_oracle(version, src))
        functions[version] = list(dict.fromkeys(src.taken))
    notes = (
        "Verbatim: the statements of EngineArgs._is_v1_supported_oracle that read the speculative "
        "settings (and the is_*_enabled flags they set), run in order on a line with "
        "speculative_config {method, num_speculative_tokens: 2} (0.8.0 to 0.8.2: "
        "--speculative-model set to the method) and nothing else, with the wheel's own "
        "_raise_or_fallback and _warn_or_fallback under VLLM_USE_V1 unset and VLLM_USE_V1=1. "
        "Read in place from each wheel on PyPI (HTTP range requests)."
    )
    return vectors_payload(wheels, functions, notes, oracles)


def early_v1_payload(seed: str = "graphlab-early-v1", count: int = EARLY_V1_SETTINGS) -> dict:
    """data/vllm_sizing_vectors_v1_early.json: V1 of EARLY_V1_VERSIONS."""
    import urllib.request

    with urllib.request.urlopen(PYPI_JSON, timeout=60) as r:
        index = json.load(r)
    wheels, functions, vectors = {}, {}, []
    for version in EARLY_V1_VERSIONS:
        src, wheels[version] = remote_wheel(version, index)
        vectors += early_v1_vectors(version, src, seed, count)
        functions[version] = list(dict.fromkeys(src.taken))
    return vectors_payload(wheels, functions, EARLY_V1_NOTES, vectors)


def vectors_payload(wheels: dict, functions: dict, notes: str, vectors: list, **more) -> dict:
    """A vectors file: its provenance (the wheels read, the functions run from each, notes and
    `more` fields) and the vectors."""
    provenance = {
        "generated_by": "scripts/make_sizing_vectors.py",
        "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "wheels": wheels,
        "functions": functions,
        **more,
        "notes": notes,
    }
    return {"provenance": provenance, "vectors": vectors}


def write_json_atomic(payload: dict, out: Path) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp creates 0600; the data file is meant to be read
        with os.fdopen(fd, "w") as fh:
            json.dump(payload, fh, separators=(",", ":"))
            fh.write("\n")
        os.replace(tmp, out)
    except BaseException:
        os.unlink(tmp)
        raise


def split_by_runner(payload: dict) -> tuple[dict, dict]:
    """(the payload without the entries marked "model_runner", those entries with the same
    provenance): the lists vectors, startup_errors, explicit and modes are split."""
    lists = ("vectors", "startup_errors", "explicit", "modes")
    main_part, runner_v1 = dict(payload), {"provenance": payload["provenance"]}
    for name in lists:
        main_part[name] = [e for e in payload[name] if "model_runner" not in e]
        runner_v1[name] = [e for e in payload[name] if "model_runner" in e]
    return main_part, runner_v1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"output JSON (default: {DEFAULT_OUT.relative_to(REPO_ROOT)})",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=DEFAULT_CACHE,
        help="where wheels are downloaded/cached (default: build/wheels)",
    )
    parser.add_argument(
        "--model-runner-v2-only",
        action="store_true",
        help=f"write only {RUNNER_V2_NAME} (reads only the V2_VERSIONS wheels)",
    )
    parser.add_argument(
        "--vllm-0-34-only",
        action="store_true",
        help=f"write only {V034_NAME} (reads only the {V034_VERSION} wheel)",
    )
    parser.add_argument(
        "--early-v1-only",
        action="store_true",
        help=f"write only {EARLY_V1_NAME} (reads the EARLY_V1_VERSIONS wheels in place on PyPI)",
    )
    parser.add_argument(
        "--early-v1-oracle-only",
        action="store_true",
        help=f"write only {EARLY_V1_ORACLE_NAME} (each EARLY_V1_VERSIONS wheel's V1 oracle)",
    )
    args = parser.parse_args(argv)
    if args.early_v1_oracle_only:
        out = args.out.with_name(EARLY_V1_ORACLE_NAME)
        write_json_atomic(early_v1_oracle_payload(), out)
        print(f"wrote the V1 oracle's engine per method of {', '.join(EARLY_V1_VERSIONS)} to {out}")
        return 0
    if not args.early_v1_only:
        v034_out = args.out.with_name(V034_NAME)
        write_json_atomic(v034_payload(args.cache_dir), v034_out)
        print(f"wrote vLLM {V034_VERSION}'s vectors to {v034_out}")
    if args.vllm_0_34_only:
        return 0
    early_out = args.out.with_name(EARLY_V1_NAME)
    write_json_atomic(early_v1_payload(), early_out)
    print(f"wrote V1's vectors of {', '.join(EARLY_V1_VERSIONS)} to {early_out}")
    if args.early_v1_only:
        return 0
    v2_out = args.out.with_name(RUNNER_V2_NAME)
    write_json_atomic(model_runner_v2_payload(args.cache_dir), v2_out)
    print(f"wrote model runner V2's vectors of {', '.join(V2_VERSIONS)} to {v2_out}")
    if args.model_runner_v2_only:
        return 0

    wheels, functions, defaults, vectors, startup_errors, explicit = {}, {}, {}, [], [], []
    modes, runners, attention = [], [], []
    for version in RUNNER_VERSIONS:
        path = fetch_wheel(version, args.cache_dir)
        wheels[version] = {"file": path.name, "sha256": sha256_of(path)}
        src = WheelSource(path)
        runners.append(runner_vectors(version, src))
        functions.setdefault(version, []).extend(src.taken)
    for version in V0_VERSIONS + V1_VERSIONS:
        path = fetch_wheel(version, args.cache_dir)
        wheels[version] = {"file": path.name, "sha256": sha256_of(path)}
        src = WheelSource(path)
        if version in V0_VERSIONS:
            vectors += v0_vectors(version, src)
        else:
            got, errors, defaults[version] = v1_vectors(version, src)
            vectors += got
            startup_errors += errors
            explicit += explicit_vectors(version, src)
            modes += mode_vectors(version, src)
        if version in ATTENTION_VERSIONS:
            attention += attention_vectors(version, src)
        functions[version] = list(dict.fromkeys(functions.get(version, []) + src.taken))
    payload = {
        **vectors_payload(
            wheels, functions, NOTES, vectors, default_max_num_batched_tokens=defaults
        ),
        "startup_errors": startup_errors,
        "explicit": explicit,
        "modes": modes,
        "model_runners": runners,
        "attention": attention,
    }
    for out, part in zip((args.out, args.out.with_name(RUNNER_V1_NAME)), split_by_runner(payload)):
        write_json_atomic(part, out)
    print(
        f"wrote {len(vectors)} vectors, {len(startup_errors)} startup errors, "
        f"{len(explicit)} explicit settings, {len(modes)} mode vectors to {args.out} and "
        f"{RUNNER_V1_NAME} (model runner V1 of the releases that default to V2)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
