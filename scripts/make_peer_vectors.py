#!/usr/bin/env python3
"""Regenerate data/peer_sizing_vectors.json: SGLang, nano-vllm and TensorRT-LLM capture lists and
dispatch outcomes computed by executing the peers' own released code.

Developer script, never run by tests or at run time. Sources, each recorded with its sha256:
- sglang 0.4.6: the wheel from PyPI (pip download, cached in build/wheels/), member
  python/sglang/srt/model_executor/cuda_graph_runner.py: `get_batch_sizes_to_capture` exec'd
  verbatim with a stand-in model runner and `get_device_memory_capacity`;
- nano-vllm at NANO_VLLM_COMMIT, nanovllm/engine/model_runner.py read from a git clone
  (--nano-vllm-git): the `max_bs` and `self.graph_bs` assignments of `capture_cudagraph` and, of
  `run_model`, the eager test and the `self.graphs[next(...)]` lookup, evaluated verbatim;
- TensorRT-LLM at TRTLLM_COMMIT, tensorrt_llm/llmapi/llm_args.py: the staticmethod
  `_generate_cuda_graph_batch_sizes`, exec'd verbatim from a file holding its text as served at
  that commit (--trtllm-excerpt; the repository is too large to clone here, so the excerpt's
  sha256 is recorded, not the whole file's).
Dispatch rules mirrored by hand are listed in the output's provenance notes. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import bisect
import datetime
import math
import random
import subprocess
import sys
import textwrap
import types
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_sizing_vectors import _assign_to, _plain_function, evaluate, sha256_of, write_json_atomic  # noqa: E402

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO_ROOT / "data" / "peer_sizing_vectors.json"
SGLANG_VERSION = "0.4.6"
SGLANG_MEMBER = "sglang/srt/model_executor/cuda_graph_runner.py"
NANO_VLLM_COMMIT = "bb823b3e06983d71485a8e1f23715ebd87d98ef8"  # 2026-04-26, main
NANO_VLLM_PATH = "nanovllm/engine/model_runner.py"
TRTLLM_COMMIT = "0004396720054fd8e205cbf616f21f0b57c6b412"
TRTLLM_PATH = "tensorrt_llm/llmapi/llm_args.py"
# nvidia-smi memory.total in MiB: an H200 (the kit's reference device) and an 80 GB A100/H100.
DEVICE_MEMORY_MIB = (143771, 81920)
# fmt: off
EDGE_SEQS = (
    1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 20, 31, 32, 33, 48, 64, 100, 127, 128, 129, 159, 160, 161,
    200, 255, 256, 257, 300, 496, 511, 512, 513, 600,
)
# fmt: on
MAX_NUM_SEQS = tuple(
    sorted(set(EDGE_SEQS) | set(random.Random("graphlab-peer-vectors").sample(range(1, 700), 8)))
)
# fmt: off
TRTLLM_MAX_BATCH = (
    1, 2, 3, 8, 31, 32, 33, 64, 100, 127, 128, 129, 191, 192, 193, 255, 256, 257, 300, 512, 513,
    1000, 1024,
)
# fmt: on


def function_node(source: str, name: str, cls: str | None = None) -> ast.FunctionDef:
    scope = ast.parse(source).body
    if cls is not None:
        scope = next(n for n in scope if isinstance(n, ast.ClassDef) and n.name == cls).body
    return next(n for n in scope if isinstance(n, ast.FunctionDef) and n.name == name)


def exec_function(node: ast.FunctionDef, namespace: dict):
    module = ast.fix_missing_locations(ast.Module(body=[_plain_function(node)], type_ignores=[]))
    exec(compile(module, f"<{node.name}>", "exec"), namespace)
    return namespace[node.name]


def outcome(n: int, path: str, graph_size: int | None = None, error: str | None = None) -> list:
    return [n, path, graph_size, error]


# --------------------------------------------------------------------------- sglang 0.4.6


def sglang_vectors(wheel: Path) -> tuple[list[dict], dict]:
    source = zipfile.ZipFile(wheel).read(SGLANG_MEMBER).decode()
    memory = {"mib": None}
    get_sizes = exec_function(
        function_node(source, "get_batch_sizes_to_capture"),
        {"get_device_memory_capacity": lambda: memory["mib"]},
    )
    vectors = []
    for mib in DEVICE_MEMORY_MIB:
        memory["mib"] = mib
        for seqs in MAX_NUM_SEQS:
            for speculative in (False, True):
                server_args = types.SimpleNamespace(
                    cuda_graph_bs=None,
                    speculative_algorithm="EAGLE" if speculative else None,
                    disable_cuda_graph_padding=False,
                    dp_size=1,
                    cuda_graph_max_bs=None,
                    enable_torch_compile=False,
                    torch_compile_max_bs=32,
                )
                # max_running_requests = S gives req_to_token_pool.size = S + 1 (model_runner.py).
                runner = types.SimpleNamespace(
                    server_args=server_args, req_to_token_pool=types.SimpleNamespace(size=seqs + 1)
                )
                capture_bs, _ = get_sizes(runner)
                max_bs = max(capture_bs)
                outcomes = []
                for n in range(1, seqs + 1):
                    # can_run: batch_size <= max_bs; replay_prepare: bisect_left into capture_bs.
                    if n > max_bs:
                        outcomes.append(outcome(n, "eager"))
                    else:
                        outcomes.append(
                            outcome(n, "graph", capture_bs[bisect.bisect_left(capture_bs, n)])
                        )
                vectors.append(
                    {
                        "engine": "sglang",
                        "device_memory_mib": mib,
                        "max_num_seqs": seqs,
                        "speculative": speculative,
                        "capture_sizes": capture_bs,
                        "outcomes": outcomes,
                    }
                )
    source_info = {
        "package": f"sglang=={SGLANG_VERSION}",
        "wheel": wheel.name,
        "wheel_sha256": sha256_of(wheel),
        "file": SGLANG_MEMBER,
        "file_sha256": _sha256_text(source),
    }
    return vectors, source_info


# --------------------------------------------------------------------------- nano-vllm


def nano_vllm_vectors(git_dir: Path) -> tuple[list[dict], dict]:
    source = subprocess.run(
        ["git", "--git-dir", str(git_dir), "show", f"{NANO_VLLM_COMMIT}:{NANO_VLLM_PATH}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    capture = function_node(source, "capture_cudagraph", "ModelRunner")
    run_model = function_node(source, "run_model", "ModelRunner")
    max_bs_expr = next(v for v in map(_assign_to("max_bs"), ast.walk(capture)) if v is not None)
    graph_bs_expr = next(
        v for v in map(_assign_to("self.graph_bs"), ast.walk(capture)) if v is not None
    )
    eager_test = next(n.test for n in ast.walk(run_model) if isinstance(n, ast.If))
    lookup = next(v for v in map(_assign_to("graph"), ast.walk(run_model)) if v is not None)
    vectors = []
    for seqs in MAX_NUM_SEQS:
        runner = types.SimpleNamespace(
            config=types.SimpleNamespace(max_num_seqs=seqs), enforce_eager=False
        )
        local = {"self": runner, "min": min}
        local["max_bs"] = evaluate(max_bs_expr, local)
        runner.graph_bs = evaluate(graph_bs_expr, local)
        runner.graphs = {bs: bs for bs in runner.graph_bs}  # the graph stands for its size
        outcomes = []
        for n in range(1, seqs + 1):
            batch = {
                "self": runner,
                "is_prefill": False,
                "bs": n,
                "input_ids": types.SimpleNamespace(size=lambda dim, n=n: n),
            }
            if evaluate(eager_test, batch):
                outcomes.append(outcome(n, "eager"))
                continue
            try:
                outcomes.append(outcome(n, "graph", evaluate(lookup, batch)))
            except StopIteration:
                outcomes.append(outcome(n, "crash", None, "StopIteration"))
        vectors.append(
            {
                "engine": "nano-vllm",
                "max_num_seqs": seqs,
                "capture_sizes": runner.graph_bs,
                "outcomes": outcomes,
            }
        )
    source_info = {
        "repo": "GeeeekExplorer/nano-vllm",
        "commit": NANO_VLLM_COMMIT,
        "file": NANO_VLLM_PATH,
        "file_sha256": _sha256_text(source),
    }
    return vectors, source_info


# --------------------------------------------------------------------------- TensorRT-LLM


def trtllm_vectors(excerpt: Path) -> tuple[list[dict], dict]:
    text = excerpt.read_text()
    node = function_node(textwrap.dedent(text), "_generate_cuda_graph_batch_sizes")
    generate = exec_function(node, {"math": math, "List": list})
    vectors = []
    for max_batch_size in TRTLLM_MAX_BATCH:
        for enable_padding in (False, True):
            sizes = generate(max_batch_size, enable_padding)
            outcomes = []
            for n in range(1, max_batch_size + 9):
                # cuda_graph_runner.py: pad_batch rounds up with dummy requests when enabled (and a
                # size fits); _maybe_get_cuda_graph replays only a batch size that was captured.
                index = bisect.bisect_left(sizes, n)
                padded = sizes[index] if enable_padding and index < len(sizes) else n
                outcomes.append(
                    outcome(n, "graph", padded) if padded in sizes else outcome(n, "eager")
                )
            vectors.append(
                {
                    "engine": "trtllm",
                    "max_batch_size": max_batch_size,
                    "enable_padding": enable_padding,
                    "capture_sizes": sizes,
                    "outcomes": outcomes,
                }
            )
    source_info = {
        "repo": "NVIDIA/TensorRT-LLM",
        "commit": TRTLLM_COMMIT,
        "file": TRTLLM_PATH,
        "function": "BaseCudaGraphConfig._generate_cuda_graph_batch_sizes",
        "excerpt_sha256": _sha256_text(text),
    }
    return vectors, source_info


def _sha256_text(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()


NOTES = (
    "sglang: get_batch_sizes_to_capture verbatim; stand-ins: server_args with cuda_graph_bs, "
    "cuda_graph_max_bs unset, disable_cuda_graph_padding False, dp_size 1, torch compile off, "
    "speculative_algorithm None or 'EAGLE'; req_to_token_pool.size = max_num_seqs + 1; "
    "get_device_memory_capacity() = device_memory_mib (143771: H200, 81920: 80 GB). Outcomes per "
    "request count n in 1..max_num_seqs mirror CudaGraphRunner.can_run (n <= max_bs, padding on) "
    "and replay_prepare (bisect_left). "
    "nano-vllm: verbatim expressions from ModelRunner.capture_cudagraph (max_bs, self.graph_bs) "
    "and run_model (the eager if-test with is_prefill False, enforce_eager False; the "
    "self.graphs[next(...)] lookup, a StopIteration recorded as the crash); outcomes per decode "
    "batch n in 1..max_num_seqs. "
    "trtllm: _generate_cuda_graph_batch_sizes verbatim (from the excerpt); outcomes for n in "
    "1..max_batch_size+8 mirror cuda_graph_runner.py: with enable_padding a batch is rounded up "
    "(bisect_left) to a captured size when one fits, and a graph replays only for a captured size."
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=REPO_ROOT / "build" / "wheels",
        help="where the sglang wheel is downloaded/cached (default: build/wheels)",
    )
    parser.add_argument(
        "--nano-vllm-git",
        type=Path,
        required=True,
        help=f"git directory of a nano-vllm clone holding commit {NANO_VLLM_COMMIT}",
    )
    parser.add_argument(
        "--trtllm-excerpt",
        type=Path,
        default=REPO_ROOT / "build" / "peers" / "trtllm_llm_args_excerpt.py",
        help=f"the text of _generate_cuda_graph_batch_sizes from {TRTLLM_PATH} at {TRTLLM_COMMIT}",
    )
    args = parser.parse_args(argv)

    wheels = sorted(args.cache_dir.glob(f"sglang-{SGLANG_VERSION}-*.whl"))
    if not wheels:
        args.cache_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                f"sglang=={SGLANG_VERSION}",
                "--no-deps",
                "-d",
                str(args.cache_dir),
            ],
            check=True,
        )
        wheels = sorted(args.cache_dir.glob(f"sglang-{SGLANG_VERSION}-*.whl"))
    sources, vectors = {}, []
    for engine, build in (
        ("sglang", lambda: sglang_vectors(wheels[0])),
        ("nano-vllm", lambda: nano_vllm_vectors(args.nano_vllm_git)),
        ("trtllm", lambda: trtllm_vectors(args.trtllm_excerpt)),
    ):
        got, sources[engine] = build()
        vectors += got
    payload = {
        "provenance": {
            "generated_by": "scripts/make_peer_vectors.py",
            "generated_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "sources": sources,
            "notes": NOTES,
        },
        "vectors": vectors,
    }
    write_json_atomic(payload, args.out)
    counts = {e: sum(v["engine"] == e for v in vectors) for e in sources}
    print(f"wrote {len(vectors)} vectors {counts} to {args.out} ({args.out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
