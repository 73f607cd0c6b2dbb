"""Cost expressions of FKC contracts: a small safe arithmetic language and its evaluation.

Grammar (everything else is rejected; nothing is ever passed to ``eval``)::

    expr   := term (("+" | "-") term)*
    term   := unary (("*" | "/" | "//") unary)*
    unary  := ("-" | "+") unary | atom
    atom   := NUMBER | NAME | NAME ".n" | "(" expr ")"
            | ("min" | "max") "(" expr ("," expr)* ")" | "sum" "(" NAME ")"

NUMBER is a non-negative int or float literal, NAME a Python identifier naming a cost
symbol (``outer``, ``dtype_size``, ...). The symbols are the FKC reference contracts' own:
``source.n`` is the element count of input ``source`` (passed as the keyword
``source_n``), and ``sum(input_dim_sizes)`` sums a list-valued symbol. ``/`` is true
division, ``//`` floor division. Expressions are parsed with the ``ast`` module and every
node is checked against a whitelist.
"""
from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, NamedTuple, Protocol

from zyx.errors import ContractError

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
}
_FUNCS: dict[str, Callable[..., Any]] = {"min": min, "max": max}
_LIST_FUNCS: dict[str, Callable[[Sequence[Any]], Any]] = {"sum": sum}  # take one list-valued symbol
#: Names that cannot be cost symbols.
RESERVED = frozenset(_FUNCS) | frozenset(_LIST_FUNCS) | {"calibration"}
_COUNT = "n"  # the one attribute: <input>.n, that input's element count


def count_symbol(operand: str) -> str:
    """The keyword that carries ``<operand>.n`` (``source.n`` -> ``source_n``)."""
    return f"{operand}_{_COUNT}"


class ExpressionError(ContractError):
    """A cost expression outside the grammar (parse.py adds file/block/field context)."""


def is_number(value: Any) -> bool:
    """An int or float that is not a bool (what a cost symbol's value must be)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_name(name: str, text: str) -> None:
    if name in RESERVED:
        raise ExpressionError(f"{name!r} is reserved and cannot be a symbol in {text!r}")


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
        _check_name(node.id, text)
    elif isinstance(node, ast.Attribute):
        if not isinstance(node.value, ast.Name) or node.attr != _COUNT:
            raise ExpressionError(f"attribute {ast.unparse(node)!r} is not allowed in {text!r}; the only one is "
                                  f"<input>.{_COUNT} (that input's element count)")
        _check_name(node.value.id, text)
    elif isinstance(node, ast.Call):
        fname = node.func.id if isinstance(node.func, ast.Name) else None
        if fname in _LIST_FUNCS:
            if node.keywords or len(node.args) != 1 or not isinstance(node.args[0], ast.Name):
                raise ExpressionError(f"{fname}(...) takes exactly one list-valued symbol in {text!r}")
            _check_name(node.args[0].id, text)
            return
        if fname not in _FUNCS or node.keywords or not node.args:
            raise ExpressionError(f"only min(...) and max(...) with positional arguments, and sum(<list symbol>), "
                                  f"may be called in {text!r}")
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


@lru_cache(maxsize=512)
def expr_symbols(text: str) -> tuple[str, ...]:
    """The symbols a cost expression uses, in order of first appearance (``source.n`` as
    ``source_n``; ``min``/``max``/``sum`` excluded)."""
    tree = compile_expr(text)
    skip = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    skip |= {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in skip:
            found.append((node.col_offset, node.id))
        elif isinstance(node, ast.Attribute):
            found.append((node.col_offset, count_symbol(node.value.id)))
    return tuple(dict.fromkeys(name for _, name in sorted(found)))


def expr_names(text: str) -> frozenset[str]:
    """The symbol names a cost expression uses (``min``/``max``/``sum`` excluded)."""
    return frozenset(expr_symbols(text))


def _lookup(name: str, values: Mapping[str, Any], text: str, where: str) -> Any:
    if name not in values:
        given = ", ".join(sorted(values)) or "nothing"
        raise ContractError(f"{where} {text!r}: unknown name {name!r} (pass it as a cost param); given: {given}")
    return values[name]


def _eval(node: ast.AST, values: Mapping[str, Any], text: str, where: str) -> Any:
    if isinstance(node, ast.Expression):
        return _eval(node.body, values, text, where)
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = node.id if isinstance(node, ast.Name) else count_symbol(node.value.id)  # type: ignore[attr-defined]
        value = _lookup(name, values, text, where)
        if isinstance(value, (list, tuple)):
            raise ContractError(f"{where} {text!r}: {name} = {value!r} is a list; only sum({name}) may use it")
        if not is_number(value):
            raise ContractError(f"{where} {text!r}: {name} = {value!r} is not a number")
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
        fname = node.func.id  # type: ignore[attr-defined]
        if fname in _LIST_FUNCS:
            name = node.args[0].id  # type: ignore[attr-defined]
            items = _lookup(name, values, text, where)
            if not isinstance(items, (list, tuple)) or not all(is_number(v) for v in items):
                raise ContractError(f"{where} {text!r}: {name} = {items!r} is not a list of numbers")
            return _LIST_FUNCS[fname](items)
        args = [_eval(a, values, text, where) for a in node.args]
        return _FUNCS[fname](*args)
    raise ContractError(f"{where} {text!r}: cannot evaluate {type(node).__name__}")  # unreachable after compile


def evaluate(text: str, values: Mapping[str, Any], where: str = "cost") -> Any:
    """Evaluate a cost expression with symbol ``values``; ``where`` prefixes error messages."""
    try:
        tree = compile_expr(text)
    except ExpressionError as exc:
        raise ContractError(f"{where}: {exc}") from None
    return _eval(tree, values, text, where)


# ---------------------------------------------------------------- calibration


class Cost(NamedTuple):
    """A kernel's cost for concrete params; ``predicted_s`` is None without a calibration."""

    bytes_moved: float
    flops: float
    predicted_s: float | None = None


class Calibration(Protocol):
    """A device fit ``time = overhead_s + bytes / bytes_per_s (+ flops / flops_per_s)``."""

    overhead_s: float
    bytes_per_s: float
    flops_per_s: float | None


@dataclass(frozen=True)
class Fit:
    """A concrete ``Calibration`` (what ``zyx tune --contracts`` stores per device and kernel)."""

    overhead_s: float
    bytes_per_s: float
    flops_per_s: float | None = None


def predict_seconds(bytes_moved: float, flops: float, calibration: Calibration) -> float:
    """``overhead_s + bytes_moved / bytes_per_s (+ flops / flops_per_s)`` for one fit."""
    if not calibration.bytes_per_s or calibration.bytes_per_s <= 0:
        raise ContractError(f"calibration bytes_per_s must be > 0, got {calibration.bytes_per_s!r}")
    seconds = calibration.overhead_s + bytes_moved / calibration.bytes_per_s
    rate = getattr(calibration, "flops_per_s", None)
    if rate and flops:
        seconds += flops / rate
    return seconds
