"""Linear IR -> OpenCL C through ``templates/kernel.cl.mako`` (``zyx.kernels.ir_launch`` builds and launches it).

This module turns each ``Instr`` of a linearized program into statement records (frozen
dataclasses with a ``kind`` and named fields, ``Statement``) that the template renders with the
shared dtype helpers of ``common/dtypes.mako``:
values are named ``v<N>``, accumulators ``acc<N>``, buffers ``out`` / ``in<N>``.
16-bit and 8-bit floats compute in float32 and every op's result is rounded to its
dtype (``dt.convert``), so a fused kernel gives the bits of PyTorch's op-by-op result.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, ClassVar

from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.ir import symbolic as sym
from zyx.ir.expr import PARAM  # the name prefix of the scalar kernel arguments (``expr.Param`` slots)
from zyx.ir.kernel import VECTOR_MASKS, Kernel, Opts, matmul_axes
from zyx.ir.linearize import LANE, Program, linearize
from zyx.ir.rewrite import walk
from zyx.op import ARG_REDUCE, COMPARISON, EXACT, Op

# -w: generated code; PoCL's clang otherwise prints "N warnings generated." to stderr at launch time for
# float16 vectors on AVX2 ("changes the ABI"), noise a user can do nothing about (ZYX_DEBUG=2 shows the source).
BUILD_OPTIONS = "-cl-fp32-correctly-rounded-divide-sqrt -w"
ERR_FLAG = "zyx_err"  # the error-flag parameter (backend/errorflags.py), present when a statement uses it
INDEX_OOB = 4  # errorflags.INDEX_OOB: a gathered index outside its table
# errorflags.PROB_INPUT / PROB_TARGET: the bit each value check sets (a value outside [0, 1], or NaN)
CHECK_BITS = {Op.CHECK_PROB_INPUT: 8, Op.CHECK_PROB_TARGET: 16}


def ctype(d: DType) -> str:
    """The OpenCL type values of ``d`` are computed in."""
    if d.is_float:
        return "double" if d.name == "float64" else "float"
    if d.is_bool:
        return "uchar"
    return d.cl_storage


def needs_rounding(d: DType) -> bool:
    """Whether results of ``d`` are computed wider than stored (and so are rounded per op)."""
    return d.is_float and d.name not in ("float32", "float64")


def literal(value: Any, d: DType) -> str:
    """``value`` as an OpenCL literal of ``d``'s compute type."""
    ct = ctype(d)
    if d.is_float:
        v = float(value)
        if v != v:
            return "NAN" if ct == "float" else "(double)NAN"
        if v in (float("inf"), float("-inf")):
            s = "INFINITY" if ct == "float" else "(double)INFINITY"
            return s if v > 0 else f"(-{s})"
        return f"{v!r}f" if ct == "float" else repr(v)
    if d.is_bool:
        return "1" if value else "0"
    v = int(value)
    if d.name == "uint64":
        return f"{v}UL"
    if d.name == "int64":
        return f"{v}L" if v != -(2**63) else "(-9223372036854775807L - 1)"
    if d.name == "int32" and v == -(2**31):
        return "(-2147483647 - 1)"
    if d.name == "uint32":
        return f"{v}u"
    return f"(({ct}){v})" if d.itemsize < 4 else str(v)


def _tanh(x: str, ct: str) -> str:
    """tanh of expression ``x`` (scalar or vector), exactly +-1 where the true value rounds to it
    (|x| >= 13 ln 2 in float32, 27.5 ln 2 in float64): PoCL's tanh gave 0.99999994 for tanh(10),
    so gelu(-1e5, 'tanh') came out -0.003 instead of -0."""
    edge, one = ("9.010913f", "1.0f") if ct == "float" else ("19.061547465398498", "1.0")
    return f"(!(fabs({x}) >= {edge}) ? tanh({x}) : copysign(fmin(fabs({x}), {one}), {x}))"


