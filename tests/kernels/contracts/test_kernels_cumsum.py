"""cumsum: a parallel scan (work-group scan + block carries) checked for accuracy, determinism
and float32 accumulation of the 16-bit types."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.kernels import contracts as kernels

from contract_data import make, on_device

FLOATS = [zyx.float32, zyx.float64, zyx.bfloat16, zyx.float16]
IDS = [d.name for d in FLOATS]
# Relative error allowed against a float64 reference, per storage dtype: float32 rounding
# of the accumulation (a few ulps times the depth of the scan), or one rounding on store.
REL = {"float32": 2e-6, "float64": 1e-13, "bfloat16": 2.0 ** -8, "float16": 2.0 ** -11}


def _rotating(cases):
    """(dtype, *case) parameters: float32 and float64 (the two accumulators) on every case; the 16-bit
    dtypes, which load into the float32 accumulator and round once on store (the float32 kernels with
    another element type), on every other case each, taking turns."""
    return [pytest.param(dtype, *case, id="-".join([dtype.name, *map(str, case)]))
            for k, case in enumerate(cases) for dtype in FLOATS
            if dtype.itemsize > 2 or k % 2 == FLOATS.index(dtype) % 2]


def reference(a: np.ndarray, dim: int) -> np.ndarray:
    return np.cumsum(a.astype(np.float64), axis=dim)


def check_close(out: np.ndarray, a: np.ndarray, dim: int, dtype: zyx.DType) -> None:
    """|out - ref| <= rel * (running sum of |a|) + one rounding of the result, everywhere."""
    ref = reference(a, dim)
    scale = np.cumsum(np.abs(a.astype(np.float64)), axis=dim)
    got = out.astype(np.float64)
    bound = REL[dtype.name] * scale * 1.01 + 1e-300
    bad = np.abs(got - ref) > bound
    assert not bad.any(), f"{bad.sum()} elements off, worst {np.max(np.abs(got - ref) / np.maximum(scale, 1e-300))}"


@pytest.mark.parametrize("dtype, shape, dim", _rotating([((1000,), 0), ((3, 2500), 1), ((40, 3, 7), 0),
                                                      ((5, 300, 2), 1), ((2, 3, 4, 1, 2, 3, 2, 5), 7),
                                                      ((70000,), -1)]))
def test_cumsum_accuracy(device, dtype, shape, dim):
    rng = np.random.default_rng(1)
    a = (rng.random(shape) * 2 - 0.5).astype(dtype.numpy)  # mixed signs
    out = on_device(a, device).cumsum(dim)
    assert out.dtype is dtype and out.shape == a.shape
    check_close(out.numpy(), a, dim % len(shape), dtype)


@pytest.mark.parametrize("dtype", [zyx.bfloat16, zyx.float16], ids=["bfloat16", "float16"])
def test_cumsum_16bit_accumulates_in_float32(device, values_equal, dtype):
    """1000 ones: a 16-bit accumulator stalls (bfloat16 at 256, float16 at 2048 would round);
    a float32 one reaches every count exactly, rounded once to the dtype on store."""
    ones = np.ones(1000, dtype=dtype.numpy)
    out = on_device(ones, device).cumsum(0).numpy()
    expected = np.cumsum(np.ones(1000, np.float32)).astype(dtype.numpy)
    values_equal(out, expected)
    stalled = np.ones(1000, dtype=dtype.numpy).cumsum(dtype=dtype.numpy)  # what a 16-bit accumulator gives
    if dtype is zyx.bfloat16:
        assert (stalled != expected).any()


@pytest.mark.parametrize("dtype", FLOATS, ids=IDS)
def test_cumsum_deterministic(device, bits_equal, dtype):
    rng = np.random.default_rng(2)
    for shape, dim in [((50000,), 0), ((7, 900), 1), ((300, 40), 0)]:
        x = on_device(rng.standard_normal(shape).astype(dtype.numpy), device)
        first = x.cumsum(dim).numpy()
        for _ in range(3):
            bits_equal(x.cumsum(dim).numpy(), first)


def test_cumsum_deep_carry_recursion(device, bits_equal):
    """Tiny blocks force three levels of block totals; exact on integer-valued floats."""
    a = np.random.default_rng(3).integers(-50, 50, size=(2, 3000)).astype(np.float32)
    x = on_device(a, device)
    try:
        kernels.set_tunables(device, scan_local=4, scan_items=2)
        out = x.cumsum(1).numpy()
        assert kernels.cumsum_strategy(2, 3000, 1, kernels.tunables(device)) == "blocks"
    finally:
        kernels.set_tunables(device)
    bits_equal(out, np.cumsum(a, axis=1))
    bits_equal(x.cumsum(1).numpy(), np.cumsum(a, axis=1))  # default tunables: same exact sums


def test_cumsum_one_element_blocks_scan_lanes(device, bits_equal):
    """scan_local = scan_items = 1 (set_tunables allows it) recursed without end on its block totals."""
    a = np.arange(1, 22, dtype=np.float32).reshape(3, 7)
    try:
        kernels.set_tunables(device, scan_local=1, scan_items=1)
        assert kernels.cumsum_strategy(3, 7, 1, kernels.tunables(device)) == "lanes"
        out = on_device(a, device).cumsum(1).numpy()
    finally:
        kernels.set_tunables(device)
    bits_equal(out, np.cumsum(a, axis=1))


@pytest.mark.parametrize("layout", ["transposed", "strided", "broadcast", "reversed", "offset"])
def test_cumsum_of_views(device, layout):
    x, ref = make(layout, (6, 300), zyx.float32, device, seed=4, finite=True)
    check_close(x.cumsum(1).numpy(), ref, 1, zyx.float32)
    check_close(x.cumsum(0).numpy(), ref, 0, zyx.float32)


def test_cumsum_edge_shapes(device, values_equal):
    s = zyx.tensor(2.5, device=device)
    assert s.cumsum(0).item() == 2.5 and s.cumsum(-1).shape == ()
    e = zyx.zeros(3, 0, device=device)
    assert e.cumsum(1).shape == (3, 0) and e.cumsum(0).shape == (3, 0)
    one = zyx.tensor([[1.0], [2.0]], device=device)
    values_equal(one.cumsum(1).numpy(), np.array([[1.0], [2.0]], np.float32))
    nan = zyx.tensor([1.0, float("nan"), 2.0], device=device).cumsum(0).numpy()
    assert nan[0] == 1.0 and np.isnan(nan[1:]).all()


def test_cumsum_matches_torch(device, torch):
    a = np.random.default_rng(5).random((4, 2000)).astype(np.float32)
    out = on_device(a, device).cumsum(1).numpy()
    expected = torch.cumsum(torch.from_numpy(a), 1).numpy()
    np.testing.assert_allclose(out, expected, rtol=2e-5)


@pytest.mark.parametrize("dtype, shape", _rotating([((50, 48),), ((33, 20),), ((9, 2, 6),), ((17, 1),)]))
def test_cumsum_lane_vectors(device, bits_equal, dtype, shape):
    """A strided scan runs neighbouring lanes (16, 4, 2, 1 of them) in one work-item; each
    lane is still summed in order, so the result is NumPy's float32 (or float64) cumsum."""
    a = np.random.default_rng(6).standard_normal(shape).astype(dtype.numpy)
    acc = np.float64 if dtype is zyx.float64 else np.float32
    out = on_device(a, device).cumsum(0).numpy()
    bits_equal(out, np.cumsum(a.astype(acc), axis=0, dtype=acc).astype(dtype.numpy))


