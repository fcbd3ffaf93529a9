"""graphlab's decode step against transformers' on the same weights: eager and compiled.

Both models load one checkpoint (graphlab's save_checkpoint, read back by load_checkpoint and by
transformers.AutoModelForCausalLM), hold `context` tokens of `batch` rows in their caches, and
time one decode step (one new token per row, logits included) at that length:

- eager: graphlab's model(...) on its static cache against transformers' forward on its default
  DynamicCache (cropped back to `context` after each step, outside the timed region);
- compiled: graphlab's cpu-compiled step (engine.compiled.compiled_step, then the LM head) against
  transformers' StaticCache + torch.compile of its forward, the route transformers documents for
  fast decoding (https://huggingface.co/docs/transformers/llm_optims, "Static kv-cache and
  torch.compile"); both caches hold max_seq_len positions.

Samples are interleaved pairs (graphlab then transformers, the order alternating), so both see
the same load; a row gives each side's median step and the median of the pairs'
transformers / graphlab ratios (> 1: graphlab faster) with a bootstrap 95% interval over pairs.
The verdict says whether the interval clears the goal (eager 1.1, compiled 1.0), misses it, or
cannot resolve it. The default clock is the thread's CPU time (graphlab.engine.runner.CLOCKS, as
every CPU step of the kit is timed), which leaves out the time other processes hold the CPU on a
shared machine; --clock wall times wall-clock.

Measurements on a 2-core CPU: docs/vs_transformers.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import numpy as np
import pandas as pd
import torch

from graphlab.engine.checkpoint import load_checkpoint, save_checkpoint
from graphlab.engine.compiled import compiled_step
from graphlab.engine.config import PRESETS
from graphlab.engine.device import compile_unavailable, device_name, pin_threads
from graphlab.engine.model import build_model
from graphlab.engine.runner import CLOCKS
from graphlab.errors import GraphlabError, check_choice, check_int
from graphlab.stats import median_ci

ROUTES = ("eager", "compiled")
GOALS = {"eager": 1.1, "compiled": 1.0}  # transformers' step / graphlab's, at least
WARMUP_STEPS = 3


def verdict(low: float, high: float, goal: float) -> str:
    """'meets' when the whole interval is at or above the goal, 'misses' when below it."""
    return "meets" if low >= goal else "misses" if high < goal else "unresolved"


def paired_times(graphlab, transformers, pairs: int, clock) -> tuple[list, list]:
    """Seconds per step of each side, `pairs` interleaved samples after a warm-up."""
    for _ in range(WARMUP_STEPS):
        graphlab(clock)
        transformers(clock)
    ours, theirs = [], []
    for i in range(pairs):
        if i % 2:
            theirs.append(transformers(clock))
            ours.append(graphlab(clock))
        else:
            ours.append(graphlab(clock))
            theirs.append(transformers(clock))
    return ours, theirs


def _timed(step, after=None):
    """A sample: the step's time on `clock`; `after` (cache bookkeeping) runs untimed."""

    def sample(clock):
        start = clock()
        step()
        elapsed = clock() - start
        if after is not None:
            after()
        return elapsed

    return sample


def _prompt(config, batch: int, context: int):
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(0, config.vocab_size, (batch, context + 1), generator=generator)
    return ids[:, :context], ids[:, context:]


def eager_steps(ours, theirs, batch: int, context: int, max_seq_len: int):
    """(graphlab sample, transformers sample, max |logit difference|) for the eager route."""
    from transformers import DynamicCache

    prompt, token = _prompt(ours.config, batch, context)
    slots, position = torch.arange(batch), torch.full((batch, 1), context)
    ours.allocate_kv_cache(batch, max_seq_len)
    ours(prompt, torch.arange(context).repeat(batch, 1), slots)
    cache = DynamicCache(config=theirs.config)
    theirs(prompt, past_key_values=cache)
    diff = (ours(token, position, slots) - theirs(token, past_key_values=cache).logits).abs()
    cache.crop(-1)  # back to `context` tokens: every sample decodes the same position
    return (
        _timed(lambda: ours(token, position, slots)),
        _timed(lambda: theirs(token, past_key_values=cache), lambda: cache.crop(-1)),
        float(diff.max()),
    )


