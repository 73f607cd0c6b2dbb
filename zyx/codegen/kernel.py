"""Linear IR -> OpenCL C through ``templates/kernel.cl.mako``, then build and launch.

This module turns each ``Instr`` of a linearized program into one statement (a small
tuple the template renders with the shared dtype helpers of ``common/dtypes.mako``):
values are named ``v<N>``, accumulators ``acc<N>``, buffers ``out`` / ``in<N>``.
16-bit and 8-bit floats compute in float32 and every op's result is rounded to its
dtype (``dt.convert``), so a fused kernel gives the bits of PyTorch's op-by-op result.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from zyx import dtype as dtypes
from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.ir import ops
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts
from zyx.ir.linearize import Program, linearize

BUILD_OPTIONS = "-cl-fp32-correctly-rounded-divide-sqrt"


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


def _float_expr(op: str, a: str, b: str | None, ct: str) -> str:
    one = "1.0f" if ct == "float" else "1.0"
    half = "0.5f" if ct == "float" else "0.5"
    f = "f" if ct == "float" else ""
    table = {
        "add": f"{a} + {b}", "sub": f"{a} - {b}", "mul": f"{a} * {b}", "div": f"{a} / {b}",
        "floordiv": f"floor({a} / {b})", "mod": f"zyx_fmod_py{'' if ct == 'float' else '_d'}({a}, {b})", "pow": f"pow({a}, {b})",
        "maximum": f"(({a} > {b} || isnan({a})) ? {a} : {b})",
        "minimum": f"(({a} < {b} || isnan({a})) ? {a} : {b})",
        "neg": f"-{a}", "abs": f"fabs({a})", "exp": f"exp({a})", "exp2": f"exp2({a})", "log": f"log({a})",
        "log2": f"log2({a})", "sqrt": f"sqrt({a})", "rsqrt": f"{one} / sqrt({a})", "sin": f"sin({a})",
        "cos": f"cos({a})", "tan": f"tan({a})", "tanh": f"tanh({a})", "erf": f"erf({a})",
        "sigmoid": f"{one} / ({one} + exp(-{a}))", "silu": f"{a} / ({one} + exp(-{a}))",
        "relu": f"(({a} > 0 || isnan({a})) ? {a} : 0)",
        "gelu": f"{half} * {a} * ({one} + erf({a} * 0.7071067811865476{f}))",
        "gelu_tanh": f"{half} * {a} * ({one} + tanh(0.7978845608028654{f} * ({a} + 0.044715{f} * {a} * {a} * {a})))",
        "reciprocal": f"{one} / {a}", "floor": f"floor({a})", "ceil": f"ceil({a})", "round": f"rint({a})",
        "trunc": f"trunc({a})", "sign": f"({a} > 0 ? {one} : ({a} < 0 ? -{one} : 0))", "square": f"{a} * {a}",
    }
    return table[op]


def _int_expr(op: str, a: str, b: str | None, d: DType) -> str:
    ct = ctype(d)
    signed = d.kind == "int"
    guard = f"{b} == -1 ? " if signed else ""
    table = {
        "add": f"({ct})({a} + {b})", "sub": f"({ct})({a} - {b})", "mul": f"({ct})({a} * {b})",
        "floordiv": f"({b} == 0 ? ({ct})0 : " + (f"{guard}({ct})(-{a}) : " if signed else "")
                    + (f"({ct})({a} / {b} - ((({a} % {b}) != 0 && (({a} < 0) != ({b} < 0))) ? 1 : 0)))"
                       if signed else f"({ct})({a} / {b}))"),
        "mod": f"({b} == 0 ? ({ct})0 : " + (f"{guard}({ct})0 : " if signed else "")
               + (f"({ct})((({a} % {b}) != 0 && (({a} % {b} < 0) != ({b} < 0))) ? {a} % {b} + {b} : {a} % {b}))"
                  if signed else f"({ct})({a} % {b}))"),
        "pow": f"({ct})zyx_ipow((long){a}, (long){b})",
        "maximum": f"max({a}, {b})", "minimum": f"min({a}, {b})",
        "and": f"({ct})({a} & {b})", "or": f"({ct})({a} | {b})", "xor": f"({ct})({a} ^ {b})",
        "neg": f"({ct})(-{a})", "abs": f"({ct})abs({a})" if signed else a,
        "sign": f"({ct})(({a} > 0) - ({a} < 0))", "square": f"({ct})({a} * {a})",
        "relu": f"({a} > 0 ? {a} : ({ct})0)", "invert": f"({ct})(~{a})",
        "floor": a, "ceil": a, "round": a, "trunc": a,
    }
    return table[op]


def alu_expr(op: str, srcs: tuple[DType, ...], out: DType, names: list[str]) -> str:
    """The C expression of one ALU op on named compute-type operands."""
    a = names[0]
    b = names[1] if len(names) > 1 else None
    s = srcs[0]
    cmp = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
    if op in cmp:
        return f"(uchar)({a} {cmp[op]} {b})"
    if op == "where":
        return f"({a} ? {names[1]} : {names[2]})"
    if op == "not":
        return f"(uchar)(!{a})"
    if op == "isnan":
        return f"(uchar)isnan({a})" if s.is_float else "(uchar)0"
    if op == "isinf":
        return f"(uchar)isinf({a})" if s.is_float else "(uchar)0"
    if s.is_bool:
        if op in ("and", "or", "xor"):
            return f"(uchar)({a} {'&' if op == 'and' else '|' if op == 'or' else '^'} {b})"
        if op == "invert":
            return f"(uchar)(!{a})"
        if op in ("maximum",):
            return f"(uchar)({a} | {b})"
        if op in ("minimum",):
            return f"(uchar)({a} & {b})"
        if op in ("abs", "relu", "square"):
            return a
    if s.is_float:
        return _float_expr(op, a, b, ctype(s))
    return _int_expr(op, a, b, s)


def _accum_line(op: str, acc: str, v: str, d: DType, src: DType, pos: str | None) -> list[str]:
    if op == "sum":
        return [f"{acc} += {v};"]
    if op == "prod":
        return [f"{acc} *= {v};"]
    if op in ("max", "min"):
        cmp = ">" if op == "max" else "<"
        if d.is_float:
            return [f"{acc} = ({v} {cmp} {acc} || isnan({v})) ? {v} : {acc};"]
        return [f"{acc} = {'max' if op == 'max' else 'min'}({acc}, {v});"]
    cmp = ">" if op == "argmax" else "<"
    nan = f" || (isnan({v}) && !isnan({acc}_v))" if src.is_float else ""
    return [f"if ({v} {cmp} {acc}_v{nan}) {{ {acc}_v = {v}; {acc} = {pos}; }}"]


def _index_name(v: sym.Var) -> str:
    return v.name


def statements(prog: Program, k: Kernel) -> tuple[tuple, ...]:
    """The template's statement list for a program."""
    out: list[tuple] = []
    names: dict[int, str] = {}
    dts: dict[int, DType] = {}
    for i, ins in enumerate(prog.instrs):
        name = f"v{i}"
        if ins.op == "define":
            vname, expr = ins.arg
            out.append(("define", vname, sym.render(expr, _index_name)))
            continue
        if ins.op == "const":
            out.append(("expr", ctype(ins.dtype), name, literal(ins.arg, ins.dtype)))
        elif ins.op == "load":
            buf, index, valid, other = ins.arg
            v = None if valid == sym.ONE else sym.render(valid, _index_name)
            out.append(("load", ctype(ins.dtype), name, ins.dtype, f"in{buf}", sym.render(index, _index_name), v,
                        literal(other, ins.dtype)))
        elif ins.op == "cond":
            out.append(("expr", "uchar", name, f"(uchar)({sym.render(ins.arg, _index_name)})"))
        elif ins.op == "cast":
            out.append(("cast", ctype(ins.dtype), name, ins.arg, ins.dtype, names[ins.srcs[0]]))
        elif ins.op == "alu":
            op, src_dts = ins.arg
            expr = alu_expr(op, src_dts, ins.dtype, [names[s] for s in ins.srcs])
            if needs_rounding(ins.dtype) and op not in ops.EXACT_OPS and op not in ops.COMPARISONS:
                out.append(("round", ctype(ins.dtype), name, ins.dtype, expr))
            else:
                out.append(("expr", ctype(ins.dtype), name, expr))
        elif ins.op == "acc":
            rop, init, src_dt = ins.arg
            name = f"acc{i}"
            if rop in ("argmax", "argmin"):
                out.append(("acc", ctype(src_dt), f"{name}_v", literal(init, src_dt)))
                out.append(("acc", "long", name, "0L"))
            else:
                out.append(("acc", ctype(ins.dtype), name, literal(init, ins.dtype)))
        elif ins.op == "accum":
            rop, pos = ins.arg
            acc_i, v_i = ins.srcs
            src_dt = dts[v_i]
            for line in _accum_line(rop, names[acc_i], names[v_i], ins.dtype, src_dt,
                                    None if pos is None else f"(long)({sym.render(pos, _index_name)})"):
                out.append(("line", line))
        elif ins.op == "loop":
            out.append(("loop", ins.arg[0], ins.arg[1]))
        elif ins.op == "endloop":
            out.append(("endloop",))
        elif ins.op == "store":
            v = ins.srcs[0]
            out.append(("store", "out", sym.render(ins.arg, _index_name), dts[v], ins.dtype, names[v]))
        names[i] = name
        dts[i] = ins.dtype
    return tuple(out)


