"""Run every zyx benchmark in one process and print markdown tables.

Usage: python bench/run.py [--quick]   (same as `python -m zyx bench`)
Numbers on a shared VM swing between runs: compare only rows taken in the same run.
The process first drops the OpenBLAS pins (``zyx.benchmarks.BLAS_PINS``, re-executing
itself) so NumPy runs at its real speed; the header names the OpenBLAS kernel that ran.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zyx.cli import main

if __name__ == "__main__":  # the bench command prints the header (dropping the OpenBLAS pins) first
    sys.exit(main(["bench", *sys.argv[1:], "--bench-dir", str(Path(__file__).resolve().parent)]))
