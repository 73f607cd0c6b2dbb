"""``zyx bench``: the foundation benchmark rows, plus the checkout's bench/bench_*.py scripts."""
from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks (foundation rows, plus the ``run(quick)`` of each bench/bench_*.py script when run
    from a checkout); exit status 1 when a script failed (the others still run)."""
    from zyx import benchmarks

    print(benchmarks.bench_header())  # may re-execute the process without the OpenBLAS pins
    import zyx

    dev = zyx.default_device()
    print(f"# zyx bench on {dev}\n")
    rows = benchmarks.foundation(dev, quick=args.quick)
    print(benchmarks.markdown_table(rows))
    bench_dir = Path(args.bench_dir) if args.bench_dir else Path(__file__).resolve().parents[2] / "bench"
    failed = []
    if bench_dir.is_dir():
        sys.path.insert(0, str(bench_dir))
        for script in sorted(bench_dir.glob("bench_*.py")):
            try:  # one script's failure (a missing optional package, a bug) still leaves the others' tables
                mod = importlib.import_module(script.stem)
                if not hasattr(mod, "run"):  # a diagnostic script, run on its own
                    continue
                table = benchmarks.markdown_table(mod.run(quick=args.quick))
                print(f"\n## {script.stem}\n\n{table}", flush=True)
            except Exception as exc:  # noqa: BLE001 - reported, and the exit status says so
                failed.append(script.stem)
                print(f"{script.stem} failed: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    print(f"\nEnded {benchmarks.machine_line()}")
    if failed:
        print(f"zyx bench: {len(failed)} script(s) failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
