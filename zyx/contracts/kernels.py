"""Rendering and launching the contract kernels (``templates/contracts/*.cl.mako``).

Each function here renders one template with a small explicit parameter dict, builds it
once per device (``backend.launch.compile_kernel`` caches by source) and enqueues it,
returning the OpenCL event. Functions take device buffers and plain ints; checking the
contract, contiguizing and making Tensors is ``ops.py``'s job.

Byte kernels are specialized on the element size (not the dtype) and on shapes; values
that change from call to call in real use (roll shift, write positions and offsets,
concat column, triangular diagonal, masked_fill value and length) are run-time
arguments, so they never cause a rebuild.

Tunables (declared per kernel in ``DECLARED``, except ``stream_bytes``, a device-derived
choice the tuner does not search; defaults derived from the device):

``local_size``    work-group size of the byte kernels
``per_item``      vectors each work-item handles (grid-stride loop, or consecutive ones
                  when streaming); on CPUs, rows for triangular (the transposed
                  contiguize runs one tile per work-item)
``vector_bytes``  target bytes per load/store; the vector width is the largest power of
                  two <= vector_bytes / itemsize (and <= 16) that divides the contiguous run;
                  the tiled transpose of ``contiguize`` (CPUs) uses it for its register
                  blocks (at least 2 x 2)
``stream_bytes``  byte kernels whose output is at least this many bytes store whole
                  vectors non-temporally (``index.mako``, ``stream_preamble``): the
                  output bypasses the caches, which on CPUs moves ~1.3-1.5x the bytes of
                  plain stores but leaves a small result out of cache for its reader
``scan_local``    cumsum work-group size (a power of two)
``scan_items``    cumsum elements per work-item; a scan block is scan_local * scan_items
``scan_lanes_min`` cumsum runs one work-item per lane (strategy "lanes") when the scanned
                  axis is strided and there are at least this many lanes, or the axis
                  is shorter than ``scan_items``
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch, launch_exact
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.contracts.tuning import tuned
from zyx.dtype import DType, float32, float64
from zyx.ir.view import View

INT_MAX = 2**31 - 1
NEVER = 2**62  # a stream_bytes no output reaches


@dataclass(frozen=True)
class Tunables:
    """Launch and code-shape choices of the contract kernels (see the module docstring)."""

    local_size: int = 256
    per_item: int = 4
    vector_bytes: int = 16
    stream_bytes: int = NEVER
    scan_local: int = 256
    scan_items: int = 8
    scan_lanes_min: int = 256


#: The tunables each contract kernel declares (the rest do not change it).
DECLARED: dict[str, tuple[str, ...]] = {
    "contiguize": ("local_size", "per_item", "vector_bytes"),
    "flip": ("local_size", "per_item", "vector_bytes"),
    "roll": ("local_size", "per_item", "vector_bytes"),
    "concat": ("local_size", "per_item", "vector_bytes"),
    "write_slice": ("local_size", "per_item", "vector_bytes"),
    "write_slice_rotating": ("local_size", "per_item", "vector_bytes"),
    "write_slice_doff": ("local_size", "per_item", "vector_bytes"),
    "triangular": ("local_size", "per_item", "vector_bytes"),
    "masked_fill": ("local_size", "per_item", "vector_bytes"),
    "cumsum": ("scan_local", "scan_items", "scan_lanes_min"),
}

#: CPUs: outputs of this many bytes or more are streamed (non-temporal stores). Below it a
#: result likely stays in the last-level cache for the kernel that reads it next.
STREAM_BYTES_CPU = 4 << 20

#: CPUs: masked_fill's vectors are at least this wide (16 float32 lanes; the mask load is
#: then 16 bytes): ~1.2x a copy on PoCL / EPYC, against ~0.9x with 32-byte vectors.
MASKED_FILL_VECTOR_BYTES_CPU = 64

_defaults: dict[tuple[str, bool], Tunables] = {}
_overrides: dict[str, Tunables] = {}


def _gpu(device: Device) -> bool:
    """Whether the contract kernels take their GPU variants on ``device`` (``settings.heuristics_kind``)."""
    return settings.heuristics_kind(device) == "gpu"


def default_tunables(device: Device) -> Tunables:
    """The device-derived defaults.

    GPUs: 256-wide work-groups, one 16-byte vector per work-item (coalesced), scan blocks
    of 256 x 8. CPUs (PoCL): vectors as wide as the SIMD registers (4 x the preferred int
    width in bytes: 32 on AVX2; wider ones make the compiler warn about the ABI without
    AVX-512), 4 vectors per work-item, outputs of STREAM_BYTES_CPU or more written with
    non-temporal stores, and scan blocks of few work-items with long runs (4 x 256: PoCL runs
    a work-group's items in a loop, so barriers are cheap only for small groups, and each
    work-group launch costs about a microsecond; a run of 256 is summed as 4 add chains).
    Measured on PoCL 3.0 / 2-core EPYC with ``bench/bench_contracts.py`` and tune sweeps.
    Every size is clamped to the device's maximum work-group size.
    """
    gpu = _gpu(device)
    cached = _defaults.get((device.id, gpu))
    if cached is not None:
        return cached
    info = device.info
    max_wg = max(1, info.max_work_group_size)
    if gpu:
        tun = Tunables(local_size=256, per_item=1, vector_bytes=16, scan_local=256, scan_items=8,
                       scan_lanes_min=4096)
    else:
        vec = max(16, min(64, 4 * (info.preferred_vector_width.get("int", 4) or 4)))
        tun = Tunables(local_size=256, per_item=4, vector_bytes=vec, stream_bytes=STREAM_BYTES_CPU, scan_local=4,
                       scan_items=256, scan_lanes_min=max(16, 4 * info.compute_units))
    scan_local = 1 << (min(tun.scan_local, max_wg).bit_length() - 1)
    tun = replace(tun, local_size=min(tun.local_size, max_wg), scan_local=scan_local)
    _defaults[(device.id, gpu)] = tun
    return tun


def tunables(device: Device) -> Tunables:
    """The tunables in force on ``device``: ``set_tunables`` overrides, else the defaults."""
    return _overrides.get(device.id) or default_tunables(device)


def set_tunables(device: Device, **values: int) -> Tunables:
    """Override some tunables on ``device`` (``set_tunables(dev)`` with none resets them)."""
    if not values:
        _overrides.pop(device.id, None)
        return default_tunables(device)
    known = {f.name for f in fields(Tunables)}
    for key, value in values.items():
        if key not in known:
            raise ValueError(f"unknown tunable {key!r}; known: {', '.join(sorted(known))}")
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"tunable {key} must be a positive int, got {value!r}")
    if "scan_local" in values and values["scan_local"] & (values["scan_local"] - 1):
        raise ValueError(f"scan_local must be a power of two, got {values['scan_local']}")
    tun = replace(tunables(device), **values)
    _overrides[device.id] = tun
    return tun


# ---------------------------------------------------------------- helpers


def index_type(*extents: int) -> str:
    """``int`` when every index stays below 2**31 - 1, else ``long``."""
    return "int" if max((abs(e) for e in extents), default=0) < INT_MAX else "long"


def vector_width(itemsize: int, run: int, tun: Tunables) -> int:
    """The widest power-of-two vector (<= 16 lanes, <= vector_bytes) dividing ``run``."""
    vw = 1
    limit = max(1, min(16, tun.vector_bytes // itemsize))
    while vw * 2 <= limit and run % (vw * 2) == 0:
        vw *= 2
    return vw


def streams(tun: Tunables, out_bytes: int, vw: int) -> bool:
    """Whether a byte kernel writing ``out_bytes`` with ``vw``-wide vectors streams its stores."""
    return vw > 1 and out_bytes >= tun.stream_bytes


def _start(device: Device, template: str, name: str, params: dict[str, Any], n_vec: int,
           per_item: int, args: Sequence[Any], tun: Tunables) -> Any:
    """Render, build (cached) and launch a 1-D grid-stride byte kernel over ``n_vec`` vectors."""
    source = render(f"contracts/{template}", **params)
    kernel = compile_kernel(device, source, name)
    local = max(1, min(tun.local_size, kernel.work_group_size))
    items = max(1, -(-n_vec // per_item))
    global_size = -(-items // local) * local
    return launch(kernel, (global_size,), (local,), list(args))


def _start_exact(device: Device, template: str, name: str, params: dict[str, Any], n: int,
                 args: Sequence[Any], tun: Tunables) -> list[Any]:
    """Render, build and launch a kernel doing one item per work-item over exactly ``n``
    work-items, with no bounds test in the kernel: whole work-groups first, then the
    remainder as work-groups of one at a global offset. Returns the launches' events."""
    kernel = compile_kernel(device, render(f"contracts/{template}", **params), name)
    return launch_exact(kernel, n, max(1, min(tun.local_size, kernel.work_group_size)), list(args))


