"""`audit`: which decode batches of one engine and config get a graph, run eagerly, or crash."""

from __future__ import annotations

import json

from graphlab.cli import vllm_log
from graphlab.cli.arguments import (
    EXIT_REFUSED,
    add_config_arguments,
    capture_sizes,
    engine,
    int_in,
)
from graphlab.errors import GraphlabError
from graphlab.sizing.audit import MAX_AUDIT_BATCH_SIZES, audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import ENGINES
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
    check_limits,
)


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "audit",
        help="which decode batches get a graph, run eagerly, or crash, for one config",
        description=(
            "Which decode batches get a CUDA graph, run eagerly, or crash, for one engine and "
            "config. Prints the captured sizes, then every batch size the decode steps can produce "
            "(batch-expansion rows, V1 uniform-decode tokens or requests, per engine) with its "
            "path (graph with its padded size, eager, or crash with the exception the engine "
            "raises), then a summary. For V0 engines with speculation the draft runner "
            "(proposer) too."
        ),
        epilog=(
            f"exit status: 0 audited; 2 bad input; {EXIT_REFUSED} the engine refuses to start with "
            "this config (the reason is printed first; the JSON's startup_error holds it)."
        ),
    )
    parser.add_argument(
        "--engine",
        type=engine,
        default=None,
        help=f"one of: {', '.join(ENGINES)}; required unless --vllm-log (then: the log's version)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int_in(1, MAX_NUM_SEQS_LIMIT),
        default=None,
        help=f"S, the most sequences scheduled per step (1..{MAX_NUM_SEQS_LIMIT}); required unless "
        f"--vllm-args. An audit lists at most {MAX_AUDIT_BATCH_SIZES} batch sizes "
        f"(V0: S*(1+k))",
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT),
        default=None,
        help="k, draft tokens per step (default 0: no speculative decoding)",
    )
    add_config_arguments(parser)
    parser.add_argument(
        "--cudagraph-capture-sizes",
        type=capture_sizes,
        default=None,
        metavar="N,N,...",
        help="vLLM's compilation_config.cudagraph_capture_sizes (vLLM V1 engines only)",
    )
    parser.add_argument(
        "--max-cudagraph-capture-size",
        type=int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        metavar="N",
        help="vLLM's compilation_config.max_cudagraph_capture_size (vLLM V1 engines only)",
    )
    parser.add_argument(
        "--vllm-args",
        default=None,
        metavar='"..."',
        help="a `vllm serve` command line: its sizing options (max_num_seqs, "
        "max_num_batched_tokens, speculative_config, capture sizes) are read with the "
        "installed vLLM's own parser; not combinable with the options above",
    )
    vllm_log.add_option(parser)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a table"
    )
    parser.set_defaults(handler=run)


def _config(args) -> SizingConfig:
    flags = {
        "max_num_seqs": args.max_num_seqs,
        "num_speculative_tokens": args.num_speculative_tokens,
        "max_num_batched_tokens": args.max_num_batched_tokens,
        "cudagraph_capture_sizes": args.cudagraph_capture_sizes,
        "max_cudagraph_capture_size": args.max_cudagraph_capture_size,
        "cudagraph_mode": args.cudagraph_mode,
    }
    given = [f"--{name.replace('_', '-')}" for name, value in flags.items() if value is not None]
    if args.vllm_args is not None:
        if given:
            raise GraphlabError(f"--vllm-args already sets the config; drop {', '.join(given)}")
        from graphlab.against_vllm.serve_args import config_from_vllm_args

        cfg = config_from_vllm_args(args.vllm_args)
        try:  # the flags' own bounds, which vLLM's parser does not know
            return check_limits(cfg)
        except GraphlabError as error:
            raise GraphlabError(f"--vllm-args: {error}") from None
    if args.max_num_seqs is None:
        raise GraphlabError("--max-num-seqs is required (or give --vllm-args)")
    k = args.num_speculative_tokens or 0
    return check_limits(SizingConfig(**{**flags, "num_speculative_tokens": k}))


def run(args) -> int:
    if args.vllm_log is not None:
        return vllm_log.run_audit(args)
    if args.engine is None:
        raise GraphlabError("--engine is required (or give --vllm-log)")
    report = audit(args.engine, _config(args))
    print(json.dumps(report.to_dict()) if args.json else report.format_table())
    return EXIT_REFUSED if report.startup_error else 0