def _float_expr(op: Op, a: str, b: str | None, ct: str, vt: str | None = None) -> str:
    # NaN tests are written ``x != x``: PoCL calls (never inlines) its isnan(), with spills around each call
    one = "1.0f" if ct == "float" else "1.0"
    # float32 exp, erf, log, log2, sin, cos: zyx's own, tan: the built-in guarded (templates/common/math.mako);
    # float64: the built-ins
    exp, erf, log, log2, sin, cos, tan = (f"zyx_{fn}_{vt or ct}" if ct == "float" else fn for fn in MATH_HELPERS)
    half = "0.5f" if ct == "float" else "0.5"
    f = "f" if ct == "float" else ""
    table = {
        Op.ADD: f"{a} + {b}", Op.SUB: f"{a} - {b}", Op.MUL: f"{a} * {b}", Op.DIV: f"{a} / {b}",
        Op.FLOORDIV: f"zyx_floordiv_py({a}, {b})", Op.MOD: f"zyx_fmod_py{'' if ct == 'float' else '_d'}({a}, {b})",
        Op.POW: f"pow({a}, {b})", Op.ATAN2: f"atan2({a}, {b})", Op.COPYSIGN: f"copysign({a}, {b})",
        # NaN from either side; between equal values (-0.0 and 0.0) the second operand, as NumPy
        # and PyTorch's vectorized loops (its scalar tail loop returns the first)
        Op.MAXIMUM: f"(({a} > {b} || ({a} != {a})) ? {a} : {b})",
        Op.MINIMUM: f"(({a} < {b} || ({a} != {a})) ? {a} : {b})",
        Op.NEG: f"-{a}", Op.ABS: f"fabs({a})", Op.EXP: f"{exp}({a})", Op.EXP2: f"exp2({a})", Op.LOG: f"{log}({a})",
        Op.LOG2: f"{log2}({a})", Op.SQRT: f"sqrt({a})", Op.RSQRT: f"{one} / sqrt({a})", Op.SIN: f"{sin}({a})",
        Op.COS: f"{cos}({a})", Op.TAN: f"{tan}({a})", Op.TANH: _tanh(a, ct), Op.ERF: f"{erf}({a})",
        Op.SIGMOID: f"{one} / ({one} + {exp}(-{a}))", Op.SILU: f"{a} / ({one} + {exp}(-{a}))",
        Op.RELU: f"({a} < 0 ? 0 : {a})",  # NaN and -0.0 pass through, as in PyTorch
        Op.GELU: f"{half} * {a} * ({one} + {erf}({a} * 0.7071067811865476{f}))",
        Op.GELU_TANH:
            f"{half} * {a} * ({one} + {_tanh(f'(0.7978845608028654{f} * ({a} + 0.044715{f} * {a} * {a} * {a}))', ct)})",
        Op.RECIPROCAL: f"{one} / {a}", Op.FLOOR: f"floor({a})", Op.CEIL: f"ceil({a})", Op.ROUND: f"rint({a})",
        Op.TRUNC: f"trunc({a})", Op.SIGN: f"({a} > 0 ? {one} : ({a} < 0 ? -{one} : 0))", Op.SQUARE: f"{a} * {a}",
    }
    return table[op]


def _int_expr(op: Op, a: str, b: str | None, d: DType) -> str:
    ct = ctype(d)
    signed = d.kind == "int"
    bits, uct = 8 * d.itemsize, ("u" + ct if signed else ct)
    guard = f"{b} == -1 ? " if signed else ""
    fail = f"(atomic_or({ERR_FLAG}, {{}}), ({ct})0)"  # set a bit of the error flag (backend/errorflags.py), yield 0
    table = {
        Op.ADD: f"({ct})({a} + {b})", Op.SUB: f"({ct})({a} - {b})", Op.MUL: f"({ct})({a} * {b})",
        Op.FLOORDIV: f"({b} == 0 ? {fail.format(1)} : " + (f"{guard}({ct})(-{a}) : " if signed else "")
                     + (f"({ct})({a} / {b} - ((({a} % {b}) != 0 && (({a} < 0) != ({b} < 0))) ? 1 : 0)))"
                        if signed else f"({ct})({a} / {b}))"),
        Op.MOD: f"({b} == 0 ? {fail.format(1)} : " + (f"{guard}({ct})0 : " if signed else "")
                + (f"({ct})((({a} % {b}) != 0 && (({a} % {b} < 0) != ({b} < 0))) ? {a} % {b} + {b} : {a} % {b}))"
                   if signed else f"({ct})({a} % {b}))"),
        Op.POW: (f"({b} < 0 ? {fail.format(2)} : " if signed else "(") + f"({ct})zyx_ipow((long){a}, (long){b}))",
        Op.MAXIMUM: f"max({a}, {b})", Op.MINIMUM: f"min({a}, {b})",
        Op.AND: f"({ct})({a} & {b})", Op.OR: f"({ct})({a} | {b})", Op.XOR: f"({ct})({a} ^ {b})",
        # OpenCL reduces a shift count modulo the width; PyTorch saturates it: compare first (negative counts
        # become huge as ulong). A left shift is done unsigned, so shifting into the sign bit is defined.
        Op.SHL: f"((ulong){b} >= {bits} ? ({ct})0 : ({ct})(({uct}){a} << {b}))",
        Op.SHR: (f"({ct})({a} >> ((ulong){b} >= {bits} ? {bits - 1} : {b}))" if signed
                 else f"((ulong){b} >= {bits} ? ({ct})0 : ({ct})({a} >> {b}))"),
        Op.NEG: f"({ct})(-{a})", Op.ABS: f"({ct})abs({a})" if signed else a,
        Op.SIGN: f"({ct})(({a} > 0) - ({a} < 0))", Op.SQUARE: f"({ct})({a} * {a})",
        Op.RELU: f"({a} > 0 ? {a} : ({ct})0)", Op.INVERT: f"({ct})(~{a})",
        Op.FLOOR: a, Op.CEIL: a, Op.ROUND: a, Op.TRUNC: a,
    }
    return table[op]


