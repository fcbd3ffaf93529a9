"""The GPU check's Python steps, each a thin call into graphlab (scripts/gpu_check.sh runs each
under its own timeout, so a hung step costs only its own time).

    environment:  python scripts/gpu_bench.py environment
             versions (python, torch, CUDA, cuDNN, packages), the device, the SDPA backends
             enabled and the one torch picks for a decode-shaped attention call.
    sweep:   python scripts/gpu_bench.py sweep --out DIR [--suite full] [--device auto]
                 [--preset 1b] [--no-v1] copy_bandwidth latency graph_memory
             sweeps.run_bench of the named sweeps of a suite (one run: one run_id), the suite's
             preset replaced when --preset is given, its V1 engine's rows left out with
             --no-v1; writes DIR/<sweep>.csv as each one ends.
    report:  python scripts/gpu_bench.py report --out DIR --small 100m --large 1b [--suite full]
             from DIR/<small>/ and DIR/<large>/: the speculative-decoding headline, the copy
             bandwidth, the V1 cliff, the graph-memory predictor's accuracy
             (graphlab.bench.targets), the GPU clocks per step (DIR/clocks.csv, DIR/steps.tsv),
             the rows a step left out, and last the target table (also
             written to DIR/targets.csv). A missing CSV or row is reported, not fatal; exit 1.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import platform
import time
import warnings
from pathlib import Path

import pandas as pd

from graphlab.bench import suites, sweeps
from graphlab.bench.export import partial_path, read_csv, write_csv_atomic, written_files
from graphlab.bench.targets import (
    expected_engines,
    loop_memory,
    missing_rows,
    predictor_accuracy,
    replay_check,
    step_clocks,
    summarize_targets,
    v1_cliff,
)
from graphlab.views.report import (
    clock_lines,
    gap_line,
    replay_lines,
    v1_cliff_lines,
    written_summary,
)

HEADLINE = [
    "engine",
    "max_num_seqs",
    "num_speculative_tokens",
    "tokens_per_s",
    "scorer_graph_fraction",
    "num_target_graphs",
    "target_graph_MiB",
    "memory_kind",
    "mean_acceptance_length",
]
PACKAGES = (
    "numpy",
    "pandas",
    "matplotlib",
    "tqdm",
    "pytest",
    "hypothesis",
    "transformers",
    "safetensors",
)


def sdpa_choice(device, preset: str) -> str:
    """The pinned SDPA backends, the kernel SDPA picks for the model's own decode attention call
    (its q/k/v and additive mask, graphlab.engine.sdpa.probe_sdpa) and the backends that run it."""
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    from graphlab.bench.suites import DEVICE_DEFAULTS
    from graphlab.engine.model import build_model
    from graphlab.engine.sdpa import CUDA_SDPA_BACKENDS, probe_sdpa

    dtype = DEVICE_DEFAULTS[device.type][1]
    model = build_model(preset, dtype=dtype, device=device)
    model.allocate_kv_cache(8, 256)
    call = probe_sdpa(model, num_rows=8)  # 8 decode rows over a 256-position cache
    runs = []
    for name, backend in SDPBackend.__members__.items():
        if name in ("ERROR", "OVERRIDEABLE"):
            continue
        with warnings.catch_warnings(), sdpa_kernel([backend]):
            warnings.simplefilter("ignore")
            try:
                F.scaled_dot_product_attention(
                    call.query, call.key, call.value, attn_mask=call.attn_mask
                )
                runs.append(name.lower())
            except RuntimeError:
                pass
    pinned = [b.name.lower() for b in CUDA_SDPA_BACKENDS] if device.type == "cuda" else "none"
    return (
        f"sdpa ({preset} decode q{tuple(call.query.shape)} kv{tuple(call.key.shape)} "
        f"{call.attn_mask.dtype} additive mask, {dtype}): pinned {pinned}; "
        f"chosen {call.backend}; runs on {runs}"
    )


def environment(args) -> int:
    from graphlab.bench.provenance import provenance
    from graphlab.engine.device import resolve_device

    device = resolve_device(args.device)
    prov = provenance(device, suite="environment")
    print(
        f"python {platform.python_version()} | torch {prov['torch_version']} | cuda "
        f"{prov['cuda_version']} | cudnn {prov['cudnn_version']} | device {prov['device']}"
    )
    versions = []
    for name in PACKAGES:
        try:
            versions.append(f"{name} {md.version(name)}")
        except md.PackageNotFoundError:
            versions.append(f"{name} not installed")
    print(" | ".join(versions))
    print(sdpa_choice(device, args.preset))
    print("provenance:", prov)
    return 0


def run_sweeps(args) -> int:
    suite = suites.get_suite(args.suite)
    if args.preset:
        suite = suites.replace_suite(suite, preset=args.preset)
    if args.no_v1:
        suite = suites.replace_suite(suite, v1_sizing=None)
    start = time.perf_counter()
    paths = sweeps.run_bench(suite, args.device, args.out, sweeps=args.sweeps, progress=False)
    print(written_summary(written_files(paths)))
    print(f"{', '.join(args.sweeps)} ({suite.name} suite) in {time.perf_counter() - start:.1f} s")
    return 0


def _read(out: Path, name: str) -> pd.DataFrame | None:
    """The sweep's CSV, else the rows a stopped sweep left in its partial CSV (then incomplete)."""
    for path in (out / f"{name}.csv", partial_path(out, name)):
        if path.is_file():
            return read_csv(path)
    return None


