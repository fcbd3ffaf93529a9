"""The drafters graphlab.sizing.drafter does not draw, and why, release by release (read in the
wheels; scripts/make_drafter_vectors.py --dynamic records each class's bases and the graph-deciding
methods it overrides, data/vllm_drafter_dynamic_vectors.json "drafter_classes"):

- dflash (0.20.0 on): model runner V1's dflash.py `DFlashProposer` is a SpecDecodeBaseProposer with
  its own `set_inputs_first_pass` (every draft token in one parallel pass); model runner V2's
  dflash/speculator.py `DFlashSpeculator` (0.24.0 on) has its own `init_cudagraph_manager`,
  `capture` and `propose` (a `DFlashCudaGraphManager`): the kit draws it from 0.24.0 to 0.33.0
  (graphlab.sizing.drafter_v2.dflash_steps), not under a schedule (its manager captures the
  schedule's query lengths while every pass has 1 + k tokens) nor on 0.34.0 (a manager sized by
  request count).
- dspark (0.25.0 on): model runner V2's dspark/speculator.py `DSparkSpeculator` is a
  DFlashSpeculator; model runner V1 runs it with eagle.py `EagleProposer` (`use_eagle`), drafting
  in parallel.
- an MTP model with several modules (`use_multi_module_mtp`: num_nextn_predict_layers and k both
  above 1): model runner V2 runs multi_module_mtp/speculator.py `MultiModuleMTPSpeculator` from
  0.28.0, one manager for the whole draft with its own `init_cudagraph_manager`, `capture` and
  `propose`; the kit cannot see the model, so an MTP drafter is drawn as one module's.

Gemma 4's MTP (`use_gemma4_mtp`, speculative method gemma4_mtp, which vLLM rewrites to mtp) is drawn
as MTP: gemma4.py `Gemma4Proposer` (0.21.0 on) overrides only `__init__`, passing the same hidden
states as EAGLE, and gemma4/speculator.py `Gemma4Speculator` (0.23.0 on) overrides none of them;
its V1 centroids sampling graphs (1 to 64 tokens, where the model masks by centroids) are not drawn.
"""

from __future__ import annotations

from graphlab.sizing.model_runner import Release, release_key

# method: (first release, model runner V1's class, model runner V2's (first release, class))
UNMODELLED = {
    "dflash": (
        "0.20.0",
        "dflash.py DFlashProposer (its own set_inputs_first_pass: every draft token in one "
        "parallel pass)",
        ("0.24.0", "dflash/speculator.py DFlashSpeculator (its own init_cudagraph_manager, capture "
         "and propose, on a DFlashCudaGraphManager)"),
    ),
    "dspark": (
        "0.25.0",
        "eagle.py EagleProposer (use_eagle), drafting in parallel",
        ("0.25.0", "dspark/speculator.py DSparkSpeculator (a DFlashSpeculator)"),
    ),
}  # fmt: skip
# The first release whose model runner V2 runs an MTP model with several modules apart.
MULTI_MODULE_MTP_FROM = "0.28.0"


def unmodelled_note(release: Release, runner: str, method: str) -> str | None:
    """Why the kit draws no drafter for `method` on `release`'s model runner `runner`, or None
    where UNMODELLED does not name it."""
    if method not in UNMODELLED:
        return None
    first, v1, (v2_first, v2) = UNMODELLED[method]
    if release.key < release_key(first):
        return f"vLLM {release} has no speculative method {method!r} (first in {first})"
    if runner == "v2" and release.key < release_key(v2_first):
        return (
            f"model runner V2 of vLLM {release} has no {method} speculator (init_speculator "
            f"raises NotImplementedError; first in {v2_first})"
        )
    proposer = v1 if runner == "v1" else v2
    where = " on 0.34.0 or under a schedule" if (method, runner) == ("dflash", "v2") else ""
    return f"vLLM {release} runs {method} with {proposer}; the kit does not model its graphs{where}"


def multi_module_mtp_caveat(release: Release, runner: str) -> str:
    """The caveat an MTP drafter's note carries where vLLM would run a model with several MTP
    modules apart (model runner V2 from MULTI_MODULE_MTP_FROM), else ""."""
    if runner != "v2" or release.key < release_key(MULTI_MODULE_MTP_FROM):
        return ""
    return (
        ". An MTP model with several modules (num_nextn_predict_layers and k above 1) runs "
        "multi_module_mtp/speculator.py MultiModuleMTPSpeculator instead from "
        f"{MULTI_MODULE_MTP_FROM}: one manager for the whole draft, not modelled"
    )
