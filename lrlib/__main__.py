from lrlib.cli import main

raise SystemExit(main())
