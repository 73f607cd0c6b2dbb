"""Running a hand-built IR kernel on the default device, with a poisoned output buffer."""
from __future__ import annotations

import numpy as np

import zyx
from zyx.backend import transfer
from zyx.ir.kernel import Kernel, Opts
from zyx.kernels.ir_launch import launch_kernel

POISON = 0xA5  # every output byte starts as this, so an element the kernel skips is caught


def run_kernel(k: Kernel, opts: Opts, *inputs: np.ndarray) -> np.ndarray:
    """Launch ``k`` with ``opts`` on ``inputs`` and return its output as a NumPy array."""
    dev = zyx.default_device()
    ins = [transfer.upload(dev, np.ascontiguousarray(a)) for a in inputs]
    nbytes = int(np.prod(k.out_shape)) * k.out_dtype.itemsize
    out = transfer.upload(dev, np.full(nbytes, POISON, dtype=np.uint8))
    launch_kernel(dev, k, opts, [out.cl] + [b.cl for b in ins])
    return transfer.read(out, nbytes).view(k.out_dtype.numpy).reshape(k.out_shape)
