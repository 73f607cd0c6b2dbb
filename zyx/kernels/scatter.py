"""Indexed writes (scatter, scatter_add, scatter_reduce, index_put, ``x[idx] = v``): the kernels of
``templates/scatter.cl.mako``, rendered with a small explicit parameter set and launched on realized
buffers (the graph runs them as ``EXTERN`` nodes, or in place on a destination's storage).

A write is described by an ``IndexedWrite``: the iteration shape (one point per value written), the
destination's view, and per destination axis the iteration axis or index source giving its
coordinate (the same ``axes`` convention as ``graph.GatherSpec``). ``choose`` picks the kernel:

* ``atomic``: one work item per point, atomics for a reduction (32-/64-bit elements);
* ``partition``: about one work item per core, each owning a range of the destination and walking
  every point in order with plain loads and stores: no atomics and PyTorch's CPU order
  (deterministic, its bits), at the price of every work item reading every index;
* ``owner``: one work item per destination element looping over the points that may land on it
  (deterministic; for short loops on devices with many lanes);
* ``sorted``: sort + segmented reduce: each point's row-major destination position as a key, the
  keys sorted stably with their points by the device sort, then work items over the sorted runs,
  each combining one destination element's values in point order and storing it once (no
  atomics, deterministic, PyTorch's CPU order and bits);
* ``private`` (CPUs): privatized accumulation. One work item per compute unit takes a contiguous
  share of the points and combines them with plain loads and stores, the first into the
  destination itself, each other into its own full-size copy (a pool buffer it first fills with
  the reduce's identity); a second launch combines the copies into the destination. No atomics;
  deterministic for a given number of compute units, but not PyTorch's bits (a copy's partial
  result is rounded on its own), so deterministic mode keeps ``partition``.

Not deterministic and not a plain store: ``private`` on CPUs (``settings.heuristics_kind``) when
the copies fit ``PRIVATE_MAX_BYTES`` and hold at most ``PRIVATE_DENSITY`` elements per point (each
copy element costs a fill and a combine, streaming, where an atomic costs a locked update per point).
Otherwise ``atomic`` wherever the device has the atomics (partition's few long work items stall when
a core is taken away from them); deterministic mode, and dtypes without atomics (8-/16-bit, 64-bit
without the int64 atomics) off CPUs, take ``owner`` when its loops are short against the points (``OWNER_WORK``), else
``sorted`` on GPUs and CPUs of ``SORTED_PARTS`` or more compute units (``sorted_pays``), else
``partition``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from zyx import settings
from zyx.backend import errorflags
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.errors import IndexOutOfRange
from zyx.ir.view import View
from zyx.kernels.launch import run

REDUCES = ("assign", "add", "mul", "max", "min")
METHODS = ("atomic", "partition", "owner", "private", "sorted")
OWNER_WORK = 32  # owner when its work (dest elements x loop) is at most this many times the points
PRIVATE_MAX_BYTES = 64 << 20  # private: the most bytes of destination copies it may allocate
PRIVATE_DENSITY = 4  # private: at most this many copy elements per point
PRIVATE_SUM_SPAN = 64  # private: destination elements per work item of the combining launch
# sorted: sorted positions per work item of the segmented reduce, and its work-group size (each item
# alone: PoCL runs a group's items side by side, through loops of different lengths here)
SEGMENT_SPAN, SEGMENT_LOCAL = 64, 1
# sorted: from this many compute units (partition's work items, each reading every index) the sort +
# segmented reduce replaces partition; GPUs always (a few serial walks leave them idle).
SORTED_PARTS = 16
CHECK_SPAN = 64  # points per work item of a guarded write's bounds-check launch
LOCAL_SIZE = 256  # work items a work-group of the kernels with short, even work items
force: str | None = None  # a method every write uses (tests run each kernel through PyTorch's cases)
private_parts: int | None = None  # work items of the private kernel (tests); None: the compute units


@dataclass(frozen=True)
class IndexSource:
    """An integer index read at the iteration points: ``buf[offset + sum(s[k] * strides[k])]``;
    ``wrap``: negative values count from the end of their destination axis."""

    buf: Buffer
    offset: int
    dtype: DType
    strides: tuple[int, ...]
    wrap: bool


@dataclass(frozen=True)
class IndexedWrite:
    """``dest[t(s)] (op)= value[s]`` for each point ``s`` of ``shape``; ``axes`` as ``GatherSpec.axes``.
    ``value`` is a ``(buffer, offset, strides over shape)`` triple of ``dtype`` or a Python scalar."""

    dest: Buffer
    dest_view: View
    dtype: DType
    shape: tuple[int, ...]
    axes: tuple[int, ...]
    indices: tuple[IndexSource, ...]
    value: Any
    reduce: str


def atomics_ok(device: Device, dtype: DType, reduce: str) -> bool:
    """Whether the atomic kernel can do ``reduce`` on ``dtype`` elements on ``device``: plain stores
    always; read-modify-write on 32-bit words, on 64-bit ones with the int64 atomics extensions."""
    if reduce == "assign":
        return True
    if dtype.itemsize == 4:
        return True
    exts = device.info.extensions
    return dtype.itemsize == 8 and "cl_khr_int64_base_atomics" in exts


def _loop_points(w: IndexedWrite) -> int:
    """How many points one owner work item loops over (those not fixed by its own coordinates)."""
    direct = {k for k in w.axes if k >= 0}
    return math.prod(d for k, d in enumerate(w.shape) if k not in direct)


def private_ok(device: Device, w: IndexedWrite) -> bool:
    """Whether the privatized kernel suits ``w`` on ``device``: a CPU, a reduction, and copies
    within ``PRIVATE_MAX_BYTES`` holding at most ``PRIVATE_DENSITY`` elements per point (each copy
    element is filled and combined once, streaming, where atomics pay a locked update per point)."""
    points, dests = math.prod(w.shape), math.prod(w.dest_view.shape)
    copy_elements = (max(1, private_parts or device.info.compute_units) - 1) * dests
    return (w.reduce != "assign" and settings.heuristics_kind(device) == "cpu"
            and copy_elements * w.dtype.itemsize <= PRIVATE_MAX_BYTES and copy_elements <= PRIVATE_DENSITY * points)


def choose(device: Device, w: IndexedWrite, method: str) -> str:
    """The kernel for ``w`` (see the module docstring); ``method``: ``"auto"`` or ``"deterministic"``."""
    if force is not None:
        return force
    if method != "deterministic" and private_ok(device, w):
        return "private"
    if method != "deterministic" and atomics_ok(device, w.dtype, w.reduce):
        return "atomic"
    points, dests = math.prod(w.shape), math.prod(w.dest_view.shape)
    if dests * _loop_points(w) <= OWNER_WORK * max(points, dests):
        return "owner"
    return "sorted" if sorted_pays(device) else "partition"


def sorted_pays(device: Device, parts: int | None = None) -> bool:
    """Whether the sort + segmented reduce beats partition on ``device`` (``parts``: its compute units):
    a GPU, or a CPU with many cores (partition's walk of every index is serial per work item; on few
    cores it is cheaper than the sort)."""
    if settings.heuristics_kind(device) == "gpu":
        return True
    return (parts or device.info.compute_units) >= SORTED_PARTS


def _params(w: IndexedWrite, mode: str, guarded: bool, n: int, span: int, device: Device,
            parts: int = 1, key_type: str = "long") -> dict[str, Any]:
    value_strides = None if not isinstance(w.value, tuple) else tuple(w.value[2])
    return dict(name=f"zyx_scatter_{mode}", dtype=w.dtype, reduce=w.reduce, mode=mode, guarded=guarded,
                shape=tuple(w.shape), dest_shape=tuple(w.dest_view.shape), dest_strides=tuple(w.dest_view.strides),
                axes=tuple(w.axes), indices=tuple((i.dtype, tuple(i.strides), i.wrap) for i in w.indices),
                value_strides=value_strides, n=n, span=span, nparts=parts, plain_read=not device.simulator,
                key_type=key_type)


def _identity(reduce: str, dtype: DType) -> Any:
    """The neutral element of ``reduce`` on ``dtype`` (what a private copy starts from)."""
    if dtype.is_bool:
        return reduce in ("mul", "min")  # OR's neutral is False, AND's True
    if reduce in ("add", "mul"):
        return 0 if reduce == "add" else 1
    if dtype.is_float:
        return -math.inf if reduce == "max" else math.inf
    info = np.iinfo(dtype.numpy)
    return int(info.min) if reduce == "max" else int(info.max)


def _args(w: IndexedWrite, flags: tuple[Any, int], device: Device, copies: Buffer | None = None,
          extra: tuple[Buffer, ...] = ()) -> list[Any]:
    args: list[Any] = [w.dest.cl, np.int64(w.dest_view.offset)]
    for i in w.indices:
        args += [i.buf.cl, np.int64(i.offset)]
    if isinstance(w.value, tuple):
        args += [w.value[0].cl, np.int64(w.value[1])]
    else:
        args.append(_scalar(w.value, w.dtype))
    if copies is not None:
        args += [copies.cl, _scalar(_identity(w.reduce, w.dtype), w.dtype)]
    args += [b.cl for b in extra]
    err, _ = errorflags.reserve(device)
    args += [err, flags[0], np.int32(flags[1])]
    return args


def _scalar(value: Any, dtype: DType) -> Any:
    """A scalar value in the kernel's compute type (16-/8-bit floats: float32, bool: uchar)."""
    if dtype.is_bool:
        return np.uint8(bool(value))
    if dtype.is_float:
        return np.float64(value) if dtype.itemsize == 8 else np.float32(value)
    return dtype.numpy.type(value)


