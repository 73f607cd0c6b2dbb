"""Elementwise tensor ops (API.md "Elementwise"): lazy ALU nodes with PyTorch dtype rules.

Each op broadcasts its operands (views, no copies), casts them to the computation
dtype (PyTorch's ``result_type``; true division and float functions of integers go
to float32), and records one lazy node; fusion happens at realization.
``ElementwiseMixin`` gives ``Tensor`` the methods and operators.
"""
from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from zyx import dtype as dtypes
from zyx import graph
from zyx.dtype import DType
from zyx.errors import (
    DivisionByZeroError,
    DTypeError,
    IntegerArithmeticError,
    IntegerOverflowError,
    OpDTypeError,
    ShapeError,
)
from zyx.frontend import traced_scalar
from zyx.frontend.args import device_of
from zyx.frontend.autograd import is_grad_enabled, needs_grad, no_grad
from zyx.frontend.base import VARSIZE, TensorBase, tensor_class
from zyx.frontend.traced_scalar import FloatArg, IntArg, TracedScalar
from zyx.ir.variable import BOUND, VariableArg
from zyx.ir.view import View
from zyx.op import COMPARISON, Op

Scalar = (bool, int, float, np.bool_, np.integer, np.floating)
_OPERAND: tuple = Scalar  # (Tensor, *Scalar) once the tensor class is known
_contiguous = View.contiguous
_alu = graph.alu
_LSrc = graph.Src


_Tensor: Any = None  # the concrete tensor class, looked up once (see ``base.TensorBase``)


def _tensor_cls():
    global _Tensor, _OPERAND
    if _Tensor is None:
        _Tensor = tensor_class()
        _OPERAND = (_Tensor, *Scalar)
    return _Tensor


_BROADCASTS: dict[tuple, tuple[int, ...]] = {}  # (shape, shape) -> broadcast shape, for hot loops


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The broadcast of several shapes (PyTorch/NumPy rules)."""
    try:
        got = _BROADCASTS.get(shapes)
    except TypeError:  # a list among them
        got = None
    if got is not None:
        return got
    out = _broadcast_shapes(*shapes)
    if len(shapes) == 2 and type(shapes[0]) is tuple and type(shapes[1]) is tuple:
        if len(_BROADCASTS) >= 4096:
            _BROADCASTS.clear()
        _BROADCASTS[shapes] = out
    return out


def _broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    if len(shapes) == 2:  # fast path: two shapes
        a, b = shapes
        if len(a) != len(b):
            if len(a) < len(b):
                a = (1,) * (len(b) - len(a)) + tuple(a)
            else:
                b = (1,) * (len(a) - len(b)) + tuple(b)
        fast = []
        for x, y in zip(a, b):
            if x == y or y == 1:
                fast.append(x)
            elif x == 1:
                fast.append(y)
            else:
                break  # not broadcastable: the general path raises
        else:
            return tuple(fast)
    n = max((len(s) for s in shapes), default=0)
    out = [1] * n
    for s in shapes:
        for i, d in enumerate(s):
            j = n - len(s) + i
            if out[j] == 1:
                out[j] = d
            elif d != 1 and d != out[j]:
                raise ShapeError(f"shapes {' and '.join(str(tuple(x)) for x in shapes)} cannot be broadcast "
                                 f"together (dim {j}: {out[j]} vs {d})")
    return tuple(out)


def from_node(node: graph.LazyNode, shape: tuple[int, ...] | None = None):
    """A tensor viewing a lazy node (reshaped to ``shape`` if given, same element count)."""
    shape = node.shape if shape is None else tuple(shape)
    return (_Tensor or _tensor_cls())(node, _contiguous(shape), node.dtype, node.device)


def src_of(x: Any, shape: tuple[int, ...], dtype: DType) -> graph.Src:
    """An operand reading tensor or scalar ``x`` broadcast to ``shape`` as ``dtype``."""
    Tensor = _tensor_cls()
    if type(x) is FloatArg or type(x) is IntArg:
        return _traced_src(None, 0, x, dtype)[0]
    if not isinstance(x, Tensor):
        return graph.Src(None, None, dtype, scalar_value(x, dtype))
    if x.dtype is not dtype:
        x = x.cast(dtype)
    view = x._view if x.shape == shape else x._view.expand(shape)
    return graph.Src(x._data, view, dtype)


#: Ops whose Python-number operand PyTorch first rounds to a 16/8-bit float tensor's dtype
#: (bfloat16 ``x + 0.1`` adds bf16(0.1), ``x == 0.1`` compares with it), where ``x * 0.1``
#: (and ``0.1 * x``), ``x / 0.1`` and ``x // 0.1`` use the number as it is, but ``0.1 // x``
#: rounds it, and ``0.1 / x`` is ``x.reciprocal() * 0.1`` (measured on PyTorch 2.13 CPU).
_ROUNDS_SCALAR = frozenset({Op.ADD, Op.SUB, Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE, Op.MOD, Op.POW, Op.MAXIMUM,
                            Op.MINIMUM})
#: Ops whose right operand PyTorch uses unrounded when it is a 0-d float tensor (a Python
#: number is unrounded on either side of ``*``).
_UNROUNDED_RIGHT = frozenset({Op.MUL, Op.DIV, Op.FLOORDIV})
# Ops the per-call paths below test, looked up once: an enum attribute costs ~0.2 us, a local ~0.02
_ADD, _SUB, _MUL, _DIV, _FLOORDIV = Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV
_MAXIMUM, _MINIMUM, _AND, _OR = Op.MAXIMUM, Op.MINIMUM, Op.AND, Op.OR
_RECIPROCAL, _INVERT, _NEG, _SQUARE = Op.RECIPROCAL, Op.INVERT, Op.NEG, Op.SQUARE
_BITWISE = frozenset({Op.AND, Op.OR, Op.XOR})
_SHIFTS = frozenset({Op.SHL, Op.SHR})
_BOOL_RESULT = frozenset({Op.ISNAN, Op.ISINF, Op.NOT})
_ROUNDING = frozenset({Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC})
_ROUNDING_OR_SIGN = _ROUNDING | {Op.SIGN}


def _rounded(v: float, d: DType) -> float:
    """``v`` rounded to the float dtype ``d`` (nearest even; inf past its range)."""
    with np.errstate(over="ignore"):
        return float(np.asarray(v, dtype=np.float64).astype(d.np_dtype))


def scalar_value(v: Any, d: DType, round_to_dtype: bool = False) -> Any:
    t = type(v)
    if t is float or t is int or t is bool:
        if d.kind == "float":
            return _rounded(float(v), d) if round_to_dtype and d.itemsize < 4 else float(v)
        if d.kind == "bool":
            return bool(v)
        if not -(1 << 63) <= v < (1 << 64):
            raise IntegerOverflowError(f"the Python int {v} does not fit a 64-bit integer (an operand of a "
                                       f"{d.name} tensor must lie in [-2**63, 2**64))")
        return int(v)
    if isinstance(v, Scalar):
        if d.is_float:
            return _rounded(float(v), d) if round_to_dtype and d.itemsize < 4 else float(v)
        if d.is_bool:
            return bool(v)
        return int(v)
    raise DTypeError(f"unsupported operand {v!r} of type {type(v).__name__}; expected a Tensor or a Python number")


def _shape_of(x: Any) -> tuple[int, ...]:
    return x.shape if isinstance(x, _tensor_cls()) else ()


def _node(op: str, xs: Sequence[Any], compute: DType, result: DType | None = None):
    Tensor = _Tensor or _tensor_cls()
    shape = device = None
    same = True  # every tensor operand has the same shape (no broadcasting views)
    one_device = True
    for x in xs:
        if isinstance(x, Tensor):
            if shape is None:
                shape, device = x._view.shape, x._device
            else:
                if x._view.shape != shape:
                    same = False
                if x._device is not device:
                    one_device = False
    if shape is None:
        shape = broadcast_shapes(*(_shape_of(x) for x in xs))
    elif not same:
        shape = broadcast_shapes(*[x._view.shape for x in xs if isinstance(x, Tensor)])
    if not one_device:
        device = device_of(*xs, out_bytes=math.prod(shape) * compute.itemsize)
    elif device is None:  # no tensor operand (as before: an error from _device_of)
        device = device_of(*xs)
    srcs = []
    operands = []  # what the op reads (tensors after their casts, numbers): autograd's inputs
    grads = False
    for i, x in enumerate(xs):
        if isinstance(x, Tensor):
            read_as = compute
            if x._dtype is not compute:
                if (i == 1 and op in _UNROUNDED_RIGHT and not x._view.shape and x._dtype.is_float
                        and compute.is_float and compute.itemsize < 4):
                    # a 0-d float tensor on the right of * / // is used at float32 precision, as
                    # PyTorch does (it rounds it to the 16-bit dtype in every other place)
                    read_as = dtypes.float32
                x = x.cast(read_as)
            view = x._view
            if view.shape != shape:
                view = view.expand(shape)
            srcs.append(_LSrc(x._data, view, read_as))
            operands.append(x)
            if x._ag is not None:
                grads = True
        elif type(x) is VariableArg:  # a kernel argument, so one kernel and plan serve every value
            srcs.append(_LSrc(None, None, compute, x, True))
            operands.append(int(x))
        elif type(x) is FloatArg or type(x) is IntArg:  # a jitted function's number (traced_scalar)
            src, value = _traced_src(op, i, x, compute)
            srcs.append(src)
            operands.append(value)
        else:
            value = scalar_value(x, compute, _rounds_scalar(op, i))
            srcs.append(_LSrc(None, None, compute, value, _scalar_param(op, compute)))
            operands.append(value)
    # the result dtype of an ALU op on operands all cast to ``compute``
    out = result or (dtypes.bool_ if op in COMPARISON else compute)
    t = Tensor(_alu(op, srcs, out, shape, device), _contiguous(shape), out, device)
    if grads and is_grad_enabled():
        from zyx.frontend.gradients import record_alu

        record_alu(op, operands, t)
    return t


def _rounds_scalar(op: Any, i: int) -> bool:
    """Whether ``op``'s scalar operand at position ``i`` is rounded to the compute dtype first."""
    return op in _ROUNDS_SCALAR or (op is _FLOORDIV and i == 0)


