"""What a speculative-decoding run is configured with, and what it returns
(graphlab.specdec.engine)."""

from __future__ import annotations

import dataclasses
import numbers
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd

from graphlab.engine.device import BACKENDS
from graphlab.errors import BadInput, check_choice, check_int
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath
from graphlab.sizing.engines import GRAPH_POOLS, V0_ENGINES, V1_ENGINES

if TYPE_CHECKING:  # a field's type only: SpecDecodeConfig stays checkable before torch loads
    from graphlab.specdec.rejection import SpecDecodeMetrics

# Each scorer and where it comes from: vLLM 0.5.5 and 0.6.0 score by batch expansion only.
SCORERS = {
    "batch-expansion": "vLLM V0's BatchExpansionTop1Scorer (vllm/spec_decode/batch_expansion.py)",
    "mqa": "vLLM 0.6.3's MQAScorer (vllm/spec_decode/mqa_scorer.py), not in vllm-0.5.5 or "
    "0.6.0; 0.6.3 uses it only with enforce_eager, i.e. without CUDA graphs. With a V1 "
    "engine: vLLM V1's one forward of 1 + k tokens per request, on token-count graphs",
}

# vLLM's SamplingParams refuses temperatures outside 0..2 and raises those in (0, 0.01) to 0.01,
# against nan/inf in the probabilities (vllm/sampling_params.py, _MAX_TEMP, vllm 0.32).
MIN_TEMPERATURE, MAX_TEMPERATURE = 1e-2, 2.0
MAX_SEED = 2**32 - 1  # numpy's legacy seeding and repro's --seed take at most 32 bits


@dataclass(frozen=True)
class SpecDecodeConfig:
    """A speculative-decoding run: the target's sizing and how the run goes.

        SpecDecodeConfig(SizingConfig(max_num_seqs=8, num_speculative_tokens=4),
                         engine="vllm-0.5.5")

    sizing: max_num_seqs and k for every engine; max_num_batched_tokens and the capture settings
    for the V1 engines only (steps are not split to fit max_num_batched_tokens).
    """

    sizing: SizingConfig
    engine: str = "vllm-0.6.0"  # the target's (scorer's) sizing; V0 or V1
    proposer_engine: str | None = None  # the draft's V0 runner; None: engine, or 0.6.0 under V1
    scorer: str | None = None  # None: batch-expansion under V0, mqa under V1
    temperature: float = 0.0  # 0: greedy, else MIN_TEMPERATURE..MAX_TEMPERATURE
    max_model_len: int = 128  # KV cache length per sequence
    seed: int = 0
    backend: str = "auto"
    graph_pool: str = "shared"

    def __post_init__(self):
        if not isinstance(self.sizing, SizingConfig):
            raise BadInput(f"sizing must be a graphlab.SizingConfig, got {self.sizing!r}")
        check_choice("engine", self.engine, V0_ENGINES + V1_ENGINES)
        v1 = self.engine in V1_ENGINES
        # Defaults that follow the engine: the draft stays on the V0-shaped runner, under V1 with
        # 0.6.0's guard (never a crash); V1 scores all 1 + k tokens of a request in one forward.
        if self.proposer_engine is None:
            object.__setattr__(self, "proposer_engine", "vllm-0.6.0" if v1 else self.engine)
        if self.scorer is None:
            object.__setattr__(self, "scorer", "mqa" if v1 else "batch-expansion")
        check_choice(
            "proposer_engine (the draft runs on the V0-shaped runner)",
            self.proposer_engine,
            V0_ENGINES,
        )
        scorer = f"scorer (engine {self.engine} scores 1 + k tokens per request in one forward)"
        check_choice(scorer if v1 else "scorer", self.scorer, ("mqa",) if v1 else SCORERS)
        t = self.temperature
        real = isinstance(t, numbers.Real) and not isinstance(t, bool)  # numpy scalars too
        if not (real and (t == 0 or MIN_TEMPERATURE <= t <= MAX_TEMPERATURE)):
            raise BadInput(
                f"temperature={t!r}: must be 0 (greedy) or a number in "
                f"{MIN_TEMPERATURE:g}..{MAX_TEMPERATURE:g}"
            )
        object.__setattr__(self, "temperature", float(t))
        check_int("max_model_len", self.max_model_len, 2)
        check_int("seed", self.seed, 0, MAX_SEED)
        check_choice("backend", self.backend, ("auto",) + BACKENDS)
        check_choice("graph_pool", self.graph_pool, GRAPH_POOLS)
        if not v1 and self.sizing.sets_capture_sizes:
            raise BadInput(
                f"cudagraph_capture_sizes / max_cudagraph_capture_size / "
                f"cudagraph_mode with engine {self.engine}: only the V1 engines "
                f"read them, allowed: {', '.join(V1_ENGINES)}"
            )


