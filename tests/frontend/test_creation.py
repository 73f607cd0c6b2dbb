"""Tensor creation (zyx.frontend.creation) against NumPy and PyTorch."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import zyx

TORCH_NAME = {"float8_e4m3": "float8_e4m3fn"}


def _torch_dtype(torch, d: zyx.DType):
    return getattr(torch, TORCH_NAME.get(d.name, d.name))


# ------------------------------------------------------------------ tensor / from_numpy

@pytest.mark.parametrize("data,dtype,shape", [
    ([1, 2, 3], zyx.int64, (3,)),
    ([1.0, 2.0], zyx.float32, (2,)),
    ([True, False], zyx.bool, (2,)),
    ([1, 2.5], zyx.float32, (2,)),
    ([[1, 2], [3, 4]], zyx.int64, (2, 2)),
    (3.5, zyx.float32, ()),
    (7, zyx.int64, ()),
    (True, zyx.bool, ()),
    ([], zyx.float32, (0,)),
    ([[]], zyx.float32, (1, 0)),
])
def test_tensor_dtype_inference(device: zyx.Device, data, dtype, shape) -> None:
    x = zyx.tensor(data, device=device)
    assert x.dtype is dtype and x.shape == shape and x.device is device
    np.testing.assert_array_equal(x.numpy(), np.array(data, dtype=dtype.numpy))


@pytest.mark.parametrize("data", [[1, 2, 3], [1.5, -2.0], [True, False], 3.5, [[1, 2], [3, 4]], []])
def test_tensor_dtype_inference_matches_torch(device: zyx.Device, torch, data) -> None:
    assert _torch_dtype(torch, zyx.tensor(data, device=device).dtype) == torch.tensor(data).dtype


def test_tensor_keeps_numpy_dtype(device: zyx.Device) -> None:
    for host in (np.arange(4, dtype=np.float64), np.arange(4, dtype=np.uint16), np.float16(1.5),
                 np.array([1, 2], dtype=ml_dtypes.bfloat16), np.array(2, dtype=np.int8)):
        x = zyx.tensor(host, device=device)
        assert x.dtype.numpy == np.asarray(host).dtype
        np.testing.assert_array_equal(x.numpy(), host)


def test_tensor_with_dtype_converts(device: zyx.Device) -> None:
    x = zyx.tensor([1.7, -2.2], dtype=zyx.bfloat16, device=device)
    assert x.dtype is zyx.bfloat16
    np.testing.assert_array_equal(x.numpy(), np.array([1.7, -2.2], dtype=ml_dtypes.bfloat16))
    assert zyx.tensor([1, 2], dtype="float64", device=device).numpy().dtype == np.float64
    assert zyx.tensor(np.arange(3), dtype=zyx.uint8, device=device).tolist() == [0, 1, 2]


def test_python_floats_round_to_16_bit_floats_through_float32(device: zyx.Device) -> None:
    # one rounding rule everywhere (as in PyTorch): float64 -> float32 -> float16/bfloat16
    v, w = 1 + 2.0**-11 + 2.0**-40, 1 + 2.0**-8 + 2.0**-40
    assert zyx.tensor([v], dtype=zyx.float16, device=device).item() == 1.0
    assert zyx.tensor(np.array([v]), dtype=zyx.float16, device=device).item() == 1.0
    assert zyx.full((2,), v, dtype=zyx.float16, device=device).tolist() == [1.0, 1.0]
    assert zyx.tensor([w], dtype=zyx.bfloat16, device=device).item() == 1.0
    assert zyx.full((1,), w, dtype=zyx.bfloat16, device=device).item() == 1.0


def test_python_float_rounding_matches_torch(device: zyx.Device, torch) -> None:
    for v in (1 + 2.0**-11 + 2.0**-40, 65519.999, 1e-8, 0.1):
        for d in (zyx.float16, zyx.bfloat16):
            td = _torch_dtype(torch, d)
            assert zyx.tensor([v], dtype=d, device=device).item() == torch.tensor([v], dtype=td).item()
            assert zyx.full((1,), v, dtype=d, device=device).item() == torch.full((1,), v, dtype=td).item()


def test_tensor_from_tensor_copies(device: zyx.Device) -> None:
    x = zyx.tensor([[1, 2], [3, 4]], device=device)
    y = zyx.tensor(x.T, device=device)
    assert y._buf is not x._buf and y.tolist() == [[1, 3], [2, 4]]


def test_from_numpy_strided_and_fortran(device: zyx.Device) -> None:
    a = np.arange(24, dtype=np.int32).reshape(4, 6)
    for host in (a[::2, ::-3], np.asfortranarray(a), a.T):
        x = zyx.from_numpy(host, device=device)
        assert x.dtype is zyx.int32
        np.testing.assert_array_equal(x.numpy(), host)


def test_from_numpy_rejects_other_objects(device: zyx.Device) -> None:
    with pytest.raises(zyx.DTypeError, match="numpy.ndarray"):
        zyx.from_numpy([1, 2], device=device)


def test_tensor_int64_overflow_raises(device: zyx.Device) -> None:
    with pytest.raises(zyx.DTypeError, match="int64"):
        zyx.tensor([2**63], device=device)
    with pytest.raises(zyx.DTypeError, match="64-bit range"):
        zyx.tensor([1, 2**64], device=device)
    assert zyx.tensor([2**63 - 1, -(2**63)], device=device).tolist() == [2**63 - 1, -(2**63)]
    assert zyx.tensor([2**63, 2**64 - 1], dtype=zyx.uint64, device=device).tolist() == [2**63, 2**64 - 1]


def test_tensor_with_dtype_rounds_python_values_once(device: zyx.Device) -> None:
    # Python floats go straight to the requested dtype, not through float32 first
    assert zyx.tensor([0.1], dtype=zyx.float64, device=device).item() == 0.1
    assert zyx.tensor(2**53 + 1, dtype=zyx.int64, device=device).item() == 2**53 + 1
    assert zyx.tensor([16777217], dtype=zyx.float64, device=device).item() == 16777217.0


# ------------------------------------------------------------------ constants

@pytest.mark.parametrize("fn,value", [(zyx.zeros, 0), (zyx.ones, 1)])
def test_zeros_ones(device: zyx.Device, fn, value) -> None:
    for args, shape in [((2, 3), (2, 3)), (((2, 3),), (2, 3)), ((), ()), ((0,), (0,)), (([4],), (4,))]:
        x = fn(*args, device=device)
        assert x.shape == shape and x.dtype is zyx.float32
        np.testing.assert_array_equal(x.numpy(), np.full(shape, value, np.float32))
    for d in zyx.dtype.ALL_DTYPES:
        x = fn(5, dtype=d, device=device)
        assert x.dtype is d
        np.testing.assert_array_equal(x.numpy().astype(np.float64), np.full(5, value, np.float64))


@pytest.mark.parametrize("value,dtype", [(7, zyx.int64), (2.5, zyx.float32), (True, zyx.bool), (-3, zyx.int64)])
def test_full_infers_dtype(device: zyx.Device, value, dtype) -> None:
    x = zyx.full((2, 3), value, device=device)
    assert x.dtype is dtype
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), value, dtype.numpy))
    assert zyx.full(4, value, device=device).shape == (4,)


@pytest.mark.parametrize("value", [7, 2.5, True])
def test_full_dtype_matches_torch(device: zyx.Device, torch, value) -> None:
    assert _torch_dtype(torch, zyx.full((2,), value, device=device).dtype) == torch.full((2,), value).dtype


@pytest.mark.parametrize("value,dtype", [(300, zyx.int8), (-1, zyx.uint8), (2**31, zyx.int32), (2**64, zyx.uint64),
                                         (float("nan"), zyx.int32), (float("inf"), zyx.int64), (70000, zyx.uint16)])
def test_full_integer_overflow_raises(device: zyx.Device, value, dtype) -> None:
    with pytest.raises(zyx.DTypeError) as info:
        zyx.full((2,), value, dtype=dtype, device=device)
    assert dtype.name in str(info.value)


@pytest.mark.parametrize("value,dtype", [(1.1, zyx.bfloat16), (1e40, zyx.float32), (500.0, zyx.float8_e4m3),
                                         (-0.0, zyx.float16), (2.7, zyx.int16), (255, zyx.uint8), (5, zyx.bool)])
def test_full_converts_value_like_numpy(device: zyx.Device, bits_equal, value, dtype) -> None:
    x = zyx.full((3,), value, dtype=dtype, device=device)
    with np.errstate(all="ignore"):
        expected = np.full((3,), value).astype(dtype.numpy)
    bits_equal(x.numpy(), expected)


def test_like_functions(device: zyx.Device) -> None:
    x = zyx.tensor([[1, 2, 3]], dtype=zyx.int16, device=device)
    for fn, value in ((zyx.zeros_like, 0), (zyx.ones_like, 1)):
        y = fn(x)
        assert (y.shape, y.dtype, y.device) == ((1, 3), zyx.int16, device)
        assert y.tolist() == [[value] * 3]
        assert fn(x, dtype=zyx.float64).dtype is zyx.float64
    f = zyx.full_like(x, 9)
    assert (f.dtype, f.tolist()) == (zyx.int16, [[9, 9, 9]])
    assert zyx.full_like(x, 2.7).tolist() == [[2, 2, 2]]  # truncated like torch.full_like
    assert zyx.full_like(x, 0.5, dtype=zyx.float32).tolist() == [[0.5, 0.5, 0.5]]
    assert zyx.zeros_like(x.T).shape == (3, 1)


def test_like_functions_keep_the_pinning_of_their_model(device: zyx.Device, restore_default_device: None) -> None:
    zyx.set_default_device(device)
    loose = zyx.tensor([1.0, 2.0])
    pinned = zyx.tensor([1.0, 2.0], device=device)
    assert not loose.pinned and pinned.pinned
    for make in (zyx.zeros_like, zyx.ones_like, lambda t, **kw: zyx.full_like(t, 7, **kw)):
        assert not make(loose).pinned  # an unpinned model gives an unpinned result
        assert make(pinned).pinned
        assert make(loose, device=device).pinned  # naming the device pins, as everywhere
        assert make(loose).device is device


# ------------------------------------------------------------------ ranges

@pytest.mark.parametrize("args,dtype", [
    ((5,), zyx.int64), ((1, 10, 3), zyx.int64), ((10, 0, -3), zyx.int64), ((2, 2), zyx.int64),
    ((0, 1, 0.1), zyx.float32), ((1.5,), zyx.float32),
    ((-1.0, 1.0, 0.25), zyx.float32), ((3, -2.5, -0.5), zyx.float32), ((0.0,), zyx.float32),
])
def test_arange(device: zyx.Device, args, dtype) -> None:
    x = zyx.arange(*args, device=device)
    assert x.dtype is dtype
    np.testing.assert_allclose(x.numpy(), np.arange(*args).astype(dtype.numpy), rtol=1e-6)
    assert x.shape == np.arange(*args).shape


@pytest.mark.parametrize("args", [(5,), (1, 10, 3), (10, 0, -3), (2, 2), (0, 1, 0.1), (-1.0, 1.0, 0.25),
                                  (3, -2.5, -0.5), (0, 2, 0.3)])
def test_arange_matches_torch(device: zyx.Device, torch, args) -> None:
    x = zyx.arange(*args, device=device)
    t = torch.arange(*args)
    assert _torch_dtype(torch, x.dtype) == t.dtype
    assert x.shape == tuple(t.shape)
    np.testing.assert_array_equal(x.numpy(), t.numpy())


def test_arange_with_dtype(device: zyx.Device) -> None:
    assert zyx.arange(4, dtype=zyx.float64, device=device).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert zyx.arange(4, dtype=zyx.uint8, device=device).numpy().dtype == np.uint8


def test_arange_zero_step(device: zyx.Device) -> None:
    with pytest.raises(zyx.ShapeError, match="step"):
        zyx.arange(0, 5, 0, device=device)


@pytest.mark.parametrize("args", [(5, 0), (-5,), (0, 3, -1), (1.5, -1.0)])
def test_arange_step_sign_inconsistent_with_bounds(device: zyx.Device, args) -> None:
    with pytest.raises(zyx.ShapeError, match="inconsistent with the sign of step"):  # as PyTorch raises
        zyx.arange(*args, device=device)


def test_to_an_unknown_name_says_dtype_or_device(device: zyx.Device) -> None:
    x = zyx.zeros(2, device=device)
    with pytest.raises(zyx.DTypeError, match="neither a zyx dtype name nor a device"):
        x.to("float128")


@pytest.mark.parametrize("start,end,steps", [(0, 1, 5), (-1, 1, 7), (2, 2, 3), (0, 1, 0), (3, 9, 1), (1, -1, 4)])
def test_linspace(device: zyx.Device, start, end, steps) -> None:
    x = zyx.linspace(start, end, steps, device=device)
    assert x.dtype is zyx.float32 and x.shape == (steps,)
    np.testing.assert_array_equal(x.numpy(), np.linspace(start, end, steps).astype(np.float32))
    if steps == 1:
        assert x.tolist() == [start]


def test_linspace_matches_torch(device: zyx.Device, torch) -> None:
    for start, end, steps in [(0, 1, 5), (-1, 1, 7), (0, 1, 0), (3, 9, 1), (0, 10, 11)]:
        np.testing.assert_allclose(zyx.linspace(start, end, steps, device=device).numpy(),
                                   torch.linspace(start, end, steps).numpy(), rtol=1e-6, atol=1e-7)


def test_linspace_dtype_and_errors(device: zyx.Device) -> None:
    assert zyx.linspace(0, 1, 3, dtype=zyx.float64, device=device).tolist() == [0.0, 0.5, 1.0]
    with pytest.raises(zyx.ShapeError, match="non-negative"):
        zyx.linspace(0, 1, -1, device=device)


@pytest.mark.parametrize("n,m", [(3, None), (2, 4), (4, 2), (0, None), (1, None), (0, 3)])
def test_eye(device: zyx.Device, n, m) -> None:
    x = zyx.eye(n, m, device=device)
    assert x.dtype is zyx.float32
    np.testing.assert_array_equal(x.numpy(), np.eye(n, m, dtype=np.float32))
    np.testing.assert_array_equal(zyx.eye(n, m, dtype=zyx.int32, device=device).numpy(), np.eye(n, m, dtype=np.int32))


def test_eye_matches_torch(device: zyx.Device, torch) -> None:
    np.testing.assert_array_equal(zyx.eye(3, 5, device=device).numpy(), torch.eye(3, 5).numpy())


def test_eye_negative(device: zyx.Device) -> None:
    with pytest.raises(zyx.ShapeError, match="non-negative"):
        zyx.eye(-1, device=device)


def test_negative_shapes(device: zyx.Device) -> None:
    for call in (lambda: zyx.zeros(2, -1, device=device), lambda: zyx.full((-3,), 1.0, device=device),
                 lambda: zyx.rand(-1, device=device)):
        with pytest.raises(zyx.ShapeError, match="negative"):
            call()
