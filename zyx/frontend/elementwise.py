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
from zyx.frontend.autograd.engine import is_grad_enabled, needs_grad, no_grad
from zyx.frontend.autograd.rules import record_alu, record_clip, record_where
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
# Ops the per-call paths below test, looked up once: a module global is cheaper than an enum attribute
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
        check_int_scalar(op, b)
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


def check_int_scalar(op: str, b: Any) -> None:
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
        return next(x for x in (cond, a, b) if type(x) in VARSIZE)._variable_where(cond, a, b)
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

    @staticmethod
    def _alu(op: Op, *operands: Any):
        """``op`` on ``operands`` (tensors or numbers; for ``Op.WHERE`` the condition first): the elementwise
        primitive the gradient rules are written against, so that they import no op module."""
        if op is Op.WHERE:
            return where(*operands)
        return unary(op, *operands) if len(operands) == 1 else binary(op, *operands)

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


clamp = clip

__all__ = ["binary", "unary", "where", "maximum", "minimum", "pow", "clip", "clamp", "gelu", "logical_not",
           "broadcast_shapes", "ElementwiseMixin", *UNARY_FUNCTIONS]
