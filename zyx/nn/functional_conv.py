"""Convolution, fold and unfold over spatial dims (API.md "Convolution, pooling and resampling").

Everything is composed from lazy views, elementwise ops and reduces, so it fuses and gets its
gradients by composition:

* a 2-D convolution on a CPU in float32/float64 (16-bit floats computed in float32) whose groups have a
  multiple of 4 output channels runs the direct kernel of ``zyx.kernels.conv`` (a register tile of
  pixels x output-channel vectors reading the unpadded input in place; gradients composed here), as does
  ``conv_transpose2d`` through it. Otherwise:
* a convolution is, for every kernel offset, a strided slice of the (lazily) padded input times
  that offset's weight slab, the products summed and then reduced over the input channels. The
  output is laid out channels-last, (N, *spatial, O), and handed back as an NCHW view: the reduce
  then reads the weight contiguously along O and the kernel is matmul-like (the CPU register tile),
  one kernel and no im2col buffer. Kernels with more than ``UNROLL_MAX`` offsets reduce over a
  window view (``Tensor.unfold``) instead: one kernel, without the tile.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.backend.pool import Buffer
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import needs_grad, record
from zyx.frontend.base import concrete, extern_tensor, from_storage_start
from zyx.frontend.contract_ops import stack
from zyx.frontend.layout import is_channels_last
from zyx.kernels import conv as conv_kernel
from zyx.kernels import conv_tuning

# kernels with up to this many offsets are unrolled into one matmul-like reduce over channels
# (3x3x3 = 27 fits); larger ones reduce over a window view (channels x offsets) instead
UNROLL_MAX = 32



def _tuple(v: Any, nd: int, name: str, fn: str) -> tuple[int, ...]:
    """An int or a sequence of ``nd`` ints as a tuple of ``nd`` ints."""
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return (int(v),) * nd
    if isinstance(v, str) or not all(isinstance(a, (int, np.integer)) for a in v):
        raise ShapeError(f"{fn}: {name} must be an int or {nd} ints, got {v!r}")
    t = tuple(int(a) for a in v)
    if len(t) == 1:
        return t * nd
    if len(t) != nd:
        raise ShapeError(f"{fn}: {name} must be an int or {nd} ints, got {v!r}")
    return t


def _batched(x: Any, nd: int, fn: str) -> tuple[Any, bool]:
    """``x`` with a batch dim (an unbatched (C, *spatial) input gets one) and whether it was added.
    A tensor of variable size is taken at its bound values: the conv kernels are specialized on shapes."""
    x = concrete(x)
    if x.ndim == nd + 1:
        return x.unsqueeze(0), True
    if x.ndim != nd + 2:
        raise ShapeError(f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) x, "
                         f"got shape {tuple(x.shape)}")
    return x, False


def _pads(pad: Sequence[tuple[int, int]]) -> list[int]:
    """Per-spatial-dim (before, after) amounts in ``pad``'s order (last dim first)."""
    out: list[int] = []
    for lo, hi in reversed(pad):
        out += [lo, hi]
    return out


def _out_size(length: int, k: int, s: int, lo: int, hi: int, d: int, fn: str) -> int:
    n = (length + lo + hi - d * (k - 1) - 1) // s + 1
    if n <= 0:
        raise ShapeError(f"{fn}: the output size along a spatial dim is {n} (input {length}, padding {(lo, hi)}, "
                         f"kernel {k}, dilation {d}, stride {s}); expected at least 1")
    return n


# ------------------------------------------------------------------ convolution

