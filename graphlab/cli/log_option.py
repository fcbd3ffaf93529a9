"""`--vllm-log FILE` for `audit` and `plan` (graphlab.cli.log_plan): a vLLM `--cudagraph-metrics`
log as the config and the traffic; what the log lacks comes from --vllm-args or the flags.

The log is read by graphlab.sizing.log_reader (streamed, "-" for stdin) and audited by
graphlab.sizing.log_audit; a flag that contradicts the log is an error naming both values.
"""

from __future__ import annotations

from graphlab.against_vllm.serve_args import ServeLine, read_vllm_args
from graphlab.cli.arguments import int_in, json_text
from graphlab.errors import GraphlabError
from graphlab.sizing.log_audit import FIELDS, audit_log
from graphlab.sizing.log_reader import read_vllm_log

HELP = (
    "a vLLM log written with --cudagraph-metrics (v0.13.0 on), or a CUDAGraph Stats table pasted "
    'from one; "-" reads stdin. Its config (non-default args, the config dump, the CUDAGraph '
    "Config Settings block) fills what the flags leave out; a flag that contradicts it is an error"
)


def add_option(parser) -> None:
    parser.add_argument("--vllm-log", metavar="FILE", default=None, help=HELP)
    parser.add_argument(
        "--top",
        type=int_in(1, 10**6),
        default=None,
        metavar="N",
        help="with --vllm-log: list each engine's N most frequent rows (default: every row)",
    )


def given_values(
    options: dict, command_line: str | None, device_tier: str
) -> tuple[dict, ServeLine | None]:
    """({SizingConfig field: (value, where)} set on the command line, the ServeLine of
    --vllm-args or None): the flags among `options` (option name -> value), or the line's
    settings (read by the installed vLLM's parser) but those it leaves to vLLM's defaults."""
    flags = {
        name: (options[name], f"--{name.replace('_', '-')}")
        for name in FIELDS
        if options.get(name) is not None
    }
    if command_line is None:
        return flags, None
    if flags:
        raise GraphlabError(f"--vllm-args already sets the config; drop {', '.join(flags)}")
    line = read_vllm_args(command_line, device_tier)
    given = {
        name: (getattr(line.config, name), "--vllm-args")
        for name in FIELDS
        if getattr(line.config, name) is not None and name not in line.from_defaults
    }
    return given, line


def run_audit(args) -> int:
    """`audit --vllm-log`: the logged rows beside the kit's dispatch (exit 0 also when they
    disagree: the disagreement is the finding, printed first)."""
    given, _ = given_values(vars(args), args.vllm_args, args.device_tier)
    report = audit_log(read_vllm_log(args.vllm_log), given, args.engine)
    print(json_text("audit", report.to_dict()) if args.json else report.format_table(args.top))
    return 0
