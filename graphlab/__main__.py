import contextlib
import os
import signal
import sys
from pathlib import Path


def _quiet_interrupt(signum, frame):
    # At once: an exception raised inside a C extension's import would surface as an ImportError.
    sys.stderr.write("interrupted\n")
    os._exit(130)


def _descendants(pid: int) -> list[int]:
    """pid's child processes and theirs, from Linux's /proc (none where it has no such files)."""
    found = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):  # a thread or process that ended meanwhile
            for child in map(int, children.read_text().split()):
                found += [child, *_descendants(child)]
    return found


def run() -> None:
    """The command line: `python -m graphlab` and the `graphlab` script."""
    # Ctrl-C while the command line loads (numpy, pandas) exits 130 without a traceback: nothing
    # is written yet. Once loaded, main() reports a KeyboardInterrupt itself.
    signal.signal(signal.SIGINT, _quiet_interrupt)
    from graphlab.cli import main

    signal.signal(signal.SIGINT, signal.default_int_handler)
    code = main()
    if code == 130:
        # An interrupt sent to this process alone leaves inductor's compiler jobs running, and
        # the exit joins their threads: stop them, as Ctrl-C at a terminal stops its whole group.
        for pid in _descendants(os.getpid()):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGTERM)
    raise SystemExit(code)


if __name__ == "__main__":
    run()
