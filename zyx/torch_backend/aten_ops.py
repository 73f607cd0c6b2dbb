"""Core ATen ops as zyx ops: elementwise math, comparisons, reductions, views, creation and linear algebra.

Each entry takes the node's arguments as the FX graph holds them (zyx tensors where the graph has tensors,
Python numbers, lists, zyx dtypes where it names a ``torch.dtype``) and returns what the ATen op returns
(a tensor, or a tuple for the multi-output ops). Every op is recorded lazily, so a whole graph fuses and
schedules like native zyx code. ``aten_nn`` holds the network ops (convolution, pooling, norms, dropout).
"""
from __future__ import annotations

import math
import operator as _op
import sys
from collections.abc import Callable, Sequence
from typing import Any

from zyx import dtype as dtypes
from zyx.frontend import contract_ops, creation
from zyx.frontend import elementwise as ew
from zyx.frontend import elementwise_math as em
from zyx.frontend.advanced_index import index_put
from zyx.frontend.base import tensor_class
from zyx.nn import functional as F

#: op name (``add``, or ``max.dim`` for one overload) -> its zyx implementation
ATEN: dict[str, Callable[..., Any]] = {}
DEVICE: list[Any] = [None]  # the device new tensors (creation ops) go to: the backend's


def aten(*names: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register ``fn`` as the zyx form of the named ATen ops (a packet name covers all its overloads)."""

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        for name in names:
            ATEN[name] = fn
        return fn

    return register


def is_tensor(v: Any) -> bool:
    return isinstance(v, tensor_class())


def _dims(dim: Any) -> tuple[int, ...] | None:
    """A reduction's dims: None (or an empty list, ATen's 'all') for every dim."""
    if dim is None:
        return None
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    return dims or None


# -- elementwise -------------------------------------------------------------------------------------
def _unary(method: str) -> Callable[..., Any]:
    return lambda x: getattr(x, method)()


for _name, _method in {
    "neg": "neg", "abs": "abs", "exp": "exp", "exp2": "exp2", "expm1": "expm1", "log": "log", "log2": "log2",
    "log10": "log10", "log1p": "log1p", "sqrt": "sqrt", "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tan": "tan",
    "asin": "asin", "acos": "acos", "atan": "atan", "sinh": "sinh", "cosh": "cosh", "tanh": "tanh",
    "asinh": "asinh", "acosh": "acosh", "atanh": "atanh", "erf": "erf", "sigmoid": "sigmoid", "relu": "relu",
    "reciprocal": "reciprocal", "sign": "sign", "floor": "floor", "ceil": "ceil", "round": "round",
    "trunc": "trunc", "isnan": "isnan", "isinf": "isinf", "logical_not": "logical_not",
    "bitwise_not": "bitwise_not", "silu": "silu",
    "sgn": "sign", "isfinite": "isfinite", "square": "square",
}.items():
    ATEN[_name] = _unary(_method)


for _name, _fn in {
    "mul": _op.mul, "eq": _op.eq, "ne": _op.ne, "lt": _op.lt, "le": _op.le, "gt": _op.gt, "ge": _op.ge,
    "maximum": ew.maximum, "minimum": ew.minimum, "fmod": em.fmod, "remainder": em.remainder,
    "atan2": em.atan2, "logical_and": em.logical_and, "logical_or": em.logical_or,
    "logical_xor": em.logical_xor, "bitwise_and": _op.and_, "bitwise_or": _op.or_, "bitwise_xor": _op.xor,
    "pow": ew.pow, "copysign": em.copysign,
    "bitwise_left_shift": _op.lshift, "bitwise_right_shift": _op.rshift, "floor_divide": _op.floordiv,
}.items():
    ATEN[_name] = _fn  # a Python number on either side follows PyTorch's wrapped-number promotion


@aten("add")
def add(a: Any, b: Any, alpha: Any = 1) -> Any:
    return a + (b if alpha == 1 else b * alpha)


@aten("sub")
def sub(a: Any, b: Any, alpha: Any = 1) -> Any:
    return a - (b if alpha == 1 else b * alpha)


ATEN["rsub"] = lambda a, b, alpha=1: b - (a if alpha == 1 else a * alpha)


@aten("div")
def div(a: Any, b: Any, rounding_mode: str | None = None) -> Any:
    if rounding_mode is None:
        return a / b
    if rounding_mode == "floor":
        return a // b
    if rounding_mode == "trunc":
        if a.dtype.is_float or isinstance(b, float) or (is_tensor(b) and b.dtype.is_float):
            return (a / b).trunc()
        q = a // b  # integers: floor division moved toward zero where the signs differ and it did not divide
        return q + ((a - q * b != 0) & ((a < 0) ^ (b < 0))).to(q.dtype)
    raise NotImplementedError(f"aten.div: rounding_mode {rounding_mode!r}")


@aten("where")
def where(cond: Any, a: Any, b: Any) -> Any:
    return ew.where(cond, a, b)


@aten("clamp")
def clamp(x: Any, min: Any = None, max: Any = None) -> Any:  # noqa: A002 - ATen's names
    return ew.clamp(x, min, max)


ATEN["clamp_min"] = lambda x, m: ew.clamp(x, m, None)
ATEN["clamp_max"] = lambda x, m: ew.clamp(x, None, m)
ATEN["hardtanh"] = lambda x, lo=-1.0, hi=1.0: ew.clamp(x, lo, hi)
ATEN["leaky_relu"] = lambda x, slope=0.01: F.leaky_relu(x, slope)
ATEN["elu"] = lambda x, alpha=1.0, scale=1.0, input_scale=1.0: F.elu(x * input_scale, alpha) * scale
ATEN["softplus"] = lambda x, beta=1, threshold=20: F.softplus(x, beta, threshold)
ATEN["gelu"] = lambda x, approximate="none": x.gelu(approximate)
ATEN["masked_fill"] = lambda x, mask, value: x.masked_fill(mask, value)
ATEN["lerp"] = lambda a, b, w: a + (b - a) * w


# -- reductions ----------------------------------------------------------------------------------------
@aten("sum")
def sum_(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    return x.sum(_dims(dim), keepdim=keepdim, dtype=dtype)


@aten("mean")
def mean(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    x = x if dtype is None else x.to(dtype)
    return x.mean(_dims(dim), keepdim=keepdim)


@aten("prod")
def prod(x: Any, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:
    x = x if dtype is None else x.to(dtype)
    return x.prod(dim, keepdim=keepdim) if dim is not None else x.prod()


ATEN["amax"] = lambda x, dim=(), keepdim=False: x.amax(_dims(dim), keepdim=keepdim)
ATEN["amin"] = lambda x, dim=(), keepdim=False: x.amin(_dims(dim), keepdim=keepdim)
ATEN["argmax"] = lambda x, dim=None, keepdim=False: x.argmax(dim, keepdim=keepdim)
ATEN["argmin"] = lambda x, dim=None, keepdim=False: x.argmin(dim, keepdim=keepdim)
ATEN["logsumexp"] = lambda x, dim, keepdim=False: x.logsumexp(_dims(dim), keepdim=keepdim)
ATEN["cumsum"] = lambda x, dim, dtype=None: (x if dtype is None else x.to(dtype)).cumsum(dim)
ATEN["cumprod"] = lambda x, dim, dtype=None: (x if dtype is None else x.to(dtype)).cumprod(dim)


def _extreme(kind: str) -> Callable[..., Any]:
    def run(x: Any, dim: Any = None, keepdim: bool = False) -> Any:
        if is_tensor(dim):  # max.other: elementwise
            return ew.maximum(x, dim) if kind == "max" else ew.minimum(x, dim)
        if dim is None:
            return x.amax() if kind == "max" else x.amin()
        r = x.max(dim, keepdim=keepdim) if kind == "max" else x.min(dim, keepdim=keepdim)
        return (r.values, r.indices)

    return run


ATEN["max"], ATEN["min"] = _extreme("max"), _extreme("min")


ATEN["any"] = lambda x, dim=None, keepdim=False: x.any(_dims(dim), keepdim=keepdim)
ATEN["all"] = lambda x, dim=None, keepdim=False: x.all(_dims(dim), keepdim=keepdim)


@aten("var")
def var(x: Any, dim: Any = None, correction: Any = None, keepdim: bool = False, unbiased: Any = None) -> Any:
    if isinstance(correction, bool):  # var.dim(x, dim, unbiased, keepdim)
        correction, unbiased = (1 if correction else 0), None
    c = 1 if correction is None else correction
    if unbiased is not None:
        c = 1 if unbiased else 0
    return x.var(_dims(dim), correction=c, keepdim=keepdim)


@aten("var_mean")
def var_mean(x: Any, dim: Any = None, correction: Any = None, keepdim: bool = False) -> tuple[Any, Any]:
    return var(x, dim, correction, keepdim), x.mean(_dims(dim), keepdim=keepdim)


@aten("_softmax", "softmax")
def softmax(x: Any, dim: int, half_to_float: Any = False) -> Any:
    out = F.softmax(x, dim)
    return out.float() if half_to_float is True else out


@aten("_log_softmax", "log_softmax")
def log_softmax(x: Any, dim: int, half_to_float: Any = False) -> Any:
    out = F.log_softmax(x, dim)
    return out.float() if half_to_float is True else out


@aten("topk")
def topk(x: Any, k: int, dim: int = -1, largest: bool = True, sorted: bool = True) -> tuple[Any, Any]:  # noqa: A002
    r = x.topk(k, dim, largest, sorted)
    return (r.values, r.indices)


@aten("sort")
def sort(x: Any, dim: int = -1, descending: bool = False, stable: Any = None) -> tuple[Any, Any]:
    if isinstance(dim, bool) or dim is None:  # sort.stable(x, *, stable, dim, descending)
        dim = -1
    r = x.sort(dim, descending=descending, stable=bool(stable))
    return (r.values, r.indices)


# -- views and layout ------------------------------------------------------------------------------------
ATEN["view"] = ATEN["_unsafe_view"] = ATEN["reshape"] = lambda x, shape: x.reshape(*shape)
ATEN["permute"] = lambda x, dims: x.permute(*dims)
ATEN["t"] = lambda x: x.t() if x.ndim == 2 else x
ATEN["transpose"] = lambda x, a, b: x.transpose(a, b)
ATEN["unsqueeze"] = lambda x, d: x.unsqueeze(d)
ATEN["clone"] = ATEN["alias"] = ATEN["detach"] = ATEN["lift_fresh_copy"] = ATEN["lift_fresh"] = \
    lambda x, memory_format=None: x
ATEN["contiguous"] = lambda x, memory_format=None: x
ATEN["flip"] = lambda x, dims: x.flip(tuple(dims))
ATEN["roll"] = lambda x, shifts, dims=(): x.roll(tuple(shifts), tuple(dims) if dims else None)
ATEN["repeat"] = lambda x, sizes: x.repeat(*sizes)
ATEN["tril"] = lambda x, diagonal=0: x.tril(diagonal)
ATEN["triu"] = lambda x, diagonal=0: x.triu(diagonal)
ATEN["index_select"] = lambda x, dim, index: x.index_select(dim, index)
ATEN["gather"] = lambda x, dim, index, sparse_grad=False: x.gather(dim, index)
ATEN["embedding"] = lambda weight, indices, padding_idx=-1, scale_grad_by_freq=False, sparse=False: \
    F.embedding(indices, weight)
ATEN["constant_pad_nd"] = lambda x, pad, value=0: F.pad(x, list(pad), "constant", value)


@aten("expand")
def expand(x: Any, size: Sequence[int], implicit: bool = False) -> Any:
    lead = len(size) - x.ndim
    full = [x.shape[i - lead] if s == -1 else s for i, s in enumerate(size)]
    return x.expand(*full)


@aten("squeeze")
def squeeze(x: Any, dim: Any = None) -> Any:
    if dim is None:
        return x.squeeze()
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in sorted((d % max(x.ndim, 1) for d in dims), reverse=True):
        if x.ndim and x.shape[d] == 1:
            x = x.squeeze(d)
    return x


@aten("select")
def select(x: Any, dim: int, index: int) -> Any:
    idx = [slice(None)] * x.ndim
    idx[dim] = index
    return x[tuple(idx)]


@aten("slice")
def slice_(x: Any, dim: int = 0, start: Any = None, end: Any = None, step: int = 1) -> Any:
    size = x.shape[dim]
    start = 0 if start is None else start
    end = size if end is None or end >= sys.maxsize // 2 else end
    idx = [slice(None)] * x.ndim
    idx[dim] = slice(start, end, step)
    return x[tuple(idx)]


@aten("narrow")
def narrow(x: Any, dim: int, start: int, length: int) -> Any:
    return x.narrow(dim, start, length)


@aten("cat")
def cat(tensors: Sequence[Any], dim: int = 0) -> Any:
    kept = [t for t in tensors if not (t.ndim == 1 and t.shape[0] == 0)] or list(tensors)[:1]
    return contract_ops.cat(kept, dim) if len(kept) > 1 else kept[0]


ATEN["stack"] = lambda tensors, dim=0: contract_ops.stack(list(tensors), dim)
ATEN["split_with_sizes"] = lambda x, sizes, dim=0: tuple(x.split(list(sizes), dim))
ATEN["split"] = lambda x, size, dim=0: tuple(x.split(size if isinstance(size, int) else list(size), dim))
ATEN["unbind"] = lambda x, dim=0: tuple(select(x, dim, i) for i in range(x.shape[dim]))


@aten("index")
def index(x: Any, indices: Sequence[Any]) -> Any:
    return x[tuple(slice(None) if i is None else i for i in indices)]


@aten("index_put")
def index_put_(x: Any, indices: Sequence[Any], values: Any, accumulate: bool = False) -> Any:
    return index_put(x, tuple(slice(None) if i is None else i for i in indices), values, accumulate)


@aten("scatter")
def scatter(x: Any, dim: int, index: Any, src: Any = None, value: Any = None, reduce: Any = None) -> Any:
    if not is_tensor(src):
        src, value = None, src
    return x.scatter(dim, index, src=src, value=value, reduce=reduce)


ATEN["scatter_add"] = lambda x, dim, index, src: x.scatter_add(dim, index, src)


@aten("copy", "_to_copy", "to")
def to_copy(x: Any, src: Any = None, non_blocking: bool = False, dtype: Any = None, **_: Any) -> Any:
    if is_tensor(src):  # copy(self, src): src's values in self's shape and dtype
        return src.to(x.dtype).expand(*x.shape) if tuple(src.shape) != tuple(x.shape) else src.to(x.dtype)
    return x if dtype is None else x.to(dtype)


# -- creation ----------------------------------------------------------------------------------------------
def _default_dtype(value: Any, dtype: Any) -> Any:
    if dtype is not None:
        return dtype
    if isinstance(value, bool):
        return dtypes.bool_
    return dtypes.int64 if isinstance(value, int) else dtypes.float32


@aten("full")
def full(size: Sequence[int], value: Any, dtype: Any = None, **_: Any) -> Any:
    return creation.full(tuple(size), value, dtype=_default_dtype(value, dtype), device=DEVICE[0])


ATEN["scalar_tensor"] = lambda value, dtype=None, **_: creation.full((), value, dtype=_default_dtype(value, dtype),
                                                                  device=DEVICE[0])
ATEN["zeros"] = lambda size, dtype=None, **_: creation.zeros(tuple(size), dtype=dtype or dtypes.float32,
                                                             device=DEVICE[0])
ATEN["ones"] = lambda size, dtype=None, **_: creation.ones(tuple(size), dtype=dtype or dtypes.float32,
                                                           device=DEVICE[0])
ATEN["empty"] = ATEN["zeros"]  # an uninitialized tensor may hold anything: zeros are one choice
ATEN["empty_strided"] = lambda size, stride, dtype=None, **_: ATEN["zeros"](size, dtype)
ATEN["full_like"] = lambda x, value, dtype=None, **_: creation.full(tuple(x.shape), value, dtype=dtype or x.dtype,
                                                                device=x.device)
ATEN["zeros_like"] = lambda x, dtype=None, **_: creation.zeros(tuple(x.shape), dtype=dtype or x.dtype, device=x.device)
ATEN["ones_like"] = lambda x, dtype=None, **_: creation.ones(tuple(x.shape), dtype=dtype or x.dtype, device=x.device)
ATEN["empty_like"] = ATEN["zeros_like"]
ATEN["new_zeros"] = lambda x, size, dtype=None, **_: creation.zeros(tuple(size), dtype=dtype or x.dtype,
                                                                   device=x.device)
ATEN["new_ones"] = lambda x, size, dtype=None, **_: creation.ones(tuple(size), dtype=dtype or x.dtype, device=x.device)
ATEN["new_empty"] = ATEN["new_zeros"]
ATEN["new_empty_strided"] = lambda x, size, stride, dtype=None, **_: ATEN["new_zeros"](x, size, dtype)
ATEN["new_full"] = lambda x, size, value, dtype=None, **_: creation.full(tuple(size), value, dtype=dtype or x.dtype,
                                                                    device=x.device)


@aten("arange")
def arange(start: Any, end: Any = None, step: Any = 1, dtype: Any = None, **_: Any) -> Any:
    if end is None:
        start, end = 0, start
    if dtype is None:
        dtype = dtypes.int64 if all(isinstance(v, int) for v in (start, end, step)) else dtypes.float32
    return creation.arange(start, end, step, dtype=dtype, device=DEVICE[0])


# -- shapes of symbolic sizes ----------------------------------------------------------------------------
ATEN["sym_size"] = lambda x, dim=None: x.shape[dim] if dim is not None else tuple(x.shape)
ATEN["sym_numel"] = lambda x: math.prod(x.shape)
ATEN["sym_stride"] = lambda x, dim: math.prod(x.shape[dim + 1:])
ATEN["sym_storage_offset"] = lambda x: 0


# -- linear algebra ------------------------------------------------------------------------------------
ATEN["mm"] = ATEN["bmm"] = ATEN["matmul"] = lambda a, b: a @ b
ATEN["dot"] = lambda a, b: (a * b).sum()


@aten("addmm", "baddbmm")
def addmm(bias: Any, a: Any, b: Any, beta: Any = 1, alpha: Any = 1) -> Any:
    prod_ = a @ b
    if alpha != 1:
        prod_ = prod_ * alpha
    if beta == 0:
        return prod_
    return prod_ + (bias if beta == 1 else bias * beta)
