"""What a bench run sweeps: the `Suite` config and the named suites (quick, full).

A suite names the sizes of every sweep in graphlab.bench.sweeps and, optionally, the model; without
one the device decides (DEVICE_DEFAULTS).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from graphlab.errors import BadInput, lookup
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import V0_ENGINES, V1_ENGINES
from graphlab.sizing.versions import DEFAULT_ENGINE

# What a GPU run measures unless a suite names a model: the launch-bound ~100M model in bf16.
# On CPU the tiny model in float32 keeps a sweep to seconds (bf16 matmuls are slow there).
DEVICE_DEFAULTS = {"cuda": ("100m", "bfloat16"), "cpu": ("tiny", "float32")}
# The V1 cliff on a GPU: 256 requests x 4 tokens reach 1024 tokens, twice vLLM's 512 ceiling.
CLIFF_CONFIG = SizingConfig(max_num_seqs=256, num_speculative_tokens=3)


@dataclass(frozen=True)
class Suite:
    """The sizes one `bench` run sweeps. preset/dtype None: DEVICE_DEFAULTS for the device."""

    name: str
    preset: str | None
    dtype: str | None
    latency_batch_sizes: tuple[int, ...]
    repeats: int
    warmup: int
    max_seq_len: int
    memory_max_num_seqs: int
    spec_engines: tuple[str, ...]
    spec_max_num_seqs: tuple[int, ...]
    spec_num_speculative_tokens: tuple[int, ...]
    spec_num_requests_per_seq: int
    spec_max_tokens: int
    spec_max_model_len: int
    crash_map_engines: tuple[str, ...] | str
    crash_map_max_num_seqs: range
    crash_map_k: range
    # The latency runner's capture limit (as the engine sizes it); batch sizes above it run
    # eagerly in graph mode (the eager cliff). None: max(latency_batch_sizes), no cliff.
    latency_max_num_seqs: int | None = None
    # The V1 engine whose verify steps (1 + k tokens per request) the latency and graph-memory
    # sweeps add, sized by v1_sizing; None: V0 rows only.
    v1_sizing: SizingConfig | None = None
    v1_engine: str = DEFAULT_ENGINE

    def __post_init__(self):
        positive = {
            "latency_batch_sizes": self.latency_batch_sizes,
            "spec_max_num_seqs": self.spec_max_num_seqs,
            "crash_map_max_num_seqs": self.crash_map_max_num_seqs,
            "repeats": (self.repeats,),
            "max_seq_len": (self.max_seq_len,),
            "memory_max_num_seqs": (self.memory_max_num_seqs,),
            "spec_num_requests_per_seq": (self.spec_num_requests_per_seq,),
            "spec_max_tokens": (self.spec_max_tokens,),
        }
        non_negative = {
            "warmup": (self.warmup,),
            "crash_map_k": self.crash_map_k,
            "spec_num_speculative_tokens": self.spec_num_speculative_tokens,
        }
        if self.latency_max_num_seqs is not None:  # None: the default capture limit
            positive["latency_max_num_seqs"] = (self.latency_max_num_seqs,)
        for bound, fields in ((1, positive), (0, non_negative)):
            for name, values in fields.items():
                if len(values) == 0 or any(not isinstance(v, int) or v < bound for v in values):
                    raise BadInput(
                        f"suite {self.name!r}: {name}={values!r} must be "
                        f"non-empty integers >= {bound}"
                    )
        if self.v1_sizing is not None and not isinstance(self.v1_sizing, SizingConfig):
            raise BadInput(
                f"suite {self.name!r}: v1_sizing must be a "
                f"graphlab.sizing.config.SizingConfig or None, got {self.v1_sizing!r}"
            )
        if self.v1_engine not in V1_ENGINES:
            raise BadInput(
                f"suite {self.name!r}: v1_engine {self.v1_engine!r} must be "
                f"among {', '.join(V1_ENGINES)}"
            )
        bad = [p for p in self.spec_engines if p not in V0_ENGINES]
        if bad or not self.spec_engines:
            raise BadInput(
                f"suite {self.name!r}: spec_engines {bad or '()'} must be among "
                f"{', '.join(V0_ENGINES)}"
            )

    def model_for(self, device: str) -> tuple[str, str]:
        """(preset, dtype) this suite runs on a device of type 'cuda' or 'cpu'."""
        default = DEVICE_DEFAULTS["cuda" if device.startswith("cuda") else "cpu"]
        return self.preset or default[0], self.dtype or default[1]


SUITES = {
    # Seconds on two CPU cores: the shapes of every sweep, small.
    "quick": Suite(
        name="quick",
        preset="tiny",
        dtype="float32",
        latency_batch_sizes=tuple(range(1, 33)),
        repeats=10,
        warmup=3,
        max_seq_len=64,
        memory_max_num_seqs=32,
        spec_engines=("vllm-0.6.0", "adaptive"),
        spec_max_num_seqs=(8,),
        spec_num_speculative_tokens=(4,),
        spec_num_requests_per_seq=1,
        spec_max_tokens=16,
        spec_max_model_len=48,
        crash_map_engines=("vllm-0.5.5", "vllm-0.6.0", "adaptive"),
        crash_map_max_num_seqs=range(1, 33),
        crash_map_k=range(0, 9),
        latency_max_num_seqs=24,  # batches 25..32 fall off the graphs: the eager cliff
        # 160 x 4 = 640 tokens, past the 512-token ceiling.
        v1_sizing=SizingConfig(max_num_seqs=160, num_speculative_tokens=3),
    ),
    # Minutes on a GPU (per-step estimates in scripts/gpu_check.sh): V0's whole capture list.
    "full": Suite(
        name="full",
        preset=None,
        dtype=None,
        # Every size to 64 (the padding staircase), then V0's 8-stride sizes to 256 (the
        # capture limit) and on to 320, which run eagerly: the eager cliff.
        latency_batch_sizes=tuple(range(1, 65)) + tuple(range(72, 321, 8)),
        # 30 timed steps per point: eager 100m/1b steps (~7-10 ms, launch-bound) dominate the
        # GPU check's budget, and a median of 30 is as steady as one of 50 there.
        repeats=30,
        warmup=3,
        max_seq_len=256,
        memory_max_num_seqs=256,
        spec_engines=("vllm-0.6.0", "adaptive"),
        spec_max_num_seqs=(8, 32),
        spec_num_speculative_tokens=(2, 4),
        spec_num_requests_per_seq=2,
        spec_max_tokens=32,
        spec_max_model_len=96,
        crash_map_engines="all",
        crash_map_max_num_seqs=range(1, 513),
        crash_map_k=range(0, 9),
        latency_max_num_seqs=256,
        v1_sizing=CLIFF_CONFIG,
    ),
}


def get_suite(suite: str | Suite) -> Suite:
    return lookup("suite", suite, SUITES, Suite)


def replace_suite(suite: str | Suite, **changes) -> Suite:
    """A suite with some fields changed, e.g. replace_suite('quick', repeats=3)."""
    return dataclasses.replace(get_suite(suite), **changes)
