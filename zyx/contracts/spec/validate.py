"""Enforce a contract's accept clause on concrete arguments, before anything is launched.

``validate`` checks dtypes, ranks, input counts, the op params and the inputs' shape
constraints, and returns the op params normalized (negative axes resolved, defaults
filled). Each constraint a document states is a small named check registered under
``(kernel, field)``; nothing is derived from the English text of a constraint.
Layout is not an error for ``requires_contiguous`` kernels: ``needs_contiguize`` tells
the caller which operands to pass through the contiguize kernel first.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Callable, NoReturn

import ml_dtypes
import numpy as np

from zyx.contracts.spec.model import Contract, InputSpec, Operand
from zyx.dtype import DType, to_dtype
from zyx.errors import ContractError, ContractIndexError, ContractShapeError, DTypeError

ParamCheck = Callable[["Call", Any], Any]  # (call, raw value or None) -> normalized value
ShapeCheck = Callable[["Call", Sequence[Operand]], None]

_PARAM_CHECKS: dict[tuple[str, str], ParamCheck] = {}
_SHAPE_CHECKS: dict[tuple[str, str], ShapeCheck] = {}

_WRITE_SLICES = ("write_slice", "write_slice_rotating", "write_slice_doff")
_SCANS = ("cumsum_f32", "cumsum_f64", "cumsum_bf16", "cumsum_f16", "cumsum_int", "cumprod_f32", "cumprod_f64",
          "cumprod_int", "cummax", "cummin", "logcumsumexp_f32", "logcumsumexp_f64")


def param_check(*kernels: str, field: str) -> Callable[[ParamCheck], ParamCheck]:
    """Register a check for op param ``field`` of the named kernels."""
    def register(fn: ParamCheck) -> ParamCheck:
        for k in kernels:
            _PARAM_CHECKS[(k, field)] = fn
        return fn
    return register


def shape_check(*kernels: str, operand: str) -> Callable[[ShapeCheck], ShapeCheck]:
    """Register the check of input ``operand``'s shape constraint for the named kernels."""
    def register(fn: ShapeCheck) -> ShapeCheck:
        for k in kernels:
            _SHAPE_CHECKS[(k, operand)] = fn
        return fn
    return register


@dataclass
class Call:
    """One call being validated: the contract, its operands and the params normalized so far."""

    contract: Contract
    inputs: Sequence[Operand]
    params: dict[str, Any]

    def fail(self, message: str, kind: type[ContractError] = ContractError) -> NoReturn:
        raise kind(f"{self.contract.name}: {message}")

    @property
    def first(self) -> Operand:
        return self.inputs[0]

    @property
    def first_name(self) -> str:
        return self.contract.inputs[0].name


# ---------------------------------------------------------------- generic checks


def _fact(operand: Any, name: str, default: bool) -> bool:
    value = getattr(operand, name, default)
    return bool(value() if callable(value) else value)


def layout_violations(spec: InputSpec, operand: Operand) -> list[str]:
    """The layout facts of ``operand`` that ``spec``'s layout rule does not accept."""
    found = []
    if not _fact(operand, "is_contiguous", True) and spec.layout.strided == "rejected":
        found.append("is not contiguous (layout.strided: rejected)")
    if _fact(operand, "is_broadcast", False) and spec.layout.broadcast_stride0 == "rejected":
        found.append("is broadcast (layout.broadcast_stride0: rejected)")
    if _fact(operand, "has_offset", False) and spec.layout.start_offset == "rejected":
        found.append("has a start offset (layout.start_offset: rejected)")
    if _fact(operand, "has_negative_strides", False) and spec.layout.reverse_strides == "rejected":
        found.append("has negative strides (layout.reverse_strides: rejected)")
    return found


def _strategy(contract: Contract, spec: InputSpec) -> str:
    return spec.layout.strategy or contract.caps.awkward_layout_strategy


def _spec_for(contract: Contract, index: int) -> InputSpec:
    specs = contract.inputs
    if index < len(specs):
        return specs[index]
    if specs[-1].variadic:
        return specs[-1]
    raise ContractError(f"{contract.name}: input index {index} is beyond its {len(specs)} declared inputs")


