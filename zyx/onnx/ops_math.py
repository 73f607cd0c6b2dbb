"""Elementwise ONNX operators: arithmetic, comparisons, logic, bit operations, unary math,
activations, Clip/Where, the variadic Max/Min/Sum/Mean, Cast/CastLike, Identity and Dropout."""
from __future__ import annotations

from functools import reduce
from typing import Any

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.elementwise_math as em
import zyx.nn.functional_activations as act
from zyx import dtype as dtypes
from zyx.frontend.composites import div
from zyx.frontend.creation import full, zeros_like
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import REQUIRED, Node, onnx_dtype, onnx_op

# Elementwise operators keep their meaning across versions (newer ones add types); an old version's own
# attributes (broadcast, consumed_inputs) are not declared, so a node that sets them is refused.
_ANY = (1, 10**6)


def _scalar(x: Tensor, value: float) -> Tensor:
    """A 0-d tensor of ``x``'s dtype: keeps integer tensors integer where a Python float would promote."""
    return full((), value, dtype=x.dtype, device=x.device)


# -- arithmetic -----------------------------------------------------------------------------------

@onnx_op("Add", versions=_ANY)
def _add(node: Node, a: Tensor, b: Tensor) -> Tensor:
    return a + b


@onnx_op("Sub", versions=_ANY)
def _sub(node: Node, a: Tensor, b: Tensor) -> Tensor:
    return a - b


@onnx_op("Mul", versions=_ANY)
def _mul(node: Node, a: Tensor, b: Tensor) -> Tensor:
    return a * b


@onnx_op("Div", versions=_ANY)
def _div(node: Node, a: Tensor, b: Tensor) -> Tensor:
    if a.dtype.is_float:
        return a / b
    return div(a, b, rounding_mode="trunc")  # C integer division, as onnxruntime


@onnx_op("Pow", versions=_ANY)
def _pow(node: Node, x: Tensor, y: Tensor) -> Tensor:
    if x.dtype == y.dtype:
        return ew.pow(x, y)
    if not x.dtype.is_float:  # an integer base with a float exponent: computed in double, cast back
        return ew.pow(x.cast(dtypes.float64), y.cast(dtypes.float64)).cast(x.dtype)
    return ew.pow(x, y.cast(x.dtype))


@onnx_op("Mod", attrs={"fmod": 0})
def _mod(node: Node, a: Tensor, b: Tensor) -> Tensor:
    return em.fmod(a, b) if node["fmod"] else a % b  # fmod=0: the result takes the divisor's sign


def _extremum(fn: Any) -> Any:
    def run(node: Node, *xs: Tensor) -> Tensor:
        return reduce(fn, xs)
    return run


onnx_op("Max", versions=_ANY)(_extremum(ew.maximum))
onnx_op("Min", versions=_ANY)(_extremum(ew.minimum))
onnx_op("Sum", versions=_ANY)(_extremum(lambda a, b: a + b))


@onnx_op("Mean", versions=_ANY)
def _mean(node: Node, *xs: Tensor) -> Tensor:
    return reduce(lambda a, b: a + b, xs) / len(xs)


# -- comparison, logic and bits -------------------------------------------------------------------

_BINARY = {
    "Equal": lambda a, b: a == b, "Greater": lambda a, b: a > b, "Less": lambda a, b: a < b,
    "GreaterOrEqual": lambda a, b: a >= b, "LessOrEqual": lambda a, b: a <= b,
    "And": lambda a, b: a & b, "Or": lambda a, b: a | b, "Xor": lambda a, b: a ^ b,
    "BitwiseAnd": lambda a, b: a & b, "BitwiseOr": lambda a, b: a | b, "BitwiseXor": lambda a, b: a ^ b,
}


def _binary(fn: Any) -> Any:
    return lambda node, a, b: fn(a, b)


for _name, _fn in _BINARY.items():
    onnx_op(_name, versions=_ANY)(_binary(_fn))


@onnx_op("Not", "BitwiseNot", versions=_ANY)
def _not(node: Node, x: Tensor) -> Tensor:
    return ~x


