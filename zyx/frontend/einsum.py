"""``einsum`` and the small contractions built like it: ``outer``, ``dot``, ``bmm``, ``tensordot``.

``einsum`` parses the equation into labels per operand, takes repeated labels of one operand as a
diagonal (a strided view), sums labels nobody else needs, then contracts the operands left to right:
each pair becomes one ``matmul`` over ``(batch, kept-left, contracted) @ (batch, contracted,
kept-right)`` views, or a broadcast multiply when nothing is contracted. ``bij,bjk->bik`` is therefore
exactly ``matmul`` and ``ij->ji`` exactly a ``permute`` view. Gradients come by composition.
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.base import TensorBase
from zyx.frontend.reduce import matmul
from zyx.frontend.shape_ops import diagonal

_ELLIPSIS = "."


def _parse(equation: str, operands: Sequence[Any]) -> tuple[list[list[Any]], list[Any]]:
    """Labels per operand and of the output; an ellipsis becomes integer labels (one per dim it covers,
    right-aligned across operands, so they broadcast)."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(operands):
        raise ShapeError(f"einsum(): {equation!r} has {len(terms)} operand terms but {len(operands)} operands "
                         "were given")
    ell = 0
    parsed: list[list[Any]] = []
    for n, (term, x) in enumerate(zip(terms, operands)):
        labels = _term_labels(equation, term, n)
        fixed = sum(1 for lab in labels if lab != _ELLIPSIS)
        if _ELLIPSIS in labels:
            k = x.ndim - fixed
            if k < 0:
                raise ShapeError(f"einsum(): operand {n} has rank {x.ndim}, fewer than the {fixed} labels of "
                                 f"{term!r}")
            ell = max(ell, k)
            at = labels.index(_ELLIPSIS)
            labels = labels[:at] + list(range(-k, 0)) + labels[at + 1:]
        elif fixed != x.ndim:
            raise ShapeError(f"einsum(): the term {term!r} of operand {n} has {fixed} labels but the operand "
                             f"has rank {x.ndim}")
        parsed.append(labels)
    if arrow:
        out = _term_labels(equation, rhs, None)
        if _ELLIPSIS in out:
            at = out.index(_ELLIPSIS)
            out = out[:at] + list(range(-ell, 0)) + out[at + 1:]
        letters = [lab for lab in out if isinstance(lab, str)]
        if len(set(letters)) != len(letters):
            raise ShapeError(f"einsum(): output subscript {rhs!r} repeats a label")
        seen = {lab for labels in parsed for lab in labels}
        for lab in letters:
            if lab not in seen:
                raise ShapeError(f"einsum(): output label {lab!r} does not appear in any operand term")
    else:  # implicit output: the ellipsis dims, then the labels used once, alphabetically
        counts: dict[str, int] = {}
        for labels in parsed:
            for lab in labels:
                if isinstance(lab, str):
                    counts[lab] = counts.get(lab, 0) + 1
        out = list(range(-ell, 0)) + sorted((lab for lab, c in counts.items() if c == 1),
                                            key=lambda s: (s.lower() != s, s))
    return parsed, out


def _term_labels(equation: str, term: str, n: int | None) -> list[Any]:
    labels: list[Any] = []
    i = 0
    where = "the output" if n is None else f"operand {n}"
    while i < len(term):
        if term.startswith("...", i):
            if _ELLIPSIS in labels:
                raise ShapeError(f"einsum(): more than one ellipsis in the term of {where} of {equation!r}")
            labels.append(_ELLIPSIS)
            i += 3
            continue
        c = term[i]
        if not (c.isascii() and c.isalpha()):
            raise ShapeError(f"einsum(): invalid subscript {c!r} in the term of {where} of {equation!r} "
                             "(expected letters a-z, A-Z and at most one '...')")
        labels.append(c)
        i += 1
    return labels


def _sublist_equation(args: tuple) -> tuple[str, tuple]:
    """PyTorch's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` as an equation string and operands:
    ints 0-51 name the letters a-z, A-Z and ``...`` (Ellipsis) the broadcast dims."""
    def term(sub: Any) -> str:
        if not isinstance(sub, (list, tuple)):
            raise ShapeError(f"einsum(): in the sublist form each operand is followed by a list of subscripts, "
                             f"got {type(sub).__name__}")
        out = ""
        for v in sub:
            if v is Ellipsis:
                out += "..."
            elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 52:
                out += chr(ord("a") + v) if v < 26 else chr(ord("A") + v - 26)
            else:
                raise ShapeError(f"einsum(): a sublist subscript must be an int in [0, 52) or ..., got {v!r}")
        return out

    pairs = len(args) // 2
    operands = tuple(args[2 * i] for i in range(pairs))
    equation = ",".join(term(args[2 * i + 1]) for i in range(pairs))
    if len(args) % 2:
        equation += "->" + term(args[-1])
    return equation, operands


