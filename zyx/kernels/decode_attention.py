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


def vector_width(d: int) -> int:
    """The widest float vector dividing the head dim ``d``."""
    return next(w for w in VECTOR_WIDTHS if d % w == 0)


def _index_t(rows: int, b: int, kvh: int, d: int) -> str:
    return index_type(rows * b * kvh * d, rows * b)


@functools.lru_cache(maxsize=64)
def _kernel(device: Device, b: int, h: int, kvh: int, d: int, scale: float, index_t: str) -> CompiledKernel:
    source = render("decode_attention.cl.mako", B=b, H=h, KVH=kvh, D=d, VW=vector_width(d), scale=scale,
                    index_t=index_t)
    return compile_kernel(device, source, "zyx_decode_attention")


def decode_attention(device: Device, q: Buffer, k: Buffer, v: Buffer, mask: Buffer, n: Any, rows: int, b: int,
                     h: int, kvh: int, d: int, scale: float) -> Buffer:
    """A new (``b``, ``h``, ``d``) float32 buffer: query ``q`` (``b``, ``h``, ``d``) attending over rows
    ``0 .. n - 1`` of the rings ``k`` and ``v`` (``rows``, ``b``, ``kvh``, ``d``) with the additive ``mask``
    (``rows``, ``b``); ``n`` an int or a ``VariableArg`` (a plan binds it at replay). All dense float32."""
    out = device.pool.allocate(max(b * h * d, 1) * 4)
    if not (b and h and d):
        return out
    index_t = _index_t(rows, b, kvh, d)
    n_arg = index_np(index_t)(int(n))
    if isinstance(n, VariableArg):
        journal.note_param(n_arg, n)
    kernel = _kernel(device, b, h, kvh, d, float(scale), index_t)
    launch_grid(kernel, (b * h,), 1, [out.cl, q.cl, k.cl, v.cl, mask.cl, n_arg], exact=True)
    return out


__all__ = ["decode_attention", "vector_width"]
