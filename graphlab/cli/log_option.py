"""`--vllm-log FILE` for `audit` and `plan` (graphlab.cli.log_plan): a vLLM `--cudagraph-metrics`
log as the config and the traffic; what the log lacks comes from --vllm-args or the flags.

The log is read by graphlab.sizing.log_reader (streamed, "-" for stdin) and audited by
graphlab.sizing.log_audit; a flag that contradicts the log is an error naming both values.
"""

from __future__ import annotations

from graphlab.cli.arguments import int_in, json_text
from graphlab.cli.serve_line import read_logged
from graphlab.sizing.log_audit import audit_log

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


def run_audit(args) -> int:
    """`audit --vllm-log`: the logged rows beside the kit's dispatch (exit 0 also when they
    disagree: the disagreement is the finding, printed first)."""
    log, given, _ = read_logged(args)
    report = audit_log(log, given, args.engine)
    print(json_text("audit", report.to_dict()) if args.json else report.format_table(args.top))
    return 0