def einsum(equation: str, *operands: Any) -> Any:
    """Einstein summation over ``operands`` (PyTorch's ``torch.einsum``: ellipsis, implicit output,
    repeated labels as diagonals, size-1 dims broadcasting; the operands may come as one list, and
    PyTorch's sublist form ``einsum(a, [0, 1], b, [1, 2], [0, 2])`` works too)."""
    if isinstance(equation, TensorBase):
        equation, operands = _sublist_equation((equation, *operands))
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        operands = tuple(operands[0])
    if not isinstance(equation, str):
        raise ShapeError(f"einsum(): the equation must be a string, got {type(equation).__name__}")
    if not operands:
        raise ShapeError("einsum(): expected at least one operand")
    for x in operands:
        if not isinstance(x, TensorBase):
            raise DTypeError(f"einsum(): operands must be tensors, got {type(x).__name__}")
    parsed, out_labels = _parse(equation, operands)
    sizes: dict[Any, int] = {}
    terms: list[tuple[Any, list[Any]]] = []
    for n, (x, labels) in enumerate(zip(operands, parsed)):
        x, labels = _diagonals(x, labels)
        for lab, s in zip(labels, x.shape):
            known = sizes.get(lab)
            if known is None or known == 1:
                sizes[lab] = s
            elif s not in (1, known):
                raise ShapeError(f"einsum(): subscript {_name(lab)} has size {s} for operand {n}, which does "
                                 f"not broadcast with the size {known} seen before")
        terms.append((x, labels))
    dt = functools.reduce(dtypes.result_type, operands[1:], operands[0].dtype)
    terms = [(x.cast(dt), labels) for x, labels in terms]
    # sum labels only one operand has and the output lacks (before any product)
    for i, (x, labels) in enumerate(terms):
        needed = set(out_labels)
        for j, (_, other) in enumerate(terms):
            if j != i:
                needed.update(other)
        terms[i] = _sum_out(x, labels, [lab for lab in labels if lab not in needed])
    x, labels = terms[0]
    for k in range(1, len(terms)):
        later = set(out_labels)
        for _, other in terms[k + 1:]:
            later.update(other)
        y, ylabels = terms[k]
        x, labels = _contract(x, labels, y, ylabels, later, sizes)
    x, labels = _sum_out(x, labels, [lab for lab in labels if lab not in out_labels])
    for lab, s in zip(labels, x.shape):
        if s != sizes[lab]:  # a size-1 dim that broadcasts against another operand's
            x = x.expand(*[sizes[m] for m in labels])
            break
    return x.permute(*[labels.index(lab) for lab in out_labels]) if labels != out_labels else x


def _name(lab: Any) -> str:
    return repr(lab) if isinstance(lab, str) else "'...'"


def _diagonals(x: Any, labels: list[Any]) -> tuple[Any, list[Any]]:
    """A label repeated within one operand: the diagonal over its dims (a view), as a last dim."""
    while True:
        for i, lab in enumerate(labels):
            j = labels.index(lab, i + 1) if labels.count(lab) > 1 else -1
            if j >= 0:
                if x.shape[i] != x.shape[j]:
                    raise ShapeError(f"einsum(): subscript {_name(lab)} is repeated for an operand but the sizes "
                                     f"don't match, {x.shape[i]} != {x.shape[j]}")
                x = diagonal(x, 0, i, j)
                labels = [m for k, m in enumerate(labels) if k not in (i, j)] + [lab]
                break
        else:
            return x, labels


def _sum_out(x: Any, labels: list[Any], gone: list[Any]) -> tuple[Any, list[Any]]:
    if not gone:
        return x, labels
    dims = tuple(labels.index(lab) for lab in gone)
    # integer sums give int64, as PyTorch's einsum (its sums are ``sum``s)
    return x.sum(dims), [lab for lab in labels if lab not in gone]


def _contract(x: Any, xl: list[Any], y: Any, yl: list[Any], later: set, sizes: dict[Any, int]) -> tuple[Any, list]:
    """``x`` and ``y`` multiplied over their shared labels, summing those no later term needs."""
    shared = [lab for lab in xl if lab in yl]
    batch = [lab for lab in shared if lab in later]
    summed = [lab for lab in shared if lab not in later]
    left = [lab for lab in xl if lab not in yl]
    right = [lab for lab in yl if lab not in xl]

    def arranged(t: Any, tl: list[Any], order: list[Any]) -> Any:
        t = t.permute(*[tl.index(lab) for lab in order]) if tl != order else t
        want = [sizes[lab] for lab in order]
        return t.expand(*want) if list(t.shape) != want else t

    if not summed:  # an outer product over the kept labels: a broadcast multiply
        order = batch + left + right
        a = arranged(x, xl, batch + left).reshape(*[sizes[lab] for lab in batch + left], *[1] * len(right))
        b = arranged(y, yl, batch + right)
        b = b.reshape(*[sizes[lab] for lab in batch], *[1] * len(left), *[sizes[lab] for lab in right])
        return a * b, order
    a = arranged(x, xl, batch + left + summed)
    b = arranged(y, yl, batch + summed + right)
    nb = [sizes[lab] for lab in batch]
    m = math.prod(sizes[lab] for lab in left)
    k = math.prod(sizes[lab] for lab in summed)
    n = math.prod(sizes[lab] for lab in right)
    prod_ = matmul(a.reshape(*nb, m, k), b.reshape(*nb, k, n))
    return prod_.reshape(*nb, *[sizes[lab] for lab in left + right]), batch + left + right