def _scalar_param(op: Any, compute: DType) -> bool | None:
    """How a scalar operand reaches the kernel (``_LSrc``'s param): None for float math, True where an
    integer op takes it as a kernel argument (``op`` None: a bare operand), False for a literal."""
    return None if compute.kind == "float" else (compute.is_int and (op is None or op in _INT_SCALAR_ARGS))


def _promotable(x: Any) -> Any:
    """A traced scalar as a ``FloatArg``/``IntArg`` of its Python type (what promotion and zyx's checks
    see; ``_node`` makes it a kernel argument), or its plain value outside its capture."""
    x = traced_scalar.operand(x)
    if type(x) is not TracedScalar:
        return x
    v = traced_scalar.peek(x)
    out: Any = FloatArg(v) if type(v) is float else IntArg(v)
    out.traced, out._cap = x, None
    return out


def _traced_src(op: Any, i: int, x: Any, compute: DType) -> tuple[graph.Src, Any]:
    """The operand ``x`` (from ``_promotable``) of ``op`` at position ``i``: a kernel argument a replay
    recomputes where the op takes its number as an argument, else a literal keyed by its value."""
    ts = traced_scalar.operand(x.traced)
    rounds, param = _rounds_scalar(op, i), _scalar_param(op, compute)
    if type(ts) is not TracedScalar or param is False:
        value = scalar_value(ts._read() if type(ts) is TracedScalar else ts, compute, rounds)
        return _LSrc(None, None, compute, value, param), value
    if compute.kind == "float" and not (rounds and compute.itemsize < 4):
        to = float  # scalar_value's conversion here, without its checks of the type
    else:
        to = functools.partial(scalar_value, d=compute, round_to_dtype=rounds)
    conv = traced_scalar.convert(ts, to)
    return _LSrc(None, None, compute, traced_scalar.kernel_arg(conv, compute), True), conv