#: CPUs: 1- and 2-byte elements are moved as unsigned words of up to this many bytes when
#: the contiguous run and every offset and extent along it allow (``widen``): PoCL runs
#: uint/ulong vectors at copy speed, explicit uchar/ushort vectors at ~0.2-0.4x.
WIDE_WORD_BYTES = 8


def widen(device: Device, itemsize: int, tun: Tunables, *along: int) -> int:
    """How many ``itemsize``-byte elements a CPU byte kernel moves as one word: the largest
    power of two k with k * itemsize <= min(WIDE_WORD_BYTES, vector_bytes) dividing every
    value of ``along`` (the contiguous run and each element offset, stride or extent the
    kernel steps by, run-time ones included); 1 on GPUs and for 4- and 8-byte elements."""
    if _gpu(device) or itemsize >= 4:
        return 1
    k = max(1, min(WIDE_WORD_BYTES, tun.vector_bytes) // itemsize)
    k = 1 << (k.bit_length() - 1)
    while k > 1 and any(v % k for v in along):
        k //= 2
    return k


def _exact_grid(device: Device, itemsize: int, k: int, vw: int, shape: Sequence[int]) -> bool:
    """Whether a CPU byte kernel does one element per work-item over an exact grid (no loop,
    no bounds test; PoCL vectorizes it across work-items) instead of explicit vectors:
    always for 1- and 2-byte elements except short rows with vectors (their 1-D grid divides
    per element), and for ``k``-element words or 4- and 8-byte elements without a vector of
    at least EXACT_WORDS_VW lanes (a grid-stride loop of scalars ran at ~0.5x). Measured on
    PoCL 3.0 / 2-core EPYC, 64 MiB: uint8 unaligned write_slice / contiguize 3.5-4x faster."""
    if _gpu(device):
        return False
    if itemsize < 4:
        return vw == 1 or _row(shape) >= EXACT_ROWS_MIN
    return vw < (EXACT_WORDS_VW if k > 1 else 2)


#: CPUs: words widened from smaller elements (``widen``) with vectors narrower than this take
#: the exact grid (contiguize of a uint8 view with rows of 2046 ulong words: ~2x faster).
EXACT_WORDS_VW = 4


def _row(shape: Sequence[int]) -> int:
    """The extent of the last axis longer than 1 (1 if none)."""
    return next((d for d in reversed(shape) if d > 1), 1)


#: CPUs: an exact grid is 2-D (``_start_rows``) when the last axis longer than 1 has at
#: least this many elements; shorter rows take the 1-D grid (a division per element).
EXACT_ROWS_MIN = 64


def _start_rows(device: Device, template: str, name: str, params: dict[str, Any], rows: int, row: int,
                args: Sequence[Any], tun: Tunables) -> list[Any]:
    """Render, build and launch a kernel doing one item per work-item over an exact 2-D grid
    of ``row`` columns by ``rows`` rows, with no bounds test in the kernel: whole work-groups
    along the row, then the rest of every row as one work-group at a global offset (work-groups
    of one, as ``_start_exact`` uses, ran ~4x slower here). Returns the launches' events."""
    kernel = compile_kernel(device, render(f"contracts/{template}", **params), name)
    return launch_exact(kernel, row, max(1, min(tun.local_size, kernel.work_group_size)), list(args), rows)


def _go(device: Device, template: str, name: str, params: dict[str, Any], n: int, vw: int, exact: bool,
        args: Sequence[Any], tun: Tunables, shape: Sequence[int] = ()) -> Any:
    """Launch a byte kernel over ``n`` elements: grid-stride over vectors, or with ``exact``
    one element per work-item over an exact grid, 2-D (rows of the last axis of ``shape``
    longer than 1, when that has EXACT_ROWS_MIN elements or more) or 1-D. Returns one event,
    or a list when a remainder launch is needed."""
    if not exact:
        return _start(device, template, name, {**params, "exact": 0}, max(n // vw, 1), tun.per_item, args, tun)
    row = _row(shape)
    if row >= EXACT_ROWS_MIN and n > row:
        events = _start_rows(device, template, name, {**params, "exact": row}, n // row, row, args, tun)
    else:
        events = _start_exact(device, template, name, {**params, "exact": 1}, n, args, tun)
    return events[0] if len(events) == 1 else events


def fold_axes(shape: Sequence[int], strides: Sequence[int],
              keep: int | None = None) -> tuple[tuple[int, ...], tuple[int, ...], int | None]:
    """Drop extent-1 axes and merge neighbours a dense walk can treat as one.

    ``strides`` are the strides of the side that is *not* dense (the source view of a
    gather, the dest box of a scatter); the dense side merges with anything. Axis
    ``keep`` is never dropped or merged; its new index is returned.
    """
    out: list[list[int]] = []  # [extent, stride, is_keep]
    for k, (d, s) in enumerate(zip(shape, strides)):
        is_keep = k == keep
        if d == 1 and not is_keep:
            continue
        if out and not is_keep and not out[-1][2] and out[-1][1] == d * s:
            out[-1][0] *= d
            out[-1][1] = s
        else:
            out.append([d, s, is_keep])
    if not out:
        out = [[1, 0, False]]
    new_keep = next((k for k, e in enumerate(out) if e[2]), None)
    return tuple(e[0] for e in out), tuple(e[1] for e in out), new_keep


# ---------------------------------------------------------------- byte kernels


@tuned("contiguize", DECLARED["contiguize"], tunables)
def contiguize(device: Device, out: Buffer, src: Buffer, view: View, itemsize: int,
               tun: Tunables | None = None) -> Any:
    """Copy ``view`` of ``src`` densely into ``out`` (returns the event; None if empty)."""
    n = view.numel
    if n == 0:
        return None
    tun = tun or tunables(device)
    shape, strides, _ = fold_axes(view.shape, view.strides)
    lo, hi = view.span()
    index_t = index_type(n, lo, hi + 1)
    unit = transpose_axis(shape, strides) if not _gpu(device) else None
    if unit is not None:
        tv = max(2, min(16, tun.vector_bytes // itemsize))
        tv = 1 << (tv.bit_length() - 1)
        sb = 4 if itemsize == 1 else 2  # superblocks of sb x sb register blocks (see the template)
        tile = max(sb * tv, TRANSPOSE_TILE_BYTES // itemsize)
        tile_l = max(sb * tv, TRANSPOSE_TILE_L_BYTES // itemsize)
        params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, tv), shape=shape, strides=strides,
                      offset=view.offset, n=n, vw=1, per_item=1, index_t=index_t, tile=tile, tile_l=tile_l,
                      unit=unit, tv=tv, sb=sb, exact=False)
        outer = math.prod(d for k, d in enumerate(shape) if k not in (unit, len(shape) - 1))
        n_tiles = outer * -(-shape[unit] // tile) * -(-shape[-1] // tile_l)
        tile_tun = replace(tun, local_size=min(tun.local_size, TRANSPOSE_LOCAL))
        return _start(device, "contiguize.cl.mako", "zyx_contiguize", params, n_tiles, 1, [out.cl, src.cl], tile_tun)
    offset = view.offset
    k = widen(device, itemsize, tun, shape[-1], *strides[:-1], offset) if strides[-1] == 1 else 1
    if k > 1:
        shape, strides = (*shape[:-1], shape[-1] // k), (*(s // k for s in strides[:-1]), 1)
        offset, n, itemsize = offset // k, n // k, itemsize * k
    run = shape[-1] if strides[-1] == 1 else 1
    vw = vector_width(itemsize, run, tun)
    exact = _exact_grid(device, itemsize, k, vw, shape)
    vw = 1 if exact else vw
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw), shape=shape, strides=strides,
                  offset=offset, n=n, vw=vw, per_item=tun.per_item, index_t=index_t, tile=0, tile_l=0, unit=None,
                  tv=1, sb=1, exact=exact)
    return _go(device, "contiguize.cl.mako", "zyx_contiguize", params, n, vw, exact, [out.cl, src.cl], tun, shape)


#: Tile of the transposed contiguize in bytes (CPUs): TILE along the source's unit axis by
#: TILE_L along the last axis, consecutive tiles stepping along the unit axis, 2 x 2 register
#: blocks of tv x tv transposed by vector shuffles, and (usually) stores without an
#: alignment test. A tile writes TILE_L-byte runs into each of its output rows (64-byte runs
#: wrote at half speed) while its source rows stream on from tile to tile. Measured on PoCL /
#: 2-core EPYC at 64 MiB against the copy ceiling in the same run (huge-page buffers, see
#: ``backend.pool``): float32 4096 x 4096 0.89-0.96x, float64 ~0.9x, float16 ~0.6x, uint8
#: ~0.37x (64 x 64 byte superblocks, byte shuffles). TILE_L 512 and 1024 B measure alike
#: (0.84-0.93, noisy); 2048 B fell to ~0.5x.
TRANSPOSE_TILE_BYTES = 64
TRANSPOSE_TILE_L_BYTES = 512

#: Work-group size cap of the transposed contiguize (one tile per work-item): many small
#: work-groups spread the tiles over the cores (measured 16 best of 4..256).
TRANSPOSE_LOCAL = 16

#: Smallest extents of the unit-stride axis and of the last axis for the tiled transpose.
TRANSPOSE_MIN = 4


def transpose_axis(shape: Sequence[int], strides: Sequence[int]) -> int | None:
    """The innermost axis of unit stride when it is not the last one (a transposed view), else None.

    On CPUs such a view is copied by tiles (``contiguize.cl.mako``, ``tile``): each
    work-item copies TILE x TILE blocks of (that axis, the last axis) with vector loads
    along the source's unit stride and vector stores along the output's rows, so both
    sides move whole cache lines; GPUs keep the elementwise copy.
    """
    if len(shape) < 2 or strides[-1] == 1 or shape[-1] < TRANSPOSE_MIN:
        return None
    for k in range(len(shape) - 2, -1, -1):
        if strides[k] == 1:
            return k if shape[k] >= TRANSPOSE_MIN else None
    return None


def flip_groups(shape: Sequence[int], dims: Sequence[int]) -> tuple[tuple[int, bool], ...]:
    """Axes of a flip merged into (extent, flipped) groups; extent-1 axes dropped."""
    groups: list[list[Any]] = []
    for k, d in enumerate(shape):
        if d == 1:
            continue
        flipped = k in dims
        if groups and groups[-1][1] == flipped:
            groups[-1][0] *= d
        else:
            groups.append([d, flipped])
    return tuple((g[0], g[1]) for g in groups) or ((1, False),)


@tuned("flip", DECLARED["flip"], tunables)
def flip(device: Device, out: Buffer, src: Buffer, shape: Sequence[int], dims: Sequence[int],
         itemsize: int, tun: Tunables | None = None) -> Any:
    """Dense ``src`` of ``shape`` reversed along ``dims`` (non-negative) into ``out``."""
    n = math.prod(shape)
    if n == 0:
        return None
    tun = tun or tunables(device)
    groups = flip_groups(shape, dims)
    sub = itemsize
    k = widen(device, itemsize, tun, groups[-1][0])
    if k > 1:  # a flipped last group also reverses the elements inside each word
        groups = (*groups[:-1], (groups[-1][0] // k, groups[-1][1]))
        n, itemsize = n // k, itemsize * k
    vw = vector_width(itemsize, groups[-1][0], tun)
    exact = _exact_grid(device, itemsize, k, vw, [g[0] for g in groups])
    vw = 1 if exact else vw
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  groups=groups, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_type(n), exact=exact, sub=sub)
    return _go(device, "flip.cl.mako", "zyx_flip", params, n, vw, exact, [out.cl, src.cl], tun,
               [g[0] for g in groups])


@tuned("roll", DECLARED["roll"], tunables)
def roll(device: Device, out: Buffer, src: Buffer, outer: int, dim_size: int, inner: int, shift: int,
         itemsize: int, tun: Tunables | None = None) -> Any:
    """Dense ``src`` folded to (outer, dim_size, inner) rolled by ``shift`` on the middle axis."""
    n = outer * dim_size * inner
    if n == 0:
        return None
    tun = tun or tunables(device)
    shift %= dim_size
    if inner == 1:
        return _roll_rows(device, out, src, outer, dim_size, shift, itemsize, tun)
    k = widen(device, itemsize, tun, inner)
    inner //= k
    n, itemsize = n // k, itemsize * k
    vw = vector_width(itemsize, inner, tun)
    exact = _exact_grid(device, itemsize, k, vw, (outer, dim_size, inner))
    vw = 1 if exact else vw
    index_t = index_type(n)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  outer=outer, dim_size=dim_size, inner=inner, n=n, vw=vw,
                  per_item=tun.per_item, index_t=index_t, exact=exact, rows=0, clamp=False)
    shift_arg = (np.int32 if index_t == "int" else np.int64)(shift)
    return _go(device, "roll.cl.mako", "zyx_roll", params, n, vw, exact, [out.cl, src.cl, shift_arg], tun,
               (outer, dim_size, inner))


def _roll_rows(device: Device, out: Buffer, src: Buffer, rows: int, row: int, shift: int, itemsize: int,
               tun: Tunables) -> Any:
    """Roll each of ``rows`` dense rows of ``row`` elements right by ``shift`` (in [0, row)) as
    two offset copies, out[:, s:] = src[:, :row - s] and out[:, :s] = src[:, row - s:]: one
    kernel (``zyx_roll_rows``) over a 2-D grid whose x is the output column, launched over each
    column range at a global offset with the input ``delta`` elements back (s, then s - row).
    The source index is then affine in x (no wrap-around select per element), so PoCL
    vectorizes the unaligned copy like concat's. Each part runs whole work-groups, then its
    remaining columns as one work-group per row of a size fixed by the row (a clamped
    variant): work-group sizes never depend on the shift, which is a run-time argument, so a
    new shift compiles nothing (sizing groups to the remainder cost PoCL 0.1-0.9 s of
    re-specialization per new shift). 1- and 2-byte elements move as words when the row and
    the shift allow (``widen``); CPUs move one word per work-item (the runtime vectorizes
    across them), GPUs vectors of up to vector_bytes dividing row and shift."""
    k = widen(device, itemsize, tun, row, shift)
    row, shift, itemsize = row // k, shift // k, itemsize * k
    n = rows * row
    vw = vector_width(itemsize, math.gcd(row, shift), tun) if _gpu(device) else 1
    index_t = index_type(n)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw), outer=rows, dim_size=row, inner=1,
                  n=n, vw=vw, per_item=1, index_t=index_t, exact=False, rows=row)
    kernel = compile_kernel(device, render("contracts/roll.cl.mako", clamp=False, **params), "zyx_roll_rows")
    local = max(1, min(tun.local_size, kernel.work_group_size))
    ity = np.int32 if index_t == "int" else np.int64
    events: list[Any] = []
    for col0, width, delta in ((shift, row - shift, shift), (0, shift, shift - row)):
        c0, w = col0 // vw, width // vw
        bulk = w // local * local
        if bulk:
            events.append(launch(kernel, (bulk, rows), (local, 1), [out.cl, src.cl, ity(delta)], offset=(c0, 0),
                                 counts=not events))
        if w > bulk:  # the rest of the part's columns: one clamped work-group per row
            clamped = compile_kernel(device, render("contracts/roll.cl.mako", clamp=True, **params), "zyx_roll_rows")
            group = min(max(1, min(tun.local_size, clamped.work_group_size)), 1 << (row // vw - 1).bit_length())
            events.append(launch(clamped, (group, rows), (group, 1), [out.cl, src.cl, ity(delta), ity(c0 + w)],
                                 offset=(c0 + bulk, 0), counts=not events))
    return events[0] if len(events) == 1 else events


@tuned("concat", DECLARED["concat"], tunables)
def concat_part(device: Device, out: Buffer, src: Buffer, outer: int, row_in: int, row_out: int, col0: int,
                itemsize: int, tun: Tunables | None = None) -> Any:
    """Copy dense ``src`` (outer x row_in) into columns ``col0..col0+row_in`` of ``out`` rows."""
    n = outer * row_in
    if n == 0:
        return None
    tun = tun or tunables(device)
    k = widen(device, itemsize, tun, row_in, row_out, col0)
    row_in, row_out, col0, n, itemsize = row_in // k, row_out // k, col0 // k, n // k, itemsize * k
    vw = vector_width(itemsize, row_in, tun)
    exact = _exact_grid(device, itemsize, k, vw, (outer, row_in))
    vw = 1 if exact else vw
    index_t = index_type(outer * row_out)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  outer=outer, row_in=row_in, row_out=row_out, n=n, vw=vw,
                  per_item=tun.per_item, index_t=index_t, exact=exact)
    col_arg = (np.int32 if index_t == "int" else np.int64)(col0)
    return _go(device, "concat.cl.mako", "zyx_concat", params, n, vw, exact, [out.cl, src.cl, col_arg], tun,
               (outer, row_in))


def _dest_extent(dest: Buffer, itemsize: int) -> int:
    return dest.nbytes // itemsize + 1


@tuned("write_slice", DECLARED["write_slice"], tunables)
def write_slice(device: Device, dest: Buffer, src: Buffer, shape: Sequence[int], strides: Sequence[int],
                base: int, itemsize: int, tun: Tunables | None = None) -> Any:
    """Scatter dense ``src`` of ``shape`` into ``dest`` at element ``base`` with ``strides``."""
    n = math.prod(shape)
    if n == 0:
        return None
    tun = tun or tunables(device)
    fshape, fstrides, _ = fold_axes(shape, strides)
    fshape, fstrides, base, n, itemsize, k = _widen_box(device, itemsize, tun, fshape, fstrides, None, base, n)
    run = fshape[-1] if fstrides[-1] == 1 else 1
    vw = vector_width(itemsize, run, tun)
    exact = _exact_grid(device, itemsize, k, vw, fshape)
    vw = 1 if exact else vw
    index_t = index_type(n, _dest_extent(dest, itemsize))
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  shape=fshape, strides=fstrides, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_t, exact=exact)
    base_arg = (np.int32 if index_t == "int" else np.int64)(base)
    return _go(device, "write_slice.cl.mako", "zyx_write_slice", params, n, vw, exact,
               [dest.cl, src.cl, base_arg], tun, fshape)


def _widen_box(device: Device, itemsize: int, tun: Tunables, shape: tuple[int, ...], strides: tuple[int, ...],
               axis: int | None, base: int, n: int,
               *also: int) -> tuple[tuple[int, ...], tuple[int, ...], int, int, int, int]:
    """A write box (folded ``shape``, dest ``strides``, ``base``, ``n``) and ``itemsize`` in
    words of ``widen`` elements where the last axis is contiguous and not the run-time ``axis``
    (``also``: more element steps the words must divide)."""
    if strides[-1] != 1 or axis == len(shape) - 1 or n == 0:
        return shape, strides, base, n, itemsize, 1
    k = widen(device, itemsize, tun, shape[-1], *strides[:-1], base, *also)
    if k == 1:
        return shape, strides, base, n, itemsize, 1
    return ((*shape[:-1], shape[-1] // k), (*(s // k for s in strides[:-1]), 1), base // k, n // k,
            itemsize * k, k)


def _axis_vector(itemsize: int, shape: Sequence[int], strides: Sequence[int], axis: int, tun: Tunables) -> int:
    if axis == len(shape) - 1 or strides[-1] != 1:
        return 1
    return vector_width(itemsize, shape[-1], tun)


@tuned("write_slice_rotating", DECLARED["write_slice_rotating"], tunables)
def write_slice_rotating(device: Device, dest: Buffer, src: Buffer, shape: Sequence[int],
                         strides: Sequence[int], axis: int, base: int, modulus: int,
                         position: int | tuple[Buffer, int, DType], itemsize: int,
                         tun: Tunables | None = None) -> Any:
    """Ring write of dense ``src`` into ``dest``; ``position`` is an int or (buffer, index, dtype)."""
    n = math.prod(shape)
    if n == 0:
        return None
    tun = tun or tunables(device)
    fshape, fstrides, faxis = fold_axes(shape, strides, keep=axis)
    fshape, fstrides, base, n, itemsize, k = _widen_box(device, itemsize, tun, fshape, fstrides, faxis, base, n)
    vw = _axis_vector(itemsize, fshape, fstrides, faxis, tun)
    exact = _exact_grid(device, itemsize, k, vw, fshape)
    vw = 1 if exact else vw
    if isinstance(position, tuple):
        pos_buf, pos_index, pos_dtype = position
        position_from = "uint" if pos_dtype.kind == "uint" else "int"
        pos_args = [pos_buf.cl, np.int64(pos_index)]
    else:
        position_from = "arg"
        pos_args = [np.int64(position)]
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  shape=fshape, strides=fstrides, axis=faxis, modulus=modulus,
                  position_from=position_from, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_type(n, _dest_extent(dest, itemsize)), exact=exact)
    return _go(device, "write_slice_rotating.cl.mako", "zyx_write_slice_rotating", params, n, vw, exact,
               [dest.cl, src.cl, np.int64(base), *pos_args], tun, fshape)


@tuned("write_slice_doff", DECLARED["write_slice_doff"], tunables)
def write_slice_doff(device: Device, dest: Buffer, src: Buffer, shape: Sequence[int], strides: Sequence[int],
                     axis: int, base: int, dest_extent: int, offset: tuple[Buffer, int], flags: tuple[Buffer, int],
                     itemsize: int, tun: Tunables | None = None) -> Any:
    """Write dense ``src`` into ``dest`` at the start on ``axis`` read from ``offset`` = (int64 buffer, index).

    ``flags`` = (flag buffer, slot): the kernel records (bad, offset) there for the host's check.
    Launched even for an empty source, so the offset is checked.
    """
    n = math.prod(shape)
    tun = tun or tunables(device)
    off_stride = strides[axis]
    fshape, fstrides, _ = fold_axes(shape, strides)  # the offset moves the whole box: no axis kept
    if n and fstrides[-1] == 1 and (off_stride == 1 or axis == len(shape) - 1):
        k = 1  # the run-time offset steps single elements along the contiguous run: no words
    else:
        fshape, fstrides, base, n, itemsize, k = _widen_box(device, itemsize, tun, fshape, fstrides, None, base, n,
                                                             off_stride)
    off_stride //= k
    run = fshape[-1] if n and fstrides[-1] == 1 else 1
    vw = vector_width(itemsize, run, tun) if n else 1
    exact = n > 0 and _exact_grid(device, itemsize, k, vw, fshape)  # an empty source still runs one work-item
    vw = 1 if exact else vw
    off_buf, off_index = offset
    flag_buf, slot = flags
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  shape=fshape, strides=fstrides, off_stride=off_stride, width=shape[axis],
                  dest_extent=dest_extent, n=n, vw=vw, per_item=tun.per_item,
                  index_t=index_type(n, _dest_extent(dest, itemsize)), exact=exact)
    return _go(device, "write_slice_doff.cl.mako", "zyx_write_slice_doff", params, n, vw, exact,
               [dest.cl, src.cl, np.int64(base), off_buf.cl, np.int64(off_index), flag_buf, np.int32(slot)],
               tun, fshape)


@tuned("triangular", DECLARED["triangular"], tunables)
def triangular(device: Device, out: Buffer, src: Buffer, batch: int, rows: int, cols: int, upper: bool,
               diagonal: int, itemsize: int, tun: Tunables | None = None) -> Any:
    """triu (``upper``) or tril of dense ``src`` (batch x rows x cols) into ``out``."""
    n = batch * rows * cols
    if n == 0:
        return None
    tun = tun or tunables(device)
    vw = vector_width(itemsize, cols, tun)
    rowwise = not _gpu(device)  # CPUs: whole rows per work-item (copy kept vectors, store zeros unread)
    params = dict(itemsize=itemsize, stream=streams(tun, n * itemsize, vw),
                  batch=batch, rows=rows, cols=cols, upper=bool(upper), n=n, vw=vw,
                  per_item=tun.per_item, index_t=index_type(n), rowwise=rowwise)
    diag = np.int64(max(min(diagonal, 2**62), -(2**62)))
    return _start(device, "triangular.cl.mako", "zyx_triangular", params,
                  batch * rows if rowwise else n // vw, tun.per_item, [out.cl, src.cl, diag], tun)


def masked_fill_tunables(device: Device) -> Tunables:
    """masked_fill's tunables: the device's, with vectors of at least MASKED_FILL_VECTOR_BYTES_CPU
    bytes on CPUs unless ``set_tunables`` overrode them."""
    tun = tunables(device)
    if _gpu(device) or device.id in _overrides:
        return tun
    return replace(tun, vector_bytes=max(tun.vector_bytes, MASKED_FILL_VECTOR_BYTES_CPU))


@tuned("masked_fill", DECLARED["masked_fill"], masked_fill_tunables)
def masked_fill(device: Device, out: Buffer, src: Buffer, mask: Buffer, n: int, fill_bits: np.ndarray,
                itemsize: int, tun: Tunables | None = None) -> Any:
    """``out = mask ? fill : src`` over ``n`` dense elements; ``fill_bits`` is one element's bits."""
    if n == 0:
        return None
    tun = tun or masked_fill_tunables(device)
    vw = max(1, min(16, tun.vector_bytes // itemsize))
    vw = 1 << (vw.bit_length() - 1)
    vw = 1 if _exact_grid(device, itemsize, 1, vw, (n,)) else vw  # 1-/2-byte elements on CPUs
    bits_np = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}[itemsize]
    fill = np.ascontiguousarray(fill_bits).view(bits_np).reshape(())[()]
    args = [out.cl, src.cl, mask.cl, fill, np.int64(n)]
    params = dict(itemsize=itemsize, vw=vw, per_item=tun.per_item, stream=streams(tun, n * itemsize, vw))
    if vw == 1:
        return _start_exact(device, "masked_fill.cl.mako", "zyx_masked_fill", params, n, args, tun)
    return _start(device, "masked_fill.cl.mako", "zyx_masked_fill", params, -(-n // vw), tun.per_item, args, tun)


# ---------------------------------------------------------------- cumsum


def accumulator(dtype: DType) -> DType:
    """The dtype cumsum accumulates ``dtype`` in (float64 for float64, else float32)."""
    return float64 if dtype is float64 else float32


def cumsum_strategy(outer: int, dim_size: int, inner: int, tun: Tunables) -> str:
    """``lanes`` (one work-item per lane) or ``blocks`` (work-group scan + block carries). Blocks of one
    element (``scan_local = scan_items = 1``) would carry a scan as long as the input forever: lanes."""
    lanes = outer * inner
    block = tun.scan_local * tun.scan_items
    if dim_size <= block or block < 2 or (inner > 1 and lanes >= tun.scan_lanes_min):
        return "lanes"
    return "blocks"


#: Strided cumsum lanes one work-item scans side by side (at most; CPUs: a 64-byte line of float32).
SCAN_LANE_VECTOR = 16


def scan_lane_vector(inner: int, tun: Tunables) -> int:
    """Neighbouring lanes per work-item of a strided "lanes" scan: a power of two dividing ``inner``."""
    lv = 1
    while lv * 2 <= SCAN_LANE_VECTOR and inner % (lv * 2) == 0:
        lv *= 2
    return lv


@tuned("cumsum", DECLARED["cumsum"], tunables)
def cumsum(device: Device, out: Buffer, src: Buffer, dtype: DType, outer: int, dim_size: int, inner: int,
           tun: Tunables | None = None) -> list[Any]:
    """Inclusive prefix sum of dense ``src`` (outer, dim_size, inner) along the middle axis.

    Returns the events of every launch (the block-carry pass recurses on the block totals).
    Sizes are run-time arguments: one build per dtype and code shape serves every size.
    """
    n = outer * dim_size * inner
    if n == 0:
        return []
    tun = tun or tunables(device)
    lanes = outer * inner
    acc = accumulator(dtype)
    strategy = cumsum_strategy(outer, dim_size, inner, tun)
    index_t = index_type(n)
    ity = np.int32 if index_t == "int" else np.int64
    sizes = [ity(dim_size), ity(inner)]
    base = dict(dtype=dtype, acc=acc.cl_storage, strategy=strategy, strided=inner > 1, index_t=index_t)
    if strategy == "lanes":
        lv = scan_lane_vector(inner, tun) if inner > 1 else 1
        source = render("contracts/cumsum.cl.mako", wg=1, items=1, lv=lv, **base)
        kernel = compile_kernel(device, source, "zyx_cumsum_lanes")
        local = max(1, min(tun.local_size, kernel.work_group_size))
        items = lanes // lv
        return [launch(kernel, (-(-items // local) * local,), (local,), [out.cl, src.cl, *sizes, ity(lanes)])]
    local, items = tun.scan_local, tun.scan_items
    chunks = -(-dim_size // (local * items))  # >= 2: shorter axes take the "lanes" strategy
    source = render("contracts/cumsum.cl.mako", wg=local, items=items, lv=1, **base)
    partials = device.pool.allocate(lanes * chunks * acc.itemsize)
    k_part = compile_kernel(device, source, "zyx_cumsum_partials")
    events = [launch(k_part, (local * chunks, lanes), (local, 1), [partials.cl, src.cl, *sizes, ity(chunks)])]
    carry = device.pool.allocate(lanes * chunks * acc.itemsize)
    events.extend(cumsum(device, carry, partials, acc, lanes, chunks, 1, tun))
    k_scan = compile_kernel(device, source, "zyx_cumsum_scan")
    events.append(launch(k_scan, (local * chunks, lanes), (local, 1),
                         [out.cl, src.cl, carry.cl, *sizes, ity(chunks)]))
    return events
