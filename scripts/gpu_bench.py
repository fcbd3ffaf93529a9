"""The GPU check's Python steps, each a thin call into graphlab (scripts/gpu_check.sh runs each
under its own timeout, so a hung step costs only its own time).

    environment:  python scripts/gpu_bench.py environment
             versions (python, torch, CUDA, cuDNN, packages), the device, the SDPA backends
             enabled and the one torch picks for a decode-shaped attention call.
    sweep:   python scripts/gpu_bench.py sweep --out DIR [--suite full] [--device auto]
                 [--preset 1b] [--no-v1] copy_bandwidth latency graph_memory
             bench.run_bench of the named sweeps of a suite (one run: one run_id), the suite's
             preset replaced when --preset is given, its V1 engine's rows left out with
             --no-v1; writes DIR/<sweep>.csv as each one ends.
    report:  python scripts/gpu_bench.py report --out DIR --small 100m --large 1b
             from DIR/<small>/ and DIR/<large>/: the speculative-decoding headline, the copy
             bandwidth, the V1 cliff, the graph-memory predictor's accuracy, and last the target
             table (also written to DIR/targets.csv). A missing CSV is reported, not fatal.
"""

from __future__ import annotations

import argparse
import functools
import importlib.metadata as md
import platform
import time
import warnings
from pathlib import Path

import pandas as pd

from graphlab import bench
from graphlab.bench.export import read_csv, write_csv_atomic

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

# name -> (threshold, whether the value must reach it from above). The project's goals:
TARGETS = {
    # A ~100M model at batch 1 is launch-bound: one replay replaces hundreds of launches.
    "replay speedup at batch 1 (eager / graph)": (4.0, True),
    # At batch 1 a step reads every weight once; the floor uses this device's copy bandwidth.
    "graph step at batch 1 / copy-bandwidth floor": (1.6, False),
    # A capture records one step's launches: far under a second even for V0's 35 sizes.
    "slowest capture (ms)": (50.0, False),
    # Captured largest first, smaller graphs reuse the largest one's blocks.
    "shared pool / largest graph's own pool": (1.25, False),
}


REPLAY_MISMATCH = "replay differs from eager"


class ReplayMismatch(ValueError):
    """The graph row's first replay missed the eager logits beyond its tolerance."""


def replay_lines(latency: pd.DataFrame) -> list[str]:
    """Per (model, engine): graph-path rows checked against eager, the worst diff / tolerance,
    and the batch sizes beyond tolerance, named loudly."""
    if "max_abs_logit_diff" not in latency.columns:
        return ["== replay vs eager: no max_abs_logit_diff in latency.csv"]
    checked = latency[latency["max_abs_logit_diff"].notna()]
    lines = []
    for (model, engine), rows in checked.groupby(["model", "engine"], sort=False):
        ratio = rows["max_abs_logit_diff"] / rows["logit_tolerance"]
        bad = rows.loc[ratio > 1, "batch_size"].tolist()
        lines.append(
            f"== replay vs eager ({model}, {engine}): {len(rows)} graph-path sizes, "
            f"worst diff {ratio.max():.3g} x tolerance; "
            + (f"BEYOND TOLERANCE at batch sizes {bad}" if bad else "all within")
        )
    return lines or ["== replay vs eager: no graph-path rows in latency.csv"]


