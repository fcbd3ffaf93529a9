"""`repro`: speculative decoding on the tiny model, where vllm-0.5.5 ends in the V0 KeyError."""

from __future__ import annotations

import argparse

from graphlab.cli.arguments import (
    REPRO_MAX_MODEL_LEN,
    REPRO_MAX_NUM_REQUESTS,
    REPRO_MAX_NUM_SEQS_LIMIT,
    REPRO_MAX_TOKENS,
    add_cudagraph_mode,
    engine,
    int_in,
    json_text,
)
from graphlab.engine.device import DEVICES
from graphlab.errors import BadInput
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import V0_ENGINES, V1_ENGINES
from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT, NUM_SPECULATIVE_TOKENS_LIMIT


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "repro",
        help="speculative decoding on the tiny model: vllm-0.5.5 ends in the V0 KeyError",
        description=(
            "Runs speculative decoding (draft proposals, batch-expansion or MQA scoring, rejection "
            "sampling) over a seeded load with continuous batching, on graphlab's V0-shaped runner "
            "or, for the V1 engines, its V1-shaped runner (graphs keyed by token count, one verify "
            "forward of 1+k tokens per request). With vllm-0.5.5 the first step with all "
            "max_num_seqs sequences speculating sends max_num_seqs*(k+1) rows and the graph lookup "
            "raises KeyError (traceback, exit 1); the other engines finish and print a per-step "
            "table and acceptance metrics (vLLM V1's counts and V0's rates), or with --json one "
            "object: engine, capture_sizes (the configured sizes, as audit's), full_sizes and "
            "piecewise_sizes (V1: the graphs captured), each decode step's num_tokens, path, "
            "graph_size, and error (null, or the crash after the last step; exit 1)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  %(prog)s                                  # vllm-0.5.5, S 8, k 4: KeyError\n"
            "  %(prog)s --engine vllm-0.6.0 --max-num-seqs 8 --num-speculative-tokens 4\n"
            "  %(prog)s --engine vllm-0.33.0 --cudagraph-mode full_decode_only --json"
        ),
    )
    parser.add_argument(
        "--engine",
        type=engine,
        choices=V0_ENGINES + V1_ENGINES,
        default="vllm-0.5.5",
        help="the target's sizing (an engine, or a vLLM release X.Y.Z, auto), default vllm-0.5.5",
    )
    parser.add_argument(
        "--proposer-engine",
        choices=V0_ENGINES,
        default=None,
        help="the draft runner's sizing (default: the same as --engine; vllm-0.6.0 "
        "under a V1 engine)",
    )
    parser.add_argument(
        "--max-num-seqs", type=int_in(1, REPRO_MAX_NUM_SEQS_LIMIT), default=8, help="default 8"
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT),
        default=4,
        help="k, default 4",
    )
    # Checked by graphlab.specdec.engine (importing it here would load torch for every command).
    parser.add_argument(
        "--draft", default="truncated", help="truncated (default), target or random"
    )
    parser.add_argument(
        "--scorer",
        default=None,
        help="batch-expansion (default with V0 engines; what vLLM 0.5.5 and 0.6.0 "
        "ran) or mqa (first in vLLM 0.6.3, which uses it only without CUDA "
        "graphs: not part of vllm-0.5.5 or 0.6.0; the only one, and the "
        "default, with V1 engines)",
    )
    parser.add_argument(
        "--max-num-batched-tokens",
        type=int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        help="V1 engines' token budget for sizing (default: vLLM's 8192)",
    )
    add_cudagraph_mode(parser)
    parser.add_argument(
        "--num-requests",
        type=int_in(1, REPRO_MAX_NUM_REQUESTS),
        default=16,
        help=f"default 16, at most {REPRO_MAX_NUM_REQUESTS}; num-requests x "
        f"max-model-len at most {REPRO_MAX_TOKENS}, so that a run takes "
        "seconds",
    )
    parser.add_argument(
        "--max-tokens",
        type=int_in(1, REPRO_MAX_MODEL_LEN),
        default=32,
        help="longest output of the even-numbered requests (default 32); the "
        "odd-numbered ones run to --max-model-len",
    )
    parser.add_argument(
        "--max-model-len",
        type=int_in(2, REPRO_MAX_MODEL_LEN),
        default=64,
        help="KV cache positions per sequence (default 64); no proposals once "
        "seq_len + k >= max_model_len",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="0 (default) is greedy; else 0.01..2, the range vLLM's SamplingParams "
        "samples at (checked by graphlab.specdec.records.SpecDecodeConfig)",
    )
    parser.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0, help="default 0")
    parser.add_argument("--device", choices=DEVICES, default="auto", help="default auto")
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (engine, capture_sizes, decode steps) instead",
    )
    parser.set_defaults(handler=run)


