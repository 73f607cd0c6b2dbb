#!/usr/bin/env bash
# Install zyx with its test dependencies into a fresh virtual environment and run the tests:
#   1. the full suite on the default device (a PoCL; Debian's is installed where the pip PoCL
#      cannot build for this CPU), the Oclgrind sanitizer tier included;
#   2. the device-parametrized kernel tests on every other device (Intel's CPU runtime from
#      the test extras: native cl_khr_fp16, a second CPU compiler);
#   3. the kernel tests again with the GPU heuristics forced (ZYX_HEURISTICS=gpu);
#   4. the suite once more on the default device: it must hit the on-disk kernel caches.
#   0. first, the device-free tier: the suite in a venv with pyopencl and no OpenCL platform
#      at all (tests that need a device skip; symbolic algebra, contract parsing, cost,
#      tuning DB and the like must pass);
# Usage: ci/test.sh [venv-dir]      (default: .venv-test in the repository)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${1:-$here/.venv-test}"
echo "== 0. device-free tier (no OpenCL platform) =="
python3 -m venv "$venv-nodevice"
"$venv-nodevice/bin/python" -m pip install --quiet --upgrade pip
"$venv-nodevice/bin/python" -m pip install --quiet -e "$here" pytest
empty_vendors="$(mktemp -d)"  # no system ICDs either
(cd "$here" && OCL_ICD_VENDORS="$empty_vendors" ZYX_CACHE_DIR="$(mktemp -d)" \
    "$venv-nodevice/bin/python" -m pytest tests -q -p no:cacheprovider --ignore=tests/sanitizer)
"$here/ci/install.sh" "$venv" test,torch pocl
. "$venv/bin/activate"
cd "$here"
export ZYX_CACHE_DIR="${ZYX_CACHE_DIR:-$(mktemp -d)}"
# Device-parametrized tests of the kernels themselves (run on every device and heuristics mode).
kernel_tests=(tests/codegen tests/contracts tests/ir tests/backend tests/test_elementwise.py
              tests/test_reduce.py tests/test_casts.py tests/test_dtype.py tests/test_lazy.py
              tests/test_random.py tests/test_creation.py tests/test_tensor_basics.py)
python -m zyx doctor
python -m zyx devices
echo "== 1. full suite on the default device =="
python -m pytest tests -q --devices=default
echo "== 2. kernel tests on every other device =="
python -m pytest "${kernel_tests[@]}" -q --devices=others
echo "== 3. kernel tests with the GPU heuristics on the default device =="
ZYX_HEURISTICS=gpu python -m pytest "${kernel_tests[@]}" -q --devices=default
echo "== 4. second run (warm caches) =="
python -m pytest tests -q --devices=default --ignore=tests/sanitizer
