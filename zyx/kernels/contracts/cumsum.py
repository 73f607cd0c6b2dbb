"""cumsum: inclusive prefix sum along the middle axis of (outer, dim_size, inner), one
work-item per lane or a work-group scan with block carries."""
from __future__ import annotations

from typing import Any

from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType, float32, float64, index_np, index_type, int64
from zyx.kernels.contracts.common import SCAN_TUNABLES, Tunables, on_gpu, template, tunables
from zyx.kernels.contracts.tuning import tuned
from zyx.kernels.contracts.workload import Case, alloc, data, upload
from zyx.kernels.launch import launch_grid

CONTRACTS = ("cumsum_f32", "cumsum_f64", "cumsum_bf16", "cumsum_f16", "cumsum_int")
DECLARED = SCAN_TUNABLES
FIXED_DTYPE = True  # one contract per dtype: each calibrated on its own

#: Strided cumsum lanes one work-item scans side by side (at most; CPUs: a 64-byte line of float32).
SCAN_LANE_VECTOR = 16
#: CPUs, contiguous lanes ("rows" strategy): the bytes of accumulator a row step scans as one vector.
ROW_VECTOR_BYTES = 64
#: Inputs the rows kernel does not take: stored as ushort (16-bit floats: converted element by element), bool.
ROWS_EXCLUDED = ("float16", "bfloat16", "bool")


def accumulator(dtype: DType) -> DType:
    """The dtype cumsum (and cumprod) accumulates ``dtype`` in: int64 for bool and the integers
    (PyTorch's result dtype), float64 for float64, else float32."""
    if not dtype.is_float:
        return int64
    return float64 if dtype is float64 else float32


def result_dtype(dtype: DType) -> DType:
    """The dtype of cumsum's (and cumprod's) output: int64 for bool and the integers, else ``dtype``."""
    return dtype if dtype.is_float else int64


def cumsum_strategy(outer: int, dim_size: int, inner: int, tun: Tunables, cpu: bool = False) -> str:
    """``lanes`` (one work-item per lane) or ``blocks`` (work-group scan + block carries).

    Lanes when the axis fits one block, or when there are ``scan_lanes_min`` lanes or more and
    they are strided or (``cpu``) contiguous: PoCL runs a work-group's items side by side in
    vectors, each vector load gathering from neighbouring lanes whose cache lines the next
    iterations reuse, so many long rows scan in one pass, faster than the blocks. Blocks of one
    element (``scan_local = scan_items = 1``) would carry a scan as long as the input forever: lanes."""
    lanes = outer * inner
    block = tun.scan_local * tun.scan_items
    if dim_size <= block or block < 2 or ((inner > 1 or cpu) and lanes >= tun.scan_lanes_min):
        return "lanes"
    return "blocks"


def row_vector(dtype: DType, outer: int, dim_size: int, inner: int, tun: Tunables, strategy: str, cpu: bool) -> int:
    """The vector width of cumsum's "rows" kernel for this scan, 0 where it does not take it: on CPUs, many
    (``scan_lanes_min``) contiguous rows of at least two vectors of an input stored as its own C type take it
    instead of "lanes" (whose vector loads gather an element from each of 16 rows). Within a vector the
    additions run as a tree, not in order: NumPy's float32 bits may differ, and where partial sums overflow
    an element may be finite where the in-order sum gives inf."""
    vec = ROW_VECTOR_BYTES // accumulator(dtype).itemsize
    rows = (cpu and strategy == "lanes" and inner == 1 and dtype.name not in ROWS_EXCLUDED
            and outer >= tun.scan_lanes_min and dim_size >= 2 * vec)
    return vec if rows else 0


#: CPUs: a "lanes" scan runs at least this many work-groups per compute unit (PoCL runs one group per
#: core at a time, so a few big groups balance badly on a shared machine), each of at least
#: SCAN_LANES_LOCAL_MIN work-items (one AVX-512 vector of float lanes).
SCAN_LANES_GROUPS_PER_CU, SCAN_LANES_LOCAL_MIN = 8, 16


