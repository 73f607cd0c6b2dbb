"""Cost expressions of FKC contracts: a small safe arithmetic language and its evaluation.

Grammar (everything else is rejected; nothing is ever passed to ``eval``)::

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "/" | "//") unary)*
    unary  := ("-" | "+") unary | atom
    atom   := NUMBER | NAME | "(" expr ")" | ("min" | "max") "(" expr ("," expr)* ")"

NUMBER is a non-negative int or float literal, NAME a Python identifier naming a cost
symbol (``n``, ``dtype_bytes``, ``outer`` ...). ``/`` is true division, ``//`` floor
division. Expressions are parsed with the ``ast`` module and every node is checked
against a whitelist.
"""
from __future__ import annotations

import ast
import math
from functools import lru_cache
from typing import Any, Callable, Mapping, Optional, Sequence

from zyx.contracts.model import Calibration, Contract, Cost, Operand
from zyx.errors import ContractError

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
}
_FUNCS: dict[str, Callable[..., Any]] = {"min": min, "max": max}
_RESERVED = frozenset(_FUNCS) | {"calibration"}


class ExpressionError(ContractError):
    """A cost expression outside the grammar (parse.py adds file/block/field context)."""


def _check_node(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.Expression):
        _check_node(node.body, text)
    elif isinstance(node, ast.BinOp):
        if type(node.op) not in _BINOPS:
            raise ExpressionError(f"operator {type(node.op).__name__} is not allowed in {text!r}; allowed: + - * / //")
        _check_node(node.left, text)
        _check_node(node.right, text)
    elif isinstance(node, ast.UnaryOp):
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise ExpressionError(f"unary {type(node.op).__name__} is not allowed in {text!r}")
        _check_node(node.operand, text)
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bool) or not isinstance(node.value, (int, float)):
            raise ExpressionError(f"constant {node.value!r} is not a number in {text!r}")
    elif isinstance(node, ast.Name):
        if node.id in _RESERVED:
            raise ExpressionError(f"{node.id!r} is reserved and cannot be a symbol in {text!r}")
    elif isinstance(node, ast.Call):
        fname = node.func.id if isinstance(node.func, ast.Name) else None
        if fname not in _FUNCS or node.keywords or not node.args:
            raise ExpressionError(f"only min(...) and max(...) with positional arguments may be called in {text!r}")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise ExpressionError(f"starred arguments are not allowed in {text!r}")
            _check_node(arg, text)
    else:
        raise ExpressionError(f"{type(node).__name__} is not allowed in cost expression {text!r}")


@lru_cache(maxsize=512)
def compile_expr(text: str) -> ast.Expression:
    """Parse ``text`` under the cost grammar; raise ``ExpressionError`` when it is outside it."""
    if not isinstance(text, str) or not text.strip():
        raise ExpressionError(f"cost expression must be a non-empty string, got {text!r}")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse cost expression {text!r}: {exc.msg}") from None
    _check_node(tree, text)
    return tree


def expr_names(text: str) -> frozenset[str]:
    """The symbol names a cost expression uses (``min``/``max`` excluded)."""
    tree = compile_expr(text)
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    return frozenset(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and id(n) not in called)


def _eval(node: ast.AST, values: Mapping[str, Any], text: str, where: str) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, values, text, where)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in values:
            given = ", ".join(sorted(values)) or "nothing"
            raise ContractError(f"{where} {text!r}: unknown name {node.id!r} (pass it as a cost param); given: {given}")
        value = values[node.id]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ContractError(f"{where} {text!r}: {node.id} = {value!r} is not a number")
        return value
    if isinstance(node, ast.UnaryOp):
        v = _eval(node.operand, values, text, where)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp):
        a = _eval(node.left, values, text, where)
        b = _eval(node.right, values, text, where)
        try:
            return _BINOPS[type(node.op)](a, b)
        except ZeroDivisionError:
            raise ContractError(f"{where} {text!r}: division by zero") from None
    if isinstance(node, ast.Call):
        args = [_eval(a, values, text, where) for a in node.args]
        return _FUNCS[node.func.id](*args)  # type: ignore[attr-defined]
    raise ContractError(f"{where} {text!r}: cannot evaluate {type(node).__name__}")  # unreachable after compile


def evaluate(text: str, values: Mapping[str, Any], where: str = "cost") -> Any:
    """Evaluate a cost expression with symbol ``values``; ``where`` prefixes error messages."""
    try:
        tree = compile_expr(text)
    except ExpressionError as exc:
        raise ContractError(f"{where}: {exc}") from None
    return _eval(tree, values, text, where)


