"""The direct 2-D convolution kernels for CPUs: ``templates/conv2d.cl.mako`` and its weight gradient
``templates/conv2d_wgrad.cl.mako``, launched on dense buffers.

The forward kernel keeps a register tile of ``p`` output pixels (along W) by ``v`` vectors of output
channels and reduces over (kernel row, input channel, kernel column) reading the unpadded input in place,
NCHW or channels-last (NHWC) alike (padding rows are skipped, border columns tested), so neither an im2col
buffer nor a padded copy is made. The output is channels-last (N, OH, OW, O), the bias added in the kernel.
The weight-gradient kernel keeps a channel vector x input channels x kernel offsets in registers over the
whole (N, OH, OW) reduce. ``zyx.nn.functional_conv`` runs both as ``EXTERN`` graph nodes and composes the gradients.

The forward tile and the weight-gradient kernel's channel count are tunables (``zyx.kernels.conv_tuning``):
the heuristics here by default, the tuning database or a search under ``ZYX_TUNE>=1``, chosen when the
kernel first runs (on its real buffers); ``conv_tuning.forced_tile`` pins the tile (tests, hand sweeps).
"""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx import settings
from zyx.backend.device import Device
from zyx.backend.launch import compile_kernel
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.kernels import conv_tuning
from zyx.kernels.launch import launch_grid

#: a kernel side up to this is unrolled into the kernel (the loop body grows as KH * KW)
MAX_KERNEL_SIDE = 11
#: accumulator registers a tile may use, counted in 64-byte vectors (AVX-512 has 32 of them; the
#: rest hold the weight vectors and the broadcast inputs)
ACC_REGISTERS = 28
#: the most output pixels a tile holds along W (more measured no faster)
MAX_PIXELS = 8
#: the most channel vectors a tile holds (wider tiles measured slower on the ResNet 3x3 layer)
MAX_VECTORS = 2
#: the weight gradient kernel's accumulator vectors at most (channels x kernel offsets); beyond, the
#: composed per-offset reduces
WGRAD_ACCUMULATORS = 27


def vector_width(dtype: dtypes.DType, og: int) -> int:
    """The widest OpenCL vector (16 floats, 8 doubles at most) that divides the group's output channels;
    0 when none of at least 4 lanes does (the composed convolution is used then)."""
    for vw in ((16, 8, 4) if dtype.itemsize == 4 else (8, 4)):
        if og % vw == 0:
            return vw
    return 0