_CMP = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}
_BOOL_BITWISE = {Op.AND: "&", Op.OR: "|", Op.XOR: "^", Op.MAXIMUM: "|", Op.MINIMUM: "&"}


def alu_expr(op: Op, srcs: tuple[DType, ...], out: DType, names: list[str]) -> str:
    """The C expression of one ALU op on named compute-type operands."""
    a = names[0]
    b = names[1] if len(names) > 1 else None
    s = srcs[0]
    if op in _CMP:
        return f"(uchar)({a} {_CMP[op]} {b})"
    if op == Op.WHERE:
        return f"({a} ? {names[1]} : {names[2]})"
    if op == Op.NOT:
        return f"(uchar)(!{a})"
    if op == Op.ISNAN:
        return f"(uchar)({a} != {a})" if s.is_float else "(uchar)0"
    if op == Op.ISINF:
        return f"(uchar)isinf({a})" if s.is_float else "(uchar)0"
    if op in CHECK_BITS:  # written so NaN fails the test; the failing value becomes NaN, never a plausible one
        return f"(({a} >= 0 && {a} <= 1) ? {a} : (atomic_or({ERR_FLAG}, {CHECK_BITS[op]}), {literal(float('nan'), s)}))"
    if s.is_bool:
        if op in _BOOL_BITWISE:  # bools are 0/1: maximum is or, minimum is and
            return f"(uchar)({a} {_BOOL_BITWISE[op]} {b})"
        if op == Op.INVERT:
            return f"(uchar)(!{a})"
        if op in (Op.ABS, Op.RELU, Op.SQUARE):
            return a
    if s.is_float:
        return _float_expr(op, a, b, ctype(s))
    return _int_expr(op, a, b, s)


def _accum_line(op: Op, acc: str, v: str, d: DType, src: DType, pos: str | None) -> list[str]:
    if op == Op.SUM:
        return [f"{acc} += {v};"]
    if op == Op.PROD:
        return [f"{acc} *= {v};"]
    if op in (Op.MAX, Op.MIN):
        cmp = ">" if op == Op.MAX else "<"
        if d.is_float:
            return [f"{acc} = ({v} {cmp} {acc} || ({v} != {v})) ? {v} : {acc};"]
        return [f"{acc} = {'max' if op == Op.MAX else 'min'}({acc}, {v});"]
    cmp = ">" if op == Op.ARGMAX else "<"
    nan = f" || (({v} != {v}) && !({acc}_v != {acc}_v))" if src.is_float else ""
    return [f"if ({v} {cmp} {acc}_v{nan}) {{ {acc}_v = {v}; {acc} = {pos}; }}"]


def _vector_at(vt: str, const: bool, ptr: str) -> str:
    """The ``vt`` vector at element pointer ``ptr`` (a load or a store target), through a pointer type with the
    element's alignment (``zyx_<vt>_u``, declared by the template): PoCL does not inline ``vloadN``/``vstoreN``
    (a call, with spills, per vector), while this is one unaligned vector move."""
    return f"(*(__global {'const ' if const else ''}zyx_{vt}_u *)({ptr}))"


def _buf(i: int) -> str:
    """A buffer parameter's name: ``out`` (a row kernel may read back what it stored) or ``in<N>``."""
    return "out" if i == 0 else f"in{i}"


def _index_name(v: sym.Var) -> str:
    return v.name


_LANES = "0123456789abcdef"


def vtype(d: DType, w: int) -> str:
    """The compute type of ``d`` with ``w`` lanes."""
    return ctype(d) if w == 1 else f"{ctype(d)}{w}"