def _conv(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, dilation: Any, groups: int, nd: int,
          fn: str, pairs: list[tuple[int, int]] | None = None) -> Any:
    """``pairs``: explicit (before, after) padding per spatial dim, in place of ``padding``."""
    x, unbatched = _batched(x, nd, fn)
    if weight.ndim != nd + 2:
        raise ShapeError(f"{fn}: expected a {nd + 2}-D weight (out_channels, in_channels/groups, *kernel), "
                         f"got shape {tuple(weight.shape)}")
    dt = dtypes.result_type(x, weight)
    if not dt.is_float:
        raise DTypeError(f"{fn}: expected floating-point input and weight, got {x.dtype.name} and {weight.dtype.name}")
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    o, cg, ks = weight.shape[0], weight.shape[1], tuple(weight.shape[2:])
    if groups <= 0 or c % groups or o % groups or cg * groups != c:
        raise ShapeError(f"{fn}: input of {c} channels, weight {tuple(weight.shape)} and groups={groups}: expected "
                         f"in_channels = weight.shape[1] * groups and out_channels divisible by groups")
    if bias is not None and tuple(bias.shape) != (o,):  # a (1,) or (O, 1) bias would broadcast silently
        raise ShapeError(f"{fn}: expected a bias of shape ({o},) (one per output channel), got shape "
                         f"{tuple(bias.shape)}")
    st, dl = _tuple(stride, nd, "stride", fn), _tuple(dilation, nd, "dilation", fn)
    if any(s <= 0 for s in st) or any(d <= 0 for d in dl):
        raise ShapeError(f"{fn}: stride {st} and dilation {dl} must be positive")
    if pairs is not None:
        pad = list(pairs)
    elif isinstance(padding, str):
        if padding == "valid":
            pad = [(0, 0)] * nd
        elif padding == "same":
            if any(s != 1 for s in st):
                raise ShapeError(f"{fn}: padding='same' is not supported for strided convolutions (stride {st})")
            pad = [(d * (k - 1) // 2, d * (k - 1) - d * (k - 1) // 2) for k, d in zip(ks, dl)]
        else:
            raise ShapeError(f"{fn}: padding must be 'valid', 'same' or ints, got {padding!r}")
    else:
        pad = [(p, p) for p in _tuple(padding, nd, "padding", fn)]
        if any(p < 0 for p, _ in pad):
            raise ShapeError(f"{fn}: negative padding {padding!r}")
    outs = tuple(_out_size(L, k, s, lo, hi, d, fn) for L, k, s, (lo, hi), d in zip(spatial, ks, st, pad, dl))
    work = dtypes.float32 if dt.itemsize < 4 else dt  # 16-bit floats accumulate in float32, rounded once
    x, w = x.cast(work), weight.cast(work)
    if (conv_kernel.eligible(x.device, work, n, o, groups, ks, outs) and w.device is x.device
            and (bias is None or (tuple(bias.shape) == (o,) and bias.device is x.device))):
        y = conv2d_direct(x, w, None if bias is None else bias.cast(work), st, pad, dl, groups, outs)
        y = y.permute(0, 3, 1, 2).cast(dt)  # the kernel's channels-last output as an NCHW view
        return y.squeeze(0) if unbatched else y
    if any(lo or hi for lo, hi in pad):
        x = x.pad(_pads(pad))
    g, og = groups, o // groups
    if math.prod(ks) <= UNROLL_MAX:
        y = _conv_unrolled(x, w, g, og, cg, ks, st, dl, outs)
    else:
        y = _conv_window(x, w, g, og, cg, ks, st, dl)
    y = y.reshape(n, *outs, o)  # (N, *out, G, Og) -> (N, *out, O): a view
    if bias is not None:
        y = y + bias.cast(work)
    y = y.permute(0, nd + 1, *range(1, nd + 1)).cast(dt)
    return y.squeeze(0) if unbatched else y


def _conv_unrolled(x: Any, w: Any, g: int, og: int, cg: int, ks: tuple[int, ...], st: tuple[int, ...],
                   dl: tuple[int, ...], outs: tuple[int, ...]) -> Any:
    """Sum over kernel offsets of (strided input slice) x (weight slab), reduced over the group's channels:
    (N, *out, G, Og)."""
    n, nd = x.shape[0], len(ks)
    # (*kernel, G, Cg, Og) dense: the reduce loads each offset's weights as vectors along Og
    wt = w.reshape(g, og, cg, *ks).permute(*range(3, 3 + nd), 0, 2, 1).contiguous()
    total = None
    for off in itertools.product(*(range(k) for k in ks)):
        index = (slice(None), slice(None)) + tuple(slice(i * d, i * d + (m - 1) * s + 1, s)
                                                   for i, d, m, s in zip(off, dl, outs, st))
        xs = x[index].reshape(n, g, cg, *outs).permute(0, *range(3, 3 + nd), 1, 2).unsqueeze(-2)
        ws = wt[off].transpose(-1, -2).reshape(*(1,) * (nd + 1), g, og, cg)
        term = xs * ws
        total = term if total is None else total + term
    return total.sum(-1)


def _conv_window(x: Any, w: Any, g: int, og: int, cg: int, ks: tuple[int, ...], st: tuple[int, ...],
                 dl: tuple[int, ...]) -> Any:
    """A reduce over (channels, *kernel) of the window view times the broadcast weight: (N, *out, G, Og)."""
    n, nd = x.shape[0], len(ks)
    win = _windows(x, ks, st, dl)  # (N, C, *out, *kernel)
    outs = win.shape[2:2 + nd]
    win = win.reshape(n, g, cg, *outs, *ks).permute(0, *range(3, 3 + nd), 1, 2, *range(3 + nd, 3 + 2 * nd))
    win = win.unsqueeze(nd + 2)  # (N, *out, G, 1, Cg, *kernel)
    ws = w.reshape(*(1,) * (nd + 1), g, og, cg, *ks)
    return (win * ws).sum(tuple(range(nd + 3, 2 * nd + 4)))


def _windows(x: Any, ks: Sequence[int], st: Sequence[int], dl: Sequence[int], first: int = 2) -> Any:
    """The sliding-window view of ``x`` (N, C, *spatial): (N, C, *out, *kernel), nothing copied; ``first``
    = 1: of a channels-last ``x`` (N, *spatial, C): (N, *out, C, *kernel)."""
    nd = len(ks)
    for i, (k, s, d) in enumerate(zip(ks, st, dl)):
        x = x.unfold(first + i, d * (k - 1) + 1, s)
    if any(d > 1 for d in dl):
        x = x[(Ellipsis,) + tuple(slice(None, None, d) for d in dl)]
    assert x.ndim == 2 + 2 * nd
    return x


def conv1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
           groups: int = 1) -> Any:
    """1-D convolution (cross-correlation) of (N, C, L) or (C, L) with weight (O, C/groups, K)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 1, "conv1d")


def conv2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
           groups: int = 1) -> Any:
    """2-D convolution (cross-correlation) of (N, C, H, W) or (C, H, W) with weight (O, C/groups, KH, KW);
    ``padding`` ints or ``"same"``/``"valid"``."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 2, "conv2d")


def conv3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
           groups: int = 1) -> Any:
    """3-D convolution of (N, C, D, H, W) or (C, D, H, W) with weight (O, C/groups, KD, KH, KW)."""
    return _conv(input, weight, bias, stride, padding, dilation, groups, 3, "conv3d")


