#!/usr/bin/env bash
# The check to run whenever a machine with an NVIDIA GPU is lent (no internet, a copy of the working
# tree, a system python3 with numpy/pytest but no zyx dependencies of its own): registers NVIDIA's
# OpenCL ICD when the loader does not list it, then, each part under its own timeout (about 8 minutes
# in all): `python -m zyx doctor`, the kernel test files that hold the device-parametrized tests
# (every test in them on the GPU: it is the default device there), and `bench/run.py --quick`.
# Writes a report (what ran, exit status and time of each part, the pass/fail counts, the failures,
# the bench tables) to $OUT/gpu-report.md when OUT is set, else to the given path, with each part's
# full log beside it.
# Usage: ci/gpu.sh [report-path]      (default: ./gpu-report.md)
#        ci/gpu.sh --wheels           (on a machine with internet: download into .whl/ the wheels of zyx's
#                                      dependencies the GPU machine's Python 3.12 lacks; carry .whl there)
# CPU dry run: ZYX_DEVICE=pthread-skylake ci/gpu.sh /tmp/gpu-report.md   (PoCL; the ICD registration is skipped
#              when no NVIDIA library exists, and the report says so)
# Environment: ZYX_DEVICE (default: nvidia), ZYX_PYTHON (default: .venv-test's, else python3),
# GPU_SH_WORKERS (pytest-xdist workers for the tests, default 8); GPU_SH_TEST_TIMEOUT and GPU_SH_BENCH_TIMEOUT
# (seconds, default 240 and 150: a dry run on a small CPU machine needs more).
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$here"
# zyx's dependencies missing from the GPU machine's image (its package list: numpy, ml-dtypes, pyyaml,
# pytest and pytest-xdist are there); pyopencl's manylinux wheel brings its own ICD loader
wheels=(pyopencl pytools siphash24 mako platformdirs)

if [ "${1:-}" = --wheels ]; then
    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
        --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
        --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${wheels[@]}"
    exit
fi

if [ -n "${OUT:-}" ]; then report="$OUT/gpu-report.md"; else report="$(realpath -m "${1:-gpu-report.md}")"; fi
logs="$(dirname "$report")"
mkdir -p "$logs"
device="${ZYX_DEVICE:-nvidia}"
export ZYX_DEVICE="$device" ZYX_CACHE_DIR="${ZYX_CACHE_DIR:-$(mktemp -d)}" PYTHONUNBUFFERED=1
export PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}"
status=0
note() { echo "$*" | tee -a "$report"; }
: >"$report"
note "# ci/gpu.sh report"
note ""
note "- date: $(date -u '+%Y-%m-%d %H:%M UTC'), host: $(hostname), commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
command -v nvidia-smi >/dev/null && note "- GPU: $(nvidia-smi -L 2>/dev/null | head -n 1), driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)"

py="${ZYX_PYTHON:-}"
if [ -z "$py" ]; then if [ -x .venv-test/bin/python ]; then py=.venv-test/bin/python; else py=python3; fi; fi
missing() { ! "$py" -c "import pyopencl, mako, platformdirs, ml_dtypes, yaml, numpy, pytest" 2>/dev/null; }
if missing && compgen -G ".whl/*.whl" >/dev/null; then
    site="$(mktemp -d)"
    "$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl
    export PYTHONPATH="$PYTHONPATH:$site"
    note "- Python packages: installed from .whl/ into $site"
fi
if missing; then
    note "- FAILED: $py lacks zyx's dependencies (pyopencl, mako, platformdirs, ml_dtypes, pyyaml, numpy, pytest);"
    note "  run \`ci/gpu.sh --wheels\` where pip reaches PyPI and carry .whl/"
    exit 1
fi
note "- Python: $("$py" -c 'import sys; print(sys.version.split()[0], sys.executable)'), ZYX_DEVICE=$device"

# NVIDIA's ICD: registered through a private vendors folder (the system's own files copied beside it)
# when the loader lists no NVIDIA platform; the driver's folder may be a read-only mount.
if "$py" -c "import pyopencl as cl, sys; sys.exit(not any('nvidia' in p.name.lower() for p in cl.get_platforms()))" 2>/dev/null; then
    note "- OpenCL ICD: the loader already lists NVIDIA's platform"
else
    lib="$( (ldconfig -p 2>/dev/null | awk '/libnvidia-opencl\.so\.1/ {print $NF; exit}'); \
            ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/local/nvidia/lib/libnvidia-opencl.so.1 \
               /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 /usr/lib64/libnvidia-opencl.so.1 2>/dev/null | head -n 1)"
    lib="$(echo "$lib" | head -n 1)"
    if [ -n "$lib" ]; then
        vendors="$(mktemp -d)"
        cp /etc/OpenCL/vendors/*.icd "$vendors/" 2>/dev/null || true
        echo "$lib" >"$vendors/nvidia.icd"
        export OCL_ICD_VENDORS="$vendors" LD_LIBRARY_PATH="$(dirname "$lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
        note "- OpenCL ICD: registered $lib (OCL_ICD_VENDORS=$vendors)"
    else
        note "- OpenCL ICD: no libnvidia-opencl.so.1 on this machine; registration skipped (a CPU dry run)"
    fi
fi

# run NAME SECONDS CMD...: one part under its own timeout, its log beside the report
run() {
    local name="$1" limit="$2" start rc
    shift 2
    start=$(date +%s)
    timeout -k 10 "$limit" "$@" >"$logs/gpu-$name.log" 2>&1
    rc=$?
    [ "$rc" = 0 ] || status=1
    local verdict="ok"
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then verdict="TIMED OUT after ${limit} s"
    elif [ "$rc" != 0 ]; then verdict="FAILED (exit $rc)"; fi
    note ""
    note "## $name: $verdict, $(( $(date +%s) - start )) s"
    note ""
    note "\`$*\`"
    return 0
}

run doctor 60 "$py" -m zyx doctor
note ""
note '```'
tail -n 25 "$logs/gpu-doctor.log" | tee -a "$report"
note '```'

# the files holding device-parametrized tests (ci/test.sh's other-device step runs the same list)
tests=(tests/codegen tests/kernels/contracts tests/kernels/test_random_bits.py tests/kernels/test_scatter_*.py tests/contracts/test_ops_api.py tests/backend tests/frontend/test_casts.py
       tests/test_dtype.py tests/frontend/test_random.py tests/frontend/test_creation.py)
xdist=()
"$py" -c "import xdist" 2>/dev/null && xdist=(-n "${GPU_SH_WORKERS:-8}")
run tests "${GPU_SH_TEST_TIMEOUT:-240}" "$py" -m pytest "${tests[@]}" -q -rfE -p no:cacheprovider --devices=default "${xdist[@]}"
note ""
note '```'
{ grep -E "^(FAILED|ERROR) " "$logs/gpu-tests.log" | head -n 40; tail -n 1 "$logs/gpu-tests.log"; } | tee -a "$report"
note '```'

run bench "${GPU_SH_BENCH_TIMEOUT:-150}" "$py" bench/run.py --quick
note ""
cat "$logs/gpu-bench.log" >>"$report"

note ""
note "ci/gpu.sh: $([ $status = 0 ] && echo 'every part passed' || echo 'a part failed or timed out'); report: $report"
exit $status
