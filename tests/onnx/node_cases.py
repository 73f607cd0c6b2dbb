"""ONNX's backend node test cases (generated in memory by the ``onnx`` wheel), run through zyx.onnx
or onnxruntime and compared with the case's expected outputs and tolerances.

Shared by ``test_node_cases.py`` and the ``report.py`` script. A case's outcome is one of:
``pass``; ``unsupported`` (zyx.onnx refused it with NotImplementedError, naming the operator);
``wrong`` (outputs differ: dtype, shape or values); ``error`` (any other exception).
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Callable

import numpy as np

EXPECTATIONS = Path(__file__).with_name("node_expectations.json")


@cache
def all_cases() -> dict[str, Any]:
    """Every node case by name (onnx caches the first call's filter, so this asks for all at once)."""
    from onnx.backend.test.case.node import collect_testcases

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the generators' own NumPy overflow warnings
        return {case.name: case for case in collect_testcases(None)}


def tensor_typed(case: Any) -> bool:
    graph = case.model.graph
    return all(v.type.HasField("tensor_type") for v in [*graph.input, *graph.output])


def operator(case: Any) -> str:
    """The operator a case is about: its single node's; for an expanded function (``*_expanded*``) the
    operator of the case it expands, marked ``(expanded)``; else the graph's operators."""
    nodes = case.model.graph.node
    if len(nodes) == 1:
        return nodes[0].op_type
    if "_expanded" in case.name:
        plain = all_cases().get(case.name.replace("_expanded", "", 1))
        if plain is not None and len(plain.model.graph.node) == 1:
            return plain.model.graph.node[0].op_type + " (expanded)"
    return "+".join(sorted({n.op_type for n in nodes if n.op_type != "Constant"}))


@cache
def expectations() -> dict[str, dict[str, str]]:
    """{"unsupported": {case: reason}, "failing": {case: reason}} recorded by report.py --write."""
    return json.loads(EXPECTATIONS.read_text(encoding="utf-8"))


def _comparable(a: np.ndarray) -> np.ndarray:
    return a.astype(np.float64) if a.dtype.kind == "V" or "float8" in a.dtype.name or "bfloat16" in a.dtype.name else a


def arrays(values: list[Any]) -> list[np.ndarray]:
    """A data set's values as NumPy arrays (some cases store TensorProtos)."""
    from onnx import TensorProto, numpy_helper

    return [numpy_helper.to_array(v) if isinstance(v, TensorProto) else v for v in values]


def compare(case: Any, expected: list[np.ndarray], got: list[np.ndarray]) -> None:
    """Raise AssertionError unless each output has the expected dtype, shape and values (rtol/atol)."""
    assert len(got) == len(expected), f"{len(got)} outputs, expected {len(expected)}"
    for i, (e, g) in enumerate(zip(arrays(expected), got)):
        e, g = np.asarray(e), np.asarray(g)
        assert g.dtype == e.dtype, f"output {i}: dtype {g.dtype}, expected {e.dtype}"
        assert g.shape == e.shape, f"output {i}: shape {g.shape}, expected {e.shape}"
        np.testing.assert_allclose(_comparable(g), _comparable(e), rtol=case.rtol, atol=case.atol,
                                   err_msg=f"output {i}")


def run_zyx(case: Any) -> None:
    import zyx.onnx

    model = zyx.onnx.load(case.model)
    for inputs, outputs in case.data_sets:
        compare(case, outputs, model.run(None, dict(zip(model.inputs, arrays(inputs)))))


def run_onnxruntime(case: Any) -> None:
    import onnxruntime

    onnxruntime.set_default_logger_severity(4)  # its refusals are outcomes here, not log lines
    options = onnxruntime.SessionOptions()
    options.log_severity_level = 3
    session = onnxruntime.InferenceSession(case.model.SerializeToString(), options,
                                           providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    for inputs, outputs in case.data_sets:
        compare(case, outputs, session.run(None, dict(zip(names, arrays(inputs)))))


@dataclass
class Outcome:
    result: str  # pass, unsupported, wrong, error
    reason: str = ""


def outcome(run: Callable[[Any], None], case: Any) -> Outcome:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run(case)
    except NotImplementedError as e:
        return Outcome("unsupported", str(e).splitlines()[0][:300])
    except AssertionError as e:
        return Outcome("wrong", " | ".join(str(e).strip().splitlines())[:300])
    except Exception as e:  # noqa: BLE001 - any failure of a runtime on a case is that case's outcome
        return Outcome("error", f"{type(e).__name__}: {' | '.join(str(e).splitlines())}"[:300])
    return Outcome("pass")
