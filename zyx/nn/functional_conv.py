"""Convolution, pooling and normalization over spatial dims (API.md "Convolution, pooling and resampling").

Everything is composed from lazy views, elementwise ops and reduces, so it fuses and gets its
gradients by composition:

* a 2-D convolution on a CPU in float32/float64 (16-bit floats computed in float32) whose groups have a
  multiple of 4 output channels runs the direct kernel of ``zyx.nn.conv_direct`` (a register tile of
  pixels x output-channel vectors reading the unpadded input in place; gradients composed), as does
  ``conv_transpose2d`` through it. Otherwise:
* a convolution is, for every kernel offset, a strided slice of the (lazily) padded input times
  that offset's weight slab, the products summed and then reduced over the input channels. The
  output is laid out channels-last, (N, *spatial, O), and handed back as an NCHW view: the reduce
  then reads the weight contiguously along O and the kernel is matmul-like (the CPU register tile),
  one kernel and no im2col buffer. Kernels with more than ``UNROLL_MAX`` offsets reduce over a
  window view (``Tensor.unfold``) instead: one kernel, without the tile.
* pooling is a reduce over the window view of the padded input (``unfold`` on each spatial dim):
  one kernel, the window never materialized.
* the norms are reduces and elementwise work; ``batch_norm``/``instance_norm`` update the running
  statistics in place (lazily: the update fuses with whatever reads them next).
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import is_grad_enabled, no_grad, record
from zyx.frontend.base import raise_unread_errors
from zyx.frontend.creation import arange, pinned_as, tensor, zeros
from zyx.frontend.elementwise import where
from zyx.frontend.softmax import float_work
from zyx.nn import conv_direct

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
    """``x`` with a batch dim (an unbatched (C, *spatial) input gets one) and whether it was added."""
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
    if (conv_direct.eligible(x.device, work, n, o, groups, ks, outs) and w.device is x.device
            and (bias is None or (tuple(bias.shape) == (o,) and bias.device is x.device))):
        y = conv_direct.conv2d_direct(x, w, None if bias is None else bias.cast(work), st, pad, dl, groups, outs)
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


def _windows(x: Any, ks: Sequence[int], st: Sequence[int], dl: Sequence[int]) -> Any:
    """The sliding-window view of ``x`` (N, C, *spatial): (N, C, *out, *kernel), nothing copied."""
    nd = len(ks)
    for i, (k, s, d) in enumerate(zip(ks, st, dl)):
        x = x.unfold(2 + i, d * (k - 1) + 1, s)
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


# ------------------------------------------------------------------ pooling

def _pool_geometry(x: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
                   fn: str) -> tuple:
    """Kernel, stride, dilation, per-dim (before, after) padding (after includes the ceil-mode overhang) and
    output sizes of a pooling of ``x`` (N, C, *spatial)."""
    ks = _tuple(kernel_size, nd, "kernel_size", fn)
    st = ks if stride is None or (not isinstance(stride, int) and len(stride) == 0) else \
        _tuple(stride, nd, "stride", fn)
    pd, dl = _tuple(padding, nd, "padding", fn), _tuple(dilation, nd, "dilation", fn)
    if any(k <= 0 for k in ks) or any(s <= 0 for s in st) or any(d <= 0 for d in dl):
        raise ShapeError(f"{fn}: kernel_size {ks}, stride {st} and dilation {dl} must be positive")
    if any(p < 0 or p > k // 2 for p, k in zip(pd, ks)):
        raise ShapeError(f"{fn}: padding {pd} should be at most half of kernel_size {ks}")
    pads, outs = [], []
    for L, k, s, p, d in zip(x.shape[2:], ks, st, pd, dl):
        span = L + 2 * p - d * (k - 1) - 1
        m = (-(-span // s) if ceil_mode else span // s) + 1
        if ceil_mode and (m - 1) * s >= L + p:  # the last window must start inside the input or left padding
            m -= 1
        if m <= 0:
            raise ShapeError(f"{fn}: the output size along a spatial dim is {m} (input {L}, kernel {k}, "
                             f"padding {p}, dilation {d}, stride {s}); expected at least 1")
        pads.append((p, max((m - 1) * s + d * (k - 1) + 1 - L - p, 0)))
        outs.append(m)
    return ks, st, dl, pads, tuple(outs)


def _lowest(dt: Any) -> Any:
    if dt.is_float:
        return float("-inf")
    if dt.is_bool:
        return False
    return int(np.iinfo(dt.numpy).min)


def _max_pool(x: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, dilation: Any, ceil_mode: bool,
              return_indices: bool, fn: str) -> Any:
    x, unbatched = _batched(x, nd, fn)
    ks, st, dl, pads, outs = _pool_geometry(x, nd, kernel_size, stride, padding, dilation, ceil_mode, fn)
    needs_grad = x._ag is not None and is_grad_enabled()
    # windows that tile the input (``MaxPool2d(2)``): a window's first maximum is told by its place in
    # the window, and the gradient is one elementwise kernel over a reshape of the input
    tiled = st == ks and all(d == 1 for d in dl) and all(p == (0, 0) for p in pads)
    with no_grad():  # the gradient is recorded below: all of it goes to each window's first maximum
        win = _windows(x.pad(_pads(pads), _lowest(x.dtype)), ks, st, dl)
        out = win.amax(tuple(range(2 + nd, 2 + 2 * nd)))
        idx = _first_max(x, win, out, ks, st, dl, pads, plane_ids=True) if return_indices else None
        first = None
        if needs_grad:
            first = idx if idx is not None and not tiled else \
                _first_max(x, win, out, ks, st, dl, pads, plane_ids=not tiled)
    if needs_grad:
        geometry = (tuple(x.shape), ks, outs, tiled)
        record(fn, out, [x], lambda g: (_max_pool_backward(g, first, geometry),))
    if not return_indices:
        return out.squeeze(0) if unbatched else out
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return out, idx


def _first_max(x: Any, win: Any, out: Any, ks: tuple, st: tuple, dl: tuple, pads: list, plane_ids: bool) -> Any:
    """Where each window's maximum is, as PyTorch's ``max_pool`` picks it: its flat index in the input
    plane (``plane_ids``, the indices ``max_pool`` returns), else its row-major place in the window (the
    tiled gradient's); ``_pick_max`` says which. Padding (index ``plane``) never wins, since every window
    holds at least one input element."""
    nd = len(ks)
    red = tuple(range(2 + nd, 2 + 2 * nd))
    if not plane_ids:
        places = math.prod(ks)
        local = pinned_as(arange(places, dtype=dtypes.int64, device=x.device), x).reshape(*(1,) * (2 + nd), *ks)
        return _pick_max(win, out, local, places, red)
    spatial = tuple(x.shape[2:])
    plane = math.prod(spatial)
    ids = pinned_as(arange(plane, device=x.device), x).reshape(1, 1, *spatial)
    ids = _windows(ids.pad(_pads(pads), plane), ks, st, dl)
    return _pick_max(win, out, ids, plane, red)


def _pick_max(win: Any, out: Any, ids: Any, plane: int, red: tuple[int, ...]) -> Any:
    """The plane index (``ids``, each below ``plane``) PyTorch's max pools report for each window of
    ``win`` (maxima ``out``): walking the window in increasing index, a value replaces the kept one when it
    is larger or NaN, so the first maximum, or the last NaN when the window holds one. One max reduce of a
    rank key: a NaN's is ``plane + id``, a maximum's ``plane - 1 - id``, the rest -1."""
    nd = len(red)
    top = win == out.reshape(*out.shape, *(1,) * nd)
    key = where(win != win, ids + plane, where(top, (plane - 1) - ids, -1)).amax(red)
    return where(key >= plane, key - plane, (plane - 1) - key)


def _max_pool_backward(g: Any, first: Any, geometry: tuple) -> Any:
    """The input gradient of a max pool: each output's gradient goes to its window's first maximum
    (``first``, from ``_first_max``), summed where windows overlap (PyTorch's rule; ``amax``'s would
    split it among ties, common after a ReLU or on integer-valued data). Tiled windows: a ``where`` over
    a reshape of the input (fuses with its consumer); others scatter into the input plane."""
    shape, ks, outs, tiled = geometry
    n, c, spatial = shape[0], shape[1], shape[2:]
    if tiled:
        used = tuple(o * k for o, k in zip(outs, ks))
        ones = tuple(v for o in outs for v in (o, 1))  # (o0, 1, o1, 1, ...)
        places = math.prod(ks)
        local = pinned_as(arange(places, dtype=dtypes.int64, device=g.device), g)
        local = local.reshape(*(v for k in ks for v in (1, k)))  # (1, k0, 1, k1, ...)
        gx = where(local == first.reshape(n, c, *ones), g.reshape(n, c, *ones), 0).reshape(n, c, *used)
        tail = [(0, L - u) for L, u in zip(spatial, used)]
        return gx.pad(_pads(tail)) if any(t for _, t in tail) else gx
    flat = zeros(n, c, math.prod(spatial), dtype=g.dtype, device=g.device)
    return flat.scatter_add(2, first.reshape(n, c, -1), g.reshape(n, c, -1)).reshape(n, c, *spatial)


def max_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of (N, C, L) (padding reads -inf); ``return_indices``: (values, flat indices)."""
    return _max_pool(input, 1, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool1d")


def max_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of (N, C, H, W); ``return_indices``: also each maximum's index in its
    (H*W) plane, as PyTorch."""
    return _max_pool(input, 2, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool2d")


def max_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: A002 - PyTorch's name
               ceil_mode: bool = False, return_indices: bool = False) -> Any:
    """Max over sliding windows of (N, C, D, H, W)."""
    return _max_pool(input, 3, kernel_size, stride, padding, dilation, ceil_mode, return_indices, "max_pool3d")


def _max_unpool(x: Any, indices: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, output_size: Any,
                fn: str) -> Any:
    """Each value of ``x`` written at its ``indices`` (a flat position in the output plane, as ``max_pool``
    returns them) of a zero output: one scatter per plane."""
    x, unbatched = _batched(x, nd, fn)
    if tuple(indices.shape) != tuple(x.shape) and tuple(indices.shape) != tuple(x.shape[1:]):
        raise ShapeError(f"{fn}: indices of shape {tuple(indices.shape)} do not match the input's {tuple(x.shape)}")
    ks = _tuple(kernel_size, nd, "kernel_size", fn)
    st = ks if stride is None else _tuple(stride, nd, "stride", fn)
    pd = _tuple(padding, nd, "padding", fn)
    if output_size is None:
        outs = tuple((n - 1) * s - 2 * p + k for n, s, p, k in zip(x.shape[2:], st, pd, ks))
    else:
        outs = tuple(int(v) for v in output_size)[-nd:]
        if len(outs) != nd:
            raise ShapeError(f"{fn}: output_size {tuple(output_size)} needs {nd} spatial sizes")
    if any(o < 0 for o in outs):
        raise ShapeError(f"{fn}: the output size {outs} is negative")
    n, c = x.shape[:2]
    flat = indices.reshape(n, c, -1)
    if flat.dtype is not dtypes.int64:
        flat = flat.cast(dtypes.int64)
    out = pinned_as(zeros(n, c, math.prod(outs), dtype=x.dtype, device=x.device), x)
    out = out.scatter(2, flat, x.reshape(n, c, -1)).reshape(n, c, *outs)
    return out.squeeze(0) if unbatched else out


def max_unpool1d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002 - PyTorch's name
                 output_size: Any = None) -> Any:
    """The partial inverse of ``max_pool1d``: values at their ``indices``, zeros elsewhere."""
    return _max_unpool(input, indices, 1, kernel_size, stride, padding, output_size, "max_unpool1d")


def max_unpool2d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002 - PyTorch's name
                 output_size: Any = None) -> Any:
    """The partial inverse of ``max_pool2d``: values at their ``indices`` (flat in the H*W plane), zeros elsewhere."""
    return _max_unpool(input, indices, 2, kernel_size, stride, padding, output_size, "max_unpool2d")


def max_unpool3d(input: Any, indices: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002 - PyTorch's name
                 output_size: Any = None) -> Any:
    """The partial inverse of ``max_pool3d``."""
    return _max_unpool(input, indices, 3, kernel_size, stride, padding, output_size, "max_unpool3d")


def _avg_pool(x: Any, nd: int, kernel_size: Any, stride: Any, padding: Any, ceil_mode: bool,
              count_include_pad: bool, divisor_override: Any, fn: str) -> Any:
    x, unbatched = _batched(x, nd, fn)
    if not x.dtype.is_float and x.dtype is not dtypes.int64:
        raise DTypeError(f"{fn}: expected a floating-point or int64 x (as PyTorch), got {x.dtype.name}")
    ks, st, dl, pads, outs = _pool_geometry(x, nd, kernel_size, stride, padding, 1, ceil_mode, fn)
    if not x.dtype.is_float:
        out = _int_avg(x, ks, st, dl, pads, outs, count_include_pad, divisor_override)
        return out.squeeze(0) if unbatched else out
    w, out_dt = float_work(x)
    win = _windows(w.pad(_pads(pads)), ks, st, dl)
    total = win.sum(tuple(range(2 + nd, 2 + 2 * nd)))
    if divisor_override:
        out = total * (1.0 / divisor_override)
    elif all(hi == lo for lo, hi in pads) and (count_include_pad or not any(lo for lo, _ in pads)):
        out = total * (1.0 / math.prod(ks))
    else:  # windows overlapping padding count only what PyTorch counts: a constant (out,) array
        count = _window_counts(tuple(x.shape[2:]), ks, st, pads, outs, count_include_pad)
        out = total * pinned_as(tensor(1.0 / count, dtype=w.dtype, device=x.device), x)
    out = out.cast(out_dt)
    return out.squeeze(0) if unbatched else out


def _int_avg(x: Any, ks: tuple, st: tuple, dl: tuple, pads: list, outs: tuple, count_include_pad: bool,
             divisor_override: Any) -> Any:
    """PyTorch's integer average pool: the window's int64 sum divided by its divisor, truncated toward zero
    (C++ integer division), in ``x``'s dtype."""
    nd = len(ks)
    total = _windows(x.pad(_pads(pads)), ks, st, dl).sum(tuple(range(2 + nd, 2 + 2 * nd)))  # int64
    if divisor_override:
        div: Any = int(divisor_override)
    elif all(hi == lo for lo, hi in pads) and (count_include_pad or not any(lo for lo, _ in pads)):
        div = math.prod(ks)
    else:
        count = _window_counts(tuple(x.shape[2:]), ks, st, pads, outs, count_include_pad)
        div = pinned_as(tensor(count.astype(np.int64), device=x.device), x)
    return where(total < 0, -((-total) // div), total // div).cast(x.dtype)


def _window_counts(spatial: tuple[int, ...], ks: tuple[int, ...], st: tuple[int, ...], pads: list, outs: tuple,
                   count_include_pad: bool) -> np.ndarray:
    """Each window's divisor: its elements inside the input (and inside the padding when
    ``count_include_pad``), never past the padded input's end (the ceil-mode overhang)."""
    per_dim = []
    for L, k, s, (p, _), m in zip(spatial, ks, st, pads, outs):
        start = np.arange(m) * s - p
        end = np.minimum(start + k, L + p)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, L)
        per_dim.append((end - np.maximum(start, -p)).astype(np.float64))
    count = per_dim[0]
    for c in per_dim[1:]:
        count = np.multiply.outer(count, c)
    return count


def avg_pool1d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002 - PyTorch's name
               count_include_pad: bool = True) -> Any:
    """Mean over sliding windows of (N, C, L)."""
    return _avg_pool(input, 1, kernel_size, stride, padding, ceil_mode, count_include_pad, None, "avg_pool1d")


def avg_pool2d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002 - PyTorch's name
               count_include_pad: bool = True, divisor_override: Any = None) -> Any:
    """Mean over sliding windows of (N, C, H, W)."""
    return _avg_pool(input, 2, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "avg_pool2d")


def avg_pool3d(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, ceil_mode: bool = False,  # noqa: A002 - PyTorch's name
               count_include_pad: bool = True, divisor_override: Any = None) -> Any:
    """Mean over sliding windows of (N, C, D, H, W)."""
    return _avg_pool(input, 3, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override,
                     "avg_pool3d")


def _adaptive_sizes(x: Any, output_size: Any, nd: int, fn: str) -> tuple[int, ...]:
    if x.ndim not in (nd + 1, nd + 2):
        raise ShapeError(f"{fn}: expected a {nd + 1}-D (unbatched) or {nd + 2}-D (batched) input, got shape "
                         f"{tuple(x.shape)}")
    spatial = tuple(x.shape[-nd:])
    if 0 in spatial or 0 in x.shape[-nd - 1:-nd]:
        raise ShapeError(f"{fn}: expected non-empty channel and spatial dims, got shape {tuple(x.shape)}")
    sizes = (output_size,) * nd if isinstance(output_size, int) else tuple(output_size)
    if len(sizes) != nd:
        raise ShapeError(f"{fn}: output_size must be an int or {nd} ints, got {output_size!r}")
    sizes = tuple(L if s is None else int(s) for s, L in zip(sizes, spatial))
    if any(s < 0 for s in sizes):
        raise ShapeError(f"{fn}: output_size must be non-negative, got {output_size!r}")
    return sizes


def _empty_pool(x: Any, sizes: tuple[int, ...]) -> Any:
    """The empty result of an adaptive pool to a size with a 0 (PyTorch returns it too)."""
    return pinned_as(zeros(*x.shape[:x.ndim - len(sizes)], *sizes, dtype=x.dtype, device=x.device), x)


def _bins(length: int, size: int) -> list[tuple[int, int]]:
    """PyTorch's adaptive bins: ``[floor(i*L/n), ceil((i+1)*L/n))``."""
    return [((i * length) // size, -(-((i + 1) * length) // size)) for i in range(size)]


def _adaptive_avg(x: Any, output_size: Any, nd: int, fn: str) -> Any:
    sizes = _adaptive_sizes(x, output_size, nd, fn)
    spatial = tuple(x.shape[-nd:])
    if not x.dtype.is_float:
        raise DTypeError(f"{fn}: expected a floating-point x, got {x.dtype.name}")
    if 0 in sizes:
        return _empty_pool(x, sizes)
    if all(L % s == 0 for L, s in zip(spatial, sizes)):  # uniform windows: one pooling kernel
        ks = tuple(L // s for L, s in zip(spatial, sizes))
        return _avg_pool(x, nd, ks, ks, 0, False, True, None, fn)
    # uneven bins: a product with each dim's (L, out) averaging matrix
    w, out_dt = float_work(x)
    for i, (L, s) in enumerate(zip(spatial, sizes)):
        a = np.zeros((L, s))
        for j, (lo, hi) in enumerate(_bins(L, s)):
            a[lo:hi, j] = 1.0 / (hi - lo)
        dim = w.ndim - nd + i
        m = pinned_as(tensor(a, dtype=w.dtype, device=w.device), w)
        w = (w.transpose(dim, -1) @ m).transpose(dim, -1)
    return w.cast(out_dt)


def adaptive_avg_pool1d(input: Any, output_size: Any) -> Any:  # noqa: A002 - PyTorch's name
    """Mean over PyTorch's adaptive bins of (N, C, L) to ``output_size``."""
    return _adaptive_avg(input, output_size, 1, "adaptive_avg_pool1d")


def adaptive_avg_pool2d(input: Any, output_size: Any) -> Any:  # noqa: A002 - PyTorch's name
    """Mean over PyTorch's adaptive bins of (N, C, H, W) to ``output_size`` (an int, a pair, None keeps a dim)."""
    return _adaptive_avg(input, output_size, 2, "adaptive_avg_pool2d")


def _adaptive_max(x: Any, output_size: Any, return_indices: bool, nd: int, fn: str) -> Any:
    sizes = _adaptive_sizes(x, output_size, nd, fn)
    spatial = tuple(x.shape[-nd:])
    if 0 in sizes:
        out = _empty_pool(x, sizes)
        return (out, _empty_pool(x.cast(dtypes.int64), sizes)) if return_indices else out
    if all(L % s == 0 for L, s in zip(spatial, sizes)):
        ks = tuple(L // s for L, s in zip(spatial, sizes))
        return _max_pool(x, nd, ks, ks, 0, 1, False, return_indices, fn)
    x, unbatched = _batched(x, nd, fn)
    out, idx = _adaptive_max_uneven(x, sizes, fn)
    if unbatched:
        out, idx = out.squeeze(0), idx.squeeze(0)
    return (out, idx) if return_indices else out


def _adaptive_max_uneven(x: Any, sizes: tuple[int, ...], fn: str) -> tuple[Any, Any]:
    """Max and first-max plane index over uneven adaptive bins of (N, C, *spatial): each bin's elements are
    gathered from the flat plane into a (*sizes, *widest bin) window (a shorter bin repeats its last element,
    which changes neither its max nor where the first max is), then reduced as ``max_pool`` reduces; the
    gradient goes to each bin's first maximum, as PyTorch's."""
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    nd, plane = len(spatial), math.prod(spatial)
    bins = [_bins(L, s) for L, s in zip(spatial, sizes)]
    ks = tuple(max(hi - lo for lo, hi in b) for b in bins)
    flat = np.zeros(sizes + ks, dtype=np.int64)
    stride = 1
    for d in reversed(range(nd)):
        pos = np.array([[min(lo + j, hi - 1) for j in range(ks[d])] for lo, hi in bins[d]])  # (out_d, k_d)
        shape = [1] * (2 * nd)
        shape[d], shape[nd + d] = sizes[d], ks[d]
        flat = flat + pos.reshape(shape) * stride
        stride *= spatial[d]
    ids = pinned_as(tensor(flat, device=x.device), x)
    red = tuple(range(2 + nd, 2 + 2 * nd))
    needs_grad = x._ag is not None and is_grad_enabled()
    with no_grad():
        win = x.reshape(n, c, plane).index_select(2, ids.reshape(-1)).reshape(n, c, *sizes, *ks)
        out = win.amax(red)
        first = _pick_max(win, out, ids.reshape(1, 1, *ids.shape), plane, red)
    if needs_grad:
        geometry = (tuple(x.shape), ks, sizes, False)
        out = record(fn, out, [x], lambda g: (_max_pool_backward(g, first, geometry),))
    return out, first


def adaptive_max_pool1d(input: Any, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002 - PyTorch's name
    """Max over PyTorch's adaptive bins of (N, C, L)."""
    return _adaptive_max(input, output_size, return_indices, 1, "adaptive_max_pool1d")


def adaptive_max_pool2d(input: Any, output_size: Any, return_indices: bool = False) -> Any:  # noqa: A002 - PyTorch's name
    """Max over PyTorch's adaptive bins of (N, C, H, W); ``return_indices`` when the bins are uniform."""
    return _adaptive_max(input, output_size, return_indices, 2, "adaptive_max_pool2d")


# ------------------------------------------------------------------ normalization

def _channel_shape(x: Any) -> tuple[int, ...]:
    return (1, x.shape[1]) + (1,) * (x.ndim - 2)


def _check_per_channel(fn: str, x: Any, **stats: Any) -> None:
    """Each given tensor in ``stats`` (running statistics, weight, bias) holds one value per channel of ``x``
    (N, C, *), else a ShapeError naming it, before anything runs or moves."""
    c = x.shape[1]
    for name, t in stats.items():
        if t is not None and t.numel() != c:
            raise ShapeError(f"{fn}: expected {name} of {c} elements (one per channel of input shape "
                             f"{tuple(x.shape)}), got shape {tuple(t.shape)}")


def _affine(out: Any, weight: Any, bias: Any, shape: tuple[int, ...]) -> Any:
    if weight is not None:
        out = out * weight.reshape(shape)
    if bias is not None:
        out = out + bias.reshape(shape)
    return out


def _update(stat: Any, new: Any, momentum: float) -> None:
    """``stat = (1 - momentum) * stat + momentum * new`` in place (no gradient), run at once: nothing may
    read the statistics until eval, and a pending update would chain onto the previous one each step.
    A failed check upstream of ``new`` (an out-of-range gather) raises here and leaves ``stat`` as it was."""
    raise_unread_errors(new)
    with no_grad():
        stat._assign((stat * (1.0 - momentum) + new.detach().cast(stat.dtype) * momentum).cast(stat.dtype))
        stat.realize()


def batch_norm(input: Any, running_mean: Any, running_var: Any, weight: Any = None, bias: Any = None,  # noqa: A002 - PyTorch's name
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """Normalize each channel of (N, C, *) over the batch and spatial dims: with the batch's statistics
    (biased variance) when ``training`` (updating the running ones in place, unbiased variance, as
    PyTorch), else with the running ones."""
    if input.ndim < 2:
        raise ShapeError(f"batch_norm: expected an input of at least 2 dims (N, C, *), got shape {tuple(input.shape)}")
    _check_per_channel("batch_norm", input, running_mean=running_mean, running_var=running_var, weight=weight,
                       bias=bias)
    shape = _channel_shape(input)
    w, out_dt = float_work(input)
    if training:
        dims = (0,) + tuple(range(2, input.ndim))
        count = input.shape[0] * math.prod(input.shape[2:])  # values per channel (also when C is 0)
        if count <= 1:
            raise ShapeError(f"batch_norm: expected more than 1 value per channel when training, got input "
                             f"shape {tuple(input.shape)}")
        mean = w.mean(dims, keepdim=True)
        d = w - mean
        var = (d * d).mean(dims, keepdim=True)
        if running_mean is not None:
            _update(running_mean, mean.reshape(-1), momentum)
        if running_var is not None:
            _update(running_var, var.reshape(-1) * (count / (count - 1)), momentum)
        out = d * (var + eps).rsqrt()
    else:
        if running_mean is None or running_var is None:
            raise ShapeError("batch_norm: running_mean and running_var are needed when not training")
        out = (w - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
    return _affine(out, weight, bias, shape).cast(out_dt)


def instance_norm(input: Any, running_mean: Any = None, running_var: Any = None, weight: Any = None,  # noqa: A002 - PyTorch's name
                  bias: Any = None, use_input_stats: bool = True, momentum: float = 0.1, eps: float = 1e-5) -> Any:
    """Normalize each (sample, channel) of (N, C, *) over its spatial dims; the running statistics (when
    given) track the batch mean of the instance statistics."""
    if input.ndim < 3:
        raise ShapeError(f"instance_norm: expected an input of at least 3 dims (N, C, *), got shape "
                         f"{tuple(input.shape)}")
    _check_per_channel("instance_norm", input, running_mean=running_mean, running_var=running_var, weight=weight,
                       bias=bias)
    shape = _channel_shape(input)
    w, out_dt = float_work(input)
    if not use_input_stats:
        if running_mean is None or running_var is None:
            raise ShapeError("instance_norm: running_mean and running_var are needed when use_input_stats=False")
        out = (w - running_mean.reshape(shape)) * (running_var.reshape(shape) + eps).rsqrt()
        return _affine(out, weight, bias, shape).cast(out_dt)
    dims = tuple(range(2, input.ndim))
    count = math.prod(input.shape[2:])
    mean = w.mean(dims, keepdim=True)
    d = w - mean
    var = (d * d).mean(dims, keepdim=True)
    if running_mean is not None:
        _update(running_mean, mean.mean(0).reshape(-1), momentum)
    if running_var is not None:
        _update(running_var, var.mean(0).reshape(-1) * (count / max(count - 1, 1)), momentum)
    return _affine(d * (var + eps).rsqrt(), weight, bias, shape).cast(out_dt)


def group_norm(input: Any, num_groups: int, weight: Any = None, bias: Any = None, eps: float = 1e-5) -> Any:  # noqa: A002 - PyTorch's name
    """Normalize (N, C, *) over each group of ``C/num_groups`` channels and the spatial dims, then scale and
    shift per channel."""
    if input.ndim < 2 or num_groups <= 0 or input.shape[1] % num_groups:
        raise ShapeError(f"group_norm: expected an input (N, C, *) with C divisible by num_groups={num_groups}, "
                         f"got shape {tuple(input.shape)}")
    _check_per_channel("group_norm", input, weight=weight, bias=bias)
    n = input.shape[0]
    w, out_dt = float_work(input)
    g = w.reshape(n, num_groups, input.numel() // max(n * num_groups, 1))  # explicit: -1 fails for n == 0
    mean = g.mean(-1, keepdim=True)
    d = g - mean
    var = (d * d).mean(-1, keepdim=True)
    out = (d * (var + eps).rsqrt()).reshape(input.shape)
    return _affine(out, weight, bias, _channel_shape(input)).cast(out_dt)


def rms_norm(input: Any, normalized_shape: Any, weight: Any = None, eps: float | None = None) -> Any:  # noqa: A002 - PyTorch's name
    """``x / sqrt(mean(x**2 over the trailing normalized_shape dims) + eps) * weight``, 16-bit floats computed
    in float32 and rounded once; ``eps=None`` is the machine epsilon of the dtype it computes in (float32's
    for 16-bit inputs), as PyTorch."""
    return rms_norm_as(input, normalized_shape, weight, eps, "rms_norm")


def rms_norm_as(x: Any, normalized_shape: Any, weight: Any, eps: float | None, fn: str) -> Any:
    """``rms_norm`` with ``fn`` naming the caller in errors (``nn.RMSNorm``)."""
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    k = len(shape)
    if k > x.ndim or tuple(x.shape[x.ndim - k:]) != shape:
        raise ShapeError(f"{fn}: normalized_shape {shape} does not match the trailing dims of input shape "
                         f"{tuple(x.shape)}")
    w, out_dt = float_work(x)
    if eps is None:
        eps = float(np.finfo(w.dtype.np_dtype).eps)  # of float32 or float64: 16-bit floats compute in float32
    dims = tuple(range(x.ndim - k, x.ndim))
    out = w * ((w * w).mean(dims, keepdim=True) + eps).rsqrt()
    if weight is not None:
        out = out * weight
    return out.cast(out_dt)


def local_response_norm(input: Any, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> Any:  # noqa: A002 - PyTorch's name
    """``x / (k + alpha * mean of x**2 over a window of `size` neighbouring channels) ** beta``
    (the window zero-padded at the channel ends, as PyTorch)."""
    if input.ndim < 3:
        raise ShapeError(f"local_response_norm: expected an input of at least 3 dims, got shape {tuple(input.shape)}")
    if size < 1:
        raise ShapeError(f"local_response_norm: size must be a positive number of channels, got {size}")
    w, out_dt = float_work(input)
    sq = w * w
    pads = [0, 0] * (input.ndim - 2) + [size // 2, (size - 1) // 2]
    div = sq.pad(pads).unfold(1, size, 1).sum(-1) * (alpha / size) + k
    return (w / div ** beta).cast(out_dt)
