"""Speculative decoding throughput, one row per (SpecDecodeConfig, RequestLoad): spec_decode.csv.

graphlab.bench.sweeps's spec_decode sweep stamps these rows with its run's provenance.
"""

from __future__ import annotations

from graphlab.engine.device import resolve_device
from graphlab.engine.memory import graph_memory_bytes
from graphlab.sizing.dispatch import REPLAYS
from graphlab.specdec.drafts import build_draft, build_target
from graphlab.specdec.engine import SpecDecodeEngine
from graphlab.specdec.requests import load_requests


def spec_decode_benchmark(
    runs,
    *,
    preset: str = "tiny",
    draft: str = "truncated",
    dtype: str = "float32",
    device: str = "auto",
    warmup: bool = True,
) -> list[dict]:
    """Speculative decoding throughput, one row per (SpecDecodeConfig, RequestLoad) in `runs`.

    Per run: decode tokens per second, the share of scorer steps that replayed a graph, the
    largest scorer and draft batches, both runners' graph memory from their GraphRecords, and
    the acceptance figures (graphlab.specdec.rejection.SpecDecodeMetrics: vLLM V1's counts, V0's
    rates). Runs with the same config seed share one target and draft (kind `draft`); runs
    with the same load and (max_num_seqs, k) decode the same requests. Capture is not timed;
    with `warmup` the first max_num_seqs requests run once before the timed run (first-call
    kernel setup stays out of the numbers).
    """
    dev = resolve_device(device)
    models, rows = {}, []
    for config, load in runs:
        if config.seed not in models:
            target = build_target(preset, seed=config.seed, dtype=dtype, device=dev)
            models[config.seed] = target, build_draft(target, draft, seed=config.seed + 1)
        target, drafter = models[config.seed]
        k, seqs = config.sizing.num_speculative_tokens, config.sizing.max_num_seqs
        requests = load_requests(
            load, config.sizing, config.max_model_len, target.config.vocab_size
        )
        engine = SpecDecodeEngine(target, drafter if k else None, config)
        records = engine.capture_model()
        if warmup:
            engine.generate(requests[:seqs])
        result = engine.generate(requests)
        frame = result.steps_frame()
        decode = frame[frame.kind == "decode"]
        memory, kind = graph_memory_bytes(records["target"], config.graph_pool)
        draft_memory, _ = graph_memory_bytes(records.get("draft", []), config.graph_pool)
        tokens, seconds = int(decode.num_generation_tokens.sum()), float(decode.step_ms.sum()) / 1e3
        rows.append(
            dict(
                preset=preset,
                dtype=dtype,
                backend=engine.runner.backend.name,
                engine=config.engine,
                proposer_engine=config.proposer_engine,
                scorer=config.scorer,
                max_num_seqs=seqs,
                num_speculative_tokens=k,
                draft=draft,
                temperature=config.temperature,
                load=load.kind,
                num_requests=len(requests),
                decode_tokens=tokens,
                decode_s=seconds,
                tokens_per_s=tokens / seconds,
                clock=decode.clock.iloc[0],
                decode_wall_s=float(decode.step_wall_ms.sum()) / 1e3,
                scorer_graph_fraction=float(decode.path.isin(REPLAYS).mean()),
                max_scorer_batch_size=int(decode.batch_size.max()),
                max_draft_batch_size=int(decode.draft_batch_size.max()),
                num_target_graphs=len(records["target"]),
                target_graph_memory_bytes=memory,
                draft_graph_memory_bytes=draft_memory,
                memory_kind=kind,
                **{
                    name: value
                    for name, value in result.metrics.as_dict().items()
                    if name != "num_speculative_tokens"
                },
            )
        )
    return rows