def _check_operand(x: Any) -> None:
    if not isinstance(x, _OPERAND) and not isinstance(x, _tensor_cls()):
        raise DTypeError(f"unsupported operand {x!r} of type {type(x).__name__}; expected a Tensor or a Python number")


# ------------------------------------------------------------------ binary

def binary(op: str, a: Any, b: Any):
    """``a op b`` with PyTorch type promotion and broadcasting (either side may be a scalar)."""
    Tensor = _Tensor or _tensor_cls()
    ta, tb = type(a), type(b)
    if ta is not Tensor or (tb is not Tensor and tb not in _PY_SCALARS):  # not tensor op tensor/number
        if ta not in _PY_SCALARS or tb is not Tensor:  # nor number op tensor: a variable's or a jit's number?
            if ta in BOUND or tb in BOUND:  # a Python int to promotion, an argument to the kernel
                a, b = (x.arg() if type(x) in BOUND else x for x in (a, b))
                ta, tb = type(a), type(b)
            if ta is TracedScalar or tb is TracedScalar:  # a jitted function's number: an argument of its plan
                a, b = _promotable(a), _promotable(b)
                ta, tb = type(a), type(b)
        if op is _DIV and tb is Tensor and (ta in _PY_SCALARS or ta is FloatArg or ta is IntArg):
            # PyTorch computes ``s / x`` as ``x.reciprocal() * s`` (two roundings): so does zyx
            return binary(_MUL, unary(_RECIPROCAL, b), a)
    # fast paths of result_type: equal tensor dtypes, or a float tensor with a Python number
    if ta is Tensor and tb is Tensor and a._dtype is b._dtype:
        dt = a._dtype
    elif ta is Tensor and tb in _PY_SCALARS and a._dtype.kind == "float":
        dt = a._dtype
    elif tb is Tensor and ta in _PY_SCALARS and b._dtype.kind == "float":
        dt = b._dtype
    else:
        if not isinstance(a, _OPERAND):
            _check_operand(a)
        if not isinstance(b, _OPERAND):
            _check_operand(b)
        dt = dtypes.result_type(a, b)
    if op is _DIV:
        if dt.kind != "float":
            dt = dtypes.float32
        return _node(_DIV, (a, b), dt)
    if dt.kind == "float" and op in _PLAIN_FLOAT_BINARY:
        return _node(op, (a, b), dt)
    if op in _CMP_OPS:
        return _node(op, (a, b), dt)
    if op in _SHIFTS:
        if not dt.is_int:
            raise OpDTypeError(f"{op} needs integer tensors, got {dt.name}")
        return _node(op, (a, b), dt)
    if op in _BITWISE:
        if dt.is_float:
            raise DTypeError(f"bitwise {op} needs bool or integer tensors, got {dt.name}")
        return _node(op, (a, b), dt)
    if not dt.is_float:
        _check_int_scalar(op, b)
    if dt.is_bool:
        if op is _ADD or op is _MAXIMUM:
            return _node(_OR, (a, b), dt)
        if op is _MUL or op is _MINIMUM:
            return _node(_AND, (a, b), dt)
        if op is _SUB:
            raise DTypeError("subtraction of bool tensors is not supported; use logical ops (^ or logical_not)")
        dt = dtypes.int64
    return _node(op, (a, b), dt)


_PY_SCALARS = frozenset((float, int, bool))
#: Integer ops whose Python-number operand is a kernel argument (a loop over new values reuses
#: the kernel); ``//``, ``%`` and ``**`` keep a literal, which the compiler turns into cheaper code.
_INT_SCALAR_ARGS = frozenset((Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM, Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE,
                              "and", "or", "xor", "where"))
_CMP_OPS = frozenset((Op.EQ, Op.NE, Op.LT, Op.LE, Op.GT, Op.GE))
# float operands: these record ``op`` itself with no further checks (see ``binary``)
_PLAIN_FLOAT_BINARY = frozenset((Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM, Op.POW, Op.FLOORDIV, Op.MOD))


def _check_int_scalar(op: str, b: Any) -> None:
    """Integer ``//``/``%`` by a scalar 0 and ``**`` a negative scalar raise now, like PyTorch.

    Tensor divisors and exponents are checked by the kernel (``backend/errorflags``).
    """
    if isinstance(b, _tensor_cls()):
        return
    if op in (Op.FLOORDIV, Op.MOD) and b == 0:
        raise DivisionByZeroError("ZeroDivisionError: integer division or modulo by zero (expected a non-zero "
                                  "divisor)")
    if op == Op.POW and b < 0:
        raise IntegerArithmeticError(f"Integers to negative integer powers are not allowed (exponent {b})")


def where(cond: Any, a: Any, b: Any):
    """``a`` where ``cond`` else ``b`` (broadcast; a/b promoted together)."""
    if type(cond) in VARSIZE or type(a) in VARSIZE or type(b) in VARSIZE:  # a variable size (frontend.varsize)
        from zyx.frontend import varsize_compute

        return varsize_compute.where(cond, a, b)
    Tensor = _tensor_cls()
    if not isinstance(cond, Tensor) or not cond.dtype.is_bool:
        got = cond.dtype.name if isinstance(cond, Tensor) else type(cond).__name__
        raise DTypeError(f"where: expected the condition to be a bool tensor, got {got}")
    if type(a) is TracedScalar or type(b) is TracedScalar:
        a, b = _promotable(a), _promotable(b)
    dt = dtypes.result_type(a, b) if (isinstance(a, Tensor) or isinstance(b, Tensor)) else \
        dtypes.result_type(dtypes.scalar_dtype(a), b)
    shape = broadcast_shapes(cond.shape, _shape_of(a), _shape_of(b))
    device = device_of(cond, a, b)
    a, b = (x.cast(dt) if isinstance(x, Tensor) else x for x in (a, b))
    srcs = [src_of(cond, shape, dtypes.bool_), src_of(a, shape, dt), src_of(b, shape, dt)]
    out = from_node(graph.alu(Op.WHERE, srcs, dt, shape, device))
    if needs_grad(a, b):
        from zyx.frontend.gradients import record_where

        record_where(cond, a, b, out)
    return out