def _conv_transpose(x: Any, weight: Any, bias: Any, stride: Any, padding: Any, output_padding: Any, groups: int,
                    dilation: Any, nd: int, fn: str) -> Any:
    """The gradient of a convolution as a forward op: the input spread ``stride`` apart (zeros between),
    padded by ``dilation*(k-1) - padding`` (+ ``output_padding`` after), convolved with the flipped weight."""
    x, unbatched = _batched(x, nd, fn)
    if weight.ndim != nd + 2:
        raise ShapeError(f"{fn}: expected a {nd + 2}-D weight (in_channels, out_channels/groups, *kernel), "
                         f"got shape {tuple(weight.shape)}")
    st, dl = _tuple(stride, nd, "stride", fn), _tuple(dilation, nd, "dilation", fn)
    pd, op = _tuple(padding, nd, "padding", fn), _tuple(output_padding, nd, "output_padding", fn)
    c, ks = weight.shape[0], tuple(weight.shape[2:])
    if groups <= 0 or c % groups or x.shape[1] != c:
        raise ShapeError(f"{fn}: input of {x.shape[1]} channels, weight {tuple(weight.shape)} and groups={groups}: "
                         f"expected in_channels = weight.shape[0], divisible by groups")
    if any(p >= max(s, d) for p, s, d in zip(op, st, dl)):
        raise ShapeError(f"{fn}: output_padding {op} must be smaller than stride {st} or dilation {dl}")
    if any(s <= 0 for s in st) or any(d <= 0 for d in dl) or any(p < 0 for p in pd):
        raise ShapeError(f"{fn}: stride {st} and dilation {dl} must be positive, padding {pd} not negative")
    spatial = tuple(x.shape[2:])
    outs = tuple((L - 1) * s - 2 * p + d * (k - 1) + o + 1 for L, s, p, d, k, o in zip(spatial, st, pd, dl, ks, op))
    if any(m < 0 for m in outs):
        raise ShapeError(f"{fn}: input of spatial size {spatial} with kernel {ks}, stride {st}, padding {pd}, "
                         f"dilation {dl} and output_padding {op} gives output size {outs}; expected no negative "
                         f"size (use less padding)")
    for i, s in enumerate(st):
        if s > 1:
            from zyx.frontend.autograd.rules import place

            length = x.shape[2 + i]
            x = place(x, 2 + i, 0, (length - 1) * s + 1, s)
    # a dim of output size 0 (PyTorch returns the empty tensor) is computed one longer, then sliced to 0:
    # the result stays connected to x and the weight, whose gradients are then zeros
    pads = [(d * (k - 1) - p, d * (k - 1) - p + o + (m == 0)) for k, d, p, o, m in zip(ks, dl, pd, op, outs)]
    og = weight.shape[1]
    w = weight.reshape(groups, c // groups, og, *ks).transpose(1, 2)
    w = w[(Ellipsis,) + (slice(None, None, -1),) * nd].reshape(groups * og, c // groups, *ks)
    if all(lo >= 0 and hi >= 0 for lo, hi in pads):  # the convolution pads (the direct kernel: in place)
        y = _conv(x, w, bias, 1, 0, dl, groups, nd, fn, pairs=pads)
    else:
        y = _conv(x.pad(_pads(pads)), w, bias, 1, 0, dl, groups, nd, fn)  # negative amounts crop
    if 0 in outs:
        y = y[(slice(None), slice(None)) + tuple(slice(0, m) for m in outs)]
    return y.squeeze(0) if unbatched else y


def conv_transpose1d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,  # noqa: A002 - PyTorch's name
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """Transposed 1-D convolution; weight (C, O/groups, K)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 1,
                           "conv_transpose1d")


def conv_transpose2d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,  # noqa: A002 - PyTorch's name
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """Transposed 2-D convolution; weight (C, O/groups, KH, KW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 2,
                           "conv_transpose2d")


def conv_transpose3d(input: Any, weight: Any, bias: Any = None, stride: Any = 1, padding: Any = 0,  # noqa: A002 - PyTorch's name
                     output_padding: Any = 0, groups: int = 1, dilation: Any = 1) -> Any:
    """Transposed 3-D convolution; weight (C, O/groups, KD, KH, KW)."""
    return _conv_transpose(input, weight, bias, stride, padding, output_padding, groups, dilation, 3,
                           "conv_transpose3d")


def unfold(input: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Any:  # noqa: A002 - PyTorch's name
    """im2col: the sliding blocks of (N, C, H, W) as columns, (N, C*KH*KW, L) (a copy of the window view)."""
    x, unbatched = _batched(input, 2, "unfold")
    ks, dl = _tuple(kernel_size, 2, "kernel_size", "unfold"), _tuple(dilation, 2, "dilation", "unfold")
    pd, st = _tuple(padding, 2, "padding", "unfold"), _tuple(stride, 2, "stride", "unfold")
    for L, k, s, p, d in zip(x.shape[2:], ks, st, pd, dl):
        _out_size(L, k, s, p, p, d, "unfold")
    win = _windows(x.pad(_pads([(p, p) for p in pd])), ks, st, dl)  # (N, C, OH, OW, KH, KW)
    n, c, oh, ow = win.shape[:4]
    y = win.permute(0, 1, 4, 5, 2, 3).reshape(n, c * ks[0] * ks[1], oh * ow)
    return y.squeeze(0) if unbatched else y


def fold(input: Any, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
         stride: Any = 1) -> Any:
    """col2im, ``unfold``'s adjoint: (N, C*KH*KW, L) blocks summed back into (N, C, *output_size)."""
    from zyx.frontend.autograd.rules import place

    if input.ndim not in (2, 3):
        raise ShapeError(f"fold: expected a 2-D (unbatched) or 3-D (batched) input (N, C*KH*KW, L), got shape "
                         f"{tuple(input.shape)}")
    x = input.unsqueeze(0) if input.ndim == 2 else input
    size, ks = _tuple(output_size, 2, "output_size", "fold"), _tuple(kernel_size, 2, "kernel_size", "fold")
    dl, pd = _tuple(dilation, 2, "dilation", "fold"), _tuple(padding, 2, "padding", "fold")
    st = _tuple(stride, 2, "stride", "fold")
    outs = tuple(_out_size(L, k, s, p, p, d, "fold") for L, k, s, p, d in zip(size, ks, st, pd, dl))
    n, ckk, blocks = x.shape
    if ckk % (ks[0] * ks[1]) or blocks != outs[0] * outs[1]:
        raise ShapeError(f"fold: input shape {tuple(input.shape)} does not hold C*{ks[0]}*{ks[1]} rows of "
                         f"{outs[0]}*{outs[1]} blocks for output_size {size}")
    c = ckk // (ks[0] * ks[1])
    cols = x.reshape(n, c, ks[0], ks[1], *outs)
    padded = [L + 2 * p for L, p in zip(size, pd)]
    total = None
    for i, j in itertools.product(range(ks[0]), range(ks[1])):
        slab = place(cols[:, :, i, j], 2, i * dl[0], padded[0], st[0])
        slab = place(slab, 3, j * dl[1], padded[1], st[1])
        total = slab if total is None else total + slab
    y = total[:, :, pd[0]:pd[0] + size[0], pd[1]:pd[1] + size[1]]
    return y.squeeze(0) if input.ndim == 2 else y


# ------------------------------------------------------------------ the direct 2-D kernel (CPUs)

#: the composed weight gradient runs a matmul per kernel offset from this many input channels a group
#: (fewer: too narrow a product for vector columns; the multiply-reduce in place is faster there)
WGRAD_MATMUL_MIN_CHANNELS = 16


def _dense(t: Any) -> Any:
    """``t`` dense in its own dim order: itself, or a copy kernel computing its pending work in that order
    (``contiguous`` would store pending work in its own order first, then permute the copy)."""
    return t if t.is_contiguous() else t.clone()


def conv2d_direct(x: Any, w: Any, bias: Any, st: tuple[int, ...], pad: list[tuple[int, int]], dl: tuple[int, ...],
                  groups: int, outs: tuple[int, ...]) -> Any:
    """The convolution of ``x`` (N, C, H, W) with ``w`` (O, C/groups, KH, KW) (+ ``bias`` (O,)), all of one
    float dtype, padded by ``pad`` ((lo, hi) per spatial dim), by ``zyx.kernels.conv``: (N, OH, OW, O),
    channels last. Gradients: the input's is the transposed convolution of the output gradient (itself a
    direct convolution, stride 1, when it qualifies); the weight's the weight-gradient kernel, or the
    composed per-offset reduces; the bias's a sum."""
    dtype, device = x.dtype, x.device
    # a channels-last input (the previous layer's output) is read in place, not copied to NCHW first
    cl = is_channels_last(x)
    xc = _dense(x.permute(0, 2, 3, 1)) if cl else x.contiguous()
    wp = w.permute(2, 1, 3, 0).contiguous()  # (KH, Cg, KW, O): a (kh, c)'s weights are contiguous along O
    bc = bias.contiguous() if bias is not None else None
    inputs = [from_storage_start(t) for t in [xc, wp] + ([bc] if bc is not None else [])]
    shape = (x.shape[0], *outs, w.shape[0])
    lo = tuple(a for a, _ in pad)
    forced = conv_tuning.forced()
    til = forced or conv_kernel.tile(dtype, w.shape[0] // groups, outs[1])
    xshape, wshape = tuple(x.shape), tuple(w.shape)

    def run(bufs: list[Buffer]) -> Buffer:
        return conv_kernel.conv2d(device, bufs, dtype, xshape, wshape, outs, st, lo, dl, groups, til,
                                  forced is not None, cl)

    y = extern_tensor(f"conv2d {'x'.join(map(str, til))}" if forced else "conv2d", run, inputs, dtype, shape, device)
    if needs_grad(x, w, bias):
        return record("conv2d", y, [x, w, bias],
                      lambda g: _direct_backward(g, x, w, bias is not None, st, pad, dl, groups, outs))
    return y


def _direct_backward(g: Any, x: Any, w: Any, has_bias: bool, st: tuple[int, ...], pad: list[tuple[int, int]],
                     dl: tuple[int, ...], groups: int, outs: tuple[int, ...]) -> tuple[Any, Any, Any]:
    """The gradients of x, w and the bias from ``g`` (N, OH, OW, O)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    # stored once channels-last, as it comes, before the bias's sum reads it (pending, each reader would
    # recompute it): the input's gradient reads it in place, the weight-gradient kernel as it is; the
    # composed weight gradient, which ran far slower over a channels-last view, makes its own dense copy
    g = _dense(g).realize()
    gy = g.permute(0, 3, 1, 2)
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
        gw = _weight_grad_composed(gy.contiguous(), x, pad, st, dl, groups, (o, cg, kh, kw), outs)
    return gx, gw, gb


def _weight_grad(g: Any, x: Any, pad: list[tuple[int, int]], st: tuple[int, ...], dl: tuple[int, ...], groups: int,
                 wshape: tuple[int, ...], outs: tuple[int, ...]) -> Any:
    """The weight's gradient (O, Cg, KH, KW) by the weight-gradient kernel from ``g`` (N, OH, OW, O), or None
    when its accumulators would not fit the registers (large kernels)."""
    o, cg, kh, kw = wshape
    cb = conv_kernel.wgrad_channels(cg, kh, kw)
    if cb is None:
        return None
    dtype, device = x.dtype, x.device
    cl = is_channels_last(x)  # read as it lies, unpadded (the kernel tests the border)
    inputs = [from_storage_start(t) for t in (g.contiguous(), _dense(x.permute(0, 2, 3, 1)) if cl else x.contiguous())]
    xshape, lo = tuple(x.shape), (pad[0][0], pad[1][0])

    def run(bufs: list[Buffer]) -> Buffer:
        return conv_kernel.conv2d_wgrad(device, bufs, dtype, xshape, wshape, outs, st, lo, dl, groups, cb, cl)

    return extern_tensor("conv2d weight gradient", run, inputs, dtype, (cg, kh, kw, o), device).permute(3, 0, 1, 2)


def _weight_grad_composed(gy: Any, x: Any, pad: list[tuple[int, int]], st: tuple[int, ...], dl: tuple[int, ...],
                          groups: int, wshape: tuple[int, ...], outs: tuple[int, ...]) -> Any:
    """The weight's gradient from ``gy`` (N, O, OH, OW): per kernel offset, the output gradient times that
    offset's strided slice of the padded input, reduced over (N, OH, OW): a matmul ``(Og, Q) @ (Q, Cg)``
    (Q = N*OH*OW) on dense operands when a group has ``WGRAD_MATMUL_MIN_CHANNELS`` input channels or more,
    else a multiply-reduce over the slice in place."""
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
