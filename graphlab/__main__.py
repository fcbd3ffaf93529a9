import signal

from graphlab.cli import main

signal.signal(signal.SIGINT, signal.default_int_handler)  # main() reports KeyboardInterrupt itself
raise SystemExit(main())
