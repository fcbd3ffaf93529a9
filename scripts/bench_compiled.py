"""Eager against compiled decode-step time, and the compile's cost, on this machine's CPU.

    PYTHONPATH=. python scripts/bench_compiled.py [--presets tiny 100m] [--threads 1]

Per preset: the decoder step (what a graph holds) run eagerly and through the cpu-compiled
backend's compiled step at each batch size (tiny: 1, 8; 100m: 1, 8, 32), median of timed steps
after a warm-up, one torch thread; and the compile time of the first batch size (the shared
dynamic-shape graph) and of batch 1 (dynamo's own specialisation), with the inductor cache
state it found. Run it twice with a fresh TORCHINDUCTOR_CACHE_DIR to see cold against warm.
"""

from __future__ import annotations

import argparse
import statistics
import time
from functools import partial

import torch

from graphlab.engine.compiled import compiled_step, inductor_cache_state
from graphlab.engine.device import device_name
from graphlab.engine.graphs import StaticBuffers
from graphlab.engine.model import build_model

BATCHES = {"tiny": (1, 8), "100m": (1, 8, 32), "1b": (1, 8)}


def median_ms(fn, repeats: int, warmup: int = 5) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def bench_preset(preset: str, repeats: int) -> None:
    batches = BATCHES[preset]
    model = build_model(preset)
    model.allocate_kv_cache(max(batches), 128)
    buffers = StaticBuffers(model, max(batches))
    step = compiled_step(model)
    print(f"{preset}: inductor cache {step.cache_state} before compiling")
    with torch.no_grad():
        for n in sorted(batches, reverse=True):  # largest first, as capture does
            start = time.perf_counter()
            buffers.run(model, n, step.compile)
            compile_s = time.perf_counter() - start
            eager = median_ms(partial(buffers.run, model, n), repeats)
            compiled = median_ms(partial(buffers.run, model, n, step), repeats)
            print(
                f"  batch {n:>3}: first call {compile_s:6.2f} s; eager {eager:8.3f} ms, "
                f"compiled {compiled:8.3f} ms, eager / compiled {eager / compiled:.2f}x",
                flush=True,
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", nargs="+", default=["tiny", "100m"], choices=list(BATCHES))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=50)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(
        f"{device_name(torch.device('cpu'))}, torch {torch.__version__}, inductor cache "
        f"{inductor_cache_state()}"
    )
    for preset in args.presets:
        bench_preset(preset, args.repeats)


if __name__ == "__main__":
    main()
