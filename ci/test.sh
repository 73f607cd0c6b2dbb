#!/usr/bin/env bash
# Install zyx with its test dependencies into a fresh virtual environment and run the
# test suite twice (the second run exercises the on-disk kernel caches).
# Usage: ci/test.sh [venv-dir]      (default: .venv-test in the repository)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$here/.venv-test}"
python3 -m venv "$venv"
. "$venv/bin/activate"
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e "$here[test,torch]"
cd "$here"
export ZYX_CACHE_DIR="${ZYX_CACHE_DIR:-$(mktemp -d)}"
python -m zyx doctor
python -m pytest tests -q
echo "== second run (warm caches) =="
python -m pytest tests -q
