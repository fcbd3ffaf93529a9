"""`vllm serve` lines in, vLLM-valid flags out: every line here is also parsed by the installed
vLLM's own parser and the two answers compared; the planner's flag is appended to the user's line
and parsed by vLLM again; every --json is strict JSON."""

import json
import shlex
from types import SimpleNamespace

import pytest
from helpers import ROOT

from graphlab.checkout import out_folder, repository_root
from graphlab.cli import build_parser, main, program_name
from graphlab.cli.arguments import JSON_SCHEMA
from graphlab.sizing.batch_defaults import DEVICE_TIERS
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import get_engine


def run_main(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def strict_json(text: str) -> dict:
    """json.loads that refuses NaN and infinities (Python's json writes them by default)."""

    def refuse(constant):
        raise AssertionError(f"not JSON: {constant}")

    data = json.loads(text, parse_constant=refuse)
    assert data["schema"] == JSON_SCHEMA
    return data


# --- vLLM's own answers ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vllm_parse():
    """words -> args from the installed vLLM's `vllm serve` parser, as the test reads it."""
    pytest.importorskip("vllm")
    from graphlab.against_vllm.installed import quiet_vllm_import

    quiet_vllm_import()
    from vllm.entrypoints.launchers.cli_args import make_arg_parser
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def parse(words):
        return make_arg_parser(FlexibleArgumentParser()).parse_args(words)

    return parse


def vllm_batch_defaults(monkeypatch, memory_gib: float, name: str) -> tuple[int, int]:
    """(max_num_seqs, max_num_batched_tokens) of `vllm serve` from the installed vLLM's
    `EngineArgs.get_batch_defaults` on a stand-in device of that memory and name."""
    from vllm.engine import arg_utils
    from vllm.engine.arg_utils import EngineArgs
    from vllm.usage.usage_lib import UsageContext

    device = SimpleNamespace(
        get_device_total_memory=lambda device_id=0: int(memory_gib * 2**30),
        get_device_name=lambda device_id=0: name,
        is_tpu=lambda: False,
        is_cpu=lambda: False,
    )
    monkeypatch.setattr(arg_utils, "current_platform", device)
    tokens, seqs = EngineArgs.get_batch_defaults(world_size=1)
    server = UsageContext.OPENAI_API_SERVER
    return seqs[server], tokens[server]


@pytest.mark.vllm
@pytest.mark.parametrize(
    "tier, memory_gib, name",
    [
        ("b200", 180, "NVIDIA B200"),
        ("h100", 80, "NVIDIA H100 80GB HBM3"),
        ("h100", 141, "NVIDIA H200"),
        ("small", 80, "NVIDIA A100-SXM4-80GB"),  # A100s stay small whatever their memory
        ("small", 48, "NVIDIA L40S"),
        ("small", 24, "NVIDIA A10G"),
    ],
)
def test_device_tiers_are_vllms_batch_defaults(vllm_parse, monkeypatch, tier, memory_gib, name):
    row = DEVICE_TIERS[tier]
    expected = vllm_batch_defaults(monkeypatch, memory_gib, name)
    assert (row.max_num_seqs, row.max_num_batched_tokens) == expected


# Lines vLLM takes; for each, graphlab's config must equal what vLLM's parser read.
LINES = [
    "vllm serve meta-llama/Llama-3.1-8B --max-num-seqs 6 --max-num-batched-tokens 4096 "
    '--speculative-config \'{"method": "ngram", "num_speculative_tokens": 6, '
    '"prompt_lookup_max": 4}\' -cc.max_cudagraph_capture_size 42',
    "vllm serve m -O0",
    "vllm serve m -O1 --max_num_seqs 32",
    "vllm serve m -O 3 --port 8000 --host 0.0.0.0",
    "vllm serve m --enforce-eager --max-num-seqs 8",
    "vllm serve m -cc.cudagraph_mode=full_decode_only --cudagraph-capture-sizes 1 2 4 8",
    "python -m vllm.entrypoints.openai.api_server --model M --max-num-seqs 16 "
    '--compilation-config \'{"cudagraph_mode": "FULL", "cudagraph_capture_sizes": [4, 8, 16]}\'',
    "python3 -m vllm.entrypoints.openai.api_server --model=M --performance-mode interactivity "
    "--max-num-seqs 64",
    "vllm serve m --performance-mode throughput",
    "vllm serve m --speculative_config.method ngram --speculative_config.num_speculative_tokens 3 "
    "--speculative_config.prompt_lookup_max 4 --max-num-seqs 128",
    'vllm serve m -cc \'{"cudagraph_mode": "piecewise", "max_cudagraph_capture_size": 64}\'',
    "vllm serve m --max-num-batched-tokens 2k --max-num-seqs 300",
    # vLLM expands bare 1k-style numbers inside a compilation config: not malformed JSON.
    "vllm serve m --max-num-seqs 600 -cc '{\"max_cudagraph_capture_size\": 1k}'",
]


def vllm_answer(args) -> dict:
    """(mode, sizes, max, S, k, T) from vLLM's parsed args and its own tables: the optimization
    level's default mode (OPTIMIZATION_LEVEL_TO_CONFIG), --enforce-eager's NONE, the H200 tier's
    batch defaults (doubled by throughput mode, `EngineArgs._set_default_args`)."""
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, OptimizationLevel

    level = OptimizationLevel(int(args.optimization_level))
    compilation = args.compilation_config
    mode = (
        compilation.cudagraph_mode
        or (OPTIMIZATION_LEVEL_TO_CONFIG[level]["compilation_config"]["cudagraph_mode"])
    )
    double = 2 if args.performance_mode == "throughput" else 1
    h200 = DEVICE_TIERS["h100"]
    return {
        "cudagraph_mode": "NONE" if args.enforce_eager else mode.name,
        "cudagraph_capture_sizes": args.cudagraph_capture_sizes
        or compilation.cudagraph_capture_sizes,
        "max_cudagraph_capture_size": args.max_cudagraph_capture_size
        or compilation.max_cudagraph_capture_size,
        "max_num_seqs": args.max_num_seqs or h200.max_num_seqs * double,
        "num_speculative_tokens": (args.speculative_config or {}).get("num_speculative_tokens", 0),
        "max_num_batched_tokens": args.max_num_batched_tokens
        or h200.max_num_batched_tokens * double,
        "performance_mode": args.performance_mode,
    }


def graphlab_answer(cfg) -> dict:
    sizes = cfg.cudagraph_capture_sizes
    return {
        "cudagraph_mode": get_engine("vllm-0.33.0").cudagraph_mode(cfg),
        "cudagraph_capture_sizes": None if sizes is None else list(sizes),
        "max_cudagraph_capture_size": cfg.max_cudagraph_capture_size,
        "max_num_seqs": cfg.max_num_seqs,
        "num_speculative_tokens": cfg.num_speculative_tokens,
        "max_num_batched_tokens": cfg.max_num_batched_tokens,
        "performance_mode": cfg.performance_mode or "balanced",
    }


def entry_words(line: str) -> list[str]:
    words = shlex.split(line)
    return words[2:] if words[0] == "vllm" else words[3:]


@pytest.mark.vllm
@pytest.mark.parametrize("line", LINES)
def test_serve_line_read_as_vllm_reads_it(vllm_parse, line):
    from graphlab.against_vllm.serve_args import read_vllm_args

    ours = graphlab_answer(read_vllm_args(line).config)
    assert ours == vllm_answer(vllm_parse(entry_words(line))), line


def vllm_mode_after_compilation(args, model_runner: str) -> str:
    """The cudagraph_mode VllmConfig leaves after its compilation-mode rules, run on the parsed
    compilation config: `_normalize_piecewise_cudagraph_mode` (no breakable graphs), then on model
    runner V2 `_disable_cudagraphs_for_v2_stock_torch_compile`; V1's `load_model` returns before
    wrapping a stock-compiled model in CUDAGraphWrapper, which leaves it no graphs either."""
    from types import SimpleNamespace

    from vllm.config.compilation import CompilationMode
    from vllm.config.vllm import OPTIMIZATION_LEVEL_TO_CONFIG, OptimizationLevel, VllmConfig

    level = OptimizationLevel(int(args.optimization_level))
    compilation = args.compilation_config
    if compilation.cudagraph_mode is None:
        compilation.cudagraph_mode = OPTIMIZATION_LEVEL_TO_CONFIG[level]["compilation_config"][
            "cudagraph_mode"
        ]
    if compilation.mode is None:
        compilation.mode = CompilationMode.VLLM_COMPILE if level > 0 else CompilationMode.NONE
    config = SimpleNamespace(compilation_config=compilation)
    VllmConfig._normalize_piecewise_cudagraph_mode(config, breakable_cudagraph_enabled=False)
    if model_runner == "v2":
        VllmConfig._disable_cudagraphs_for_v2_stock_torch_compile(config)
    elif compilation.mode == CompilationMode.STOCK_TORCH_COMPILE:
        return "NONE"
    return compilation.cudagraph_mode.name


@pytest.mark.vllm
@pytest.mark.parametrize(
    "line",
    [
        "vllm serve m -O1 -cc '{\"mode\": 0}'",
        "vllm serve m -O0 -cc.cudagraph_mode=FULL_AND_PIECEWISE",
        "vllm serve m -O0 -cc.cudagraph_mode=FULL",
        "vllm serve m -cc '{\"mode\": 1}'",
        "vllm serve m -cc.mode=1 -cc.cudagraph_mode=FULL",
        "vllm serve m -O1 -cc.mode=stock_torch_compile",
        "vllm serve m -cc.mode=2 -cc.cudagraph_mode=FULL_DECODE_ONLY",
        "vllm serve m -cc.mode=2 -cc.cudagraph_mode=FULL_AND_PIECEWISE",
    ],
)
def test_compilation_mode_lowers_the_graph_mode_as_vllm_does(vllm_parse, line):
    """Without vLLM's compilation PIECEWISE parts fall away; stock torch.compile captures nothing
    on either model runner; the answer equals vLLM's own methods on the parsed config."""
    from graphlab.against_vllm.serve_args import read_vllm_args

    ours = graphlab_answer(read_vllm_args(line).config)["cudagraph_mode"]
    for runner in ("v1", "v2"):
        assert ours == vllm_mode_after_compilation(vllm_parse(entry_words(line)), runner), line


@pytest.mark.vllm
def test_stock_compile_says_why_no_graphs(capsys):
    code, out, _ = run_main(
        capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", "vllm serve m -cc.mode=1"
    )
    assert code == 0, out
    assert "stock torch.compile" in out and "becomes NONE" in out


@pytest.mark.vllm
def test_interactivity_captures_vllms_sizes(vllm_parse, capsys):
    from graphlab.against_vllm.installed import installed_capture_sizes
    from graphlab.against_vllm.serve_args import read_vllm_args

    for seqs, k in [(64, 0), (8, 3), (300, 1)]:
        line = f"vllm serve m --performance-mode interactivity --max-num-seqs {seqs}"
        if k:
            line += f' -sc \'{{"method": "ngram", "num_speculative_tokens": {k}}}\''
        cfg = read_vllm_args(line).config
        ours = get_engine("vllm-0.33.0").capture_sizes(cfg)
        assert ours == installed_capture_sizes(cfg), line
        assert set(range(1, 33)) <= set(ours)
    code, _, err = run_main(capsys, "audit", "--engine", "vllm-0.13.0", "--vllm-args", line)
    assert code == 2 and "vllm-0.13.0 does not have" in err


@pytest.mark.vllm
def test_unset_batch_knobs_say_which_defaults_were_assumed(capsys):
    code, out, _ = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.33.0",
        "--device-tier",
        "small",
        "--vllm-args",
        "vllm serve m",
    )
    assert code == 0 and out.startswith("note: the line leaves max_num_seqs=256 and ")
    assert "max_num_batched_tokens=2048" in out.splitlines()[0] and "'small'" in out
    code, out, _ = run_main(
        capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", "m --max-num-seqs 4", "--json"
    )
    data = strict_json(out)
    assert (data["max_num_seqs"], data["max_num_batched_tokens"]) == (4, 8192)
    assert data["notes"] == [
        "the line leaves max_num_batched_tokens=8192 to vLLM's defaults on the 'h100' device tier "
        "(>= 70 GiB except A100 (and GB10 in 0.33): H100, H200); --device-tier b200/h100/small "
        "picks another"
    ]