# ---------------------------------------------------------------- calibration

_calibration_source: Optional[Callable[[Contract], Optional[Calibration]]] = None


def set_calibration_source(
    source: Optional[Callable[[Contract], Optional[Calibration]]],
) -> Optional[Callable[[Contract], Optional[Calibration]]]:
    """Install the function that finds a device fit for a contract; returns the previous one."""
    global _calibration_source
    previous, _calibration_source = _calibration_source, source
    return previous


def predict_seconds(bytes_moved: float, flops: float, calibration: Calibration) -> float:
    """``overhead_s + bytes_moved / bytes_per_s (+ flops / flops_per_s)`` for one fit."""
    if not calibration.bytes_per_s or calibration.bytes_per_s <= 0:
        raise ContractError(f"calibration bytes_per_s must be > 0, got {calibration.bytes_per_s!r}")
    seconds = calibration.overhead_s + bytes_moved / calibration.bytes_per_s
    rate = getattr(calibration, "flops_per_s", None)
    if rate and flops:
        seconds += flops / rate
    return seconds


def evaluate_cost(contract: Contract, params: Mapping[str, Any], calibration: Optional[Calibration] = None) -> Cost:
    """``Cost(bytes_moved, flops, predicted_s)`` of ``contract`` for cost symbols ``params``."""
    spec = contract.cost_spec
    bytes_moved = evaluate(spec.bytes_moved, params, f"{contract.name}: cost.bytes_moved")
    flops = evaluate(spec.flops, params, f"{contract.name}: cost.flops")
    if calibration is None and _calibration_source is not None:
        calibration = _calibration_source(contract)
    predicted = predict_seconds(bytes_moved, flops, calibration) if calibration is not None else None
    return Cost(bytes_moved, flops, predicted)


def evaluate_memory(contract: Contract, params: Mapping[str, Any]) -> dict[str, float]:
    """Each ``memory`` tier of ``contract`` evaluated for cost symbols ``params``."""
    return {
        tier: evaluate(expr, params, f"{contract.name}: cost.memory.{tier}")
        for tier, expr in contract.cost_spec.memory
    }


# ---------------------------------------------------------------- cost symbols


def _prod(xs: Sequence[int]) -> int:
    return math.prod(xs) if xs else 1


def _axis_split(shape: tuple[int, ...], axis: int) -> tuple[int, int, int]:
    if not shape:
        return 1, 1, 1
    axis = axis % len(shape)
    return _prod(shape[:axis]), shape[axis], _prod(shape[axis + 1:])


#: The cost symbols zyx knows how to derive from operands and validated params.
DERIVED_SYMBOLS: tuple[str, ...] = (
    "n", "dtype_bytes", "num_inputs", "slab_elems",
    "outer", "dim_size", "inner", "rows", "cols", "batch_count",
)


def symbols_for(contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any]) -> dict[str, int]:
    """Cost symbols for one call: derived from operands, overridden by numeric ``params``.

    ``n`` is the element count of the output (the sum over a variadic input list),
    ``slab_elems`` that of the first input (the written slab for write_slice*),
    ``outer/dim_size/inner`` split the first input's shape at ``dim`` or ``axis``,
    ``rows/cols/batch_count`` split it at its last two axes.
    """
    first = inputs[0]
    if contract.inputs and contract.inputs[0].variadic:
        n = sum(op.numel for op in inputs)
    else:
        n = first.numel
    out: dict[str, int] = {
        "n": n,
        "dtype_bytes": first.dtype.itemsize,
        "num_inputs": len(inputs),
        "slab_elems": first.numel,
    }
    axis = params.get("dim", params.get("axis"))
    if isinstance(axis, int) and not isinstance(axis, bool):
        out["outer"], out["dim_size"], out["inner"] = _axis_split(first.shape, axis)
    if first.rank >= 2:
        out["rows"], out["cols"] = first.shape[-2], first.shape[-1]
        out["batch_count"] = _prod(first.shape[:-2])
    for key, value in params.items():
        if isinstance(value, int) and not isinstance(value, bool):
            out[key] = value
    return out


def cost_of_call(
    contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any],
    calibration: Optional[Calibration] = None,
) -> Cost:
    """The cost of one concrete call (``symbols_for`` then ``Contract.cost``)."""
    return evaluate_cost(contract, symbols_for(contract, inputs, params), calibration)
