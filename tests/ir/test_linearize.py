"""Linearizer and passes: structure of lowered programs, CSE/DCE/constant folding, opts."""
from __future__ import annotations

from zyx import dtype as dt
from zyx.ir import ops
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, Opts, apply_opt, default_opts, is_matmul_like, out_var, red_var
from zyx.ir.linearize import Instr, cse, dce, fold_constants, linearize


def _matmul_kernel(n=8, m=8, k=16):
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, k)
    a = ops.Load(1, dt.float32, sym.add(sym.mul(i, k), r))
    b = ops.Load(2, dt.float32, sym.add(sym.mul(r, m), j))
    body = ops.Reduce("sum", ops.Alu("mul", (a, b), dt.float32), dt.float32)
    return Kernel((n, m), (k,), (dt.float32, dt.float32, dt.float32), body)


def test_elementwise_lowering_shares_loads():
    i = out_var(0, 64)
    x = ops.Load(1, dt.float32, i)
    body = ops.Alu("add", (ops.Alu("mul", (x, x), dt.float32), ops.Alu("mul", (x, x), dt.float32)), dt.float32)
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


def test_opt_actions_are_pure():
    o = Opts()
    o2 = apply_opt(o, "upcast", (1, 4))
    assert o.upcast == () and o2.upcast == (1, 4)
    assert apply_opt(o2, "local", 32).local == 32 and o2.local == o.local