def _steps_json(steps, q: int) -> list[dict]:
    """Each decode step's tokens the target scores (1 + k per speculating sequence and 1 per
    other, whatever the scorer), path and graph size."""
    return [
        {
            "num_tokens": s.num_speculating * q + s.num_seqs - s.num_speculating,
            "path": s.path,
            "graph_size": s.graph_size,
        }
        for s in steps
        if s.kind == "decode"
    ]


def _sizes_json(config) -> dict:
    """The configured capture sizes (as audit's capture_sizes) and, for V1, the graphs the runner
    captures from them: FULL uniform-decode sizes (multiples of 1 + k) and PIECEWISE sizes."""
    from graphlab.sizing.dispatch import graph_families
    from graphlab.sizing.engines import get_engine

    out = {"capture_sizes": list(get_engine(config.engine).capture_sizes(config.sizing))}
    if config.engine in V1_ENGINES:
        families = graph_families(config.engine, config.sizing)
        out |= {
            "full_sizes": list(families.full_sizes),
            "piecewise_sizes": list(families.by_family["piecewise"]),
        }
    return out


def run(args) -> int:
    import traceback

    # Torch-free: every argument is checked before the engine (and torch, 3-5 s) loads.
    from graphlab.specdec.records import SpecDecodeConfig
    from graphlab.specdec.requests import RequestLoad

    if args.num_requests * args.max_model_len > REPRO_MAX_TOKENS:
        raise BadInput(
            f"--num-requests {args.num_requests} x --max-model-len "
            f"{args.max_model_len} = {args.num_requests * args.max_model_len} "
            f"tokens; at most {REPRO_MAX_TOKENS}"
        )
    sizing = SizingConfig(
        args.max_num_seqs,
        args.num_speculative_tokens,
        args.max_num_batched_tokens,
        cudagraph_mode=args.cudagraph_mode,
    )
    config = SpecDecodeConfig(
        sizing,
        engine=args.engine,
        proposer_engine=args.proposer_engine,
        scorer=args.scorer,
        temperature=args.temperature,
        max_model_len=args.max_model_len,
        seed=args.seed,
    )
    load = RequestLoad(
        kind="mixed", num_requests=args.num_requests, max_tokens=args.max_tokens, seed=args.seed
    )
    from graphlab.specdec.engine import run_speculative

    data = {"engine": config.engine, **_sizes_json(config)}
    q = sizing.decode_query_len
    try:
        _, output = run_speculative(
            config, load, draft=args.draft, device=args.device, log=None if args.json else print
        )
    except KeyError as error:
        # A runner's own failed graph lookup (vllm-0.5.5): show it as the engine would.
        if not args.json:
            traceback.print_exc()
            return 1
        steps = _steps_json(getattr(error, "steps", []), q)
        print(json_text("repro", data | {"steps": steps, "error": f"KeyError: {error}"}))
        return 1
    if not args.json:
        print(output.format_report())
        return 0
    print(json_text("repro", data | {"steps": _steps_json(output.steps, q), "error": None}))
    return 0
