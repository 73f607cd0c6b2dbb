"""Generated OpenCL source: readable, named buffers, one statement a line, compiles and runs."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx.codegen.ir_source import kernel_source, literal
from zyx.ir import expr
from zyx.ir.kernel import Kernel, Opts, out_var


def test_source_is_readable():
    i = out_var(0, 100)
    body = expr.Alu("add", (expr.Load(1, dt.bfloat16, i), expr.Const(1.0, dt.bfloat16)), dt.bfloat16)
    src = kernel_source(Kernel((100,), (), (dt.bfloat16, dt.bfloat16), body), Opts(local=32))
    assert "zyx_e_add: out bfloat16[100]" in src
    assert "__global ushort *restrict out" in src and "__global const ushort *restrict in1" in src
    assert "zyx_f32_to_bf16" in src  # the add is rounded to bfloat16
    assert src.count(";\n") >= 4


def test_literals():
    assert literal(float("inf"), dt.float32) == "INFINITY"
    assert literal(2, dt.int64) == "2L"
    assert literal(0.5, dt.float32) == "0.5f"
    assert literal(True, dt.bool_) == "1"


@pytest.mark.needs_device
def test_debug_prints_source(capsys):
    zyx.debug(2)
    try:
        (zyx.tensor(np.arange(7, dtype=np.float32)) * 3 - 1.25).numpy()
    finally:
        zyx.debug(0)
    err = capsys.readouterr().err
    assert "__kernel void zyx_e_" in err or "launch" in err or "zyx:" in err


@pytest.mark.needs_device
def test_pad_mask_in_source():
    x = zyx.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    y = x.pad((1, 1)) + 1
    np.testing.assert_array_equal(y.numpy(), np.pad(np.arange(6, dtype=np.float32).reshape(2, 3), ((0, 0), (1, 1))) + 1)
