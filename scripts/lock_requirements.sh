#!/usr/bin/env bash
# Rewrite constraints.txt: every package a fresh `make install-dev` resolves today, at its version.
# `make install` and `make install-dev` install through it (pip -c), so a fresh clone installs what CI
# tested instead of whatever each unpinned transitive package released since. Run it (`make lock`) after
# changing requirements*.txt, or to take newer releases; then run the suite, and commit both files.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
venv=$(mktemp -d /tmp/pluie-lock.XXXXXX)
trap 'rm -rf "$venv"' EXIT
"$python" -m venv "$venv"
pip=("$venv/bin/python" -m pip install --disable-pip-version-check --progress-bar off -q)
echo "Resolving requirements-dev.txt (with requirements.txt) in a throwaway environment $venv..."
"${pip[@]}" -r requirements-dev.txt
"${pip[@]}" --no-deps -r requirements-nodeps.txt
{
  echo "# Every package a fresh install resolves, at the version the suite was last run with (pip constraints:"
  echo "# make install / install-dev pass it as -c). Written by scripts/lock_requirements.sh (make lock): do not edit"
  echo "# by hand; to change a version, change requirements*.txt and run make lock. torch is the CPU build's"
  echo "# 2.13.0 (its +cpu label dropped: == 2.13.0 matches it)."
  "$venv/bin/python" -m pip freeze --all --disable-pip-version-check --exclude-editable | grep -v "^pip==" | sed -E 's/^(torch==[0-9.]+)\+cpu$/\1/' | LC_ALL=C sort -f
} > constraints.txt
echo "constraints.txt: $(grep -vc '^#' constraints.txt) packages"
