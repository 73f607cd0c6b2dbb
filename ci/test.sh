#!/usr/bin/env bash
# Install zyx with its test dependencies into a fresh virtual environment and run the tests:
#   1. the full suite on the default device (a PoCL; Debian's is installed where the pip PoCL
#      cannot build for this CPU), the Oclgrind sanitizer tier included;
#   2. the device-parametrized kernel tests on every other device (Intel's CPU runtime from
#      the test extras: native cl_khr_fp16, a second CPU compiler); `--devices=others` runs only
#      the tests that take the `device` fixture (the rest would rerun step 1 on the default
#      device), and the byte kernels' word/exact-grid tests run with the default tunables only
#      (`-k`: another compiler builds the same kernel sources; step 1 runs the odd work-group and
#      narrow-vector tunings);
#   3. the kernel tests again with the GPU heuristics forced (ZYX_HEURISTICS=gpu): codegen,
#      contract kernels, reductions, tuning (local memory, work-group reductions, tiles, the GPU
#      variants of the contract kernels); not tests/contracts/spec, which needs no device;
#   (steps 1-3 run side by side; step 1 on two pytest-xdist workers: it outlasts the others)
#   4. the kernel-heavy tests once more on the default device, warm: they run from the on-disk
#      kernel caches (tests/backend/test_program.py checks that a second process builds nothing);
#      not tests/examples (step 1 runs them): their graph kernels load from the same cache as
#      tests/graph's, and warm they are mostly training and model time (6-8 s per example, see
#      the README), in a step that nothing runs beside;
#   0. first, the device-free tier: the suite in a venv with pyopencl and no OpenCL platform
#      at all (tests that need a device skip; symbolic algebra, contract parsing, cost,
#      tuning DB and the like must pass);
#   then, once the test venv is installed, ruff checks zyx, tests, bench and examples;
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
    "$venv-nodevice/bin/python" -m pytest tests -q -rfE -p no:cacheprovider --ignore=tests/sanitizer)
"$here/ci/install.sh" "$venv" test,torch pocl
. "$venv/bin/activate"
cd "$here"
echo "== ruff (the rule set in pyproject.toml) =="
python -m ruff check zyx tests bench examples
export ZYX_CACHE_DIR="${ZYX_CACHE_DIR:-$(mktemp -d)}"
# Steps 1-3 run side by side (a cold run is bound by single-threaded kernel compiles, so two
# cores do about twice the work); each writes a log, printed in order when all have ended.
# the files holding device-parametrized tests (test_elementwise.py and test_reduce.py hold none)
other_device_tests=(tests/codegen tests/kernels/contracts tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts/test_ops_api.py tests/backend
                    tests/frontend/test_casts.py tests/test_dtype.py tests/frontend/test_random.py
                    tests/frontend/test_creation.py)
gpu_heuristics_tests=(tests/codegen tests/kernels/contracts tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts/test_ops_api.py tests/frontend/test_reduce.py
                      tests/nn/test_functional.py tests/opt)
python -m zyx doctor
python -m zyx devices
logs="$(mktemp -d)"
python -m pytest tests -q -n 2 --devices=default --durations=30 >"$logs/1" 2>&1 & step1=$!
python -m pytest "${other_device_tests[@]}" -q -p no:cacheprovider --devices=others -k "not local7 and not vec2" \
    >"$logs/2" 2>&1 & step2=$!
ZYX_HEURISTICS=gpu python -m pytest "${gpu_heuristics_tests[@]}" -q -p no:cacheprovider --devices=default \
    >"$logs/3" 2>&1 & step3=$!
status=0
declare -A rc
for step in 1 2 3; do
    pid_var="step$step"
    if wait "${!pid_var}"; then rc[$step]=0; else rc[$step]=1; status=1; fi
done
for step in 1 2 3; do
    case $step in
        1) echo "== 1. full suite on the default device ==" ;;
        2) echo "== 2. kernel tests on every other device ==" ;;
        3) echo "== 3. kernel tests with the GPU heuristics (ZYX_HEURISTICS=gpu) on the default device ==" ;;
    esac
    if [ "${rc[$step]}" = 0 ]; then grep -A40 "slowest" "$logs/$step" || true; tail -n 3 "$logs/$step"; else cat "$logs/$step"; fi
done
[ "$status" = 0 ] || { echo "ci/test.sh: a test step failed (full logs in $logs)"; exit 1; }
echo "== 4. second run (warm caches) =="
python -m pytest tests/codegen tests/kernels/contracts tests/contracts tests/graph -q -p no:cacheprovider --devices=default
