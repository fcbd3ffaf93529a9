"""`plan`: the capture sizes a vLLM V1 deployment should set, and the flag that sets them."""

from __future__ import annotations

import argparse
import json

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
from graphlab.cli.deployment import deployed
from graphlab.cli.plan_split import split_lines
from graphlab.cli.serve_line import (
    add_vllm_args,
    config_options,
    read_serve_line,
)
from graphlab.errors import GraphlabError
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import (
    DEFAULT_GRAPH_CEILING,
    GRAPH_POOLS,
    V1_ENGINES,
    SizingPolicy,
)
from graphlab.sizing.limits import (
    MAX_NUM_BATCHED_TOKENS_LIMIT,
    MAX_NUM_SEQS_LIMIT,
    NUM_SPECULATIVE_TOKENS_LIMIT,
)
from graphlab.sizing.planner.compare import at_default_footing
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
    NO_GRAPHS,
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


def _above_full(result, full, raw, mixed) -> str:
    """The default's steps above its largest FULL graph and what serves them (PIECEWISE sizes
    the plan lacks, or none); '' when the workload has none there."""
    reach = [int(n) for n in result.workload.sizes if full[-1] < n <= raw[-1]]
    if not reach:
        return ""
    steps = f"{reach[0]}..{reach[-1]}" if len(reach) > 1 else f"{reach[0]}"
    if mixed != "piecewise":
        return f"; the default's steps of {steps} tokens, above its largest FULL graph, run eagerly"
    count = sum(size > full[-1] for size in raw)
    return (
        f"; the default's steps of {steps} tokens, above its largest FULL graph, replay its "
        f"{count} PIECEWISE size{'s' * (count != 1)} above it"
    )


def _same_footing_lines(result, d) -> list[str]:
    """Plan vs default at the default's FULL graph count and largest FULL size (and what serves
    the default's steps above its largest FULL graph), then what the flag does to the PIECEWISE
    graphs and any planned size above vLLM's default ceiling."""
    full, raw = d["default_full_sizes"], d["default_capture_sizes"]
    mixed = result.default_families.mixed_family
    lines = []
    if full:
        piecewise = _above_full(result, full, raw, mixed)
        same = at_default_footing(result).plan
        lines += [
            f"same FULL graph count and coverage ({len(full)} graphs, steps up to {raw[-1]} "
            f"tokens{piecewise}): plan mean padding waste {same.mean_padding_waste:.3f} tokens, "
            f"default {result.default.mean_padding_waste:.3f}; graph fraction "
            f"{same.graph_fraction:.3f} vs {result.default.graph_fraction:.3f}",
            f"  plan sizes: {', '.join(map(str, same.capture_sizes))}",
            f"  default FULL sizes (capture sizes rounded up to multiples of 1+k): "
            f"{', '.join(map(str, full))}",
        ]
    if raw and mixed != "piecewise":
        lines.append(
            f"prefill and mixed batches: no PIECEWISE graphs under cudagraph_mode "
            f"{d['cudagraph_mode']}"
            + (", they run eagerly" if mixed is None else f", {mixed.upper()} graphs")
        )
    elif raw:
        lines.append(
            f"PIECEWISE graphs (prefill and mixed batches): the flag replaces the "
            f"default's {len(raw)} sizes up to {raw[-1]} tokens with the plan's "
            f"{d['num_graphs']} up to {d['capture_sizes'][-1]}; such a batch pads to the "
            "next planned size, and above the largest it runs eagerly"
        )
    if d["above_ceiling"]:
        lines.append(
            f"above vLLM's default ceiling of {DEFAULT_GRAPH_CEILING} tokens: "
            f"{', '.join(map(str, d['above_ceiling']))}; PR 50488's default sizes "
            "above it (2176, 6400 tokens) ran H200 CI out of memory and PR 54418 clamped "
            f"the default to {DEFAULT_GRAPH_CEILING} (PR 49390's 1024 on data-center Blackwell): "
            "check graph memory before capturing them"
        )
    return lines