_MASK_OPS = {Op.EQ: "==", Op.NE: "!=", Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">="}


def _vector_alu(op: Op, ct: str, vt: str, names: list[str]) -> str:
    """An ALU op on vector operands (every operand already a ``vt`` vector)."""
    a = names[0]
    b = names[1] if len(names) > 1 else None
    if op == Op.RELU:  # a vector ?: (not select(): PoCL compiles it faster) needs vector operands
        return f"({a} < ({vt})(0) ? ({vt})(0) : {a})"
    return _float_expr(op, a, b, ct, vt)


def _lanes(node: sym.Node, w: int) -> list[sym.Node]:
    lane = sym.var(LANE, 0, w - 1)
    return [sym.substitute(node, {lane: sym.num(j)}) for j in range(w)]


def _contiguous(node: sym.Node, w: int) -> sym.Node | None:
    """The base index when lane ``j`` of ``node`` is ``base + j``, else None."""
    idx = _lanes(node, w)
    return idx[0] if all(x == sym.add(idx[0], j) for j, x in enumerate(idx)) else None


def _mentions_lane(*nodes: sym.Node) -> bool:
    return any(v.name == LANE for n in nodes for v in sym.variables(n))


def _widths(prog: Program) -> list[int]:
    """Lanes of each instruction's value (1 or ``prog.vec``)."""
    w = [1] * len(prog.instrs)
    if prog.vec == 1:
        return w
    for i, ins in enumerate(prog.instrs):
        if ins.op == "load":
            w[i] = prog.vec if _mentions_lane(ins.arg[1], ins.arg[2]) else 1
        elif ins.op in ("alu", "cast"):
            w[i] = max(w[s] for s in ins.srcs)
        elif ins.op == "acc":
            w[i] = prog.vec if prog.vec_reduce else 1
        elif ins.op == "combine":
            w[i] = w[ins.srcs[0]]
        elif ins.op == "accum":
            w[ins.srcs[0]] = max(w[ins.srcs[0]], w[ins.srcs[1]])
    return w


def _all_lanes(valid: sym.Node, w: int) -> sym.Node | None:
    """A lane-free condition that holds iff ``valid`` holds on every lane, when each of its lane-dependent
    terms is ``a < c`` with ``a`` linear in the lane (checking the first and last lane suffices); else None."""
    terms = valid.terms if isinstance(valid, sym.And) else (valid,)
    out = []
    for t in terms:
        if not _mentions_lane(t):
            out.append(t)
            continue
        if not isinstance(t, sym.Lt):
            return None
        a = _lanes(t.a, w)
        step = sym.add(a[1], sym.mul(a[0], -1))
        if not isinstance(step, sym.Num) or any(x != sym.add(a[0], sym.mul(step, j)) for j, x in enumerate(a)):
            return None
        out += [sym.lt(a[0], t.c), sym.lt(a[-1], t.c)]
    return sym.land(*out)


def _combine_lines(op: Op, x: str, part: str, ct: str, split: int, arg: bool) -> list[str]:
    """Item 0 of a split group folds the partials of items 1..split-1 into ``x``, in item order."""
    lines = [f"{part}[zyx_lid] = {x};"] + ([f"{part}_v[zyx_lid] = {x}_v;"] if arg else [])
    lines += ["barrier(CLK_LOCAL_MEM_FENCE);", "if (zyx_sid == 0) {",
              f"    for (int zyx_j = 1; zyx_j < {split}; zyx_j++) {{",
              f"        const {ct} zyx_y = {part}{'_v' if arg else ''}[zyx_lid + zyx_j];"]
    if arg:  # the extreme value wins; among equal values (or NaNs) the first position
        cmp = ">" if op == Op.ARGMAX else "<"
        nan = "(zyx_y != zyx_y)" if ct in ("float", "double") else "0"
        xnan = f"({x}_v != {x}_v)" if ct in ("float", "double") else "0"
        lines += [f"        const long zyx_p = {part}[zyx_lid + zyx_j];",
                  f"        if (zyx_y {cmp} {x}_v || ({nan} && !{xnan}) || "
                  f"((zyx_y == {x}_v || ({nan} && {xnan})) && zyx_p < {x})) {{ {x}_v = zyx_y; {x} = zyx_p; }}"]
    else:
        lines.append("        " + _fold(op, x, "zyx_y", ct.startswith(("float", "double"))))
    return lines + ["    }", "}"]


