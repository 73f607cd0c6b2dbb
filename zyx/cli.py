"""``python -m zyx`` / ``zyx``: devices, doctor, demo, bench, contracts."""
from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:  # annotations only: each command imports what it uses when it runs
    import zyx


def _gib(n: int) -> str:
    return f"{n / (1 << 30):.1f} GiB"


def _status(dev: zyx.Device) -> str:
    if not dev.usable:
        return "BROKEN"
    return "simulator" if dev.simulator else "ok"


def cmd_devices(_: argparse.Namespace) -> int:
    """Print a table of every OpenCL device, whether it works, and the default."""
    import zyx
    from zyx.backend.device import usable_devices

    found = zyx.devices()
    if not found:
        print("no OpenCL device found: install `pip install 'zyx[pocl]'` (CPU) or a vendor OpenCL driver",
              file=sys.stderr)
        return 1
    usable_devices()  # probes every device at once (in parallel, cached on disk)
    try:
        default = zyx.default_device()
    except zyx.DeviceError:
        default = None
    header = ("", "device", "name", "kind", "status", "platform", "driver", "memory", "max wg", "CUs", "fp16",
              "fp64")
    rows = [header]
    for d in found:
        i = d.info
        rows.append(("*" if d is default else "", d.id, d.name, d.kind, _status(d), d.platform, i.driver_version,
                     _gib(i.global_mem_bytes), str(i.max_work_group_size), str(i.compute_units),
                     "yes" if i.has_fp16 else "emulated", "yes" if i.has_fp64 else "no"))
    widths = [max(len(r[c]) for r in rows) for c in range(len(header))]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
    for d in found:
        if not d.usable:
            print(f"\n{d.id} cannot run kernels: {d.problem}\n  fix: {d.fix}")
    if any(d.simulator for d in found):
        print("\nsimulator: runs kernels under instrumentation (very slow); never the default, use it by name")
    if default is None:
        print("\nno usable device: every device above failed its probe", file=sys.stderr)
        return 1
    print("\n* default device (override with ZYX_DEVICE=opencl:P:D or a name substring)")
    return 0


