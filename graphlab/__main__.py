from graphlab.cli import main

raise SystemExit(main())
