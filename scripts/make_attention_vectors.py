#!/usr/bin/env python3
"""Regenerate data/vllm_attention_vectors.json: the attention backends' CUDA-graph support and
vLLM's lowering of cudagraph_mode to it, read in every V1 release from 0.10.1 (the first with
cudagraph_mode and AttentionCGSupport) to the newest (graphlab.sizing.attention).

Developer script, never run by tests or at run time. For each release it reads the wheel's .py
members (HTTP range requests on the wheel's zip, kept in a members-only zip under
build/wheel_members_attention/, git-ignored) without importing vllm, and records:

- per backend name the kit knows (BACKEND_FILES) and device tier, what the backend's metadata
  builder reports: the class attribute the release's lowering reads (`cudagraph_support` to
  0.11.0, `_cudagraph_support` through `get_cudagraph_support` from 0.11.1), looked up along the
  builder's bases in the wheel, or the builder's own `get_cudagraph_support` run verbatim with a
  dense decoder-only model and the tier's compute capability (h100: 9.0, small: 8.0 (A100),
  b200: 10.0); `get_flash_attn_version` is the tier's FlashAttention version (3 on 9.x, 4 on 10.x
  where the release's fa_utils picks FA4 there, else 2), `can_use_trtllm_attention` is True or
  False where the release's own `supports_trtllm_attention` allows TRT-LLM attention on the tier
  (False elsewhere). A value that changes with those model-dependent inputs is recorded as null;
- the release's own lowering (`GPUModelRunner.initialize_cudagraph_capture` to 0.11.0,
  `_check_and_update_cudagraph_mode` to 0.19.1, `CompilationConfig.
  resolve_cudagraph_mode_and_sizes` from 0.20.0), verbatim with vLLM's default compilation
  (VLLM_COMPILE, attention among the splitting ops) over every cudagraph_mode x support x
  q = 1..4 with a backend drawn per config (seeded; its class, or its metadata builder's where
  the release's messages name that, to 0.11.0): the mode kept, its WARNING lines and the
  ValueError. Where the function takes `use_v2_model_runner` (0.25.0 to 0.33.0) both values are
  run, and the script stops if they differ.

Releases whose backend table and lowering outcomes are identical form one range; the vectors
keep the first release of each range (the kit keys its tables by it), `ranges` every release.
Only the standard library is used.
"""

from __future__ import annotations

