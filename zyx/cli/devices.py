"""``zyx devices`` and ``zyx doctor``: which OpenCL devices there are, whether they work, and fixes."""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
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
        from zyx.backend.pocl_env import pin_pocl_workers

        vendors = register_pip_runtimes()
        if vendors is not None:
            print(f"  info  pip-installed OpenCL runtimes registered through OCL_ICD_VENDORS={vendors}")
        pin_pocl_workers()  # as device discovery does (it may have run already)
        if os.environ.get("POCL_AFFINITY") == "1":
            print("  info  PoCL's worker threads are pinned one per CPU (POCL_AFFINITY=1; POCL_AFFINITY=0 opts out)")
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