@pytest.mark.vllm
def test_the_reader_names_the_settings_vllms_defaults_filled():
    # what `--vllm-log` drops from a line, so that the log's own values stand for them
    from graphlab.against_vllm.serve_args import read_vllm_args

    assert read_vllm_args("vllm serve m").from_defaults == (
        "max_num_seqs",
        "max_num_batched_tokens",
    )
    assert read_vllm_args("vllm serve m --max_num_seqs=4").from_defaults == (
        "max_num_batched_tokens",
    )
    line = read_vllm_args("vllm serve m --max-num-seqs 4 --max-num-batched-tokens 64")
    assert line.from_defaults == () and line.config.max_num_batched_tokens == 64


@pytest.mark.vllm
def test_the_reader_takes_a_tier_by_name_or_object_and_holds_the_line_to_the_kits_limits():
    from graphlab.against_vllm.serve_args import read_vllm_args
    from graphlab.errors import BadInput
    from graphlab.sizing.limits import MAX_NUM_BATCHED_TOKENS_LIMIT

    by_name = read_vllm_args("vllm serve m --performance-mode throughput", "small")
    by_tier = read_vllm_args("vllm serve m --performance-mode throughput", DEVICE_TIERS["small"])
    assert by_name == by_tier
    assert (by_name.config.max_num_seqs, by_name.config.max_num_batched_tokens) == (512, 4096)
    assert "doubled by --performance-mode throughput" in by_name.notes[0]
    with pytest.raises(BadInput, match=r"^device tier 'h300' is not one of b200, h100, small$"):
        read_vllm_args("vllm serve m", "h300")
    too_many = MAX_NUM_BATCHED_TOKENS_LIMIT + 1
    with pytest.raises(
        BadInput,
        match=rf"^--vllm-args: max_num_batched_tokens must be at most "
        rf"{MAX_NUM_BATCHED_TOKENS_LIMIT}, got {too_many}$",
    ):
        read_vllm_args(f"vllm serve m --max-num-batched-tokens {too_many}")