@pytest.mark.parametrize("dtype, items", _rotating([(8,), (12,), (2,)]))
def test_cumsum_sub_runs_and_tails(device, dtype, items):
    """Full runs summed as 4 sub-runs (items a multiple of 4) and partial tail runs."""
    a = (np.random.default_rng(7).random((3, 1003)) * 2 - 0.5).astype(dtype.numpy)
    x = on_device(a, device)
    try:
        kernels.set_tunables(device, scan_local=4, scan_items=items)
        assert kernels.cumsum_strategy(3, 1003, 1, kernels.tunables(device)) == "blocks"
        out = x.cumsum(1).numpy()
    finally:
        kernels.set_tunables(device)
    check_close(out, a, 1, dtype)


@pytest.mark.parametrize("dtype", [zyx.float32, zyx.float64, zyx.int32, zyx.int64, zyx.uint8])
def test_cumsum_many_contiguous_rows(device, dtype):
    """On CPUs, many long contiguous rows run one work-item per row, a vector of the accumulator a step
    scanned in registers (within a vector the order is a tree: close to the float64 reference, not NumPy's
    float32 bits; integers exact); the same bits on every run; rows of a partial last vector. Few rows still
    take the block scan; 16-bit floats and short rows keep one work-item per lane in order."""
    tun = kernels.tunables(device)
    rows = max(40, tun.scan_lanes_min)  # enough rows for one work-item a row on any CPU
    a = np.random.default_rng(9).standard_normal((rows, 2100)) * 50
    a = a.astype(dtype.numpy) if dtype.is_float else np.abs(a).astype(dtype.numpy)
    cpu = not kernels.common.on_gpu(device)
    expect = "lanes" if cpu else "blocks"
    assert kernels.cumsum_strategy(rows, 2100, 1, tun, cpu) == expect
    assert kernels.cumsum_strategy(2, 1 << 20, 1, tun, cpu) == "blocks"
    width = 64 // kernels.accumulator(dtype).itemsize
    assert kernels.row_vector(dtype, rows, 2100, 1, tun, expect, cpu) == (width if cpu else 0)
    assert kernels.row_vector(zyx.float16, rows, 2100, 1, tun, expect, cpu) == 0
    assert kernels.row_vector(dtype, rows, 2 * width - 1, 1, tun, expect, cpu) == 0
    x = on_device(a, device)
    out = x.cumsum(1).numpy()
    assert out.dtype == (dtype.numpy if dtype.is_float else np.int64)
    if dtype.is_float:
        check_close(out, a, 1, dtype)
        np.testing.assert_array_equal(x.cumsum(1).numpy().view(np.uint8), out.view(np.uint8))
    else:
        np.testing.assert_array_equal(out, np.cumsum(a.astype(np.int64), axis=1))
    y = on_device(a[:, :2 * width + 5], device)  # two whole vectors and a tail of 5 per row
    if dtype.is_float:
        check_close(y.cumsum(1).numpy(), a[:, :2 * width + 5], 1, dtype)
    else:
        np.testing.assert_array_equal(y.cumsum(1).numpy(), np.cumsum(a[:, :2 * width + 5].astype(np.int64), axis=1))


