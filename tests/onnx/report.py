"""Pass counts of ONNX's backend node cases on zyx.onnx and on onnxruntime (CPU), per operator.

    python tests/onnx/report.py [--no-ort] [--write] [-k SUBSTRING]

Runs every tensor-typed case (``node_cases.py``); prints one line per operator (cases, zyx passes,
onnxruntime passes) and each zyx failure with its reason, then the totals. ``--write`` records the
cases zyx refuses (NotImplementedError) and the ones it fails into ``node_expectations.json``, which
``test_node_cases.py`` holds zyx to.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import node_cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-ort", action="store_true", help="skip onnxruntime")
    parser.add_argument("--write", action="store_true", help="record the expectations file")
    parser.add_argument("-k", default="", help="only the cases whose name contains this")
    args = parser.parse_args()
    cases = {name: case for name, case in node_cases.all_cases().items()
             if node_cases.tensor_typed(case) and args.k in name}
    rows: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    failures: dict[str, dict[str, str]] = {"unsupported": {}, "failing": {}}
    start = time.perf_counter()
    zyx_time = 0.0
    for name, case in sorted(cases.items()):
        op = node_cases.operator(case)
        t = time.perf_counter()
        mine = node_cases.outcome(node_cases.run_zyx, case)
        zyx_time += time.perf_counter() - t
        rows[op][0] += 1
        rows[op][1] += mine.result == "pass"
        if not args.no_ort:
            rows[op][2] += node_cases.outcome(node_cases.run_onnxruntime, case).result == "pass"
        if mine.result == "unsupported":
            failures["unsupported"][name] = mine.reason
        elif mine.result != "pass":
            failures["failing"][name] = f"{mine.result}: {mine.reason}"
            print(f"  {name} ({op}): {mine.result}: {mine.reason}", flush=True)
    print(f"\n{'operator':40s} {'cases':>5s} {'zyx':>5s} {'ort':>5s}")
    for op, (n, ok, ort) in sorted(rows.items()):
        print(f"{op:40s} {n:5d} {ok:5d} {'-' if args.no_ort else ort:>5}")
    total = len(cases)
    passed = sum(r[1] for r in rows.values())
    ort_passed = sum(r[2] for r in rows.values())
    print(f"\n{total} tensor-typed cases: zyx passes {passed} ({100 * passed / max(total, 1):.1f}%), refuses "
          f"{len(failures['unsupported'])}, fails {len(failures['failing'])}"
          + ("" if args.no_ort else f"; onnxruntime passes {ort_passed} ({100 * ort_passed / max(total, 1):.1f}%)"))
    print(f"zyx time {zyx_time:.0f} s, total {time.perf_counter() - start:.0f} s")
    if args.write:
        node_cases.EXPECTATIONS.write_text(json.dumps(failures, indent=1, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
