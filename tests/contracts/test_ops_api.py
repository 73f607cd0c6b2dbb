"""The contract ops' API: every accept constraint refused with ContractError before anything
runs (no kernel launched, destinations untouched), ``zyx.contracts()``, costs and calibration,
and the contract document agreeing with the kernels."""
from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import zyx
from zyx.backend import launch as launch_mod
from zyx.codegen.render import templates_dir
from zyx.contracts import calibrate
from zyx.contracts.spec.cost import Cost
from zyx.kernels import contracts as kernels
from zyx.kernels.contracts import common

from contract_data import on_device, raw

ROOT = Path(__file__).resolve().parents[2]


def _t(device, *shape, dtype=zyx.float32):
    return on_device(raw(shape, dtype, seed=sum(shape) + 1), device)


# Each case: (id, fn(device, dest) -> call, message regex). ``dest`` is a (4, 6) float32
# tensor holding a sentinel; in-place cases write (or rather, must not write) into it.
CASES: list[tuple[str, Callable[[Any, Any], Any], str]] = [
    # contiguize
    ("contiguize-not-a-tensor", lambda d, dest: zyx.frontend.contract_ops.contiguize(np.zeros(3)),
     r"contiguize: input = .* not a zyx.Tensor"),
    # flip
    ("flip-dims-range", lambda d, dest: dest.flip(2), r"flip: dims\[0\] = 2 is out of range"),
    ("flip-dims-twice", lambda d, dest: dest.flip(0, -2), r"flip: dims = .* names an axis twice"),
    ("flip-dims-type", lambda d, dest: dest.flip(0.5), r"flip: dims = 0.5 is not an int"),
    # roll
    ("roll-dims-range", lambda d, dest: dest.roll(1, 5), r"roll: dims\[0\] = 5 is out of range"),
    ("roll-count-mismatch", lambda d, dest: dest.roll((1, 2), 0), r"roll: shifts = .* has 2 entries but dims"),
    ("roll-flat-two-shifts", lambda d, dest: dest.roll((1, 2)), r"roll: shifts = .* dims is None"),
    ("roll-shift-type", lambda d, dest: dest.roll(1.5, 0), r"roll: shifts = 1.5 is not an int"),
    # concat
    ("concat-empty", lambda d, dest: zyx.cat([]), r"concat: tensors is empty"),
    ("concat-rank0", lambda d, dest: zyx.cat([zyx.tensor(1.0, device=d)]), r"concat: inputs\[0\] has rank 0"),
    ("concat-rank-mismatch", lambda d, dest: zyx.cat([dest, _t(d, 4)]), r"concat: inputs\[1\] has rank 1"),
    ("concat-shape-mismatch", lambda d, dest: zyx.cat([dest, _t(d, 4, 5)], 0),
     r"concat: inputs\[1\]\.shape\[1\] = 5 differs"),
    ("concat-dim-range", lambda d, dest: zyx.cat([dest, dest], 2), r"concat: dim = 2 is out of range"),
    ("concat-not-tensors", lambda d, dest: zyx.cat(dest), r"concat: tensors = Tensor is not a sequence"),
    # triangular
    ("triu-rank1", lambda d, dest: _t(d, 5).triu(), r"triangular: input rank 1 .* outside 2..=8"),
    ("tril-rank9", lambda d, dest: _t(d, *[1] * 9).tril(), r"triangular: input rank 9 .* outside 2..=8"),
    ("triu-diagonal-type", lambda d, dest: dest.triu(1.5), r"triangular: diagonal = 1.5 is not an int"),
    # masked_fill
    ("mask-dtype", lambda d, dest: dest.masked_fill(_t(d, 4, 6, dtype=zyx.uint8), 1.0),
     r"masked_fill: mask dtype uint8 is not accepted"),
    ("mask-shape", lambda d, dest: dest.masked_fill(zyx.ones(5, dtype=zyx.bool, device=d), 1.0),
     r"masked_fill: mask shape \(5,\) is not broadcastable"),
    ("fill-int-range", lambda d, dest: _t(d, 3, dtype=zyx.int8).masked_fill(zyx.ones(3, dtype=zyx.bool, device=d), 300),
     r"masked_fill: fill = 300 is outside the int8 range"),
    ("fill-nan-int",
     lambda d, dest: _t(d, 3, dtype=zyx.int32).masked_fill(zyx.ones(3, dtype=zyx.bool, device=d), float("nan")),
     r"masked_fill: fill = nan cannot be stored in int32"),
    ("fill-overflow",
     lambda d, dest: _t(d, 3, dtype=zyx.float16).masked_fill(zyx.ones(3, dtype=zyx.bool, device=d), 1e6),
     r"masked_fill: fill = 1000000.0 overflows float16"),
    ("fill-inf-e4m3",
     lambda d, dest: _t(d, 3, dtype=zyx.float8_e4m3).masked_fill(zyx.ones(3, dtype=zyx.bool, device=d), float("inf")),
     r"masked_fill: fill = inf cannot be stored in float8_e4m3"),
    ("fill-type", lambda d, dest: dest.masked_fill(zyx.ones(6, dtype=zyx.bool, device=d), "x"),
     r"masked_fill: fill = 'x' is not a bool, int or float"),
    ("fill-tensor-size", lambda d, dest: dest.masked_fill(zyx.ones(6, dtype=zyx.bool, device=d), _t(d, 2)),
     r"masked_fill: fill is a tensor of shape \(2,\)"),
    # cumsum
    ("cumsum-dtype", lambda d, dest: _t(d, 3, dtype=zyx.float8_e4m3).cumsum(0),
     r"CumSum: no contract accepts dtype float8_e4m3"),
    ("cumsum-dim", lambda d, dest: dest.cumsum(2), r"cumsum_f32: dim = 2 is out of range"),
    # the scans beyond cumsum
    ("cumprod-dim", lambda d, dest: dest.cumprod(-3), r"cumprod_f32: dim = -3 is out of range for rank 2; "
                                                       r"expected -2 <= dim < 2"),
    ("cumprod-dim-type", lambda d, dest: dest.cumprod(1.5), r"cumprod_f32: dim = 1.5 is not an int"),
    ("cummax-dtype", lambda d, dest: _t(d, 3, dtype=zyx.uint16).cummax(0),
     r"CumMax: no contract accepts dtype uint16; accepted: .*int64 \(cummax\)"),
    ("cummin-dim", lambda d, dest: _t(d, 3, dtype=zyx.int32).cummin(1), r"cummin: dim = 1 is out of range for rank 1"),
    ("logcumsumexp-dtype", lambda d, dest: _t(d, 3, dtype=zyx.int64).logcumsumexp(0),
     r"LogCumSumExp: no contract accepts dtype int64; accepted: bfloat16 \(logcumsumexp_f32\)"),
    ("logcumsumexp-f64-dim", lambda d, dest: _t(d, 3, dtype=zyx.float64).logcumsumexp(4),
     r"logcumsumexp_f64: dim = 4 is out of range"),
    ("cumprod-input", lambda d, dest: zyx.Tensor.cumprod([1.0], 0), r"cumprod: input = \[1.0\] is not a zyx.Tensor"),
    # write_slice
    ("ws-rank0-source", lambda d, dest: zyx.write_slice(dest, zyx.tensor(1.0, device=d), [(0, 1), (0, 1)]),
     r"write_slice: source rank 0 .* outside 1..=8"),
    ("ws-rank-mismatch", lambda d, dest: zyx.write_slice(dest, _t(d, 6), [(0, 6)]),
     r"write_slice: dest_shape = \(4, 6\) has 2 axes but source has rank 1"),
    ("ws-ranges-len", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3), [(0, 2)]),
     r"write_slice: ranges has 1 entries but dest has rank 2"),
    ("ws-start-end", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3), [(3, 1), (0, 3)]),
     r"write_slice: ranges\[0\] = \(3, 1\) has start > end"),
    ("ws-negative", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3), [(-1, 1), (0, 3)]),
     r"write_slice: ranges\[0\] = \(-1, 1\) starts below 0"),
    ("ws-exceeds", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3), [(0, 2), (5, 8)]),
     r"write_slice: ranges\[1\] = \(5, 8\) exceeds dest_shape\[1\] = 6"),
    ("ws-box-mismatch", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3), [(0, 2), (0, 2)]),
     r"write_slice: source.shape\[1\] = 3 but ranges\[1\] = \(0, 2\) spans 2"),
    ("ws-dtype", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3, dtype=zyx.float16), [(0, 2), (0, 3)]),
     r"write_slice: dest_dtype = float32 differs from source dtype float16"),
    ("ws-pair", lambda d, dest: zyx.write_slice(dest, _t(d, 2, 3), [(0, 2), 3]),
     r"write_slice: ranges\[1\] = 3 is not a \(start, end\) pair"),
    ("ws-broadcast-dest", lambda d, dest: zyx.write_slice(dest[:1].expand(3, 6), _t(d, 3, 6), [(0, 3), (0, 6)]),
     r"write_slice: dest is a broadcast view"),
    # write_slice_rotating
    ("rot-axis", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 2, 6), 2, 0),
     r"write_slice_rotating: axis = 2 is out of range"),
    ("rot-modulus-zero", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 1, 6), 0, 0, modulus=0),
     r"write_slice_rotating: modulus = 0 is outside 0 < modulus <= dest_shape\[0\] = 4"),
    ("rot-modulus-big", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 1, 6), 0, 0, modulus=5),
     r"write_slice_rotating: modulus = 5 is outside"),
    ("rot-rows", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 3, 6), 0, 1, modulus=2),
     r"write_slice_rotating: source.shape\[0\] = 3 rows exceed modulus = 2"),
    ("rot-off-axis", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 2, 5), 0, 1),
     r"write_slice_rotating: source.shape\[1\] = 5 differs from dest_shape\[1\] = 6"),
    ("rot-pos-dtype", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 2, 6), 0, zyx.tensor([1], device=d)),
     r"write_slice_rotating: position dtype int64 is not accepted; expected uint32/int32"),
    ("rot-pos-size",
     lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 2, 6), 0, zyx.tensor([1, 2], dtype=zyx.int32, device=d)),
     r"write_slice_rotating: position has shape \(2,\); expected exactly one element"),
    ("rot-pos-type", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 2, 6), 0, 1.5),
     r"write_slice_rotating: position = 1.5 is not a host int or a one-element"),
    ("rot-dtype", lambda d, dest: zyx.write_slice_rotating(dest, _t(d, 2, 6, dtype=zyx.int32), 0, 1),
     r"write_slice_rotating: dest_dtype = float32 differs"),
    # write_slice_doff
    ("doff-host-int", lambda d, dest: zyx.write_slice_doff(dest, _t(d, 2, 6), 0, 1),
     r"write_slice_doff: offset = 1 is not a one-element int64 tensor"),
    ("doff-offset-dtype",
     lambda d, dest: zyx.write_slice_doff(dest, _t(d, 2, 6), 0, zyx.tensor([1], dtype=zyx.int32, device=d)),
     r"write_slice_doff: offset dtype int32 is not accepted; expected int64"),
    ("doff-offset-size", lambda d, dest: zyx.write_slice_doff(dest, _t(d, 2, 6), 0, zyx.tensor([1, 2], device=d)),
     r"write_slice_doff: offset has shape \(2,\)"),
    ("doff-axis", lambda d, dest: zyx.write_slice_doff(dest, _t(d, 2, 6), -3, zyx.tensor([0], device=d)),
     r"write_slice_doff: axis = -3 is out of range"),
    ("doff-width", lambda d, dest: zyx.write_slice_doff(dest, _t(d, 5, 6), 0, zyx.tensor([0], device=d)),
     r"write_slice_doff: ranges\[0\] = \(0, 5\) is 5 wide on axis 0, wider than dest_shape\[0\] = 4"),
    ("doff-ranges",
     lambda d, dest: zyx.write_slice_doff(dest, _t(d, 2, 3), 0, zyx.tensor([0], device=d), ranges=[(0, 2), (4, 7)]),
     r"write_slice_doff: ranges\[1\] = \(4, 7\) exceeds dest_shape\[1\] = 6"),
    ("doff-box", lambda d, dest: zyx.write_slice_doff(dest, _t(d, 2, 3), 0, zyx.tensor([0], device=d)),
     r"write_slice_doff: source.shape\[1\] = 3 but ranges\[1\] = \(0, 6\) spans 6"),
]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_contract_violation_refused_before_launch(device, bits_equal, monkeypatch, case):
    _, call, pattern = case
    sentinel = raw((4, 6), zyx.float32, seed=77)
    dest = on_device(sentinel, device)
    launched: list[str] = []

    def no_launch(kernel, *args, **kwargs):
        launched.append(kernel.name)
        raise AssertionError(f"contract kernel {kernel.name} launched before the contract was checked")

    for module in (launch_mod, *kernels.MODULES):  # every contract kernel starts through one of these
        if hasattr(module, "launch"):
            monkeypatch.setattr(module, "launch", no_launch)
    with pytest.raises(zyx.ContractError, match=pattern):
        call(device, dest)
    monkeypatch.undo()
    assert not launched
    bits_equal(dest.numpy(), sentinel)