# --- the planner on the user's own line -----------------------------------------------------------

PLAN_LINES = [
    'vllm serve m --max-num-seqs 32 -cc \'{"cudagraph_mode": "FULL_DECODE_ONLY"}\'',
    "vllm serve m --max-num-seqs 16 -O1 --speculative-config "
    '\'{"method": "ngram", "num_speculative_tokens": 3, "prompt_lookup_max": 2}\'',
    "vllm serve m --max-num-seqs 24 --max-num-batched-tokens 1024 --compilation-config "
    '\'{"cudagraph_mode": "FULL_AND_PIECEWISE", "max_cudagraph_capture_size": 48, '
    '"cudagraph_num_of_warmups": 2}\'',
    # Forms that appending cannot fix: a top-level capture flag, dotted -cc keys.
    "vllm serve m --max-num-seqs 16 --cudagraph-capture-sizes 1 2 4 --port 8001",
    "vllm serve m --max-num-seqs 16 -cc.cudagraph_mode=FULL_DECODE_ONLY "
    "-cc.cudagraph_num_of_warmups=3",
]


@pytest.mark.vllm
@pytest.mark.parametrize("line", PLAN_LINES)
def test_planned_flag_on_the_users_line_is_read_by_vllm(vllm_parse, capsys, line):
    code, out, err = run_main(
        capsys, "plan", "--engine", "vllm-0.33.0", "--vllm-args", line, "--json"
    )
    assert code == 0, err
    plan = strict_json(out)
    before = vllm_parse(entry_words(line))
    whole = vllm_parse(shlex.split(plan["vllm_command"])[2:])
    appended = [*entry_words(line), *shlex.split(plan["vllm_flag"])]
    if set(plan["replaced_flags"]) <= {"-cc", "--compilation-config"}:  # appending suffices
        assert vars(vllm_parse(appended)) == vars(whole)
    after = whole
    cc, user_cc = after.compilation_config, before.compilation_config
    assert cc.cudagraph_capture_sizes == plan["capture_sizes"]
    for name in ("cudagraph_mode", "mode", "cudagraph_num_of_warmups"):
        assert getattr(cc, name) == getattr(user_cc, name), name
    if user_cc.max_cudagraph_capture_size is not None:  # vLLM requires it to be the largest size
        assert cc.max_cudagraph_capture_size == plan["capture_sizes"][-1]
    for name in ("max_num_seqs", "max_num_batched_tokens", "speculative_config", "port"):
        assert getattr(after, name) == getattr(before, name), name
    assert after.cudagraph_capture_sizes is None  # no "mutually exclusive" error at start-up


@pytest.mark.vllm
def test_plan_of_an_eager_line_prints_no_flag_and_says_why(capsys):
    for line in ("vllm serve m -O0 --max-num-seqs 8", "vllm serve m --enforce-eager"):
        code, out, _ = run_main(capsys, "plan", "--vllm-args", line)
        assert code == 0 and "vllm:" not in out and "--compilation-config" not in out
        assert "captures no CUDA graphs" in out


def test_plan_cudagraph_mode_none_prints_no_flag(capsys):
    code, out, _ = run_main(capsys, "plan", "--max-num-seqs", "8", "--cudagraph-mode", "none")
    assert code == 0 and "vllm:" not in out and "no flag to print" in out
    code, out, _ = run_main(
        capsys, "plan", "--max-num-seqs", "8", "--cudagraph-mode", "NONE", "--json"
    )
    data = strict_json(out)
    assert data["vllm_flag"] is None and "no capture sizes to plan" in data["reason"]


def test_one_size_workload_is_a_warning_first(capsys, tmp_path):
    steps = tmp_path / "steps.csv"
    steps.write_text("batch_size\n12\n12\n")
    argv = ["plan", "--max-num-seqs", "8", "--num-speculative-tokens", "3", "--batch-sizes"]
    code, out, _ = run_main(capsys, *argv, str(steps))
    first = out.splitlines()[0]
    assert code == 0 and first.startswith("WARNING: every step of the workload is 12 tokens")
    assert "ONE graph, of 12 tokens" in first and "EAGERLY" in first
    data = strict_json(run_main(capsys, *argv, str(steps), "--json")[1])
    assert data["capture_sizes"] == [12] and len(data["warnings"]) == 1


def test_plan_flag_keeps_the_mode_it_was_given(capsys):
    code, out, _ = run_main(
        capsys, "plan", "--max-num-seqs", "8", "--cudagraph-mode", "full_decode_only", "--json"
    )
    data = strict_json(out)
    flag = json.loads(shlex.split(data["vllm_flag"])[1])
    assert flag == {
        "cudagraph_mode": "FULL_DECODE_ONLY",
        "cudagraph_capture_sizes": data["capture_sizes"],
    }


# --- refusals before the slow import --------------------------------------------------------------

MALFORMED = {
    'vllm serve m -cc \'{"cudagraph_mode":"BOGUS"}\'': "cudagraph_mode 'BOGUS' is not one of NONE",
    "vllm serve m -cc.cudagraph_mode=bogus": "cudagraph_mode 'bogus' is not one of NONE",
    "vllm serve m --compilation_config '{\"cudagraph_mode\": 1'": "is not JSON",
    "vllm serve m -sc '[1]'": "speculative_config must be a JSON object, got [1]",
    "vllm serve m -cc '3'": "compilation_config must be a JSON object, got 3",
    "vllm serve m --performance-mode fast": "--performance-mode 'fast' is not one of balanced",
    "vllm run m": "the vllm command must be `vllm serve`",
    "python -m vllm.entrypoints.cli.main serve m": "must run `-m vllm.entrypoints.openai",
    "vllm serve m -cc": "-cc needs a value",
    "vllm serve m --max-num-seqs many": "--max-num-seqs 'many' is not an integer",
    "vllm serve m --max_num_seqs=100000": "max_num_seqs must be an integer in 1..65536, got 100000",
    "vllm serve m --max-num-seqs 0": "max_num_seqs must be an integer in 1..65536, got 0",
    "vllm serve m -O5": "optimization level '5' is not one of 0, 1, 2, 3",
    "vllm serve 'm": "is not a shell command line",
    "": "--vllm-args must be a `vllm serve MODEL ...` line, got ''",
    "  ": "--vllm-args must be a `vllm serve MODEL ...` line, got '  '",
    "vllm serve m --max-num-seqs ²": "--max-num-seqs '²' is not an integer",
}