def needs_contiguize(contract: Contract, operand: Operand, index: int = 0) -> bool:
    """True when input ``index`` must go through the contiguize kernel before this kernel runs."""
    spec = _spec_for(contract, index)
    return _strategy(contract, spec) == "requires_contiguous" and bool(layout_violations(spec, operand))


def _label(contract: Contract, index: int) -> str:
    spec = _spec_for(contract, index)
    return f"{spec.name}[{index - contract.inputs.index(spec)}]" if spec.variadic else spec.name


def _check_count(contract: Contract, inputs: Sequence[Operand]) -> None:
    specs = contract.inputs
    names = ", ".join(s.name for s in specs)
    if specs[-1].variadic:
        need = len(specs) - 1 + specs[-1].min_count
        if len(inputs) < need:
            raise ContractError(f"{contract.name}: expected at least {need} input(s) ({names}), got {len(inputs)}")
    elif len(inputs) != len(specs):
        raise ContractError(f"{contract.name}: expected {len(specs)} input(s) ({names}), got {len(inputs)}")


def _check_operand(contract: Contract, index: int, op: Operand) -> None:
    spec, label = _spec_for(contract, index), _label(contract, index)
    if not hasattr(op, "dtype") or not hasattr(op, "shape"):
        raise ContractError(f"{contract.name}: {label} = {op!r} is not a tensor operand (needs dtype and shape)")
    if op.dtype not in spec.dtypes:
        accepted = ", ".join(d.name for d in spec.dtypes)
        raise ContractError(f"{contract.name}: {label} dtype {getattr(op.dtype, 'name', op.dtype)} "
                            f"is not accepted; accepted: {accepted}")
    if spec.rank is not None and not spec.rank[0] <= len(op.shape) <= spec.rank[1]:
        raise ContractError(f"{contract.name}: {label} rank {len(op.shape)} (shape {tuple(op.shape)}) is outside "
                            f"{spec.rank_text()}")
    problems = layout_violations(spec, op)
    if problems and _strategy(contract, spec) != "requires_contiguous":
        raise ContractError(f"{contract.name}: {label} {problems[0]} and the kernel's strategy is "
                            f"{_strategy(contract, spec)}; pass a layout it accepts")


def validate(
    contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any], op_kind: str | None = None,
) -> dict[str, Any]:
    """Check ``inputs`` and ``params`` against ``contract``; return the normalized params.

    ``op_kind`` selects an arm (``Triu`` on ``triangular``), whose fixed params are added.
    Raises ``ContractError`` naming the contract, the field, the value and what was expected.
    """
    inputs = list(inputs)
    _check_count(contract, inputs)
    for i, op in enumerate(inputs):
        _check_operand(contract, i, op)
    given = dict(params)
    if op_kind is not None and op_kind != contract.op_kind:
        if op_kind not in contract.arms:
            raise ContractError(f"{contract.name}: op kind {op_kind!r} is not served; serves {list(contract.op_kinds)}")
        for key, value in contract.arms[op_kind].items():
            if key in given and given[key] != value:
                raise ContractError(f"{contract.name}: {key} = {given[key]!r} contradicts op kind {op_kind} "
                                    f"({key} = {value!r})")
            given[key] = value
    unknown = sorted(set(given) - set(contract.params))
    if unknown:
        raise ContractError(f"{contract.name}: unknown op param {unknown[0]!r}; "
                            f"expected: {', '.join(contract.params) or 'none'}")
    call = Call(contract, inputs, {})
    for name, spec in contract.params.items():
        check = _PARAM_CHECKS.get((contract.name, name))
        if check is None:
            call.fail(f"op param {name!r} has no check registered (zyx.contracts.spec.validate)")
        if given.get(name) is None and not spec.optional:
            call.fail(f"missing op param {name!r} ({spec.kind}; {spec.constraint or 'required'})")
        call.params[name] = check(call, given.get(name))
    for spec in contract.inputs:
        check = _SHAPE_CHECKS.get((contract.name, spec.name))
        if check is None and spec.shape_constraint:
            call.fail(f"shape constraint of {spec.name!r} has no check registered (zyx.contracts.spec.validate)")
        if check is not None:
            check(call, inputs)
    return call.params