def _fold(op: Op, target: str, value: str, is_float: bool) -> str:
    """One statement folding ``value`` into ``target`` for a sum/prod/max/min reduce
    (float max/min: NaN wins, as in PyTorch)."""
    if op == Op.SUM:
        return f"{target} += {value};"
    if op == Op.PROD:
        return f"{target} *= {value};"
    if is_float:
        cmp = ">" if op == Op.MAX else "<"
        return f"{target} = ({value} {cmp} {target} || ({value} != {value})) ? {value} : {target};"
    return f"{target} = {'max' if op == Op.MAX else 'min'}({target}, {value});"


def _hreduce_lines(op: Op, name: str, acc: str, w: int, d: DType) -> list[str]:
    """Combine the lanes of ``acc`` into ``name`` in lane order (the same bits every run)."""
    return [_fold(op, name, f"{acc}.s{_LANES[j]}", d.is_float or ctype(d) in ("float", "double"))
            for j in range(1, w)]



# ------------------------------------------------------------------ statement records (templates/kernel.cl.mako)

@dataclass(frozen=True)
class Define:
    """``const index_t name = expr;``: an index variable from the global id."""

    kind: ClassVar[str] = "define"
    name: str
    expr: str


@dataclass(frozen=True)
class Let:
    """``const ctype name = expr;``."""

    kind: ClassVar[str] = "let"
    ctype: str
    name: str
    expr: str


@dataclass(frozen=True)
class Round:
    """A 16-/8-bit float result ``expr`` (computed in float) rounded to ``dtype``: its storage bits as
    ``<name>_bits`` (stored as they are) and its value as ``name``."""

    kind: ClassVar[str] = "round"
    ctype: str
    name: str
    dtype: DType
    expr: str


@dataclass(frozen=True)
class Read:
    """``name`` = element ``index`` of buffer ``buf`` (of ``dtype``) when ``valid`` (None: always), else ``other``."""

    kind: ClassVar[str] = "read"
    ctype: str
    name: str
    dtype: DType
    buf: str
    index: str
    valid: str | None
    other: str


@dataclass(frozen=True)
class Convert:
    """``name`` = ``value`` converted from ``src`` to ``dtype``; with ``bits`` (a 16-/8-bit float target)
    its storage bits are kept as ``<name>_bits``, as ``Round``."""

    kind: ClassVar[str] = "convert"
    ctype: str
    name: str
    src: DType
    dtype: DType
    value: str
    bits: bool


@dataclass(frozen=True)
class Acc:
    """A mutable ``ctype name = init;`` (an accumulator)."""

    kind: ClassVar[str] = "acc"
    ctype: str
    name: str
    init: str


@dataclass(frozen=True)
class Line:
    """One statement, written as is."""

    kind: ClassVar[str] = "line"
    text: str


@dataclass(frozen=True)
class Local:
    """``__local ctype name[size];``."""

    kind: ClassVar[str] = "local"
    ctype: str
    name: str
    size: int


@dataclass(frozen=True)
class Open:
    """``head {``: a block, indented until its ``Close``."""

    kind: ClassVar[str] = "open"
    head: str


@dataclass(frozen=True)
class Close:
    kind: ClassVar[str] = "close"


@dataclass(frozen=True)
class Loop:
    """``for (index_t var = 0; var < count; var++) {``, until its ``EndLoop``."""

    kind: ClassVar[str] = "loop"
    var: str
    count: int


@dataclass(frozen=True)
class EndLoop:
    kind: ClassVar[str] = "endloop"


@dataclass(frozen=True)
class Write:
    """``buf[index]`` = compute-type ``value`` of ``src`` stored as ``dtype``; ``bits``: ``value`` has a
    ``<value>_bits`` twin of ``dtype`` (``Round``, ``Convert``), stored as it is."""

    kind: ClassVar[str] = "write"
    buf: str
    index: str
    src: DType
    dtype: DType
    value: str
    bits: bool


Statement = Define | Let | Round | Read | Convert | Acc | Line | Local | Open | Close | Loop | EndLoop | Write


