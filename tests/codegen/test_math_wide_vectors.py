"""The float32 exp helper at vector width 16 (AVX-512 CPUs get float16 vectors on PoCL). The pip PoCL's LLVM 14
aborts on a 16-wide float-to-int convert there ("Cannot select ... X86ISD::CVTTP2SI"), which took every
vectorized exp, softmax row and exact GELU down with it; the helper takes 2^k's exponent from the bits of the
magic-number rounding instead, which gives the same integer."""
from __future__ import annotations

import math

import numpy as np
import pytest
from mako.lookup import TemplateLookup

import zyx
from zyx.codegen.render import templates_dir


@pytest.mark.parametrize("t", ["float", "float4", "float16"])
def test_exp_helper_converts_no_float_to_int(t: str) -> None:
    lookup = TemplateLookup(directories=[str(templates_dir())], strict_undefined=True)
    src = lookup.get_template("common/math.mako").get_def("exp_fn").render(t=t)
    assert f"zyx_exp_{t}(" in src
    assert "convert_" not in src, src


@pytest.mark.needs_device
@pytest.mark.parametrize("width", [16, 128])
def test_softmax_and_exact_gelu_rows(width: int) -> None:
    rng = np.random.default_rng(width)
    x = (rng.standard_normal((48, width)) * 8).astype(np.float32)
    x[0, :] = -np.inf  # a fully masked row: NaN, as in PyTorch
    x[1, 3] = -np.inf
    x[2, :] = np.linspace(-110, 95, width, dtype=np.float32)  # k of 2^k from -159 to 137 (clamped inside)
    z = zyx.tensor(x)
    got = z.softmax(-1).numpy()
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        e = np.exp(x64 - x64.max(-1, keepdims=True))
        ref = e / e.sum(-1, keepdims=True)
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1:], ref[1:], rtol=5e-6, atol=1e-37)
    assert got[1, 3] == 0.0
    erf = np.vectorize(math.erf)
    np.testing.assert_allclose(zyx.nn.functional.gelu(z[1:]).numpy(), 0.5 * x64[1:] * (1 + erf(x64[1:] / math.sqrt(2))),
                               rtol=2e-6, atol=1e-6)
