"""Counter-based random bits: the one generated kernel that is not IR (Philox needs 64-bit
counter arithmetic per block of values, not an expression per element).

It renders ``templates/random.cl.mako`` with a small explicit parameter set, builds it once per
device (backend.program caches) and launches it asynchronously on the device queue; the graph
runs it as an ``EXTERN`` node (``frontend.creation``).
"""
from __future__ import annotations

import numpy as np

from zyx.backend import journal
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.kernels.launch import run

DEFAULT_LOCAL_SIZE = 256


def random_bits(device: Device, dtype: DType, n: int, distribution: str, seed: int, counter: int,
                low: int = 0, high: int = 1, local: int | None = None, replayed: list[int] | None = None) -> Buffer:
    """``n`` random values of ``dtype`` from Philox-4x32-10 keyed by ``seed``, counters from ``counter``.

    ``distribution``: ``uniform`` ([0, 1) with the dtype's precision), ``normal`` (Box-Muller)
    or ``integer`` (uniform in ``[low, high)``). Element ``i`` depends only on
    (seed, counter + i), never on the work-group size or the device. Under a capture, ``replayed``
    (a ``[seed, counter]`` cell a replay hook refills) gives the seed and counter of each replay.
    """
    out = device.pool.allocate(n * dtype.itemsize)
    if n == 0:
        return out
    if replayed is None:
        journal.unreplayable("random numbers were drawn (a replay would repeat the same ones)")
    name = f"zyx_random_{distribution}"
    per_block = values_per_block(dtype, distribution)
    source = render("random.cl.mako", name=name, dtype=dtype, distribution=distribution, n=n, per_block=per_block)
    # low as its two's complement bits (uint64 lows above 2**63 wrap back exactly in the kernel);
    # a range of 2**64 is passed as 0, meaning "every 64-bit value"
    seed_lo, seed_hi, start = np.uint32(seed & 0xFFFFFFFF), np.uint32((seed >> 32) & 0xFFFFFFFF), np.uint64(counter)
    if replayed is not None:
        journal.note_host_param(seed_lo, lambda: np.uint32(replayed[0] & 0xFFFFFFFF))
        journal.note_host_param(seed_hi, lambda: np.uint32((replayed[0] >> 32) & 0xFFFFFFFF))
        journal.note_host_param(start, lambda: np.uint64(replayed[1]))
    args = [out.cl, seed_lo, seed_hi, start, np.int64((low + 2**63) % 2**64 - 2**63), np.uint64((high - low) % 2**64)]
    # enough blocks for any counter offset within a block, so a replay with another counter launches the
    # same grid (a block past the values writes nothing)
    blocks = (n + 2 * per_block - 2) // per_block
    run(device, source, name, (blocks,), local or DEFAULT_LOCAL_SIZE, args)
    return out


def values_per_block(dtype: DType, distribution: str) -> int:
    """How many consecutive counters share one Philox block's four words (templates/random.cl.mako)."""
    two_words = distribution == "integer" or (distribution == "uniform" and dtype.name == "float64")
    return 2 if two_words else 4