def lanes_local(device: Device, tun: Tunables, max_local: int, items: int) -> int:
    """The work-group size of a "lanes" scan of ``items`` work-items."""
    local = max(1, min(tun.local_size, max_local))
    if not on_gpu(device):
        groups = SCAN_LANES_GROUPS_PER_CU * device.info.compute_units
        while local > SCAN_LANES_LOCAL_MIN and -(-items // local) < groups:
            local //= 2
    return local


def scan_lane_vector(inner: int, tun: Tunables) -> int:
    """Neighbouring lanes per work-item of a strided "lanes" scan: a power of two dividing ``inner``."""
    lv = 1
    while lv * 2 <= SCAN_LANE_VECTOR and inner % (lv * 2) == 0:
        lv *= 2
    return lv


@tuned("cumsum", DECLARED, tunables)
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
    strategy = cumsum_strategy(outer, dim_size, inner, tun, not on_gpu(device))
    index_t = index_type(n)
    ity = index_np(index_t)
    sizes = [ity(dim_size), ity(inner)]
    base = dict(dtype=dtype, out_dtype=result_dtype(dtype), acc=acc.cl_storage, strategy=strategy, strided=inner > 1,
                index_t=index_t)
    tpl = template(CONTRACTS[0])
    vec = row_vector(dtype, outer, dim_size, inner, tun, strategy, not on_gpu(device))
    if vec:
        source = render(tpl, wg=1, items=1, lv=1, vec=vec, **{**base, "strategy": "rows"})
        kernel = compile_kernel(device, source, "zyx_cumsum_rows")
        local = lanes_local(device, tun, kernel.work_group_size, lanes)
        return [launch_grid(kernel, (lanes,), local, [out.cl, src.cl, *sizes, ity(lanes)])]
    if strategy == "lanes":
        lv = scan_lane_vector(inner, tun) if inner > 1 else 1
        source = render(tpl, wg=1, items=1, lv=lv, vec=1, **base)
        kernel = compile_kernel(device, source, "zyx_cumsum_lanes")
        items = lanes // lv
        local = lanes_local(device, tun, kernel.work_group_size, items)
        return [launch_grid(kernel, (items,), local, [out.cl, src.cl, *sizes, ity(lanes)])]
    local, items = tun.scan_local, tun.scan_items
    chunks = -(-dim_size // (local * items))  # >= 2: shorter axes take the "lanes" strategy
    source = render(tpl, wg=local, items=items, lv=1, vec=1, **base)
    partials = device.pool.allocate(lanes * chunks * acc.itemsize)
    k_part = compile_kernel(device, source, "zyx_cumsum_partials")
    events = [launch(k_part, (local * chunks, lanes), (local, 1), [partials.cl, src.cl, *sizes, ity(chunks)])]
    carry = device.pool.allocate(lanes * chunks * acc.itemsize)
    events.extend(cumsum(device, carry, partials, acc, lanes, chunks, 1, tun))
    k_scan = compile_kernel(device, source, "zyx_cumsum_scan")
    events.append(launch(k_scan, (local * chunks, lanes), (local, 1),
                         [out.cl, src.cl, carry.cl, *sizes, ity(chunks)]))
    return events


def calibration(device: Device, dt: DType, n: int) -> Case:
    """A flat scan of ``n`` elements."""
    x = data((n,), dt)
    src, out = upload(device, x), alloc(device, n, result_dtype(dt))
    return Case(f"cumsum ({n},) {dt.name}", lambda: cumsum(device, out, src, dt, 1, n, 1), [Operand(dt, (n,))],
                {"dim": 0}, {"x": x}, [src, out])


def tune_op(zyx: Any, x: Any, rows: int) -> None:
    """What ``zyx tune`` runs for this kernel on a (rows, 4096) float32 tensor ``x``."""
    x.cumsum(1).realize()
