"""`crash-map`: for which (max_num_seqs, k) an engine crashes, as one CSV row per cell."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from graphlab.cli.arguments import (
    CRASH_MAP_MAX_NUM_SEQS,
    add_config_arguments,
    add_model_runner,
    add_speculative_method,
    check_out_file,
    engine,
    int_range,
    json_text,
    writing_out,
)
from graphlab.errors import BadInput
from graphlab.sizing.crash_maps import CRASH_MAP_MAX_BATCH_SIZES, crash_map
from graphlab.sizing.engines import ENGINES
from graphlab.sizing.limits import NUM_SPECULATIVE_TOKENS_LIMIT


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "crash-map",
        help="for which (max_num_seqs, k) an engine crashes, and how much of the workload gets "
        "graphs",
        description=(
            "Sweeps max_num_seqs x num_speculative_tokens and writes one CSV row per cell: first "
            "crashing batch size and its error, crash count, graph fraction, mean padding waste, "
            "then the provenance columns. data/README.md (crash_map.csv) documents every column; "
            "--json prints the same rows as one JSON object instead."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  %(prog)s --out build/crash_map.csv\n"
            "  %(prog)s --engine vllm-0.5.5 --max-num-seqs-range 1:64 --k-range 1:4 --out -\n"
            "  %(prog)s --engine vllm-0.13.0 --cudagraph-mode full_decode_only --json\n"
            "  %(prog)s --engine vllm-0.33.0 --speculative-method eagle --k-range 1:4 --out -"
        ),
    )
    parser.add_argument(
        "--engine",
        default="all",
        type=lambda v: v if v == "all" else engine(v),
        help=f"one of: all, {', '.join(ENGINES)} (default all)",
    )
    parser.add_argument(
        "--max-num-seqs-range",
        type=int_range(1, CRASH_MAP_MAX_NUM_SEQS),
        default=range(1, 513),
        help=f"START:END, inclusive (default 1:512, at most {CRASH_MAP_MAX_NUM_SEQS}); the sweep "
        f"covers at most {CRASH_MAP_MAX_BATCH_SIZES} batch sizes, engines x sum of S x sum of "
        "(1+k), so that it ends in seconds",
    )
    parser.add_argument(
        "--k-range",
        type=int_range(0, NUM_SPECULATIVE_TOKENS_LIMIT),
        default=range(0, 9),
        help="num_speculative_tokens START:END, inclusive (default 0:8)",
    )
    add_config_arguments(parser)
    add_speculative_method(parser)
    add_model_runner(parser)
    parser.add_argument(
        "--out",
        help="CSV path, written atomically (missing folders are created), or - for standard "
        "output; rows carry provenance. Required unless --json",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object (schema, command, rows: one object per CSV row; empty cells "
        "are null) instead of writing a CSV",
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    from graphlab.bench.export import write_csv_atomic
    from graphlab.bench.provenance import computed_provenance, with_provenance

    if args.json == (args.out is not None):
        raise BadInput("crash-map needs exactly one of --out CSV (or --out -) and --json")
    to_file = args.out is not None and args.out != "-"
    if to_file:
        check_out_file(args.out)
    frame = crash_map(
        args.engine,
        args.max_num_seqs_range,
        args.k_range,
        args.max_num_batched_tokens,
        progress=args.engine == "all",
        cudagraph_mode=args.cudagraph_mode,
        model_runner=args.model_runner or "auto",
        speculative_method=args.speculative_method,
    )
    # Computed from the sizing rules, not measured: no backend, dtype or model to name.
    frame = with_provenance(frame, computed_provenance(suite="crash-map"))
    if not to_file:
        if args.json:
            rows = frame.astype(object).where(frame.notna(), None).to_dict("records")
            print(json_text("crash-map", {"rows": rows}))
        else:
            frame.to_csv(sys.stdout, index=False)
        return 0
    with writing_out(args.out):
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        write_csv_atomic(frame, args.out)
    print(f"wrote {len(frame)} rows to {args.out}")
    return 0
