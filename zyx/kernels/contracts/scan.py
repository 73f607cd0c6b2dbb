"""The launcher shared by the scans beyond cumsum (cumprod, logcumsumexp, cummax/cummin):
one work-item per lane or a work-group scan with block carries, as cumsum does, over the
operator their template defines (``templates/contracts/scan.mako``)."""
from __future__ import annotations

from typing import Any

from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import DType, index_np, index_type
from zyx.kernels.contracts.common import Tunables, on_gpu
from zyx.kernels.contracts.cumsum import cumsum_strategy, lanes_local, scan_lane_vector
from zyx.kernels.launch import launch_grid


def scan(device: Device, name: str, template: str, out: Buffer, out_idx: Buffer | None, src: Buffer,
         dtype: DType, out_dtype: DType, acc: DType, op: str, outer: int, dim_size: int, inner: int, tun: Tunables,
         src_idx: Buffer | None = None) -> list[Any]:
    """Inclusive scan of dense ``src`` (outer, dim_size, inner) along the middle axis into ``out``
    (``out_dtype``), and with ``out_idx`` the int64 index of each running value (cummax/cummin).

    ``acc`` is the dtype values are folded in (also that of the block totals); ``src_idx``
    (the carry pass of an indexed scan) gives each input element's index instead of its position.
    Returns the events of every launch (the carry pass recurses on the block totals).
    """
    n = outer * dim_size * inner
    if n == 0:
        return []
    indexed = out_idx is not None
    lanes = outer * inner
    index_t = index_type(n)
    ity = index_np(index_t)
    sizes = [ity(dim_size), ity(inner)]
    idx_in = [src_idx.cl] if src_idx is not None else []
    idx_out = [out_idx.cl] if indexed else []
    strategy = cumsum_strategy(outer, dim_size, inner, tun, not on_gpu(device))
    base = dict(name=name, dtype=dtype, out_dtype=out_dtype, acc=acc.cl_storage, op=op, float_acc=acc.is_float,
                strategy=strategy, strided=inner > 1, carry=src_idx is not None, index_t=index_t)
    if strategy == "lanes":
        lv = scan_lane_vector(inner, tun) if inner > 1 else 1
        kernel = compile_kernel(device, render(template, wg=1, items=1, lv=lv, **base), f"zyx_{name}_lanes")
        items = lanes // lv
        local = lanes_local(device, tun, kernel.work_group_size, items)
        return [launch_grid(kernel, (items,), local,
                            [out.cl, *idx_out, src.cl, *idx_in, *sizes, ity(lanes)])]
    local, items = tun.scan_local, tun.scan_items
    chunks = -(-dim_size // (local * items))  # >= 2: shorter axes take the "lanes" strategy
    source = render(template, wg=local, items=items, lv=1, **base)
    totals = device.pool.allocate(lanes * chunks * acc.itemsize)
    totals_idx = device.pool.allocate(lanes * chunks * 8) if indexed else None
    k_part = compile_kernel(device, source, f"zyx_{name}_partials")
    events = [launch(k_part, (local * chunks, lanes), (local, 1),
                     [totals.cl, *([totals_idx.cl] if totals_idx else []), src.cl, *idx_in, *sizes, ity(chunks)])]
    carry = device.pool.allocate(lanes * chunks * acc.itemsize)
    carry_idx = device.pool.allocate(lanes * chunks * 8) if indexed else None
    events.extend(scan(device, name, template, carry, carry_idx, totals, acc, acc, acc, op, lanes, chunks, 1, tun,
                       totals_idx))
    k_scan = compile_kernel(device, source, f"zyx_{name}_scan")
    events.append(launch(k_scan, (local * chunks, lanes), (local, 1),
                         [out.cl, *idx_out, src.cl, *idx_in, carry.cl, *([carry_idx.cl] if carry_idx else []),
                          *sizes, ity(chunks)]))
    return events
