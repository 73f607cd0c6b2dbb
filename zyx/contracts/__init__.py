"""FKC kernel contracts: load the shipped documents, enforce accept clauses, evaluate costs.

``spec/`` is the document side (no OpenCL); ``zyx.kernels.contracts`` has one module per contract
kernel; ``ops`` exposes them as tensor ops, ``calibrate`` fits their costs to a device.

    from zyx.contracts import Operand, lookup, validate
    c = lookup("CumSum", "bfloat16")                              # -> cumsum_bf16
    params = validate(c, [Operand(zyx.bfloat16, (4, 8))], {"dim": -1})  # {"dim": 1}
"""
from zyx.contracts.spec.cost import Calibration, Cost, Fit, compile_expr, evaluate, expr_names, predict_seconds
from zyx.contracts.spec.model import (
    Caps,
    Contract,
    CostSpec,
    Document,
    InputSpec,
    LayoutSpec,
    Operand,
    OutputSpec,
    ParamSpec,
    Precision,
    Provider,
)
from zyx.contracts.spec.parse import parse_document, parse_file
from zyx.contracts.spec.registry import Registry, all_contracts, default_registry, get, lookup, reset
from zyx.contracts.spec.symbols import DERIVED_SYMBOLS, cost_of_call, symbols_for
from zyx.contracts.spec.validate import layout_violations, missing_checks, needs_contiguize, validate

__all__ = [
    "Calibration", "Caps", "Contract", "Cost", "CostSpec", "DERIVED_SYMBOLS", "Document", "Fit",
    "InputSpec", "LayoutSpec", "Operand", "OutputSpec", "ParamSpec", "Precision", "Provider", "Registry",
    "all_contracts", "compile_expr", "cost_of_call", "default_registry", "evaluate", "expr_names", "get",
    "layout_violations", "lookup", "missing_checks", "needs_contiguize", "parse_document", "parse_file",
    "predict_seconds", "reset", "symbols_for", "validate",
]