def summarize_targets(
    latency: pd.DataFrame, memory: pd.DataFrame, small: str, large: str
) -> pd.DataFrame:
    """One row per target from latency.csv and graph_memory.csv rows of both presets.

    `small` names the preset of the launch-bound targets (100m on the GPU check), `large` the
    one held against the copy-bandwidth floor (1b); the shared-pool ratio is given for both.
    Memory compares pool_bytes where measured, the predictions otherwise (memory_kind says
    which). A target whose rows are missing (its step failed) gets an empty value, not met.
    The targets are the V0 guard's (bench.LATENCY_ENGINE): V1 rows count tokens, not rows.
    A graph row whose first replay's logits missed the eager step's (replay_matches_eager
    False) gives no speed-up and no floor ratio: its backend reads REPLAY_MISMATCH.
    """
    latency, memory = (
        frame[frame["engine"] == bench.LATENCY_ENGINE] if "engine" in frame else frame
        for frame in (latency, memory)
    )

    def at_batch_1(preset, mode):
        rows = latency[(latency["model"] == preset) & (latency["mode"] == mode)]
        row = rows[rows["batch_size"] == 1].iloc[0]
        if str(row.get("replay_matches_eager")) == "False":  # a wrong replay is no speed-up
            raise ReplayMismatch(preset)
        return row

    def captures(preset, pool):
        return memory[(memory["model"] == preset) & (memory["graph_pool"] == pool)]

    def speedup():
        graph, eager = at_batch_1(small, "graph"), at_batch_1(small, "eager")
        return eager["median_ms"] / graph["median_ms"], graph["backend"], None

    def floor_ratio():
        graph = at_batch_1(large, "graph")
        return graph["median_ms"] / graph["bandwidth_floor_ms"], graph["backend"], None

    def slowest_capture():
        shared = captures(small, "shared")
        return shared["capture_ms"].max(), shared["backend"].iloc[0], None

    def pool_ratio(preset):
        shared, separate = captures(preset, "shared"), captures(preset, "separate")
        kind = shared["memory_kind"].iloc[0]
        key = "pool_bytes" if kind == "measured" else "memory_bytes"
        largest = separate.loc[separate["capture_size"].idxmax()]
        return shared[key].sum() / largest[key], shared["backend"].iloc[0], kind

    values = {
        "replay speedup at batch 1 (eager / graph)": [(small, speedup)],
        "graph step at batch 1 / copy-bandwidth floor": [(large, floor_ratio)],
        "slowest capture (ms)": [(small, slowest_capture)],
        "shared pool / largest graph's own pool": [
            (preset, functools.partial(pool_ratio, preset))
            for preset in dict.fromkeys((small, large))
        ],
    }
    rows = []
    for name, results in values.items():
        threshold, at_least = TARGETS[name]
        for preset, compute in results:
            try:
                value, backend, kind = compute()
            except ReplayMismatch:
                value, backend, kind = float("nan"), REPLAY_MISMATCH, None
            except (IndexError, KeyError, ValueError):
                value, backend, kind = float("nan"), "missing", None
            met = value >= threshold if at_least else value <= threshold
            rows.append(
                dict(
                    target=name,
                    model=preset,
                    value=float(value),
                    threshold=threshold,
                    met=bool(met),
                    backend=backend,
                    memory_kind=kind,
                )
            )
    return pd.DataFrame(rows)


def predictor_accuracy(memory: pd.DataFrame) -> pd.DataFrame | None:
    """Per (model, engine, pool): predicted / measured graph memory, all graphs and per size."""
    measured = memory[memory["predicted_over_measured"].notna()]
    if measured.empty:
        return None
    groups = measured.groupby(["model", "engine", "graph_pool"], sort=False)[
        "predicted_over_measured"
    ]
    return pd.DataFrame(
        {
            "all_graphs": groups.last(),
            "min_over_sizes": groups.min(),
            "max_over_sizes": groups.max(),
        }
    ).reset_index()


def loop_memory(memory: pd.DataFrame) -> pd.DataFrame:
    """Per (model, engine, pool): the whole capture loop's free-memory drop in GiB beside the
    sum of the per-graph drops (the sum misses what the loop keeps between captures)."""
    groups = memory.groupby(["model", "engine", "graph_pool", "memory_kind"], sort=False)
    frame = pd.DataFrame(
        {
            "capture_loop_GiB": groups["capture_loop_bytes"].first() / 2**30,
            "per_graph_sum_GiB": groups["memory_bytes"].sum() / 2**30,
        }
    )
    return frame.reset_index()


