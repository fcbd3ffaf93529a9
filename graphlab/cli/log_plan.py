"""`plan --vllm-log FILE`: capture sizes for the logged traffic, per graph family, with the logged
steps replayed through the kit's dispatch on the current sizes and on the plan
(graphlab.sizing.planner.log_plan); what the log lacks comes from --vllm-args or the flags."""

from __future__ import annotations

from graphlab.cli.arguments import json_text
from graphlab.cli.serve_line import read_logged
from graphlab.errors import BadInput
from graphlab.sizing.log_audit import logged_deployment
from graphlab.sizing.planner.log_plan import log_plan_report

# Options of the workload planner that price steps or memory, which the log planner does not read.
UNREAD = ("latency", "graph_memory", "memory_mib", "max_capture_size")
LABELS = {
    "current": "current",
    "plan": "plan, at most {graphs} sizes",
    "same_count": "plan, at most the current graphs",
}


def _config(args):
    """(log, policy, SizingConfig, notes, the user's compilation_config or None) of the log,
    filled by --vllm-args or the flags."""
    log, given, line = read_logged(args)
    engine = None if args.engine is None else args.engine.policy  # resolved by --engine
    policy, cfg, notes = logged_deployment(log, given, engine)
    user = None if line is None else line.compilation_config or None
    return log, policy, cfg, notes, user


def run(args) -> int:
    given = [f"--{name.replace('_', '-')}" for name in UNREAD if getattr(args, name) is not None]
    if given:
        raise BadInput(
            f"--vllm-log plans padding tokens on the logged steps; it does not read {given[0]} "
            "(plan the steps with --batch-sizes to price latency or memory)"
        )
    log, policy, cfg, notes, user = _config(args)
    _, data = log_plan_report(log, policy, cfg, notes, user, args.max_graphs, args.eager_penalty)
    print(json_text("plan", data) if args.json else _format(data))
    return 0


def _cell(family: dict) -> str:
    return f"{family['padding_tokens']:>7} / {family['steps_without_graph']:<6}"


def _format(d: dict) -> str:
    mode = d["cudagraph_mode"]
    lines = [f"note: {note}" for note in d["notes"]]
    lines.append(
        f"vLLM log {d['source']}: {d['steps']} steps; planned with {d['engine']} at "
        f"max_num_seqs={d['max_num_seqs']} num_speculative_tokens={d['num_speculative_tokens']} "
        f"max_num_batched_tokens={d['max_num_batched_tokens']} cudagraph_mode={mode}; "
        "uniform decode steps are those vLLM ran on FULL graphs, every other step is mixed"
    )
    lines.append(
        "the logged steps replayed through the kit's dispatch: padding tokens / steps without a "
        "graph"
    )
    lines.append(
        f"  {'sizing':<36} {'sizes':>5} {'graphs':>6}  {'uniform decode':<16} {'mixed':<16} "
        f"{'total':<16}"
    )
    kinds = ["current", "plan"]
    if d["same_count"]["capture_sizes"] != d["plan"]["capture_sizes"]:
        kinds.append("same_count")
    for kind in kinds:
        r = d[kind]
        total = {
            "padding_tokens": r["padding_tokens"],
            "steps_without_graph": r["steps_without_graph"],
        }
        label = LABELS[kind].format(graphs=d["max_graphs"])
        lines.append(
            f"  {label:<36} {r['num_sizes']:>5} {r['num_graphs']:>6}  "
            f"{_cell(r['families']['uniform'])}  {_cell(r['families']['mixed'])}  {_cell(total)}"
        )
    for kind in kinds:
        lines.append(
            f"  {LABELS[kind].format(graphs=d['max_graphs']) + ':':<36} "
            f"{', '.join(map(str, d[kind]['capture_sizes']))}"
        )
    lines.append(_headline(d))
    served = d["headline"]["served"]
    lines.append(
        "what each graph serves (steps): "
        + ", ".join(f"{s['path'].upper()} {s['graph_size']}: {s['steps']}" for s in served)
    )
    if mode == "FULL_DECODE_ONLY":
        lines.append("mixed steps run eagerly under FULL_DECODE_ONLY whatever the sizes")
    if d["vllm_flag"] is not None:
        lines.append(f"vllm: {d['vllm_flag']}")
    return "\n".join(lines)


def _headline(d: dict) -> str:
    current, kind = d["current"], d["headline_kind"]
    plan = d["plan"]
    if kind == "current":
        return (
            "headline: keep the current sizes: no plan pads less on this traffic without leaving "
            "more steps without a graph"
        )
    head = d[kind]
    text = (
        f"headline: {LABELS[kind].format(graphs=d['max_graphs'])} ({head['num_sizes']} sizes, "
        f"{head['num_graphs']} graphs): {head['padding_tokens']} padding tokens against the "
        f"current sizes' {current['padding_tokens']}, {head['steps_without_graph']} steps without "
        f"a graph against {current['steps_without_graph']}"
    )
    if kind == "same_count":
        text += (
            f"; within {d['max_graphs']} sizes the best pads {plan['padding_tokens']} with "
            f"{plan['steps_without_graph']} steps without a graph, worse than the current sizes"
        )
    return text