def maximum(a: Any, b: Any):
    """Elementwise maximum (NaN propagates)."""
    return binary(Op.MAXIMUM, a, b)


def minimum(a: Any, b: Any):
    """Elementwise minimum (NaN propagates)."""
    return binary(Op.MINIMUM, a, b)


def pow(a: Any, b: Any):  # noqa: A001 - the API name
    """``a ** b``."""
    return binary(Op.POW, a, b)


# ------------------------------------------------------------------ unary

_FLOAT_FNS = (Op.EXP, Op.EXP2, Op.LOG, Op.LOG2, Op.SQRT, Op.RSQRT, Op.SIN, Op.COS, Op.TAN, Op.TANH, Op.SIGMOID,
              Op.SILU, Op.ERF, Op.RECIPROCAL)
_SAME_DTYPE_FNS = (Op.NEG, Op.ABS, Op.FLOOR, Op.CEIL, Op.ROUND, Op.TRUNC, Op.SIGN, Op.SQUARE, Op.RELU)
_FLOAT_FN_SET = frozenset(_FLOAT_FNS + (Op.GELU, Op.GELU_TANH))


def unary(op: str, x: Any):
    Tensor = _Tensor or _tensor_cls()
    if not isinstance(x, Tensor):
        raise DTypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    dt = x._dtype
    if op in _FLOAT_FN_SET:
        if not dt.is_float:
            dt = dtypes.float32
        return _node(op, (x,), dt)
    if op in _BOOL_RESULT:
        return _node(op, (x,), dt)
    if op is _INVERT:
        if dt.is_float:
            raise DTypeError(f"~ needs a bool or integer tensor, got {dt.name}")
        return _node(op, (x,), dt)
    if op is _NEG and dt.is_bool:
        raise DTypeError("negation of a bool tensor is not supported; use ~ or logical_not")
    if dt.is_bool and op in _ROUNDING_OR_SIGN:
        return x
    if not dt.is_float and op in _ROUNDING:
        return x
    if dt.is_bool and op is _SQUARE:
        dt = dtypes.int64
    return _node(op, (x,), dt)


def gelu(x: Any, approximate: str = "none"):
    """GELU: exact (erf) by default, ``approximate='tanh'`` for the tanh form."""
    if approximate not in ("none", "tanh"):
        raise ShapeError(f"gelu: approximate must be 'none' or 'tanh', got {approximate!r}")
    return unary(Op.GELU_TANH if approximate == "tanh" else Op.GELU, x)


def clip(x: Any, min: Any = None, max: Any = None):  # noqa: A002 - PyTorch's names
    """Clamp into ``[min, max]`` (either bound may be None or a tensor)."""
    if min is None and max is None:
        raise ShapeError("clip: at least one of min and max must be given")
    if type(min) is TracedScalar or type(max) is TracedScalar:
        min, max = _promotable(min), _promotable(max)  # noqa: A001
    if needs_grad(x, min, max):
        from zyx.frontend.gradients import record_clip

        with no_grad():
            out = clip(x, min, max)
        record_clip(x, min, max, out)
        return out
    out = x
    if min is not None:
        out = _clamp_side(out, min, Op.MAXIMUM)
    if max is not None:
        out = _clamp_side(out, max, Op.MINIMUM)
    return out


def _clamp_side(x: Any, bound: Any, op: str):
    # the bound first: maximum/minimum return their second operand between equal values, so an
    # input equal to its bound is kept (clip(-0.0, min=0.0) is -0.0, as in PyTorch)
    dt = dtypes.result_type(bound, x)
    return _node(op, (bound, x), dt)


def logical_not(x: Any):
    return unary(Op.NOT, x)


UNARY_FUNCTIONS = _FLOAT_FNS + _SAME_DTYPE_FNS + (Op.ISNAN, Op.ISINF)  # the zyx.<op> functions below


# ------------------------------------------------------------------ unary functions (zyx.exp, ...)

def _unary_function(op: str, what: str) -> Callable[[Any], Any]:
    """The module-level function ``zyx.<op>(x)``: the elementwise ``op`` of a tensor."""

    def fn(x: Any) -> Any:
        return unary(op, x)

    fn.__name__ = fn.__qualname__ = op
    fn.__doc__ = f"Elementwise {what}."
    return fn


exp = _unary_function(Op.EXP, "e to the power x")
exp2 = _unary_function(Op.EXP2, "2 to the power x")
log = _unary_function(Op.LOG, "natural logarithm")
log2 = _unary_function(Op.LOG2, "base-2 logarithm")
sqrt = _unary_function(Op.SQRT, "square root")
rsqrt = _unary_function(Op.RSQRT, "1 / sqrt(x)")
sin = _unary_function(Op.SIN, "sine")
cos = _unary_function(Op.COS, "cosine")
tan = _unary_function(Op.TAN, "tangent")
tanh = _unary_function(Op.TANH, "hyperbolic tangent")
sigmoid = _unary_function(Op.SIGMOID, "1 / (1 + exp(-x))")
silu = _unary_function(Op.SILU, "x * sigmoid(x)")
erf = _unary_function(Op.ERF, "the error function")
reciprocal = _unary_function(Op.RECIPROCAL, "1 / x")
neg = _unary_function(Op.NEG, "-x")
abs = _unary_function(Op.ABS, "absolute value")  # noqa: A001 - the API name
floor = _unary_function(Op.FLOOR, "round down")
ceil = _unary_function(Op.CEIL, "round up")


