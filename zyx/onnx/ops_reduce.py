"""Reducing ONNX operators: Reduce*, ArgMax/ArgMin, CumSum/CumProd, TopK, Unique, Softmax/LogSoftmax/Hardmax,
MatMul/Gemm/Einsum and the normalizations over axes (LpNormalization, MeanVarianceNormalization)."""
from __future__ import annotations

from typing import Any

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.reduce as red
from zyx import dtype as dtypes
from zyx.frontend.contract_ops import cat
from zyx.frontend.creation import arange, full, ones_like
from zyx.frontend.einsum import einsum
from zyx.frontend.gather_scatter import index_select, scatter, scatter_reduce
from zyx.frontend.softmax import log_softmax, softmax
from zyx.frontend.sorting import topk, unique
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import REQUIRED, Node, axis_of, onnx_op

# -- Reduce* ----------------------------------------------------------------------------------------

_EMPTY_VALUE = {"ReduceMax": float("-inf"), "ReduceMin": float("inf"), "ReduceProd": 1.0, "ReduceLogSum": float("-inf"),
                "ReduceLogSumExp": float("-inf")}


def _empty_value(op: str, dt: dtypes.DType) -> float | int | bool:
    """The reduction of an empty set: its identity (the dtype's extremes for an integer or bool max/min)."""
    value = _EMPTY_VALUE.get(op, 0.0)
    if dt.is_float or op not in ("ReduceMax", "ReduceMin"):
        return value
    if dt == dtypes.bool_:
        return op == "ReduceMin"
    info = np.iinfo(dt.numpy)
    return int(info.min) if op == "ReduceMax" else int(info.max)


def _sum(x: Tensor, dims: tuple[int, ...], keep: bool) -> Tensor:
    return red.sum(x, dims, keep).cast(x.dtype)


_REDUCE = {
    "ReduceSum": _sum,
    "ReduceMean": lambda x, d, k: red.mean(x, d, k),
    "ReduceMax": lambda x, d, k: red.max(x, d, k),
    "ReduceMin": lambda x, d, k: red.min(x, d, k),
    "ReduceProd": lambda x, d, k: red.prod(x, d, k).cast(x.dtype),
    "ReduceL1": lambda x, d, k: _sum(x.abs(), d, k),
    "ReduceL2": lambda x, d, k: _sum(x * x, d, k).sqrt() if x.dtype.is_float else
    _sum(x * x, d, k).cast(dtypes.float64).sqrt().cast(x.dtype),
    "ReduceLogSum": lambda x, d, k: _sum(x, d, k).log(),
    "ReduceLogSumExp": lambda x, d, k: red.logsumexp(x, d, k).cast(x.dtype),
    "ReduceSumSquare": lambda x, d, k: _sum(x * x, d, k),
}