def compiled_steps(ours, theirs, batch: int, context: int, max_seq_len: int):
    """(graphlab sample, transformers sample, max |logit difference|) for the compiled route;
    the first calls compile (untimed)."""
    from transformers import StaticCache

    prompt, token = _prompt(ours.config, batch, context)
    slots, position = torch.arange(batch), torch.full((batch, 1), context)
    # Transformers gets its own copies: our compiled step marks its inputs' sizes unbacked.
    their_token, their_position = token.clone(), position.clone()
    ours.allocate_kv_cache(batch, max_seq_len)
    ours(prompt, torch.arange(context).repeat(batch, 1), slots)
    step = compiled_step(ours)
    step.compile(token, position, slots, batch)
    cache = StaticCache(config=theirs.config, max_cache_len=max_seq_len)
    theirs(prompt, past_key_values=cache, cache_position=torch.arange(context))
    forward = torch.compile(theirs.forward, fullgraph=True)
    at = torch.tensor([context])

    def their_step():
        return forward(
            input_ids=their_token,
            position_ids=their_position,
            cache_position=at,
            past_key_values=cache,
        ).logits

    def our_step():
        return ours.compute_logits(step(token, position, slots, batch))

    def rewind():
        # transformers 5's StaticLayer writes at its own cumulative_length, not cache_position
        for layer in cache.layers:
            layer.cumulative_length.fill_(context)

    diff = float((our_step() - their_step()).abs().max())
    rewind()
    return _timed(our_step), _timed(their_step, rewind), diff


def the_pair(preset: str, directory: str):
    """graphlab's model of `preset` (seed 0) and transformers' read of its checkpoint."""
    from transformers import AutoModelForCausalLM

    save_checkpoint(build_model(preset, seed=0), directory)
    theirs = AutoModelForCausalLM.from_pretrained(directory, dtype=torch.float32)
    return load_checkpoint(directory), theirs.eval().requires_grad_(False)


def measure(
    *, presets, batches, routes, context: int, max_seq_len: int, pairs: int, clock: str
) -> pd.DataFrame:
    """One row per (preset, batch, route): medians, the paired ratio, its interval, the verdict."""
    rows = []
    for preset in presets:
        with tempfile.TemporaryDirectory() as directory, torch.inference_mode():
            ours, theirs = the_pair(preset, directory)
            for route in routes:
                make = eager_steps if route == "eager" else compiled_steps
                for batch in batches:
                    mine, other, diff = make(ours, theirs, batch, context, max_seq_len)
                    t_ours, t_theirs = paired_times(mine, other, pairs, CLOCKS[clock])
                    ratio, low, high = median_ci(np.divide(t_theirs, t_ours))
                    rows.append(
                        dict(
                            preset=preset,
                            batch=batch,
                            route=route,
                            graphlab_ms=1e3 * float(np.median(t_ours)),
                            transformers_ms=1e3 * float(np.median(t_theirs)),
                            ratio=ratio,
                            ratio_low=low,
                            ratio_high=high,
                            goal=GOALS[route],
                            verdict=verdict(low, high, GOALS[route]),
                            pairs=pairs,
                            max_abs_logit_diff=diff,
                        )
                    )
                    print(_line(rows[-1]), flush=True)
    return pd.DataFrame(rows)