def _format(result) -> str:
    d = result.to_dict()

    def mib(v):
        return "n/a" if v is None else f"{v:.3f} MiB ({d['memory_kind']})"

    def ms(v):
        return "" if v is None else f", mean step {v:.4f} ms ({d['latency_backend']})"

    budget_mib = "no" if d["memory_budget_mib"] is None else d["memory_budget_mib"]
    lines = [f"WARNING: {warning}" for warning in d["warnings"]]
    lines += [
        f"engine {d['engine']}: max_num_seqs={d['max_num_seqs']} num_speculative_tokens="
        f"{d['num_speculative_tokens']} max_num_batched_tokens={d['max_num_batched_tokens']}; "
        f"workload {d['workload']}; cost {d['cost']}; budget: {d['max_graphs']} graphs, "
        f"{budget_mib} MiB ({d['graph_pool']} pool)"
    ]
    decode = result.split is not None and result.split.decode  # 0.34.0's decode graphs
    lines += split_lines(result, d) if decode else _same_footing_lines(result, d)
    for label, p in (("plan   ", ""), ("default", "default_")):  # at the budget asked for
        lines.append(
            f"{label}: {d[p + 'num_graphs']} graphs, mean padding waste "
            f"{d[p + 'mean_padding_waste']:.3f} tokens, graph fraction "
            f"{d[p + 'graph_fraction']:.3f}, memory {mib(d[p + 'memory_mib'])}"
            f"{ms(d[p + 'mean_step_ms'])}"
        )
        lines += [] if decode else [f"  sizes: {', '.join(map(str, d[p + 'capture_sizes']))}"]
    if d["eager_batch_sizes"]:
        lines.append(
            f"eager: {len(d['eager_batch_sizes'])} batch sizes from "
            f"{d['eager_batch_sizes'][0]} tokens ({d['eager_reason']})"
        )
    lines += [f"note: {note}" for note in d["notes"]]
    return "\n".join(lines + [f"vllm: {d['vllm_flag']}"])


def _config(args, policy: SizingPolicy, version: str):
    """(config, the ServeLine of --vllm-args or None)."""
    line = read_serve_line(args.vllm_args, args.device_tier, config_options(args), policy, version)
    if line is not None:
        return line.config, line
    if args.max_num_seqs is None:
        raise GraphlabError("--max-num-seqs is required (or give --vllm-args)")
    cfg = SizingConfig(
        max_num_seqs=args.max_num_seqs,
        num_speculative_tokens=args.num_speculative_tokens or 0,
        max_num_batched_tokens=args.max_num_batched_tokens,
        cudagraph_mode=args.cudagraph_mode,
    )
    return cfg, None


def _line_lines(line, result) -> list[str]:
    """How the planned flag meets the user's own line."""
    lines = [f"note: {note}" for note in line.notes]
    if line.replaced_flags:
        lines.append(
            f"the flag replaces the line's {', '.join(line.replaced_flags)}; the whole line:"
        )
    else:
        lines.append("append the flag to the line; the whole line:")
    return [*lines, f"  {line.with_flag(['--compilation-config', json.dumps(result.compilation)])}"]


def _request(args, policy: SizingPolicy, cfg: SizingConfig, line) -> PlanRequest:
    """The planner's request: the workload, budget and tables the flags name, and the line's
    compilation config (None without --vllm-args)."""
    if args.memory_mib is not None and args.graph_memory is None:
        raise GraphlabError("--memory-mib needs --graph-memory CSV (bytes per graph size)")
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
    return PlanRequest(
        policy,
        cfg,
        workload,
        Budget(args.max_graphs, args.memory_mib, args.graph_pool),
        memory=read_graph_memory(args.graph_memory, **pick) if args.graph_memory else None,
        latency=read_latency(args.latency, **pick) if args.latency else None,
        max_capture_size=args.max_capture_size,
        compilation_config=line.compilation_config if line is not None else None,
        eager_penalty=args.eager_penalty,
    )


def _json(result, line, engine_name: str | None) -> dict:
    """The plan's JSON object, with the whole --vllm-args line and what the flag replaces; under
    cudagraph_mode NONE (result None) no flag, and why."""
    if result is None:
        notes = list(line.notes) if line is not None else []
        return {"engine": engine_name, "vllm_flag": None, "reason": NO_GRAPHS, "notes": notes}
    if line is None:
        return result.to_dict()
    return result.to_dict() | {
        "vllm_command": line.with_flag(["--compilation-config", json.dumps(result.compilation)]),
        "replaced_flags": list(line.replaced_flags),
        "notes": [*line.notes, *result.notes],
    }


def _text(result, line) -> str:
    """The plan, then how its flag meets the --vllm-args line; under cudagraph_mode NONE (result
    None) the line's notes and why there is no flag."""
    if result is None:
        notes = line.notes if line is not None else ()
        return "\n".join([*(f"note: {note}" for note in notes), NO_GRAPHS])
    text = _format(result)
    return text if line is None else "\n".join([text, *_line_lines(line, result)])


def run(args) -> int:
    if args.vllm_log is not None:
        from graphlab.cli import log_plan

        return log_plan.run(args)
    chosen = args.engine or DEFAULT
    policy, version = chosen.policy, chosen.release
    cfg, line = _config(args, policy, version)
    deployment = deployed(args, policy, version, cfg, line)
    notes, cfg = deployment.said, deployment.config
    no_graphs = policy.cudagraph_mode(cfg) == "NONE"  # vLLM captures none: no size to plan
    result = None if no_graphs else plan_for(_request(args, policy, cfg, line))
    if args.json:
        data = _json(result, line, args.engine)
        print(json_text("plan", data | {"notes": [*notes, *data.get("notes", ())]}))
    else:
        print("\n".join([*(f"note: {note}" for note in notes), _text(result, line)]))
    return 0
