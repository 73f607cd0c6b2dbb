"""``zyx.benchmarks``' bench header: NumPy's OpenBLAS unpinned in a bench process, never in tests."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PINS = {"OPENBLAS_CORETYPE": "Haswell", "OPENBLAS_L2_SIZE": "262144"}
# A bench entry point in miniature: NumPy (so OpenBLAS) loaded first, then the header.
SCRIPT = ("import os, numpy; print('start', os.getpid()); from zyx.benchmarks import bench_header; "
          "print(bench_header()); print('left', [k for k in os.environ if k.startswith(('OPENBLAS_', '_ZYX'))])")


def _run(extra: dict[str, str], script: str = SCRIPT) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in PINS}
    env.update(extra)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120,
                          check=True)
    return done.stdout.splitlines()


def test_pins_are_dropped_by_reexecuting():
    pinned, free = _run(PINS), _run({})
    # The pinned process ran twice (the same pid: exec), the second time without the pins.
    starts = [line for line in pinned if line.startswith("start")]
    assert len(starts) == 2 and starts[0] == starts[1]
    assert "OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE=262144 dropped for this bench process" in pinned
    assert pinned[-1] == "left []"
    # ... and its BLAS is the one a process that never had them loads.
    assert [ln for ln in pinned if ln.startswith("NumPy BLAS")] == [ln for ln in free if ln.startswith("NumPy BLAS")]
    assert free[0].startswith("start") and sum(ln.startswith("start") for ln in free) == 1
    assert "OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE: not set" in free


def test_importing_the_module_keeps_the_environment():
    """Only a bench entry point (bench_header) drops them: tests and CI keep what they are given."""
    out = _run(PINS, "import os, numpy; print('start'); import zyx.benchmarks; "
                     "print(os.environ['OPENBLAS_CORETYPE'], os.environ['OPENBLAS_L2_SIZE'])")
    assert out == ["start", "Haswell 262144"]