def missing_checks(contract: Contract) -> list[str]:
    """Params and shape constraints of ``contract`` that no registered check enforces."""
    out = [f"op_params.{n}" for n in contract.params if (contract.name, n) not in _PARAM_CHECKS]
    out += [f"{s.name}.shape_constraint" for s in contract.inputs
            if s.shape_constraint and (contract.name, s.name) not in _SHAPE_CHECKS]
    return out


# ---------------------------------------------------------------- value helpers


def _as_int(call: Call, field: str, value: Any) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        call.fail(f"{field} = {value!r} is not an int")
    return int(value)


def _nonneg(call: Call, field: str, value: Any) -> int:
    v = _as_int(call, field, value)
    if v < 0:
        call.fail(f"{field} = {v} is negative; expected >= 0")
    return v


def _axis(call: Call, field: str, value: Any, rank: int, what: str = "rank") -> int:
    v = _as_int(call, field, value)
    if rank == 0:
        call.fail(f"{field} = {v} names an axis but the tensor has rank 0 (no axes)", ContractIndexError)
    if not -rank <= v < rank:
        call.fail(f"{field} = {v} is out of range for {what} {rank}; expected {-rank} <= {field} < {rank}",
                  ContractIndexError)
    return v % rank


def _int_tuple(call: Call, field: str, value: Any) -> tuple[int, ...]:
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        return (int(value),)
    if not isinstance(value, (tuple, list)):
        call.fail(f"{field} = {value!r} is not a tuple of ints")
    return tuple(_as_int(call, f"{field}[{i}]", v) for i, v in enumerate(value))


def _ranges(call: Call, value: Any, dest_shape: tuple[int, ...], skip_axis: int | None = None) -> tuple:
    if not isinstance(value, (tuple, list)):
        call.fail(f"ranges = {value!r} is not a tuple of (start, end) pairs")
    if len(value) != len(dest_shape):
        call.fail(f"ranges has {len(value)} entries but dest has rank {len(dest_shape)}; "
                  "expected one (start, end) per axis")
    out = []
    for i, pair in enumerate(value):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            call.fail(f"ranges[{i}] = {pair!r} is not a (start, end) pair")
        start, end = (_as_int(call, f"ranges[{i}]", v) for v in pair)
        shown = (start, end)
        if start > end:
            call.fail(f"ranges[{i}] = {shown} has start > end; expected 0 <= start <= end")
        if i != skip_axis:
            if start < 0:
                call.fail(f"ranges[{i}] = {shown} starts below 0; expected 0 <= start <= end")
            if end > dest_shape[i]:
                call.fail(f"ranges[{i}] = {shown} exceeds dest_shape[{i}] = {dest_shape[i]}")
        elif end - start > dest_shape[i]:
            call.fail(f"ranges[{i}] = {shown} is {end - start} wide on axis {i}, "
                      f"wider than dest_shape[{i}] = {dest_shape[i]}")
        out.append(shown)
    return tuple(out)


def _device_scalar(call: Call, field: str, value: Any, allow_host: bool) -> Any:
    dtypes = call.contract.params[field].dtypes
    if allow_host and isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        # an int subclass (a plan's bound variable, zyx.Variable) stays itself: a run-time argument
        return value if isinstance(value, int) else int(value)
    kind = "a host int or a" if allow_host else "a"
    names = "/".join(d.name for d in dtypes)
    if not hasattr(value, "dtype") or not hasattr(value, "shape"):
        call.fail(f"{field} = {value!r} is not {kind} one-element {names} tensor")
    if value.dtype not in dtypes:
        call.fail(f"{field} dtype {getattr(value.dtype, 'name', value.dtype)} is not accepted; expected {names}")
    if math.prod(value.shape) != 1:
        call.fail(f"{field} has shape {tuple(value.shape)}; expected exactly one element")
    return value


# ---------------------------------------------------------------- flip / roll / concat


@param_check("flip", field="dims")
def _flip_dims(call: Call, value: Any) -> tuple[int, ...]:
    rank = call.first.rank
    dims = tuple(_axis(call, f"dims[{i}]", d, rank) for i, d in enumerate(_int_tuple(call, "dims", value)))
    if len(set(dims)) != len(dims):
        shown = tuple(value) if isinstance(value, (list, tuple)) else value
        call.fail(f"dims = {shown} names an axis twice", ContractShapeError)
    return tuple(sorted(dims))


