"""vLLM 0.34.0's five prefill / decode capture settings on a `--vllm-args` line: the installed
vLLM's parser (0.32) refuses them as unknown compilation_config fields, so the reader takes them
out of the compilation config its own FlexibleArgumentParser merged (JSON, `--compilation-config=`
and dotted `-cc.KEY` alike; the last config kept, as argparse keeps it) and feeds them to
SizingConfig; an engine before vllm-0.34.0 refuses them in one line."""

import contextlib
import json
import shlex

import pytest

from graphlab.cli import main

DECODE = "decode_cudagraph_capture_request_sizes"


@pytest.fixture(scope="module")
def merged():
    """words -> the compilation config vLLM's own FlexibleArgumentParser hands argparse (the
    last one: dotted keys merged into JSON appended after the others), before any validation."""
    pytest.importorskip("vllm")
    from graphlab.against_vllm.installed import quiet_vllm_import

    quiet_vllm_import()
    from vllm.engine.arg_utils import _expand_json_human_readable_numbers
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    class Stop(Exception):
        pass

    class Capture(FlexibleArgumentParser):
        def parse_known_args(self, args=None, namespace=None):
            self.seen = list(args)
            raise Stop

    def parse(words):
        parser = Capture()
        parser.add_argument("model")
        parser.add_argument("--compilation-config", "-cc")
        with contextlib.suppress(Stop):  # stopped before argparse validates anything
            parser.parse_args(words)
        values = []
        for i, word in enumerate(parser.seen):
            key, eq, value = word.partition("=")
            if key in ("--compilation-config", "-cc"):
                values.append(value if eq else parser.seen[i + 1])
        return json.loads(_expand_json_human_readable_numbers(values[-1])) if values else {}

    return parse


LINES = [
    'm -cc \'{"decode_cudagraph_capture_request_sizes": [1, 2, 4], "cudagraph_mode": '
    '"FULL_DECODE_ONLY"}\'',
    "m -cc.max_prefill_cudagraph_capture_tokens=2k -cc.decode_cudagraph_capture_request_sizes "
    "[1,8] -cc.max_decode_cudagraph_capture_tokens 512",
    'm --compilation-config=\'{"prefill_cudagraph_capture_token_sizes": [16, 64], '
    '"max_decode_cudagraph_capture_requests": 32}\'',
    "m --compilation_config '{\"max_decode_cudagraph_capture_tokens\": 99}' -cc "
    '\'{"cudagraph_mode": "PIECEWISE"}\'',
]


@pytest.mark.vllm
@pytest.mark.parametrize("words", LINES)
def test_the_settings_are_those_vllms_parser_merged(merged, words):
    from graphlab.against_vllm.serve_args import read_vllm_args
    from graphlab.sizing.config import SPLIT_CAPTURE_SETTINGS

    line = read_vllm_args(f"vllm serve {words}")
    vllm = merged(shlex.split(words))
    expected = {name: vllm[name] for name in SPLIT_CAPTURE_SETTINGS if name in vllm}
    got = {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in line.config.split_capture_settings.items()
    }
    assert got == expected
    assert line.compilation_config == vllm  # the planner's flag keeps them whole


@pytest.mark.vllm
def test_the_dotted_line_reads_as_written(merged):
    from graphlab.against_vllm.serve_args import read_vllm_args

    line = read_vllm_args(f"vllm serve {LINES[1]}")
    # vLLM's human_readable_int: a lower-case k is decimal
    assert line.config.max_prefill_cudagraph_capture_tokens == 2000
    assert line.config.decode_cudagraph_capture_request_sizes == (1, 8)
    assert line.config.max_decode_cudagraph_capture_tokens == 512
    # the last compilation config sets none of them: none is taken
    assert not read_vllm_args(f"vllm serve {LINES[3]}").config.split_capture_settings


@pytest.mark.vllm
def test_vllm_0_34_0_audits_and_plans_the_line(capsys):
    line = "vllm serve m --max-num-seqs 64 " + LINES[0].removeprefix("m ")
    code = main(["audit", "--vllm-version", "0.34.0", "--vllm-args", line])
    out, err = capsys.readouterr()
    assert code == 0, err
    # the decode graphs vLLM 0.34.0 keys by request count: 1, 2 and 4 requests at q 1
    assert "FULL uniform-decode graphs (3): 1, 2, 4;" in out
    code = main(["plan", "--vllm-version", "0.34.0", "--max-graphs", "3", "--vllm-args", line])
    out, err = capsys.readouterr()
    assert code == 0, err
    flag = json.loads(out.rstrip().splitlines()[-1].split("--compilation-config ", 1)[1][1:-1])
    assert flag["cudagraph_mode"] == "FULL_DECODE_ONLY" and len(flag[DECODE]) == 3


@pytest.mark.vllm
@pytest.mark.parametrize("engine", ["vllm-0.33.0", "vllm-0.20.1", "vllm-0.5.5"])
def test_engines_before_0_34_0_refuse_them_in_one_line(capsys, engine):
    code = main(["audit", "--engine", engine, "--vllm-args", f"vllm serve {LINES[0]}"])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"sets {DECODE}, which {engine} does not have" in err
    assert "0.34.0" in err


@pytest.mark.vllm
def test_a_bad_value_is_a_one_line_error(capsys):
    line = "vllm serve m -cc.max_decode_cudagraph_capture_tokens=0"
    code = main(["audit", "--vllm-version", "0.34.0", "--vllm-args", line])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "--vllm-args: max_decode_cudagraph_capture_tokens" in err
