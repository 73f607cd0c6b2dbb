"""Symbolic integer index algebra with simplification.

Index expressions of generated kernels are built from loop variables with known
bounds, integer constants, ``+``, multiplication by constants, floor division and
modulo by positive constants, and the validity conditions ``x < c`` joined by ``&``.
Every constructor simplifies as it builds (constant folding, collecting like terms,
``(a*b)//b -> a``, ``(a+b*c)%c -> a%c``, and removal of ``//`` and ``%`` that the
bounds prove redundant), so kernels index like hand-written code.

Semantics are Python's: ``//`` floors and ``%`` takes the divisor's sign. The
renderer emits C ``/`` and ``%`` only where the bounds prove the numerator is
non-negative (where C's truncating ops agree) and a flooring helper otherwise.

Nodes are immutable, hashable values; build them with the functions ``var``, ``num``,
``add``, ``mul``, ``floordiv``, ``mod``, ``lt``, ``ge``, ``land`` or the operators.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable, Union

IntLike = Union["Node", int]


@dataclass(frozen=True, eq=True)
class Node:
    """Base of every symbolic expression; ``vmin``/``vmax`` bound its value."""

    @property
    def vmin(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    @property
    def vmax(self) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    # operator sugar (all simplify)
    def __add__(self, o: IntLike) -> Node:
        return add(self, o)

    __radd__ = __add__

    def __sub__(self, o: IntLike) -> Node:
        return add(self, mul(_n(o), -1))

    def __rsub__(self, o: IntLike) -> Node:
        return add(_n(o), mul(self, -1))

    def __neg__(self) -> Node:
        return mul(self, -1)

    def __mul__(self, c: int) -> Node:
        return mul(self, c)

    __rmul__ = __mul__

    def __floordiv__(self, c: int) -> Node:
        return floordiv(self, c)

    def __mod__(self, c: int) -> Node:
        return mod(self, c)

    def __lt__(self, c: int) -> Node:  # type: ignore[override]
        return lt(self, c)

    def __ge__(self, c: int) -> Node:  # type: ignore[override]
        return ge(self, c)

    def __and__(self, o: Node) -> Node:
        return land(self, o)


@dataclass(frozen=True)
class Num(Node):
    v: int

    @property
    def vmin(self) -> int:
        return self.v

    @property
    def vmax(self) -> int:
        return self.v


@dataclass(frozen=True)
class Var(Node):
    """A loop or work-item variable taking every value in ``[lo, hi]``."""

    name: str
    lo: int
    hi: int

    @property
    def vmin(self) -> int:
        return self.lo

    @property
    def vmax(self) -> int:
        return self.hi


@dataclass(frozen=True)
class Mul(Node):
    a: Node
    c: int

    @property
    def vmin(self) -> int:
        return min(self.a.vmin * self.c, self.a.vmax * self.c)

    @property
    def vmax(self) -> int:
        return max(self.a.vmin * self.c, self.a.vmax * self.c)


@dataclass(frozen=True)
class Add(Node):
    """A sum of at least two terms; a constant term, if any, comes last."""

    terms: tuple[Node, ...]
    _bounds: tuple[int, int] = field(default=(0, 0), compare=False, repr=False)

    @property
    def vmin(self) -> int:
        return self._bounds[0]

    @property
    def vmax(self) -> int:
        return self._bounds[1]


@dataclass(frozen=True)
class Div(Node):
    a: Node
    c: int

    @property
    def vmin(self) -> int:
        return self.a.vmin // self.c

    @property
    def vmax(self) -> int:
        return self.a.vmax // self.c


@dataclass(frozen=True)
class Mod(Node):
    a: Node
    c: int

    @property
    def vmin(self) -> int:
        return self.a.vmin if 0 <= self.a.vmin and self.a.vmax < self.c else 0

    @property
    def vmax(self) -> int:
        return self.a.vmax if 0 <= self.a.vmin and self.a.vmax < self.c else self.c - 1


@dataclass(frozen=True)
class Lt(Node):
    """``a < c``: 1 when true, 0 when false."""

    a: Node
    c: int

    @property
    def vmin(self) -> int:
        return 0

    @property
    def vmax(self) -> int:
        return 1


@dataclass(frozen=True)
class And(Node):
    """The conjunction of at least two conditions."""

    terms: tuple[Node, ...]

    @property
    def vmin(self) -> int:
        return 0

    @property
    def vmax(self) -> int:
        return 1


ZERO, ONE = Num(0), Num(1)
TRUE = ONE


def num(v: int) -> Num:
    return Num(int(v))


def var(name: str, lo: int, hi: int) -> Node:
    """A variable over ``[lo, hi]`` (a constant when the range has one value)."""
    return Num(lo) if lo == hi else Var(name, lo, hi)


def _n(x: IntLike) -> Node:
    return x if isinstance(x, Node) else Num(int(x))


def _coeff(t: Node) -> tuple[Node, int]:
    """``t`` as (base, coefficient)."""
    return (t.a, t.c) if isinstance(t, Mul) else (t, 1)


def _make_add(terms: dict[Node, int], const: int) -> Node:
    out = [b if c == 1 else Mul(b, c) for b, c in terms.items() if c != 0]
    if const or not out:
        out.append(Num(const))
    if len(out) == 1:
        return out[0]
    lo = sum(t.vmin for t in out)
    hi = sum(t.vmax for t in out)
    return Add(tuple(out), (lo, hi))


def _terms(x: Node) -> list[Node]:
    return list(x.terms) if isinstance(x, Add) else [x]


def add(*xs: IntLike) -> Node:
    """The simplified sum: like terms collected, constants folded."""
    terms: dict[Node, int] = {}
    const = 0
    for x in xs:
        for t in _terms(_n(x)):
            if isinstance(t, Num):
                const += t.v
                continue
            b, c = _coeff(t)
            terms[b] = terms.get(b, 0) + c
    # (x // c) * c + x % c  ->  x   (each with the same coefficient k)
    for b in [b for b in terms if isinstance(b, Mod)]:
        k = terms.get(b, 0)
        d = Div(b.a, b.c)
        if k and terms.get(d, 0) == k * b.c:
            del terms[b], terms[d]
            return add(_make_add(terms, const), mul(b.a, k))
    return _make_add(terms, const)


def mul(x: IntLike, c: int) -> Node:
    """``x * c`` for a constant ``c`` (distributes over sums)."""
    x = _n(x)
    c = int(c)
    if c == 0:
        return ZERO
    if c == 1:
        return x
    if isinstance(x, Num):
        return Num(x.v * c)
    if isinstance(x, Mul):
        return mul(x.a, x.c * c)
    if isinstance(x, Add):
        return add(*(mul(t, c) for t in x.terms))
    return Mul(x, c)


def floordiv(x: IntLike, c: int) -> Node:
    """``x // c`` for a constant ``c > 0`` (floor division)."""
    x = _n(x)
    c = int(c)
    if c <= 0:
        raise ValueError(f"floordiv by a non-positive constant {c}")
    if c == 1:
        return x
    if isinstance(x, Num):
        return Num(x.v // c)
    if x.vmin // c == x.vmax // c:  # every value lands in the same bucket
        return Num(x.vmin // c)
    if isinstance(x, Mul):
        if x.c % c == 0:
            return mul(x.a, x.c // c)
        if x.c > 0 and c % x.c == 0:
            return floordiv(x.a, c // x.c)
    if isinstance(x, Div):
        return floordiv(x.a, x.c * c)
    if isinstance(x, Add):
        whole: list[Node] = []
        rest: list[Node] = []
        for t in x.terms:
            if isinstance(t, Num):
                q, r = divmod(t.v, c)
                if q:
                    whole.append(Num(q))
                if r:
                    rest.append(Num(r))
                continue
            b, k = _coeff(t)
            if k % c == 0:
                whole.append(mul(b, k // c))
            else:
                rest.append(t)
        if whole:
            return add(*whole, floordiv(add(*rest), c) if rest else ZERO)
        split = _split_below(x, c)
        if split is not None:
            return floordiv(split[0], split[1])
        # a common factor of every coefficient and the divisor cancels
        g = c
        for t in x.terms:
            g = math.gcd(g, t.v if isinstance(t, Num) else _coeff(t)[1])
        if g > 1:
            return floordiv(add(*(_divexact(t, g) for t in x.terms)), c // g)
    return Div(x, c)


def _split_below(x: Add, c: int) -> tuple[Node, int] | None:
    """``(b, c // d)`` with ``x // c == b // (c // d)`` where ``x = d*b + s``: the terms of ``x`` whose coefficient
    ``d`` (a divisor of ``c``) divides, and the rest ``s`` within ``[0, d)`` (a reshape's merged index,
    ``(896*h + 32*w + lane) // 1792 == h // 2``); None when no such ``d`` exists."""
    for d in sorted({math.gcd(c, _coeff(t)[1]) for t in x.terms if not isinstance(t, Num)}, reverse=True):
        if d <= 1 or d == c:
            continue
        big = [t for t in x.terms if not isinstance(t, Num) and _coeff(t)[1] % d == 0]
        small = [t for t in x.terms if isinstance(t, Num) or _coeff(t)[1] % d]
        rest = add(*small) if small else ZERO
        if big and rest.vmin >= 0 and rest.vmax < d:
            return add(*(_divexact(t, d) for t in big)), c // d
    return None


def _divexact(t: Node, g: int) -> Node:
    if isinstance(t, Num):
        return Num(t.v // g)
    b, k = _coeff(t)
    return mul(b, k // g)


def mod(x: IntLike, c: int) -> Node:
    """``x % c`` for a constant ``c > 0`` (Python semantics: result in ``[0, c)``)."""
    x = _n(x)
    c = int(c)
    if c <= 0:
        raise ValueError(f"mod by a non-positive constant {c}")
    if c == 1:
        return ZERO
    if isinstance(x, Num):
        return Num(x.v % c)
    if x.vmin // c == x.vmax // c:  # one bucket: a plain shift
        return add(x, -c * (x.vmin // c))
    if isinstance(x, Mul):
        if x.c % c == 0:
            return ZERO
        if x.c > 0 and c % x.c == 0:  # (a*k) % (m*k) == (a % m) * k
            return mul(mod(x.a, c // x.c), x.c)
    if isinstance(x, Mod) and x.c % c == 0:
        return mod(x.a, c)
    if isinstance(x, Add):
        kept: list[Node] = []
        dropped = False
        for t in x.terms:
            if isinstance(t, Num):
                if t.v % c != t.v:
                    dropped = True
                if t.v % c:
                    kept.append(Num(t.v % c))
                continue
            b, k = _coeff(t)
            if k % c == 0:
                dropped = True
                continue
            if isinstance(b, Mod) and b.c % c == 0 and b.c != c and k > 0:
                dropped = True
                kept.append(mul(mod(b.a, c), k))
                continue
            kept.append(t)
        if dropped:
            return mod(add(*kept), c)
        g = c
        for t in x.terms:
            g = math.gcd(g, t.v if isinstance(t, Num) else _coeff(t)[1])
        if g > 1:  # (g*y) % (g*m) == g * (y % m)
            return mul(mod(add(*(_divexact(t, g) for t in x.terms)), c // g), g)
    return Mod(x, c)


def lt(x: IntLike, c: int) -> Node:
    """The condition ``x < c`` (folded to 1 or 0 when the bounds decide it)."""
    x = _n(x)
    c = int(c)
    if x.vmax < c:
        return ONE
    if x.vmin >= c:
        return ZERO
    # move the constant term over: (y + k) < c  <=>  y < c - k
    if isinstance(x, Add) and isinstance(x.terms[-1], Num):
        return lt(add(*x.terms[:-1]), c - x.terms[-1].v)
    # a common positive factor: k*y < c  <=>  y < ceil(c / k)
    if isinstance(x, Mul) and x.c > 0:
        return lt(x.a, -(-c // x.c))
    # floor division by a positive constant: y // k < c  <=>  y < c * k
    if isinstance(x, Div):
        return lt(x.a, c * x.c)
    return Lt(x, c)


def ge(x: IntLike, c: int) -> Node:
    """The condition ``x >= c``, written as ``-x < 1 - c``."""
    return lt(mul(_n(x), -1), 1 - int(c))


def land(*conds: Node) -> Node:
    """The conjunction of conditions (true ones dropped, a false one makes it false)."""
    out: list[Node] = []
    for cnd in conds:
        if cnd is None:
            continue
        for t in (cnd.terms if isinstance(cnd, And) else (cnd,)):
            if isinstance(t, Num):
                if t.v == 0:
                    return ZERO
                continue
            if t not in out:
                out.append(t)
    if not out:
        return ONE
    return out[0] if len(out) == 1 else And(tuple(out))


# ------------------------------------------------------------------ evaluation

def evaluate(x: Node, env: dict[str, int]) -> int:
    """The value of ``x`` with variables bound by ``env`` (Python semantics)."""
    if isinstance(x, Num):
        return x.v
    if isinstance(x, Var):
        return env[x.name]
    if isinstance(x, Mul):
        return evaluate(x.a, env) * x.c
    if isinstance(x, Add):
        return sum(evaluate(t, env) for t in x.terms)
    if isinstance(x, Div):
        return evaluate(x.a, env) // x.c
    if isinstance(x, Mod):
        return evaluate(x.a, env) % x.c
    if isinstance(x, Lt):
        return int(evaluate(x.a, env) < x.c)
    if isinstance(x, And):
        return int(all(evaluate(t, env) for t in x.terms))
    raise TypeError(f"not a symbolic node: {x!r}")


def variables(x: Node) -> set[Var]:
    """Every variable ``x`` mentions."""
    if isinstance(x, Var):
        return {x}
    if isinstance(x, (Mul, Div, Mod, Lt)):
        return variables(x.a)
    if isinstance(x, (Add, And)):
        out: set[Var] = set()
        for t in x.terms:
            out |= variables(t)
        return out
    return set()


def substitute(x: Node, mapping: dict[Var, Node]) -> Node:
    """``x`` with variables replaced (and everything re-simplified)."""
    if isinstance(x, Var):
        return mapping.get(x, x)
    if isinstance(x, Num):
        return x
    if isinstance(x, Mul):
        return mul(substitute(x.a, mapping), x.c)
    if isinstance(x, Add):
        return add(*(substitute(t, mapping) for t in x.terms))
    if isinstance(x, Div):
        return floordiv(substitute(x.a, mapping), x.c)
    if isinstance(x, Mod):
        return mod(substitute(x.a, mapping), x.c)
    if isinstance(x, Lt):
        return lt(substitute(x.a, mapping), x.c)
    if isinstance(x, And):
        return land(*(substitute(t, mapping) for t in x.terms))
    raise TypeError(f"not a symbolic node: {x!r}")


# ------------------------------------------------------------------ rendering

def render(x: Node, name: Callable[[Var], str] = lambda v: v.name) -> str:
    """C source for ``x``; ``//``/``%`` of possibly negative values use ``zyx_floordiv``/``zyx_floormod``."""
    if isinstance(x, Num):
        return str(x.v) if -(2**31) < x.v < 2**31 else f"{x.v}L"
    if isinstance(x, Var):
        return name(x)
    if isinstance(x, Mul):
        inner = render(x.a, name)
        if isinstance(x.a, Add):
            inner = f"({inner})"
        return f"-{inner}" if x.c == -1 else f"{inner}*{x.c}"
    if isinstance(x, Add):
        out = render(x.terms[0], name)
        for t in x.terms[1:]:
            if isinstance(t, Num) and t.v < 0:
                out += f" - {-t.v}"
            elif isinstance(t, Mul) and t.c < 0:
                out += " - " + render(mul(t.a, -t.c), name)
            else:
                out += " + " + render(t, name)
        return out
    if isinstance(x, (Div, Mod)):
        inner = render(x.a, name)
        if x.a.vmin >= 0:
            wrap = f"({inner})" if isinstance(x.a, (Add, Mul)) else inner
            return f"{wrap}{'/' if isinstance(x, Div) else '%'}{x.c}"
        fn = "zyx_floordiv" if isinstance(x, Div) else "zyx_floormod"
        return f"{fn}({inner}, {x.c})"
    if isinstance(x, Lt):
        if isinstance(x.a, Mul) and x.a.c == -1:  # -y < k  <=>  y > -k
            return f"({render(x.a.a, name)} > {-x.c})"
        return f"({render(x.a, name)} < {x.c})"
    if isinstance(x, And):
        return " && ".join(render(t, name) for t in x.terms)
    raise TypeError(f"not a symbolic node: {x!r}")


def unravel(flat: Node, shape: tuple[int, ...]) -> list[Node]:
    """Row-major coordinates of the flat index ``flat`` in ``shape`` (all zero for an empty
    shape: no element is ever read there)."""
    if 0 in shape:
        return [ZERO] * len(shape)
    out: list[Node] = []
    acc = 1
    for d in reversed(shape):
        out.append(ZERO if d == 1 else mod(floordiv(flat, acc), d))
        acc *= d
    return list(reversed(out))
