"""Probing a device: can it build and run a trivial kernel?

Some OpenCL implementations list a device that cannot compile anything (PoCL 3.0 from pip,
whose LLVM 14 rejects the CPU of an AMD Zen 5: ``unknown target CPU 'generic'``), or that builds
trivial kernels but aborts the process on the wide-vector code zyx generates (the same PoCL on an
AMD Zen 4: ``LLVM ERROR: Cannot select ... X86ISD::FILD`` when it vectorizes a work-group of
float16 bit tricks). A device becomes the default only after a probe built and ran both a trivial
kernel and such a vector kernel on it and read the right values back. The probe runs in a
child process, so a driver that crashes takes only the child with
it, and its verdict is cached on disk per device + driver (a second process starts nothing).

The child runs ``main([P, D, signature], devices)``: it probes device ``D`` of platform ``P``
(checked against the device's signature, among ``backend.device.devices()``) and prints the verdict
as one JSON line.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from zyx.backend.cl_device import ClDevice

# Bumped when the probe kernel or the verdict format changes: old verdicts are then ignored.
PROBE_VERSION = "2"
PROBE_TIMEOUT_S = 300.0
_ITEMS = 1000

_SOURCE = """
__kernel void zyx_probe(__global float *zyx_out, const float zyx_scale) {
    const size_t zyx_i = get_global_id(0);
    zyx_out[zyx_i] = (float)zyx_i * zyx_scale + 1.0f;
}

/* the shape of zyx's generated math: 16-wide vectors, bit casts, integer shifts converted back
   to float, selects on vector compares, in work-groups the compiler vectorizes */
__kernel void zyx_probe_vector(__global float *zyx_out, __global const float *zyx_in, const float zyx_scale) {
    const int zyx_i = get_global_id(0);
    const float16 x = *(__global const float16 *)(zyx_in + zyx_i * 16);
    const int16 bits = as_int16(x) - 0x3f3504f3;
    const float16 e = convert_float16(bits >> 23);
    const float16 f = as_float16((bits & 0x007fffff) + 0x3f3504f3) - 1.0f;
    const float16 y = (e + f * (1.4426950f - 0.7213475f * f)) * (float16)(zyx_scale);
    *(__global float16 *)(zyx_out + zyx_i * 16) = x > (float16)(zyx_scale) ? x : y / (x + 1.0f);
}
"""
_VECTOR_GROUPS, _VECTOR_LOCAL = 4, 16


def _vector_expected(x: Any, scale: float) -> Any:
    """What ``zyx_probe_vector`` computes, in NumPy float32."""
    import numpy as np

    bits = x.view(np.int32) - np.int32(0x3F3504F3)
    e = (bits >> 23).astype(np.float32)
    f = ((bits & 0x007FFFFF) + np.int32(0x3F3504F3)).view(np.float32) - np.float32(1.0)
    y = (e + f * (np.float32(1.4426950) - np.float32(0.7213475) * f)) * np.float32(scale)
    return np.where(x > np.float32(scale), x, y / (x + np.float32(1.0)))


@dataclass(frozen=True)
class Verdict:
    """Whether a device works, and if not, the first line of what went wrong."""

    usable: bool
    problem: str = ""


def _first_error_line(text: str) -> str:
    """The most telling line of a build log or error text: the first naming an error."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        if "error" in ln.lower():
            return ln
    return lines[0] if lines else "unknown failure"


