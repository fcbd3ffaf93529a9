"""`audit`: which decode batches of one engine and config get a graph, run eagerly, or crash."""

from __future__ import annotations

import argparse

from graphlab.cli import log_option
from graphlab.cli.arguments import (
    EXIT_REFUSED,
    add_attention_backend,
    add_capture_sizes,
    add_config_arguments,
    add_model_runner,
    add_speculative_method,
    engine,
    int_in,
    json_text,
)
from graphlab.cli.serve_line import add_vllm_args, deployed_config
from graphlab.errors import BadInput
from graphlab.sizing.attention import attention_range
from graphlab.sizing.audit import MAX_AUDIT_BATCH_SIZES, audit
from graphlab.sizing.engines import ENGINES
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
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
            "raises), then a summary. With speculation, the draft side too: V0's draft runner "
            "(proposer), and for vLLM 0.12.0 to 0.34.0 the drafter's graphs per kind of draft step "
            "(EAGLE, EAGLE-3, MTP, draft_model; --speculative-method)."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            f"exit status: 0 audited; 2 bad input; {EXIT_REFUSED} the engine refuses to start with "
            "this config\n(the reason is printed first; the JSON's startup_error holds it).\n\n"
            "examples:\n"
            "  %(prog)s --engine vllm-0.5.5 --max-num-seqs 8 --num-speculative-tokens 4\n"
            "  %(prog)s --engine vllm-0.33.0 --max-num-seqs 64 --cudagraph-capture-sizes 1 2 4 8 "
            "--json\n"
            "  %(prog)s --engine vllm-0.33.0 --max-num-seqs 8 --num-speculative-tokens 3 "
            "--speculative-method eagle\n"
            "  %(prog)s --engine vllm-0.33.0 --device-tier small --vllm-args \\\n"
            '      "vllm serve meta-llama/Llama-3.1-8B -O1 --speculative-config '
            '\'{\\"method\\": \\"ngram\\", \\"num_speculative_tokens\\": 3}\'"'
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
    add_capture_sizes(parser)
    parser.add_argument(
        "--max-cudagraph-capture-size",
        type=int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        metavar="N",
        help="vLLM's compilation_config.max_cudagraph_capture_size (vLLM V1 engines only)",
    )
    add_speculative_method(parser)
    add_model_runner(parser)
    add_attention_backend(parser)
    add_vllm_args(parser)
    log_option.add_option(parser)
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a table"
    )
    parser.set_defaults(handler=run)


def run(args) -> int:
    if args.vllm_log is not None:
        return log_option.run_audit(args)
    if args.engine is None:
        raise BadInput("--engine is required (or give --vllm-log)")
    policy, version = args.engine.policy, args.engine.release
    deployment, line = deployed_config(args, policy, version)
    cfg, runner, attention = deployment.config, deployment.model_runner, deployment.attention
    notes = (line.notes if line is not None else ()) + deployment.notes
    report = audit(policy, cfg)
    if args.json:
        data = report.to_dict()
        if cfg.performance_mode is not None:
            data["performance_mode"] = cfg.performance_mode
        if runner is not None:
            data |= {"model_runner": cfg.model_runner, "model_runner_reason": runner}
            # null where the release has no AttentionCGSupport (before 0.10.1): nothing to report
            support = cfg.attention_cg_support if attention_range(version) else None
            data |= {"attention_cg_support": support, "attention": attention}
        print(json_text("audit", data | {"notes": list(notes)}))
    else:
        print("\n".join([*(f"note: {note}" for note in notes), report.format_table()]))
        if runner is not None:
            print(f"model runner {cfg.model_runner.upper()}: {runner}")
            print(attention)
    return EXIT_REFUSED if report.startup_error else 0