def source(k: Kernel, opts: Opts) -> tuple[str, str, Program]:
    """(kernel name, OpenCL source, program) of a kernel with its opts."""
    prog = linearize(k, opts)
    name = k.name()
    stmts = statements(prog, k)
    bufs = tuple(("out" if i == 0 else f"in{i}", d, i == 0) for i, d in enumerate(k.bufs))
    all_dtypes = tuple({d.name: d for d in (*k.bufs, *(e.dtype for e in ops.walk(k.body)))}.values())
    header = (f"{name}: out {k.out_dtype.name}{list(k.out_shape)}"
              + (f", reduce over {list(k.red_shape)}" if k.red_shape else "")
              + f"; ops: {', '.join(k.op_names()) or 'copy'}",
              "inputs: " + (", ".join(f"in{i} {d.name}" for i, d in enumerate(k.bufs) if i) or "none"),
              f"opts: local {opts.local}, upcast {list(opts.upcast)}, unroll {opts.unroll}")
    src = render("kernel.cl.mako", name=name, header=header, bufs=bufs, dtypes=all_dtypes, index_t=prog.index_t,
                 items=prog.global_items, stmts=stmts, uses_ipow=any("zyx_ipow" in str(s) for s in stmts),
                 fp32=dtypes.float32)
    return name, src, prog


@lru_cache(maxsize=4096)
def _cached_source(k: Kernel, opts: Opts) -> tuple[str, str, int]:
    name, src, prog = source(k, opts)
    return name, src, prog.global_items


def launch_kernel(device: Any, k: Kernel, opts: Opts, args: list) -> Any:
    """Build (cached) and enqueue ``k`` with buffer ``args`` (output first); returns the event."""
    from zyx.backend.launch import compile_kernel, launch

    name, src, items = _cached_source(k, opts)
    ck = compile_kernel(device, src, name, BUILD_OPTIONS)
    local = max(1, min(opts.local, device.info.max_work_group_size))
    glob = -(-items // local) * local
    return launch(ck, (glob,), (local,), args)


def kernel_source(k: Kernel, opts: Opts) -> str:
    """The OpenCL source of a kernel (what ``ZYX_DEBUG=2`` prints)."""
    return _cached_source(k, opts)[1]
