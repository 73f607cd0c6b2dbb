"""Elementwise math composed from the primitive ops (API.md "More elementwise"): inverse trigonometric and
hyperbolic functions, ``expm1``/``log1p``, ``hypot``, ``fmod``/``remainder``, ``lerp``, ``isclose``, the
logical ops, and ``ElementwiseMathMixin``, their tensor methods. Compositions whose own chain rule would be
inexact (or NaN through an overflowing ``where`` branch) carry a rule of their own (``with_gradient``)."""
from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any

from zyx import dtype as dtypes
from zyx.dtype import DType
from zyx.errors import DTypeError
from zyx.frontend.autograd.rules import with_gradient
from zyx.frontend.base import TensorBase, tensor_class
from zyx.frontend.elementwise import binary, check_int_scalar, unary, where
from zyx.op import Op


def _work(x: Any) -> tuple[Any, DType]:
    """A float function's working tensor (16-bit floats and integers in float32, as PyTorch) and result dtype."""
    d = x.dtype
    if d.is_float:
        return (x, d) if d.itemsize >= 4 else (x.cast(dtypes.float32), d)
    return x.cast(dtypes.float32), dtypes.float32


def _float_fn(name: str, x: Any, forward: Callable[[Any], Any], backward: Callable[[Any, Any], Any]):
    if not isinstance(x, tensor_class()):
        raise DTypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    w, out = _work(x)
    y = with_gradient(name, (w,), forward, lambda g, a: (backward(g, a),))
    return y if out is w.dtype else y.cast(out)


def _float_pair(a: Any, b: Any) -> tuple[Any, Any, DType]:
    """Two operands promoted together, integers to float32, 16-bit floats computed in float32."""
    Tensor = tensor_class()
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
    x, y = unary(Op.ABS, a), unary(Op.ABS, b) if isinstance(b, tensor_class()) else builtins.abs(b)
    m, n = binary(Op.MAXIMUM, x, y), binary(Op.MINIMUM, x, y)
    r = n / m  # scaled by the larger magnitude: no overflow or underflow of the squares
    h = where(binary(Op.EQ, m, 0.0), 0.0, m * unary(Op.SQRT, r * r + 1.0))
    if isinstance(y, tensor_class()):
        inf = binary(Op.OR, unary(Op.ISINF, x), unary(Op.ISINF, y))
    else:  # an infinite number: every element (NaN included) is inf
        inf = binary(Op.OR, unary(Op.ISNAN, x), binary(Op.GE, x, 0.0)) if math.isinf(y) else unary(Op.ISINF, x)
    return where(inf, math.inf, h)  # hypot(inf, nan) is inf, as C's


def hypot(a: Any, b: Any):
    """``sqrt(a**2 + b**2)`` without overflow or underflow of the squares."""
    if isinstance(a, tensor_class()) is False:
        a, b = b, a  # symmetric: the tensor first
    a, b, out = _float_pair(a, b)
    y = with_gradient("hypot", (a, b), _hypot,
                      lambda g, a, b: (g * a / _hypot(a, b), g * b / _hypot(a, b) if isinstance(b, tensor_class())
                                       else None))
    return y if y.dtype is out else y.cast(out)


def remainder(a: Any, b: Any):
    """Python's ``a % b`` (the sign of the divisor), as PyTorch's ``remainder``."""
    return binary(Op.MOD, a, b)


def fmod(a: Any, b: Any):
    """C's ``fmod``: the remainder of truncating division (the sign of the dividend)."""
    Tensor = tensor_class()
    dt = dtypes.result_type(a, b)
    if not dt.is_float:
        if dt.is_bool:
            dt = dtypes.int64
        a, b = (x.cast(dt) if isinstance(x, Tensor) else x for x in (a, b))
        check_int_scalar(Op.MOD, b)
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
    if not isinstance(weight, tensor_class()):
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
    Tensor = tensor_class()
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
    if isinstance(x, tensor_class()):
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


class ElementwiseMathMixin(TensorBase):
    """The composed elementwise functions as methods (``self`` first)."""

    __slots__ = ()

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


__all__ = ["ElementwiseMathMixin", *MORE_FUNCTIONS]
