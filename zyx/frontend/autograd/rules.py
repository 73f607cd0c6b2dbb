"""Gradient rules: one per primitive op, written with lazy tensor ops (so backward fuses).

Each ``record_*`` function is called by the op that produced ``out`` when ``autograd.needs_grad``
holds; it records a node (``engine.record``) whose rule maps the output's gradient to one gradient
per input. The rules are written against tensor methods (``g * b``, ``g.sum(dims)``, the elementwise
primitive ``_alu``), so this module imports no op module: the ops import it.
The rules follow PyTorch's formulas (``tools/autograd/derivatives.yaml`` there), including
its choices at ties and zeros: ``maximum`` splits a tie's gradient in half, ``relu`` passes
nothing at 0, ``amax``/``amin`` share the gradient evenly among tied extremes, ``prod`` is
exact with zeros in the input.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from zyx.frontend.autograd import engine as autograd
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import ones, zeros, zeros_like
from zyx.frontend.view_index import expand_index
from zyx.op import VALUE_CHECKS, Op

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_INV_SQRT_2 = 1.0 / math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_LN2 = math.log(2.0)
_INT64 = "int64"


def unbroadcast(g: Any, shape: tuple[int, ...]) -> Any:
    """``g`` summed over the dims a broadcast to its shape added or stretched, back to ``shape``."""
    if tuple(g.shape) == tuple(shape):
        return g
    lead = g.ndim - len(shape)
    dims = list(range(lead)) + [lead + i for i, s in enumerate(shape) if s == 1 and g.shape[lead + i] != 1]
    if dims:
        g = g.sum(tuple(dims), keepdim=True)
    return g.reshape(shape)


def _zeros(a: Any) -> Any:
    return zeros_like(a)


def _is_tensor(x: Any) -> bool:
    return hasattr(x, "_data")


# the elementwise primitive of the tensor (``ElementwiseMixin._alu``), spelled as the ops are

def unary(op: Op, x: Any) -> Any:
    return x._alu(op, x)


def binary(op: Op, a: Any, b: Any) -> Any:
    return (a if _is_tensor(a) else b)._alu(op, a, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    return cond._alu(Op.WHERE, cond, a, b)


# ------------------------------------------------------------------ elementwise

def _unary_grad(op: Op, g: Any, a: Any, out: Any) -> Any:
    if op is Op.NEG:
        return -g
    if op is Op.ABS:
        return g * unary(Op.SIGN, a)
    if op is Op.EXP:
        return g * out
    if op is Op.EXP2:
        return g * out * _LN2
    if op is Op.LOG:
        return g / a
    if op is Op.LOG2:
        return g / (a * _LN2)
    if op is Op.SQRT:
        return g / (out * 2.0)
    if op is Op.RSQRT:
        return g * (out * out * out) * -0.5
    if op is Op.SIN:
        return g * unary(Op.COS, a)
    if op is Op.COS:
        return -(g * unary(Op.SIN, a))
    if op is Op.TAN:
        return g * (out * out + 1.0)
    if op is Op.TANH:
        return g * (1.0 - out * out)
    if op is Op.SIGMOID:
        return g * ((1.0 - out) * out)
    if op is Op.RELU:
        return where(out > 0, g, 0.0)
    if op is Op.GELU:
        cdf = (unary(Op.ERF, a * _INV_SQRT_2) + 1.0) * 0.5
        pdf = unary(Op.EXP, a * a * -0.5) * _INV_SQRT_2PI
        return g * (cdf + a * pdf)
    if op is Op.GELU_TANH:
        inner = (a * a * a * 0.044715 + a) * _SQRT_2_OVER_PI
        t = unary(Op.TANH, inner)
        d_inner = (a * a * (3 * 0.044715) + 1.0) * _SQRT_2_OVER_PI
        return g * ((t + 1.0) * 0.5 + a * 0.5 * (1.0 - t * t) * d_inner)
    if op is Op.SILU:
        s = unary(Op.SIGMOID, a)
        return g * (s * (a * (1.0 - s) + 1.0))
    if op is Op.ERF:
        return g * unary(Op.EXP, -(a * a)) * _TWO_OVER_SQRT_PI
    if op is Op.RECIPROCAL:
        return -(g * (out * out))
    if op is Op.SQUARE:
        return g * a * 2.0
    if op in VALUE_CHECKS:  # a value passed through (or the kernel's error raised)
        return g
    if op in (Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC, Op.SIGN):
        return _zeros(g)
    raise AssertionError(f"no gradient rule for {op}")


def _binary_grads(op: Op, g: Any, a: Any, b: Any, out: Any) -> tuple[Any, Any]:
    if op is Op.ADD:
        return g, g
    if op is Op.SUB:
        return g, -g
    if op is Op.MUL:  # an operand not saved (None) is one the other's gradient does not need
        return (None if b is None else g * b), (None if a is None else g * a)
    if op is Op.DIV:
        return g / b, (-(g * a) / (b * b)) if _is_tensor(b) and a is not None else None
    if op is Op.POW:
        da = None
        if _is_tensor(a):
            if _is_tensor(b):
                da = where(binary(Op.EQ, b, 0.0), 0.0, g * b * binary(Op.POW, a, b - 1.0))
            else:
                da = g * (b * binary(Op.POW, a, b - 1.0)) if b != 0 else _zeros(a)
        db = None
        if _is_tensor(b):
            if _is_tensor(a):
                keep = binary(Op.EQ, a, 0.0) & binary(Op.GE, b, 0.0)
                d = out * unary(Op.LOG, a)
            else:  # a constant base: log(0) = -inf and log(<0) = nan, as the tensor's log gives
                keep = binary(Op.GE, b, 0.0) if a == 0 else None
                d = out * (math.log(a) if a > 0 else -math.inf if a == 0 else math.nan)
            db = g * (d if keep is None else where(keep, 0.0, d))  # g outside: a NaN g stays NaN (PyTorch)
        return da, db
    if op in (Op.MAXIMUM, Op.MINIMUM):
        # each side loses only where the other is strictly better: with a NaN both get the gradient (PyTorch)
        a_loses = binary(Op.LT if op is Op.MAXIMUM else Op.GT, a, b)
        b_loses = binary(Op.GT if op is Op.MAXIMUM else Op.LT, a, b)
        tie = binary(Op.EQ, a, b)
        half = g * 0.5
        return where(tie, half, where(a_loses, 0.0, g)), where(tie, half, where(b_loses, 0.0, g))
    if op is Op.MOD:
        return g, (-(g * unary(Op.FLOOR, a / b))) if _is_tensor(b) else None
    if op is Op.ATAN2:
        denom = a * a + b * b  # at (0, 0) (or an underflowed square) PyTorch's gradient is 0, not nan
        recip = where(binary(Op.EQ, denom, 0.0), 0.0, unary(Op.RECIPROCAL, denom))
        return g * b * recip, (g * -a * recip) if _is_tensor(b) else None
    if op is Op.COPYSIGN:  # PyTorch: grad * (result / self), 0 where self == 0; zeros to the sign source
        return where(binary(Op.EQ, a, 0.0), 0.0, g * (binary(Op.COPYSIGN, a, b) / a)), \
            (_zeros(b) if _is_tensor(b) else None)
    raise AssertionError(f"no gradient rule for {op}")


def record_alu(op: Op, operands: Sequence[Any], out: Any) -> None:
    """The node of an elementwise op; ``operands`` are its tensors (already cast to the op's dtype)
    or Python numbers, broadcast by the op."""
    if op not in _DIFFERENTIABLE:
        return
    is_tensor = [_is_tensor(x) for x in operands]
    shapes = [x.shape if t else None for x, t in zip(operands, is_tensor)]
    scalars = [None if t else x for x, t in zip(operands, is_tensor)]
    keep_out = op in _SAVES_OUT
    # only the operands the rule reads are saved (as PyTorch saves them): an in-place write to one it
    # does not read, e.g. y in z = y + w or z = y * 2, leaves the backward valid
    is_tensor = [t and need for t, need in zip(is_tensor, _reads(op, operands))]
    # inputs are saved as they are (their history serves create_graph); the output detached, as saving
    # it with its own node would be a reference cycle, and recomputed from the inputs when recording
    saved = [x for x, t in zip(operands, is_tensor) if t] + ([out.detach()] if keep_out else [])

    def fn(g: Any, *kept: Any) -> tuple:
        it = iter(kept)
        args = [next(it) if t else v for t, v in zip(is_tensor, scalars)]  # None: a tensor not saved
        o = next(it) if keep_out else None
        if keep_out and autograd.is_grad_enabled():  # create_graph: the output with its history
            o = unary(op, args[0]) if len(args) == 1 else binary(op, args[0], args[1])
        if len(args) == 1:
            grads: tuple = (_unary_grad(op, g, args[0], o),)
        else:
            grads = _binary_grads(op, g, args[0], args[1], o)
        return tuple(None if s is None or d is None else unbroadcast(d, s) for d, s in zip(grads, shapes))

    autograd.record(op.value, out, [x if _is_tensor(x) else None for x in operands], fn, saved)


_READS_NOTHING = frozenset({Op.ADD, Op.SUB, Op.NEG, Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC, Op.SIGN, *VALUE_CHECKS})


def _reads(op: Op, operands: Sequence[Any]) -> list[bool]:
    """Which operands the gradient rule of ``op`` reads: none for sums and the piecewise-constant ops;
    for a product, each factor only when the other one needs its gradient; a quotient's numerator only
    when the denominator needs its gradient."""
    if op in _READS_NOTHING:
        return [False] * len(operands)
    grads = [_is_tensor(x) and getattr(x, "_ag", None) is not None for x in operands]
    if op is Op.MUL:
        return [grads[1], grads[0]]
    if op is Op.DIV:
        return [grads[1], True]
    return [True] * len(operands)


_SAVES_OUT = frozenset({Op.EXP, Op.EXP2, Op.SQRT, Op.RSQRT, Op.TAN, Op.TANH, Op.SIGMOID, Op.RELU, Op.RECIPROCAL,
                        Op.POW})
_DIFFERENTIABLE = frozenset({
    Op.NEG, Op.ABS, Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.TAN, Op.TANH,
    Op.SIGMOID, Op.RELU, Op.GELU, Op.GELU_TANH, Op.SILU, Op.ERF, Op.RECIPROCAL, Op.FLOOR, Op.CEIL, Op.ROUND,
    Op.TRUNC, Op.SIGN, Op.SQUARE, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.MAXIMUM, Op.MINIMUM, Op.MOD,
    Op.ATAN2, Op.COPYSIGN, *VALUE_CHECKS,
})


def record_where(cond: Any, a: Any, b: Any, out: Any) -> None:
    """``where(cond, a, b)``: the gradient goes to ``a`` where ``cond`` holds, else to ``b``."""
    c = cond.detach()
    shapes = [x.shape if _is_tensor(x) else None for x in (a, b)]

    def fn(g: Any, c: Any) -> tuple:
        ga = unbroadcast(where(c, g, 0.0), shapes[0]) if shapes[0] is not None else None
        gb = unbroadcast(where(c, 0.0, g), shapes[1]) if shapes[1] is not None else None
        return ga, gb

    autograd.record("where", out, [a if _is_tensor(a) else None, b if _is_tensor(b) else None], fn, [c])


def record_clip(x: Any, low: Any, high: Any, out: Any) -> None:
    """``clip``: the gradient passes where ``low <= x <= high``; a tensor bound gets it where it won."""
    def fn(g: Any, x: Any, *bounds: Any) -> tuple:
        lo = bounds[0] if _is_tensor(low) else low
        hi = bounds[-1] if _is_tensor(high) else high
        inside = None
        glo = ghi = None
        if lo is not None:
            inside = binary(Op.GE, x, lo)
            if _is_tensor(low):
                glo = unbroadcast(where(inside, 0.0, g), low.shape)
        if hi is not None:
            below = binary(Op.LE, x, hi)
            inside = below if inside is None else inside & below
            if _is_tensor(high):
                ghi = unbroadcast(where(below, 0.0, g), high.shape)
        return unbroadcast(where(inside, g, 0.0), x.shape), glo, ghi

    saved = [x.detach()] + [t.detach() for t in (low, high) if _is_tensor(t)]
    autograd.record("clamp", out, [x, low if _is_tensor(low) else None, high if _is_tensor(high) else None], fn,
                    saved)


def with_gradient(name: str, inputs: Sequence[Any], forward: Callable[..., Any], backward: Callable[..., Any]):
    """``forward(*inputs)`` as one differentiable node whose rule is ``backward(g, *inputs)`` (one gradient per
    input, None for numbers): for compositions whose own chain rule would be inexact, or NaN through a ``where``
    branch that overflows. ``inputs`` are tensors of the result's float dtype or Python numbers."""
    if not autograd.needs_grad(*inputs):
        return forward(*inputs)
    with autograd.no_grad():
        out = forward(*inputs)
    tensors = [x if isinstance(x, TensorBase) else None for x in inputs]

    def fn(g: Any, *saved: Any) -> tuple:
        it = iter(saved)
        args = [next(it) if t is not None else x for t, x in zip(tensors, inputs)]
        grads = backward(g, *args)
        return tuple(None if t is None or d is None else unbroadcast(d, t.shape) for d, t in zip(grads, tensors))

    autograd.record(name, out, tensors, fn, [t for t in tensors if t is not None])
    return out


def record_cast(x: Any, out: Any) -> None:
    """A cast between float dtypes: the gradient is cast back."""
    if not x._dtype.is_float:
        return
    dtype = x._dtype
    autograd.record("to_copy", out, [x], lambda g: (g.cast(dtype),))


# ------------------------------------------------------------------ reductions

def record_reduce(op: Op, x: Any, dims: tuple[int, ...], keepdim: bool, out: Any) -> None:
    """sum / prod / amax / amin over ``dims`` of ``x`` (the result is in the accumulator dtype)."""
    if op not in (Op.SUM, Op.PROD, Op.MAX, Op.MIN):
        return
    shape, dtype = x.shape, x._dtype
    kept_shape = tuple(1 if i in dims else s for i, s in enumerate(shape))

    def fn(g: Any, *saved: Any) -> tuple:
        gk = g.reshape(kept_shape)
        if op is Op.SUM:
            return (gk.expand(*shape).cast(dtype),)
        xs, o = saved[0].cast(g.dtype), saved[1].reshape(kept_shape)
        if op is Op.PROD and autograd.is_grad_enabled():  # create_graph: the product with its history
            o = xs.prod(dims, keepdim=True)
        if op is Op.PROD:
            zero = binary(Op.EQ, xs, 0.0)
            zeros = zero.cast(g.dtype).sum(dims, keepdim=True)
            others = where(zero, 1.0, xs).prod(dims, keepdim=True).cast(g.dtype)
            grad = where(binary(Op.EQ, zeros, 0.0), o / where(zero, 1.0, xs),
                         where(binary(Op.EQ, zeros, 1.0) & zero, others, 0.0))
            return ((gk * grad).cast(dtype),)
        hit = binary(Op.EQ, xs, o).cast(g.dtype)
        count = hit.sum(dims, keepdim=True)
        return ((gk * hit / count).cast(dtype),)

    saved = [] if op is Op.SUM else [x, out.detach()]
    autograd.record({Op.SUM: "sum", Op.PROD: "prod", Op.MAX: "amax", Op.MIN: "amin"}[op], out, [x], fn, saved)


def record_matmul(a: Any, b: Any, out: Any) -> None:
    """``a @ b`` (batched, broadcasting, 1-D operands as PyTorch): ``g @ b^T`` and ``a^T @ g``."""
    a_shape, b_shape = a.shape, b.shape

    def fn(g: Any, a: Any, b: Any) -> tuple:
        a2 = a.unsqueeze(0) if a.ndim == 1 else a
        b2 = b.unsqueeze(-1) if b.ndim == 1 else b
        g2 = g  # b's axis first: with two 1-D operands g is 0-d, where -2 names no axis yet
        if b.ndim == 1:
            g2 = g2.unsqueeze(-1)
        if a.ndim == 1:
            g2 = g2.unsqueeze(-2)
        ga = gb = None
        if a_needs:
            ga = g2.matmul(b2.transpose(-1, -2))
            ga = unbroadcast(ga, a2.shape).reshape(a_shape).cast(a.dtype)
        if b_needs:
            gb = a2.transpose(-1, -2).matmul(g2)
            gb = unbroadcast(gb, b2.shape).reshape(b_shape).cast(b.dtype)
        return ga, gb

    a_needs, b_needs = a._ag is not None, b._ag is not None
    autograd.record("mm", out, [a, b], fn, [a, b])


# ------------------------------------------------------------------ movement and contract ops

def record_write(x: Any, index: Any, value: Any) -> Any:
    """``x[index] = value`` done in place: ``x`` now holds the gradient path of a new node whose rule
    sends the written slab's gradient to ``value`` and the rest to ``x``'s old values."""
    shape, items = x.shape, expand_index(x.ndim, index)
    value_shape = value.shape if _is_tensor(value) else None
    value_dtype = value.dtype if _is_tensor(value) else None

    def fn(g: Any) -> tuple:
        slab = g[index]
        written = index_backward(ones(*slab.shape, dtype=g.dtype, device=g.device), shape, items)
        gx = where(binary(Op.GT, written, 0.0), 0.0, g)
        gv = None if value_shape is None else unbroadcast(slab, value_shape).cast(value_dtype)
        return gx, gv

    return autograd.record("copy_slices", x, [x, value if value_shape is not None else None], fn)


def index_backward(g: Any, shape: tuple[int, ...], items: list[Any]) -> Any:
    """The gradient of a basic index (``items``: the normalized index, as ``basic_index`` expands it)
    into an input of ``shape``: ``g`` placed at the indexed positions, zeros elsewhere."""
    out_dim = 0
    in_dim = 0
    pads: list[tuple[int, int, int, int]] = []  # (dim in g, before, after, step) per sliced input dim
    for it in items:
        if it is None:
            g = g.squeeze(out_dim)
            continue
        size = shape[in_dim]
        if isinstance(it, slice):
            start, stop, step = it.indices(size)
            if step < 0:
                g = g.flip(out_dim)
                n = g.shape[out_dim]
                start = start + (n - 1) * step if n else 0
                step = -step
            pads.append((out_dim, start, size, step))
            out_dim += 1
        else:
            g = g.unsqueeze(out_dim)
            pads.append((out_dim, int(it) % size, size, 1))
            out_dim += 1
        in_dim += 1
    for d, start, size, step in pads:
        g = place(g, d, start, size, step)
    return g


def place(g: Any, d: int, start: int, size: int, step: int) -> Any:
    """``g`` (n along ``d``) spread to positions ``start, start+step, ...`` of a zero axis of ``size``."""
    n = g.shape[d]
    if n == 0:
        shape = list(g.shape)
        shape[d] = size
        return zeros(*shape, dtype=g.dtype, device=g.device)
    if step > 1:
        g = g.unsqueeze(d + 1)
        pads = [0, 0] * g.ndim
        pads[2 * (g.ndim - 1 - (d + 1)) + 1] = step - 1
        g = g.pad(pads).flatten(d, d + 1)
        g = g.narrow(d, 0, (n - 1) * step + 1)
    span = g.shape[d]
    pads = [0, 0] * g.ndim
    k = g.ndim - 1 - d
    pads[2 * k] = start
    pads[2 * k + 1] = size - start - span
    return g.pad(pads)