@param_check("roll", field="shift")
def _roll_shift(call: Call, value: Any) -> int:
    return _as_int(call, "shift", value)


def _nonneg_param(field: str) -> ParamCheck:
    def check(call: Call, value: Any) -> int:
        return _nonneg(call, field, value)
    check.__name__ = f"_roll_{field}"
    return check


for _field in ("outer", "dim_size", "inner"):
    param_check("roll", field=_field)(_nonneg_param(_field))


@shape_check("roll", operand="input")
def _roll_shape(call: Call, inputs: Sequence[Operand]) -> None:
    o, d, i = call.params["outer"], call.params["dim_size"], call.params["inner"]
    if o * d * i != inputs[0].numel:
        call.fail(f"outer * dim_size * inner = {o} * {d} * {i} = {o * d * i} but input has "
                  f"{inputs[0].numel} elements (shape {tuple(inputs[0].shape)})")


@param_check("concat", field="dim")
def _concat_dim(call: Call, value: Any) -> int:
    if call.first.rank == 0:
        call.fail("inputs[0] has rank 0; a tensor needs at least one axis to be joined", ContractShapeError)
    return _axis(call, "dim", value, call.first.rank)


@shape_check("concat", operand="inputs")
def _concat_shapes(call: Call, inputs: Sequence[Operand]) -> None:
    ref, dim = inputs[0], call.params["dim"]
    for k, op in enumerate(inputs[1:], start=1):
        if op.dtype != ref.dtype:
            call.fail(f"inputs[{k}] dtype {op.dtype.name} differs from inputs[0] dtype {ref.dtype.name}; "
                      "expected one dtype")
        if op.rank != ref.rank:
            call.fail(f"inputs[{k}] has rank {op.rank} (shape {tuple(op.shape)}) but inputs[0] has rank {ref.rank}",
                      ContractShapeError)
        for ax in range(ref.rank):
            if ax != dim and op.shape[ax] != ref.shape[ax]:
                call.fail(f"inputs[{k}].shape[{ax}] = {op.shape[ax]} differs from inputs[0].shape[{ax}] = "
                          f"{ref.shape[ax]}; inputs must agree on every axis except dim = {dim}", ContractShapeError)


# ---------------------------------------------------------------- write_slice family


@param_check(*_WRITE_SLICES, field="dest_shape")
def _dest_shape(call: Call, value: Any) -> tuple[int, ...]:
    if not isinstance(value, (tuple, list)) or not value:
        call.fail(f"dest_shape = {value!r} is not a non-empty tuple of ints")
    shape = tuple(_nonneg(call, f"dest_shape[{i}]", v) for i, v in enumerate(value))
    if len(shape) != call.first.rank:
        call.fail(f"dest_shape = {shape} has {len(shape)} axes but {call.first_name} has rank {call.first.rank} "
                  f"(shape {tuple(call.first.shape)}); expected equal ranks")
    return shape


@param_check(*_WRITE_SLICES, field="dest_dtype")
def _dest_dtype(call: Call, value: Any) -> DType | None:
    if value is None:
        return None
    try:
        d = to_dtype(value)
    except DTypeError:
        call.fail(f"dest_dtype = {value!r} is not a dtype")
    if d != call.first.dtype:
        call.fail(f"dest_dtype = {d.name} differs from {call.first_name} dtype {call.first.dtype.name}; "
                  "expected the same dtype")
    return d


@param_check("write_slice", field="ranges")
def _write_slice_ranges(call: Call, value: Any) -> tuple:
    return _ranges(call, value, call.params["dest_shape"])


def _check_box(call: Call, source: Operand, ranges: tuple) -> None:
    for i, (start, end) in enumerate(ranges):
        if source.shape[i] != end - start:
            call.fail(f"source.shape[{i}] = {source.shape[i]} but ranges[{i}] = {(start, end)} spans {end - start}")


@shape_check("write_slice", "write_slice_doff", operand="source")
def _write_slice_source(call: Call, inputs: Sequence[Operand]) -> None:
    _check_box(call, inputs[0], call.params["ranges"])


@param_check("write_slice_rotating", "write_slice_doff", field="axis")
def _write_axis(call: Call, value: Any) -> int:
    return _axis(call, "axis", value, len(call.params["dest_shape"]), what="dest rank")


