#!/usr/bin/env bash
# Write a new Alembic revision from the difference between db/models.py and the migrations.
# Usage: scripts/new_migration.sh "what changed"
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
PY=${PYTHON:-python}
$PY - "$tmp/schema.db" "$1" <<'PY'
import sys
from alembic import command
from db.engine import alembic_config, make_engine
engine = make_engine(f"sqlite:///{sys.argv[1]}")
config = alembic_config(engine)
command.upgrade(config, "head")
command.revision(config, message=sys.argv[2], autogenerate=True)
PY
rm -rf "$tmp"
