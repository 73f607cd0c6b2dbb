"""The foundation's generated kernels: strided copy/cast, fill and counter-based random.

Each renders its Mako template with a small explicit parameter set, builds it once per
device (backend.program caches) and launches it asynchronously on the device queue.
"""
from __future__ import annotations

import numpy as np

from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import UINT_OF_SIZE, DType, index_type
from zyx.ir.view import View

DEFAULT_LOCAL_SIZE = 256


def launch_1d(device: Device, source: str, name: str, n: int, args: list, local: int | None = None) -> object:
    """Launch a 1-D kernel over ``n`` work items, rounded up to whole work-groups."""
    kernel = compile_kernel(device, source, name)
    local = local or min(DEFAULT_LOCAL_SIZE, kernel.work_group_size, device.info.max_work_group_size)
    global_size = -(-n // local) * local
    return launch(kernel, (global_size,), (local,), args)


def copy_cast(device: Device, src: Buffer, view: View, src_dtype: DType, dst_dtype: DType) -> Buffer:
    """A new dense buffer holding ``view`` of ``src`` converted to ``dst_dtype``."""
    n = view.numel
    out = device.pool.allocate(n * dst_dtype.itemsize)
    if n == 0:
        return out
    m = view.merged()
    lo, hi = m.span()
    if src_dtype is dst_dtype:  # a raw copy only needs the element width: share it across dtypes
        src_dtype = dst_dtype = UINT_OF_SIZE[src_dtype.itemsize]
    name = "zyx_copy" if src_dtype is dst_dtype else f"zyx_cast_{src_dtype.name}_to_{dst_dtype.name}"
    source = render("copy.cl.mako", name=name, src=src_dtype, dst=dst_dtype, shape=m.shape,
                    strides=m.strides, offset=m.offset, n=n, index_t=index_type(hi + 1, n, lo))
    launch_1d(device, source, name, n, [out.cl, src.cl])
    return out


def fill(device: Device, dtype: DType, n: int, value_bits: np.ndarray) -> Buffer:
    """A new buffer of ``n`` elements all holding the one-element bit pattern ``value_bits``."""
    out = device.pool.allocate(n * dtype.itemsize)
    if n == 0:
        return out
    bits = np.ascontiguousarray(value_bits).view(UINT_OF_SIZE[dtype.itemsize].numpy)
    source = render("fill.cl.mako", name="zyx_fill", itemsize=dtype.itemsize, n=n, index_t=index_type(n))
    launch_1d(device, source, "zyx_fill", n, [out.cl, bits.reshape(())[()]])
    return out


def random_bits(device: Device, dtype: DType, n: int, distribution: str, seed: int, counter: int,
                low: int = 0, high: int = 1, local: int | None = None) -> Buffer:
    """``n`` random values of ``dtype`` from Philox-4x32-10 keyed by ``seed``, counters from ``counter``.

    ``distribution``: ``uniform`` ([0, 1) with the dtype's precision), ``normal`` (Box-Muller)
    or ``integer`` (uniform in ``[low, high)``). Element ``i`` depends only on
    (seed, counter + i), never on the work-group size or the device.
    """
    out = device.pool.allocate(n * dtype.itemsize)
    if n == 0:
        return out
    name = f"zyx_random_{distribution}"
    per_block = values_per_block(dtype, distribution)
    source = render("random.cl.mako", name=name, dtype=dtype, distribution=distribution, n=n, per_block=per_block)
    # low as its two's complement bits (uint64 lows above 2**63 wrap back exactly in the kernel);
    # a range of 2**64 is passed as 0, meaning "every 64-bit value"
    args = [out.cl, np.uint32(seed & 0xFFFFFFFF), np.uint32((seed >> 32) & 0xFFFFFFFF), np.uint64(counter),
            np.int64((low + 2**63) % 2**64 - 2**63), np.uint64((high - low) % 2**64)]
    blocks = (counter % per_block + n + per_block - 1) // per_block
    launch_1d(device, source, name, blocks, args, local=local)
    return out


def values_per_block(dtype: DType, distribution: str) -> int:
    """How many consecutive counters share one Philox block's four words (templates/random.cl.mako)."""
    two_words = distribution == "integer" or (distribution == "uniform" and dtype.name == "float64")
    return 2 if two_words else 4
