"""`--vllm-log FILE` for `audit` and `plan`: a vLLM `--cudagraph-metrics` log as the config and the
traffic; what the log lacks comes from --vllm-args or the flags.

The log is read by graphlab.sizing.log_reader (streamed, "-" for stdin) and audited by
graphlab.sizing.log_audit; a flag that contradicts the log is an error naming both values.
"""

from __future__ import annotations

from graphlab.against_vllm.serve_args import ServeLine
from graphlab.cli.arguments import int_in, json_text
from graphlab.cli.plan_output import log_plan_text
from graphlab.cli.serve_line import deployed, read_logged
from graphlab.errors import BadInput
from graphlab.sizing.config import SizingConfig
from graphlab.sizing.engines import SizingPolicy
from graphlab.sizing.log_audit import audit_deployment, logged_deployment, logged_release
from graphlab.sizing.log_reader import VllmLog
from graphlab.sizing.planner.log_plan import log_plan_report

HELP = (
    "a vLLM log written with --cudagraph-metrics (v0.13.0 on), or a CUDAGraph Stats table pasted "
    'from one; "-" reads stdin. Its config (non-default args, the config dump, the CUDAGraph '
    "Config Settings block) fills what the flags leave out; a flag that contradicts it is an "
    "error. The log states cudagraph_mode as configured: --attention-backend, --model-runner and "
    "--device-tier deploy it as without --vllm-log"
)


# Options of the workload planner that price steps or memory, which the log planner does not read.
UNREAD = ("latency", "graph_memory", "memory_mib", "max_capture_size")


def add_option(parser) -> None:
    parser.add_argument("--vllm-log", metavar="FILE", default=None, help=HELP)
    parser.add_argument(
        "--top",
        type=int_in(1, 10**6),
        default=None,
        metavar="N",
        help="with --vllm-log: list each engine's N most frequent rows (default: every row)",
    )


def read_deployment(
    args,
) -> tuple[VllmLog, SizingPolicy, SizingConfig, tuple[str, ...], ServeLine | None]:
    """(the --vllm-log log, the engine, the config, notes, the --vllm-args line or None): the log's
    config filled by --vllm-args or the flags, under --engine or the log's release (with that
    release's rules: graphlab.sizing.log_audit.logged_release), deployed on the
    model runner and attention backend vLLM runs it on (--model-runner; --attention-backend or the
    line's, else vLLM's pick for --device-tier): the log states the configured cudagraph_mode,
    which the workers lower to what the backend supports."""
    log, given, line = read_logged(args)
    engine = None if args.engine is None else args.engine.policy
    policy, cfg, notes = logged_deployment(log, given, engine)
    version = args.engine.release if args.engine is not None else logged_release(log, policy)
    deployment = deployed(args, policy, version, cfg, line)
    return log, policy, deployment.config, notes + deployment.said, line


def run_audit(args) -> int:
    """`audit --vllm-log`: the logged rows beside the kit's dispatch (exit 0 also when they
    disagree: the disagreement is the finding, printed first)."""
    log, policy, cfg, notes, _ = read_deployment(args)
    report = audit_deployment(log, policy, cfg, notes)
    print(json_text("audit", report.to_dict()) if args.json else report.format_table(args.top))
    return 0


def run_plan(args) -> int:
    """`plan --vllm-log`: capture sizes for the logged traffic, per graph family, with the logged
    steps replayed through the kit's dispatch on the current sizes and on the plan
    (graphlab.sizing.planner.log_plan)."""
    given = [f"--{name.replace('_', '-')}" for name in UNREAD if getattr(args, name) is not None]
    if given:
        raise BadInput(
            f"--vllm-log plans padding tokens on the logged steps; it does not read {given[0]} "
            "(plan the steps with --batch-sizes to price latency or memory)"
        )
    log, policy, cfg, notes, line = read_deployment(args)
    user = None if line is None else line.compilation_config or None
    _, data = log_plan_report(log, policy, cfg, notes, user, args.max_graphs, args.eager_penalty)
    print(json_text("plan", data) if args.json else log_plan_text(data))
    return 0