def _readings(route: str, quick: bool):
    """bench.timings' readings for one route: per preset and batch the ratio's interval, whose
    lower end is held against the goal (met only when the whole interval clears it)."""
    frame = measure(
        presets=("tiny",) if quick else ("tiny", "100m"),
        batches=(1,) if quick else (1, 8, 32),
        routes=(route,),
        context=63,
        max_seq_len=64,
        pairs=3 if quick else 15,
        clock="thread_cpu",
    )
    readings = []
    for row in frame.itertuples():
        case = f"{row.preset} batch {row.batch}, transformers / graphlab"
        readings += [
            (case, row.ratio, "x median"),
            (case, row.ratio_low, "x CI low"),
            (case, row.ratio_high, "x CI high"),
        ]
    return readings


def eager_readings(quick: bool):
    return _readings("eager", quick)


def compiled_readings(quick: bool):
    return _readings("compiled", quick)


def _line(row: dict) -> str:
    return (
        f"{row['preset']:>5} batch {row['batch']:>3} {row['route']:>8}: graphlab "
        f"{row['graphlab_ms']:8.2f} ms, transformers {row['transformers_ms']:8.2f} ms, "
        f"transformers/graphlab {row['ratio']:.3f} [{row['ratio_low']:.3f}, "
        f"{row['ratio_high']:.3f}] goal >= {row['goal']}: {row['verdict']}"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m graphlab.bench.vs_transformers",
        description=__doc__.split("\n\n")[0],
        epilog="A ratio above 1 means graphlab's step is faster. The rows print as they finish, "
        "with the machine, versions and load average before and after.",
    )
    parser.add_argument("--presets", nargs="+", default=["tiny", "100m"], metavar="PRESET")
    parser.add_argument("--batches", nargs="+", type=int, default=[1, 8, 32], metavar="N")
    parser.add_argument(
        "--routes",
        nargs="+",
        default=list(ROUTES),
        metavar="ROUTE",
        help=f"any of {', '.join(ROUTES)} (compiling takes minutes on a CPU)",
    )
    parser.add_argument(
        "--context",
        type=int,
        default=63,
        help="tokens in each row's cache before the timed step (default 63)",
    )
    parser.add_argument(
        "--max-seq-len",
        type=int,
        default=None,
        help="graphlab's cache and transformers' StaticCache length (default "
        "context + 1: the step's own length)",
    )
    parser.add_argument("--pairs", type=int, default=15, help="interleaved samples (default 15)")
    parser.add_argument(
        "--clock",
        default="thread_cpu",
        help="thread_cpu (CPU time of the one torch thread, the default) or wall",
    )
    parser.add_argument("--csv", default=None, help="also write the rows to this CSV file")
    return parser


def run(args) -> pd.DataFrame:
    for preset in args.presets:
        check_choice("preset", preset, PRESETS)
    for route in args.routes:
        check_choice("route", route, ROUTES)
    check_choice("clock", args.clock, CLOCKS)
    for batch in args.batches:
        check_int("batch", batch, 1)
    context = check_int("context", args.context, 1)
    max_seq_len = context + 1 if args.max_seq_len is None else args.max_seq_len
    check_int("max-seq-len", max_seq_len, context + 1)
    check_int("pairs", args.pairs, 2)
    routes = list(args.routes)
    if "compiled" in routes and compile_unavailable():
        print(f"compiled route skipped: {compile_unavailable()}", file=sys.stderr)
        routes.remove("compiled")
    import transformers

    pin_threads(1)  # thread CPU time counts one thread's work only
    print(
        f"machine: {device_name(torch.device('cpu'))}; torch {torch.__version__}, "
        f"transformers {transformers.__version__}; clock {args.clock}; context {context}, "
        f"max_seq_len {max_seq_len}; load average {os.getloadavg()[0]:.2f}"
    )
    frame = measure(
        presets=args.presets,
        batches=args.batches,
        routes=routes,
        context=context,
        max_seq_len=max_seq_len,
        pairs=args.pairs,
        clock=args.clock,
    )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.csv:
        frame.to_csv(args.csv, index=False)
    return frame


def main(argv=None) -> int:
    try:
        run(build_parser().parse_args(argv))
    except GraphlabError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
