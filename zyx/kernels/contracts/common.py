"""What every contract kernel shares: the tunables, vector widths, words, grids, index
types, stream decisions, the template of a contract, and the launchers of the byte kernels.

Tunables (``DECLARED`` of each kernel module names those it takes, except
``stream_bytes``, a device-derived choice the tuner does not search; defaults derived
from the device):

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
                  output bypasses the caches, leaving a small result in cache for its reader
``scan_local``    cumsum work-group size (a power of two)
``scan_items``    cumsum elements per work-item; a scan block is scan_local * scan_items
``scan_lanes_min`` cumsum runs one work-item per lane (strategy "lanes") when the scanned
                  axis is strided and there are at least this many lanes, or the axis
                  is shorter than ``scan_items``
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.contracts.spec.registry import get
from zyx.kernels.launch import run

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


#: The tunables a byte kernel declares (every kernel but cumsum).
BYTE_TUNABLES: tuple[str, ...] = ("local_size", "per_item", "vector_bytes")
#: The tunables the scan (cumsum) declares.
SCAN_TUNABLES: tuple[str, ...] = ("scan_local", "scan_items", "scan_lanes_min")

#: CPUs: outputs of this many bytes or more are streamed (non-temporal stores). Below it a
#: result likely stays in the last-level cache for the kernel that reads it next.
STREAM_BYTES_CPU = 4 << 20

_defaults: dict[tuple[str, bool], Tunables] = {}
_overrides: dict[str, Tunables] = {}


def on_gpu(device: Device) -> bool:
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
    work-group launch has a fixed cost; a run of 256 is summed as 4 add chains).
    Every size is clamped to the device's maximum work-group size.
    """
    gpu = on_gpu(device)
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


def overridden(device: Device) -> bool:
    """Whether ``set_tunables`` overrode the tunables of ``device``."""
    return device.id in _overrides


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


# ---------------------------------------------------------------- templates


@functools.cache
def template(contract: str) -> str:
    """The template of ``contract`` under ``templates/``: its document's ``entry_point``
    (a file of the provider's ``templates: templates/contracts/`` folder)."""
    return f"contracts/{get(contract).entry_point}"


# ---------------------------------------------------------------- helpers


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


def run_strided(device: Device, template: str, name: str, params: dict[str, Any], n_vec: int,
                per_item: int, args: Sequence[Any], tun: Tunables) -> Any:
    """Render, build (cached) and launch a 1-D grid-stride byte kernel over ``n_vec`` vectors."""
    items = max(1, -(-n_vec // per_item))
    return run(device, render(template, **params), name, (items,), tun.local_size, args)


def run_exact(device: Device, template: str, name: str, params: dict[str, Any], n: int,
              args: Sequence[Any], tun: Tunables) -> Any:
    """Render, build and launch a kernel doing one item per work-item over exactly ``n``
    work-items, with no bounds test in the kernel: whole work-groups first, then the
    remainder as work-groups of one at a global offset. Returns the event (a list of two
    with a remainder)."""
    return run(device, render(template, **params), name, (n,), tun.local_size, args, exact=True)


#: CPUs: 1- and 2-byte elements are moved as unsigned words of up to this many bytes when
#: the contiguous run and every offset and extent along it allow (``widen``): PoCL runs
#: uint/ulong vectors at copy speed, explicit uchar/ushort vectors far slower.
WIDE_WORD_BYTES = 8


def widen(device: Device, itemsize: int, tun: Tunables, *along: int) -> int:
    """How many ``itemsize``-byte elements a CPU byte kernel moves as one word: the largest
    power of two k with k * itemsize <= min(WIDE_WORD_BYTES, vector_bytes) dividing every
    value of ``along`` (the contiguous run and each element offset, stride or extent the
    kernel steps by, run-time ones included); 1 on GPUs and for 4- and 8-byte elements."""
    if on_gpu(device) or itemsize >= 4:
        return 1
    k = max(1, min(WIDE_WORD_BYTES, tun.vector_bytes) // itemsize)
    k = 1 << (k.bit_length() - 1)
    while k > 1 and any(v % k for v in along):
        k //= 2
    return k


#: CPUs: words widened from smaller elements (``widen``) with vectors narrower than this take
#: the exact grid (a grid-stride loop of narrow words is slower).
EXACT_WORDS_VW = 4

#: CPUs: an exact grid is 2-D (``run_rows``) when the last axis longer than 1 has at
#: least this many elements; shorter rows take the 1-D grid (a division per element).
EXACT_ROWS_MIN = 64


def exact_grid(device: Device, itemsize: int, k: int, vw: int, shape: Sequence[int]) -> bool:
    """Whether a CPU byte kernel does one element per work-item over an exact grid (no loop,
    no bounds test; PoCL vectorizes it across work-items) instead of explicit vectors:
    always for 1- and 2-byte elements except short rows with vectors (their 1-D grid divides
    per element), and for ``k``-element words or 4- and 8-byte elements without a vector of
    at least EXACT_WORDS_VW lanes (a grid-stride loop of scalars is slower)."""
    if on_gpu(device):
        return False
    if itemsize < 4:
        return vw == 1 or row_extent(shape) >= EXACT_ROWS_MIN
    return vw < (EXACT_WORDS_VW if k > 1 else 2)


def row_extent(shape: Sequence[int]) -> int:
    """The extent of the last axis longer than 1 (1 if none)."""
    return next((d for d in reversed(shape) if d > 1), 1)


def run_rows(device: Device, template: str, name: str, params: dict[str, Any], rows: int, row: int,
             args: Sequence[Any], tun: Tunables) -> Any:
    """Render, build and launch a kernel doing one item per work-item over an exact 2-D grid
    of ``row`` columns by ``rows`` rows, with no bounds test in the kernel: whole work-groups
    along the row, then the rest of every row as one work-group at a global offset (work-groups
    of one, as ``run_exact`` uses, are slower here). Returns the event (a list of two with a rest)."""
    return run(device, render(template, **params), name, (row, rows), tun.local_size, args, exact=True)


def run_bytes(device: Device, template: str, name: str, params: dict[str, Any], n: int, vw: int, exact: bool,
              args: Sequence[Any], tun: Tunables, shape: Sequence[int] = ()) -> Any:
    """Launch a byte kernel over ``n`` elements: grid-stride over vectors, or with ``exact``
    one element per work-item over an exact grid, 2-D (rows of the last axis of ``shape``
    longer than 1, when that has EXACT_ROWS_MIN elements or more) or 1-D. Returns one event,
    or a list when a remainder launch is needed."""
    if not exact:
        return run_strided(device, template, name, {**params, "exact": 0}, max(n // vw, 1), tun.per_item, args,
                           tun)
    row = row_extent(shape)
    if row >= EXACT_ROWS_MIN and n > row:
        return run_rows(device, template, name, {**params, "exact": row}, n // row, row, args, tun)
    return run_exact(device, template, name, {**params, "exact": 1}, n, args, tun)


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


# ---------------------------------------------------------------- write boxes (write_slice*)


def dest_elements(dest: Buffer, itemsize: int) -> int:
    """An element count past the end of ``dest`` (the index type must reach it)."""
    return dest.nbytes // itemsize + 1


def widen_box(device: Device, itemsize: int, tun: Tunables, shape: tuple[int, ...], strides: tuple[int, ...],
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