def v1_cliff(latency: pd.DataFrame) -> list[str]:
    """Per (model, V1 engine): the largest captured token count and the graph-mode step just
    below (at) it and just above it, where the verify step leaves the graphs."""
    if "batch_unit" not in latency.columns:
        return []
    rows = latency[(latency["batch_unit"] == "tokens") & (latency["mode"] == "graph")]
    lines = []
    for (model, engine), group in rows.groupby(["model", "engine"], sort=False):
        limit = int(group["graph_limit"].iloc[0])
        below, above = group[group["batch_size"] <= limit], group[group["batch_size"] > limit]
        sides = [
            f"{int(r['batch_size'])} tokens ({r['path']}) {r['median_ms']:.3g} ms"
            for r in (
                below.loc[below["batch_size"].idxmax()] if len(below) else None,
                above.loc[above["batch_size"].idxmin()] if len(above) else None,
            )
            if r is not None
        ]
        k, backend = int(group["num_speculative_tokens"].iloc[0]), group["backend"].iloc[0]
        lines.append(
            f"== V1 cliff ({engine}, {model}, k={k}, {backend}): largest captured "
            f"{limit} tokens; median step {' -> '.join(sides)}"
        )
    return lines


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
    suite = bench.get_suite(args.suite)
    if args.preset:
        suite = bench.replace_suite(suite, preset=args.preset)
    if args.no_v1:
        suite = bench.replace_suite(suite, v1_sizing=None)
    start = time.perf_counter()
    paths = bench.run_bench(suite, args.device, args.out, sweeps=args.sweeps, progress=False)
    print(bench.summary(paths))
    print(f"{', '.join(args.sweeps)} ({suite.name} suite) in {time.perf_counter() - start:.1f} s")
    return 0


def _read(out: Path, name: str) -> pd.DataFrame | None:
    if (out / name).is_file():
        return read_csv(out / name)
    print(f"missing: {name} (its step failed or timed out; see steps.tsv and logs/)")
    return None


def _table(frame: pd.DataFrame) -> str:
    return frame.to_string(index=False, float_format=lambda v: f"{v:.3g}")


def report(args) -> int:
    """Print the headline, bandwidth and predictor accuracy, then the target table; 1 if short."""
    status = 0
    spec = _read(args.out, f"{args.small}/spec_decode.csv")
    if spec is None:
        status = 1
    else:
        spec["target_graph_MiB"] = spec["target_graph_memory_bytes"] / 2**20
        print(
            f"== speculative decoding, guard (vllm-0.6.0) vs adaptive: {args.small} "
            f"{spec['dtype'].iloc[0]}, {spec['backend'].iloc[0]} on {spec['device'].iloc[0]}"
        )
        print(_table(spec[HEADLINE]))
    frames, complete = {}, True
    for name in ("copy_bandwidth", "latency", "graph_memory"):
        parts = [
            _read(args.out, f"{preset}/{name}.csv")
            for preset in dict.fromkeys((args.small, args.large))
        ]
        found = [part for part in parts if part is not None]
        complete &= len(found) == len(parts)
        frames[name] = pd.concat(found, ignore_index=True) if found else pd.DataFrame()
    copy = frames["copy_bandwidth"]
    for row in copy.itertuples():
        print(
            f"== copy bandwidth ({row.model} run): {row.bytes_per_s / 1e9:.1f} GB/s read+written,"
            f" median of {row.repeats} copies of {row.copy_bytes / 2**20:.0f} MiB"
            f" on {row.device}"
        )
    print("\n".join(v1_cliff(frames["latency"])) or "== V1 cliff: no V1 rows in latency.csv")
    if not frames["latency"].empty:
        lines = replay_lines(frames["latency"])
        print("\n".join(lines))
        status |= any("BEYOND" in line for line in lines)
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
    targets = summarize_targets(frames["latency"], frames["graph_memory"], args.small, args.large)
    write_csv_atomic(targets, args.out / "targets.csv")
    print("== targets")
    print(_table(targets))
    return status | (not complete)


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
    sweep.add_argument("sweeps", nargs="+", choices=bench.SWEEPS)
    summary = steps.add_parser("report", help="headline, accuracy and the target table")
    summary.add_argument("--out", type=Path, required=True, help="folder holding <preset>/")
    summary.add_argument("--small", default="100m", help="preset of the launch-bound targets")
    summary.add_argument("--large", default="1b", help="preset held against the bandwidth floor")
    args = parser.parse_args()
    return {"environment": environment, "sweep": run_sweeps, "report": report}[args.step](args)


if __name__ == "__main__":
    raise SystemExit(main())
