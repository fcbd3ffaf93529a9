"""The command line, `python -m graphlab <command>`: the top layer, which may import every layer.

`arguments` holds what the commands share (the parser, argument types, --out checks, limits),
`serve_line` and `log_option` what audit and plan share (--vllm-args and the options that deploy
a config on a model runner and attention backend, graphlab.sizing.deployment; --vllm-log);
each command is one module (`audit`, `crash_map`, `repro`, `bench`, `plan`) whose `add_parser`
registers its arguments and sets `handler` to its `run`, which takes the parsed args and returns
the exit status (plan's output is `plan_output`). Bad input raises
GraphlabError, which `main` prints on one line (exit status 2, no traceback); a closed stdout
(`| head`) ends quietly with status 141. Commands import torch only inside `run`, so audit, plan
and crash-map stay torch-free.
"""

from __future__ import annotations

import argparse
import os
import sys

from graphlab.checkout import VERSION
from graphlab.cli import audit, bench, crash_map, plan, repro
from graphlab.cli.arguments import Parser
from graphlab.errors import GraphlabError

COMMANDS = (audit, crash_map, repro, bench, plan)  # in the order `--help` lists them


def program_name(argv0: str) -> str:
    """How the user ran the kit, for usage lines: `python -m graphlab` or the console script's
    name."""
    name = os.path.basename(argv0)
    return "python -m graphlab" if name in ("__main__.py", "-c", "") else name


def build_parser(prog: str = "python -m graphlab") -> argparse.ArgumentParser:
    parser = Parser(
        prog=prog,
        description="CUDA graphs and speculative decoding: capture sizes, crashes and coverage per "
        "engine.",
        epilog=f"`{prog} COMMAND --help` shows a command's options and examples.",
    )
    parser.add_argument("--version", action="version", version=f"graphlab {VERSION}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(subparsers)
    return parser


def main(argv=None) -> int:
    try:
        args = build_parser(program_name(sys.argv[0])).parse_args(
            sys.argv[1:] if argv is None else argv
        )
        return args.handler(args)
    except GraphlabError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # bench names its finished CSVs itself
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `... | head` closed the pipe: stop quietly, as a shell tool does
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no error at exit flush
        return 141  # 128 + SIGPIPE
