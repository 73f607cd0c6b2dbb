"""Sorting and selection kernels: launchers for ``templates/sorting/*.cl.mako``.

Every kernel compares elements through order-preserving unsigned keys of the dtype's width
(``templates/common/sortkey.mako``) and moves values as raw bits, so one code path serves
every dtype (16- and 8-bit floats included) and NaN sorts as PyTorch sorts it. Launchers
take dense device buffers and plain ints, enqueue asynchronously and allocate their own
scratch; the frontend (``zyx.frontend.sorting``) runs them as ``EXTERN`` graph nodes.

Sort: on GPUs, rows of up to BITONIC_MAX elements by one work-group each (a bitonic network
in local memory); otherwise one work-item per row (insertion sort for short rows, else an LSD radix sort over
8-bit digits that skips digits with one value), or, for long rows that are too few to fill
the device, a block-parallel radix sort (per-block histograms, a scan per row, a stable
scatter per block; three launches per digit). Topk keeps the best k in private memory
per work-item (rows cut into blocks and merged when they are few and long).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import UINT_OF_SIZE, DType
from zyx.errors import ShapeError
from zyx.kernels.launch import run

#: Rows this short are insertion-sorted in private memory (no scratch, no histograms).
SMALL_ROW = 32
#: Rows at least this long take the block-parallel radix sort when there are few of them.
LONG_ROW_MIN = 1 << 14
#: The largest k topk selects without a full sort (its private list's length).
TOPK_MAX = 64
#: GPUs: rows of at most this many elements are sorted by one work-group in local memory
#: (keys and positions of 2048 elements: 24 KiB for 8-byte keys).
BITONIC_MAX = 2048
#: The work-group size of the bitonic row sort (at most half the padded row).
BITONIC_GROUP = 256
#: CPU work-group size of the one-row-per-work-item topk.
TOPK_CPU_GROUP = 8
#: The fewest elements a block of the block-parallel kernels holds.
BLOCK_MIN = 2048
#: The work-group size of the one-element-per-work-item kernels (search, gather, scatter, fill).
FLAT_LOCAL = 256


def _word(itemsize: int) -> str:
    return UINT_OF_SIZE[itemsize].cl_storage


def _flip(dtype: DType, descending: bool) -> Any:
    """The run-time key mask: all ones complements every key (descending order), zero keeps it."""
    np_type = UINT_OF_SIZE[dtype.itemsize].numpy.type
    return np_type(np.iinfo(np_type).max if descending else 0)


def _parallel_items(device: Device) -> int:
    """Work-items that keep ``device`` busy when each one walks a long run serially."""
    if settings.heuristics_kind(device) == "gpu":
        return 64 * max(1, device.info.compute_units)
    return 8 * max(1, device.info.compute_units)


def _run(device: Device, source: str, name: str, grid: tuple[int, ...], args: list[Any], cpu: int = 1) -> Any:
    """Launch ``name`` over ``grid`` in work-groups of ``cpu`` on CPUs (1 where private histograms must
    stay one copy), else 64."""
    return run(device, source, name, grid, cpu if settings.heuristics_kind(device) != "gpu" else 64, args)


def _blocks(device: Device, rows: int, n: int) -> int:
    """How many blocks each row of a row-serial kernel is cut into (1: a work-item per row)."""
    want = _parallel_items(device)
    if rows >= want or n < 2 * BLOCK_MIN:
        return 1
    return max(1, min(-(-want // rows), n // BLOCK_MIN))


def sort_strategy(device: Device, rows: int, n: int) -> str:
    """``bitonic`` (GPUs, rows of up to BITONIC_MAX: a work-group per row in local memory), ``rows``
    (a work-item per row) or ``blocks`` (the block-parallel radix sort for few long rows)."""
    if n >= LONG_ROW_MIN and _blocks(device, rows, n) > 1:
        return "blocks"
    if settings.heuristics_kind(device) == "gpu" and 1 < n <= BITONIC_MAX:
        return "bitonic"
    return "rows"


def sort_rows(device: Device, values: Buffer, indices: Buffer, src: Buffer, dtype: DType, rows: int, n: int,
              descending: bool) -> None:
    """Sort each row of the dense (rows, n) ``src`` (stable); write the values and int64 positions."""
    if rows * n == 0:
        return
    if n >= 2**32 - 1:
        raise ShapeError(f"sort: a row of {n} elements along the sorted dim; expected fewer than 2**32 - 1 "
                         "(the kernels keep 32-bit positions)")
    source = render("sorting/sort.cl.mako", dtype=dtype, small=SMALL_ROW)
    size = dtype.itemsize
    flip = _flip(dtype, descending)
    u32 = np.uint32
    strategy = sort_strategy(device, rows, n)
    if strategy == "bitonic":
        p = 1 << (n - 1).bit_length()
        wg = min(p // 2, BITONIC_GROUP)
        # a fixed geometry: the template's work-group size is the launch's
        kernel = compile_kernel(device, render("sorting/bitonic.cl.mako", dtype=dtype, p=p, wg=wg),
                                "zyx_sort_bitonic")
        launch(kernel, (rows * wg,), (wg,), [values.cl, indices.cl, src.cl, u32(n), flip])
        return
    if strategy == "rows":
        if n <= SMALL_ROW:
            ka = kb = ia = ib = src  # unused by the insertion sort
        else:
            ka, kb = (device.pool.allocate(rows * n * size) for _ in range(2))
            ia, ib = (device.pool.allocate(rows * n * 4) for _ in range(2))
        _run(device, source, "zyx_sort_rows", (rows,),
             [values.cl, indices.cl, src.cl, ka.cl, kb.cl, ia.cl, ib.cl, u32(n), u32(rows), flip])
        return
    blocks = _blocks(device, rows, n)
    blen = -(-n // blocks)
    blocks = -(-n // blen)
    hist = device.pool.allocate(rows * 256 * blocks * 4)
    keys = [device.pool.allocate(rows * n * size) for _ in range(2)]
    pos = [device.pool.allocate(rows * n * 4) for _ in range(2)]
    for p in range(size):
        kin, iin = keys[p % 2], pos[p % 2]
        kout, iout = keys[(p + 1) % 2], pos[(p + 1) % 2]
        _run(device, source, "zyx_sort_hist", (blocks, rows),
             [hist.cl, src.cl, kin.cl, u32(n), u32(blocks), u32(blen), np.int32(p), flip])
        _run(device, source, "zyx_sort_offsets", (rows,), [hist.cl, u32(blocks), u32(rows)])
        _run(device, source, "zyx_sort_scatter", (blocks, rows),
             [values.cl, indices.cl, src.cl, hist.cl, kin.cl, iin.cl, kout.cl, iout.cl, u32(n), u32(blocks),
              u32(blen), np.int32(p), np.int32(p == size - 1), flip])


def topk_rows(device: Device, values: Buffer, indices: Buffer, src: Buffer, dtype: DType, rows: int, n: int,
              k: int, largest: bool) -> None:
    """The ``k`` (<= TOPK_MAX) largest (or smallest) of each row of the dense (rows, n) ``src``, in order."""
    if rows * k == 0:
        return
    kmax = 4
    while kmax < k:
        kmax *= 2
    source = render("sorting/topk.cl.mako", dtype=dtype, kmax=kmax)
    flip = _flip(dtype, largest)
    blocks = _blocks(device, rows, n)
    blen = -(-n // blocks)
    blocks = -(-n // blen)
    u32 = np.uint32
    if blocks == 1:
        # rows along axis 0 so that a CPU work-group holds several (fewer, larger tasks)
        _run(device, source, "zyx_topk_rows", (rows,),
             [values.cl, indices.cl, src.cl, u32(n), u32(k), u32(rows), flip], cpu=TOPK_CPU_GROUP)
        return
    ck = device.pool.allocate(rows * blocks * k * dtype.itemsize)
    ci = device.pool.allocate(rows * blocks * k * 4)
    _run(device, source, "zyx_topk_block", (blocks, rows),
         [ck.cl, ci.cl, src.cl, u32(n), u32(k), u32(blocks), u32(blen), flip])
    _run(device, source, "zyx_topk_merge", (rows,),
         [values.cl, indices.cl, ck.cl, ci.cl, src.cl, u32(n), u32(k), u32(blocks), u32(rows)])


def searchsorted(device: Device, out: Buffer, seq: Buffer, sorter: Buffer | None, vals: Buffer, dtype: DType,
                 count: int, per: int, m: int, batched: bool, right: bool, out_int32: bool) -> None:
    """For each of ``count`` values, its insertion position in its row (``i // per`` when ``batched``, else
    row 0) of the sorted (rows, m) ``seq`` (read through the int64 ``sorter`` when given)."""
    if count == 0:
        return
    source = render("sorting/search.cl.mako", dtype=dtype, right=bool(right), sorter=sorter is not None,
                    out="int" if out_int32 else "long")
    u64 = np.uint64
    run(device, source, "zyx_searchsorted", (count,), FLAT_LOCAL,
        [out.cl, seq.cl, (sorter or seq).cl, vals.cl, u64(count), u64(max(per, 1)), u64(m), np.int32(batched)])


def _select_source(dtype: DType) -> str:
    return render("sorting/select.cl.mako", dtype=dtype, word=_word(dtype.itemsize))


def gather_rows(device: Device, out: Buffer, src: Buffer, idx: Buffer, dtype: DType, rows: int, n: int,
                k: int) -> None:
    """``out[r, q] = src[r, idx[r, q]]`` for the dense (rows, n) ``src`` and (rows, k) int64 ``idx``."""
    total = rows * k
    if total:
        run(device, _select_source(dtype), "zyx_gather_rows", (total,), FLAT_LOCAL,
            [out.cl, src.cl, idx.cl, np.uint64(k), np.uint64(n), np.uint64(total)])


def scatter_rows(device: Device, out: Buffer, src: Buffer, idx: Buffer, dtype: DType, rows: int, n: int,
                 k: int) -> None:
    """``out`` (rows, n) zero except ``out[r, idx[r, q]] = src[r, q]`` (positions distinct within a row)."""
    source = _select_source(dtype)
    if rows * n:
        run(device, source, "zyx_zero_fill", (rows * n,), FLAT_LOCAL, [out.cl, np.uint64(rows * n)])
    if rows * k:
        run(device, source, "zyx_scatter_rows", (rows * k,), FLAT_LOCAL,
            [out.cl, src.cl, idx.cl, np.uint64(k), np.uint64(n), np.uint64(rows * k)])


def unique_groups(device: Device, uvals: Buffer, counts: Buffer, inverse: Buffer, total: Buffer, sorted_vals: Buffer,
                  positions: Buffer, dtype: DType, n: int) -> None:
    """The runs of equal values of the sorted ``sorted_vals`` (with their input ``positions``): each
    run's value and length, every input position's run, and the number of runs (one int64)."""
    run(device, _select_source(dtype), "zyx_unique_groups", (1,), FLAT_LOCAL,
        [uvals.cl, counts.cl, inverse.cl, total.cl, sorted_vals.cl, positions.cl, np.uint64(n)])
