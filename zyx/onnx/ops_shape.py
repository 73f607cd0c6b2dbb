"""Shape, movement and indexing ONNX operators: Reshape, Shape, Slice, Pad, Concat, Split, Gather*,
Scatter*, constants and index-built tensors (Range, EyeLike, OneHot, Trilu, NonZero, ...)."""
from __future__ import annotations

import math
from typing import Any

import numpy as np

import zyx.frontend.elementwise as ew
from zyx import dtype as dtypes
from zyx.frontend.contract_ops import cat
from zyx.frontend.creation import arange, full
from zyx.frontend.gather_scatter import gather, index_select, scatter, scatter_reduce
from zyx.frontend.movement import pad
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import REQUIRED, Node, axis_of, onnx_dtype, onnx_op, tensor_value, upload


def normalized_index(index: Tensor, size: int) -> Tensor:
    """ONNX indices may be negative (counted from the end) and int32: int64, non-negative."""
    index = index.cast(dtypes.int64)
    return ew.where(index < 0, index + size, index)


def _axes(node: Node, index: int, value: Tensor | None, rank: int) -> list[int] | None:
    got = node.ints(index, value)
    return None if got is None else [axis_of(a, rank) for a in got]


# Versions older than opset 13's whose inputs and attributes mean the same are accepted (an attribute
# an old version had and a newer one dropped is not declared, so a node that sets it is refused).

# -- shapes ---------------------------------------------------------------------------------------

@onnx_op("Shape", attrs={"start": 0, "end": None}, versions=(1, 10**6))
def _shape(node: Node, x: Tensor) -> np.ndarray:
    end = node["end"]
    return np.array(x.shape[node["start"]:end], dtype=np.int64)


@onnx_op("Size")
def _size(node: Node, x: Tensor) -> np.ndarray:
    return np.array(math.prod(x.shape), dtype=np.int64)


@onnx_op("Reshape", attrs={"allowzero": 0}, versions=(5, 10**6))
def _reshape(node: Node, x: Tensor, shape: Tensor) -> Tensor:
    dims = node.ints(1, shape)
    if not node["allowzero"]:
        dims = [x.shape[i] if d == 0 else d for i, d in enumerate(dims)]
    return x.reshape(*dims)


@onnx_op("Flatten", attrs={"axis": 1}, versions=(11, 10**6))
def _flatten(node: Node, x: Tensor) -> Tensor:
    axis = axis_of(node["axis"], x.ndim)
    return x.reshape(math.prod(x.shape[:axis]), math.prod(x.shape[axis:]))