def test_contract_errors_are_value_errors(device):
    with pytest.raises(ValueError):
        zyx.tensor([1.0, 2.0], device=device).flip(3)


# ---------------------------------------------------------------- zyx.contracts()


def test_contracts_listing():
    cs = zyx.contracts()
    names = cs.names()
    for expected in ("contiguize", "flip", "roll", "concat", "write_slice", "write_slice_rotating",
                     "write_slice_doff", "triangular", "masked_fill", "cumsum_f32", "cumsum_f64",
                     "cumsum_bf16", "cumsum_f16", "cumsum_int", "cumprod_f32", "cumprod_f64", "cumprod_int",
                     "cummax", "cummin", "logcumsumexp_f32", "logcumsumexp_f64"):
        assert expected in names
    by_name = {c.name: c for c in cs}
    assert by_name["cumsum_bf16"].op_kind == "CumSum" and by_name["cumsum_bf16"].dtypes == (zyx.bfloat16,)
    assert zyx.float8_e5m2 in by_name["flip"].dtypes
    cost = by_name["flip"].cost(outer=2, dim_size=3, inner=4, dtype_size=4)
    assert isinstance(cost, Cost) and cost.bytes_moved == 192 and cost.flops == 0
    table = str(cs)
    assert ("| flip | Flip | all 15 | outer, dim_size, inner, dtype_size | "
            "`2 * outer * dim_size * inner * dtype_size` |") in table
    assert "| cumsum_f32 | CumSum | float32 | outer, dim_size, inner, [dtype_size] |" in table
    assert "| cummax | CumMax |" in table and "`outer * dim_size * inner * (2 * dtype_size + 8)`" in table
    assert "| write_slice | WriteSlice | all 15 | source_n, dtype_size | `2 * source.n * dtype_size` |" in table
    import zyx.contracts as package  # still the package: submodules keep working
    import zyx.contracts.calibrate as cal

    assert kernels.flip is not None and callable(package) and cal is calibrate
    assert package.get("flip") is zyx.contracts.get("flip") and "lookup" in dir(package)
    # composed, not patched: the package is a plain module, reached through .package
    assert type(sys.modules["zyx.contracts"]) is types.ModuleType
    assert zyx.contracts.package is sys.modules["zyx.contracts"]


