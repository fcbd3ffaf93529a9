import os
import signal
import sys


def _quiet_interrupt(signum, frame):
    # At once: an exception raised inside a C extension's import would surface as an ImportError.
    sys.stderr.write("interrupted\n")
    os._exit(130)


# Ctrl-C while the command line loads (numpy, pandas) exits 130 without a traceback: nothing is
# written yet. Once loaded, main() reports a KeyboardInterrupt itself.
signal.signal(signal.SIGINT, _quiet_interrupt)
from graphlab.cli import main  # noqa: E402 (after the Ctrl-C handler, on purpose)

signal.signal(signal.SIGINT, signal.default_int_handler)
raise SystemExit(main())
