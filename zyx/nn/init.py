"""``zyx.nn.init``: in-place initializers with PyTorch's fan computations and gains.

Each initializer draws from ``zyx.rand``/``zyx.randn`` (so ``zyx.manual_seed`` makes it
reproducible), writes the values into the tensor with ``t[...] = values`` under ``no_grad``
(the tensor keeps its identity, storage and ``requires_grad``) and returns the tensor.
Values are drawn in float32 (float64 for a float64 tensor) and rounded once to the tensor's dtype.
"""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.creation import rand, randn
from zyx.frontend.elementwise import where

__all__ = [
    "calculate_gain", "constant_", "kaiming_normal_", "kaiming_uniform_", "normal_", "ones_", "trunc_normal_",
    "uniform_", "xavier_normal_", "xavier_uniform_", "zeros_",
]


def _draw_dtype(t: Any) -> Any:
    if not t.dtype.is_float:
        raise DTypeError(f"nn.init: expected a floating tensor, got {t.dtype.name}")
    return dtypes.float64 if t.dtype is dtypes.float64 else dtypes.float32


def _write(t: Any, values: Any) -> Any:
    with no_grad():
        t[...] = values
    return t


def calculate_gain(nonlinearity: str, param: float | None = None) -> float:
    """PyTorch's recommended gain for a nonlinearity (``leaky_relu``'s ``param`` is its slope)."""
    if nonlinearity in ("linear", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d", "sigmoid"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(t: Any) -> tuple[int, int]:
    if t.ndim < 2:
        raise ShapeError(f"Fan in and fan out can not be computed for tensor with fewer than 2 dimensions "
                         f"(got shape {tuple(t.shape)})")
    receptive = math.prod(t.shape[2:])
    return t.shape[1] * receptive, t.shape[0] * receptive


def _fan(t: Any, mode: str) -> int:
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return fan_in if mode == "fan_in" else fan_out


def uniform_(t: Any, a: float = 0.0, b: float = 1.0) -> Any:
    """Fill ``t`` with values drawn from U(a, b)."""
    u = rand(*t.shape, dtype=_draw_dtype(t), device=t.device)
    return _write(t, u * (b - a) + a)


def normal_(t: Any, mean: float = 0.0, std: float = 1.0) -> Any:
    """Fill ``t`` with values drawn from N(mean, std**2)."""
    n = randn(*t.shape, dtype=_draw_dtype(t), device=t.device)
    return _write(t, n * std + mean)


def _erfinv(x: Any) -> Any:
    """Inverse error function on (-1, 1): M. Giles' single-precision polynomial approximation
    ("Approximating the erfinv function", GPU Computing Gems, 2011); relative error about 1e-7."""
    w = -((1.0 - x) * (1.0 + x)).log()
    small = w < 5.0
    ws = w - 2.5
    p = 2.81022636e-08
    for c in (3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
              -0.00417768164, 0.246640727, 1.50140941):
        p = p * ws + c
    wl = w.clip(min=5.0).sqrt() - 3.0
    q = -0.000200214257
    for c in (0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
              0.00943887047, 1.00167406, 2.83297682):
        q = q * wl + c
    return where(small, p, q) * x


def trunc_normal_(t: Any, mean: float = 0.0, std: float = 1.0, a: float = -2.0, b: float = 2.0) -> Any:
    """Fill ``t`` with N(mean, std**2) values truncated to ``[a, b]`` (inverse-CDF sampling, as PyTorch)."""
    def cdf(x: float) -> float:
        return (1.0 + math.erf(x / math.sqrt(2.0))) / 2.0

    lo, hi = cdf((a - mean) / std), cdf((b - mean) / std)
    u = rand(*t.shape, dtype=_draw_dtype(t), device=t.device) * (2 * hi - 2 * lo) + (2 * lo - 1)
    u = u.clip(-1.0 + 1e-7, 1.0 - 1e-7)  # erfinv(+-1) is infinite
    values = _erfinv(u) * (std * math.sqrt(2.0)) + mean
    return _write(t, values.clip(a, b))


def constant_(t: Any, val: float) -> Any:
    """Fill ``t`` with ``val``."""
    return _write(t, val)


def ones_(t: Any) -> Any:
    return _write(t, 1)


def zeros_(t: Any) -> Any:
    return _write(t, 0)


def xavier_uniform_(t: Any, gain: float = 1.0) -> Any:
    """U(-a, a) with ``a = gain * sqrt(6 / (fan_in + fan_out))`` (Glorot and Bengio, 2010)."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    bound = gain * math.sqrt(6.0 / float(fan_in + fan_out))
    return uniform_(t, -bound, bound)


def xavier_normal_(t: Any, gain: float = 1.0) -> Any:
    """N(0, std**2) with ``std = gain * sqrt(2 / (fan_in + fan_out))``."""
    fan_in, fan_out = _calculate_fan_in_and_fan_out(t)
    return normal_(t, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)))


def kaiming_uniform_(t: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Any:
    """U(-bound, bound) with ``bound = gain * sqrt(3 / fan)`` (He et al., 2015)."""
    if 0 in t.shape:
        return t
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / _fan(t, mode))
    return uniform_(t, -bound, bound)


def kaiming_normal_(t: Any, a: float = 0.0, mode: str = "fan_in", nonlinearity: str = "leaky_relu") -> Any:
    """N(0, std**2) with ``std = gain / sqrt(fan)``."""
    if 0 in t.shape:
        return t
    return normal_(t, 0.0, calculate_gain(nonlinearity, a) / math.sqrt(_fan(t, mode)))
