"""One query position attending over a KV cache in one kernel: ``templates/decode_attention.cl.mako``.

The decode step of a language model attends one new query per head over the cached keys and values.
Composed from tensor ops it is five kernels a layer (scores, max, exponent sum, weights, weighted sum)
reducing over the cache's whole ring with the unused rows masked; this kernel walks only the ``n`` live
rows once with an online softmax. ``n`` is a run-time argument, so a replayed plan serves every step.
"""
from __future__ import annotations

import functools
from typing import Any

from zyx.backend import journal
from zyx.backend.device import Device
from zyx.backend.launch import CompiledKernel, compile_kernel
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import index_np, index_type
from zyx.ir.variable import VariableArg
from zyx.kernels.launch import launch_grid

VECTOR_WIDTHS = (16, 8, 4, 2, 1)
ROWS_A_STEP = 4  # cached rows scored together before one rescale (``TB``: independent work for a core to overlap)
REGISTER_VECTORS = 32  # vector registers a work item may fill (AVX-512's 32)
HEAD_VECTORS = 24  # of them, the query, accumulator and one key row's vectors of the heads an item takes


def vector_width(d: int) -> int:
    """The widest float vector dividing the head dim ``d``."""
    return next(w for w in VECTOR_WIDTHS if d % w == 0)


#: where a ring's elements are: (offset, (row stride, batch stride, head stride)) in floats, unit stride along d
Strides = tuple[int, tuple[int, ...]]


def _heads_an_item(group: int, chunks: int) -> int:
    """Query heads of a key/value head's ``group`` a work item takes: the most (a divisor of ``group``) whose
    query and accumulator vectors (``chunks`` each) fit ``HEAD_VECTORS`` beside one key row; at least 1 (sharing
    each key and value row among more heads measured slower once that leaves the row loop short of registers)."""
    return max([g for g in range(1, group + 1) if group % g == 0 and (2 * g + 1) * chunks <= HEAD_VECTORS],
               default=1)


@functools.lru_cache(maxsize=64)
def _kernel(device: Device, b: int, h: int, kvh: int, d: int, scale: float, ks: Strides, vs: Strides,
            ms: Strides, index_t: str) -> tuple[CompiledKernel, int]:
    """The compiled kernel and the query heads a work item of it takes."""
    vw, group = vector_width(d), h // kvh
    heads = _heads_an_item(group, d // vw)
    live = (2 * heads + 1) * (d // vw)  # query and accumulator vectors a head, one row's key
    rows = min(ROWS_A_STEP, (REGISTER_VECTORS - live) // heads + 1) if live < REGISTER_VECTORS else 1
    source = render("decode_attention.cl.mako", B=b, H=h, KVH=kvh, D=d, VW=vw, TB=rows, GW=heads, scale=scale,
                    K0=ks[0], KS=ks[1], V0=vs[0], VS=vs[1], M0=ms[0], MS=ms[1], index_t=index_t)
    return compile_kernel(device, source, "zyx_decode_attention"), heads


def decode_attention(device: Device, q: Buffer, k: Buffer, v: Buffer, mask: Buffer, n: Any, rows: int, b: int,
                     h: int, kvh: int, d: int, scale: float, ks: Strides, vs: Strides, ms: Strides) -> Buffer:
    """A new (``b``, ``h``, ``d``) float32 buffer: query ``q`` (``b``, ``h``, ``d``, dense) attending over rows
    ``0 .. n - 1`` of the key and value rings of ``rows`` rows in ``k`` and ``v`` (element (j, b, h, d) where
    ``ks`` / ``vs`` say) with the additive ``mask`` (element (j, b) where ``ms`` says); ``n`` an int or a
    ``VariableArg`` (a plan binds it at replay)."""
    out = device.pool.allocate(max(b * h * d, 1) * 4)
    if not (b and h and d):
        return out
    last = [o + sum(s * (e - 1) for s, e in zip(st, (rows, b, kvh))) for o, st in (ks, vs, ms)]
    index_t = index_type(last[0] + d, last[1] + d, last[2] + 1, b * h * d)
    n_arg = index_np(index_t)(int(n))
    if isinstance(n, VariableArg):
        journal.note_param(n_arg, n)
    kernel, heads = _kernel(device, b, h, kvh, d, float(scale), ks, vs, ms, index_t)
    launch_grid(kernel, (b * h // heads,), 1, [out.cl, q.cl, k.cl, v.cl, mask.cl, n_arg], exact=True)
    return out


__all__ = ["decode_attention", "vector_width"]
