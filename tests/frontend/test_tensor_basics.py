"""Tensor basics: bit-exact round trips for every dtype, readback, conversions."""
from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

import zyx
from zyx.backend.device import usable_devices
from zyx.dtype import ALL_DTYPES

_UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}

SPECIAL_BITS = {
    4: [0, 1, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
        0xFFC12345, 0x007FFFFF, 0x00800000, 0x7F7FFFFF, 0x80000001, 0x3F800000],
    8: [0, 1, 0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0x7FF0000000000000,
        0xFFF0000000000000, 0x7FF8000000000000, 0x7FF0000000000001, 0xFFF8DEADBEEF0001,
        0x000FFFFFFFFFFFFF, 0x0010000000000000, 0x7FEFFFFFFFFFFFFF, 0x8000000000000001, 0x3FF0000000000000],
}


def bit_patterns(d: zyx.DType, seed: int = 0) -> np.ndarray:
    """1-D host array of dtype ``d``: every bit pattern for 1- and 2-byte dtypes (in a
    shuffled order), random patterns plus special values (NaNs, infinities, subnormals,
    integer extremes) for 4- and 8-byte dtypes."""
    u = _UINT[d.itemsize]
    rng = np.random.default_rng(seed)
    if d.itemsize <= 2:
        bits = rng.permutation(np.arange(1 << (8 * d.itemsize), dtype=np.uint64)).astype(u)
    else:
        special = np.array(SPECIAL_BITS[d.itemsize], dtype=u)
        bits = np.concatenate([special, rng.integers(0, np.iinfo(u).max, 4096, dtype=u, endpoint=True)])
    return bits.view(d.numpy)


def patterns_of_shape(d: zyx.DType, shape: tuple[int, ...], seed: int = 0) -> np.ndarray:
    flat = bit_patterns(d, seed)
    n = math.prod(shape)
    return np.resize(flat, n).reshape(shape) if n else flat[:0].reshape(shape)


def dense(a: np.ndarray) -> np.ndarray:
    """``np.ascontiguousarray(a)`` keeping rank 0 (NumPy's own returns at least 1-D)."""
    return np.array(a, order="C", copy=True)