@param_check("write_slice_rotating", field="modulus")
def _modulus(call: Call, value: Any) -> int:
    axis = call.params["axis"]
    extent = call.params["dest_shape"][axis]
    m = extent if value is None else _as_int(call, "modulus", value)
    if not 0 < m <= extent:
        call.fail(f"modulus = {m} is outside 0 < modulus <= dest_shape[{axis}] = {extent}")
    return m


@param_check("write_slice_rotating", field="position")
def _position(call: Call, value: Any) -> Any:
    return _device_scalar(call, "position", value, allow_host=True)


@shape_check("write_slice_rotating", operand="source")
def _rotating_source(call: Call, inputs: Sequence[Operand]) -> None:
    source, dest, axis = inputs[0], call.params["dest_shape"], call.params["axis"]
    for i, (s, d) in enumerate(zip(source.shape, dest)):
        if i != axis and s != d:
            call.fail(f"source.shape[{i}] = {s} differs from dest_shape[{i}] = {d}; "
                      f"only axis {axis} may differ")
    if source.shape[axis] > call.params["modulus"]:
        call.fail(f"source.shape[{axis}] = {source.shape[axis]} rows exceed modulus = {call.params['modulus']}")


@param_check("write_slice_doff", field="offset")
def _offset(call: Call, value: Any) -> Any:
    return _device_scalar(call, "offset", value, allow_host=False)


@param_check("write_slice_doff", field="ranges")
def _doff_ranges(call: Call, value: Any) -> tuple:
    dest, axis, source = call.params["dest_shape"], call.params["axis"], call.first
    if value is None:
        value = tuple((0, source.shape[i]) if i == axis else (0, d) for i, d in enumerate(dest))
    return _ranges(call, value, dest, skip_axis=axis)


# ---------------------------------------------------------------- triangular / masked_fill / scans


@param_check("triangular", field="upper")
def _upper(call: Call, value: Any) -> bool:
    if not isinstance(value, (bool, np.bool_)):
        call.fail(f"upper = {value!r} is not a bool; expected True (triu) or False (tril)")
    return bool(value)


@param_check("triangular", field="diagonal")
def _diagonal(call: Call, value: Any) -> int:
    return 0 if value is None else _as_int(call, "diagonal", value)


@param_check("masked_fill", field="fill")
def _fill(call: Call, value: Any) -> Any:
    if isinstance(value, (np.generic, np.ndarray)) and np.ndim(value) == 0:
        value = value.item()
    if not isinstance(value, (bool, int, float)):
        call.fail(f"fill = {value!r} is not a bool, int or float scalar")
    d = call.first.dtype
    if d.is_bool or isinstance(value, bool):
        return value
    if d.is_int:
        if isinstance(value, float) and not math.isfinite(value):
            call.fail(f"fill = {value} cannot be stored in {d.name}; expected a finite value")
        info = np.iinfo(d.numpy)
        if not info.min <= int(value) <= info.max:
            call.fail(f"fill = {value} is outside the {d.name} range [{info.min}, {info.max}]")
        return value
    if isinstance(value, float) and math.isnan(value):
        return value
    finfo = ml_dtypes.finfo(d.numpy)
    try:
        magnitude = abs(float(value))
    except OverflowError:
        magnitude = math.inf
    if math.isinf(magnitude) and isinstance(value, float):
        if not np.isinf(np.asarray(value).astype(d.numpy).astype(np.float64)):
            call.fail(f"fill = {value} cannot be stored in {d.name}, which has no infinity")
        return value
    if magnitude > float(finfo.max):
        call.fail(f"fill = {value} overflows {d.name} (largest finite value {float(finfo.max)})")
    return value


@shape_check("masked_fill", operand="mask")
def _mask_shape(call: Call, inputs: Sequence[Operand]) -> None:
    data, mask = inputs
    if tuple(mask.shape) != tuple(data.shape):
        call.fail(f"mask shape {tuple(mask.shape)} differs from input shape {tuple(data.shape)}; "
                  "broadcast the mask to the input's shape first")


@param_check(*_SCANS, field="dim")
def _scan_dim(call: Call, value: Any) -> int:
    return _axis(call, "dim", value, max(call.first.rank, 1))
