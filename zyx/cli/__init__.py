"""``python -m zyx`` / ``zyx``: the parser and ``main``; each subcommand group lives in its own module
(``devices``: devices and doctor, ``demo``, ``bench``, ``tune``)."""
from __future__ import annotations

import argparse
import os
import sys

from zyx.cli import tune
from zyx.cli.bench import cmd_bench
from zyx.cli.demo import cmd_demo
from zyx.cli.devices import cmd_devices, cmd_doctor


def cmd_contracts(args: argparse.Namespace) -> int:
    """List the loaded kernel contracts (and calibrate them with --calibrate)."""
    from zyx.contracts import listing

    return int(listing.cli_main(args) or 0)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``zyx`` command."""
    parser = argparse.ArgumentParser(prog="zyx", description="zyx: lazy tensors fused into OpenCL kernels")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("devices", help="list OpenCL devices").set_defaults(fn=cmd_devices)
    sub.add_parser("doctor", help="check the OpenCL setup and print fixes").set_defaults(fn=cmd_doctor)
    sub.add_parser("demo", help="run a short end-to-end demo").set_defaults(fn=cmd_demo)
    p = sub.add_parser("bench", help="run the benchmarks")
    p.add_argument("--quick", action="store_true", help="small sizes, for a fast check")
    p.add_argument("--bench-dir", default=os.environ.get("ZYX_BENCH_DIR"), help=argparse.SUPPRESS)
    p.set_defaults(fn=cmd_bench)
    p = sub.add_parser("tune", help="autotune kernels on this device (a script or the built-in set)")
    tune.add_arguments(p)
    p.set_defaults(fn=tune.cmd_tune)
    p = sub.add_parser("contracts", help="list kernel contracts, with costs")
    p.add_argument("--calibrate", action="store_true", help="measure each contract kernel on the device")
    p.set_defaults(fn=cmd_contracts)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``python -m zyx`` and the ``zyx`` command."""
    args = build_parser().parse_args(argv)
    from zyx.errors import ZyxError

    try:
        return int(args.fn(args) or 0)
    except ZyxError as exc:
        print(f"zyx: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
