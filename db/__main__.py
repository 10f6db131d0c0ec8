"""``python -m db``: the store's command line (db.cli)."""

from db.cli import main

raise SystemExit(main())
