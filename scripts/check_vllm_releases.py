#!/usr/bin/env python3
"""Fail loudly when the package index has a vllm release the kit has not read.

Developer script (it asks the index, so never run by the tests or at run time): lists
`pip index versions vllm`, keeps the releases from the kit's first (0.5.0) on, and compares them
with graphlab.sizing.versions.RELEASES. A release on the index and not in RELEASES is one whose
wheel nobody has read: add it to RELEASES and to a range (answered or refused with a reason),
then rerun scripts/make_sizing_vectors.py; scripts/check_release_code.py then runs the release's
own sizing code against the engine it maps to. Exit 0 when they agree, 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from graphlab.sizing.versions import RELEASES  # noqa: E402 (the checkout's package)

_AVAILABLE = re.compile(r"^Available versions:\s*(.+)$", re.MULTILINE)


def release_key(version: str) -> tuple:
    """0.6.1.post2 -> (0, 6, 1, 0, 2): numeric parts, then the post-release number."""
    main, _, post = version.partition(".post")
    return (*map(int, main.split(".")), *([0] * (4 - main.count("."))), int(post or -1))


def index_releases(pip_output: str) -> list[str]:
    """The releases `pip index versions vllm` lists, from the kit's first on, oldest first."""
    found = _AVAILABLE.search(pip_output)
    if found is None:
        raise SystemExit(f"no 'Available versions:' line in pip's output:\n{pip_output}")
    listed = [v.strip() for v in found.group(1).split(",")]
    first = release_key(RELEASES[0])
    return sorted((v for v in listed if release_key(v) >= first), key=release_key)


def differences(index: list[str]) -> list[str]:
    """One line per release the index and RELEASES disagree on (empty: they agree)."""
    lines = [f"on the index, not read by the kit: vllm {v}" for v in index if v not in RELEASES]
    lines += [f"in RELEASES, not on the index: vllm {v}" for v in RELEASES if v not in index]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--pip-output",
        type=Path,
        help="read pip's output from this file instead of asking the index",
    )
    args = parser.parse_args(argv)
    if args.pip_output is not None:
        text = args.pip_output.read_text()
    else:
        run = subprocess.run(
            [sys.executable, "-m", "pip", "index", "versions", "vllm"],
            capture_output=True,
            text=True,
            check=False,
        )
        text = run.stdout
    index = index_releases(text)
    lines = differences(index)
    if lines:
        print("\n".join(["vllm releases DISAGREE with graphlab.sizing.versions.RELEASES:", *lines]))
        return 1
    print(f"the index's {len(index)} vllm releases from {RELEASES[0]} on are all in RELEASES")
    return 0


if __name__ == "__main__":
    sys.exit(main())
