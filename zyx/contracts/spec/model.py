"""Typed, immutable values for FKC kernel contracts (DESIGN.md, "Contracts (FKC)").

``parse.py`` builds these from a contract document; ``validate.py`` checks concrete
arguments against them; ``cost.py`` is the cost expression language (and owns ``Cost``,
``Calibration`` and ``Fit``), which ``Contract.cost`` evaluates; ``symbols.py`` derives a call's
cost symbols.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Optional

from zyx.contracts.spec.cost import Calibration, Cost, evaluate, expr_symbols, is_number, predict_seconds
from zyx.dtype import DType
from zyx.errors import ContractError

# Vocabularies (the values a document may use; parse.py rejects anything else).
LAYOUT_FACTS: tuple[str, ...] = ("contiguous", "strided", "broadcast_stride0", "start_offset", "reverse_strides")
CONTIGUOUS_VALUES: tuple[str, ...] = ("required", "accepted", "n/a")
LAYOUT_VALUES: tuple[str, ...] = ("accepted", "rejected")
STRATEGIES: tuple[str, ...] = ("requires_contiguous", "handles_strided", "contiguize_internally")
PROVENANCES: tuple[str, ...] = ("declared", "judge_measured")
DETERMINISMS: tuple[str, ...] = ("bitwise", "same_hardware_bitwise", "nondeterministic")
MEMORY_TIERS: tuple[str, ...] = ("device_bytes", "host_bytes", "disk_bytes")

Rank = Optional[tuple[int, int]]  # (min, max) inclusive; None means any rank


@dataclass(frozen=True)
class LayoutSpec:
    """The five FKC layout facts of one input, plus an optional per-operand strategy."""

    contiguous: str = "required"
    strided: str = "rejected"
    broadcast_stride0: str = "rejected"
    start_offset: str = "rejected"
    reverse_strides: str = "rejected"
    strategy: str | None = None  # None: inherit caps.awkward_layout_strategy


@dataclass(frozen=True)
class InputSpec:
    """One accepted input operand: dtypes, layout, rank and shape constraint text."""

    name: str
    dtypes: tuple[DType, ...]
    layout: LayoutSpec
    rank: Rank = None
    variadic: bool = False
    min_count: int = 1
    shape_constraint: str = ""

    def rank_text(self) -> str:
        """The rank rule as the document spells it (``any``, ``2``, ``1..=8``)."""
        if self.rank is None:
            return "any"
        lo, hi = self.rank
        return str(lo) if lo == hi else f"{lo}..={hi}"


@dataclass(frozen=True)
class ParamSpec:
    """One op param: its kind, the constraint as written, and whether it may be omitted."""

    name: str
    kind: str
    constraint: str = ""
    optional: bool = False
    default: Any = None  # descriptive (text) for computed defaults; validate.py computes them
    dtypes: tuple[DType, ...] = ()  # for params that may be device tensors
    note: str = ""


@dataclass(frozen=True)
class OutputSpec:
    """One output: dtype/shape rules, layout guarantee and aliasing, as declared."""

    name: str
    dtype_rule: str
    shape_rule: str
    layout_guarantee: str = "contiguous"
    aliasing: str = "none"


@dataclass(frozen=True)
class Caps:
    """Capability facts (``caps:``)."""

    awkward_layout_strategy: str
    in_place: bool = False
    fast_paths: tuple[str, ...] = ()
    alignment_bytes: int | None = None
    access_granularity_bits: int | None = None


@dataclass(frozen=True)
class CostSpec:
    """The ``cost:`` clause: expression strings over cost symbols (see cost.py)."""

    provenance: str
    flops: str
    bytes_moved: str
    cost_class: str = ""
    overhead_ns: float | None = None
    memory: tuple[tuple[str, str], ...] = ()  # (tier, expression)
    # The cost symbols ``Contract.cost`` takes, in order of first use: every name the
    # expressions use, then the block's ``symbols:`` list; ``optional`` are those of the
    # list no expression uses (a caller may pass them, e.g. cumsum_f32's ``dtype_size``).
    symbols: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()

    def expressions(self) -> dict[str, str]:
        """Every expression of the clause keyed by its field path (``flops``, ``memory.host_bytes``)."""
        out = {"flops": self.flops, "bytes_moved": self.bytes_moved}
        out.update({f"memory.{tier}": expr for tier, expr in self.memory})
        return out


@dataclass(frozen=True)
class Precision:
    """The ``precision:`` clause; ``accumulate`` is the arithmetic dtype when it differs from I/O."""

    bit_stable_on_same_hardware: bool
    audited: bool = False
    max_ulp: float | None = None
    max_relative: float | None = None
    max_absolute: float | None = None
    accumulate: DType | None = None
    notes: str = ""


@dataclass(frozen=True)
class Operand:
    """What validation needs to know about one concrete tensor argument.

    The caller fills the layout facts: ``is_contiguous`` (dense row-major),
    ``has_offset`` (non-zero start in its buffer), ``is_broadcast`` (a stride-0 axis
    of extent > 1), ``has_negative_strides`` (a reversed axis).
    """

    dtype: DType
    shape: tuple[int, ...]
    is_contiguous: bool = True
    has_offset: bool = False
    is_broadcast: bool = False
    has_negative_strides: bool = False

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n


@dataclass(frozen=True, eq=False)
class Contract:
    """One kernel's contract as loaded from an ``fkc`` block.

    ``params`` keeps the document's field order (validation runs the checks in it).
    ``arms`` maps alternative op kinds served by this kernel to the params they fix
    (``Triu -> {upper: True}``). ``raw`` is the block as YAML loaded it.
    """

    name: str
    op_kind: str
    blurb: str
    inputs: tuple[InputSpec, ...]
    params: Mapping[str, ParamSpec]
    outputs: tuple[OutputSpec, ...]
    caps: Caps
    cost_spec: CostSpec
    precision: Precision
    determinism: str
    registrable: bool = True
    backend: str = ""
    kernel_source: str = ""
    entry_point: str = ""
    variant: str = ""
    arms: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: MappingProxyType({}))
    notes: str = ""
    source: str = ""  # the document's file name
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)

    @property
    def dtypes(self) -> tuple[DType, ...]:
        """The dtypes the first (data) input accepts; the dispatch key's dtype slot."""
        return self.inputs[0].dtypes

    @property
    def op_kinds(self) -> tuple[str, ...]:
        """Every op kind this contract serves: its own plus its arms."""
        return (self.op_kind, *self.arms)

    @property
    def in_place(self) -> bool:
        return self.caps.in_place

    def cost(self, calibration: Calibration | None = None, **params: Any) -> Cost:
        """Evaluate ``bytes_moved`` and ``flops`` for cost symbols ``params``.

        ``params`` are exactly the symbols of ``cost_spec.symbols`` (the FKC reference's:
        ``flip.cost(outer=2, dim_size=3, inner=4, dtype_size=4)``); an unknown or missing
        one raises ``ContractError`` naming this contract and the symbol.

        ``predicted_s`` comes from the device fit ``calibration`` and is None without one
        (``zyx.contracts.calibrate.cost`` looks up the stored fit of a device).
        """
        spec = self.cost_spec
        self.check_cost_symbols(params, expr_symbols(spec.bytes_moved) + expr_symbols(spec.flops))
        bytes_moved = evaluate(spec.bytes_moved, params, f"{self.name}: cost.bytes_moved")
        flops = evaluate(spec.flops, params, f"{self.name}: cost.flops")
        predicted = predict_seconds(bytes_moved, flops, calibration) if calibration is not None else None
        return Cost(bytes_moved, flops, predicted)

    def memory(self, **params: Any) -> dict[str, float]:
        """Evaluate each ``memory`` tier expression for cost symbols ``params``."""
        self.check_cost_symbols(params, [s for _, expr in self.cost_spec.memory for s in expr_symbols(expr)])
        return {
            tier: evaluate(expr, params, f"{self.name}: cost.memory.{tier}")
            for tier, expr in self.cost_spec.memory
        }

    def check_cost_symbols(self, params: Mapping[str, Any], needed: Sequence[str]) -> None:
        """Refuse cost params that this contract does not take, and any of ``needed`` left out.

        A ``dtype_size`` (``dtype_bytes``) must be the width of a dtype the contract accepts,
        so a fixed-width kernel (cumsum_f32: 4) cannot be priced for another width.
        """
        name = self.name
        takes = self.cost_spec.symbols
        unknown = [k for k in params if k not in takes]
        if unknown:
            raise ContractError(f"{name}: unknown cost symbol {unknown[0]!r}; {name}'s cost takes {self._takes()}")
        missing = [k for k in needed if k not in params]
        if missing:
            given = ", ".join(params) or "nothing"
            raise ContractError(f"{name}: missing cost symbol {missing[0]!r}; {name}'s cost takes {self._takes()}; "
                                f"given: {given}")
        for key in ("dtype_size", "dtype_bytes"):
            if key in params:
                widths = sorted({d.itemsize for d in self.dtypes})
                value = params[key]
                if not is_number(value) or value not in widths:
                    raise ContractError(f"{name}: cost symbol {key} = {value!r} is not the width of a dtype {name} "
                                        f"accepts ({', '.join(map(str, widths))})")

    def _takes(self) -> str:
        """``outer, dim_size, inner, dtype_size`` (plus what may be given besides) for error messages."""
        spec = self.cost_spec
        used = [s for s in spec.symbols if s not in spec.optional]
        text = ", ".join(used) or "no symbols"
        return text + (f" (optional: {', '.join(spec.optional)})" if spec.optional else "")

    def __repr__(self) -> str:
        names = ",".join(d.name for d in self.dtypes)
        return f"<Contract {self.name} op_kind={self.op_kind} dtypes=[{names}]>"


@dataclass(frozen=True)
class Provider:
    """The document's front matter: who provides the kernels and where their sources live."""

    name: str
    backend: str
    kernel_source: str
    templates: str = ""
    revision_base: str = ""


@dataclass(frozen=True, eq=False)
class Document:
    """A parsed contract document: front matter, declared cost symbols and its contracts."""

    source: str
    fkc_version: int
    provider: Provider
    contracts: tuple[Contract, ...]
    cost_symbols: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    tool: str = ""  # the optional line before the front matter