def scatter(device: Device, w: IndexedWrite, method: str = "auto", guard: bool = False,
            describe: str = "index out of range") -> None:
    """Enqueue the write ``w`` on ``device``. ``method``: ``"auto"`` or ``"deterministic"`` (``choose``
    picks the kernel). ``guard``: check every
    index first (one more launch) and write nothing at all when one is out of range (in-place
    writes); otherwise a bad index skips its own point. Either way ``IndexOutOfRange`` is raised
    at the next sync (``describe`` frames the guarded message)."""
    if w.reduce not in REDUCES:
        raise ValueError(f"internal: scatter reduce {w.reduce!r} not in {REDUCES}")
    points, dests = math.prod(w.shape), math.prod(w.dest_view.shape)
    if points == 0 or dests == 0:
        return
    mode = choose(device, w, method)
    if mode == "private" and w.reduce == "assign":
        mode = "atomic"  # a forced method for reductions only: stores race the same either way
    if mode == "atomic" and not atomics_ok(device, w.dtype, w.reduce):
        mode = "partition"  # a forced method the device cannot run
    flags: tuple[Any, int] = (errorflags.reserve(device)[0], 0)
    if guard and w.indices:
        import pyopencl as cl

        flags = errorflags.reserve(device, describe + " (index {offset})", IndexOutOfRange)
        cl.enqueue_fill_buffer(device.queue, flags[0], np.int64(0), 16 * flags[1], 16)
        items = -(-points // CHECK_SPAN)
        src = render("scatter.cl.mako", **_params(w, "check", False, items, CHECK_SPAN, device))
        run(device, src, "zyx_scatter_check", (items,), LOCAL_SIZE, _args(w, flags, device))
    guarded = guard and bool(w.indices)
    if mode == "private":
        _private(device, w, flags, guarded, points, dests)
        return
    if mode == "sorted":
        _sorted(device, w, flags, guarded, points, dests)
        return
    span = 0
    if mode == "partition":
        parts = max(1, min(device.info.compute_units, dests))
        span = -(-dests // parts)
        n = -(-dests // span)
    else:
        n = dests if mode == "owner" else points
    src = render("scatter.cl.mako", **_params(w, mode, guarded, n, span, device))
    if mode == "partition":  # a scratch element per work item for the points outside its part
        scratch = device.pool.allocate(n * w.dtype.itemsize)
        run(device, src, "zyx_scatter_partition", (n,), 1, _args(w, flags, device, scratch))
        return
    run(device, src, f"zyx_scatter_{mode}", (n,), LOCAL_SIZE, _args(w, flags, device))


def _private(device: Device, w: IndexedWrite, flags: tuple[Any, int], guarded: bool, points: int,
             dests: int) -> None:
    """The privatized write: one work item per compute unit (each its own work-group) over a
    contiguous share of the points, into dest and ``parts - 1`` copies; then the copies into dest."""
    parts = max(1, min(private_parts or device.info.compute_units, points))
    chunk = -(-points // parts)
    parts = -(-points // chunk)
    copies = device.pool.allocate((parts - 1) * dests * w.dtype.itemsize) if parts > 1 else None
    # a 1-byte stand-in when there is no copy (the argument is never read then)
    stand_in = copies if copies is not None else device.pool.allocate(1)
    src = render("scatter.cl.mako", **_params(w, "private", guarded, parts, chunk, device, parts))
    run(device, src, "zyx_scatter_private", (parts,), 1, _args(w, flags, device, stand_in))
    if copies is None:
        return
    items = -(-dests // PRIVATE_SUM_SPAN)
    src = render("scatter.cl.mako", **_params(w, "private_sum", guarded, items, PRIVATE_SUM_SPAN, device, parts))
    run(device, src, "zyx_scatter_private_sum", (items,), LOCAL_SIZE, _args(w, flags, device, copies))


def _sorted(device: Device, w: IndexedWrite, flags: tuple[Any, int], guarded: bool, points: int,
            dests: int) -> None:
    """Sort + segmented reduce: every point's row-major dest position as a key, the keys sorted stably
    with their points (the device sort, ``zyx.kernels.sorting``), then work items of ``SEGMENT_SPAN``
    sorted positions, each owning the runs of equal keys that start in its span and combining dest's
    element with each run's values in point order, storing it once."""
    from zyx.dtype import int32, int64
    from zyx.kernels.sorting import sort_rows

    key_dt = int32 if dests < 2**31 - 1 else int64  # half the radix passes for the usual sizes
    key_type = key_dt.cl_storage
    keys = device.pool.allocate(points * key_dt.itemsize)
    src = render("scatter.cl.mako", **_params(w, "sort_keys", guarded, points, 0, device, key_type=key_type))
    run(device, src, "zyx_scatter_sort_keys", (points,), LOCAL_SIZE, _args(w, flags, device, extra=(keys,)))
    sorted_keys = device.pool.allocate(points * key_dt.itemsize)
    positions = device.pool.allocate(points * 8)
    sort_rows(device, sorted_keys, positions, keys, key_dt, 1, points, False)
    items = -(-points // SEGMENT_SPAN)
    src = render("scatter.cl.mako", **_params(w, "segments", guarded, items, SEGMENT_SPAN, device, key_type=key_type))
    run(device, src, "zyx_scatter_segments", (items,), SEGMENT_LOCAL,
        _args(w, flags, device, extra=(sorted_keys, positions)))
