"""An ONNX graph prepared for zyx: every node checked against the operator table at load (operator,
version, attributes, element types), its initializers uploaded once, and a run that walks the
nodes in order, dropping each value after its last reader. Subgraphs (If, Loop, Scan) are Graphs
too, reading the values of the scopes around them."""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import ELEM_TYPES, OPS, REQUIRED, Node, OnnxUnsupported, elem_name, tensor_value, upload

FIRST_OPSET = 13  # an operator version older than the one opset 13 selects is refused unless a mapping says so
_STANDARD_DOMAINS = ("", "ai.onnx")


def onnx_module() -> Any:
    try:
        import onnx
    except ImportError:
        raise ImportError("zyx.onnx needs the onnx package: pip install 'zyx[onnx]'") from None
    return onnx


def _defined_at(op: str, opset: int) -> bool:
    onnx = onnx_module()
    try:
        onnx.defs.get_schema(op, opset, "")
    except onnx.defs.SchemaError:
        return False
    return True


def value_types(graph: Any) -> dict[str, int]:
    """Element types of a graph's values (inputs, outputs, initializers, shape inference's value_info)."""
    types = {}
    for value in [*graph.input, *graph.output, *graph.value_info]:
        if value.type.HasField("tensor_type") and value.type.tensor_type.elem_type:
            types[value.name] = value.type.tensor_type.elem_type
    for init in graph.initializer:
        types[init.name] = init.data_type
    return types


def _version(op: str, opset: int) -> tuple[int, Any]:
    onnx = onnx_module()
    where = f"ONNX operator {op}"
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
    return version, spec


def _prepare(proto: Any, opsets: dict[str, int], types: dict[str, int], scope: set[str]) -> Node:
    onnx = onnx_module()
    op, domain = proto.op_type, proto.domain
    where = f"ONNX operator {op}"
    if domain not in _STANDARD_DOMAINS:
        raise OnnxUnsupported(f"{where} of domain {domain!r} (opset {opsets.get(domain)}): only the standard "
                              "domain's operators are supported by zyx.onnx")
    opset = opsets.get("", 0)
    version, spec = _version(op, opset)
    attrs: dict[str, Any] = {}
    subgraphs: dict[str, Graph] = {}
    for attr in proto.attribute:
        if attr.name not in spec.attrs:
            raise OnnxUnsupported(f"{where} (opset {opset}): attribute {attr.name!r} is not supported by zyx.onnx")
        if attr.ref_attr_name:
            raise OnnxUnsupported(f"{where} (opset {opset}): attribute references (in functions)")
        if attr.type == onnx.AttributeProto.GRAPH:
            subgraphs[attr.name] = Graph(attr.g, opsets, {**types, **value_types(attr.g)}, scope)
            attrs[attr.name] = subgraphs[attr.name]
            continue
        value = onnx.helper.get_attribute_value(attr)
        attrs[attr.name] = value.decode() if isinstance(value, bytes) else value
    for name, default in spec.attrs.items():
        if name not in attrs:
            if default is REQUIRED:
                raise ValueError(f"{where} node {proto.name!r}: the required attribute {name!r} is missing")
            attrs[name] = default
    for name, allowed in spec.choices.items():
        if attrs[name] not in allowed:
            raise OnnxUnsupported(f"{where} (opset {opset}): {name}={attrs[name]!r} is not supported by zyx.onnx "
                                  f"(supported: {', '.join(map(repr, allowed))})")
    node = Node(op, proto.name, version, opset, attrs, list(proto.input), list(proto.output), spec,
                subgraphs=subgraphs)
    for name in [*node.input_names, *node.output_names]:
        if name and name in types and types[name] not in ELEM_TYPES:
            raise node.unsupported(f"the element type {elem_name(types[name])} of {name!r}")
    if spec.check is not None:
        spec.check(node)
    return node