def test_every_contract_has_its_template_and_tunables():
    for c in zyx.contracts():
        assert (templates_dir() / "contracts" / c.entry_point).is_file(), c.name
        module = kernels.module_for(c.name)
        assert common.template(c.name) == f"contracts/{c.entry_point}" and c.name in module.CONTRACTS
        declared = c.raw.get("tunables")
        assert declared is not None, f"{c.name}: the document declares no tunables"
        assert set(declared) == set(module.DECLARED), (c.name, declared)


def test_declared_determinism_matches_kernels(device, bits_equal):
    """bitwise contracts are byte moves, integer scans or cummax/cummin (checked against NumPy
    and PyTorch elsewhere); same_hardware_bitwise float scans repeat their bits."""
    det = {c.name: c.determinism for c in zyx.contracts()}
    floats = {n for n in det if n.startswith(("cumsum", "cumprod", "logcumsumexp")) and not n.endswith("_int")}
    assert floats == {"cumsum_f32", "cumsum_f64", "cumsum_bf16", "cumsum_f16", "cumprod_f32", "cumprod_f64",
                      "logcumsumexp_f32", "logcumsumexp_f64"}
    assert all(det[n] == "bitwise" for n in det if n not in floats)
    assert all(det[n] == "same_hardware_bitwise" for n in floats)
    x = zyx.randn(5000, device=device)
    bits_equal(x.cumsum(0).numpy(), x.cumsum(0).numpy())


