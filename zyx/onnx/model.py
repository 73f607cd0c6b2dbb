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
from zyx.onnx import (  # noqa: F401 - importing them fills the operator table
    ops_attention,
    ops_control,
    ops_grid,
    ops_math,
    ops_nn,
    ops_quant,
    ops_reduce,
    ops_resize,
    ops_rnn,
    ops_shape,
    ops_signal,
)
from zyx.onnx.graph import Graph, onnx_module, value_types
from zyx.onnx.registry import ELEM_OF_DTYPE, OPS, OnnxUnsupported, elem_name, upload

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


def _parse(model_or_path: Any, base_dir: str | os.PathLike | None) -> Any:
    onnx = onnx_module()
    from google.protobuf.message import DecodeError

    if isinstance(model_or_path, onnx.ModelProto):
        model, source = model_or_path, "the ModelProto"
        if any(t.data_location == 1 for t in _tensors(model.graph)):
            model = onnx.ModelProto()
            model.CopyFrom(model_or_path)  # external data is read into a copy, never into the caller's
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
    return model


# -- the model -----------------------------------------------------------------------------------

def _opsets(model: Any) -> dict[str, int]:
    return {(o.domain if o.domain != "ai.onnx" else ""): o.version for o in model.opset_import}


class Model:
    """An ONNX model loaded onto zyx. ``m(**feeds)`` returns a dict of the graph's outputs (name ->
    zyx Tensor, in the graph's order); ``m.run(output_names, feeds)`` returns NumPy arrays like
    onnxruntime's ``InferenceSession.run``."""

    def __init__(self, model: Any) -> None:
        onnx = onnx_module()
        opsets = _opsets(model)
        self.opset = opsets.get("", 0)
        if model.functions:
            raise OnnxUnsupported(f"ONNX model (opset {self.opset}) with model-local functions "
                                  f"({', '.join(f.name for f in model.functions)}): not supported by zyx.onnx")
        try:  # element types of every value, subgraphs included, so unsupported ones are refused at load
            model = onnx.shape_inference.infer_shapes(model, strict_mode=False)
        except (onnx.shape_inference.InferenceError, ValueError, RuntimeError):
            pass  # inference only adds load-time checks; running does not rely on it
        self._graph = Graph(model.graph, opsets, value_types(model.graph))
        self.inputs = self._graph.inputs
        self.outputs = self._graph.outputs

    def _feed(self, feeds: Mapping[str, Any]) -> dict[str, Tensor | None]:
        unknown = sorted(set(feeds) - set(self.inputs))
        if unknown:
            raise ValueError(f"unknown input names {unknown}; the model's inputs are {self.inputs}")
        env: dict[str, Tensor | None] = {}
        for name, code in self._graph.input_types.items():
            if name not in feeds:
                raise ValueError(f"missing input {name!r}; the model's inputs are {self.inputs}")
            value = feeds[name]
            if not isinstance(value, Tensor):
                value = upload(value)
            if ELEM_OF_DTYPE.get(value.dtype) != code:
                raise TypeError(f"input {name!r}: expected element type {elem_name(code)}, got {value.dtype}")
            env[name] = value
        return env

    def __call__(self, **feeds: Any) -> dict[str, Tensor]:
        return dict(zip(self.outputs, self._graph.run(self._feed(feeds), {})))

    def run(self, output_names: list[str] | None, feeds: Mapping[str, Any]) -> list[np.ndarray]:
        names = self.outputs if output_names is None else list(output_names)
        unknown = [name for name in names if name not in self.outputs]
        if unknown:
            raise ValueError(f"unknown output names {unknown}; the model's outputs are {self.outputs}")
        results = self(**feeds)
        return [results[name].numpy() for name in names]

    def __repr__(self) -> str:
        return f"zyx.onnx.Model(opset={self.opset}, inputs={self.inputs}, outputs={self.outputs}, " \
               f"nodes={len(self._graph.nodes)})"


def load(model_or_path: Any, base_dir: str | os.PathLike | None = None) -> Model:
    """Load an ONNX model (an ``onnx.ModelProto``, the bytes of one, or a file path) onto zyx.

    Initializers are uploaded once here. Tensors stored in external files are read only from inside
    the model's directory (``base_dir``, by default the file's own). Raises ``NotImplementedError``
    naming the operator and opset for an operator, attribute value or element type zyx.onnx does not
    run, and ``ValueError`` for a truncated or malformed model.
    """
    return Model(_parse(model_or_path, base_dir))


def supported_operators() -> list[str]:
    """The standard-domain ONNX operators zyx.onnx runs, sorted."""
    return sorted(OPS)