def statements(prog: Program, k: Kernel, stream: bool = False) -> tuple[Statement, ...]:
    """The template's statement list for a program (``stream``: whole-vector output stores non-temporal,
    unless the program reads its output back, as a row kernel reusing stored values does)."""
    stream = stream and not any(ins.op == "load" and ins.arg[0] == 0 for ins in prog.instrs)
    out: list[Statement] = []
    names: dict[int, str] = {}
    dts: dict[int, DType] = {}
    width = _widths(prog)
    split_open = False
    kept_bits: set[str] = set()  # values with a ``<name>_bits`` twin (Round, Convert)

    def operand(s: int, w: int) -> str:
        return names[s] if width[s] == w else f"({vtype(dts[s], w)})({names[s]})"

    for i, ins in enumerate(prog.instrs):
        name = f"v{i}"
        w = width[i]
        if ins.op == "define":
            vname, node = ins.arg
            out.append(Define(vname, sym.render(node, _index_name)))
            continue
        if ins.op == "const":
            out.append(Let(ctype(ins.dtype), name, literal(ins.arg, ins.dtype)))
        elif ins.op == "param":
            out.append(Let(ctype(ins.dtype), name, f"({ctype(ins.dtype)}){PARAM}{ins.arg}"))
        elif ins.op == "load" and w > 1:
            buf, index, valid, other = ins.arg[:4]
            vt, oth = vtype(ins.dtype, w), literal(other, ins.dtype)
            base = _contiguous(index, w)
            full = _all_lanes(valid, w) if base is not None and _mentions_lane(valid) else None
            if base is not None and not _mentions_lane(valid):
                code = _vector_at(vt, True, f"{_buf(buf)} + {sym.render(base, _index_name)}")
                if valid != sym.ONE:
                    code = f"({sym.render(valid, _index_name)}) ? {code} : ({vt})({oth})"
            else:  # a gather, lane by lane (behind a whole-vector load when every lane is valid)
                parts = []
                for ix, ok in zip(_lanes(index, w), _lanes(valid, w)):
                    ld = f"{_buf(buf)}[{sym.render(ix, _index_name)}]"
                    parts.append(ld if ok == sym.ONE else (oth if ok == sym.ZERO else
                                                          f"(({sym.render(ok, _index_name)}) ? {ld} : {oth})"))
                code = f"({vt})({', '.join(parts)})"
                if full is not None and full != sym.ZERO:
                    whole = _vector_at(vt, True, f"{_buf(buf)} + {sym.render(base, _index_name)}")
                    code = f"({sym.render(full, _index_name)}) ? {whole} : {code}"
            out.append(Let(vt, name, code))
        elif ins.op == "load":
            buf, index, valid, other, gather = ins.arg
            gnames: dict[str, str] = {}
            # a masked-off gather (a pad's border) reads nothing: its index is not checked either
            live = "" if valid == sym.ONE or not gather else f"({sym.render(valid, _index_name)}) && "
            for j, ((gv, size), s) in enumerate(zip(gather, ins.srcs)):  # bounds-checked gathered indices
                x, gn = f"(long){names[s]}", f"{name}_x{j}"
                out.append(Let("long", gn, f"({live}({x} < 0 || {x} >= {size}L)) ? "
                                                f"(atomic_or({ERR_FLAG}, {INDEX_OOB}), 0L) : {x}"))
                gnames[gv] = gn
            rn = (lambda var, gnames=gnames: gnames.get(var.name, var.name)) if gnames else _index_name
            v = None if valid == sym.ONE else sym.render(valid, rn)
            out.append(Read(ctype(ins.dtype), name, ins.dtype, _buf(buf), sym.render(index, rn), v,
                            literal(other, ins.dtype)))
        elif ins.op == "cond":
            out.append(Let("uchar", name, f"(uchar)({sym.render(ins.arg, _index_name)})"))
        elif ins.op == "cast":
            bits = needs_rounding(ins.dtype) and ins.arg is not ins.dtype
            if bits:
                kept_bits.add(name)
            out.append(Convert(ctype(ins.dtype), name, ins.arg, ins.dtype, names[ins.srcs[0]], bits))
        elif ins.op == "alu" and w > 1 and ins.arg[0] in VECTOR_MASKS:
            op, src_dts = ins.arg  # a lane mask: int lanes for float operands, long lanes for double
            mask = f"{'long' if src_dts[0].itemsize == 8 else 'int'}{w}"
            a, b = (operand(s, w) for s in ins.srcs)
            out.append(Let(mask, name, f"({a} {_MASK_OPS[op]} {b})"))
        elif ins.op == "alu" and w > 1 and ins.arg[0] == Op.WHERE:
            cond, a, b = ins.srcs  # a scalar condition picks whole vectors, a mask lane by lane
            code = f"({names[cond]} ? {operand(a, w)} : {operand(b, w)})"
            out.append(Let(vtype(ins.dtype, w), name, code))
        elif ins.op == "alu" and w > 1:
            op, src_dts = ins.arg
            code = _vector_alu(op, ctype(ins.dtype), vtype(ins.dtype, w), [operand(s, w) for s in ins.srcs])
            out.append(Let(vtype(ins.dtype, w), name, code))
        elif ins.op == "alu":
            op, src_dts = ins.arg
            code = alu_expr(op, src_dts, ins.dtype, [names[s] for s in ins.srcs])
            if needs_rounding(ins.dtype) and op not in EXACT and op not in COMPARISON:
                kept_bits.add(name)
                out.append(Round(ctype(ins.dtype), name, ins.dtype, code))
            else:
                out.append(Let(ctype(ins.dtype), name, code))
        elif ins.op == "acc":
            rop, init, src_dt = ins.arg
            name = f"acc{i}"
            if rop in ARG_REDUCE:
                out.append(Acc(ctype(src_dt), f"{name}_v", literal(init, src_dt)))
                out.append(Acc("long", name, "0L"))
            elif w > 1:
                out.append(Acc(vtype(ins.dtype, w), name, f"({vtype(ins.dtype, w)})({literal(init, ins.dtype)})"))
            else:
                out.append(Acc(ctype(ins.dtype), name, literal(init, ins.dtype)))
        elif ins.op == "accum":
            acc_i, v_i = ins.srcs
            src_dt = dts[v_i]
            rop, pos, guard, lane0 = ins.arg
            aw = width[acc_i]
            target, val = (f"{names[acc_i]}.s0", names[v_i]) if lane0 and aw > 1 else (names[acc_i], operand(v_i, aw))
            lines = _accum_line(rop, target, val, ins.dtype, src_dt,
                                None if pos is None else f"(long)({sym.render(pos, _index_name)})")
            if guard != sym.ONE:
                lines = [f"if ({sym.render(guard, _index_name)}) {{ {' '.join(lines)} }}"]
            for line in lines:
                out.append(Line(line))
        elif ins.op == "hreduce":
            acc_i = ins.srcs[0]
            aw = width[acc_i]
            acc = names[acc_i]
            out.append(Acc(ctype(ins.dtype), name, f"{acc}.s0" if aw > 1 else acc))
            for line in _hreduce_lines(ins.arg, name, acc, aw, ins.dtype):
                out.append(Line(line))
        elif ins.op == "combine":
            rop, split = ins.arg
            src_i = ins.srcs[0]
            name = names[src_i]
            arg = rop in ARG_REDUCE
            part = f"zyx_part{i}"
            if arg:
                src_dt = prog.instrs[src_i].arg[2]
                out.append(Local("long", part, prog.local))
                out.append(Local(ctype(src_dt), f"{part}_v", prog.local))
                ct = ctype(src_dt)
            else:
                ct = vtype(ins.dtype, w)
                out.append(Local(ct, part, prog.local))
            for line in _combine_lines(rop, name, part, ct, split, arg):
                out.append(Line(line))
        elif ins.op == "loop":
            out.append(Loop(ins.arg[0], ins.arg[1]))
        elif ins.op == "endloop":
            out.append(EndLoop())
        elif ins.op == "store":
            v = ins.srcs[0]
            flat, mask = ins.arg
            if prog.split > 1 and not split_open:  # the group's first item stores (the others hold partials)
                out.append(Open(f"if (zyx_sid == 0 && zyx_tile < {prog.global_items})"))
                split_open = True
            if prog.vec > 1 and _mentions_lane(flat):
                vw = prog.vec
                base = _contiguous(flat, vw)
                val = operand(v, vw)
                if width[v] == 1 and (base is None or mask != sym.ONE):
                    out.append(Let(vtype(dts[v], vw), f"{names[v]}_b", val))
                    val = f"{names[v]}_b"
                full = _all_lanes(mask, vw) if base is not None else None
                target = None if base is None else _vector_at(vtype(k.out_dtype, vw), False,
                                                              f"out + {sym.render(base, _index_name)}")
                vstore = f"{target} = {val};" if target is not None else ""
                if stream and target is not None:  # templates/common/stream.mako
                    vstore = f"zyx_stream_store_{vtype(k.out_dtype, vw)}({val}, out + {sym.render(base, _index_name)});"
                if full == sym.ONE:
                    out.append(Line(vstore))
                elif full is not None and full == _lanes(mask, vw)[0]:  # all lanes or none (a tile past the end)
                    out += [Open(f"if ({sym.render(full, _index_name)})"), Line(vstore), Close()]
                else:  # lane by lane (a scatter, or the masked last vector behind a whole-vector test)
                    if full is not None and full != sym.ZERO:
                        out += [Open(f"if ({sym.render(full, _index_name)})"), Line(vstore), Close(), Open("else")]
                    for j, (ix, ok) in enumerate(zip(_lanes(flat, vw), _lanes(mask, vw))):
                        line = f"out[{sym.render(ix, _index_name)}] = {val}.s{_LANES[j]};"
                        if ok != sym.ZERO:
                            out.append(Line(line if ok == sym.ONE else f"if ({sym.render(ok, _index_name)}) {line}"))
                    if full is not None and full != sym.ZERO:
                        out.append(Close())
            else:
                if mask != sym.ONE:
                    out.append(Open(f"if ({sym.render(mask, _index_name)})"))
                out.append(Write("out", sym.render(flat, _index_name), dts[v], ins.dtype, names[v],
                                 dts[v] is ins.dtype and names[v] in kept_bits))
                if mask != sym.ONE:
                    out.append(Close())
        names[i] = name
        dts[i] = ins.dtype
    if split_open:
        out.append(Close())
    if stream and any("zyx_stream_store_" in str(st) for st in out):  # the group's last item drains the stores
        last = "get_local_id(0) == get_local_size(0) - 1"
        if prog.split <= 1:
            last += f" || gid == {prog.global_items - 1}"
        out.append(Line(f"ZYX_STREAM_FENCE({last});"))
    return tuple(out)


