"""Linearizer and passes: structure of lowered programs, CSE/DCE/constant folding, opts."""
from __future__ import annotations

import numpy as np

from zyx import dtype as dt
from zyx import settings
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, is_matmul_like, out_var, red_var
from zyx.ir.linearize import Instr, cse, dce, fold_constants, linearize
from zyx.opt.heuristics import default_opts


def _matmul_kernel(n=8, m=8, k=16):
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, k)
    a = expr.Load(1, dt.float32, sym.add(sym.mul(i, k), r))
    b = expr.Load(2, dt.float32, sym.add(sym.mul(r, m), j))
    body = expr.Reduce("sum", expr.Alu("mul", (a, b), dt.float32), dt.float32)
    return Kernel((n, m), (k,), (dt.float32, dt.float32, dt.float32), body)


def test_elementwise_lowering_shares_loads():
    i = out_var(0, 64)
    x = expr.Load(1, dt.float32, i)
    body = expr.Alu("add", (expr.Alu("mul", (x, x), dt.float32), expr.Alu("mul", (x, x), dt.float32)), dt.float32)
    k = Kernel((64,), (), (dt.float32, dt.float32), body)
    prog = linearize(k, Opts(local=16, upcast=(4,)))
    loads = [ins for ins in prog.instrs if ins.op == "load"]
    stores = [ins for ins in prog.instrs if ins.op == "store"]
    assert len(loads) == 4 and len(stores) == 4  # one load per upcast copy, x*x computed once each
    assert sum(1 for ins in prog.instrs if ins.op == "alu") == 8
    assert prog.global_items == 16


def test_matmul_register_tiling_shares_row_and_column_loads():
    k = _matmul_kernel()
    assert is_matmul_like(k)
    opts = default_opts(k)
    assert opts.upcast == (4, 4)
    prog = linearize(k, Opts(local=4, upcast=(4, 4), unroll=1))
    loop = [ins for ins in prog.instrs if ins.op == "load"]
    assert len(loop) == 8  # 4 rows of a + 4 columns of b for 16 accumulators
    assert sum(1 for ins in prog.instrs if ins.op == "accum") == 16


def test_reduce_loop_structure():
    k = _matmul_kernel(2, 2, 8)
    prog = linearize(k, Opts(local=1, upcast=(1, 1), unroll=2))
    ops_seq = [ins.op for ins in prog.instrs]
    assert ops_seq.index("acc") < ops_seq.index("loop") < ops_seq.index("accum") < ops_seq.index("endloop") \
        < ops_seq.index("store")
    assert sum(1 for o in ops_seq if o == "accum") == 2


def test_passes_fold_cse_dce():
    c1 = Instr("const", dt.int32, (), 3)
    c2 = Instr("const", dt.int32, (), 4)
    add = Instr("alu", dt.int32, (0, 1), ("add", (dt.int32, dt.int32)))
    ld = Instr("load", dt.int32, (), (1, sym.ZERO, sym.ONE, 0))
    ld2 = Instr("load", dt.int32, (), (1, sym.ZERO, sym.ONE, 0))
    mul = Instr("alu", dt.int32, (3, 4), ("mul", (dt.int32, dt.int32)))
    dead = Instr("alu", dt.int32, (2, 2), ("mul", (dt.int32, dt.int32)))
    st = Instr("store", dt.int32, (5,), sym.ZERO)
    prog = (c1, c2, add, ld, ld2, mul, dead, st)
    folded = fold_constants(prog)
    assert folded[2] == Instr("const", dt.int32, (), 7)
    merged = cse(folded)
    assert sum(1 for i in merged if i.op == "load") == 1
    clean = dce(merged)
    assert [i.op for i in clean] == ["load", "alu", "store"]