def _crash_line(text: str) -> str:
    """What a crashed child said last: drivers print the reason just before they abort (LLVM's own
    ``LLVM ERROR: ...`` line, when there is one, is the reason)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and "Warning:" not in ln]
    errors = [ln for ln in lines if "LLVM ERROR" in ln]
    if errors:
        return errors[-1]
    return lines[-1] if lines else _first_error_line(text)


def run_probe(platform_index: int, device_index: int) -> Verdict:
    """Build and run the probe kernel on one device, in this process."""
    import numpy as np
    import pyopencl as cl

    try:
        cl_device = cl.get_platforms()[platform_index].get_devices()[device_index]
        ctx = cl.Context([cl_device])
        queue = cl.CommandQueue(ctx)
    except Exception as exc:  # noqa: BLE001 - any failure to set up is the verdict
        return Verdict(False, f"cannot create a context: {_first_error_line(str(exc))}")
    prg = cl.Program(ctx, _SOURCE)
    with warnings.catch_warnings():  # compiler chatter is not the verdict; the error line is
        warnings.simplefilter("ignore")
        try:
            prg.build(cache_dir=False)
        except Exception as exc:  # noqa: BLE001 - a failed build is the verdict, with its log
            try:
                log = prg.get_build_info(cl_device, cl.program_build_info.LOG)
            except Exception:  # noqa: BLE001 - no log: the exception text must do
                log = ""
            return Verdict(False, f"cannot build a kernel: {_first_error_line(log or str(exc))}")
    try:
        out = np.full(_ITEMS, np.nan, dtype=np.float32)
        buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, out.nbytes)
        prg.zyx_probe(queue, (_ITEMS,), None, buf, np.float32(3.0))
        cl.enqueue_copy(queue, out, buf)
        queue.finish()
    except Exception as exc:  # noqa: BLE001 - a failed launch is the verdict
        return Verdict(False, f"cannot run a kernel: {_first_error_line(str(exc))}")
    expected = np.arange(_ITEMS, dtype=np.float32) * np.float32(3.0) + np.float32(1.0)
    if not np.array_equal(out, expected):
        return Verdict(False, "a trivial kernel returned wrong values")
    try:  # a compiler that aborts here takes the probe's child process with it: that is the verdict
        n = _VECTOR_GROUPS * _VECTOR_LOCAL * 16
        x = np.random.default_rng(0).uniform(0.25, 8.0, n).astype(np.float32)
        src = cl.Buffer(ctx, cl.mem_flags.READ_ONLY | cl.mem_flags.COPY_HOST_PTR, hostbuf=x)
        vec_out = np.full(n, np.nan, dtype=np.float32)
        vec_buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE, vec_out.nbytes)
        prg.zyx_probe_vector(queue, (n // 16,), (_VECTOR_LOCAL,), vec_buf, src, np.float32(4.0))
        cl.enqueue_copy(queue, vec_out, vec_buf)
        queue.finish()
    except Exception as exc:  # noqa: BLE001 - a failed launch is the verdict
        return Verdict(False, f"cannot run a vector kernel: {_first_error_line(str(exc))}")
    if not np.allclose(vec_out, _vector_expected(x, 4.0), rtol=1e-5, atol=1e-6):
        return Verdict(False, "a vector kernel returned wrong values")
    return Verdict(True)


def _cache_path(device: ClDevice) -> Path:
    from zyx import settings
    from zyx.backend.program import ZYX_VERSION

    key = hashlib.sha256(f"{device.info.signature}|{ZYX_VERSION}|{PROBE_VERSION}".encode()).hexdigest()
    return settings.cache_dir() / "probes" / f"{key[:32]}.json"


def _read_cached(device: ClDevice) -> Verdict | None:
    """A stored verdict, or None when absent or unreadable (a bad entry is never fatal)."""
    try:
        data = json.loads(_cache_path(device).read_text())
        return Verdict(bool(data["usable"]), str(data.get("problem", "")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _store(device: ClDevice, verdict: Verdict) -> None:
    path = _cache_path(device)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(json.dumps({"usable": verdict.usable, "problem": verdict.problem,
                                   "device": device.info.signature}))
        os.replace(tmp, path)
    except OSError:
        pass  # an unwritable cache only means probing again next time


def _start_child(device: ClDevice) -> subprocess.Popen:
    # PoCL's own kernel cache off: an entry left by a compiler that aborted makes the next probe
    # abort elsewhere, without the compiler's reason
    env = {**os.environ, "POCL_KERNEL_CACHE": "0"}
    return subprocess.Popen(
        # -c, not -m: runpy warns when the package (which imports this module) is loaded first
        [sys.executable, "-c", "import sys; from zyx.backend.device import devices; "
         "from zyx.backend.probe import main; sys.exit(main(sys.argv[1:], devices))",
         str(device.platform_index), str(device.device_index), device.info.signature],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _collect(child: subprocess.Popen) -> Verdict:
    try:
        out, err = child.communicate(timeout=PROBE_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return Verdict(False, f"the probe kernel did not finish within {PROBE_TIMEOUT_S:.0f} s")
    for line in reversed(out.splitlines()):
        try:
            data = json.loads(line)
            return Verdict(bool(data["usable"]), str(data.get("problem", "")))
        except (ValueError, KeyError, TypeError):
            continue
    code = child.returncode
    how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
    detail = _crash_line(err) if err.strip() else "no output"
    return Verdict(False, f"the probe process {how} ({detail})")


def probe_devices(devices: list[ClDevice], fresh: bool = False) -> dict[str, Verdict]:
    """Verdicts for ``devices`` by id: from the disk cache, else probed in parallel children.

    ``fresh=True`` ignores (and replaces) stored verdicts.
    """
    verdicts: dict[str, Verdict] = {}
    children: dict[str, tuple[ClDevice, subprocess.Popen]] = {}
    for dev in devices:
        cached = None if fresh else _read_cached(dev)
        if cached is not None:
            verdicts[dev.id] = cached
        else:
            children[dev.id] = (dev, _start_child(dev))
    for dev_id, (dev, child) in children.items():
        verdict = _collect(child)
        verdicts[dev_id] = verdict
        # a crash may be transient (ask again next time), unless the compiler said why it aborted
        if not verdict.problem.startswith("the probe process") or "LLVM ERROR" in verdict.problem:
            _store(dev, verdict)
    return verdicts


def main(argv: list[str], devices: Callable[[], list[ClDevice]]) -> int:
    """Probe the device given as ``P D signature``, found among ``devices()`` (discovery sits above this
    module); print the verdict as one JSON line."""
    platform_index, device_index, signature = int(argv[0]), int(argv[1]), argv[2]

    # The same device by its signature: the indices are only a hint (a loader that ran before
    # zyx registered pip runtimes numbers platforms differently).
    match = sorted((d for d in devices() if d.info.signature == signature),
                   key=lambda d: (d.platform_index, d.device_index) != (platform_index, device_index))
    if not match:
        verdict = Verdict(False, "the probe process does not see this device")
    else:
        verdict = run_probe(match[0].platform_index, match[0].device_index)
    print(json.dumps({"usable": verdict.usable, "problem": verdict.problem}), flush=True)
    return 0
