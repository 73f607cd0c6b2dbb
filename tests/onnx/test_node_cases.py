"""ONNX's backend node cases through zyx.onnx, one test per case, against the case's own expected
outputs and tolerances (``node_cases.py``).

By default a representative subset runs: the first single-node case (by name) of each operator in
``DEFAULT_OPERATORS``. ``ZYX_ONNX_FULL=1`` runs all of them (about 1,880, 1,855 tensor-typed), which
is meant for a CI step of its own. A case zyx refuses is listed in
``node_expectations.json`` and must raise NotImplementedError (strict: a refused case that starts
to pass, or fails another way, is reported); every other case must match. Cases whose inputs or
outputs are sequences, optionals or maps are skipped: zyx tensors cannot hold them.
"""
from __future__ import annotations

import os

import pytest

# the generator, not just onnx: without the package, the name "onnx" imports this directory
pytest.importorskip("onnx.backend.test.case.node")

import node_cases

pytestmark = pytest.mark.needs_device

FULL = os.environ.get("ZYX_ONNX_FULL") == "1"
# The default run: one case of each operator family that exporters emit most, plus refusals (an
# operator, a domain, an element type). Every case builds its own kernels (about 0.3 s each cold),
# so all ~1,850 cases belong in a CI step of their own (ZYX_ONNX_FULL=1), not in the main suite.
DEFAULT_OPERATORS = {
    "Add", "Attention", "AveragePool", "BatchNormalization", "Cast", "Clip", "Concat", "Conv", "ConvTranspose",
    "CumSum", "DFT", "Einsum", "Erf", "Expand", "Gather", "Gelu", "Gemm", "GridSample", "If", "LSTM",
    "LayerNormalization", "Loop", "MatMul", "MaxPool", "Pad", "QuantizeLinear", "Range", "ReduceMean", "Relu",
    "Reshape", "Resize", "ScatterND", "Slice", "Softmax", "Split", "TopK", "Transpose", "Unique", "Where",
    "NonMaxSuppression", "Momentum", "StringConcat",  # refused: an operator, a training-domain op, strings
}


def _names() -> list[str]:
    cases = node_cases.all_cases()
    names = sorted(cases)
    if FULL:
        return names
    first: dict[str, str] = {}  # the first single-node case of each default operator
    for name in names:
        nodes = cases[name].model.graph.node
        if node_cases.tensor_typed(cases[name]) and len(nodes) == 1 and nodes[0].op_type in DEFAULT_OPERATORS:
            first.setdefault(nodes[0].op_type, name)
    return sorted(first.values())


def _param(name: str) -> object:
    expected = node_cases.expectations()
    if name in expected["unsupported"]:
        mark = pytest.mark.xfail(raises=NotImplementedError, strict=True, reason=expected["unsupported"][name])
        return pytest.param(name, marks=mark)
    if name in expected["failing"]:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=expected["failing"][name]))
    return name


@pytest.mark.parametrize("name", [_param(name) for name in _names()])
def test_node_case(name: str) -> None:
    case = node_cases.all_cases()[name]
    if not node_cases.tensor_typed(case):
        pytest.skip("sequence, optional or map inputs/outputs: not zyx tensors")
    node_cases.run_zyx(case)