def _reducer(op: str) -> Any:
    def run(node: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
        got = node.ints(1, axes) if axes is not None else node.attrs.get("axes")
        if not got:
            if node["noop_with_empty_axes"]:
                return x
            got = list(range(x.ndim))
        dims = tuple(sorted({axis_of(a, x.ndim) for a in got}))
        keep = bool(node["keepdims"])
        if any(x.shape[d] == 0 for d in dims):
            shape = tuple(1 if d in dims else s for d, s in enumerate(x.shape) if keep or d not in dims)
            return full(shape, _empty_value(op, x.dtype), dtype=x.dtype)
        if x.ndim == 0:
            return _REDUCE[op](x.reshape(1), (0,), False).reshape(())
        return _REDUCE[op](x, dims, keep)
    return run


for _op in _REDUCE:
    onnx_op(_op, attrs={"axes": None, "keepdims": 1, "noop_with_empty_axes": 0}, versions=(11, 10**6))(_reducer(_op))


def _arg(fn: Any) -> Any:
    def run(node: Node, x: Tensor) -> Tensor:
        axis = axis_of(node["axis"], x.ndim)
        if node["select_last_index"]:
            last = x.shape[axis] - 1
            return last - fn(x.flip([axis]), axis, bool(node["keepdims"]))
        return fn(x, axis, bool(node["keepdims"]))
    return run


_ARG_ATTRS = {"axis": 0, "keepdims": 1, "select_last_index": 0}
onnx_op("ArgMax", attrs=_ARG_ATTRS)(_arg(red.argmax))
onnx_op("ArgMin", attrs=_ARG_ATTRS)(_arg(red.argmin))


# -- scans ------------------------------------------------------------------------------------------

def _scan(product: bool) -> Any:
    def run(node: Node, x: Tensor, axis: Tensor) -> Tensor:
        dim = axis_of(int(node.host(1, axis).reshape(())), x.ndim)
        if node["reverse"]:
            x = x.flip([dim])
        if node["exclusive"]:  # shifted by one along dim, the identity first
            first = ones_like(x.narrow(dim, 0, 1)) if product else ones_like(x.narrow(dim, 0, 1)) * 0
            x = cat([first, x.narrow(dim, 0, x.shape[dim] - 1)], dim)
        out = (x.cumprod(dim) if product else x.cumsum(dim)).cast(x.dtype)
        return out.flip([dim]) if node["reverse"] else out
    return run


onnx_op("CumSum", attrs={"exclusive": 0, "reverse": 0})(_scan(False))
onnx_op("CumProd", attrs={"exclusive": 0, "reverse": 0})(_scan(True))


@onnx_op("TopK", attrs={"axis": -1, "largest": 1, "sorted": 1})
def _topk(node: Node, x: Tensor, k: Tensor) -> tuple[Tensor, Tensor]:
    count = int(node.host(1, k).reshape(-1)[0])
    values, indices = topk(x, count, axis_of(node["axis"], x.ndim), bool(node["largest"]), True)
    return values, indices


# -- softmax family ---------------------------------------------------------------------------------

def _softmax_axis(node: Node, x: Tensor) -> int:
    return axis_of(node["axis"], x.ndim)


@onnx_op("Softmax", attrs={"axis": -1})
def _softmax(node: Node, x: Tensor) -> Tensor:
    return softmax(x, _softmax_axis(node, x))


@onnx_op("LogSoftmax", attrs={"axis": -1})
def _log_softmax(node: Node, x: Tensor) -> Tensor:
    return log_softmax(x, _softmax_axis(node, x))


@onnx_op("Hardmax", attrs={"axis": -1})
def _hardmax(node: Node, x: Tensor) -> Tensor:
    axis = _softmax_axis(node, x)
    shape = [x.shape[axis] if d == axis else 1 for d in range(x.ndim)]
    return (arange(x.shape[axis]).reshape(*shape) == red.argmax(x, axis, True)).cast(x.dtype)


# -- products ---------------------------------------------------------------------------------------

@onnx_op("MatMul")
def _matmul(node: Node, a: Tensor, b: Tensor) -> Tensor:
    return red.matmul(a, b)


@onnx_op("Gemm", attrs={"alpha": 1.0, "beta": 1.0, "transA": 0, "transB": 0})
def _gemm(node: Node, a: Tensor, b: Tensor, c: Tensor | None = None) -> Tensor:
    a = a.T if node["transA"] else a
    b = b.T if node["transB"] else b
    y = red.matmul(a, b)
    if node["alpha"] != 1.0:
        y = y * node["alpha"]
    if c is not None:
        y = y + (c * node["beta"] if node["beta"] != 1.0 else c)
    return y


@onnx_op("Einsum", attrs={"equation": REQUIRED})
def _einsum(node: Node, *xs: Tensor) -> Tensor:
    return einsum(node["equation"].replace(" ", ""), *xs)


# -- normalizations over axes ----------------------------------------------------------------------

@onnx_op("LpNormalization", attrs={"axis": -1, "p": 2}, choices={"p": (1, 2)})
def _lp_normalization(node: Node, x: Tensor) -> Tensor:
    axis = axis_of(node["axis"], x.ndim)
    norm = red.sum(x.abs(), axis, True) if node["p"] == 1 else red.sum(x * x, axis, True).sqrt()
    norm = norm.cast(x.dtype)
    return ew.where(norm == 0, 0.0, x / ew.where(norm == 0, 1.0, norm))


@onnx_op("MeanVarianceNormalization", attrs={"axes": [0, 2, 3]})
def _mvn(node: Node, x: Tensor) -> Tensor:
    dims = tuple(axis_of(a, x.ndim) for a in node["axes"])
    mean = red.mean(x, dims, True)
    variance = red.mean(x * x, dims, True) - mean * mean
    return (x - mean) / (variance.sqrt() + 1e-9)


@onnx_op("Unique", attrs={"axis": None, "sorted": 1})
def _unique(node: Node, x: Tensor) -> tuple[Tensor, ...]:
    # Sorted distinct values (or slices along axis) with inverse and counts from zyx's unique; each
    # value's first index is the least position mapping to it; sorted=0 reorders by that index.
    flat = x.reshape(-1) if node["axis"] is None else x
    axis = None if node["axis"] is None else axis_of(node["axis"], x.ndim)
    values, inverse, counts = unique(flat, True, True, True, axis)
    length = flat.shape[0 if axis is None else axis]
    positions = arange(length)
    first = scatter_reduce(full((counts.shape[0],), length, dtype=dtypes.int64), 0, inverse, positions, "amin")
    if not node["sorted"]:
        order = first.argsort()
        rank = scatter(full((counts.shape[0],), 0, dtype=dtypes.int64), 0, order, arange(counts.shape[0]))
        values = index_select(values, 0 if axis is None else axis, order)
        first, counts, inverse = first[order], counts[order], index_select(rank, 0, inverse)
    return values, first, inverse, counts
