"""``python -m zyx``."""
import sys

from zyx.cli import main

if sys.argv[1:2] == ["bench"]:  # NumPy at its real speed: without the OpenBLAS pins (re-executes)
    from zyx.benchmarks import bench_header

    print(bench_header())
sys.exit(main())