def round(x: Any, decimals: int = 0):  # noqa: A001 - the API name
    """Round half to even; ``decimals`` places after the point (negative: before it), as ``torch.round``."""
    if decimals == 0:
        return unary(Op.ROUND, x)
    if type(decimals) is not int:
        raise DTypeError(f"round: decimals must be an int, got {type(decimals).__name__}")
    if not isinstance(x, _tensor_cls()) or not x.dtype.is_float:
        what = x.dtype.name if isinstance(x, _tensor_cls()) else type(x).__name__
        raise DTypeError(f"round: decimals={decimals} needs a floating point tensor, got {what}")
    # as PyTorch: scale by 10**|decimals| in the input's dtype (float32 for 16-bit floats, rounded once)
    work = x.cast(dtypes.float32) if x.dtype.itemsize < 4 else x
    ten_pow = 10.0 ** builtins.abs(decimals)
    if decimals > 0:
        out = binary(Op.DIV, unary(Op.ROUND, binary(Op.MUL, work, ten_pow)), ten_pow)
    else:
        out = binary(Op.MUL, unary(Op.ROUND, binary(Op.DIV, work, ten_pow)), ten_pow)
    return out.cast(x.dtype)


trunc = _unary_function(Op.TRUNC, "round toward zero")
sign = _unary_function(Op.SIGN, "-1, 0 or 1 (NaN stays NaN)")
square = _unary_function(Op.SQUARE, "x * x")
relu = _unary_function(Op.RELU, "max(x, 0)")
isnan = _unary_function(Op.ISNAN, "True where x is NaN")
isinf = _unary_function(Op.ISINF, "True where x is +-inf")


# ------------------------------------------------------------------ more elementwise (API.md "More elementwise")

def with_gradient(name: str, inputs: Sequence[Any], forward: Callable[..., Any], backward: Callable[..., Any]):
    """``forward(*inputs)`` as one differentiable node whose rule is ``backward(g, *inputs)`` (one gradient per
    input, None for numbers): for compositions whose own chain rule would be inexact, or NaN through a ``where``
    branch that overflows. ``inputs`` are tensors of the result's float dtype or Python numbers."""
    if not needs_grad(*inputs):
        return forward(*inputs)
    with no_grad():
        out = forward(*inputs)
    from zyx.frontend import autograd
    from zyx.frontend.gradients import unbroadcast

    Tensor = _tensor_cls()
    tensors = [x if isinstance(x, Tensor) else None for x in inputs]

    def fn(g: Any, *saved: Any) -> tuple:
        it = iter(saved)
        args = [next(it) if t is not None else x for t, x in zip(tensors, inputs)]
        grads = backward(g, *args)
        return tuple(None if t is None or d is None else unbroadcast(d, t.shape) for d, t in zip(grads, tensors))

    autograd.record(name, out, tensors, fn, [t for t in tensors if t is not None])
    return out


def _work(x: Any) -> tuple[Any, DType]:
    """A float function's working tensor (16-bit floats and integers in float32, as PyTorch) and result dtype."""
    d = x.dtype
    if d.is_float:
        return (x, d) if d.itemsize >= 4 else (x.cast(dtypes.float32), d)
    return x.cast(dtypes.float32), dtypes.float32


def _float_fn(name: str, x: Any, forward: Callable[[Any], Any], backward: Callable[[Any, Any], Any]):
    if not isinstance(x, _tensor_cls()):
        raise DTypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    w, out = _work(x)
    y = with_gradient(name, (w,), forward, lambda g, a: (backward(g, a),))
    return y if out is w.dtype else y.cast(out)


def _float_pair(a: Any, b: Any) -> tuple[Any, Any, DType]:
    """Two operands promoted together, integers to float32, 16-bit floats computed in float32."""
    Tensor = _tensor_cls()
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise DTypeError(f"expected a Tensor operand, got {type(a).__name__} and {type(b).__name__}")
    dt = dtypes.result_type(a, b)
    out = dt if dt.is_float else dtypes.float32
    work = out if out.itemsize >= 4 else dtypes.float32
    a, b = (x.cast(work) if isinstance(x, Tensor) else x for x in (a, b))
    return a, b, out


def _big(x: Any) -> float:
    """Past this magnitude exp(x) overflows in ``x``'s dtype."""
    return 88.0 if x.dtype.itemsize <= 4 else 709.0


def _as_sign_of(r: Any, x: Any):
    return binary(Op.COPYSIGN, r, x)


def atan2(a: Any, b: Any):
    """The angle of the point ``(b, a)``, in ``[-pi, pi]`` (quadrant from both signs)."""
    a, b, out = _float_pair(a, b)
    y = binary(Op.ATAN2, a, b)
    return y if y.dtype is out else y.cast(out)


def copysign(a: Any, b: Any):
    """``|a|`` with the sign of ``b`` (its sign bit: -0.0 and -nan count as negative)."""
    a, b, out = _float_pair(a, b)
    y = binary(Op.COPYSIGN, a, b)
    return y if y.dtype is out else y.cast(out)


def asin(x: Any):
    """Arcsine (NaN outside [-1, 1])."""
    return _float_fn("asin", x, lambda a: binary(Op.ATAN2, a, unary(Op.SQRT, (1.0 - a) * (1.0 + a))),
                     lambda g, a: g * unary(Op.RSQRT, -a * a + 1.0))


def acos(x: Any):
    """Arccosine (NaN outside [-1, 1])."""
    return _float_fn("acos", x, lambda a: binary(Op.ATAN2, unary(Op.SQRT, (1.0 - a) * (1.0 + a)), a),
                     lambda g, a: -(g * unary(Op.RSQRT, -a * a + 1.0)))


def atan(x: Any):
    """Arctangent."""
    return _float_fn("atan", x, lambda a: binary(Op.ATAN2, a, 1.0), lambda g, a: g / (a * a + 1.0))


def _expm1(a: Any):
    # Kahan: (u - 1) * (a / log u) cancels the rounding of u = exp(a), so it stays accurate near 0
    u = unary(Op.EXP, a)
    um1 = u - 1.0
    r = um1 * (a / unary(Op.LOG, u))
    r = where(binary(Op.EQ, um1, -1.0), -1.0, r)
    return where(binary(Op.EQ, u, 1.0), a, where(binary(Op.EQ, u, math.inf), u, r))