# Squeeze/Unsqueeze version 11 took the axes as an attribute, 13 as an input.
@onnx_op("Squeeze", attrs={"axes": None}, versions=(11, 10**6))
def _squeeze(node: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
    dims = _axes(node, 1, axes, x.ndim) if node["axes"] is None else [axis_of(a, x.ndim) for a in node["axes"]]
    dims = [i for i, s in enumerate(x.shape) if s == 1] if dims is None else dims
    return x.reshape(*[s for i, s in enumerate(x.shape) if i not in dims])


@onnx_op("Unsqueeze", attrs={"axes": None}, versions=(11, 10**6))
def _unsqueeze(node: Node, x: Tensor, axes: Tensor | None = None) -> Tensor:
    given = node.ints(1, axes) if node["axes"] is None else list(node["axes"])
    rank = x.ndim + len(given)
    dims = {axis_of(a, rank) for a in given}
    sizes = iter(x.shape)
    return x.reshape(*[1 if i in dims else next(sizes) for i in range(rank)])


@onnx_op("Transpose", attrs={"perm": None}, versions=(1, 10**6))
def _transpose(node: Node, x: Tensor) -> Tensor:
    perm = node["perm"] if node["perm"] is not None else list(range(x.ndim))[::-1]
    return x.permute(*perm)


@onnx_op("Expand", versions=(8, 10**6))
def _expand(node: Node, x: Tensor, shape: Tensor) -> Tensor:
    target = node.ints(1, shape)
    rank = max(x.ndim, len(target))
    a = [1] * (rank - x.ndim) + list(x.shape)
    b = [1] * (rank - len(target)) + target
    out = [p if q == 1 else q for p, q in zip(a, b)]
    return x.reshape(*a).expand(*out)


@onnx_op("Tile", versions=(6, 10**6))
def _tile(node: Node, x: Tensor, repeats: Tensor) -> Tensor:
    return x.repeat(*node.ints(1, repeats))


@onnx_op("Concat", attrs={"axis": REQUIRED}, versions=(11, 10**6))
def _concat(node: Node, *xs: Tensor) -> Tensor:
    return cat(list(xs), axis_of(node["axis"], xs[0].ndim))


@onnx_op("Split", attrs={"axis": 0, "num_outputs": None})
def _split(node: Node, x: Tensor, split: Tensor | None = None) -> tuple[Tensor, ...]:
    axis = axis_of(node["axis"], x.ndim)
    sizes = node.ints(1, split)
    if sizes is None:
        count = node["num_outputs"] or len(node.output_names)
        chunk = -(-x.shape[axis] // count)
        sizes = [min(chunk, x.shape[axis] - i * chunk) for i in range(count)]
    starts = np.cumsum([0, *sizes])
    return tuple(x.narrow(axis, int(s), int(n)) for s, n in zip(starts, sizes))


@onnx_op("Slice", versions=(10, 10**6))
def _slice(node: Node, x: Tensor, starts: Tensor, ends: Tensor, axes: Tensor | None = None,
           steps: Tensor | None = None) -> Tensor:
    starts_, ends_ = node.ints(1, starts), node.ints(2, ends)
    axes_ = _axes(node, 3, axes, x.ndim) or list(range(len(starts_)))
    steps_ = node.ints(4, steps) or [1] * len(starts_)
    index: list[Any] = [slice(None)] * x.ndim
    for axis, start, end, step in zip(axes_, starts_, ends_, steps_):
        dim = x.shape[axis]
        start, end = start + dim if start < 0 else start, end + dim if end < 0 else end
        if step > 0:
            start, end = min(max(start, 0), dim), min(max(end, 0), dim)
        else:
            start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
        index[axis] = slice(start, None if end < 0 else end, step)
    return x[tuple(index)]


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}


@onnx_op("Pad", attrs={"mode": "constant"}, choices={"mode": tuple(_PAD_MODES)})
def _pad(node: Node, x: Tensor, pads: Tensor, value: Tensor | None = None, axes: Tensor | None = None) -> Tensor:
    amounts = node.ints(1, pads)
    dims = _axes(node, 3, axes, x.ndim) or list(range(x.ndim))
    begin, end = dict(zip(dims, amounts[:len(dims)])), dict(zip(dims, amounts[len(dims):]))
    crop = tuple(slice(max(-begin.get(d, 0), 0), x.shape[d] - max(-end.get(d, 0), 0)) for d in range(x.ndim))
    x = x[crop] if any(s.start or s.stop != x.shape[d] for d, s in enumerate(crop)) else x
    torch_pads = []
    for d in reversed(range(x.ndim)):
        torch_pads += [max(begin.get(d, 0), 0), max(end.get(d, 0), 0)]
    if not any(torch_pads):
        return x
    mode = _PAD_MODES[node["mode"]]
    if mode != "constant":
        return pad(x, torch_pads, mode=mode)
    fill = 0 if value is None or value.numel() == 0 else node.host(2, value).reshape(()).item()
    return pad(x, torch_pads, value=fill)


# -- constants and index-built tensors ------------------------------------------------------------

_CONSTANT_ATTRS = ("value", "value_float", "value_floats", "value_int", "value_ints", "value_string",
                   "value_strings", "sparse_value")


def _check_constant(node: Node) -> None:
    given = [name for name in _CONSTANT_ATTRS if node.attrs.get(name) is not None]
    if given and given[0] in ("value_string", "value_strings", "sparse_value"):
        raise node.unsupported(f"attribute {given[0]}")


@onnx_op("Constant", attrs=dict.fromkeys(_CONSTANT_ATTRS), check=_check_constant, versions=(1, 10**6))
def _constant(node: Node) -> np.ndarray:
    a = node.attrs
    if a["value"] is not None:
        onnx_dtype(node, a["value"].data_type)
        return tensor_value(a["value"])
    if a["value_float"] is not None:
        return np.array(a["value_float"], dtype=np.float32)
    if a["value_floats"] is not None:
        return np.array(a["value_floats"], dtype=np.float32)
    if a["value_int"] is not None:
        return np.array(a["value_int"], dtype=np.int64)
    return np.array(a["value_ints"], dtype=np.int64)


@onnx_op("ConstantOfShape", attrs={"value": None}, versions=(9, 10**6))
def _constant_of_shape(node: Node, shape: Tensor) -> Tensor:
    dims = node.ints(0, shape)
    if node["value"] is None:
        return full(tuple(dims), 0.0, dtype=dtypes.float32)
    value = tensor_value(node["value"]).reshape(-1)
    return full(tuple(dims), value[0].item(), dtype=onnx_dtype(node, node["value"].data_type))


@onnx_op("Range", versions=(11, 10**6))
def _range(node: Node, start: Tensor, limit: Tensor, delta: Tensor) -> np.ndarray:
    s, lim, d = (node.host(i, v).reshape(()) for i, v in enumerate((start, limit, delta)))
    count = max(int(math.ceil((float(lim) - float(s)) / float(d))), 0)
    return (s + np.arange(count, dtype=s.dtype) * d).astype(s.dtype)


@onnx_op("EyeLike", attrs={"dtype": None, "k": 0})
def _eye_like(node: Node, x: Tensor) -> Tensor:
    dt = x.dtype if node["dtype"] is None else onnx_dtype(node, node["dtype"])
    rows, cols = x.shape
    diagonal = arange(rows).reshape(rows, 1) + node["k"] == arange(cols).reshape(1, cols)
    return diagonal.cast(dt)


@onnx_op("Trilu", attrs={"upper": 1})
def _trilu(node: Node, x: Tensor, k: Tensor | None = None) -> Tensor:
    diagonal = 0 if k is None else int(node.host(1, k).reshape(()))
    if 0 in x.shape:
        return x
    return x.triu(diagonal) if node["upper"] else x.tril(diagonal)


@onnx_op("OneHot", attrs={"axis": -1})
def _one_hot(node: Node, indices: Tensor, depth: Tensor, values: Tensor) -> Tensor:
    n = int(node.host(1, depth).reshape(()))
    axis = axis_of(node["axis"], indices.ndim + 1)
    index = normalized_index(indices, n).unsqueeze(axis)  # float indices truncate, as the cast does
    hot = index == arange(n).reshape(*[n if d == axis else 1 for d in range(indices.ndim + 1)])
    return ew.where(hot, values[1], values[0])


@onnx_op("NonZero")
def _nonzero(node: Node, x: Tensor) -> np.ndarray:
    return np.stack(np.nonzero(x.numpy())).astype(np.int64).reshape(x.ndim, -1)


@onnx_op("Compress", attrs={"axis": None})
def _compress(node: Node, x: Tensor, condition: Tensor) -> Tensor:
    keep = np.flatnonzero(np.asarray(node.host(1, condition)).reshape(-1))
    if node["axis"] is None:
        x, axis = x.reshape(-1), 0
    else:
        axis = axis_of(node["axis"], x.ndim)
    return index_select(x, axis, upload(keep.astype(np.int64)))


# -- gathers and scatters -------------------------------------------------------------------------

@onnx_op("Gather", attrs={"axis": 0}, versions=(11, 10**6))
def _gather(node: Node, x: Tensor, indices: Tensor) -> Tensor:
    axis = axis_of(node["axis"], x.ndim)
    index = normalized_index(indices, x.shape[axis])
    picked = index_select(x, axis, index.reshape(-1))
    return picked.reshape(*x.shape[:axis], *indices.shape, *x.shape[axis + 1:])


@onnx_op("GatherElements", attrs={"axis": 0})
def _gather_elements(node: Node, x: Tensor, indices: Tensor) -> Tensor:
    axis = axis_of(node["axis"], x.ndim)
    return gather(x, axis, normalized_index(indices, x.shape[axis]))


def _nd_index(x: Tensor, indices: Tensor, batch_dims: int) -> tuple[Tensor, ...]:
    """GatherND/ScatterND's index tuple for advanced indexing of ``x``'s leading dims."""
    k = indices.shape[-1]
    lead = indices.ndim - 1
    batch = [arange(indices.shape[b]).reshape(*[indices.shape[b] if d == b else 1 for d in range(lead)])
             for b in range(batch_dims)]
    picks = [normalized_index(indices[..., i], x.shape[batch_dims + i]) for i in range(k)]
    return (*batch, *picks)


@onnx_op("GatherND", attrs={"batch_dims": 0})
def _gather_nd(node: Node, x: Tensor, indices: Tensor) -> Tensor:
    b, k = node["batch_dims"], indices.shape[-1]
    if math.prod(indices.shape[:-1]) == 0:
        return full((*indices.shape[:-1], *x.shape[b + k:]), 0, dtype=x.dtype)
    if k == 0:
        return x.reshape(*x.shape[:b], *[1] * (indices.ndim - 1 - b), *x.shape[b:]).expand(
            *indices.shape[:-1], *x.shape[b:])
    return x[_nd_index(x, indices, b)]


_REDUCTIONS = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


@onnx_op("ScatterElements", attrs={"axis": 0, "reduction": "none"},
         choices={"reduction": ("none", *_REDUCTIONS)})
@onnx_op("Scatter", attrs={"axis": 0}, versions=(9, 10))  # ScatterElements' old name
def _scatter_elements(node: Node, x: Tensor, indices: Tensor, updates: Tensor) -> Tensor:
    axis = axis_of(node["axis"], x.ndim)
    index = normalized_index(indices, x.shape[axis])
    reduction = node.attrs.get("reduction", "none")
    if reduction == "none":
        return scatter(x, axis, index, updates)
    return scatter_reduce(x, axis, index, updates, _REDUCTIONS[reduction], include_self=True)


@onnx_op("ScatterND", attrs={"reduction": "none"}, choices={"reduction": ("none", *_REDUCTIONS)})
def _scatter_nd(node: Node, x: Tensor, indices: Tensor, updates: Tensor) -> Tensor:
    # Rows of x's first k dims flattened: one scatter along dim 0 of a (rows, rest) view.
    k = indices.shape[-1]
    rows, rest = math.prod(x.shape[:k]), math.prod(x.shape[k:])
    linear = full((), 0, dtype=dtypes.int64)
    for i in range(k):
        linear = linear * x.shape[i] + normalized_index(indices[..., i], x.shape[i])
    n = math.prod(indices.shape[:-1])
    index = linear.reshape(n, 1).expand(n, rest)
    flat, src = x.reshape(rows, rest), updates.reshape(n, rest)
    if node["reduction"] == "none":
        out = scatter(flat, 0, index, src)
    else:
        out = scatter_reduce(flat, 0, index, src, _REDUCTIONS[node["reduction"]], include_self=True)
    return out.reshape(*x.shape)


@onnx_op("TensorScatter", attrs={"axis": -2, "mode": "linear"}, choices={"mode": ("linear", "circular")})
def _tensor_scatter(node: Node, cache: Tensor, update: Tensor, write_indices: Tensor | None = None) -> Tensor:
    # Row b of the update lands at positions write_indices[b] + s of the cache's sequence axis.
    axis = axis_of(node["axis"], cache.ndim)
    batch, steps, size = cache.shape[0], update.shape[axis], cache.shape[axis]
    starts = full((batch,), 0, dtype=dtypes.int64) if write_indices is None else write_indices.cast(dtypes.int64)
    index = starts.reshape(batch, *[1] * (cache.ndim - 1)) + \
        arange(steps).reshape(*[steps if d == axis else 1 for d in range(cache.ndim)])
    if node["mode"] == "circular":
        index = index % size
    return scatter(cache, axis, index.expand(*update.shape), update)


# -- rearrangements -------------------------------------------------------------------------------

@onnx_op("DepthToSpace", attrs={"blocksize": REQUIRED, "mode": "DCR"}, choices={"mode": ("DCR", "CRD")})
def _depth_to_space(node: Node, x: Tensor) -> Tensor:
    b = node["blocksize"]
    n, c, h, w = x.shape
    if node["mode"] == "DCR":
        y = x.reshape(n, b, b, c // (b * b), h, w).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(n, c // (b * b), b, b, h, w).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(n, c // (b * b), h * b, w * b)


@onnx_op("SpaceToDepth", attrs={"blocksize": REQUIRED, "mode": "DCR"}, choices={"mode": ("DCR", "CRD")})
def _space_to_depth(node: Node, x: Tensor) -> Tensor:
    b = node["blocksize"]
    n, c, h, w = x.shape
    order = (0, 3, 5, 1, 2, 4) if node["mode"] == "DCR" else (0, 1, 3, 5, 2, 4)
    y = x.reshape(n, c, h // b, b, w // b, b).permute(*order)
    return y.reshape(n, c * b * b, h // b, w // b)


@onnx_op("ReverseSequence", attrs={"batch_axis": 1, "time_axis": 0})
def _reverse_sequence(node: Node, x: Tensor, lengths: Tensor) -> Tensor:
    batch_axis, time_axis = node["batch_axis"], node["time_axis"]
    lens = np.asarray(node.host(1, lengths)).reshape(-1)
    steps = np.arange(x.shape[time_axis])
    order = np.where(steps[None, :] < lens[:, None], lens[:, None] - 1 - steps[None, :], steps[None, :])
    if batch_axis > time_axis:
        order = order.T
    shape = [1] * x.ndim
    shape[batch_axis], shape[time_axis] = x.shape[batch_axis], x.shape[time_axis]
    index = upload(order.astype(np.int64)).reshape(*shape).expand(*x.shape)
    return gather(x, time_axis, index)


@onnx_op("CenterCropPad", attrs={"axes": None})
def _center_crop_pad(node: Node, x: Tensor, shape: Tensor) -> Tensor:
    target = node.ints(1, shape)
    axes = [axis_of(a, x.ndim) for a in node["axes"]] if node["axes"] is not None else list(range(x.ndim))
    for axis, size in zip(axes, target):
        dim = x.shape[axis]
        if size < dim:
            x = x.narrow(axis, (dim - size) // 2, size)
        elif size > dim:
            before = (size - dim) // 2
            pads = [0, 0] * (x.ndim - 1 - axis) + [before, size - dim - before]
            x = pad(x, pads)
    return x