def eligible(device: Any, dtype: dtypes.DType, n: int, o: int, groups: int, ks: tuple[int, ...],
             outs: tuple[int, ...]) -> bool:
    """Whether the direct kernel runs this convolution: a 2-D one on a CPU in float32/float64, the
    group's output channels a multiple of 4, a kernel of at most ``MAX_KERNEL_SIDE`` a side, and
    something to compute."""
    return (len(ks) == 2 and settings.heuristics_kind(device) == "cpu" and dtype in (dtypes.float32, dtypes.float64)
            and vector_width(dtype, o // groups) > 0 and max(ks) <= MAX_KERNEL_SIDE and n * math.prod(outs) > 0)


def tile(dtype: dtypes.DType, og: int, ow: int) -> tuple[int, int, int]:
    """(pixels, vectors, rows) of a work item: as many channel vectors as fit (up to ``MAX_VECTORS``,
    dividing the group's channels), then as many pixels as the accumulator registers allow, at most the row."""
    vw = vector_width(dtype, og)
    regs = vw * dtype.itemsize / 64  # 64-byte registers a vector takes
    v = next(v for v in (4, 2, 1) if v <= MAX_VECTORS and (og // vw) % v == 0)
    p = max(1, min(MAX_PIXELS, int(ACC_REGISTERS // (v * regs)), ow))
    return p, v, 1


def input_strides(shape: tuple[int, ...], channels_last: bool) -> tuple[int, int, int, int]:
    """The element strides (N, C, H, W) of a dense input of ``shape`` (N, C, H, W), stored NCHW or NHWC."""
    n, c, h, w = shape
    return (h * w * c, 1, w * c, c) if channels_last else (c * h * w, h * w, w, 1)


def _source(dtype: dtypes.DType, shape: tuple[int, ...], wshape: tuple[int, ...], outs: tuple[int, ...],
            st: tuple[int, ...], lo: tuple[int, ...], dl: tuple[int, ...], groups: int, bias: bool,
            til: tuple[int, int, int], xs: tuple[int, int, int, int]) -> tuple[str, str, tuple[int, int, int]]:
    n, c, h, w = shape
    o, _, kh, kw = wshape
    p, v, rows = til
    vw = vector_width(dtype, o // groups)
    name = "zyx_conv2d"
    src = render("conv2d.cl.mako", name=name, t="double" if dtype == dtypes.float64 else "float", vw=vw, p=p, v=v,
                 rows=rows, N=n, C=c, H=h, W=w, O=o, OH=outs[0], OW=outs[1], KH=kh, KW=kw, sh=st[0], sw=st[1],
                 ph=lo[0], pw=lo[1], dh=dl[0], dw=dl[1], groups=groups, bias=bias, xsN=xs[0], xsC=xs[1], xsH=xs[2],
                 xsW=xs[3])
    grid = (o // (vw * v) * -(-outs[1] // p), -(-outs[0] // rows), n)
    return src, name, grid


def conv2d(device: Device, bufs: list[Buffer], dtype: dtypes.DType, xshape: tuple[int, ...],
           wshape: tuple[int, ...], outs: tuple[int, ...], st: tuple[int, ...], lo: tuple[int, ...],
           dl: tuple[int, ...], groups: int, til: tuple[int, int, int], forced: bool,
           channels_last: bool = False) -> Buffer:
    """Enqueue the convolution of the dense ``bufs`` (input (N, C, H, W), stored NHWC when ``channels_last``,
    weight permuted to (KH, Cg, KW, O), bias (O,) when given) into a new (N, OH, OW, O) buffer. ``til``: the
    heuristic tile, or the tile ``forced`` by ``conv_tuning.forced_tile`` (then it is not tuned)."""
    xs = input_strides(xshape, channels_last)
    n, o = xshape[0], wshape[0]
    has_bias = len(bufs) == 3
    nbytes = n * outs[0] * outs[1] * o * dtype.itemsize

    def build(cfg: dict[str, int]) -> tuple[Any, tuple[int, int, int]]:
        src, name, grid = _source(dtype, xshape, wshape, outs, st, lo, dl, groups, has_bias,
                                  (cfg["p"], cfg["v"], cfg["rows"]), xs)
        return compile_kernel(device, src, name), grid

    args = [b.cl for b in bufs]
    cfg = dict(zip(("p", "v", "rows"), til))
    if not forced:
        og, vw = o // groups, vector_width(dtype, o // groups)
        key = (f"conv2d_direct:{dtype.name}:k{wshape[2]}x{wshape[3]}:s{st}:p{lo}:d{dl}:g{groups}"
               f":{'bias' if has_bias else 'nobias'}{':nhwc' if channels_last else ''}")
        cfg = conv_tuning.tuned(device, key, (n, xshape[1] // groups, *xshape[2:], og, *outs),
                                conv_tuning.tile_space(vw, og, outs[0], outs[1], dtype.itemsize), cfg, build,
                                args, nbytes, dtype, f"conv2d {'x'.join(map(str, xshape))} -> {o}")
    kernel, grid = build(cfg)
    out = device.pool.allocate(nbytes)
    launch_grid(kernel, grid, 1, [out.cl, *args])
    return out


def wgrad_channels(cg: int, kh: int, kw: int) -> int | None:
    """The input channels a work item of the weight-gradient kernel accumulates, or None when its
    accumulators would not fit the registers (large kernels: the composed gradient then)."""
    cb = 2 if cg % 2 == 0 and 2 * kh * kw <= WGRAD_ACCUMULATORS else 1
    return None if cb * kh * kw > WGRAD_ACCUMULATORS else cb


def conv2d_wgrad(device: Device, bufs: list[Buffer], dtype: dtypes.DType, xshape: tuple[int, ...],
                 wshape: tuple[int, ...], outs: tuple[int, ...], st: tuple[int, ...], lo: tuple[int, ...],
                 dl: tuple[int, ...], groups: int, cb: int, channels_last: bool = False) -> Buffer:
    """Enqueue the weight gradient (Cg, KH, KW, O) from the dense ``bufs``: the output gradient (N, OH, OW, O)
    and the unpadded input of shape ``xshape`` (N, C, H, W), stored NHWC when ``channels_last``, padded by
    ``lo`` before (the kernel tests the border); ``cb`` the heuristic ``wgrad_channels``."""
    xs = input_strides(xshape, channels_last)
    o, cg, kh, kw = wshape
    n, c, h, w = xshape
    vw = vector_width(dtype, o // groups)
    name = "zyx_conv2d_wgrad"
    nbytes = cg * kh * kw * o * dtype.itemsize

    def build(cfg: dict[str, int]) -> tuple[Any, tuple[int]]:
        src = render("conv2d_wgrad.cl.mako", name=name, t="double" if dtype == dtypes.float64 else "float", vw=vw,
                     cb=cfg["cb"], N=n, C=c, H=h, W=w, O=o, OH=outs[0], OW=outs[1], KH=kh, KW=kw, sh=st[0],
                     sw=st[1], dh=dl[0], dw=dl[1], ph=lo[0], pw=lo[1], groups=groups, xsN=xs[0], xsC=xs[1],
                     xsH=xs[2], xsW=xs[3])
        return compile_kernel(device, src, name), (o // vw * (cg // cfg["cb"]),)

    args = [b.cl for b in bufs]
    key = f"conv2d_wgrad:{dtype.name}:k{kh}x{kw}:s{st}:p{lo}:d{dl}:g{groups}{':nhwc' if channels_last else ''}"
    cfg = conv_tuning.tuned(device, key, (n, cg, h, w, o // groups), conv_tuning.wgrad_space(cg, kh, kw),
                            {"cb": cb}, build, args, nbytes, dtype, f"conv2d weight gradient {n}x{c}x{h}x{w} -> {o}")
    kernel, grid = build(cfg)
    out = device.pool.allocate(nbytes)
    launch_grid(kernel, grid, 1, [out.cl, *args])
    return out


__all__ = ["ACC_REGISTERS", "MAX_KERNEL_SIDE", "MAX_PIXELS", "MAX_VECTORS", "WGRAD_ACCUMULATORS",
           "conv2d", "conv2d_wgrad", "eligible", "input_strides", "tile", "vector_width", "wgrad_channels"]
