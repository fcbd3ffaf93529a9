"""`plan`'s output: its JSON object, and its text: the plan beside the engine's default at the same
footing, vLLM 0.34.0's decode graphs in requests per query length
(`VllmConfig._split_cudagraph_capture_sizes`), and how the flag meets a --vllm-args line; with
--vllm-log, the logged steps replayed on the current sizes and on the plan."""

from __future__ import annotations

import json

from graphlab.sizing.engines import DEFAULT_GRAPH_CEILING
from graphlab.sizing.planner.plan import NO_GRAPHS


def _whole_line(line, result) -> str:
    """The --vllm-args line with the planned flag in place of what it replaces."""
    return line.with_flag(["--compilation-config", json.dumps(result.compilation)])


def _requests(tokens, q: int) -> str:
    return ", ".join(str(n // q) for n in tokens)


def _split_lines(result, d: dict) -> list[str]:
    """The plan's and the default's decode graphs in requests at q = 1 + k (their tokens beside)
    and what becomes of the prefill graphs."""
    cfg, split = result.config, result.split
    q, default_decode = cfg.decode_query_len, result.default_full_sizes
    prefill = d["default_capture_sizes"]
    legacy = cfg.cudagraph_capture_sizes is not None or cfg.max_cudagraph_capture_size is not None
    lines = [
        f"decode graphs (uniform decode steps of q = 1+k = {q} tokens per request; vLLM 0.34.0 "
        "sizes them in requests, decode_cudagraph_capture_request_sizes):",
        f"  plan   : {len(d['capture_sizes'])} graphs of {_requests(d['capture_sizes'], q)} "
        f"requests ({', '.join(map(str, d['capture_sizes']))} tokens)",
        f"  default: {len(default_decode)} graphs of {_requests(default_decode, q)} requests "
        f"({', '.join(map(str, default_decode))} tokens)",
    ]
    kept = split.compilation.get("prefill_cudagraph_capture_token_sizes")
    if prefill and not legacy:
        lines.append(
            f"prefill graphs (every other batch, by token count): the flag leaves the "
            f"{len(prefill)} up to {prefill[-1]} tokens as they are"
        )
    elif kept:
        lines.append(
            f"prefill graphs: the deprecated capture settings set them; the flag keeps "
            f"their {len(kept)} sizes up to {kept[-1]} tokens as prefill_cudagraph_capture_token_"
            "sizes (vLLM refuses the deprecated settings beside the new ones)"
        )
    return lines


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
        same = result.same_footing
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
    lines += _split_lines(result, d) if decode else _same_footing_lines(result, d)
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


def _line_lines(line, result) -> list[str]:
    """How the planned flag meets the user's own line."""
    lines = [f"note: {note}" for note in line.notes]
    if line.replaced_flags:
        lines.append(
            f"the flag replaces the line's {', '.join(line.replaced_flags)}; the whole line:"
        )
    else:
        lines.append("append the flag to the line; the whole line:")
    return [*lines, f"  {_whole_line(line, result)}"]


def plan_text(result, line) -> str:
    """The plan, then how its flag meets the --vllm-args line; under cudagraph_mode NONE (result
    None) the line's notes and why there is no flag."""
    if result is None:
        notes = line.notes if line is not None else ()
        return "\n".join([*(f"note: {note}" for note in notes), NO_GRAPHS])
    below = [] if line is None else _line_lines(line, result)
    return "\n".join([_format(result), *below])


def plan_json(result, line, engine_name: str | None) -> dict:
    """The plan's JSON object, with the whole --vllm-args line and what the flag replaces; under
    cudagraph_mode NONE (result None) no flag, and why."""
    if result is None:
        notes = list(line.notes) if line is not None else []
        return {"engine": engine_name, "vllm_flag": None, "reason": NO_GRAPHS, "notes": notes}
    if line is None:
        return result.to_dict()
    return result.to_dict() | {
        "vllm_command": _whole_line(line, result),
        "replaced_flags": list(line.replaced_flags),
        "notes": [*line.notes, *result.notes],
    }


# --- plan --vllm-log ------------------------------------------------------------------------------

LOG_LABELS = {
    "current": "current",
    "plan": "plan, at most {graphs} sizes",
    "same_count": "plan, at most the current graphs",
}


def _log_cell(family: dict) -> str:
    return f"{family['padding_tokens']:>7} / {family['steps_without_graph']:<6}"


def log_plan_text(d: dict) -> str:
    """`plan --vllm-log`'s text: the logged steps replayed on the current sizes and the plan."""
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
        label = LOG_LABELS[kind].format(graphs=d["max_graphs"])
        lines.append(
            f"  {label:<36} {r['num_sizes']:>5} {r['num_graphs']:>6}  "
            f"{_log_cell(r['families']['uniform'])}  {_log_cell(r['families']['mixed'])}  "
            f"{_log_cell(total)}"
        )
    for kind in kinds:
        lines.append(
            f"  {LOG_LABELS[kind].format(graphs=d['max_graphs']) + ':':<36} "
            f"{', '.join(map(str, d[kind]['capture_sizes']))}"
        )
    lines.append(_log_headline(d))
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


def _log_headline(d: dict) -> str:
    current, kind = d["current"], d["headline_kind"]
    plan = d["plan"]
    if kind == "current":
        return (
            "headline: keep the current sizes: no plan pads less on this traffic without leaving "
            "more steps without a graph"
        )
    head = d[kind]
    text = (
        f"headline: {LOG_LABELS[kind].format(graphs=d['max_graphs'])} ({head['num_sizes']} sizes, "
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