def _log1p(a: Any):
    # Goldberg: log(u) * (a / (u - 1)) with u = 1 + a corrects the rounding of u
    u = a + 1.0
    r = unary(Op.LOG, u) * (a / (u - 1.0))
    return where(binary(Op.EQ, u, 1.0), a, where(binary(Op.EQ, u, math.inf), u, r))


def expm1(x: Any):
    """``exp(x) - 1``, accurate near 0."""
    return _float_fn("expm1", x, _expm1, lambda g, a: g * unary(Op.EXP, a))


def log1p(x: Any):
    """``log(1 + x)``, accurate near 0."""
    return _float_fn("log1p", x, _log1p, lambda g, a: g / (a + 1.0))


def log10(x: Any):
    """Base-10 logarithm."""
    return _float_fn("log10", x, lambda a: unary(Op.LOG, a) * (1.0 / math.log(10.0)),
                     lambda g, a: g / (a * math.log(10.0)))


def _sinh(a: Any):
    m = unary(Op.ABS, a)
    e = _expm1(m)
    small = (e + e / (e + 1.0)) * 0.5
    h = unary(Op.EXP, m * 0.5)  # past exp's overflow, sinh = cosh = e^|x| / 2 = (h / 2) * h
    return _as_sign_of(where(binary(Op.GT, m, _big(a)), (h * 0.5) * h, small), a)


def _cosh(a: Any):
    m = unary(Op.ABS, a)
    e = unary(Op.EXP, m)
    h = unary(Op.EXP, m * 0.5)
    return where(binary(Op.GT, m, _big(a)), (h * 0.5) * h, (e + unary(Op.RECIPROCAL, e)) * 0.5)


def sinh(x: Any):
    """Hyperbolic sine."""
    return _float_fn("sinh", x, _sinh, lambda g, a: g * _cosh(a))


def cosh(x: Any):
    """Hyperbolic cosine."""
    return _float_fn("cosh", x, _cosh, lambda g, a: g * _sinh(a))


_HUGE = 2.0 ** 28  # past it, sqrt(x^2 + 1) == |x| to the dtype's precision
_LN2 = math.log(2.0)


def _asinh(a: Any):
    m = unary(Op.ABS, a)
    m2 = m * m
    small = _log1p(m + m2 / (unary(Op.SQRT, m2 + 1.0) + 1.0))
    mid = unary(Op.LOG, m * 2.0 + unary(Op.RECIPROCAL, unary(Op.SQRT, m2 + 1.0) + m))
    big = unary(Op.LOG, m) + _LN2
    r = where(binary(Op.GT, m, _HUGE), big, where(binary(Op.GT, m, 2.0), mid, small))
    return _as_sign_of(r, a)


def _acosh(a: Any):
    t = a - 1.0
    small = _log1p(t + unary(Op.SQRT, t * 2.0 + t * t))
    mid = unary(Op.LOG, a * 2.0 - unary(Op.RECIPROCAL, a + unary(Op.SQRT, a * a - 1.0)))
    big = unary(Op.LOG, a) + _LN2
    r = where(binary(Op.GT, a, _HUGE), big, where(binary(Op.GT, a, 2.0), mid, small))
    return where(binary(Op.LT, a, 1.0), math.nan, r)


def _atanh(a: Any):
    m = unary(Op.ABS, a)
    small = _log1p(m * 2.0 + (m * 2.0) * m / (1.0 - m)) * 0.5
    large = _log1p((m * 2.0) / (1.0 - m)) * 0.5
    return _as_sign_of(where(binary(Op.LT, m, 0.5), small, large), a)


def asinh(x: Any):
    """Inverse hyperbolic sine."""
    return _float_fn("asinh", x, _asinh, lambda g, a: g * unary(Op.RSQRT, a * a + 1.0))


def acosh(x: Any):
    """Inverse hyperbolic cosine (NaN below 1)."""
    return _float_fn("acosh", x, _acosh, lambda g, a: g * unary(Op.RSQRT, a * a - 1.0))


def atanh(x: Any):
    """Inverse hyperbolic tangent (+-inf at +-1, NaN outside [-1, 1])."""
    return _float_fn("atanh", x, _atanh, lambda g, a: g / (1.0 - a * a))


def _hypot(a: Any, b: Any):
    x, y = unary(Op.ABS, a), unary(Op.ABS, b) if isinstance(b, _tensor_cls()) else builtins.abs(b)
    m, n = binary(Op.MAXIMUM, x, y), binary(Op.MINIMUM, x, y)
    r = n / m  # scaled by the larger magnitude: no overflow or underflow of the squares
    h = where(binary(Op.EQ, m, 0.0), 0.0, m * unary(Op.SQRT, r * r + 1.0))
    if isinstance(y, _tensor_cls()):
        inf = binary(Op.OR, unary(Op.ISINF, x), unary(Op.ISINF, y))
    else:  # an infinite number: every element (NaN included) is inf
        inf = binary(Op.OR, unary(Op.ISNAN, x), binary(Op.GE, x, 0.0)) if math.isinf(y) else unary(Op.ISINF, x)
    return where(inf, math.inf, h)  # hypot(inf, nan) is inf, as C's


def hypot(a: Any, b: Any):
    """``sqrt(a**2 + b**2)`` without overflow or underflow of the squares."""
    if isinstance(a, _tensor_cls()) is False:
        a, b = b, a  # symmetric: the tensor first
    a, b, out = _float_pair(a, b)
    y = with_gradient("hypot", (a, b), _hypot,
                      lambda g, a, b: (g * a / _hypot(a, b), g * b / _hypot(a, b) if isinstance(b, _tensor_cls())
                                       else None))
    return y if y.dtype is out else y.cast(out)


def remainder(a: Any, b: Any):
    """Python's ``a % b`` (the sign of the divisor), as PyTorch's ``remainder``."""
    return binary(Op.MOD, a, b)


