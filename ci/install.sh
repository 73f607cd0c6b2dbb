#!/usr/bin/env bash
# Create (or reuse) a virtual environment, install zyx with the given extras, and make sure
# it has a usable CPU OpenCL device.
# Usage: ci/install.sh VENV EXTRAS [need]
#   EXTRAS  pip extras, e.g. "pocl" or "test,torch"
#   need    "cpu" (default): any CPU device that builds and runs a kernel;
#           "pocl": a working PoCL (the suite's main device in CI)
# The pip PoCL (LLVM 14) builds nothing on CPUs its LLVM does not know (AMD Zen 5). When the
# need is not met, this installs Debian's PoCL (apt-get, as root) or, without root or apt,
# Intel's CPU runtime from PyPI, and says so.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$1"; extras="$2"; need="${3:-cpu}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install --quiet --upgrade pip
"$py" -m pip install --quiet -e "$here[$extras]"

has_device() {  # exit 0 when a device meeting the need builds and runs the probe kernel
    "$py" - "$need" <<'PY'
import sys
import zyx
from zyx.backend.device import default_candidates
need = sys.argv[1]
found = default_candidates(zyx.devices())
for d in found:
    d.verdict(fresh=True)  # a stored verdict may predate a broken or repaired install
ok = [d for d in found if d.kind == "cpu" and d.usable
      and (need != "pocl" or "pocl" in d.info.platform_version.lower())]
for d in found:
    if not d.usable:
        print(f"ci/install.sh: {d} cannot run kernels: {d.problem}")
sys.exit(0 if ok else 1)
PY
}

if has_device; then
    exit 0
fi
if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    echo "ci/install.sh: no usable ${need} device; installing Debian's PoCL (apt-get install pocl-opencl-icd)"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pocl-opencl-icd >/dev/null
elif [ "$need" = cpu ]; then
    echo "ci/install.sh: no usable CPU device and no root for apt-get; installing Intel's CPU runtime (zyx[intel])"
    "$py" -m pip install --quiet -e "$here[$extras,intel]"
fi
if ! has_device; then
    echo "ci/install.sh: still no usable ${need} device; see 'python -m zyx doctor'" >&2
    exit 1
fi
echo "ci/install.sh: a usable ${need} device is now installed"