@dataclass(frozen=True, kw_only=True)
class SpecStep:
    """One engine step: a prefill of newly admitted requests, or a (speculative) decode."""

    step: int
    kind: str  # "prefill" | "decode"
    num_seqs: int  # sequences in the step
    num_speculating: int = 0  # B_s: sequences with proposals
    batch_size: int  # rows the target got (n = B_s*(k+1) + B_0 for batch expansion)
    path: BatchPath  # the target's: GRAPH | EAGER (V1: FULL | PIECEWISE | EAGER)
    graph_size: int | None = None
    scorer_ms: float  # the target's forward (the runner's StepRecord.time_ms)
    draft_batch_size: int = 0  # rows of each draft step: B_s + B_bonus
    draft_path: BatchPath | None = None  # the draft runner's: GRAPH | EAGER
    draft_ms: float = 0.0  # the proposer's k steps, on `clock`
    step_ms: float  # the whole step, on `clock` (graphlab.engine.runner.Span)
    step_wall_ms: float  # the whole step, wall clock
    clock: str  # step_ms's and draft_ms's clock: "thread_cpu" or "wall"
    num_draft_tokens: int = 0
    num_accepted_tokens: int = 0  # V1: accepted prefixes
    num_accepted_tokens_per_pos: tuple[int, ...] = ()  # V1: prefixes reaching position 1..k
    accepted_tokens: int = 0  # V0: accepted positions, prefix or not
    num_generation_tokens: int  # tokens appended to outputs (after max_tokens truncation)


@dataclass
class GenerateOutput:
    outputs: list[list[int]]  # generated token ids per request, in request order
    steps: list[SpecStep]
    metrics: SpecDecodeMetrics

    def steps_frame(self) -> pd.DataFrame:
        return pd.DataFrame([dataclasses.asdict(s) for s in self.steps])

    def format_report(self) -> str:
        """The per-step table and the acceptance metrics, as the repro command prints them."""
        frame = self.steps_frame()
        columns = {
            "step": "step",
            "kind": "kind",
            "num_seqs": "seqs",
            "num_speculating": "spec",
            "batch_size": "n",
            "path": "path",
            "graph_size": "graph",
            "scorer_ms": "score_ms",
            "draft_batch_size": "draft_n",
            "draft_path": "draft",
            "draft_ms": "draft_ms",
            "num_draft_tokens": "proposed",
            "num_accepted_tokens": "accepted",
            "num_generation_tokens": "generated",
        }
        table = frame[list(columns)].rename(columns=columns)
        table["graph"] = table["graph"].map(
            lambda v: "-" if v is None or pd.isna(v) else str(int(v))
        )
        table["draft"] = table["draft"].map(lambda v: "-" if v is None or pd.isna(v) else v)
        m = self.metrics
        decode = frame[frame.kind == "decode"]
        sizes = sorted(int(n) for n in decode.batch_size.unique())
        eager = int((decode.path == BatchPath.EAGER).sum())
        return "\n".join(
            [
                table.to_string(index=False, float_format=lambda x: f"{x:.2f}"),
                "",
                f"decode steps: {len(decode)}, on graphs: {len(decode) - eager}, "
                f"eager: {eager}; scorer batch sizes seen: {sizes}",
                f"vLLM V1 counts: num_drafts {m.num_drafts}, "
                f"num_draft_tokens {m.num_draft_tokens}, "
                f"num_accepted_tokens {m.num_accepted_tokens} (accepted prefixes), "
                f"num_accepted_tokens_per_pos {m.num_accepted_tokens_per_pos.tolist()}, "
                f"mean acceptance length {m.mean_acceptance_length:.3f}",
                f"vLLM V0 metrics: draft_acceptance_rate {m.draft_acceptance_rate:.3f} "
                f"({m.accepted_tokens} accepted positions, prefix or not), system_efficiency "
                f"{m.system_efficiency:.3f}, num_emitted_tokens {m.num_emitted_tokens}; "
                f"tokens per decode step: {decode.num_generation_tokens.mean():.2f}",
            ]
        )