SHAPES = [(), (0, 3), (1,), (7,), (3, 5), (5, 1, 3), (2, 3, 1, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("d", ALL_DTYPES, ids=lambda d: d.name)
def test_round_trip_bit_exact(device: zyx.Device, bits_equal, d: zyx.DType, shape) -> None:
    host = patterns_of_shape(d, shape, seed=len(shape))
    x = zyx.tensor(host, device=device)
    assert x.dtype is d and x.shape == shape
    out = x.numpy()
    bits_equal(out, host)
    bits_equal(zyx.from_numpy(host, device=device).numpy(), host)
    # a non-contiguous view (negative steps in every dim) through the copy kernel
    big = patterns_of_shape(d, tuple(2 * s for s in shape), seed=7)
    sl = tuple(slice(None, None, -2) for _ in shape) + (Ellipsis,)  # "...": a 0-d view, not a scalar
    v = zyx.tensor(big, device=device)[sl]
    assert v.shape == shape
    bits_equal(v.contiguous().numpy(), dense(big[sl]))
    bits_equal(v.numpy(), dense(big[sl]))
    # a transposed view
    rev = patterns_of_shape(d, shape[::-1], seed=11)
    t = zyx.tensor(rev, device=device).permute(*reversed(range(len(shape))))
    bits_equal(t.contiguous().numpy(), dense(rev.transpose()))


@pytest.mark.parametrize("d", [d for d in ALL_DTYPES if d.itemsize <= 2], ids=lambda d: d.name)
def test_every_bit_pattern_round_trips(device: zyx.Device, bits_equal, d: zyx.DType) -> None:
    host = np.arange(1 << (8 * d.itemsize), dtype=np.uint32).astype(_UINT[d.itemsize]).view(d.numpy)
    x = zyx.tensor(host, device=device)
    bits_equal(x.numpy(), host)
    side = 16 if d.itemsize == 1 else 256
    square = host.reshape(side, side)
    y = zyx.tensor(square, device=device).T[::-1]
    bits_equal(y.contiguous().numpy(), dense(square.T[::-1]))
    bits_equal(y.clone().numpy(), dense(square.T[::-1]))
    bits_equal(y.numpy(), square.T[::-1].copy())


def test_offset_scalar_view_round_trip(device: zyx.Device, bits_equal) -> None:
    host = np.array([1.5, -0.0, np.nan], dtype=np.float32)
    x = zyx.tensor(host, device=device)[1]
    assert x.shape == () and not x.is_contiguous()
    bits_equal(x.numpy(), host[1])
    bits_equal(x.contiguous().numpy(), host[1])


# ------------------------------------------------------------------ readback API

def test_tolist_item_and_python_conversions(device: zyx.Device) -> None:
    x = zyx.tensor([[1.5, 2.0], [3.0, -4.25]], device=device)
    assert x.tolist() == [[1.5, 2.0], [3.0, -4.25]]
    assert x[1, 1].item() == -4.25 and isinstance(x[1, 1].item(), float)
    assert float(x[0, 0]) == 1.5
    assert int(x[1, 1]) == -4
    assert bool(x[0, 0]) is True and bool(zyx.tensor(0.0, device=device)) is False
    assert len(x) == 2
    i = zyx.tensor([7], device=device)
    assert i.item() == 7 and isinstance(i.item(), int)
    assert [10, 20, 30, 40][zyx.tensor(2, device=device)] == 30  # __index__
    b = zyx.tensor([True, False], device=device)
    assert b.tolist() == [True, False] and isinstance(b[0].item(), bool)
    assert zyx.tensor(3, device=device).tolist() == 3
    assert zyx.zeros(0, 2, device=device).tolist() == []


@pytest.mark.parametrize("d", [zyx.bfloat16, zyx.float8_e4m3, zyx.float8_e5m2, zyx.float16], ids=lambda d: d.name)
def test_tolist_of_small_floats_gives_python_floats(device: zyx.Device, d: zyx.DType) -> None:
    x = zyx.tensor([0.5, -2.0, 1.25], dtype=d, device=device)
    assert x.tolist() == [0.5, -2.0, 1.25]
    assert all(type(v) is float for v in x.tolist())
    assert x[2].item() == 1.25 and type(x[2].item()) is float


def test_index_of_float_tensor_raises(device: zyx.Device) -> None:
    with pytest.raises(zyx.DTypeError, match="integer"):
        [1, 2][zyx.tensor(1.0, device=device)]


def test_len_of_scalar_raises(device: zyx.Device) -> None:
    with pytest.raises(TypeError, match="0-d"):
        len(zyx.tensor(1.0, device=device))


def test_repr_shows_values(device: zyx.Device) -> None:
    assert repr(zyx.tensor([1.5, 2.0], device=device)) == "tensor([1.5, 2. ])"
    assert repr(zyx.tensor([1, 2], device=device)) == "tensor([1, 2])"
    assert repr(zyx.tensor([1, 2], dtype=zyx.int8, device=device)) == "tensor([1, 2], dtype=zyx.int8)"
    assert "dtype=zyx.bfloat16" in repr(zyx.tensor([1.5], dtype=zyx.bfloat16, device=device))
    assert "1.5" in repr(zyx.tensor([1.5], dtype=zyx.bfloat16, device=device))
    assert str(zyx.tensor(True, device=device)) == "tensor(True)"
    big = repr(zyx.arange(5000, device=device))
    assert "..." in big and "4999" in big


def test_array_protocol(device: zyx.Device) -> None:
    x = zyx.tensor([[1, 2], [3, 4]], dtype=zyx.int32, device=device)
    np.testing.assert_array_equal(np.asarray(x), [[1, 2], [3, 4]])
    assert np.asarray(x).dtype == np.int32
    assert np.asarray(x, dtype=np.float64).dtype == np.float64


def test_numpy_of_bfloat16_and_float8_is_ml_dtypes(device: zyx.Device) -> None:
    assert zyx.tensor([1.0], dtype=zyx.bfloat16, device=device).numpy().dtype == ml_dtypes.bfloat16
    assert zyx.tensor([1.0], dtype=zyx.float8_e4m3, device=device).numpy().dtype == ml_dtypes.float8_e4m3fn
    assert zyx.tensor([1.0], dtype=zyx.float8_e5m2, device=device).numpy().dtype == ml_dtypes.float8_e5m2


def test_numpy_returns_a_copy(device: zyx.Device) -> None:
    x = zyx.tensor([1.0, 2.0], device=device)
    a = x.numpy()
    a[0] = 100
    assert x.tolist() == [1.0, 2.0]
    host = np.array([1.0, 2.0], dtype=np.float32)
    y = zyx.tensor(host, device=device)
    host[0] = 7
    assert y.tolist() == [1.0, 2.0]


def test_realize_and_clone(device: zyx.Device) -> None:
    x = zyx.tensor([1.0, 2.0], device=device)
    assert x.realize() is x
    c = x.clone()
    assert c is not x and c._buf is not x._buf and c.tolist() == [1.0, 2.0]


# ------------------------------------------------------------------ to / cast / bitcast

def test_to_dtype_and_cast(device: zyx.Device) -> None:
    x = zyx.tensor([1.7, -2.5, 300.0], device=device)
    assert x.to(zyx.float32) is x and x.cast("float32") is x
    assert x.to(zyx.int32).tolist() == [1, -2, 300]
    assert x.cast(zyx.int16).dtype is zyx.int16
    assert x.to("float64").dtype is zyx.float64
    assert x.to(np.float16).dtype is zyx.float16
    assert x.type(zyx.uint8).tolist() == [1, 0, 255]  # out of range saturates
    assert x.to(zyx.half).dtype is zyx.float16


SHORTHANDS = {"half": "float16", "bfloat16": "bfloat16", "float": "float32", "double": "float64", "char": "int8",
              "byte": "uint8", "short": "int16", "int": "int32", "long": "int64", "bool": "bool"}


def test_pytorch_dtype_shorthands(device: zyx.Device, torch) -> None:
    # in-range values through a non-contiguous view, against torch's methods of the same name
    host = np.array([[1.75, -2.5, 0.0], [100.25, 3.0, -0.5]], dtype=np.float32)
    x = zyx.tensor(host, device=device).T
    t = torch.from_numpy(host).T
    for method, name in SHORTHANDS.items():
        y = getattr(x, method)()
        assert y.dtype is zyx.dtype.to_dtype(name) and y.shape == (3, 2)
        if method == "byte":  # torch leaves negative floats -> uint8 undefined; zyx saturates to 0
            assert y.tolist() == [[1, 100], [0, 3], [0, 0]]
            continue
        assert y.tolist() == getattr(t, method)().tolist(), method
    assert x.float() is x  # no cast when nothing changes, as cast()
    assert zyx.tensor([1, 2], device=device).to("int").dtype is zyx.int32  # torch.int is int32


def test_to_device(device: zyx.Device) -> None:
    x = zyx.tensor([[1, 2], [3, 4]], device=device)
    assert x.to(device) is x
    assert x.to(device.id) is x
    for other in [d for d in usable_devices() if not d.simulator]:
        y = x.T.to(other)
        assert y.device is other
        assert y.tolist() == [[1, 3], [2, 4]]


def test_bitcast_same_itemsize(device: zyx.Device) -> None:
    host = np.array([1.0, -0.0, np.inf, 2.5], dtype=np.float32)
    x = zyx.tensor(host, device=device)
    b = x.bitcast(zyx.int32)
    assert b.dtype is zyx.int32 and b._buf is x._buf
    np.testing.assert_array_equal(b.numpy(), host.view(np.int32))
    np.testing.assert_array_equal(x[::-1].bitcast(zyx.uint32).numpy(), host[::-1].view(np.uint32))
    h = zyx.tensor([1.0, -2.0], dtype=zyx.bfloat16, device=device)
    np.testing.assert_array_equal(h.bitcast(zyx.float16).numpy(),
                                  np.array([1.0, -2.0], ml_dtypes.bfloat16).view(np.float16))
    assert zyx.tensor([255], dtype=zyx.uint8, device=device).bitcast(zyx.int8).tolist() == [-1]


@pytest.mark.parametrize("target", [zyx.int64, zyx.float16, zyx.uint8, zyx.bool], ids=lambda d: d.name)
def test_bitcast_different_itemsize_raises(device: zyx.Device, target) -> None:
    x = zyx.tensor([1.0], device=device)
    with pytest.raises(zyx.DTypeError, match="same itemsize") as info:
        x.bitcast(target)
    assert "float32" in str(info.value) and target.name in str(info.value)
