"""ONNX's backend node cases through zyx.onnx, one test per case, against the case's own expected
outputs and tolerances (``node_cases.py``).

By default a representative subset runs: the first case (by name) of each operator, so every
mapped operator and every refusal path is exercised once. ``ZYX_ONNX_FULL=1`` runs all of them
(about 1,800; CI runs that in its own step). A case zyx refuses is listed in
``node_expectations.json`` and must raise NotImplementedError (strict: a refused case that starts
to pass, or fails another way, is reported); every other case must match. Cases whose inputs or
outputs are sequences, optionals or maps are skipped: zyx tensors cannot hold them.
"""
from __future__ import annotations

import os

import pytest

pytest.importorskip("onnx")

import node_cases

pytestmark = pytest.mark.needs_device

FULL = os.environ.get("ZYX_ONNX_FULL") == "1"


def _names() -> list[str]:
    cases = node_cases.all_cases()
    names = sorted(cases)
    if FULL:
        return names
    first: dict[str, str] = {}
    for name in names:
        if node_cases.tensor_typed(cases[name]):
            first.setdefault(node_cases.operator(cases[name]), name)
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