def _table(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:.3g}")


def _expected(args) -> dict[str, tuple[str, ...]]:
    """<preset>/<sweep> -> its engines, for every CSV the check's steps write."""
    suite = suites.get_suite(args.suite)
    expected = {
        f"{args.small}/{sweep}": expected_engines(suite, sweep)
        for sweep in ("copy_bandwidth", "latency", "graph_memory", "crash_map")
        + ("spec_decode", "spec_decode_steps")
    }
    if args.large != args.small:  # the large preset runs V0 rows only (--no-v1)
        expected |= {
            f"{args.large}/{sweep}": expected_engines(suite, sweep, with_v1=False)
            for sweep in ("copy_bandwidth", "latency", "graph_memory")
        }
    return expected


def report(args) -> int:
    """Print the headline, bandwidth and predictor accuracy, the rows missing, then the target
    table; 1 if a row is missing or a replay missed eager."""
    csvs = {name: _read(args.out, name) for name in _expected(args)}
    gaps = [
        f"{name.split('/')[0]}/{gap_line(gap)}"
        for name, engines in _expected(args).items()
        for gap in missing_rows(name.split("/")[1], csvs[name], engines)
    ]
    status = 0
    spec = csvs[f"{args.small}/spec_decode"]
    if spec is not None and not spec.empty:
        spec["target_graph_MiB"] = spec["target_graph_memory_bytes"] / 2**20
        print(
            f"== speculative decoding, guard (vllm-0.6.0) vs adaptive: {args.small} "
            f"{spec['dtype'].iloc[0]}, {spec['backend'].iloc[0]} on {spec['device'].iloc[0]}"
        )
        print(_table(spec[HEADLINE]))
    frames = {}
    for name in ("copy_bandwidth", "latency", "graph_memory"):
        found = [
            csvs[f"{preset}/{name}"]
            for preset in dict.fromkeys((args.small, args.large))
            if csvs[f"{preset}/{name}"] is not None
        ]
        frames[name] = pd.concat(found, ignore_index=True) if found else pd.DataFrame()
    copy = frames["copy_bandwidth"]
    for row in copy.itertuples():
        print(
            f"== copy bandwidth ({row.model} run): {row.bytes_per_s / 1e9:.1f} GB/s read+written,"
            f" median of {row.repeats} copies of {row.copy_bytes / 2**20:.0f} MiB"
            f" on {row.device}"
        )
    print("\n".join(v1_cliff_lines(v1_cliff(frames["latency"]))))
    if not frames["latency"].empty:
        replay = replay_check(frames["latency"])
        print("\n".join(replay_lines(replay)))
        status |= replay is not None and any(replay["beyond"].map(len))
    if not frames["graph_memory"].empty:
        accuracy = predictor_accuracy(frames["graph_memory"])
        print("== graph memory, predicted / measured")
        print(
            "predicted only (cpu-emulated): nothing measured to compare"
            if accuracy is None
            else _table(accuracy)
        )
        print('== graph memory, whole capture loop (vLLM V1\'s "took ... GiB") vs per graph')
        print(_table(loop_memory(frames["graph_memory"])))
    steps = args.out / "steps.tsv"
    if steps.exists():
        clocks = args.out / "clocks.csv"
        clocks = pd.read_csv(clocks) if clocks.exists() else None
        print("\n".join(clock_lines(step_clocks(clocks, pd.read_csv(steps, sep="\t")))))
    # A step that timed out or failed leaves CSVs without some rows: see steps.tsv and logs/.
    print("\n".join(["== rows MISSING", *gaps] if gaps else ["== rows: every one expected"]))
    targets = summarize_targets(frames["latency"], frames["graph_memory"], args.small, args.large)
    write_csv_atomic(targets, args.out / "targets.csv")
    print("== targets")
    print(_table(targets))
    return status | bool(gaps)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    env = steps.add_parser("environment", help="versions, device and SDPA backend")
    env.add_argument("--device", default="auto", help="auto | cuda | cpu")
    env.add_argument("--preset", default="1b", help="model whose attention call is probed")
    sweep = steps.add_parser("sweep", help="run sweeps of a bench suite")
    sweep.add_argument("--out", type=Path, required=True, help="folder for the CSVs")
    sweep.add_argument(
        "--suite", default="full", help="a graphlab.bench.suites.SUITES suite (default full)"
    )
    sweep.add_argument("--device", default="auto", help="auto | cuda | cpu")
    sweep.add_argument("--preset", help="model preset replacing the suite's (e.g. 1b)")
    sweep.add_argument("--no-v1", action="store_true", help="leave out the V1 engine's rows")
    sweep.add_argument("sweeps", nargs="+", choices=sweeps.SWEEPS)
    summary = steps.add_parser("report", help="headline, accuracy and the target table")
    summary.add_argument("--out", type=Path, required=True, help="folder holding <preset>/")
    summary.add_argument("--small", default="100m", help="preset of the launch-bound targets")
    summary.add_argument("--large", default="1b", help="preset held against the bandwidth floor")
    summary.add_argument("--suite", default="full", help="the suite the sweeps ran (its engines)")
    args = parser.parse_args()
    return {"environment": environment, "sweep": run_sweeps, "report": report}[args.step](args)


if __name__ == "__main__":
    raise SystemExit(main())