# ---------------------------------------------------------------- calibration


@pytest.mark.parametrize("name", [c.name for c in zyx.contracts()])
def test_calibration_workloads_pass_the_fkc_symbols(device, name):
    """Each calibration workload prices itself with exactly the symbols its contract's cost takes,
    and moves twice its data bytes (plus one byte per mask element for masked_fill)."""
    if name.endswith("_f64") and not device.info.has_fp64:
        pytest.skip("no float64 on this device")
    w = calibrate.workload(device, name, 1 << 12)
    assert tuple(w.symbols) == zyx.contracts.get(name).cost_spec.symbols
    data = sum(a.nbytes for k, a in w.arrays.items() if k not in ("dest", "mask"))
    extra = {"masked_fill": w.arrays.get("mask", np.zeros(0)).size}  # one byte per mask element
    extra.update(dict.fromkeys(("cummax", "cummin"), 8 * w.arrays["x"].size if "x" in w.arrays else 0))  # indices
    assert w.bytes_moved == 2 * data + extra.get(name, 0)
    if name.startswith(("cum", "logcum")):  # cummin times cummin, not cummax
        assert w.describe.startswith(name.split("_")[0] + " ")


def test_calibration_fits_stores_and_predicts(device, zyx_cache_dir):
    data = calibrate.calibrate(device, quick=True, names=["flip", "cumsum_f32"], repeats=2)
    rec = data["kernels"]["flip"]
    assert rec["bytes_per_s"] > 0 and rec["overhead_s"] >= 0 and len(rec["points"]) == len(calibrate.QUICK_SIZES)
    for point in rec["points"] + [rec["check"]]:  # the workload's FKC cost symbols, and its bytes from them
        sym = point["symbols"]
        assert list(sym) == ["outer", "dim_size", "inner", "dtype_size"] and sym["dtype_size"] == 4
        assert point["bytes_moved"] == 2 * sym["outer"] * sym["dim_size"] * sym["inner"] * 4
    stored = json.loads(calibrate._path(device).read_text())
    assert stored["signature"] == device.info.signature and "cumsum_f32" in stored["kernels"]
    fit = calibrate.fit_for(zyx.contracts.get("flip"), device)
    assert fit is not None and math.isclose(fit.bytes_per_s, rec["bytes_per_s"])
    symbols = {"outer": 1, "dim_size": 1 << 20, "inner": 1, "dtype_size": 4}
    predicted = calibrate.cost(zyx.contracts.get("flip"), device, **symbols).predicted_s
    assert predicted is not None and predicted > 0
    assert zyx.contracts.get("flip").cost(**symbols).predicted_s is None  # the spec layer looks up no fit
    # the public listing (API.md: zyx.contracts() ... .cost(**params) -> Cost(..., predicted_s)) predicts
    listed = next(c for c in zyx.contracts(device) if c.name == "flip")
    assert listed.cost(**symbols).predicted_s == predicted
    assert listed == zyx.contracts.get("flip") and listed.op_kind == zyx.contracts.get("flip").op_kind
    if device is zyx.default_device():
        assert "GB/s" in str(zyx.contracts())