def outer(a: Any, b: Any) -> Any:
    """The outer product of two 1-D tensors: ``out[i, j] = a[i] * b[j]``."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"outer: expected two 1-D tensors, got shapes {a.shape} and {b.shape}")
    return a.unsqueeze(1) * b.unsqueeze(0)


def dot(a: Any, b: Any) -> Any:
    """The inner product of two 1-D tensors of one size and dtype (a 0-d tensor)."""
    if a.ndim != 1 or b.ndim != 1:
        raise ShapeError(f"dot: expected two 1-D tensors, got shapes {a.shape} and {b.shape}")
    if a.shape != b.shape:
        raise ShapeError(f"dot: inconsistent tensor size, expected tensors of the same size, got {a.shape[0]} "
                         f"and {b.shape[0]}")
    if a.dtype is not b.dtype:
        raise DTypeError(f"dot: expected both vectors to have the same dtype, got {a.dtype.name} and {b.dtype.name}")
    return matmul(a, b)


def bmm(a: Any, b: Any) -> Any:
    """Batched matrix product of 3-D tensors ``(B, n, k) @ (B, k, m)`` (no broadcasting, as PyTorch)."""
    if a.ndim != 3 or b.ndim != 3:
        raise ShapeError(f"bmm: expected two 3-D tensors, got shapes {a.shape} and {b.shape}")
    if a.shape[0] != b.shape[0] or a.shape[2] != b.shape[1]:
        raise ShapeError(f"bmm: shapes {a.shape} and {b.shape} cannot be multiplied (expected (B, n, k) and "
                         "(B, k, m))")
    return matmul(a, b)


def tensordot(a: Any, b: Any, dims: Any = 2) -> Any:
    """Contract the last ``dims`` dims of ``a`` with the first ``dims`` of ``b``, or the listed dim pairs
    ``dims = (dims_a, dims_b)``; one matmul."""
    if isinstance(dims, (int,)) and not isinstance(dims, bool):
        if dims < 0 or dims > min(a.ndim, b.ndim):
            raise ShapeError(f"tensordot: dims {dims} must be in [0, {min(a.ndim, b.ndim)}] for shapes "
                             f"{a.shape} and {b.shape}")
        da, db = list(range(a.ndim - dims, a.ndim)), list(range(dims))
    else:
        da, db = ([d] if isinstance(d, int) else list(d) for d in dims)
        if len(da) != len(db):
            raise ShapeError(f"tensordot: both sides of dims must name as many dims, got {da} and {db}")
        from zyx.ir.view import normalize_dim

        da = [normalize_dim(d, a.ndim) for d in da]
        db = [normalize_dim(d, b.ndim) for d in db]
    for i, j in zip(da, db):
        if a.shape[i] != b.shape[j]:
            raise ShapeError(f"tensordot: contracted dims differ in size: dim {i} of {a.shape} vs dim {j} of "
                             f"{b.shape}")
    letters = iter("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    la = [next(letters) for _ in range(a.ndim)]
    lb = [next(letters) for _ in range(b.ndim)]
    for i, j in zip(da, db):
        lb[j] = la[i]
    out = [lab for k, lab in enumerate(la) if k not in da] + [lab for k, lab in enumerate(lb) if k not in db]
    return einsum(f"{''.join(la)},{''.join(lb)}->{''.join(out)}", a, b)


class EinsumMixin(TensorBase):
    """The small contractions as methods (``zyx.dot``, ``zyx.outer``, ``zyx.bmm``)."""

    __slots__ = ()

    def dot(self, other: Any) -> Any:
        """Inner product of two 1-D tensors (``zyx.dot``)."""
        return dot(self, other)

    def outer(self, other: Any) -> Any:
        """Outer product of two 1-D tensors (``zyx.outer``)."""
        return outer(self, other)

    def bmm(self, other: Any) -> Any:
        """Batched matrix product of 3-D tensors (``zyx.bmm``)."""
        return bmm(self, other)
