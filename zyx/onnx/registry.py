"""The operator table of zyx.onnx: which ONNX operators map onto zyx ops, their attributes, and the
context a mapping runs in (its node's attributes, operator version and host-side input values).

A mapping is a function ``fn(node, *inputs) -> Tensor | tuple`` registered with :func:`onnx_op`
under one or more operator names of the standard domain. It declares the attributes it reads (with
their defaults, and for string attributes the values it runs), so a node whose attributes the
mapping would ignore is refused at load time rather than run wrongly.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from zyx import dtype as dtypes
from zyx.frontend.creation import from_numpy
from zyx.frontend.tensor import Tensor

# ONNX TensorProto element types zyx holds (the rest: strings, complex, the fnuz float8s,
# 4/2-bit and 6-bit types, float8e8m0 are refused at load).
ELEM_TYPES: dict[int, dtypes.DType] = {
    1: dtypes.float32, 2: dtypes.uint8, 3: dtypes.int8, 4: dtypes.uint16, 5: dtypes.int16, 6: dtypes.int32,
    7: dtypes.int64, 9: dtypes.bool_, 10: dtypes.float16, 11: dtypes.float64, 12: dtypes.uint32,
    13: dtypes.uint64, 16: dtypes.bfloat16, 17: dtypes.float8_e4m3, 19: dtypes.float8_e5m2,
}
ELEM_OF_DTYPE: dict[dtypes.DType, int] = {dt: code for code, dt in ELEM_TYPES.items()}

# How ONNX's own names for the element types read in messages (TensorProto.DataType keys).
_ELEM_NAMES = {0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64",
               8: "STRING", 9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64",
               15: "COMPLEX128", 16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2",
               20: "FLOAT8E5M2FNUZ", 21: "UINT4", 22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2",
               26: "INT2", 27: "FLOAT6E2M3", 28: "FLOAT6E3M2"}


def elem_name(code: int) -> str:
    return _ELEM_NAMES.get(code, f"element type {code}")


class OnnxUnsupported(NotImplementedError):
    """An operator, attribute value or element type zyx.onnx does not run (never run wrongly)."""


Mapping = Callable[..., Any]


@dataclass(frozen=True)
class OpSpec:
    name: str
    fn: Mapping
    attrs: dict[str, Any]  # attribute name -> default (REQUIRED when the node must carry it)
    choices: dict[str, tuple[Any, ...]]  # attribute -> the values the mapping runs
    versions: tuple[int, int] | None  # the operator versions (since_version of the schema in effect) it runs;
    # None: from the version opset 13 selects on
    check: Callable[[Node], None] | None = None  # more load-time checks of a node


REQUIRED = object()
OPS: dict[str, OpSpec] = {}


def onnx_op(*names: str, attrs: dict[str, Any] | None = None, choices: dict[str, tuple[Any, ...]] | None = None,
            versions: tuple[int, int] | None = None, check: Callable[[Node], None] | None = None,
            ) -> Callable[[Mapping], Mapping]:
    """Register ``fn`` for the operators ``names``. ``versions`` bounds the operator versions (the
    ``since_version`` of the schema a model's opset selects) whose semantics the mapping follows."""
    def register(fn: Mapping) -> Mapping:
        for name in names:
            assert name not in OPS, f"ONNX operator {name} registered twice"
            OPS[name] = OpSpec(name, fn, dict(attrs or {}), dict(choices or {}), versions, check)
        return fn
    return register


@dataclass
class Node:
    """One node as a mapping sees it: attributes (decoded, defaults filled in), the operator
    version in effect, host-side values of inputs known without a readback, and subgraphs."""
    op_type: str
    name: str
    version: int
    opset: int
    attrs: dict[str, Any]
    input_names: list[str]
    output_names: list[str]
    spec: OpSpec
    host_values: dict[str, np.ndarray] = field(default_factory=dict)  # filled per run
    subgraphs: dict[str, Any] = field(default_factory=dict)  # graph attributes, prepared (zyx.onnx.graph.Graph)
    scope: dict[str, Tensor | None] = field(default_factory=dict)  # the values visible to subgraphs, per run

    def __getitem__(self, name: str) -> Any:
        return self.attrs[name]

    def unsupported(self, what: str) -> OnnxUnsupported:
        return OnnxUnsupported(f"ONNX operator {self.op_type} (opset {self.opset}, operator version {self.version}, "
                               f"node {self.name!r}): {what} is not supported by zyx.onnx")

    def host(self, index: int, value: Tensor | None) -> np.ndarray | None:
        """The NumPy value of input ``index`` (a shape, axes, pads, ...): a known constant, else read back."""
        if value is None:
            return None
        known = self.host_values.get(self.input_names[index])
        return known if known is not None else value.numpy()

    def ints(self, index: int, value: Tensor | None) -> list[int] | None:
        got = self.host(index, value)
        return None if got is None else [int(v) for v in np.asarray(got).reshape(-1)]


def onnx_dtype(node: Node, code: int) -> dtypes.DType:
    """The zyx dtype of an ONNX element type, refusing the ones zyx does not hold."""
    if code not in ELEM_TYPES:
        raise node.unsupported(f"element type {elem_name(code)}")
    return ELEM_TYPES[code]


def axis_of(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


def upload(array: Any) -> Tensor:
    """A tensor holding a NumPy value (C-contiguous; rank 0 stays rank 0)."""
    return from_numpy(np.require(np.asarray(array), requirements="C"))


def tensor_value(proto: Any) -> np.ndarray:
    """A TensorProto's value in its own dtype (older onnx releases widen bfloat16 and float8 to float32)."""
    from onnx.numpy_helper import to_array

    array = to_array(proto)
    want = ELEM_TYPES[proto.data_type].numpy if proto.data_type in ELEM_TYPES else array.dtype
    return array if array.dtype == want else array.astype(want)