def _check(label: str, fn: Callable[[], str], fix: str, problems: list[str]) -> None:
    try:
        detail = fn()
        print(f"  ok    {label}" + (f": {detail}" if detail else ""))
    except Exception as exc:  # noqa: BLE001 - the doctor reports every failure, it never crashes
        print(f"  FAIL  {label}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
        print(f"        fix: {fix}")
        problems.append(label)


def _print_huge_pages() -> None:
    """An information line on transparent huge pages, which zyx uses for large PoCL buffers."""
    from zyx.backend import pool

    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            mode = f.read().split("[")[1].split("]")[0]
    except (OSError, IndexError):
        return
    if mode == "never":
        print("  info  transparent huge pages are off (never): large transposes on PoCL run slower; "
              "'echo madvise > /sys/kernel/mm/transparent_hugepage/enabled' turns them on")
    elif pool.HUGE_PAGE_MIN_BYTES is not None:
        print(f"  info  transparent huge pages: {mode} (PoCL buffers of {pool.HUGE_PAGE_MIN_BYTES >> 20} MiB "
              "and more use 2 MiB pages)")


def cmd_doctor(_: argparse.Namespace) -> int:
    """Check the OpenCL loader, every platform and device, templates and the cache directory."""
    problems: list[str] = []
    print("zyx doctor")

    def loader() -> str:
        import pyopencl as cl

        return f"pyopencl {cl.VERSION_TEXT}"

    _check("OpenCL loader (pyopencl)", loader, "pip install pyopencl", problems)

    def platforms() -> str:
        import pyopencl as cl

        from zyx.backend.icd import register_pip_runtimes

        vendors = register_pip_runtimes()
        if vendors is not None:
            print(f"  info  pip-installed OpenCL runtimes registered through OCL_ICD_VENDORS={vendors}")
        plats = cl.get_platforms()
        if not plats:
            raise RuntimeError("no OpenCL platform")
        return "; ".join(f"{p.name} ({p.version.strip()})" for p in plats)

    _check("OpenCL platforms", platforms,
           "pip install 'zyx[pocl]' for the CPU runtime, or install your GPU vendor's OpenCL driver", problems)

    def templates() -> str:
        from zyx.codegen.render import templates_dir

        return str(templates_dir())

    _check("kernel templates", templates, "reinstall zyx (the wheel ships zyx/templates)", problems)

    def cache() -> str:
        from zyx import settings

        path = settings.cache_dir()
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path):
            pass
        return str(path)

    _check("cache directory writable", cache,
           "set ZYX_CACHE_DIR to a writable directory (compiled kernels are cached there)", problems)

    import zyx
    from zyx.backend.device import default_candidates

    found = zyx.devices()
    for dev in found:
        verdict = dev.verdict(fresh=True)  # the doctor never trusts a stored verdict
        if not verdict.usable:
            print(f"  WARN  device {dev} cannot run kernels: {verdict.problem}\n        fix: {dev.fix}")
        elif dev.simulator:
            print(f"  info  device {dev}: a simulator (kernels run under instrumentation); "
                  "never the default, select it by name")
        else:
            print(f"  ok    device {dev}: built and ran a probe kernel")
    try:
        default = zyx.default_device()
    except zyx.DeviceError as exc:
        default = None
        print(f"  FAIL  no usable default device: {str(exc).splitlines()[0]}")
        print("        fix: pip install 'zyx[pocl]'; where that PoCL cannot build for your CPU, "
              "pip install 'zyx[intel]' or apt-get install pocl-opencl-icd; or a vendor OpenCL driver")
        problems.append("devices")
    if default is not None:
        def run_kernel(dev: zyx.Device = default) -> str:
            x = zyx.arange(1000, dtype=zyx.float32, device=dev)
            y = x.reshape(10, 100).T.contiguous().numpy()
            expected = np.arange(1000, dtype=np.float32).reshape(10, 100).T
            if not np.array_equal(y, expected):
                raise RuntimeError("a copy kernel returned wrong values")
            return f"{dev.kind}, {_gib(dev.global_mem_bytes)}, ran a zyx kernel"

        _check(f"default device {default}", run_kernel,
               "update the device's OpenCL driver; pick another device with ZYX_DEVICE", problems)
        broken = [d for d in default_candidates(found) if not d.usable]
        if broken:
            print(f"  info  {len(broken)} broken device(s) are skipped; zyx uses {default}")
    _print_huge_pages()
    print(f"\n{len(problems)} problem(s) found" if problems else "\nall checks passed")
    return 1 if problems else 0


def cmd_demo(_: argparse.Namespace) -> int:
    """A short end-to-end run on the default device, printing results and timings."""
    import zyx

    dev = zyx.default_device()
    print(f"zyx demo on {dev}")
    t0 = time.perf_counter()
    zyx.manual_seed(0)
    a = zyx.rand(512, 1024)
    b = a.T.contiguous()
    ok = np.array_equal(b.numpy(), a.numpy().T)
    t1 = time.perf_counter()
    print(f"  rand(512, 1024) and transpose copy: {'ok' if ok else 'MISMATCH'}  "
          f"({(t1 - t0) * 1e3:.1f} ms incl. compile)")
    h = a.cast(zyx.bfloat16)
    back = h.numpy().astype(np.float32)
    print(f"  float32 -> bfloat16 max abs error {np.abs(back - a.numpy()).max():.2e} (bf16 has 8 significant bits)")
    x = zyx.arange(12).reshape(3, 4)
    print(f"  arange(12).reshape(3, 4)[::-1, 1::2] =\n{x[::-1, 1::2]}")
    ok = _demo_fused_ops(zyx) and ok
    demo_extensions = _demo_extensions()
    for extend in demo_extensions:
        extend(zyx)
    stats = zyx.memory_stats()
    print(f"  kernels launched: {zyx.kernel_count()}, device memory in use: {stats['bytes_in_use']} bytes")
    return 0 if ok else 1


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    """``fn()`` realized and synchronized, with its wall time in ms (second run: compiled)."""
    import zyx

    fn()
    zyx.synchronize()
    t0 = time.perf_counter()
    out = fn()
    zyx.synchronize()
    return out, (time.perf_counter() - t0) * 1e3