@onnx_op("BitShift", attrs={"direction": REQUIRED}, choices={"direction": ("LEFT", "RIGHT")})
def _bitshift(node: Node, x: Tensor, y: Tensor) -> Tensor:
    return x << y if node["direction"] == "LEFT" else x >> y


# -- unary math -----------------------------------------------------------------------------------

_UNARY = {
    "Abs": lambda x: x.abs(), "Neg": lambda x: -x, "Exp": lambda x: x.exp(), "Log": lambda x: x.log(),
    "Sqrt": lambda x: x.sqrt(), "Reciprocal": lambda x: x.reciprocal(), "Floor": lambda x: x.floor(),
    "Ceil": lambda x: x.ceil(), "Round": lambda x: x.round(), "Sign": lambda x: x.sign(), "Sin": lambda x: x.sin(),
    "Cos": lambda x: x.cos(), "Tan": lambda x: x.tan(), "Asin": em.asin, "Acos": em.acos, "Atan": em.atan,
    "Sinh": em.sinh, "Cosh": em.cosh, "Asinh": em.asinh, "Acosh": em.acosh, "Atanh": em.atanh,
    "Erf": lambda x: x.erf(), "IsNaN": lambda x: x.isnan(), "Sigmoid": lambda x: x.sigmoid(),
    "Tanh": lambda x: x.tanh(), "Softsign": act.softsign, "Mish": act.mish,
}


def _unary(fn: Any) -> Any:
    return lambda node, x: fn(x)


for _name, _fn in _UNARY.items():
    onnx_op(_name, versions=_ANY)(_unary(_fn))


@onnx_op("Relu", versions=_ANY)
def _relu(node: Node, x: Tensor) -> Tensor:
    return ew.maximum(x, zeros_like(x))


@onnx_op("IsInf", attrs={"detect_negative": 1, "detect_positive": 1})
def _isinf(node: Node, x: Tensor) -> Tensor:
    pos, neg = x == float("inf"), x == float("-inf")
    if node["detect_negative"] and node["detect_positive"]:
        return pos | neg
    if node["detect_positive"]:
        return pos
    return neg if node["detect_negative"] else zeros_like(x).cast(dtypes.bool_)


# -- activations ------------------------------------------------------------------------------------

@onnx_op("LeakyRelu", attrs={"alpha": 0.01}, versions=_ANY)
def _leaky_relu(node: Node, x: Tensor) -> Tensor:
    return act.leaky_relu(x, node["alpha"])


@onnx_op("Elu", attrs={"alpha": 1.0}, versions=_ANY)
def _elu(node: Node, x: Tensor) -> Tensor:
    return act.elu(x, node["alpha"])


@onnx_op("Celu", attrs={"alpha": 1.0})
def _celu(node: Node, x: Tensor) -> Tensor:
    return act.celu(x, node["alpha"])


@onnx_op("Selu", attrs={"alpha": 1.67326319217681884765625, "gamma": 1.05070102214813232421875})
def _selu(node: Node, x: Tensor) -> Tensor:
    alpha, gamma = node["alpha"], node["gamma"]
    return ew.where(x > 0, x * gamma, (x.exp() - 1.0) * (alpha * gamma))


@onnx_op("HardSigmoid", attrs={"alpha": 0.2, "beta": 0.5})
def _hardsigmoid(node: Node, x: Tensor) -> Tensor:
    return ew.clip(x * node["alpha"] + node["beta"], 0.0, 1.0)


@onnx_op("HardSwish")
def _hardswish(node: Node, x: Tensor) -> Tensor:
    return act.hardswish(x)


@onnx_op("Softplus", versions=_ANY)
def _softplus(node: Node, x: Tensor) -> Tensor:
    return act.softplus(x)


@onnx_op("ThresholdedRelu", attrs={"alpha": 1.0})
def _thresholded_relu(node: Node, x: Tensor) -> Tensor:
    return ew.where(x > node["alpha"], x, zeros_like(x))


@onnx_op("Shrink", attrs={"bias": 0.0, "lambd": 0.5})
def _shrink(node: Node, x: Tensor) -> Tensor:
    lambd, bias = node["lambd"], node["bias"]
    if x.dtype.is_float:
        return ew.where(x < -lambd, x + bias, ew.where(x > lambd, x - bias, zeros_like(x)))
    shifted_up, shifted_down = x + _scalar(x, bias), x - _scalar(x, bias)
    return ew.where(x < -lambd, shifted_up, ew.where(x > lambd, shifted_down, zeros_like(x)))