def _cpu_info(pref=8):
    from types import SimpleNamespace

    return SimpleNamespace(kind="cpu", preferred_vector_width={"float": pref, "double": pref // 2})


def test_vector_plan_masks_or_falls_back():
    from zyx.ir.kernel import vector_plan

    k = _matmul_kernel(8, 12, 16)
    assert vector_plan(k, Opts(vec=4, vec_axis=1)) == (4, 1)
    assert vector_plan(k, Opts(vec=8, vec_axis=1)) == (8, 1)  # 8 does not divide 12: a masked last vector
    assert vector_plan(k, Opts(vec=16, vec_axis=1)) == (1, 0)  # longer than the axis
    assert vector_plan(k, Opts(vec=8, vec_axis=2)) == (8, 2)  # the innermost reduce axis
    assert vector_plan(k, Opts(vec=16, vec_axis=2)) == (16, 2)
    assert vector_plan(k, Opts(vec=3, vec_axis=1)) == (1, 0)
    i = out_var(0, 16)
    ik = Kernel((16,), (), (dt.int32, dt.int32), expr.Load(1, dt.int32, i))
    assert vector_plan(ik, Opts(vec=4, vec_axis=0)) == (1, 0)  # ints have no vector path


def test_vector_reduce_lowers_to_hreduce_after_the_loop():
    k = _matmul_kernel(2, 2, 32)
    prog = linearize(k, Opts(local=1, unroll=2, vec=8, vec_axis=2))
    seq = [ins.op for ins in prog.instrs]
    assert prog.vec == 8 and prog.vec_reduce
    assert seq.index("endloop") < seq.index("hreduce") < seq.index("store")
    loop = next(ins for ins in prog.instrs if ins.op == "loop")
    assert loop.arg == ("r0", 2)  # 32 = 2 steps x unroll 2 x 8 lanes


def test_cpu_heuristics_pick_vectors_and_register_tiles(monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # by the device's own kind
    mm = _matmul_kernel(64, 64, 64)
    i = out_var(0, 64)
    keep = Kernel((64, 64, 1), (64,), mm.bufs, mm.body)  # keepdim output: a trailing 1 axis
    assert is_matmul_like(keep)
    o = default_opts(keep, 256, _cpu_info())
    assert o.vec == 8 and o.vec_axis == 1 and o.upcast[:2] == (8, 2) and o.unroll == 2  # the 8x2 register tile
    row = Kernel((4, 1), (1024,), (dt.float32, dt.float32),
                 expr.Reduce("max", expr.Load(1, dt.float32, sym.add(sym.mul(out_var(0, 4), 1024), red_var(0, 1024))),
                            dt.float32))
    o = default_opts(row, 256, _cpu_info())
    assert o.vec_axis == 2 and o.vec in (8, 16)
    x = expr.Load(1, dt.float32, i)
    simple = Kernel((64,), (), (dt.float32, dt.float32), expr.Alu("add", (x, x), dt.float32))
    assert default_opts(simple, 256, _cpu_info()).vec == 1  # plain arithmetic: PoCL vectorizes it itself
    ex = Kernel((64,), (), (dt.float32, dt.float32), expr.Alu("exp", (x,), dt.float32))
    assert default_opts(ex, 256, _cpu_info()).vec == 8
    assert default_opts(ex).vec == 1  # no device: the generic (GPU-shaped) heuristic


def test_cpu_column_reduce_vectorizes_the_output_axis(monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "auto")  # by the device's own kind
    col = Kernel((1, 64), (300,), (dt.float32, dt.float32),
                 expr.Reduce("sum", expr.Load(1, dt.float32, sym.add(sym.mul(red_var(0, 300), 64), out_var(1, 64))),
                            dt.float32))
    o = default_opts(col, 256, _cpu_info())
    assert o.vec == 8 and o.vec_axis == 1  # the reduce axis is strided: lanes go along the output


def test_index_type_one_rule():
    # one rule for IR, basic and contract kernels: int while every magnitude stays below 2**31 - 1
    assert dt.index_type() == "int" and dt.index_type(0, 2**31 - 2, -(2**31 - 2)) == "int"
    assert dt.index_type(2**31 - 1) == "long" and dt.index_type(5, -(2**31)) == "long"
    assert dt.index_np("int") is np.int32 and dt.index_np("long") is np.int64
    assert linearize(_matmul_kernel(), Opts()).index_t == "int"