def fmod(a: Any, b: Any):
    """C's ``fmod``: the remainder of truncating division (the sign of the dividend)."""
    Tensor = _tensor_cls()
    dt = dtypes.result_type(a, b)
    if not dt.is_float:
        if dt.is_bool:
            dt = dtypes.int64
        a, b = (x.cast(dt) if isinstance(x, Tensor) else x for x in (a, b))
        _check_int_scalar(Op.MOD, b)
        if not dt.is_signed:
            return binary(Op.MOD, a, b)
        r = binary(Op.MOD, unary(Op.ABS, a) if isinstance(a, Tensor) else builtins.abs(a),
                   unary(Op.ABS, b) if isinstance(b, Tensor) else builtins.abs(b))
        return where(binary(Op.LT, a, 0), -r, r) if isinstance(r, Tensor) else r
    work = dt if dt.itemsize >= 4 else dtypes.float32
    a, b = (x.cast(work) if isinstance(x, Tensor) else x for x in (a, b))

    def forward(a: Any, b: Any) -> Any:
        # for non-negative operands Python's remainder is C's fmod: no sign fix-up (so exact)
        r = binary(Op.MOD, unary(Op.ABS, a) if isinstance(a, Tensor) else builtins.abs(a),
                   unary(Op.ABS, b) if isinstance(b, Tensor) else builtins.abs(b))
        return binary(Op.COPYSIGN, r, a)

    y = with_gradient("fmod", (a, b), forward,
                      lambda g, a, b: (g, -(g * unary(Op.TRUNC, a / b)) if isinstance(b, Tensor) else None))
    return y if y.dtype is dt else y.cast(dt)


def lerp(start: Any, end: Any, weight: Any):
    """``start + weight * (end - start)``, computed from the nearer end as PyTorch does."""
    diff = end - start
    if not isinstance(weight, _tensor_cls()):
        return start + weight * diff if builtins.abs(weight) < 0.5 else end - diff * (1.0 - weight)
    near = binary(Op.LT, unary(Op.ABS, weight), 0.5)
    return where(near, start + weight * diff, end - diff * (1.0 - weight))


def isfinite(x: Any):
    """True where ``x`` is neither inf nor NaN."""
    if not x.dtype.is_float:
        return binary(Op.EQ, x, x)
    return unary(Op.NOT, binary(Op.OR, unary(Op.ISNAN, x), unary(Op.ISINF, x)))


