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
#   2r. the same device-parametrized kernel tests on Mesa's rusticl (llvmpipe, installed by
#      ci/rusticl.sh; its devices exist only with RUSTICL_ENABLE=llvmpipe, which only this step
#      sets, so the default device and the other steps see no change): a third compiler front end,
#      the one AMD and Intel GPUs use on Linux, and a device without cl_khr_fp64 (float64 tests
#      skip with zyx's DTypeError as the reason) or native fp16. Driver bugs that kill the process
#      are probed and skipped with the reason (tests/conftest.py, CRASH_GAPS). Not
#      tests/kernels/contracts: rusticl 22.3 (Debian 12) hangs running the CPU tiled-transpose
#      contiguize kernel (16-lane byte shuffles), and step 2 runs those files on a second compiler;
#   3. the kernel tests again with the GPU heuristics forced (ZYX_HEURISTICS=gpu): the files whose
#      kernels take GPU-only choices (grouped reductions through local memory, row work-groups,
#      GPU matmul tiles, elementwise upcasts, scatter's GPU kernels, the GPU variants of the
#      contract kernels, tuning); not the codegen tests that fix their opts or device themselves
#      (test_vector_kernels, test_math_wide_vectors, test_stream_stores: explicit vector widths
#      and streamed stores, the same kernels whatever the heuristics; test_matmul_order: the CPU
#      loop order on described devices; test_heuristics_setting: sets the kind per test;
#      test_matmul_dot, test_matmul_padded: the CPU matmul forms and copies), which step 1 runs;
#      not tests/kernels/contracts/test_kernels_bytes.py (533 byte-exact layout cases, run by steps 1 and 2;
#      the contract kernels' GPU variants are run here by their other tests), to keep the cold run
#      under 20 minutes; not tests/contracts/spec, which needs no device;
#   (steps 1, 2, 2r and 3 run side by side; step 1 on two pytest-xdist workers, which steal each other's
#   queued tests (`--dist worksteal`) so neither idles while the other ends a queue of slow tests: it outlasts the others)
#   4. the kernel-heavy tests once more on the default device, warm: they run from the on-disk
#      kernel caches (tests/backend/test_program.py checks that a second process builds nothing);
#      not tests/examples (step 1 runs them): their graph kernels load from the same cache as
#      tests/graph's, and warm they are mostly training and model time (6-8 s per example, see
#      the README), in a step that nothing runs beside, on two pytest-xdist workers; not
#      test_kernels_bytes.py (533 layout cases that load the same contract programs as the other contract tests);
#   0. first, the device-free tier: the suite in a venv with pyopencl and no OpenCL platform
#      at all (tests that need a device skip; symbolic algebra, contract parsing, cost,
#      tuning DB and the like must pass), while the test venv installs beside it;
#   then, once the test venv is installed, ruff checks zyx, tests, bench and examples;
# Usage: ci/test.sh [venv-dir]      (default: .venv-test in the repository)
#   PoCL runs with POCL_WORK_GROUP_SPECIALIZATION=0 in every step: one compiled work-group function per kernel
#   serves every launch geometry, where PoCL's default compiles another for each new work-group size or global
#   offset (a remainder launch, a tuning candidate); the OpenCL C that zyx generates and the results the tests
#   check are the same, and a cold suite builds ~30% faster (kernel builds dominate it). Benchmarks and users
#   keep PoCL's default.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export POCL_WORK_GROUP_SPECIALIZATION="${POCL_WORK_GROUP_SPECIALIZATION:-0}"
venv="${1:-$here/.venv-test}"
device_free() {
    python3 -m venv "$venv-nodevice"
    "$venv-nodevice/bin/python" -m pip install --quiet --upgrade pip
    "$venv-nodevice/bin/python" -m pip install --quiet -e "$here" pytest
    empty_vendors="$(mktemp -d)"  # no system ICDs either
    cd "$here" && OCL_ICD_VENDORS="$empty_vendors" ZYX_CACHE_DIR="$(mktemp -d)" \
        "$venv-nodevice/bin/python" -m pytest tests -q -rfE -p no:cacheprovider --ignore=tests/sanitizer
}
step0_log="$(mktemp)"
device_free >"$step0_log" 2>&1 & step0=$!
"$here/ci/install.sh" "$venv" test,torch pocl
echo "== 0. device-free tier (no OpenCL platform) =="
wait "$step0" || { cat "$step0_log"; echo "ci/test.sh: the device-free tier failed"; exit 1; }
tail -n 3 "$step0_log"
. "$venv/bin/activate"
cd "$here"
echo "== ruff (the rule set in pyproject.toml) =="
python -m ruff check zyx tests bench examples
export ZYX_CACHE_DIR="${ZYX_CACHE_DIR:-$(mktemp -d)}"
# Steps 1-3 and 2r run side by side (a cold run is bound by single-threaded kernel compiles, so two
# cores do about twice the work); each writes a log, printed in order when all have ended.
# the files holding device-parametrized tests (test_elementwise.py and test_reduce.py hold none)
other_device_tests=(tests/codegen tests/kernels/contracts tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts/test_ops_api.py tests/backend
                    tests/frontend/test_casts.py tests/test_dtype.py tests/frontend/test_random.py
                    tests/frontend/test_creation.py)