def test_calibration_file_corrupt_is_ignored(device, zyx_cache_dir):
    path = calibrate._path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    saved = path.read_bytes() if path.exists() else None
    try:
        path.write_text("{not json")
        calibrate._loaded.pop(device.id, None)
        assert calibrate.load(device) is None
        assert calibrate.fit_for(zyx.contracts.get("flip"), device) is None
    finally:
        if saved is not None:
            path.write_bytes(saved)
        else:
            path.unlink()
        calibrate._loaded.pop(device.id, None)


def test_fit_recovers_overhead_and_bandwidth():
    points = [(b, 2e-6 + b / 5e9) for b in (1e4, 1e6, 1e8)]
    f = calibrate.fit(points)
    assert math.isclose(f.overhead_s, 2e-6, rel_tol=1e-3) and math.isclose(f.bytes_per_s, 5e9, rel_tol=1e-6)


# ---------------------------------------------------------------- examples


@pytest.mark.needs_device
def test_kv_cache_ring_example(run_python):
    code = (ROOT / "examples" / "kv_cache_ring.py").read_text()
    result = run_python(code.replace('if __name__ == "__main__":', "if True:"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "match" in result.stdout


def test_pytorch_forms_of_flip_masked_fill_and_scan_dtype(device, torch):
    """PyTorch's forms a ported program uses: ``flip(0)`` of a 0-d tensor, a mask that broadcasts
    ``self`` up (out-of-place ``masked_fill``), and ``cumsum``/``cumprod(dim, dtype=)``."""
    s = zyx.tensor(4.0, device=device)
    assert s.flip(0).item() == 4.0 and s.flip(-1).item() == 4.0
    with pytest.raises(IndexError):
        s.flip(1)
    rng = np.random.default_rng(7)
    x = rng.normal(size=(2, 4)).astype(np.float32)
    mask = rng.random((3, 1, 4)) > 0.5
    z = zyx.tensor(x, device=device).masked_fill(zyx.tensor(mask, device=device), -1.0)
    t = torch.from_numpy(x).masked_fill(torch.from_numpy(mask), -1.0)
    assert z.shape == tuple(t.shape)
    np.testing.assert_array_equal(z.numpy(), t.numpy())
    with pytest.raises(zyx.ContractError, match="not broadcastable"):
        zyx.tensor(x, device=device).masked_fill(zyx.ones(3, dtype=zyx.bool, device=device), 0.0)
    a = (rng.normal(size=(3, 5)) * 4).astype(np.float32)
    for zdt, tdt in [(zyx.int32, torch.int32), (zyx.float64, torch.float64), (zyx.int8, torch.int8)]:
        for op in ("cumsum", "cumprod"):
            got = getattr(zyx.tensor(a, device=device), op)(1, dtype=zdt)
            want = getattr(torch.from_numpy(a), op)(1, dtype=tdt)
            assert got.dtype is zdt
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    big = zyx.full((40,), 10**8, dtype=zyx.int32, device=device).cumsum(0, dtype=zyx.int32)  # wraps in int32
    want = torch.full((40,), 10**8, dtype=torch.int32).cumsum(0, dtype=torch.int32)
    np.testing.assert_array_equal(big.numpy(), want.numpy())


def test_masked_fill_with_a_fill_tensor_that_needs_a_gradient(device, torch):
    """The fill tensor's gradient is the sum of the filled elements' (PyTorch); it was silently None."""
    rng = np.random.default_rng(8)
    x = rng.normal(size=(4, 5))
    mask = rng.random((4, 5)) > 0.5
    g = rng.normal(size=(4, 5))
    zx = zyx.tensor(x, device=device)
    zx.requires_grad = True
    zv = zyx.tensor(2.0, dtype=zyx.float64, device=device)
    zv.requires_grad = True
    out = zx.masked_fill(zyx.tensor(mask, device=device), zv)
    out.backward(zyx.tensor(g, device=device))
    tx = torch.from_numpy(x).requires_grad_(True)
    tv = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    tout = tx.masked_fill(torch.from_numpy(mask), tv)
    tout.backward(torch.from_numpy(g))
    np.testing.assert_array_equal(out.detach().numpy(), tout.detach().numpy())
    np.testing.assert_allclose(zv.grad.numpy(), tv.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-12)
    with pytest.raises(zyx.ContractError, match="bool mask"):
        zx.masked_fill(zyx.ones(4, 5, dtype=zyx.int64, device=device), zv)
