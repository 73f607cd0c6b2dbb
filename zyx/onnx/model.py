"""Loading an ONNX model and running its graph on zyx: ``load(model_or_path) -> Model``.

A model file is data: it is parsed as protobuf by the ``onnx`` package (nothing is unpickled or
executed), tensors stored outside it are read only from files inside the model's directory, and
every node is checked against the operator table at load, so an operator, attribute or element
type zyx.onnx does not run is refused before anything runs.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from zyx.frontend.tensor import Tensor
from zyx.onnx import ops_attention, ops_math, ops_nn, ops_quant, ops_reduce, ops_resize, ops_shape  # noqa: F401 - they fill OPS
from zyx.onnx.registry import ELEM_OF_DTYPE, ELEM_TYPES, OPS, REQUIRED, Node, OnnxUnsupported, elem_name, upload

FIRST_OPSET = 13  # an operator version older than the one opset 13 selects is refused
_STANDARD_DOMAINS = ("", "ai.onnx")


def _onnx() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError("zyx.onnx needs the onnx package: pip install 'zyx[onnx]'") from None
    return onnx


# -- reading the file ----------------------------------------------------------------------------

def _tensors(graph: Any) -> Iterator[Any]:
    """Every TensorProto of a graph: initializers, Constant-style attributes, nested subgraphs."""
    yield from graph.initializer
    for sparse in graph.sparse_initializer:
        yield sparse.values
        yield sparse.indices
    for node in graph.node:
        for attr in node.attribute:
            if attr.HasField("t"):
                yield attr.t
            yield from attr.tensors
            if attr.HasField("g"):
                yield from _tensors(attr.g)
            for sub in attr.graphs:
                yield from _tensors(sub)


def _read_external(tensor: Any, base_dir: Path | None) -> None:
    """Read one tensor's external bytes into ``raw_data``, only from a file inside ``base_dir``."""
    info = {entry.key: entry.value for entry in tensor.external_data}
    location = info.get("location", "")
    if base_dir is None:
        raise ValueError(f"ONNX tensor {tensor.name!r} keeps its data in the external file {location!r}: load the "
                         "model from its path (or pass base_dir=) so zyx knows the directory to read it from")
    root = base_dir.resolve()
    path = (root / location).resolve()
    if not location or Path(location).is_absolute() or root not in path.parents:
        raise ValueError(f"ONNX tensor {tensor.name!r}: external data location {location!r} leaves the model's "
                         f"directory {str(root)!r}; refused")
    if not path.is_file():
        raise ValueError(f"ONNX tensor {tensor.name!r}: external data file {str(path)!r} does not exist")
    offset = int(info.get("offset", 0) or 0)
    size = path.stat().st_size
    length = int(info["length"]) if info.get("length") else size - offset
    if offset < 0 or length < 0 or offset + length > size:
        raise ValueError(f"ONNX tensor {tensor.name!r}: external data range [{offset}, {offset + length}) exceeds "
                         f"the {size} bytes of {str(path)!r}")
    with open(path, "rb") as f:
        f.seek(offset)
        tensor.raw_data = f.read(length)
    del tensor.external_data[:]
    tensor.data_location = 0  # TensorProto.DEFAULT


def _parse(model_or_path: Any, base_dir: str | os.PathLike | None) -> tuple[Any, Path | None]:
    onnx = _onnx()
    from google.protobuf.message import DecodeError

    if isinstance(model_or_path, onnx.ModelProto):
        model = onnx.ModelProto()
        model.CopyFrom(model_or_path)  # external data is read into our copy, never into the caller's
        source = "the ModelProto"
    else:
        if isinstance(model_or_path, (bytes, bytearray, memoryview)):
            data, source = bytes(model_or_path), "the model bytes"
        else:
            path = Path(model_or_path)
            data, source = path.read_bytes(), str(path)
            base_dir = path.parent if base_dir is None else base_dir
        model = onnx.ModelProto()
        try:
            model.ParseFromString(data)
        except (DecodeError, ValueError, RuntimeError) as e:
            raise ValueError(f"{source} is not a valid ONNX model (truncated or corrupt protobuf: {e})") from None
    if not model.HasField("graph"):
        raise ValueError(f"{source} is not a valid ONNX model: it has no graph (truncated or not an ONNX file)")
    root = None if base_dir is None else Path(base_dir)
    for tensor in _tensors(model.graph):
        if tensor.data_location == 1:  # TensorProto.EXTERNAL
            _read_external(tensor, root)
    if model.ByteSize() < 2**31 - 1:  # the checker takes a proto only below protobuf's 2 GB limit
        try:
            onnx.checker.check_model(model)
        except (onnx.checker.ValidationError, ValueError) as e:
            raise ValueError(f"{source} is not a valid ONNX model: {str(e).splitlines()[0]}") from None
    return model, root


