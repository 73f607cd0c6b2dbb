#!/usr/bin/env bash
# Make Mesa's rusticl usable (Debian's mesa-opencl-icd, installed as root when missing) and print the
# --devices selection of its llvmpipe device, or print nothing when it cannot be had (no root or apt, or
# the device is not usable): ci/test.sh then leaves its rusticl step out and says why.
# rusticl lists devices only with RUSTICL_ENABLE=llvmpipe, so without that variable the ICD loader, zyx's
# default device and its probes see no change; with it, llvmpipe is a CPU device that ranks after every
# PoCL (zyx's default-device rule), so only the step that sets the variable runs on it.
# Usage: ci/rusticl.sh PYTHON
set -euo pipefail
py="$1"
listed() {  # exit 0 when zyx lists a usable rusticl device
    RUSTICL_ENABLE=llvmpipe "$py" - <<'PY'
import sys
import zyx
found = [d for d in zyx.devices() if d.platform == "rusticl"]
for d in found:
    if not d.usable:
        print(f"ci/rusticl.sh: {d} cannot run kernels: {d.problem}", file=sys.stderr)
sys.exit(0 if any(d.usable for d in found) else 1)
PY
}
if ! listed; then
    if ! command -v apt-get >/dev/null || [ "$(id -u)" != 0 ]; then
        echo "ci/rusticl.sh: rusticl is not installed and installing it needs root and apt-get" >&2
        exit 0
    fi
    echo "ci/rusticl.sh: installing Mesa's rusticl (apt-get install mesa-opencl-icd)" >&2
    # a failed install leaves the step out (the caller says so), it does not end the CI run
    apt-get update -qq >&2 || { echo "ci/rusticl.sh: apt-get update failed" >&2; exit 0; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mesa-opencl-icd >/dev/null ||
        { echo "ci/rusticl.sh: apt-get install mesa-opencl-icd failed" >&2; exit 0; }
    listed >&2 || { echo "ci/rusticl.sh: no usable rusticl device after installing it" >&2; exit 0; }
fi
echo rusticl  # the platform name: --devices matches it exactly
