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
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol

from zyx.errors import ContractError

if TYPE_CHECKING:  # model.py imports this module (Contract.cost); the types only annotate here
    from zyx.contracts.spec.model import Contract, Operand

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


def _is_number(value: Any) -> bool:
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
        if not _is_number(value):
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
            if not isinstance(items, (list, tuple)) or not all(_is_number(v) for v in items):
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


def _takes(contract: Contract) -> str:
    """``outer, dim_size, inner, dtype_size`` (plus what may be given besides) for error messages."""
    spec = contract.cost_spec
    used = [s for s in spec.symbols if s not in spec.optional]
    text = ", ".join(used) or "no symbols"
    return text + (f" (optional: {', '.join(spec.optional)})" if spec.optional else "")


def check_symbols(contract: Contract, params: Mapping[str, Any], needed: Sequence[str]) -> None:
    """Refuse cost params that ``contract`` does not take, and any of ``needed`` left out.

    A ``dtype_size`` (``dtype_bytes``) must be the width of a dtype the contract accepts,
    so a fixed-width kernel (cumsum_f32: 4) cannot be priced for another width.
    """
    name = contract.name
    takes = contract.cost_spec.symbols
    unknown = [k for k in params if k not in takes]
    if unknown:
        raise ContractError(f"{name}: unknown cost symbol {unknown[0]!r}; {name}'s cost takes {_takes(contract)}")
    missing = [k for k in needed if k not in params]
    if missing:
        given = ", ".join(params) or "nothing"
        raise ContractError(f"{name}: missing cost symbol {missing[0]!r}; {name}'s cost takes {_takes(contract)}; "
                            f"given: {given}")
    for key in ("dtype_size", "dtype_bytes"):
        if key in params:
            widths = sorted({d.itemsize for d in contract.dtypes})
            value = params[key]
            if not _is_number(value) or value not in widths:
                raise ContractError(f"{name}: cost symbol {key} = {value!r} is not the width of a dtype {name} "
                                    f"accepts ({', '.join(map(str, widths))})")


def evaluate_cost(contract: Contract, params: Mapping[str, Any], calibration: Calibration | None = None) -> Cost:
    """``Cost(bytes_moved, flops, predicted_s)`` of ``contract`` for cost symbols ``params``."""
    spec = contract.cost_spec
    check_symbols(contract, params, expr_symbols(spec.bytes_moved) + expr_symbols(spec.flops))
    bytes_moved = evaluate(spec.bytes_moved, params, f"{contract.name}: cost.bytes_moved")
    flops = evaluate(spec.flops, params, f"{contract.name}: cost.flops")
    predicted = predict_seconds(bytes_moved, flops, calibration) if calibration is not None else None
    return Cost(bytes_moved, flops, predicted)


def evaluate_memory(contract: Contract, params: Mapping[str, Any]) -> dict[str, float]:
    """Each ``memory`` tier of ``contract`` evaluated for cost symbols ``params``."""
    check_symbols(contract, params, [s for _, expr in contract.cost_spec.memory for s in expr_symbols(expr)])
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


#: The cost symbols zyx derives from a call's operands and params (and ``<input>_n``
#: for each input, the document's ``<input>.n``); the names are the FKC reference's.
DERIVED_SYMBOLS: tuple[str, ...] = (
    "outer", "dim_size", "inner", "dtype_size", "dtype_bytes", "n",
    "batch_count", "rows", "cols", "outer_count", "input_dim_sizes", "inner_count",
)


def _fold(shape: tuple[int, ...], params: Mapping[str, Any]) -> tuple[int, int, int] | None:
    """``(outer, dim_size, inner)`` around ``dim``, ``axis`` or the first of flip's ``dims``
    (an empty ``dims``: ``(1, n, 1)``); None when the call names no axis."""
    dims = params.get("dims")
    if isinstance(dims, (tuple, list)):
        return _axis_split(shape, dims[0]) if dims else (1, _prod(shape), 1)
    axis = params.get("dim", params.get("axis"))
    return _axis_split(shape, axis) if isinstance(axis, int) and not isinstance(axis, bool) else None


def symbols_for(contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any]) -> dict[str, Any]:
    """The cost symbols ``contract`` takes, for one call with operands ``inputs`` and
    (validated) op params ``params``; op params that are cost symbols (roll's ``outer``,
    ``dim_size``, ``inner``) are taken as given.

    ``n`` is the element count of the output (the first input's), ``<input>_n`` that of
    each input, ``dtype_size`` (contiguize: ``dtype_bytes``) the first input's width;
    ``outer/dim_size/inner`` fold the first input at ``dim``, ``axis`` or the first of
    ``dims`` (no axis: ``outer = inner = 1``); concat's ``outer_count/inner_count`` fold it
    at ``dim`` and ``input_dim_sizes`` lists each input's extent there;
    ``batch_count/rows/cols`` split it at its last two axes.
    """
    first = inputs[0]
    variadic = bool(contract.inputs) and contract.inputs[0].variadic
    out: dict[str, Any] = {"n": first.numel, "dtype_size": first.dtype.itemsize, "dtype_bytes": first.dtype.itemsize}
    if variadic:
        out[count_symbol(contract.inputs[0].name)] = sum(op.numel for op in inputs)
    else:
        out.update((count_symbol(spec.name), op.numel) for spec, op in zip(contract.inputs, inputs))
    fold = _fold(first.shape, params)
    if fold is not None:
        out["outer"], out["dim_size"], out["inner"] = fold
    dim = params.get("dim")
    if variadic and first.shape and isinstance(dim, int) and not isinstance(dim, bool):
        a = dim % first.rank
        out["outer_count"], out["inner_count"] = _prod(first.shape[:a]), _prod(first.shape[a + 1:])
        out["input_dim_sizes"] = [op.shape[a] for op in inputs]
    if first.rank >= 2:
        out["rows"], out["cols"] = first.shape[-2], first.shape[-1]
        out["batch_count"] = _prod(first.shape[:-2])
    takes = contract.cost_spec.symbols
    for key, value in params.items():
        if key in takes and _is_number(value):
            out[key] = value
    return {k: out[k] for k in takes if k in out}


def cost_of_call(
    contract: Contract, inputs: Sequence[Operand], params: Mapping[str, Any],
    calibration: Calibration | None = None,
) -> Cost:
    """The cost of one concrete call (``symbols_for`` then ``Contract.cost``)."""
    return evaluate_cost(contract, symbols_for(contract, inputs, params), calibration)