# -- load-time preparation of nodes --------------------------------------------------------------

def _opsets(model: Any) -> dict[str, int]:
    return {(o.domain if o.domain != "ai.onnx" else ""): o.version for o in model.opset_import}


def _prepare(node_proto: Any, opsets: dict[str, int], types: dict[str, int]) -> Node:
    onnx = _onnx()
    op, domain = node_proto.op_type, node_proto.domain
    where = f"ONNX operator {op}"
    if domain not in _STANDARD_DOMAINS:
        raise OnnxUnsupported(f"{where} of domain {domain!r} (opset {opsets.get(domain)}): only the standard "
                              "domain's operators are supported by zyx.onnx")
    opset = opsets.get("", 0)
    try:
        version = onnx.defs.get_schema(op, opset, "").since_version
    except onnx.defs.SchemaError:
        raise OnnxUnsupported(f"{where} (opset {opset}): no such operator in the standard domain at this opset") \
            from None
    spec = OPS.get(op)
    if spec is None:
        raise OnnxUnsupported(f"{where} (opset {opset}) is not supported by zyx.onnx")
    if spec.versions is not None:
        low, high = spec.versions
    else:
        low = onnx.defs.get_schema(op, FIRST_OPSET, "").since_version if _defined_at(op, FIRST_OPSET) else 1
        high = 10**6
    if not low <= version <= high:
        raise OnnxUnsupported(f"{where} (opset {opset}, operator version {version}): zyx.onnx runs operator "
                              f"versions {low} to {'latest' if high >= 10**6 else high}")
    attrs: dict[str, Any] = {}
    for attr in node_proto.attribute:
        if attr.name not in spec.attrs:
            raise OnnxUnsupported(f"{where} (opset {opset}): attribute {attr.name!r} is not supported by zyx.onnx")
        if attr.ref_attr_name:
            raise OnnxUnsupported(f"{where} (opset {opset}): attribute references (in functions)")
        value = onnx.helper.get_attribute_value(attr)
        attrs[attr.name] = value.decode() if isinstance(value, bytes) else value
    for name, default in spec.attrs.items():
        if name not in attrs:
            if default is REQUIRED:
                raise ValueError(f"{where} node {node_proto.name!r}: the required attribute {name!r} is missing")
            attrs[name] = default
    for name, allowed in spec.choices.items():
        if attrs[name] not in allowed:
            raise OnnxUnsupported(f"{where} (opset {opset}): {name}={attrs[name]!r} is not supported by zyx.onnx "
                                  f"(supported: {', '.join(map(repr, allowed))})")
    node = Node(op, node_proto.name, version, opset, attrs, list(node_proto.input), list(node_proto.output), spec,
                output_types=[types.get(name) for name in node_proto.output])
    for name in [*node.input_names, *node.output_names]:
        if name and name in types and types[name] not in ELEM_TYPES:
            raise node.unsupported(f"the element type {elem_name(types[name])} of {name!r}")
    if spec.check is not None:
        spec.check(node)
    return node


def _defined_at(op: str, opset: int) -> bool:
    onnx = _onnx()
    try:
        onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        return False
    return True


def _value_types(model: Any) -> dict[str, int]:
    """Element types of the graph's values (inputs, outputs, shape inference's value_info)."""
    onnx = _onnx()
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
        inferred = model  # inference is a load-time check only; running does not rely on it
    types = {}
    graph = inferred.graph
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type:
            types[value.name] = value.type.tensor_type.elem_type
    for init in graph.initializer:
        types[init.name] = init.data_type
    return types


# -- the model -----------------------------------------------------------------------------------

