import sys

try:
    from graphlab.cli import main
except KeyboardInterrupt:  # Ctrl-C while the command line loads: no traceback either
    print("interrupted", file=sys.stderr)
    raise SystemExit(130) from None

raise SystemExit(main())