@onnx_op("Gelu", attrs={"approximate": "none"}, choices={"approximate": ("none", "tanh")})
def _gelu(node: Node, x: Tensor) -> Tensor:
    return ew.gelu(x, node["approximate"])


@onnx_op("Swish", attrs={"alpha": 1.0})
def _swish(node: Node, x: Tensor) -> Tensor:
    return x * (x * node["alpha"]).sigmoid()


@onnx_op("PRelu", versions=_ANY)
def _prelu(node: Node, x: Tensor, slope: Tensor) -> Tensor:
    return ew.where(x < 0, x * slope, x)


# -- selection ------------------------------------------------------------------------------------

@onnx_op("Clip", versions=(11, 10**6))  # version 6 had min/max attributes
def _clip(node: Node, x: Tensor, low: Tensor | None = None, high: Tensor | None = None) -> Tensor:
    if low is not None:
        x = ew.maximum(x, low)
    if high is not None:
        x = ew.minimum(x, high)
    return x


@onnx_op("Where", versions=_ANY)
def _where(node: Node, cond: Tensor, a: Tensor, b: Tensor) -> Tensor:
    return ew.where(cond, a, b)


# -- casts ------------------------------------------------------------------------------------------

_FLOAT8_MAX = {dtypes.float8_e4m3: 448.0, dtypes.float8_e5m2: 57344.0}


def cast(node: Node, x: Tensor, to: dtypes.DType) -> Tensor:
    """ONNX Cast: float8 targets saturate (``saturate=1``, the default) to the largest finite value."""
    if to in _FLOAT8_MAX and node.attrs.get("saturate", 1) and x.dtype.is_float:
        limit = _FLOAT8_MAX[to]  # infinities saturate too; NaN stays NaN
        return ew.clip(x, -limit, limit).cast(to)
    return x.cast(to)


_CAST_ATTRS = {"saturate": 1, "round_mode": "up"}


def _check_cast(node: Node) -> None:
    if "to" in node.attrs:
        onnx_dtype(node, node["to"])


@onnx_op("Cast", attrs={"to": REQUIRED, **_CAST_ATTRS}, choices={"round_mode": ("up",)}, check=_check_cast,
         versions=(6, 10**6))  # version 1 named the type as a string
def _cast(node: Node, x: Tensor) -> Tensor:
    return cast(node, x, onnx_dtype(node, node["to"]))


@onnx_op("CastLike", attrs=_CAST_ATTRS, choices={"round_mode": ("up",)})
def _cast_like(node: Node, x: Tensor, like: Tensor) -> Tensor:
    return cast(node, x, like.dtype)


@onnx_op("Identity", versions=_ANY)
def _identity(node: Node, x: Tensor) -> Tensor:
    return x


@onnx_op("Dropout", attrs={"seed": 0}, versions=(7, 10**6))  # older: a ratio attribute (refused) or none
def _dropout(node: Node, x: Tensor, ratio: Tensor | None = None, training: Tensor | None = None
             ) -> Tensor | tuple[Tensor, np.ndarray]:
    if training is not None and bool(node.host(2, training)):
        rate = 0.5 if ratio is None else float(node.host(1, ratio))
        if rate != 0:
            raise node.unsupported("training_mode=True with a non-zero ratio (random masks)")
    if len(node.output_names) < 2 or not node.output_names[1]:
        return x
    return x, np.ones(x.shape, dtype=np.bool_)


@onnx_op("BitCast", attrs={"to": REQUIRED}, check=_check_cast)
def _bitcast(node: Node, x: Tensor) -> Tensor:
    to = onnx_dtype(node, node["to"])
    if to.itemsize != x.dtype.itemsize:
        raise node.unsupported(f"a bit cast between sizes ({x.dtype.name} to {to.name})")
    if x.dtype == dtypes.bool_:
        return x.cast(to)  # a bool's byte is 0 or 1: its bits are its value
    return x.bitcast(to)