def _check_tensor_value(value: Any) -> None:
    if not value.type.HasField("tensor_type"):
        raise OnnxUnsupported(f"ONNX graph value {value.name!r}: only tensor types are supported by zyx.onnx "
                              f"(got {value.type.WhichOneof('value')})")
    code = value.type.tensor_type.elem_type
    if code and code not in ELEM_TYPES:
        raise OnnxUnsupported(f"ONNX graph value {value.name!r}: element type {elem_name(code)} is not supported "
                              "by zyx.onnx")


class Graph:
    """A prepared graph: ``run(env, host)`` takes the values of its inputs (and of the scopes around
    it) and returns its outputs in order."""

    def __init__(self, graph: Any, opsets: dict[str, int], types: dict[str, int], outer: set[str] | None = None
                 ) -> None:
        for init in graph.initializer:
            if init.data_type not in ELEM_TYPES:
                raise OnnxUnsupported(f"ONNX initializer {init.name!r}: element type {elem_name(init.data_type)} "
                                      "is not supported by zyx.onnx")
        for value in [*graph.input, *graph.output]:
            _check_tensor_value(value)
        initializers = {t.name: tensor_value(t) for t in graph.initializer}
        self.consts: dict[str, Tensor] = {n: upload(a) for n, a in initializers.items()}
        # Small integer constants stay on the host too: shapes, axes and pads are read from them without a readback.
        self.host = {n: a for n, a in initializers.items() if a.dtype.kind in "iub" and a.size <= 4096}
        self.input_types = {v.name: v.type.tensor_type.elem_type for v in graph.input if v.name not in initializers}
        self.inputs = list(self.input_types)
        self.outputs = [v.name for v in graph.output]
        outer = set() if outer is None else outer
        known = outer | set(self.consts) | set(self.inputs)
        self.nodes: list[Node] = []
        for proto in graph.node:
            node = _prepare(proto, opsets, types, known)
            for name in node.input_names:
                if name and name not in known:
                    raise ValueError(f"ONNX node {node.name!r} ({node.op_type}) reads {name!r}, which no graph input, "
                                     "initializer or earlier node defines (a malformed or truncated model)")
            known |= {n for n in node.output_names if n}
            self.nodes.append(node)
        missing = [name for name in self.outputs if name not in known]
        if missing:
            raise ValueError(f"ONNX graph outputs {missing} are not produced by any node (a malformed model)")
        # values of enclosing scopes that this graph (or a subgraph of it) reads
        own = set(self.consts) | set(self.inputs) | {n for node in self.nodes for n in node.output_names}
        self.captures = {name for node in self.nodes for name in self._reads(node)} - own
        self._last_use = {}
        for i, node in enumerate(self.nodes):
            for name in self._reads(node):
                self._last_use[name] = i
        for name in self.outputs:
            self._last_use[name] = len(self.nodes)

    @staticmethod
    def _reads(node: Node) -> set[str]:
        return {n for n in node.input_names if n} | {n for g in node.subgraphs.values() for n in g.captures}

    def run(self, env: dict[str, Tensor | None], host: dict[str, np.ndarray]) -> list[Tensor]:
        """Run the nodes; ``env``/``host`` hold the inputs and the enclosing scopes' values (copied)."""
        env = {**env, **self.consts, "": None}
        host = {**host, **self.host}
        for i, node in enumerate(self.nodes):
            node.host_values, node.scope = host, env
            results = node.spec.fn(node, *(env[name] for name in node.input_names))
            results = results if isinstance(results, tuple) else (results,)
            for name, value in zip(node.output_names, results):
                if not name:
                    continue
                if isinstance(value, np.ndarray):
                    host[name] = value
                    value = upload(value)
                env[name] = value
            for name in self._reads(node):
                if self._last_use.get(name) == i and name not in self.consts:
                    env.pop(name, None)
                    host.pop(name, None)
        return [env[name] for name in self.outputs]