def param_ctype(d: DType) -> str:
    """The OpenCL type a scalar argument of dtype ``d`` is passed as (16/8-bit floats as float)."""
    if d.kind == "float":
        return "double" if d.itemsize == 8 else "float"
    return d.cl_storage


MATH_HELPERS = ("exp", "erf", "log", "log2", "sin", "cos", "tan")  # float32 functions of templates/common/math.mako


def _helper_types(fn: str, text: str) -> tuple[str, ...]:
    """The float32 scalar/vector types whose ``zyx_<fn>_<type>`` (templates/common/math.mako) ``text`` calls."""
    return tuple(sorted(set(re.findall(rf"zyx_{fn}_(float\d*)\(", text))))


def source(k: Kernel, opts: Opts) -> tuple[str, str, Program]:
    """(kernel name, OpenCL source, program) of a kernel with its opts."""
    prog = linearize(k, opts)
    name = k.name()
    stmts = statements(prog, k, opts.stream)
    bufs = tuple(("out" if i == 0 else f"in{i}", d, i == 0) for i, d in enumerate(k.bufs))
    params = tuple((f"{PARAM}{i}", param_ctype(d)) for i, d in enumerate(k.params))
    all_dtypes = tuple({d.name: d for d in (*k.bufs, *(e.dtype for e in walk(k.body)))}.values())
    header = (f"{name}: out {k.out_dtype.name}{list(k.out_shape)}"
              + (f", reduce over {list(k.red_shape)}" if k.red_shape else "")
              + f"; ops: {', '.join(k.op_names()) or 'copy'}",
              "inputs: " + (", ".join(f"in{i} {d.name}" for i, d in enumerate(k.bufs) if i) or "none"),
              f"opts: local {prog.local or opts.local}, upcast {list(opts.upcast)}, unroll {opts.unroll}"
              + (f", split {prog.split}" if prog.split > 1 else "")
              + (f", vec {prog.vec} on {'the reduce' if prog.vec_reduce else 'the output'}" if prog.vec > 1 else "")
              + (", streamed stores" if opts.stream else "")
              + (", row tiles inner" if opts.rows_inner and matmul_axes(k) is not None else ""))
    text = str(stmts)
    stream_types = tuple(sorted(set(re.findall(r"zyx_stream_store_(\w+?)\(", text))))
    vec_types = tuple(sorted((vt, 8 if vt.startswith("double") else 4)
                             for vt in set(re.findall(r"zyx_(\w+?)_u \*", text)) | set(stream_types)))
    src = render("kernel.cl.mako", name=name, header=header, bufs=bufs, params=params, dtypes=all_dtypes,
                 index_t=prog.index_t,
                 vec_types=vec_types, stream_types=stream_types,
                 helpers=tuple((fn, _helper_types(fn, text)) for fn in MATH_HELPERS),
                 items=prog.global_items, split=prog.split, stmts=stmts,
                 uses_ipow="zyx_ipow" in text, uses_floordiv="zyx_floordiv_py" in text,
                 err_flag=ERR_FLAG if ERR_FLAG in text else None)
    return name, src, prog


def kernel_source(k: Kernel, opts: Opts) -> str:
    """The OpenCL source of a kernel (what ``ZYX_DEBUG=2`` prints)."""
    return source(k, opts)[1]
