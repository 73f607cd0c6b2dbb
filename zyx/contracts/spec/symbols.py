"""The cost symbols of one concrete contract call, derived from its operands and params.

``symbols_for`` gives what ``Contract.cost`` takes for a call (``outer``, ``dim_size``, the
inputs' element counts, ...), so a caller prices a call without spelling the FKC symbols.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from zyx.contracts.spec.cost import Calibration, Cost, count_symbol, is_number
from zyx.contracts.spec.model import Contract, Operand


def _prod(xs: Sequence[int]) -> int:
    return math.prod(xs) if xs else 1


def _axis_split(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    if not shape:
        return 1, 1, 1
    axis = axis % len(shape)
    return _prod(shape[:axis]), shape[axis], _prod(shape[axis + 1:])


#: The cost symbols zyx derives from a call's operands and params (and ``<input>_n``
#: for each input, the document's ``<input>.n``); the names are the FKC reference's.
DERIVED_SYMBOLS: tuple[str, ...] = (
    "outer", "dim_size", "inner", "dtype_size", "dtype_bytes", "n",
    "batch_count", "rows", "cols", "outer_count", "input_dim_sizes", "inner_count",
)


def _fold(shape: tuple[int, ...], params: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """``(outer, dim_size, inner)`` around ``dim``, ``axis`` or the first of flip's ``dims``
    (an empty ``dims``: ``(1, n, 1)``); None when the call names no axis."""
    dims = params.get("dims")
    if isinstance(dims, (tuple, list)):
        return _axis_split(shape, dims[0]) if dims else (1, _prod(shape), 1)
    axis = params.get("dim", params.get("axis"))
    return _axis_split(shape, axis) if isinstance(axis, int) and not isinstance(axis, bool) else None


def symbols_for(contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any]) -> dict[str, Any]:
    """The cost symbols ``contract`` takes, for one call with operands ``inputs`` and
    (validated) op params ``params``; op params that are cost symbols (roll's ``outer``,
    ``dim_size``, ``inner``) are taken as given.

    ``n`` is the element count of the output (the first input's), ``<input>_n`` that of
    each input, ``dtype_size`` (contiguize: ``dtype_bytes``) the first input's width;
    ``outer/dim_size/inner`` fold the first input at ``dim``, ``axis`` or the first of
    ``dims`` (no axis: ``outer = inner = 1``); concat's ``outer_count/inner_count`` fold it
    at ``dim`` and ``input_dim_sizes`` lists each input's extent there;
    ``batch_count/rows/cols`` split it at its last two axes.
    """
    first = inputs[0]
    variadic = bool(contract.inputs) and contract.inputs[0].variadic
    out: dict[str, Any] = {"n": first.numel, "dtype_size": first.dtype.itemsize, "dtype_bytes": first.dtype.itemsize}
    if variadic:
        out[count_symbol(contract.inputs[0].name)] = sum(op.numel for op in inputs)
    else:
        out.update((count_symbol(spec.name), op.numel) for spec, op in zip(contract.inputs, inputs))
    fold = _fold(first.shape, params)
    if fold is not None:
        out["outer"], out["dim_size"], out["inner"] = fold
    dim = params.get("dim")
    if variadic and first.shape and isinstance(dim, int) and not isinstance(dim, bool):
        a = dim % first.rank
        out["outer_count"], out["inner_count"] = _prod(first.shape[:a]), _prod(first.shape[a + 1:])
        out["input_dim_sizes"] = [op.shape[a] for op in inputs]
    if first.rank >= 2:
        out["rows"], out["cols"] = first.shape[-2], first.shape[-1]
        out["batch_count"] = _prod(first.shape[:-2])
    takes = contract.cost_spec.symbols
    for key, value in params.items():
        if key in takes and is_number(value):
            out[key] = value
    return {k: out[k] for k in takes if k in out}


def cost_of_call(
    contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any],
    calibration: Calibration | None = None,
) -> Cost:
    """The cost of one concrete call (``symbols_for`` then ``Contract.cost``)."""
    return contract.cost(calibration, **symbols_for(contract, inputs, params))
