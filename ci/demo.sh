#!/usr/bin/env bash
# Install zyx with PoCL into .venv (plus a working CPU runtime where the pip PoCL cannot build
# for this CPU; see ci/install.sh) and run the demo on the default device.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$here/ci/install.sh" "$here/.venv" pocl cpu
exec "$here/.venv/bin/python" -m zyx demo