@pytest.mark.parametrize("line", MALFORMED)
def test_malformed_lines_refused_without_importing_vllm(monkeypatch, capsys, line):
    from graphlab.against_vllm import serve_args

    def no_import(words):
        raise AssertionError("vllm imported for a line refused without it")

    monkeypatch.setattr(serve_args, "_parse", no_import)
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert MALFORMED[line] in err, err


@pytest.mark.parametrize(
    "line, named",
    [
        (
            "vllm serve m --max-num-seqs " + "9" * 5000,
            "max_num_seqs must be an integer in 1..65536, got a number of 5000 digits",
        ),
        ("vllm serve m -cc " + "x" * 2**20, "--vllm-args holds 1048593 characters, more than"),
        ("vllm serve m -cc '" + "x" * 2**15 + "'", "-cc 'xxxxxxxx"),
    ],
)
def test_a_huge_line_is_refused_at_once_in_a_short_line(monkeypatch, capsys, line, named):
    from graphlab.against_vllm import serve_args

    def no_import(words):
        raise AssertionError("vllm imported for a line refused without it")

    monkeypatch.setattr(serve_args, "_parse", no_import)
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert code == 2 and out == "" and err.count("\n") == 1 and len(err) < 300, err
    assert named in err, err


@pytest.mark.vllm
@pytest.mark.parametrize(
    "line",
    [
        "vllm serve m --cudagraph-capture-sizes 4 8 -cc '{\"cudagraph_capture_sizes\": [4]}'",
        "vllm serve m --max-cudagraph-capture-size 8 -cc.max_cudagraph_capture_size=16",
    ],
)
def test_a_capture_setting_given_twice_is_vllms_mutually_exclusive_error(capsys, line):
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "and compilation_config." in err and "are mutually exclusive" in err, err


def test_unknown_device_tier_is_refused(capsys):
    code, _, err = run_main(
        capsys, "audit", "--engine", "vllm-0.33.0", "--device-tier", "h300", "--vllm-args", "m"
    )
    assert code == 2 and "invalid choice: 'h300'" in err


# --- the kit's flags in vLLM's syntax -------------------------------------------------------------


def test_kit_flags_take_vllms_value_syntax(capsys):
    def audit(*argv):
        code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", *argv, "--json")
        assert code == 0, err
        return strict_json(out)

    spaced = audit("--max_num_seqs", "8", "--cudagraph-capture-sizes", "1", "2", "4")
    commas = audit("--max-num-seqs", "8", "--cudagraph-capture-sizes", "1,2,4")
    assert spaced == {**commas, "notes": []} and spaced["cudagraph_capture_sizes"] == [1, 2, 4]
    lower = audit("--max-num-seqs=8", "--cudagraph_mode", "full_decode_only")
    assert lower["cudagraph_mode"] == "FULL_DECODE_ONLY"
    code, _, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--cudagraph-mode", "x")
    assert code == 2 and "invalid choice: 'X'" in err and "FULL_DECODE_ONLY" in err


# --- JSON, crash-map output, --version, usage -----------------------------------------------------


def test_every_json_is_strict_with_a_schema(capsys, tmp_path):
    # A refused config: T < S, nothing reachable, undefined fractions are null.
    code, out, _ = run_main(
        capsys,
        "audit",
        "--engine",
        "vllm-0.33.0",
        "--max-num-seqs",
        "8",
        "--max-num-batched-tokens",
        "4",
        "--json",
    )
    data = strict_json(out)
    assert code == 3 and data["command"] == "audit" and data["startup_error"]
    code, out, _ = run_main(
        capsys,
        "crash-map",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs-range",
        "1:4",
        "--k-range",
        "0:2",
        "--json",
    )
    rows = strict_json(out)["rows"]
    assert code == 0 and len(rows) == 12 and rows[0]["first_crash_n"] is None
    assert {row["backend"] for row in rows} == {"computed"}


def test_repro_json_at_the_crash_prints_the_steps_and_the_error(capsys):
    code, out, _ = run_main(capsys, "repro", "--json", "--device", "cpu")
    data = strict_json(out)
    # S 8, k 4: the first decode step sends 8 x 5 rows and crashes; no decode step before it.
    assert code == 1 and data["error"] == "KeyError: 40" and data["steps"] == []
    assert data["capture_sizes"] == list(get_engine("vllm-0.5.5").capture_sizes(SizingConfig(8, 4)))
    assert "full_sizes" not in data
    # The adaptive target holds 40 rows; vllm-0.5.5's draft runner then fails at 16.
    argv = ["repro", "--engine", "adaptive", "--proposer-engine", "vllm-0.5.5", "--device", "cpu"]
    code, out, _ = run_main(capsys, *argv, "--json")
    data = strict_json(out)
    assert code == 1 and data["error"] == "KeyError: 16"
    assert data["steps"] == [{"num_tokens": 40, "path": "graph", "graph_size": 40}]
    code, out, _ = run_main(
        capsys,
        "repro",
        "--engine",
        "vllm-0.33.0",
        "--max-num-seqs",
        "4",
        "--num-speculative-tokens",
        "2",
        "--num-requests",
        "4",
        "--json",
        "--device",
        "cpu",
    )
    data = strict_json(out)
    assert code == 0 and data["error"] is None
    assert all(size % 3 == 0 for size in data["full_sizes"])
    assert data["capture_sizes"] == list(
        get_engine("vllm-0.33.0").capture_sizes(SizingConfig(4, 2))
    )