import argparse
import ast
import copy
import enum
import importlib.util
import itertools
import json
import random
import sys
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "vllm_attention_vectors.json"
DEFAULT_CACHE = REPO_ROOT / "build" / "wheel_members_attention"
MEMBER_PREFIXES = (
    "vllm/v1/attention/",
    "vllm/attention/",
    "vllm/config/compilation.py",
    "vllm/v1/worker/gpu_model_runner.py",
    "vllm/utils/flashinfer.py",
    "vllm/model_executor/layers/attention/mla_attention.py",
)
FIRST = "0.10.1"  # compilation_config.cudagraph_mode and AttentionCGSupport appear
BACKENDS_DIR = "vllm/v1/attention/backends/"
# The kit's backend names (vLLM's AttentionBackendEnum) -> (module under BACKENDS_DIR, class).
BACKEND_FILES = {
    "FLASH_ATTN": ("flash_attn.py", "FlashAttentionBackend"),
    "FLASHINFER": ("flashinfer.py", "FlashInferBackend"),
    "TRITON_ATTN": ("triton_attn.py", "TritonAttentionBackend"),
    "FLEX_ATTENTION": ("flex_attention.py", "FlexAttentionBackend"),
    "FLASHMLA": ("mla/flashmla.py", "FlashMLABackend"),
    "FLASH_ATTN_MLA": ("mla/flashattn_mla.py", "FlashAttnMLABackend"),
    "FLASHINFER_MLA": ("mla/flashinfer_mla.py", "FlashInferMLABackend"),
    "CUTLASS_MLA": ("mla/cutlass_mla.py", "CutlassMLABackend"),
    "TRITON_MLA": ("mla/triton_mla.py", "TritonMLABackend"),
}
# Where the builders' base classes live (AttentionMetadataBuilder moves to backend.py in 0.14.0,
# the MLA common classes to mla_attention.py in 0.15.0).
BASE_FILES = (
    "vllm/v1/attention/backend.py",
    "vllm/v1/attention/backends/utils.py",
    "vllm/v1/attention/backends/mla/common.py",
    "vllm/model_executor/layers/attention/mla_attention.py",
)
TIERS = {"h100": (9, 0), "small": (8, 0), "b200": (10, 0)}
MODES = ("NONE", "PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
CG_SUPPORTS = ("NEVER", "UNIFORM_SINGLE_TOKEN_DECODE", "UNIFORM_BATCH", "ALWAYS")
QUERY_LENS = (1, 2, 3, 4)

ns = __import__("types").SimpleNamespace


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


drafter = _load("make_drafter_vectors")  # fetch_members, and make_sizing_vectors as .sizing
sizing = drafter.sizing


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


# --------------------------------------------------------------------------- support levels


class _Classes:
    """The classes of the backend modules and their bases, by name, read from the wheel."""

    def __init__(self, src, files):
        self.by_name: dict[str, tuple[str, ast.ClassDef]] = {}
        for member in files:
            if member in src.zip.namelist():
                for node in src.tree(member).body:
                    if isinstance(node, ast.ClassDef):
                        self.by_name.setdefault(node.name, (member, node))

    def chain(self, name: str) -> list[tuple[str, ast.ClassDef]]:
        """name's class and its bases (first base first, depth first), those read."""
        found = []
        while name in self.by_name:
            member, node = self.by_name[name]
            found.append((member, node))
            bases = [b.value if isinstance(b, ast.Subscript) else b for b in node.bases]
            names = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in bases]
            name = next((n for n in names if n in self.by_name), "")
        return found

    def lookup(self, name: str, attr: str):
        """(member, class, the node: an assigned value or a function) of attr along name's
        bases; None where no class read defines it."""
        for member, node in self.chain(name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == attr:
                    return member, node.name, item
                if isinstance(item, (ast.Assign, ast.AnnAssign)):
                    targets = item.targets if isinstance(item, ast.Assign) else [item.target]
                    if any(isinstance(t, ast.Name) and t.id == attr for t in targets):
                        return member, node.name, item.value
        return None


def _exec_function(node: ast.FunctionDef, namespace: dict):
    node = sizing._plain_function(copy.deepcopy(node))
    module = ast.fix_missing_locations(ast.Module(body=[node], type_ignores=[]))
    exec(compile(module, "<wheel>", "exec"), namespace)
    return namespace[node.name]


def _trtllm_tiers(src) -> dict[str, bool]:
    """Per tier whether the release's own `supports_trtllm_attention` allows TRT-LLM attention
    (NVIDIA artifactory reachable, no batch-invariant mode, no environment override)."""
    member = "vllm/utils/flashinfer.py"
    found = {}
    for tier, cap in TIERS.items():
        platform = ns(
            is_device_capability=lambda c, cap=cap: c == cap[0] * 10 + cap[1],
            is_device_capability_family=lambda c, cap=cap: c // 10 == cap[0],
        )
        namespace = {
            "current_platform": platform,
            "has_nvidia_artifactory": lambda: True,
            "vllm_is_batch_invariant": lambda: False,
            "envs": ns(VLLM_USE_TRTLLM_ATTENTION=None, VLLM_BATCH_INVARIANT=False),
            "logger": sizing._Logger(),
        }
        fn = _exec_function(src.node(member, "supports_trtllm_attention"), namespace)
        got = fn()
        found[tier] = bool(got[0] if isinstance(got, tuple) else got)
    return found


def _fa_version(src, tier: str) -> int:
    """The FlashAttention version the release's fa_utils picks on the tier: 3 on Hopper, 4 on
    SM100 where `get_flash_attn_version` tests `device_capability.major == 10`, else 2."""
    if tier == "h100":
        return 3
    members = ("vllm/v1/attention/backends/fa_utils.py", "vllm/attention/utils/fa_utils.py")
    member = next(m for m in members if m in src.zip.namelist())
    text = ast.unparse(src.node(member, "get_flash_attn_version"))
    return 4 if tier == "b200" and "device_capability.major == 10" in text else 2


def backend_supports(src, reads_attribute: str) -> dict[str, dict]:
    """{backend name: {class, builder, source, support: {tier: value or None}}} for each
    BACKEND_FILES entry present in the release."""
    files = [BACKENDS_DIR + f for f, _ in BACKEND_FILES.values()] + list(BASE_FILES)
    classes = _Classes(src, files)
    support_enum = enum.Enum("AttentionCGSupport", {n: i for i, n in enumerate(CG_SUPPORTS)})
    trtllm = _trtllm_tiers(src)
    table = {}
    for name, (module, cls) in BACKEND_FILES.items():
        if cls not in classes.by_name or classes.by_name[cls][0] != BACKENDS_DIR + module:
            continue
        builder = classes.lookup(cls, "get_builder_cls")[2].body[-1].value.id
        supports = {}
        for tier, cap in TIERS.items():
            outcomes = set()
            for model in itertools.product((False, True), repeat=3):
                outcomes.add(
                    _support(
                        classes,
                        builder,
                        reads_attribute,
                        support_enum,
                        cap,
                        model,
                        trtllm[tier],
                        _fa_version(src, tier),
                    )
                )
            supports[tier] = outcomes.pop() if len(outcomes) == 1 else None
        where = classes.lookup(builder, reads_attribute) or classes.lookup(
            builder, "_cudagraph_support"
        )
        table[name] = {
            "class": cls,
            "builder": builder,
            "source": where[0].removeprefix(BACKENDS_DIR) + f" ({where[1]})" if where else None,
            "support": supports,
        }
    return table


def _support(classes, builder, reads_attribute, support_enum, cap, model, trtllm_ok, fa):
    """One builder's support level on one device for one combination of model-dependent
    inputs (TRT-LLM usable for its heads, XQA head dim, FA2 native decode)."""
    heads_ok, xqa_ok, fa2_decode = model
    platform = ns(
        is_device_capability=lambda c: c == cap[0] * 10 + cap[1],
        is_device_capability_family=lambda c: c // 10 == cap[0],
        is_xpu=lambda: False,
        is_rocm=lambda: False,
    )
    namespace = {
        "AttentionCGSupport": support_enum,
        "get_flash_attn_version": lambda *a, **k: fa,
        "current_platform": platform,
        "can_use_trtllm_attention": lambda *a, **k: trtllm_ok and heads_ok,
        "_is_xqa_head_dim_supported": lambda *a: xqa_ok,
        "_use_fa2_native_decode": lambda: fa2_decode,
        "iter_layer_specs": lambda spec: [spec],
        "UniformTypeKVCacheSpecs": type("UniformTypeKVCacheSpecs", (), {}),
        "AttentionSpec": object,
        "logger": sizing._Logger(),
    }
    found = classes.lookup(builder, reads_attribute)
    if found is None:
        return None
    if reads_attribute == "cudagraph_support":
        return sizing.evaluate(found[2], namespace).name
    attribute = classes.lookup(builder, "_cudagraph_support")
    cls = ns(_cudagraph_support=sizing.evaluate(attribute[2], namespace) if attribute else None)
    vllm_config = ns(
        model_config=ns(is_encoder_decoder=False, get_num_attention_heads=lambda p: 32),
        parallel_config=ns(decode_context_parallel_size=1),
        attention_config=ns(use_non_causal=False),
    )
    spec = ns(num_kv_heads=8, head_size=128, kv_quant_mode=ns(is_nvfp4=False))
    fn = _exec_function(found[2], namespace)
    return fn(cls, vllm_config, spec).name


# --------------------------------------------------------------------------- lowering

RUNNER = "vllm/v1/worker/gpu_model_runner.py"
COMPILATION = "vllm/config/compilation.py"


def lowering(src):
    """(which function, a callable (mode, support, q, backend, v2) -> (resolved, warnings,
    error), whether it distinguishes the model runners, the attribute it reads)."""
    log = sizing._Logger()
    # a dense model: no Mamba cache groups (0.18.0 caps the FULL sizes for them)
    names: dict = {"enum": enum, "logger": log, "Enum": enum.Enum, "MambaSpec": type("M", (), {})}
    src.exec_defs(COMPILATION, ["CUDAGraphMode"], names)
    # CompilationLevel (PIECEWISE = 3) to 0.11.0, CompilationMode (VLLM_COMPILE) from 0.11.1
    for name in ("CompilationLevel", "CompilationMode"):
        if src.has(COMPILATION, name):
            src.exec_defs(COMPILATION, [name], names)
    support_member = next(
        m
        for m in ("vllm/v1/attention/backend.py", BACKENDS_DIR + "utils.py")
        if m in src.zip.namelist() and src.has(m, "AttentionCGSupport")
    )
    src.exec_defs(support_member, ["AttentionCGSupport"], names)
    mode_enum, support_enum = names["CUDAGraphMode"], names["AttentionCGSupport"]
    if src.has(COMPILATION, "resolve_cudagraph_mode_and_sizes", "CompilationConfig"):
        where = f"{COMPILATION} CompilationConfig.resolve_cudagraph_mode_and_sizes"
        fn = src.exec_defs(
            COMPILATION, ["resolve_cudagraph_mode_and_sizes"], names, cls="CompilationConfig"
        )["resolve_cudagraph_mode_and_sizes"]
    else:
        fname = next(
            f
            for f in ("_check_and_update_cudagraph_mode", "initialize_cudagraph_capture")
            if src.has(RUNNER, f, "GPUModelRunner")
        )
        where = f"{RUNNER} GPUModelRunner.{fname}"
        fn = src.exec_defs(RUNNER, [fname], names, cls="GPUModelRunner")[fname]
    params = fn.__code__.co_varnames[: fn.__code__.co_argcount]
    by_runner = "use_v2_model_runner" in params
    reads = (
        "cudagraph_support"
        if "initialize_cudagraph_capture" in where
        else ("get_cudagraph_support")
    )

    def run(mode_name, level, q, named, v2):
        log.lines.clear()
        cc = ns(
            cudagraph_mode=mode_enum[mode_name],
            mode=names["CompilationMode"].VLLM_COMPILE if "CompilationMode" in names else None,
            level=3,
            splitting_ops_contain_attention=lambda: True,
            use_inductor_graph_partition=False,
            adjust_cudagraph_sizes_for_spec_decode=lambda *args: None,
            cudagraph_capture_sizes=[],
            max_cudagraph_capture_size=0,
        )
        support = support_enum[level]
        try:
            if "resolve_cudagraph_mode_and_sizes" in where:
                extra = {"use_v2_model_runner": v2} if by_runner else {}
                cc.cudagraph_mode = fn(cc, support, named, q, **extra)
            elif "initialize_cudagraph_capture" in where:
                builder = type(named, (), {"cudagraph_support": support})()
                self = ns(
                    compilation_config=cc,
                    uniform_decode_query_len=q,
                    _attn_group_iterator=lambda: [
                        ns(metadata_builder=builder, get_metadata_builder=lambda *a: builder)
                    ],
                    cudagraph_dispatcher=ns(initialize_cudagraph_keys=lambda *args: None),
                )
                fn(self)
            else:
                builder = ns(get_cudagraph_support=lambda config, spec, s=support: s)
                backend_cls = type(named, (), {"get_builder_cls": lambda b=builder: b})
                self = ns(
                    compilation_config=cc,
                    vllm_config=None,
                    uniform_decode_query_len=q,
                    parallel_config=ns(tensor_parallel_size=1),
                    speculative_config=None,
                    cudagraph_dispatcher=ns(initialize_cudagraph_keys=lambda *args: None),
                )
                fn(self, [{backend_cls}], [ns(kv_cache_spec=None)])
            resolved, error = cc.cudagraph_mode.name, None
        except ValueError as exc:
            resolved, error = None, f"ValueError: {exc}"
        return resolved, list(log.lines), error

    return where, run, by_runner, reads


def release_record(version: str, src, seed: str) -> tuple[dict, str]:
    """The release's backend table and vectors (model runner V1's call), and what it must share
    with the next release to be in one range: the table's classes and support, and the outcomes
    with one class name (the names drawn differ per release). SystemExit where model runner V2's
    call lowers differently (the kit models one lowering per release)."""
    where, run, by_runner, reads = lowering(src)
    table = backend_supports(src, reads)
    # the class vLLM's messages name: the metadata builder's while the lowering reads it
    named_key = "builder" if reads == "cudagraph_support" else "class"
    rng = random.Random(f"{seed}-{version}")
    vectors, outcomes = [], []
    for mode, level, q in itertools.product(MODES, CG_SUPPORTS, QUERY_LENS):
        name = rng.choice(sorted(table))
        resolved, warnings, error = run(mode, level, q, table[name][named_key], False)
        vectors.append(
            {
                "cudagraph_mode": mode,
                "support": level,
                "query_len": q,
                "backend": name,
                "named": table[name][named_key],
                "resolved": resolved,
                "warnings": warnings,
                "error": error,
            }
        )
        outcomes.append(run(mode, level, q, "X", False))
        if by_runner and run(mode, level, q, "X", True) != outcomes[-1]:
            raise SystemExit(f"{version}: use_v2_model_runner changes {mode} {level} q={q}")
    rows = {n: {k: row[k] for k in ("class", "builder", "support")} for n, row in table.items()}
    record = {"lowering": where, "reads": reads, "backends": table, "vectors": vectors}
    return record, json.dumps([rows, outcomes], sort_keys=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    parser.add_argument("--seed", default="graphlab-attention")
    parser.add_argument("--only", nargs="*", help="these releases alone (no file written)")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO_ROOT))
    from graphlab.sizing.versions import RELEASES

    index = json.load(urllib.request.urlopen(drafter.INDEX))
    releases = args.only or [r for r in RELEASES if _key(r) >= _key(FIRST)]
    ranges, records, wheels, previous = [], {}, {}, None
    for version in releases:
        path, wheels[version] = drafter.fetch_members(
            version, args.cache_dir, index, MEMBER_PREFIXES
        )
        src = sizing.WheelSource(path)
        record, behaviour = release_record(version, src, args.seed)
        if previous is not None and behaviour == previous:
            ranges[-1]["last"] = version
        else:
            ranges.append({"first": version, "last": version})
            records[version] = record | {"wheel": wheels[version]}
        previous = behaviour
        print(version, "->", ranges[-1]["first"], flush=True)
    payload = {
        "generated_by": "scripts/make_attention_vectors.py",
        "seed": args.seed,
        "notes": __doc__.split("\n\n", 1)[1].strip(),
        "ranges": ranges,
        "releases": records,
    }
    if args.only:
        print(json.dumps(payload, indent=1)[:20000])
        return 0
    sizing.write_json_atomic(payload, args.out)
    print(f"{sum(len(r['vectors']) for r in records.values())} vectors, {len(ranges)} ranges")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
