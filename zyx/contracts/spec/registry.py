"""The loaded contracts: every ``*.md`` document shipped in ``zyx/contracts/docs/``.

Documents are read once, on first use, through ``importlib.resources`` (so an installed
wheel works), and indexed by kernel name and by dispatch key ``(op_kind, dtype)``.
"""
from __future__ import annotations

import threading
from collections.abc import Iterable
from importlib import resources
from typing import Any

from zyx.contracts.spec.model import Contract, Document
from zyx.contracts.spec.parse import parse_document
from zyx.dtype import DType, to_dtype
from zyx.errors import ContractError, DTypeError

DOCS_PACKAGE = "zyx.contracts"
DOCS_FOLDER = "docs"


class Registry:
    """Contracts from a set of documents, keyed by name and by ``(op_kind, dtype)``."""

    def __init__(self, documents: Iterable[Document]) -> None:
        self.documents: tuple[Document, ...] = tuple(documents)
        self._by_name: dict[str, Contract] = {}
        self._by_key: dict[tuple[str, DType], Contract] = {}
        for doc in self.documents:
            for c in doc.contracts:
                if c.name in self._by_name:
                    other = self._by_name[c.name].source
                    raise ContractError(f"{doc.source}: block '{c.name}': kernel: already declared in {other}")
                self._by_name[c.name] = c
                if c.registrable:
                    self._index(c)

    def _index(self, c: Contract) -> None:
        for kind in c.op_kinds:
            for d in c.dtypes:
                clash = self._by_key.get((kind, d))
                if clash is not None:
                    raise ContractError(f"{c.source}: block '{c.name}': accept.inputs[0].dtypes: "
                                        f"({kind}, {d.fkc}) is already served by '{clash.name}'")
                self._by_key[(kind, d)] = c

    @classmethod
    def from_package(cls, package: str = DOCS_PACKAGE, folder: str = DOCS_FOLDER) -> Registry:
        """Load every ``*.md`` under ``package/folder`` (sorted by file name)."""
        root = resources.files(package).joinpath(folder)
        entries = sorted((e for e in root.iterdir() if e.name.endswith(".md") and e.is_file()), key=lambda e: e.name)
        return cls(parse_document(e.read_text(encoding="utf-8"), e.name) for e in entries)

    def get(self, name: str) -> Contract:
        """The contract of kernel ``name``."""
        try:
            return self._by_name[name]
        except KeyError:
            known = ", ".join(sorted(self._by_name))
            raise ContractError(f"no contract named {name!r}; known: {known}") from None

    def all(self) -> list[Contract]:
        """Every contract, in document order."""
        return list(self._by_name.values())

    def op_kinds(self) -> list[str]:
        """Every op kind some registrable contract serves."""
        return sorted({kind for kind, _ in self._by_key})

    def lookup(self, op_kind: str, dtype: Any) -> Contract:
        """The registrable contract serving ``op_kind`` for data dtype ``dtype``."""
        try:
            d = to_dtype(dtype)
        except DTypeError as exc:
            raise ContractError(f"{op_kind}: {exc}") from None
        found = self._by_key.get((op_kind, d))
        if found is not None:
            return found
        serving = sorted({(dt.name, c.name) for (k, dt), c in self._by_key.items() if k == op_kind})
        if not serving:
            raise ContractError(f"no contract serves op kind {op_kind!r}; known: {', '.join(self.op_kinds())}")
        accepted = ", ".join(f"{n} ({c})" for n, c in serving)
        raise ContractError(f"{op_kind}: no contract accepts dtype {d.name}; accepted: {accepted}")


_lock = threading.Lock()
_default: Registry | None = None


def default_registry() -> Registry:
    """The registry of the shipped documents, loaded on first call."""
    global _default
    if _default is None:
        with _lock:
            if _default is None:
                _default = Registry.from_package()
    return _default


def reset() -> None:
    """Forget the loaded documents; the next use reads them again."""
    global _default
    with _lock:
        _default = None


def get(name: str) -> Contract:
    """The shipped contract of kernel ``name`` (``ContractError`` if there is none)."""
    return default_registry().get(name)


def all_contracts() -> list[Contract]:
    """Every shipped contract, in document order."""
    return default_registry().all()


def lookup(op_kind: str, dtype: Any) -> Contract:
    """The shipped contract for ``op_kind`` and data dtype ``dtype`` (``CumSum``, bf16 -> cumsum_bf16)."""
    return default_registry().lookup(op_kind, dtype)