def _demo_fused_ops(zyx: object) -> bool:
    """The lazy engine: fused elementwise, a fused reduce, matmul and softmax vs NumPy."""
    a, b, c = zyx.rand(1 << 20), zyx.rand(1 << 20), zyx.rand(1 << 20)
    k0 = zyx.kernel_count()
    y, ms = _timed(lambda: (a * b + c).exp().realize())
    kernels = (zyx.kernel_count() - k0) // 2
    ref = np.exp(a.numpy() * b.numpy() + c.numpy())
    ok = bool(np.allclose(y.numpy(), ref, rtol=1e-6))
    print(f"  exp(a*b+c) on 1M float32: {kernels} fused kernel(s), {ms:.2f} ms, "
          f"{'ok' if ok else 'MISMATCH'}")
    m = zyx.rand(256, 512)
    k0 = zyx.kernel_count()
    s, ms = _timed(lambda: ((m * m).sum(1) + 1).realize())
    kernels = (zyx.kernel_count() - k0) // 2
    ok_s = bool(np.allclose(s.numpy(), (m.numpy() ** 2).sum(1) + 1, rtol=1e-5))
    print(f"  (m*m).sum(1) + 1 on 256x512: {kernels} fused kernel(s), {ms:.2f} ms, {'ok' if ok_s else 'MISMATCH'}")
    p, q = zyx.rand(512, 512), zyx.rand(512, 512)
    r, ms = _timed(lambda: (p @ q).realize())
    ok_m = bool(np.allclose(r.numpy(), p.numpy() @ q.numpy(), rtol=1e-4))
    print(f"  matmul 512^3: {2 * 512**3 / ms / 1e6:.1f} GFLOP/s, {'ok' if ok_m else 'MISMATCH'}")
    x = zyx.randn(64, 1000)
    sm, ms = _timed(lambda: x.softmax(-1).realize())
    xe = np.exp(x.numpy() - x.numpy().max(-1, keepdims=True))
    ok_x = bool(np.allclose(sm.numpy(), xe / xe.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7))
    print(f"  softmax 64x1000: {ms:.2f} ms, {'ok' if ok_x else 'MISMATCH'}")
    return ok and ok_s and ok_m and ok_x


def _demo_extensions() -> list[Callable]:
    """Demo sections contributed by later layers (modules exposing ``demo(zyx)``)."""
    found = []
    for name in ("zyx.contracts.ops",):
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(mod, "demo"):
            found.append(mod.demo)
    return found


def cmd_bench(args: argparse.Namespace) -> int:
    """Run the benchmarks (foundation rows, plus bench/*.py scripts when run from a checkout)."""
    from zyx import benchmarks

    print(benchmarks.bench_header())  # may re-execute the process without the OpenBLAS pins
    import zyx

    dev = zyx.default_device()
    print(f"# zyx bench on {dev}\n")
    rows = benchmarks.foundation(dev, quick=args.quick)
    print(benchmarks.markdown_table(rows))
    bench_dir = Path(args.bench_dir) if args.bench_dir else Path(__file__).resolve().parent.parent / "bench"
    if bench_dir.is_dir():
        sys.path.insert(0, str(bench_dir))
        for script in sorted(bench_dir.glob("bench_*.py")):
            mod = importlib.import_module(script.stem)
            if hasattr(mod, "run"):
                print(f"\n## {script.stem}\n")
                print(benchmarks.markdown_table(mod.run(quick=args.quick)))
    return 0


def cmd_contracts(args: argparse.Namespace) -> int:
    """List the loaded kernel contracts (and calibrate them with --calibrate)."""
    mod = importlib.import_module("zyx.contracts")
    main = getattr(mod, "cli_main", None)
    if main is None:
        for c in mod.all_contracts():
            print(f"{c.name:24} {c.op_kind:16} {', '.join(d.name for d in c.dtypes)}")
        return 0
    return int(main(args) or 0)


def cmd_tune(args: argparse.Namespace) -> int:
    """Tune a workload and print a before/after table (or show / clear stored results)."""
    from zyx.tune import cli as tune_cli

    return tune_cli.run(args)


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
    from zyx.tune import cli as tune_cli

    tune_cli.add_arguments(p)
    p.set_defaults(fn=cmd_tune)
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


if __name__ == "__main__":
    sys.exit(main())
