"""`plan`: the capture sizes a vLLM V1 deployment should set, and the flag that sets them."""

from __future__ import annotations

import argparse

from graphlab.against_vllm.serve_args import ServeLine
from graphlab.checkout import reference_file
from graphlab.cli import log_option
from graphlab.cli.arguments import (
    DEFAULT,
    add_attention_backend,
    add_config_arguments,
    add_model_runner,
    engine,
    int_in,
    json_text,
    nonnegative_float,
    positive_float,
)
from graphlab.cli.plan_output import plan_json, plan_text
from graphlab.cli.serve_line import add_vllm_args, deployed_config
from graphlab.errors import BadInput
from graphlab.sizing.engines import (
    GRAPH_POOLS,
    V1_ENGINES,
)
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
)
from graphlab.sizing.planner.inputs import (
    read_batch_sizes,
    read_graph_memory,
    read_latency,
    read_spec_decode_steps,
)
from graphlab.sizing.planner.optimum import Budget
from graphlab.sizing.planner.plan import (
    MAX_CANDIDATES,
    MAX_PROGRAMME_CELLS,
    PlanRequest,
    plan_for,
)
from graphlab.sizing.versions import DEFAULT_ENGINE


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "plan",
        help="the capture sizes a vLLM V1 deployment should set, and the flag that sets them",
        description=(
            "Chooses cudagraph_capture_sizes for uniform decode steps of B*(1+k) tokens "
            "(B = 1..max_num_seqs, at most max_num_batched_tokens) under a budget of graphs and/or "
            "graph memory, minimising the mean padding waste (or, with --latency, the mean step "
            "latency) exactly, and compares it with the engine's default sizing at the same "
            "config. Without a budget the plan may capture as many graphs as the default. Limits, "
            f"so that a plan takes seconds: at most {MAX_CANDIDATES} candidate sizes (multiples "
            f"of 1+k the workload uses) and graphs x candidates^2 <= {MAX_PROGRAMME_CELLS}. "
            "With --vllm-args the config is your `vllm serve` line's, and the printed flag is its "
            "whole compilation config with the planned capture sizes. With --vllm-log the "
            "workload is the logged steps, planned per graph family as vLLM dispatches them "
            "(uniform decode steps on FULL graphs at the sizes rounded up to 1+k, the rest on "
            "PIECEWISE sizes) and replayed on the current sizes and the plan; a plan worse than "
            "the current sizes on that traffic is never the headline."
        ),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  %(prog)s --max-num-seqs 64 --num-speculative-tokens 3\n"
            "  %(prog)s --max-num-seqs 256 --max-graphs 8 --batch-sizes observed.csv --json\n"
            "  %(prog)s --engine vllm-0.33.0 --vllm-args \\\n"
            '      "vllm serve Qwen/Qwen3-8B --max-num-seqs 128 -cc \'{\\"cudagraph_mode\\": '
            '\\"FULL_DECODE_ONLY\\"}\'"'
        ),
    )
    parser.add_argument(
        "--engine",
        default=None,
        type=engine,
        choices=V1_ENGINES,
        help=f"a vLLM V1 engine or release (X.Y.Z, auto), default {DEFAULT_ENGINE} (with "
        "--vllm-log: the log's version)",
    )
    parser.add_argument(
        "--max-num-seqs",
        type=int_in(1, MAX_NUM_SEQS_LIMIT),
        default=None,
        help=f"S (1..{MAX_NUM_SEQS_LIMIT}); required unless --vllm-args or --vllm-log gives it",
    )
    parser.add_argument(
        "--num-speculative-tokens",
        type=int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT),
        default=None,
        help="k (default 0)",
    )
    add_config_arguments(parser)
    add_model_runner(parser)
    add_attention_backend(parser)
    add_vllm_args(parser)
    workload = parser.add_mutually_exclusive_group()
    workload.add_argument(
        "--batch-sizes",
        metavar="CSV",
        type=reference_file,
        help="observed tokens per decode step: a batch_size column (one step "
        "per row) and optionally count (default workload: every reachable "
        "step once)",
    )
    workload.add_argument("--vllm-log", metavar="FILE", help=log_option.HELP)
    workload.add_argument(
        "--steps",
        metavar="CSV",
        type=reference_file,
        help="a spec_decode_steps.csv; its decode steps as num_seqs + num_speculating*k tokens",
    )
    parser.add_argument(
        "--max-graphs",
        type=int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        help="at most this many graphs",
    )
    parser.add_argument(
        "--memory-mib",
        type=positive_float,
        default=None,
        help="graph memory budget in MiB (needs --graph-memory)",
    )
    parser.add_argument(
        "--max-capture-size",
        type=int_in(1, MAX_NUM_BATCHED_TOKENS_LIMIT),
        default=None,
        help="no graph above this many tokens (e.g. the default's largest, to "
        "compare at equal coverage)",
    )
    parser.add_argument(
        "--eager-penalty",
        type=nonnegative_float,
        default=None,
        metavar="TOKENS",
        help="charge each step without a graph this many padding tokens, trading coverage against "
        "padding (default: every step up to the largest graph the budget allows has one; with "
        "--vllm-log: no more steps without a graph than the current sizes leave)",
    )
    parser.add_argument(
        "--graph-memory",
        metavar="CSV",
        type=reference_file,
        help="a graph_memory.csv: bytes per graph size",
    )
    parser.add_argument(
        "--graph-pool",
        choices=GRAPH_POOLS,
        default="shared",
        help="shared (vLLM's; the largest graph dominates) or separate (the sum)",
    )
    parser.add_argument(
        "--latency",
        metavar="CSV",
        type=reference_file,
        help="a latency.csv: minimise mean step latency instead of padding waste",
    )
    rows = parser.add_argument_group(
        "bench rows",
        "which run of a --latency/--graph-memory/"
        "--steps CSV holding several to read (runs are never mixed)",
    )
    rows.add_argument("--model", help="the model column's value (e.g. 1b)")
    rows.add_argument("--dtype", help="the dtype column's value (e.g. float16)")
    rows.add_argument(
        "--bench-engine", metavar="ENGINE", help="the engine that measured the latency/memory rows"
    )
    rows.add_argument(
        "--bench-k",
        type=int_in(0, NUM_SPECULATIVE_TOKENS_LIMIT),
        metavar="K",
        help="the num_speculative_tokens of the latency/memory rows",
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of text")
    parser.set_defaults(handler=run)


def _request(args) -> tuple[PlanRequest | None, ServeLine | None, tuple[str, ...]]:
    """What the flags ask, resolved once: the planner's request (the engine's policy, the config
    as vLLM deploys it, the workload, budget and tables the flags name, the line's compilation
    config; None under cudagraph_mode NONE, where vLLM captures no graph to plan), the ServeLine of
    --vllm-args (None without it) and the deployment's notes."""
    chosen = args.engine or DEFAULT
    policy, version = chosen.policy, chosen.release
    deployment, line = deployed_config(args, policy, version)
    cfg = deployment.config
    if policy.cudagraph_mode(cfg) == "NONE":
        return None, line, deployment.said
    if args.memory_mib is not None and args.graph_memory is None:
        raise BadInput("--memory-mib needs --graph-memory CSV (bytes per graph size)")
    pick = dict(
        model=args.model,
        dtype=args.dtype,
        engine=args.bench_engine,
        num_speculative_tokens=args.bench_k,
    )
    workload = (
        read_batch_sizes(args.batch_sizes)
        if args.batch_sizes
        else read_spec_decode_steps(args.steps, cfg, args.model, args.dtype)
        if args.steps
        else None
    )
    request = PlanRequest(
        policy,
        cfg,
        workload,
        Budget(args.max_graphs, args.memory_mib, args.graph_pool),
        memory=read_graph_memory(args.graph_memory, **pick) if args.graph_memory else None,
        latency=read_latency(args.latency, **pick) if args.latency else None,
        max_capture_size=args.max_capture_size,
        compilation_config=line.compilation_config if line is not None else None,
        eager_penalty=args.eager_penalty,
        same_footing=not args.json,  # the text sets the plan beside the default on its terms
    )
    return request, line, deployment.said


def run(args) -> int:
    if args.vllm_log is None:
        request, line, notes = _request(args)
        result = None if request is None else plan_for(request)
        if not args.json:
            print("\n".join([*(f"note: {note}" for note in notes), plan_text(result, line)]))
        else:
            data = plan_json(result, line, args.engine)
            print(json_text("plan", data | {"notes": [*notes, *data.get("notes", ())]}))
        return 0
    return log_option.run_plan(args)