gpu_heuristics_tests=(tests/codegen tests/kernels/contracts --ignore=tests/kernels/contracts/test_kernels_bytes.py tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts/test_ops_api.py tests/frontend/test_reduce.py
                      tests/nn/test_functional.py tests/opt)
cpu_only_codegen=(--ignore=tests/codegen/test_vector_kernels.py --ignore=tests/codegen/test_math_wide_vectors.py
                  --ignore=tests/codegen/test_stream_stores.py --ignore=tests/codegen/test_matmul_order.py
                  --ignore=tests/codegen/test_heuristics_setting.py --ignore=tests/codegen/test_matmul_dot.py
                  --ignore=tests/codegen/test_matmul_padded.py)
rusticl_tests=(tests/codegen tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts/test_ops_api.py tests/backend tests/frontend/test_casts.py tests/test_dtype.py
               tests/frontend/test_random.py tests/frontend/test_creation.py)
rusticl="$(ci/rusticl.sh "$(command -v python)")"
python -m zyx doctor
python -m zyx devices
logs="$(mktemp -d)"
python -m pytest tests -q -n 2 --dist worksteal --devices=default --durations=30 >"$logs/1" 2>&1 & step1=$!
python -m pytest "${other_device_tests[@]}" -q -p no:cacheprovider --devices=others -k "not local7 and not vec2" \
    >"$logs/2" 2>&1 & step2=$!
ZYX_HEURISTICS=gpu python -m pytest "${gpu_heuristics_tests[@]}" -q -p no:cacheprovider --devices=default \
    "${cpu_only_codegen[@]}" >"$logs/3" 2>&1 & step3=$!
if [ -n "$rusticl" ]; then
    RUSTICL_ENABLE=llvmpipe python -m pytest "${rusticl_tests[@]}" -q -rs -p no:cacheprovider --devices="$rusticl" \
        >"$logs/2r" 2>&1 & step2r=$!
else
    echo "ci/rusticl.sh found no usable rusticl (see above): step 2r is left out" >"$logs/2r"; step2r=
fi
status=0
declare -A rc
for step in 1 2 2r 3; do
    pid_var="step$step"
    if [ -z "${!pid_var}" ] || wait "${!pid_var}"; then rc[$step]=0; else rc[$step]=1; status=1; fi
done
for step in 1 2 2r 3; do
    case $step in
        1) echo "== 1. full suite on the default device ==" ;;
        2) echo "== 2. kernel tests on every other device ==" ;;
        2r) echo "== 2r. kernel tests on Mesa's rusticl (RUSTICL_ENABLE=llvmpipe) ==" ;;
        3) echo "== 3. kernel tests with the GPU heuristics (ZYX_HEURISTICS=gpu) on the default device ==" ;;
    esac
    if [ "${rc[$step]}" = 0 ]; then
        grep -A40 "slowest" "$logs/$step" || true
        [ "$step" != 2r ] || grep "^SKIPPED" "$logs/$step" || true  # what rusticl cannot do, with the reasons
        tail -n 3 "$logs/$step"
    else cat "$logs/$step"; fi
done
[ "$status" = 0 ] || { echo "ci/test.sh: a test step failed (full logs in $logs)"; exit 1; }
echo "== 4. second run (warm caches) =="
python -m pytest tests/codegen tests/kernels/contracts tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts tests/graph -q -n 2 -p no:cacheprovider --devices=default \
    --ignore=tests/kernels/contracts/test_kernels_bytes.py
