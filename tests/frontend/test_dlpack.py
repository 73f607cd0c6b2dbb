"""DLPack and NumPy exchange: every dtype both ways with NumPy, PyTorch and ml_dtypes arrays, strided and
empty inputs, and the errors a copy-only exchange owes its callers."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.frontend import dlpack

DTYPES = ["bool", "uint8", "int8", "uint16", "int16", "uint32", "int32", "uint64", "int64", "float16", "bfloat16",
          "float32", "float64", "float8_e4m3", "float8_e5m2"]
NUMPY_DLPACK = [d for d in DTYPES if d not in ("bfloat16", "float8_e4m3", "float8_e5m2")]


def _values(dtype: str, shape: tuple[int, ...]) -> zyx.Tensor:
    n = int(np.prod(shape))
    x = zyx.tensor((np.arange(n) * 7 % 11 - 3).reshape(shape).astype(np.float32))
    return x.to(getattr(zyx, dtype))


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8)


@pytest.mark.needs_device
@pytest.mark.parametrize("dtype", DTYPES)
def test_round_trip_through_pytorch(dtype: str, torch) -> None:
    x = _values(dtype, (3, 5))
    t = torch.from_dlpack(x)
    assert str(t.dtype).removeprefix("torch.").startswith(dtype.replace("float8_e4m3", "float8_e4m3fn"))
    assert tuple(t.shape) == (3, 5)
    back = zyx.from_dlpack(t)
    assert back.dtype == x.dtype and np.array_equal(_bits(back.numpy()), _bits(x.numpy()))
    strided = zyx.from_dlpack(t.t())  # a transposed (non-contiguous) torch tensor
    assert np.array_equal(_bits(strided.numpy()), _bits(x.numpy().T))
    sliced = zyx.from_dlpack(t[1:, ::2])  # an offset and a step
    assert np.array_equal(_bits(sliced.numpy()), _bits(x.numpy()[1:, ::2]))


@pytest.mark.needs_device
@pytest.mark.parametrize("dtype", NUMPY_DLPACK)
def test_round_trip_through_numpy(dtype: str) -> None:
    x = _values(dtype, (4, 3))
    a = np.from_dlpack(x)
    assert a.dtype == x.dtype.numpy and np.array_equal(a, x.numpy())
    back = zyx.from_dlpack(a[::-1, 1:])  # negative strides
    assert np.array_equal(back.numpy(), x.numpy()[::-1, 1:])


@pytest.mark.needs_device
@pytest.mark.parametrize("dtype", ["bfloat16", "float8_e4m3", "float8_e5m2"])
def test_ml_dtypes_arrays(dtype: str) -> None:
    x = _values(dtype, (2, 6))
    a = np.asarray(x)
    assert a.dtype == x.dtype.numpy  # an ml_dtypes array
    back = zyx.from_dlpack(a[:, ::-2])
    assert back.dtype == x.dtype and np.array_equal(_bits(back.numpy()), _bits(a[:, ::-2]))


@pytest.mark.needs_device
@pytest.mark.parametrize("version", [None, (1, 0)])
@pytest.mark.parametrize("dtype", ["bfloat16", "float32"])
def test_capsules_legacy_and_versioned(dtype: str, version: tuple[int, int] | None) -> None:
    x = _values(dtype, (5,))

    class Producer:  # hands out the capsule zyx made, as another library would
        def __dlpack__(self, **kw: object) -> object:
            return x.__dlpack__(max_version=version)

        def __dlpack_device__(self) -> tuple[int, int]:
            return x.__dlpack_device__()

    if dtype == "float32":
        assert np.array_equal(np.from_dlpack(Producer()), x.numpy())
    arr, got = dlpack._copy_from_capsule(x.__dlpack__(max_version=version))
    assert got == x.dtype and np.array_equal(_bits(arr), _bits(x.numpy()))


@pytest.mark.needs_device
def test_empty_and_zero_dim(torch) -> None:
    for shape in [(0,), (2, 0, 3), ()]:
        x = zyx.zeros(shape) + 1.5
        t = torch.from_dlpack(x)
        assert tuple(t.shape) == shape
        back = zyx.from_dlpack(t)
        assert back.shape == shape and np.array_equal(back.numpy(), x.numpy())
    assert zyx.from_dlpack(torch.zeros(0, 4, dtype=torch.bfloat16)).shape == (0, 4)


@pytest.mark.needs_device
def test_device_argument_and_zyx_input(device: zyx.Device) -> None:
    a = np.arange(6, dtype=np.int32)
    x = zyx.from_dlpack(a, device=device)
    assert x.device == device and np.array_equal(x.numpy(), a)
    assert zyx.from_dlpack(x) is x
    assert x.__dlpack_device__() == (1, 0)


@pytest.mark.needs_device
def test_copy_only_exchange_errors() -> None:
    x = zyx.ones(3)
    with pytest.raises(ValueError, match="always copies"):
        np.asarray(x, copy=False)
    assert np.array_equal(np.asarray(x), np.ones(3, np.float32))
    assert np.asarray(x, dtype=np.float64).dtype == np.float64
    with pytest.raises(BufferError, match="copy=False"):
        x.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="CPU"):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)


def test_foreign_devices_and_non_producers_are_refused() -> None:
    class OnGpu:
        def __dlpack__(self, **kw: object) -> object:
            raise AssertionError("must not be asked for a capsule")

        def __dlpack_device__(self) -> tuple[int, int]:
            return (2, 0)  # kDLCUDA

    with pytest.raises(BufferError, match="device type 2"):
        zyx.from_dlpack(OnGpu())
    with pytest.raises(TypeError, match="__dlpack__"):
        zyx.from_dlpack([1, 2, 3])