def nan_to_num(x: Any, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
    """NaN, +inf and -inf replaced by ``nan``, ``posinf`` and ``neginf`` (default: the dtype's extremes)."""
    if not x.dtype.is_float:
        return x.clone()
    import ml_dtypes

    info = ml_dtypes.finfo(x.dtype.np_dtype)
    posinf = float(info.max) if posinf is None else posinf
    neginf = float(info.min) if neginf is None else neginf
    y = where(unary(Op.ISNAN, x), nan, x)
    return where(binary(Op.EQ, x, math.inf), posinf, where(binary(Op.EQ, x, -math.inf), neginf, y)).cast(x.dtype)


def isclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """``|a - b| <= atol + |rtol * b|`` (finite), or equal (infinities by sign; NaN only with ``equal_nan``)."""
    Tensor = _tensor_cls()
    close = binary(Op.EQ, a, b)
    dt = dtypes.result_type(a, b)
    if equal_nan and dt.is_float:
        nan_a = unary(Op.ISNAN, a) if isinstance(a, Tensor) else math.isnan(a)
        nan_b = unary(Op.ISNAN, b) if isinstance(b, Tensor) else math.isnan(b)
        both = binary(Op.AND, nan_a, nan_b) if isinstance(nan_a, Tensor) and isinstance(nan_b, Tensor) else \
            (nan_a if nan_b is True else nan_b if nan_a is True else False)
        if both is not False:
            close = binary(Op.OR, close, both)
    if rtol == 0 and atol == 0:
        return close
    if not dt.is_float:
        a, b = (x.cast(dtypes.float32) if isinstance(x, Tensor) else float(x) for x in (a, b))
    allowed = unary(Op.ABS, b * rtol) + atol if isinstance(b, Tensor) else builtins.abs(b * rtol) + atol
    err = unary(Op.ABS, a - b)
    return binary(Op.OR, close, binary(Op.AND, isfinite(err), binary(Op.LE, err, allowed)))


def allclose(a: Any, b: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether ``isclose`` holds everywhere (a Python bool: reads the result)."""
    c = isclose(a, b, rtol, atol, equal_nan)
    return c.numel() == 0 or bool(c.all().item())


def _truth(x: Any):
    if isinstance(x, _tensor_cls()):
        return x if x.dtype.is_bool else binary(Op.NE, x, 0)
    return bool(x)


def logical_and(a: Any, b: Any):
    """``a and b`` elementwise (nonzero is true), a bool tensor."""
    return binary(Op.AND, _truth(a), _truth(b))


def logical_or(a: Any, b: Any):
    """``a or b`` elementwise (nonzero is true), a bool tensor."""
    return binary(Op.OR, _truth(a), _truth(b))


def logical_xor(a: Any, b: Any):
    """Exactly one of ``a``, ``b`` nonzero, a bool tensor."""
    return binary(Op.XOR, _truth(a), _truth(b))


MORE_FUNCTIONS = ("asin", "acos", "atan", "atan2", "sinh", "cosh", "asinh", "acosh", "atanh", "expm1", "log1p",
                  "log10", "lerp", "hypot", "fmod", "remainder", "copysign", "isfinite", "nan_to_num", "isclose",
                  "allclose", "logical_and", "logical_or", "logical_xor")


# ------------------------------------------------------------------ the mixin

class ElementwiseMixin(TensorBase):
    """Operators and elementwise methods; results come from ``binary``/``unary`` (the concrete class)."""

    __slots__ = ()

    def _binop(op: str, reverse: bool = False):  # class-body helper, deleted below
        if reverse:
            def f(self, other):
                if (type(other) is not TracedScalar and not isinstance(other, _OPERAND)
                        and not isinstance(other, TensorBase) and type(other) not in BOUND):
                    return NotImplemented
                return binary(op, other, self)
        else:
            def f(self, other):
                if (type(other) is not TracedScalar and not isinstance(other, _OPERAND)
                        and not isinstance(other, TensorBase) and type(other) not in BOUND):
                    return NotImplemented
                return binary(op, self, other)
        f.__name__ = op
        return f

    __add__, __radd__ = _binop(Op.ADD), _binop(Op.ADD, True)
    __sub__, __rsub__ = _binop(Op.SUB), _binop(Op.SUB, True)
    __mul__, __rmul__ = _binop(Op.MUL), _binop(Op.MUL, True)
    __floordiv__, __rfloordiv__ = _binop(Op.FLOORDIV), _binop(Op.FLOORDIV, True)
    __mod__, __rmod__ = _binop(Op.MOD), _binop(Op.MOD, True)
    __pow__, __rpow__ = _binop(Op.POW), _binop(Op.POW, True)
    __and__, __rand__ = _binop(Op.AND), _binop(Op.AND, True)
    __or__, __ror__ = _binop(Op.OR), _binop(Op.OR, True)
    __xor__, __rxor__ = _binop(Op.XOR), _binop(Op.XOR, True)
    __lshift__, __rlshift__ = _binop(Op.SHL), _binop(Op.SHL, True)
    __rshift__, __rrshift__ = _binop(Op.SHR), _binop(Op.SHR, True)
    __truediv__, __rtruediv__ = _binop(Op.DIV), _binop(Op.DIV, True)
    __eq__, __ne__ = _binop(Op.EQ), _binop(Op.NE)  # type: ignore[assignment]
    __lt__, __le__, __gt__, __ge__ = _binop(Op.LT), _binop(Op.LE), _binop(Op.GT), _binop(Op.GE)
    __hash__ = object.__hash__  # identity hashing although == is elementwise
    add, sub, mul = _binop(Op.ADD), _binop(Op.SUB), _binop(Op.MUL)  # div: CompositesMixin (rounding_mode)
    eq, ne = _binop(Op.EQ), _binop(Op.NE)
    del _binop

    def __neg__(self):
        return unary(Op.NEG, self)

    def __abs__(self):
        return unary(Op.ABS, self)

    def __invert__(self):
        return unary(Op.INVERT, self)

    def __pos__(self):
        return self

    def exp(self):
        return unary(Op.EXP, self)

    def exp2(self):
        return unary(Op.EXP2, self)

    def log(self):
        return unary(Op.LOG, self)

    def log2(self):
        return unary(Op.LOG2, self)

    def sqrt(self):
        return unary(Op.SQRT, self)

    def rsqrt(self):
        return unary(Op.RSQRT, self)

    def sin(self):
        return unary(Op.SIN, self)

    def cos(self):
        return unary(Op.COS, self)

    def tan(self):
        return unary(Op.TAN, self)

    def tanh(self):
        return unary(Op.TANH, self)

    def sigmoid(self):
        return unary(Op.SIGMOID, self)

    def silu(self):
        return unary(Op.SILU, self)

    def erf(self):
        return unary(Op.ERF, self)

    def reciprocal(self):
        return unary(Op.RECIPROCAL, self)

    def neg(self):
        return unary(Op.NEG, self)

    def abs(self):
        return unary(Op.ABS, self)

    def floor(self):
        return unary(Op.FLOOR, self)

    def ceil(self):
        return unary(Op.CEIL, self)

    def round(self, decimals: int = 0):
        return round(self, decimals)

    def trunc(self):
        return unary(Op.TRUNC, self)

    def sign(self):
        return unary(Op.SIGN, self)

    def square(self):
        return unary(Op.SQUARE, self)

    def relu(self):
        return unary(Op.RELU, self)

    def isnan(self):
        return unary(Op.ISNAN, self)

    def isinf(self):
        return unary(Op.ISINF, self)

    def gelu(self, approximate: str = "none"):
        return gelu(self, approximate)

    def clip(self, min: Any = None, max: Any = None):  # noqa: A002 - PyTorch's names
        return clip(self, min, max)

    clamp = clip

    def logical_not(self):
        return unary(Op.NOT, self)

    def maximum(self, other: Any):
        return binary(Op.MAXIMUM, self, other)

    def minimum(self, other: Any):
        return binary(Op.MINIMUM, self, other)

    def pow(self, other: Any):
        return binary(Op.POW, self, other)

    def where(self, cond: Any, other: Any):
        return where(cond, self, other)


    def asin(self):
        return asin(self)

    def acos(self):
        return acos(self)

    def atan(self):
        return atan(self)

    def atan2(self, other: Any):
        return atan2(self, other)

    def sinh(self):
        return sinh(self)

    def cosh(self):
        return cosh(self)

    def asinh(self):
        return asinh(self)

    def acosh(self):
        return acosh(self)

    def atanh(self):
        return atanh(self)

    def expm1(self):
        return expm1(self)

    def log1p(self):
        return log1p(self)

    def log10(self):
        return log10(self)

    def lerp(self, end: Any, weight: Any):
        return lerp(self, end, weight)

    def hypot(self, other: Any):
        return hypot(self, other)

    def fmod(self, other: Any):
        return fmod(self, other)

    def remainder(self, other: Any):
        return remainder(self, other)

    def copysign(self, other: Any):
        return copysign(self, other)

    def isfinite(self):
        return isfinite(self)

    def nan_to_num(self, nan: float = 0.0, posinf: float | None = None, neginf: float | None = None):
        return nan_to_num(self, nan, posinf, neginf)

    def isclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
        return isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other: Any, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
        return allclose(self, other, rtol, atol, equal_nan)

    def logical_and(self, other: Any):
        return logical_and(self, other)

    def logical_or(self, other: Any):
        return logical_or(self, other)

    def logical_xor(self, other: Any):
        return logical_xor(self, other)


clamp = clip

__all__ = ["binary", "unary", "where", "maximum", "minimum", "pow", "clip", "clamp", "gelu", "logical_not",
           "broadcast_shapes", "ElementwiseMixin", "with_gradient", *UNARY_FUNCTIONS, *MORE_FUNCTIONS]
