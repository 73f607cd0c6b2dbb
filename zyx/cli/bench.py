"""``zyx bench``: the foundation benchmark rows, plus the checkout's bench/bench_*.py scripts."""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks (foundation rows, plus bench/*.py scripts when run from a checkout)."""
    from zyx import benchmarks

    print(benchmarks.bench_header())  # may re-execute the process without the OpenBLAS pins
    import zyx

    dev = zyx.default_device()
    print(f"# zyx bench on {dev}\n")
    rows = benchmarks.foundation(dev, quick=args.quick)
    print(benchmarks.markdown_table(rows))
    bench_dir = Path(args.bench_dir) if args.bench_dir else Path(__file__).resolve().parents[2] / "bench"
    if bench_dir.is_dir():
        sys.path.insert(0, str(bench_dir))
        for script in sorted(bench_dir.glob("bench_*.py")):
            mod = importlib.import_module(script.stem)
            if hasattr(mod, "run"):
                print(f"\n## {script.stem}\n")
                print(benchmarks.markdown_table(mod.run(quick=args.quick)))
    return 0