class Model:
    """An ONNX model loaded onto zyx. ``m(**feeds)`` returns a dict of the graph's outputs (name ->
    zyx Tensor, in the graph's order); ``m.run(output_names, feeds)`` returns NumPy arrays like
    onnxruntime's ``InferenceSession.run``."""

    def __init__(self, model: Any, base_dir: Path | None = None) -> None:
        onnx = _onnx()
        graph = model.graph
        self.opset = _opsets(model).get("", 0)
        if model.functions:
            raise OnnxUnsupported(f"ONNX model (opset {self.opset}) with model-local functions "
                                  f"({', '.join(f.name for f in model.functions)}): not supported by zyx.onnx")
        types = _value_types(model)
        opsets = _opsets(model)
        self.nodes = [_prepare(n, opsets, types) for n in graph.node]
        for init in graph.initializer:
            if init.data_type not in ELEM_TYPES:
                raise OnnxUnsupported(f"ONNX initializer {init.name!r}: element type {elem_name(init.data_type)} "
                                      "is not supported by zyx.onnx")
        initializers = {t.name: onnx.numpy_helper.to_array(t) for t in graph.initializer}
        self._consts: dict[str, Tensor] = {n: upload(a) for n, a in initializers.items()}
        # Small integer constants stay on the host too: shapes, axes and pads are read from them without a readback.
        self._host = {n: a for n, a in initializers.items() if a.dtype.kind in "iub" and a.size <= 4096}
        self._input_types = {v.name: v.type.tensor_type.elem_type for v in graph.input
                             if v.name not in initializers}
        for value in [*graph.input, *graph.output]:
            if not value.type.HasField("tensor_type"):
                raise OnnxUnsupported(f"ONNX graph value {value.name!r}: only tensor types are supported by zyx.onnx "
                                      f"(got {value.type.WhichOneof('value')})")
            if value.type.tensor_type.elem_type not in ELEM_TYPES:
                raise OnnxUnsupported(f"ONNX graph value {value.name!r}: element type "
                                      f"{elem_name(value.type.tensor_type.elem_type)} is not supported by zyx.onnx")
        self.inputs = list(self._input_types)
        self.outputs = [v.name for v in graph.output]
        self._check_defined(graph)
        self._last_use = self._lifetimes()

    def _check_defined(self, graph: Any) -> None:
        known = set(self._consts) | set(self.inputs)
        for node in self.nodes:
            for name in node.input_names:
                if name and name not in known:
                    raise ValueError(f"ONNX node {node.name!r} ({node.op_type}) reads {name!r}, which no graph input, "
                                     "initializer or earlier node defines (a malformed or truncated model)")
            known.update(n for n in node.output_names if n)
        missing = [name for name in self.outputs if name not in known]
        if missing:
            raise ValueError(f"ONNX graph outputs {missing} are not produced by any node (a malformed model)")

    def _lifetimes(self) -> dict[str, int]:
        last: dict[str, int] = {}
        for i, node in enumerate(self.nodes):
            for name in node.input_names:
                last[name] = i
        for name in self.outputs:
            last[name] = len(self.nodes)
        return last

    def _feed(self, feeds: Mapping[str, Any]) -> dict[str, Tensor]:
        unknown = sorted(set(feeds) - set(self.inputs))
        if unknown:
            raise ValueError(f"unknown input names {unknown}; the model's inputs are {self.inputs}")
        env: dict[str, Tensor] = {}
        for name, code in self._input_types.items():
            if name not in feeds:
                raise ValueError(f"missing input {name!r}; the model's inputs are {self.inputs}")
            value = feeds[name]
            if not isinstance(value, Tensor):
                value = upload(value)
            if ELEM_OF_DTYPE.get(value.dtype) != code:
                raise TypeError(f"input {name!r}: expected element type {elem_name(code)}, got {value.dtype}")
            env[name] = value
        return env

    def _execute(self, feeds: Mapping[str, Any]) -> dict[str, Tensor]:
        env: dict[str, Tensor | None] = {**self._consts, **self._feed(feeds), "": None}
        host = dict(self._host)
        for i, node in enumerate(self.nodes):
            node.host_values = host
            results = node.spec.fn(node, *(env[name] for name in node.input_names))
            results = results if isinstance(results, tuple) else (results,)
            for name, value in zip(node.output_names, results):
                if not name:
                    continue
                if isinstance(value, np.ndarray):
                    host[name] = value
                    value = upload(value)
                env[name] = value
            for name in node.input_names:
                if name and self._last_use.get(name) == i and name not in self._consts:
                    env.pop(name, None)
                    host.pop(name, None)
        return {name: env[name] for name in self.outputs}

    def __call__(self, **feeds: Any) -> dict[str, Tensor]:
        return self._execute(feeds)

    def run(self, output_names: list[str] | None, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        names = self.outputs if output_names is None else list(output_names)
        unknown = [name for name in names if name not in self.outputs]
        if unknown:
            raise ValueError(f"unknown output names {unknown}; the model's outputs are {self.outputs}")
        results = self._execute(feeds)
        return [results[name].numpy() for name in names]

    def __repr__(self) -> str:
        return f"zyx.onnx.Model(opset={self.opset}, inputs={self.inputs}, outputs={self.outputs}, " \
               f"nodes={len(self.nodes)})"


def load(model_or_path: Any, base_dir: str | os.PathLike | None = None) -> Model:
    """Load an ONNX model (an ``onnx.ModelProto``, the bytes of one, or a file path) onto zyx.

    Initializers are uploaded once here. Tensors stored in external files are read only from inside
    the model's directory (``base_dir``, by default the file's own). Raises ``NotImplementedError``
    naming the operator and opset for an operator, attribute value or element type zyx.onnx does not
    run, and ``ValueError`` for a truncated or malformed model.
    """
    model, root = _parse(model_or_path, base_dir)
    return Model(model, root)


def supported_operators() -> list[str]:
    """The standard-domain ONNX operators zyx.onnx runs, sorted."""
    return sorted(OPS)
