"""Read an FKC contract document into typed ``Contract`` values.

A document is markdown: an optional tool line, YAML front matter between ``---``
lines, then prose with one fenced ```` ```fkc ```` YAML block per kernel. YAML is read
with ``yaml.safe_load`` only, so tags such as ``!!python/object`` are refused. Every
problem raises ``ContractError`` naming the file, the block and the field.
"""
from __future__ import annotations

import re
from pathlib import Path
from types import MappingProxyType
from typing import Any, NoReturn

import yaml

from zyx.contracts.spec import cost as costexpr
from zyx.contracts.spec.model import (
    CONTIGUOUS_VALUES,
    DETERMINISMS,
    LAYOUT_FACTS,
    LAYOUT_VALUES,
    MEMORY_TIERS,
    PROVENANCES,
    STRATEGIES,
    Caps,
    Contract,
    CostSpec,
    Document,
    InputSpec,
    LayoutSpec,
    OutputSpec,
    ParamSpec,
    Precision,
    Provider,
    Rank,
)
from zyx.dtype import DType, from_fkc
from zyx.errors import ContractError, DTypeError

_FENCE_OPEN = re.compile(r"^```fkc\s*$")
_FENCE_CLOSE = re.compile(r"^```\s*$")
_KERNEL_LINE = re.compile(r"^kernel:\s*['\"]?([^\s'\"#]+)", re.MULTILINE)
_RANK_RANGE = re.compile(r"^(\d+)\.\.=(\d+)$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _Where:
    """Error context: the file and the block (or front matter) being read."""

    def __init__(self, source: str, block: str) -> None:
        self.source, self.block = source, block

    def fail(self, path: str, problem: str) -> NoReturn:
        raise ContractError(f"{self.source}: {self.block}: {path}: {problem}")

    # ---- typed field access
    def get(self, m: dict, key: str, path: str, required: bool = True, default: Any = None) -> Any:
        value = m.get(key)
        if value is None:
            if required:
                self.fail(_join(path, key), "missing required field")
            return default
        return value

    def text(self, m: dict, key: str, path: str, required: bool = True, default: str = "") -> str:
        v = self.get(m, key, path, required, default)
        if v is None:
            return default
        if not isinstance(v, str) or (required and not v.strip()):
            self.fail(_join(path, key), f"expected a non-empty string, got {v!r}")
        return v

    def flag(self, m: dict, key: str, path: str, required: bool = False, default: bool = False) -> bool:
        v = self.get(m, key, path, required, default)
        if not isinstance(v, bool):
            self.fail(_join(path, key), f"expected true or false, got {v!r}")
        return v

    def mapping(self, m: dict, key: str, path: str, required: bool = True) -> dict:
        v = self.get(m, key, path, required, {})
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.fail(_join(path, key), f"expected a mapping, got {type(v).__name__}")
        return v

    def number(self, m: dict, key: str, path: str) -> float | None:
        v = m.get(key)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            self.fail(_join(path, key), f"expected a number or ~, got {v!r}")
        return v

    def choice(self, value: Any, allowed: tuple[str, ...], path: str) -> str:
        if value not in allowed:
            self.fail(path, f"{value!r} is not one of {', '.join(allowed)}")
        return value


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


# ---------------------------------------------------------------- pieces


def _dtypes(where: _Where, value: Any, path: str) -> tuple[DType, ...]:
    if not isinstance(value, list) or not value:
        where.fail(path, f"expected a non-empty list of dtype tokens, got {value!r}")
    out: list[DType] = []
    for token in value:
        try:
            d = from_fkc(token) if isinstance(token, str) else None
        except DTypeError:
            d = None
        if d is None:
            where.fail(path, f"unknown dtype token {token!r}")
        if d in out:
            where.fail(path, f"dtype token {token!r} listed twice")
        out.append(d)
    return tuple(out)


def _rank(where: _Where, value: Any, path: str) -> Rank:
    if value is None or value == "any":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return (value, value)
    if isinstance(value, str):
        m = _RANK_RANGE.match(value.strip())
        if m and int(m.group(1)) <= int(m.group(2)):
            return (int(m.group(1)), int(m.group(2)))
    where.fail(path, f"bad rank {value!r}; expected any, an int >= 0 or \"lo..=hi\" with lo <= hi")


def _layout(where: _Where, value: Any, path: str) -> LayoutSpec:
    if not isinstance(value, dict):
        where.fail(path, f"expected a mapping of layout facts, got {value!r}")
    kwargs: dict[str, Any] = {}
    for key, v in value.items():
        if key == "awkward_layout_strategy":
            kwargs["strategy"] = None if v is None else where.choice(v, STRATEGIES, f"{path}.{key}")
        elif key == "contiguous":
            kwargs[key] = where.choice(v, CONTIGUOUS_VALUES, f"{path}.{key}")
        elif key in LAYOUT_FACTS:
            kwargs[key] = where.choice(v, LAYOUT_VALUES, f"{path}.{key}")
        else:
            where.fail(f"{path}.{key}",
                       f"unknown layout fact; known: {', '.join(LAYOUT_FACTS)}, awkward_layout_strategy")
    missing = [k for k in LAYOUT_FACTS if k not in kwargs]
    if missing:
        where.fail(path, f"missing layout facts: {', '.join(missing)}")
    return LayoutSpec(**kwargs)


def _input(where: _Where, value: Any, path: str, last: bool) -> InputSpec:
    if not isinstance(value, dict):
        where.fail(path, "expected a mapping describing the input")
    name = where.text(value, "name", path)
    variadic = where.flag(value, "variadic", path)
    if variadic and not last:
        where.fail(f"{path}.variadic", "only the last input may be variadic")
    min_count = where.get(value, "min_count", path, required=False, default=1)
    if isinstance(min_count, bool) or not isinstance(min_count, int) or min_count < 0:
        where.fail(f"{path}.min_count", f"expected an int >= 0, got {min_count!r}")
    return InputSpec(
        name=name,
        dtypes=_dtypes(where, value.get("dtypes"), f"{path}.dtypes"),
        layout=_layout(where, where.get(value, "layout", path), f"{path}.layout"),
        rank=_rank(where, value.get("rank", "any"), f"{path}.rank"),
        variadic=variadic,
        min_count=min_count if variadic else 1,
        shape_constraint=where.text(value, "shape_constraint", path, required=False),
    )


def _params(where: _Where, value: Any, path: str) -> tuple[str, dict[str, ParamSpec]]:
    if value is None:
        return "", {}
    if not isinstance(value, dict):
        where.fail(path, f"expected a mapping with variant and fields, got {value!r}")
    variant = value.get("variant")
    variant = "" if variant in (None, "None") else str(variant)
    fields = value.get("fields") or {}
    if not isinstance(fields, dict):
        where.fail(f"{path}.fields", "expected a mapping of param name to spec")
    out: dict[str, ParamSpec] = {}
    for name, spec in fields.items():
        fpath = f"{path}.fields.{name}"
        if not isinstance(name, str) or not _IDENT.match(name):
            where.fail(fpath, "param names must be identifiers")
        if not isinstance(spec, dict):
            where.fail(fpath, f"expected a mapping with at least kind, got {spec!r}")
        dtypes = _dtypes(where, spec["dtypes"], f"{fpath}.dtypes") if "dtypes" in spec else ()
        out[name] = ParamSpec(
            name=name,
            kind=where.text(spec, "kind", fpath),
            constraint=where.text(spec, "constraint", fpath, required=False),
            optional=where.flag(spec, "optional", fpath),
            default=spec.get("default"),
            dtypes=dtypes,
            note=where.text(spec, "note", fpath, required=False),
        )
    return variant, out


def _output(where: _Where, value: Any, path: str) -> OutputSpec:
    if not isinstance(value, dict):
        where.fail(path, "expected a mapping describing the output")
    return OutputSpec(
        name=where.text(value, "name", path),
        dtype_rule=where.text(value, "dtype_rule", path),
        shape_rule=where.text(value, "shape_rule", path),
        layout_guarantee=where.text(value, "layout_guarantee", path, required=False, default="contiguous"),
        aliasing=where.text(value, "aliasing", path, required=False, default="none"),
    )


def _caps(where: _Where, value: dict) -> Caps:
    fast = value.get("fast_paths") or []
    if not isinstance(fast, list):
        where.fail("caps.fast_paths", "expected a list")
    texts = []
    for i, fp in enumerate(fast):
        if not isinstance(fp, dict):
            where.fail(f"caps.fast_paths[{i}]", "expected a mapping with when/note")
        texts.append("; ".join(str(fp[k]) for k in ("when", "note") if fp.get(k)))
    for key in ("alignment_bytes", "access_granularity_bits"):
        where.number(value, key, "caps")
    return Caps(
        awkward_layout_strategy=where.choice(
            where.get(value, "awkward_layout_strategy", "caps"), STRATEGIES, "caps.awkward_layout_strategy"),
        in_place=where.flag(value, "in_place", "caps"),
        fast_paths=tuple(texts),
        alignment_bytes=value.get("alignment_bytes"),
        access_granularity_bits=value.get("access_granularity_bits"),
    )


def _expr(where: _Where, value: Any, path: str, allowed: frozenset[str]) -> str:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        where.fail(path, f"expected an expression string, got {value!r}")
    try:
        names = costexpr.expr_names(value)
    except costexpr.ExpressionError as exc:
        where.fail(path, str(exc))
    unknown = sorted(names - allowed)
    if unknown:
        where.fail(path, f"unknown cost symbol {unknown[0]!r} in {value!r}; declared: {', '.join(sorted(allowed))}")
    return value


def _cost(where: _Where, value: dict, symbols: frozenset[str]) -> CostSpec:
    extra = value.get("symbols") or []
    if not isinstance(extra, list) or not all(isinstance(s, str) and _IDENT.match(s) for s in extra):
        where.fail("cost.symbols", f"expected a list of identifiers, got {extra!r}")
    allowed = symbols | frozenset(extra)
    if any(s in costexpr.RESERVED for s in extra):
        where.fail("cost.symbols", f"symbols must be identifiers other than {', '.join(sorted(costexpr.RESERVED))}")
    memory = value.get("memory") or {}
    if not isinstance(memory, dict):
        where.fail("cost.memory", "expected a mapping of tier to expression")
    tiers = []
    for tier, expr in memory.items():
        if tier not in MEMORY_TIERS:
            where.fail(f"cost.memory.{tier}", f"unknown memory tier; known: {', '.join(MEMORY_TIERS)}")
        tiers.append((tier, _expr(where, expr, f"cost.memory.{tier}", allowed)))
    cls = value.get("class", "")
    bytes_moved = _expr(where, where.get(value, "bytes_moved", "cost"), "cost.bytes_moved", allowed)
    flops = _expr(where, where.get(value, "flops", "cost"), "cost.flops", allowed)
    used = [s for e in (bytes_moved, flops, *(e for _, e in tiers)) for s in costexpr.expr_symbols(e)]
    takes = tuple(dict.fromkeys(used + list(extra)))
    return CostSpec(
        provenance=where.choice(where.get(value, "provenance", "cost"), PROVENANCES, "cost.provenance"),
        flops=flops,
        bytes_moved=bytes_moved,
        cost_class=cls if isinstance(cls, str) else where.fail("cost.class", f"expected a string, got {cls!r}"),
        overhead_ns=where.number(value, "overhead_ns", "cost"),
        memory=tuple(tiers),
        symbols=takes,
        optional=tuple(s for s in takes if s not in used),
    )


def _precision(where: _Where, value: dict) -> Precision:
    for key in ("max_ulp", "max_relative", "max_absolute"):
        where.number(value, key, "precision")
    acc = value.get("accumulate")
    acc_dtype = _dtypes(where, [acc], "precision.accumulate")[0] if acc is not None else None
    return Precision(
        bit_stable_on_same_hardware=where.flag(value, "bit_stable_on_same_hardware", "precision", required=True),
        audited=where.flag(value, "audited", "precision"),
        max_ulp=value.get("max_ulp"),
        max_relative=value.get("max_relative"),
        max_absolute=value.get("max_absolute"),
        accumulate=acc_dtype,
        notes=where.text(value, "notes", "precision", required=False),
    )


def _arms(where: _Where, value: Any, params: dict[str, ParamSpec]) -> dict[str, dict[str, Any]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        where.fail("arms", "expected a mapping of op kind to fixed params")
    out = {}
    for kind, fixed in value.items():
        if not isinstance(fixed, dict):
            where.fail(f"arms.{kind}", "expected a mapping of param name to value")
        for pname in fixed:
            if pname not in params:
                where.fail(f"arms.{kind}.{pname}", "not an op param of this kernel")
        out[str(kind)] = MappingProxyType(dict(fixed))
    return out


# ---------------------------------------------------------------- blocks


def _contract(where: _Where, block: Any, provider: Provider, symbols: frozenset[str]) -> Contract:
    if not isinstance(block, dict):
        where.fail("block", f"expected a YAML mapping, got {type(block).__name__}")
    name = where.text(block, "kernel", "")
    if not _IDENT.match(name):
        where.fail("kernel", f"kernel name {name!r} is not an identifier")
    accept = where.mapping(block, "accept", "")
    inputs_raw = where.get(accept, "inputs", "accept")
    if not isinstance(inputs_raw, list) or not inputs_raw:
        where.fail("accept.inputs", "expected a non-empty list of inputs")
    inputs = tuple(
        _input(where, raw, f"accept.inputs[{i}]", i == len(inputs_raw) - 1) for i, raw in enumerate(inputs_raw))
    names = [i.name for i in inputs]
    if len(set(names)) != len(names):
        where.fail("accept.inputs", f"input names repeat: {names}")
    variant, params = _params(where, accept.get("op_params"), "accept.op_params")
    ret = where.mapping(block, "return", "")
    outputs_raw = where.get(ret, "outputs", "return")
    if not isinstance(outputs_raw, list) or not outputs_raw:
        where.fail("return.outputs", "expected a non-empty list of outputs")
    outputs = tuple(_output(where, raw, f"return.outputs[{i}]") for i, raw in enumerate(outputs_raw))
    caps = _caps(where, where.mapping(block, "caps", ""))
    aliased = any(o.aliasing.startswith("in_place(") for o in outputs)
    if aliased != caps.in_place:
        where.fail("caps.in_place", f"is {caps.in_place} but outputs {'do' if aliased else 'do not'} alias an input")
    precision = _precision(where, where.mapping(block, "precision", ""))
    determinism = where.choice(where.get(block, "determinism", ""), DETERMINISMS, "determinism")
    if (determinism == "nondeterministic") == precision.bit_stable_on_same_hardware:
        where.fail("determinism", f"{determinism!r} contradicts precision.bit_stable_on_same_hardware = "
                                  f"{precision.bit_stable_on_same_hardware}")
    return Contract(
        name=name,
        op_kind=where.text(block, "op_kind", ""),
        blurb=where.text(block, "blurb", ""),
        inputs=inputs,
        params=MappingProxyType(params),
        outputs=outputs,
        caps=caps,
        cost_spec=_cost(where, where.mapping(block, "cost", ""),
                        symbols | frozenset(params) | {costexpr.count_symbol(i.name) for i in inputs}),
        precision=precision,
        determinism=determinism,
        registrable=where.flag(block, "registrable", "", default=True),
        backend=where.text(block, "backend", "", required=False, default=provider.backend),
        kernel_source=where.text(block, "kernel_source", "", required=False, default=provider.kernel_source),
        entry_point=where.text(block, "entry_point", "", required=False, default=name),
        variant=variant,
        arms=MappingProxyType(_arms(where, block.get("arms"), params)),
        notes=where.text(block, "notes", "", required=False),
        source=where.source,
        raw=MappingProxyType(block),
    )


def _load_yaml(where: _Where, text: str, line0: int) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        at = f" (line {line0 + mark.line + 1})" if mark is not None else ""
        where.fail("yaml", f"{problem}{at}")


def _split(source: str, text: str) -> tuple[str, str, int, list[tuple[int, str]]]:
    """(tool line, front matter text, its first line, [(first line, block text)])."""
    lines = text.splitlines()
    i = 0
    while i < len(lines) and not lines[i].strip():
        i += 1
    tool = ""
    if i < len(lines) and lines[i].strip() != "---":
        tool = lines[i].strip()
        i += 1
        while i < len(lines) and not lines[i].strip():
            i += 1
    if i >= len(lines) or lines[i].strip() != "---":
        raise ContractError(f"{source}: front matter: missing; expected a '---' line before the document body")
    try:
        end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "---")
    except StopIteration:
        raise ContractError(f"{source}: front matter: not closed by a '---' line") from None
    front, front_line = "\n".join(lines[i + 1:end]), i + 2
    blocks: list[tuple[int, str]] = []
    j = end + 1
    while j < len(lines):
        if _FENCE_OPEN.match(lines[j]):
            k = j + 1
            while k < len(lines) and not _FENCE_CLOSE.match(lines[k]):
                k += 1
            if k >= len(lines):
                raise ContractError(f"{source}: block #{len(blocks)} (line {j + 1}): fence: ```fkc block is not closed")
            blocks.append((j + 2, "\n".join(lines[j + 1:k])))
            j = k
        j += 1
    return tool, front, front_line, blocks


def _provider(where: _Where, front: Any) -> tuple[int, Provider, dict[str, str]]:
    if not isinstance(front, dict):
        where.fail("yaml", "front matter must be a YAML mapping")
    version = where.get(front, "fkc_version", "")
    if version != 1:
        where.fail("fkc_version", f"unsupported version {version!r}; this reader knows 1")
    p = where.mapping(front, "provider", "")
    provider = Provider(
        name=where.text(p, "name", "provider"),
        backend=where.text(p, "backend", "provider"),
        kernel_source=where.text(p, "kernel_source", "provider"),
        templates=where.text(p, "templates", "provider", required=False),
        revision_base=str(p.get("revision_base") or ""),
    )
    symbols = where.mapping(front, "cost_symbols", "", required=False)
    for sym in symbols:
        if not isinstance(sym, str) or not _IDENT.match(sym) or sym in costexpr.RESERVED:
            where.fail(f"cost_symbols.{sym}",
                       f"cost symbols must be identifiers other than {', '.join(sorted(costexpr.RESERVED))}")
    return version, provider, {str(k): str(v) for k, v in symbols.items()}


def parse_document(text: str, source: str = "<string>") -> Document:
    """Parse a contract document; ``source`` names it in error messages."""
    tool, front_text, front_line, blocks = _split(source, text)
    fm = _Where(source, "front matter")
    version, provider, symbols = _provider(fm, _load_yaml(fm, front_text, front_line - 1))
    if not blocks:
        raise ContractError(f"{source}: document: no ```fkc blocks found")
    contracts: list[Contract] = []
    seen: set[str] = set()
    for index, (line, body) in enumerate(blocks):
        m = _KERNEL_LINE.search(body)
        label = f"block '{m.group(1)}'" if m else f"block #{index} (line {line})"
        where = _Where(source, label)
        contract = _contract(where, _load_yaml(where, body, line - 1), provider, frozenset(symbols))
        if contract.name in seen:
            where.fail("kernel", f"kernel {contract.name!r} is declared twice in this document")
        seen.add(contract.name)
        contracts.append(contract)
    return Document(source, version, provider, tuple(contracts), MappingProxyType(symbols), tool)


def parse_file(path: str | Path) -> Document:
    """Parse the contract document at ``path`` (errors name its file name)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"{path.name}: cannot read contract document: {exc}") from None
    return parse_document(text, path.name)
