"""The direct 2-D convolution kernel for CPUs (``templates/conv2d.cl.mako``), with its gradients.

``conv2d_direct`` computes a 2-D convolution of a float32/float64 input as one lazy ``EXTERN`` node:
the kernel keeps a register tile of ``p`` output pixels (along W) by ``v`` vectors of output
channels and reduces over (kernel row, input channel, kernel column) reading the unpadded NCHW
input in place (padding rows are skipped, border columns tested), so neither an im2col buffer nor a
padded copy is made. The output is channels-last (N, OH, OW, O), the bias added in the kernel.

Gradients: the input's is the transposed convolution of the output gradient (itself a direct
convolution, stride 1, when it qualifies); the weight's is one more kernel
(``templates/conv2d_wgrad.cl.mako``: a work item keeps a channel vector x input channels x kernel
offsets in registers over the whole (N, OH, OW) reduce), or, for kernels too large for its registers
and when the backward is itself differentiated, a reduce per kernel offset of the output gradient
times that offset's strided slice of the padded input; the bias's a sum.

The forward tile and the weight-gradient kernel's channel count are tunables (``zyx.nn.conv_tuning``):
the heuristics here by default, the tuning database or a search under ``ZYX_TUNE>=1``, chosen when the
kernel first runs (on its real buffers); ``conv_tuning.forced_tile`` pins the tile (tests, hand sweeps).
"""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx import settings
from zyx.backend.launch import compile_kernel, launch
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.frontend.autograd.engine import needs_grad, record
from zyx.frontend.base import extern_tensor
from zyx.nn import conv_tuning

#: a kernel side up to this is unrolled into the kernel (the loop body grows as KH * KW)
MAX_KERNEL_SIDE = 11
#: accumulator registers a tile may use, counted in 64-byte vectors (AVX-512 has 32 of them; the
#: rest hold the weight vectors and the broadcast inputs)
ACC_REGISTERS = 28
#: the most output pixels a tile holds along W (more measured no faster on the 2-core EPYC VM)
MAX_PIXELS = 8
#: the most channel vectors a tile holds (8 pixels x 2 x float16 measured 183 GFLOP/s on the ResNet 3x3 layer,
#: 7 x 4 x float16 170, 4 x 4 x float16 120; the 2-core EPYC VM, loaded)
MAX_VECTORS = 2
#: the weight gradient kernel's accumulator vectors at most (channels x kernel offsets); beyond, the
#: composed per-offset reduces
WGRAD_ACCUMULATORS = 27
#: the composed weight gradient runs a matmul per kernel offset from this many input channels a group
#: (fewer: too narrow a product for vector columns; the multiply-reduce in place is faster there)
WGRAD_MATMUL_MIN_CHANNELS = 16


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