def test_crash_map_out_dash_is_standard_output(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = [
        "crash-map",
        "--engine",
        "vllm-0.5.5",
        "--max-num-seqs-range",
        "1:2",
        "--k-range",
        "1:1",
    ]
    code, out, _ = run_main(capsys, *argv, "--out", "-")
    assert code == 0 and out.startswith("engine,max_num_seqs,") and len(out.splitlines()) == 3
    assert not (tmp_path / "-").exists()
    code, _, err = run_main(capsys, *argv)
    assert code == 2 and "exactly one of --out" in err


def test_version_help_examples_and_program_name(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out == "graphlab 0.1.0\n"
    assert program_name("/usr/bin/graphlab") == "graphlab"
    assert program_name("/x/graphlab/__main__.py") == "python -m graphlab"
    for command in ("audit", "plan", "crash-map", "repro", "bench"):
        with pytest.raises(SystemExit):
            build_parser("graphlab").parse_args([command, "--help"])
        text = capsys.readouterr().out
        assert text.startswith(f"usage: graphlab {command}"), command
        examples = text.split("examples:\n", 1)[1].splitlines()
        assert sum(line.startswith(f"  graphlab {command}") for line in examples) >= 2, command


# --- notebooks write inside the checkout ----------------------------------------------------------


def test_relative_out_dir_is_under_the_repository_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert repository_root() == ROOT
    assert out_folder("build/x") == ROOT / "build" / "x"
    assert out_folder(tmp_path / "y") == tmp_path / "y"
    for notebook in sorted((ROOT / "notebooks").glob("0*.ipynb")):
        source = "".join(
            "".join(cell["source"]) for cell in json.loads(notebook.read_text())["cells"]
        )
        assert 'out_dir = "build/' in source and "out = out_folder(out_dir)" in source, notebook
        assert "../build" not in source, notebook


@pytest.mark.parametrize("number", ["8k", "8K", "2m", "2M", "1g", "1G", "1t", "1T", "1.5k"])
def test_vllms_suffixed_numbers_pass_the_json_check_before_the_import(monkeypatch, number):
    # vLLM expands bare k/m/g/t and K/M/G/T numbers in a JSON config
    # (arg_utils._expand_json_human_readable_numbers): the kit's JSON check must let them reach it.
    from graphlab.against_vllm import serve_args

    def reached(words):
        raise AssertionError("reached vLLM's parser")

    monkeypatch.setattr(serve_args, "_parse", reached)
    line = f"vllm serve m -cc '{{\"max_cudagraph_capture_size\": {number}}}'"
    with pytest.raises(AssertionError, match="reached vLLM's parser"):
        serve_args.read_vllm_args(line)


# --- dynamic speculation: speculative_config.num_speculative_tokens_per_batch_size ---------------

_DYNAMIC_LINE = (
    'vllm serve m --max-num-seqs 128 --speculative-config \'{"method": "eagle", '
    '"model": "d", "num_speculative_tokens": 4, '
    '"num_speculative_tokens_per_batch_size": %s}\''
)


@pytest.mark.vllm
def test_dynamic_schedule_is_read_as_vllms_parser_gives_it(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = _DYNAMIC_LINE % "[[33, 128, 1], [1, 32, 4]]"
    parsed = vllm_parse(shlex.split(line)[2:]).speculative_config
    cfg = read_vllm_args(line).config
    assert parsed["num_speculative_tokens_per_batch_size"] == [[33, 128, 1], [1, 32, 4]]
    assert cfg.num_speculative_tokens_per_batch_size == ((1, 32, 4), (33, 128, 1))


@pytest.mark.vllm
def test_audit_shows_the_graphs_per_query_length_and_each_verify_batch(vllm_parse, capsys):
    line = _DYNAMIC_LINE % "[[1, 32, 4], [33, 128, 1]]"
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert code == 0, err
    assert "FULL uniform-decode graphs (85 at 77 token counts)" in out
    assert "  at query length 2 (37): 2, 4, 6, 8, 10, 16," in out
    assert "  at query length 5 (48): 5, 10, 20, 25," in out
    assert "requests       1-2  k=4       5-10 tokens  full" in out
    assert "requests         3  k=4         15 tokens  piecewise" in out
    assert "requests     33-36  k=1      66-72 tokens  full" in out
    verify = [line for line in out.splitlines() if line.startswith("  requests ")]
    assert len(verify) > 20 and not any(line.endswith("eager") for line in verify)
    code, out, _ = run_main(
        capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line, "--json"
    )
    data = strict_json(out)
    assert data["num_speculative_tokens_per_batch_size"] == [[1, 32, 4], [33, 128, 1]]
    assert {q: len(s) for q, s in data["full_sizes_by_query_len"].items()} == {"2": 37, "5": 48}
    by_reqs = {o["num_reqs"]: o for o in data["outcomes"]}
    assert (by_reqs[32]["query_len"], by_reqs[32]["batch_size"]) == (5, 160)
    assert (by_reqs[33]["query_len"], by_reqs[33]["batch_size"]) == (2, 66)
    assert data["summary"]["num_eager"] == 0


@pytest.mark.vllm
@pytest.mark.parametrize(
    "schedule, engine, message",
    [
        ("[[1, 32, 4], [30, 128, 1]]", "vllm-0.33.0", "batch-size ranges must not overlap"),
        ("[[2, 128, 1]]", "vllm-0.33.0", "the first batch-size range must start at 1"),
        ("[[1, 128, 1]]", "vllm-0.13.0", "vLLM added it in 0.24.0 (PR 32374)"),
    ],
)
def test_refused_schedules_are_one_line_errors(vllm_parse, capsys, schedule, engine, message):
    code, _, err = run_main(
        capsys, "audit", "--engine", engine, "--vllm-args", _DYNAMIC_LINE % schedule
    )
    assert code == 2 and message in err and err.count("\n") == 1, err


# What the independent mutation campaign of 2026-12-06 found untested (docs/mutation.md).


@pytest.mark.vllm
def test_stock_compile_with_no_graphs_asked_says_nothing_becomes_none():
    # cudagraph_mode NONE asked: nothing is lowered, so no note claims it became NONE
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = read_vllm_args("vllm serve m -cc.mode=1 -cc.cudagraph_mode=NONE --max-num-seqs 4")
    assert line.config.cudagraph_mode == "NONE"
    assert not any("stock torch.compile" in note for note in line.notes), line.notes


@pytest.mark.vllm
def test_a_mode_the_line_sets_is_kept_even_where_it_is_the_default():
    # FULL_AND_PIECEWISE set on the line is the user's (a log saying otherwise contradicts it);
    # left unset it is the engine's default, None
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = "vllm serve m --max-num-seqs 4 -cc.cudagraph_mode=FULL_AND_PIECEWISE"
    assert read_vllm_args(line).config.cudagraph_mode == "FULL_AND_PIECEWISE"
    assert read_vllm_args("vllm serve m --max-num-seqs 4").config.cudagraph_mode is None


@pytest.mark.vllm
def test_a_capture_flag_spelled_with_underscores_is_replaced_too(vllm_parse):
    # FlexibleArgumentParser reads --cudagraph_capture_sizes as --cudagraph-capture-sizes: kept,
    # it would meet the planned -cc in vLLM's "mutually exclusive" error
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = read_vllm_args("vllm serve m --cudagraph_capture_sizes 1 2 4 --max-num-seqs 8")
    planned = line.with_flag(["-cc", '{"cudagraph_capture_sizes": [8]}'])
    assert planned == "vllm serve m --max-num-seqs 8 -cc '{\"cudagraph_capture_sizes\": [8]}'"
    assert vllm_parse(shlex.split(planned)[2:]).cudagraph_capture_sizes is None


@pytest.mark.vllm
def test_of_two_compilation_configs_the_last_is_kept_as_vllms_parser_keeps_it(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    words = 'm -cc \'{"cudagraph_mode": "PIECEWISE"}\' -cc \'{"cudagraph_mode": "FULL"}\''
    line = read_vllm_args(f"vllm serve {words}")
    vllm_mode = vllm_parse(shlex.split(words)).compilation_config.cudagraph_mode.name
    assert line.compilation_config == {"cudagraph_mode": vllm_mode} == {"cudagraph_mode": "FULL"}


@pytest.mark.vllm
def test_a_dotted_mode_in_json_quotes_passes_the_check_before_the_import(vllm_parse):
    # FlexibleArgumentParser reads a dotted key's value as JSON where it can: "X" is X
    from graphlab.against_vllm.serve_args import read_vllm_args

    words = "m -cc.cudagraph_mode='\"FULL_DECODE_ONLY\"'"
    line = read_vllm_args(f"vllm serve {words}")
    vllm_mode = vllm_parse(shlex.split(words)).compilation_config.cudagraph_mode.name
    assert line.config.cudagraph_mode == vllm_mode == "FULL_DECODE_ONLY"


# ---- what the third independent mutation campaign (2026-12-06) found untested ----------------


@pytest.mark.vllm
def test_a_compilation_config_in_its_flags_own_word_keeps_the_word_after_it(vllm_parse):
    # `--compilation-config={...}` holds its value: the model named after it is not the flag's
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = read_vllm_args(
        """vllm serve '--compilation-config={"cudagraph_mode": "PIECEWISE"}' m --max-num-seqs 8"""
    )
    planned = line.with_flag(["-cc", '{"cudagraph_capture_sizes": [8]}'])
    assert planned == "vllm serve m --max-num-seqs 8 -cc '{\"cudagraph_capture_sizes\": [8]}'"
    assert vllm_parse(shlex.split(planned)[2:]).model_tag == "m"


@pytest.mark.vllm
def test_a_speculative_config_without_its_token_count_is_refused_by_name(vllm_parse):
    # vLLM would read k from the draft model's config, which the kit never loads
    from graphlab.against_vllm.serve_args import read_vllm_args
    from graphlab.errors import GraphlabError

    words = 'm --speculative-config \'{"method": "ngram"}\''
    assert vllm_parse(shlex.split(words)).speculative_config == {"method": "ngram"}
    with pytest.raises(GraphlabError) as refused:
        read_vllm_args(f"vllm serve {words}")
    assert str(refused.value) == (
        "--vllm-args: speculative_config must give num_speculative_tokens (vLLM would read it "
        "from the draft model's config, which is not loaded here)"
    )


@pytest.mark.vllm
def test_a_flag_given_twice_is_named_once_among_the_replaced(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    # argparse lets the last of a repeated flag win; the plan replaces the flag once
    words = "m -cc.cudagraph_mode=FULL -cc.cudagraph_mode=PIECEWISE"
    mode = vllm_parse(shlex.split(words)).compilation_config.cudagraph_mode.name
    line = read_vllm_args(f"vllm serve {words}")
    assert line.config.cudagraph_mode == mode == "PIECEWISE"
    assert line.replaced_flags == ("-cc.cudagraph_mode",)


# --- the attention backend on the serve line ---------------------------------------------------

_DEPRECATED = (
    "note: vLLM logs a WARNING: Using VLLM_ATTENTION_BACKEND environment variable is deprecated "
    "and will be removed in v0.14.0 or v1.0.0, whichever is soonest."
)


@pytest.mark.vllm
@pytest.mark.parametrize(
    ("version", "line", "code", "words"),
    [
        # 0.13.0 and 0.14.x: the variable sets attention_config.backend, with vLLM's WARNING
        ("0.13.0", "VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m", 0, _DEPRECATED),
        (
            "0.14.1",
            "env VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m",
            0,
            "attention backend FLASHINFER (as named on the 'h100' tier; FlashInferBackend reports "
            "AttentionCGSupport.UNIFORM_SINGLE_TOKEN_DECODE",
        ),
        # envs.py drops it in 0.15.0: vLLM ignores it and picks its default
        (
            "0.33.0",
            "VLLM_ATTENTION_BACKEND=TRITON_ATTN vllm serve m",
            0,
            "note: VLLM_ATTENTION_BACKEND is not read by vLLM 0.33.0 (vllm/envs.py dropped it in "
            "0.15.0; use --attention-backend): vLLM ignores it",
        ),
        (
            "0.33.0",
            "vllm serve m --attention-backend triton_attn",
            0,
            "attention backend TRITON_ATTN",
        ),
        (
            "0.33.0",
            "vllm serve m -ac.backend FLEX_ATTENTION",
            0,
            "attention backend FLEX_ATTENTION",
        ),
        # the _VLLM_V1 spellings of 0.10.x, and the kit's names those releases refuse
        (
            "0.10.1",
            "VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1 vllm serve m",
            0,
            "attention backend TRITON_ATTN (as named",
        ),
        (
            "0.10.2",
            "VLLM_ATTENTION_BACKEND=FLASH_ATTN_VLLM_V1 vllm serve m",
            0,
            "selects no backend by that name, so it picks its default",
        ),
        (
            "0.10.1",
            "VLLM_ATTENTION_BACKEND=TRITON_ATTN vllm serve m",
            2,
            "vLLM 0.10.1 refuses to start: ValueError: Invalid attention backend: 'TRITON_ATTN' "
            "(no backend of that name in that release; vLLM 0.10.1 spells it TRITON_ATTN_VLLM_V1)",
        ),
        (
            "0.11.0",
            "VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1 vllm serve m",
            2,
            "vLLM 0.11.0 refuses to start: ValueError: Invalid value 'TRITON_ATTN_VLLM_V1' for "
            "VLLM_ATTENTION_BACKEND",
        ),
        (
            "0.12.0",
            "vllm serve m --attention-backend FLASHINFER",
            2,
            "--vllm-args: --attention-backend does not exist in vLLM 0.12.0 (added in 0.13.0)",
        ),
        # EngineArgs.create_engine_config: both options, or the variable and the option (0.13.0
        # and 0.14.x, where it sets attention_config.backend)
        (
            "0.33.0",
            "vllm serve m --attention-backend FLASHINFER -ac.backend TRITON_ATTN",
            2,
            "--vllm-args: vLLM 0.33.0 refuses to start: ValueError: attention_backend and "
            "attention_config.backend are mutually exclusive",
        ),
        (
            "0.13.0",
            "VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m --attention-backend TRITON_ATTN",
            2,
            "are mutually exclusive (VLLM_ATTENTION_BACKEND sets attention_config.backend)",
        ),
    ],
)
def test_the_lines_attention_backend_as_each_release_reads_it(capsys, version, line, code, words):
    got, out, err = run_main(
        capsys, "audit", "--vllm-version", version, "--vllm-args", f"{line} --max-num-seqs 4"
    )
    assert got == code, (out, err)
    assert words in (err if code == 2 else out), (out, err)
    assert len(err.strip().splitlines()) <= 1  # one line, never a traceback


@pytest.mark.vllm
def test_the_lines_backend_feeds_the_audit_and_the_flag_conflicts(capsys):
    # 0.9.1 on an A100 with the Triton backend: full_cuda_graph is refused at start-up (status 3)
    line = "VLLM_ATTENTION_BACKEND=TRITON_ATTN_VLLM_V1 vllm serve m --max-num-seqs 4"
    line += " -cc.cudagraph_mode=FULL"
    got, out, _ = run_main(
        capsys, "audit", "--vllm-version", "0.9.1", "--device-tier", "small", "--vllm-args", line
    )
    assert got == 3
    assert (
        "Current attention backend is TritonAttentionBackend, FlashAttention version is 2." in out
    )
    got, _, err = run_main(
        capsys, "audit", "--vllm-version", "0.33.0", "--attention-backend", "FLASHINFER",
        "--vllm-args", "vllm serve m --max-num-seqs 4 --attention-backend TRITON_ATTN",
    )  # fmt: skip
    assert got == 2 and err.strip().endswith(
        "--attention-backend FLASHINFER and the --vllm-args line's attention backend TRITON_ATTN "
        "are both given; drop --attention-backend"
    )
    # a line that names none leaves the flag in force
    got, out, _ = run_main(
        capsys, "audit", "--vllm-version", "0.33.0", "--attention-backend", "TRITON_ATTN",
        "--vllm-args", "vllm serve m --max-num-seqs 4",
    )  # fmt: skip
    assert got == 0 and "attention backend TRITON_ATTN (as named" in out


@pytest.mark.vllm
def test_the_planned_line_keeps_the_environment_that_leads_it(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = read_vllm_args("VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m --max-num-seqs 8")
    assert line.environment == (("VLLM_ATTENTION_BACKEND", "FLASHINFER"),)
    planned = line.with_flag(["-cc", '{"cudagraph_capture_sizes": [8]}'])
    assert planned.startswith("VLLM_ATTENTION_BACKEND=FLASHINFER vllm serve m --max-num-seqs 8 ")
    assert vllm_parse(shlex.split(planned)[3:]).max_num_seqs == 8


# ---- what branch coverage of serve_args.py (2026-12-06) found untested ------------------------


@pytest.mark.vllm
@pytest.mark.parametrize(
    "words, said",
    [
        ("--bogus-flag 1", "unrecognized arguments: --bogus-flag 1"),
        ("--kv-cache-dtype nope", "argument --kv-cache-dtype: invalid choice: 'nope'"),
        # a last -O without its level is vLLM's to refuse, not a level of '' in the kit's check
        ("-O", "unrecognized arguments: -O"),
    ],
)
def test_vllms_parser_error_is_said_once_in_one_line(vllm_parse, capsys, words, said):
    # vLLM's own parser refuses these words (argparse exits); the kit says its message once
    with pytest.raises(SystemExit):
        vllm_parse(["m", *words.split()])
    capsys.readouterr()
    line = f"vllm serve m {words}"
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"error: vLLM's argument parser rejects --vllm-args: {said}"), err
    assert err.count("rejects --vllm-args") == 1, err


@pytest.mark.vllm
def test_a_config_file_that_cannot_be_read_is_named_with_the_reason(capsys, tmp_path):
    missing = tmp_path / "missing.yaml"
    line = f"vllm serve m --config {missing}"
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert code == 2 and out == ""
    assert err.splitlines()[-1] == (
        f"error: --vllm-args: cannot read '{missing}': No such file or directory"
    ), err


@pytest.mark.vllm
def test_an_optimization_level_vllm_does_not_have_is_refused_by_name(capsys):
    line = "vllm serve m -O 7"
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert (code, out) == (2, "")
    assert err == "error: --vllm-args: optimization level '7' is not one of 0, 1, 2, 3\n", err


# --- what the fourth independent mutation campaign (2026-12-06) found untested -----------------


@pytest.mark.vllm
def test_the_speculative_method_is_the_configs_method_not_its_draft_model(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    words = 'm -sc \'{"method": "eagle", "model": "d", "num_speculative_tokens": 3}\''
    parsed = vllm_parse(shlex.split(words)).speculative_config
    method = read_vllm_args(f"vllm serve {words}").config.speculative_method
    assert method == parsed["method"] == "eagle"


@pytest.mark.vllm
@pytest.mark.parametrize("value", ['["ngram"]', '"ngram"', "3"])
def test_a_speculative_config_that_is_not_an_object_is_refused_by_name(value):
    # vLLM's parser takes -sc as any JSON value (json.loads): a list, a string or a number too
    from graphlab.against_vllm.serve_args import read_vllm_args
    from graphlab.errors import GraphlabError

    with pytest.raises(GraphlabError) as refused:
        read_vllm_args(f"vllm serve m -sc {shlex.quote(value)}")
    said = "--vllm-args: speculative_config must be a JSON object, got "
    assert str(refused.value) == said + value


# ---- what mutmut over serve_args.py (2026-12-06) found untested -------------------------------


@pytest.mark.parametrize("seqs, error", [("0", True), ("1", False), ("65537", True)])
def test_max_num_seqs_is_read_from_1_to_the_kits_limit(capsys, seqs, error):
    line = f"vllm serve m --max-num-seqs {seqs}"
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    if error:
        assert code == 2 and err == (
            f"error: --vllm-args: max_num_seqs must be an integer in 1..65536, got {seqs}\n"
        )
    else:
        assert code == 0 and "engine vllm-0.33.0: max_num_seqs=1 " in out, (out, err)


_PLANNED = ["-cc", '{"cudagraph_capture_sizes": [8]}']


@pytest.mark.vllm
@pytest.mark.parametrize(
    "line, kept",
    [
        # one value, as its own word or after "=": the model after it is not the flag's
        ("vllm serve --max-cudagraph-capture-size 16 m --max-num-seqs 8", "m --max-num-seqs 8"),
        ("vllm serve --max-cudagraph-capture-size=16 m --max-num-seqs 8", "m --max-num-seqs 8"),
        ("vllm serve --cudagraph-capture-sizes=4 m --max-num-seqs 8", "m --max-num-seqs 8"),
        ("vllm serve -cc.cudagraph_mode FULL m --max-num-seqs 8", "m --max-num-seqs 8"),
        (
            'vllm serve --compilation_config \'{"cudagraph_mode": "FULL"}\' m --max-num-seqs 8',
            "m --max-num-seqs 8",
        ),
        # every size up to the next flag, whose own value is kept
        ("vllm serve --cudagraph-capture-sizes 4 8 --max-num-seqs 8 m", "--max-num-seqs 8 m"),
    ],
)
def test_a_replaced_flag_takes_exactly_the_words_vllms_parser_gives_it(vllm_parse, line, kept):
    from graphlab.against_vllm.serve_args import read_vllm_args

    planned = read_vllm_args(line).with_flag(_PLANNED)
    assert planned == f"vllm serve {kept} {shlex.join(_PLANNED)}"
    given, after = vllm_parse(shlex.split(line)[2:]), vllm_parse(shlex.split(planned)[2:])
    assert (
        (after.model_tag, after.max_num_seqs) == (given.model_tag, given.max_num_seqs) == ("m", 8)
    )
    assert after.cudagraph_capture_sizes is None and after.max_cudagraph_capture_size is None
    assert after.compilation_config.cudagraph_capture_sizes == [8]


@pytest.mark.vllm
@pytest.mark.parametrize(
    "line, words",
    [
        ("python -m vllm.entrypoints.openai.api_server m --max-num-seqs 8", "m --max-num-seqs 8"),
        (
            "/usr/bin/python3.11 -m vllm.entrypoints.openai.api_server --max-num-seqs 8 m",
            "--max-num-seqs 8 m",
        ),
        (
            "VLLM_USE_V1=1 python3 -m vllm.entrypoints.openai.api_server m --max-num-seqs 8",
            "m --max-num-seqs 8",
        ),
        ("CUDA_VISIBLE_DEVICES=0 vllm serve m --max-num-seqs 8", "m --max-num-seqs 8"),
        ("m --max-num-seqs 8", "m --max-num-seqs 8"),
    ],
)
def test_the_words_after_the_entrypoint_are_what_vllms_parser_reads(vllm_parse, line, words):
    # the planned line is `vllm serve` and those words, after the line's environment words
    from graphlab.against_vllm.serve_args import read_vllm_args

    read = read_vllm_args(line)
    assert read.words == tuple(shlex.split(words))
    assert read.config.max_num_seqs == vllm_parse(shlex.split(words)).max_num_seqs == 8
    environment = line.split()[0] + " " if "=" in line.split()[0] else ""
    assert read.with_flag([]) == f"{environment}vllm serve {words}"


@pytest.mark.parametrize(
    "line, said",
    [
        (
            "python -m vllm.entrypoints.cli.main serve m",
            "a python command line must run `-m vllm.entrypoints.openai.api_server`, got "
            "'python -m vllm.entrypoints.cli.main'",
        ),
        (
            "python3 m",
            "a python command line must run `-m vllm.entrypoints.openai.api_server`, "
            "got 'python3 m'",
        ),
        ("vllm run m", "the vllm command must be `vllm serve`, got 'vllm run'"),
        ("X=1 vllm bench m", "the vllm command must be `vllm serve`, got 'vllm bench'"),
        # an error quotes a word whole up to 60 characters of its repr, then cuts it there
        (
            f"vllm serve m --max-num-seqs {'a' * 57}",
            f"--max-num-seqs {'a' * 57!r} is not an integer",
        ),
        (
            f"vllm serve m --max-num-seqs {'a' * 58}",
            f"--max-num-seqs {'a' * 58!r} is not an integer",
        ),
        (
            f"vllm serve m --max-num-seqs {'a' * 59}",
            f"--max-num-seqs '{'a' * 59}... (61 characters) is not an integer",
        ),
        # a number is named up to 20 digits, past that by its length; over 20 digits is refused
        # even where leading zeros make it small (the kit's bound keeps int() off huge words)
        ("vllm serve m --max-num-seqs " + "1" * 19, "got " + "1" * 19),
        ("vllm serve m --max-num-seqs " + "1" * 20, "got " + "1" * 20),
        ("vllm serve m --max-num-seqs " + "1" * 21, "got a number of 21 digits"),
        ("vllm serve m --max-num-seqs " + "0" * 20 + "8", "got a number of 21 digits"),
        (
            "vllm serve m --speculative-config '[1]'",
            "speculative_config must be a JSON object, got [1]",
        ),
        ("vllm serve m --speculative_config=3", "speculative_config must be a JSON object, got 3"),
        ("vllm serve m --speculative-config", "--speculative-config needs a value"),
        ("vllm serve m -sc", "-sc needs a value"),
    ],
)
def test_refusals_before_the_import_say_exactly_what_was_given(monkeypatch, capsys, line, said):
    from graphlab.against_vllm import serve_args

    def no_import(words):
        raise AssertionError("vllm imported for a line refused without it")

    monkeypatch.setattr(serve_args, "_parse", no_import)
    code, out, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
    assert (code, out) == (2, "")
    if said.startswith("got"):
        said = f"max_num_seqs must be an integer in 1..65536, {said}"
    assert err == f"error: --vllm-args: {said}\n"


@pytest.mark.vllm
def test_a_zero_padded_max_num_seqs_of_20_digits_is_read_as_vllm_reads_it(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    seqs = "0" * 19 + "8"
    line = read_vllm_args(f"vllm serve m --max-num-seqs {seqs}")
    assert line.config.max_num_seqs == vllm_parse(["m", "--max-num-seqs", seqs]).max_num_seqs == 8


@pytest.mark.vllm
def test_an_optimization_level_after_an_equals_sign_is_read_as_vllm_reads_it(vllm_parse):
    from graphlab.against_vllm.serve_args import read_vllm_args

    assert vllm_parse(["m", "-O=0"]).optimization_level == "0"
    line = read_vllm_args("vllm serve m -O=0 --max-num-seqs 8")
    assert "-O0: vLLM's default cudagraph_mode there is NONE" in line.notes
    assert line.config.cudagraph_mode == "NONE"


def test_a_line_of_the_kits_longest_is_read_and_one_character_more_refused(monkeypatch, capsys):
    from graphlab.against_vllm import serve_args

    def no_import(words):
        raise AssertionError("vllm imported for a line refused without it")

    monkeypatch.setattr(serve_args, "_parse", no_import)
    head = "vllm serve m --max-num-seqs "
    for extra, said in [(0, "is not an integer"), (1, "holds 65537 characters, more than")]:
        line = head + "a" * (serve_args.MAX_LINE_CHARS - len(head) + extra)
        code, _, err = run_main(capsys, "audit", "--engine", "vllm-0.33.0", "--vllm-args", line)
        assert code == 2 and said in err and err.count("\n") == 1, err[:200]
