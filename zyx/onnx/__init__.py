"""ONNX models on zyx: ``zyx.onnx.load(model_or_path) -> Model`` maps the standard domain's operators
(opset 13 and later) onto zyx's frontend ops, so a model runs lazily and fused like native code.
Parsing needs the ``onnx`` package (the ``onnx`` extra), imported only when a model is loaded."""
from __future__ import annotations

from zyx.onnx.model import Model, load, supported_operators
from zyx.onnx.registry import OnnxUnsupported

__all__ = ["Model", "OnnxUnsupported", "load", "supported_operators"]