def _source(dtype: dtypes.DType, shape: tuple[int, ...], wshape: tuple[int, ...], outs: tuple[int, ...],
            st: tuple[int, ...], lo: tuple[int, ...], dl: tuple[int, ...], groups: int, bias: bool,
            til: tuple[int, int, int]) -> tuple[str, str, tuple[int, int, int]]:
    n, c, h, w = shape
    o, _, kh, kw = wshape
    p, v, rows = til
    vw = vector_width(dtype, o // groups)
    name = "zyx_conv2d"
    src = render("conv2d.cl.mako", name=name, t="double" if dtype == dtypes.float64 else "float", vw=vw, p=p, v=v,
                 rows=rows, N=n, C=c, H=h, W=w, O=o, OH=outs[0], OW=outs[1], KH=kh, KW=kw, sh=st[0], sw=st[1],
                 ph=lo[0], pw=lo[1], dh=dl[0], dw=dl[1], groups=groups, bias=bias)
    grid = (o // (vw * v) * -(-outs[1] // p), -(-outs[0] // rows), n)
    return src, name, grid


def conv2d_direct(x: Any, w: Any, bias: Any, st: tuple[int, ...], pad: list[tuple[int, int]], dl: tuple[int, ...],
                  groups: int, outs: tuple[int, ...]) -> Any:
    """The convolution of ``x`` (N, C, H, W) with ``w`` (O, C/groups, KH, KW) (+ ``bias`` (O,)), all of one
    float dtype, padded by ``pad`` ((lo, hi) per spatial dim): (N, OH, OW, O), channels last."""
    dtype, device = x.dtype, x.device
    xc = x.contiguous()
    wp = w.permute(2, 1, 3, 0).contiguous()  # (KH, Cg, KW, O): a (kh, c)'s weights are contiguous along O
    bc = bias.contiguous() if bias is not None else None
    inputs = [xc, wp] + ([bc] if bc is not None else [])
    n, o = x.shape[0], w.shape[0]
    shape = (n, *outs, o)
    lo = tuple(a for a, _ in pad)
    forced = conv_tuning.forced()
    til = forced or tile(dtype, o // groups, outs[1])
    xshape, wshape, has_bias = tuple(x.shape), tuple(w.shape), bc is not None
    nbytes = math.prod(shape) * dtype.itemsize
    # the kernel reads each operand from its storage's first element: one starting further in is copied
    inputs = [t if t._view.offset == 0 else t.clone() for t in inputs]

    def build(cfg: dict[str, int]) -> tuple[Any, tuple[int, int, int]]:
        src, name, grid = _source(dtype, xshape, wshape, outs, st, lo, dl, groups, has_bias,
                                  (cfg["p"], cfg["v"], cfg["rows"]))
        return compile_kernel(device, src, name), grid

    def run(bufs: list[Buffer]) -> Buffer:
        args = [b.cl for b in bufs]
        cfg = dict(zip(("p", "v", "rows"), til))
        if forced is None:
            og, vw = o // groups, vector_width(dtype, o // groups)
            key = (f"conv2d_direct:{dtype.name}:k{wshape[2]}x{wshape[3]}:s{st}:p{lo}:d{dl}:g{groups}"
                   f":{'bias' if has_bias else 'nobias'}")
            cfg = conv_tuning.tuned(device, key, (n, xshape[1] // groups, *xshape[2:], og, *outs),
                                    conv_tuning.tile_space(vw, og, outs[0], outs[1], dtype.itemsize), cfg, build,
                                    args, nbytes, dtype, f"conv2d {'x'.join(map(str, xshape))} -> {o}")
        kernel, grid = build(cfg)
        out = device.pool.allocate(nbytes)
        launch(kernel, grid, (1, 1, 1), [out.cl, *args])
        return out

    y = extern_tensor(f"conv2d {'x'.join(map(str, til))}" if forced else "conv2d", run, inputs, dtype, shape, device)
    if needs_grad(x, w, bias):
        return record("conv2d", y, [x, w, bias],
                      lambda g: _backward(g, x, w, bias is not None, st, pad, dl, groups, outs))
    return y


def _backward(g: Any, x: Any, w: Any, has_bias: bool, st: tuple[int, ...], pad: list[tuple[int, int]],
              dl: tuple[int, ...], groups: int, outs: tuple[int, ...]) -> tuple[Any, Any, Any]:
    """The gradients of x, w and the bias from ``g`` (N, OH, OW, O)."""
    from zyx.nn.functional_conv import conv_transpose2d

    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    # (N, O, OH, OW) made dense once: both gradients read it, and the weight's per-offset reduces ran
    # 15x slower over a channels-last view (1.8 s against 122 ms at 8x64x56x56, loaded 2-core VM)
    gy = g.permute(0, 3, 1, 2).contiguous()
    gb = g.sum((0, 1, 2)) if has_bias else None
    # the input's: the transposed convolution over the padded extent, the padding cropped off
    padded = [h + pad[0][0] + pad[0][1], wd + pad[1][0] + pad[1][1]]
    extra = [length - ((m - 1) * s + d * (k - 1) + 1) for length, m, s, d, k in zip(padded, outs, st, dl, (kh, kw))]
    if pad[0][0] == pad[0][1] and pad[1][0] == pad[1][1]:
        gx = conv_transpose2d(gy, w, None, st, (pad[0][0], pad[1][0]), tuple(extra), groups, dl)
    else:
        full = conv_transpose2d(gy, w, None, st, 0, tuple(extra), groups, dl)
        gx = full[:, :, pad[0][0]:pad[0][0] + h, pad[1][0]:pad[1][0] + wd]
    gw = None if needs_grad(g, x) else _weight_grad(g, x, pad, st, dl, groups, (o, cg, kh, kw), outs)
    if gw is None:  # the composed form: differentiable again (double backward), any kernel size
        gw = _weight_grad_composed(gy, x, pad, st, dl, groups, (o, cg, kh, kw), outs)
    return gx, gw, gb


def _weight_grad(g: Any, x: Any, pad: list[tuple[int, int]], st: tuple[int, ...], dl: tuple[int, ...], groups: int,
                 wshape: tuple[int, ...], outs: tuple[int, ...]) -> Any:
    """The weight's gradient (O, Cg, KH, KW) by ``templates/conv2d_wgrad.cl.mako`` from ``g`` (N, OH, OW, O),
    or None when its accumulators would not fit the registers (large kernels)."""
    o, cg, kh, kw = wshape
    cb = 2 if cg % 2 == 0 and 2 * kh * kw <= WGRAD_ACCUMULATORS else 1
    if cb * kh * kw > WGRAD_ACCUMULATORS:
        return None
    dtype, device = x.dtype, x.device
    vw = vector_width(dtype, o // groups)
    xp = x.pad([pad[1][0], pad[1][1], pad[0][0], pad[0][1]]) if any(a or b for a, b in pad) else x
    # dense operands from their storage's first element (the kernel takes no offsets)
    inputs = [t.contiguous() for t in (g, xp)]
    inputs = [t if t._view.offset == 0 else t.clone() for t in inputs]
    n, c, hp, wp = xp.shape
    name = "zyx_conv2d_wgrad"
    shape = (cg, kh, kw, o)
    nbytes = math.prod(shape) * dtype.itemsize

    def build(cfg: dict[str, int]) -> tuple[Any, tuple[int]]:
        src = render("conv2d_wgrad.cl.mako", name=name, t="double" if dtype == dtypes.float64 else "float", vw=vw,
                     cb=cfg["cb"], N=n, C=c, Hp=hp, Wp=wp, O=o, OH=outs[0], OW=outs[1], KH=kh, KW=kw, sh=st[0],
                     sw=st[1], dh=dl[0], dw=dl[1], groups=groups)
        return compile_kernel(device, src, name), (o // vw * (cg // cfg["cb"]),)

    def run(bufs: list[Buffer]) -> Buffer:
        args = [b.cl for b in bufs]
        key = f"conv2d_wgrad:{dtype.name}:k{kh}x{kw}:s{st}:d{dl}:g{groups}"
        cfg = conv_tuning.tuned(device, key, (n, cg, hp, wp, o // groups), conv_tuning.wgrad_space(cg, kh, kw),
                                {"cb": cb}, build, args, nbytes, dtype,
                                f"conv2d weight gradient {n}x{c}x{hp}x{wp} -> {o}")
        kernel, grid = build(cfg)
        out = device.pool.allocate(nbytes)
        launch(kernel, grid, (1,), [out.cl, *args])
        return out

    return extern_tensor("conv2d weight gradient", run, inputs, dtype, shape, device).permute(3, 0, 1, 2)


def _weight_grad_composed(gy: Any, x: Any, pad: list[tuple[int, int]], st: tuple[int, ...], dl: tuple[int, ...],
                          groups: int, wshape: tuple[int, ...], outs: tuple[int, ...]) -> Any:
    """The weight's gradient from ``gy`` (N, O, OH, OW): per kernel offset, the output gradient times that
    offset's strided slice of the padded input, reduced over (N, OH, OW): a matmul ``(Og, Q) @ (Q, Cg)``
    (Q = N*OH*OW) on dense operands when a group has ``WGRAD_MATMUL_MIN_CHANNELS`` input channels or more,
    else a multiply-reduce over the slice in place."""
    from zyx.frontend.contract_ops import stack

    n = x.shape[0]
    o, cg, kh, kw = wshape
    og = o // groups
    q = n * outs[0] * outs[1]
    xp = x.pad([pad[1][0], pad[1][1], pad[0][0], pad[0][1]]) if any(a or b for a, b in pad) else x
    wide = cg >= WGRAD_MATMUL_MIN_CHANNELS
    # the matmul's left operand (G, Og, Q), made dense once for every offset
    gyg = gy.reshape(n, groups, og, outs[0] * outs[1]).permute(1, 2, 0, 3).contiguous().reshape(groups, og, q) \
        if wide else gy.reshape(n, groups, og, 1, *outs)
    slabs = []
    for i in range(kh):
        for j in range(kw):
            xs = xp[:, :, i * dl[0]:i * dl[0] + (outs[0] - 1) * st[0] + 1:st[0],
                    j * dl[1]:j * dl[1] + (outs[1] - 1) * st[1] + 1:st[1]]
            if wide:  # the slice copied channels-last (Q, Cg): a register-tiled matmul, not a dot per output
                xs = xs.reshape(n, groups, cg, *outs).permute(1, 0, 3, 4, 2).contiguous().reshape(groups, q, cg)
                slabs.append(gyg @ xs)  # (G, Og, Cg)
            else:
                slabs.append((gyg * xs.reshape(n, groups, 1, cg, *outs)).sum((0, 4, 5)))  # (G, Og, Cg)
    return stack(slabs, -1).reshape(o, cg, kh, kw)


__all__ = ["ACC_REGISTERS", "MAX_KERNEL_SIDE", "MAX_PIXELS", "MAX_VECTORS", "WGRAD_ACCUMULATORS",
           "WGRAD_MATMUL_MIN_CHANNELS",
           "conv2d_direct", "eligible", "tile", "vector_width"]
