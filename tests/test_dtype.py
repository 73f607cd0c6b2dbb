"""zyx.dtype: the 15 dtypes, their properties and names, and PyTorch-style promotion."""
from __future__ import annotations

import itertools

import ml_dtypes
import numpy as np
import pytest

import zyx
from zyx import dtype as dtypes
from zyx.dtype import ALL_DTYPES

# name, itemsize, is_float, is_int, is_signed, host dtype
EXPECTED = [
    ("bool", 1, False, False, False, np.bool_),
    ("uint8", 1, False, True, False, np.uint8),
    ("int8", 1, False, True, True, np.int8),
    ("uint16", 2, False, True, False, np.uint16),
    ("int16", 2, False, True, True, np.int16),
    ("uint32", 4, False, True, False, np.uint32),
    ("int32", 4, False, True, True, np.int32),
    ("uint64", 8, False, True, False, np.uint64),
    ("int64", 8, False, True, True, np.int64),
    ("float16", 2, True, False, True, np.float16),
    ("bfloat16", 2, True, False, True, ml_dtypes.bfloat16),
    ("float32", 4, True, False, True, np.float32),
    ("float64", 8, True, False, True, np.float64),
    ("float8_e4m3", 1, True, False, True, ml_dtypes.float8_e4m3fn),
    ("float8_e5m2", 1, True, False, True, ml_dtypes.float8_e5m2),
]

TORCH_NAME = {"float8_e4m3": "float8_e4m3fn"}


def torch_dtype(torch, d: dtypes.DType):
    """The PyTorch dtype of a zyx dtype (torch calls float8_e4m3 float8_e4m3fn)."""
    return getattr(torch, TORCH_NAME.get(d.name, d.name))


def test_all_fifteen_dtypes_are_exported_in_order() -> None:
    assert [d.name for d in ALL_DTYPES] == [row[0] for row in EXPECTED]
    for d in ALL_DTYPES:
        assert getattr(zyx, d.name) is d


@pytest.mark.parametrize("row", EXPECTED, ids=[r[0] for r in EXPECTED])
def test_dtype_properties(row) -> None:
    name, itemsize, is_float, is_int, is_signed, host = row
    d = getattr(zyx, name)
    assert isinstance(d, zyx.DType)
    assert (d.name, d.itemsize, d.is_float, d.is_int, d.is_signed) == (name, itemsize, is_float, is_int, is_signed)
    assert d.numpy == np.dtype(host)
    assert np.dtype(host).itemsize == itemsize
    assert repr(d) == f"zyx.{name}"


def test_aliases() -> None:
    assert zyx.half is zyx.float16
    assert zyx.float is zyx.float32
    assert zyx.double is zyx.float64
    assert zyx.bool is dtypes.bool_


def test_dtypes_are_hashable_and_distinct() -> None:
    assert len(set(ALL_DTYPES)) == 15
    assert {d: d.name for d in ALL_DTYPES}[zyx.bfloat16] == "bfloat16"


@pytest.mark.parametrize("d", ALL_DTYPES, ids=lambda d: d.name)
def test_to_dtype_accepts_names_numpy_dtypes_and_itself(d: dtypes.DType) -> None:
    assert dtypes.to_dtype(d) is d
    assert dtypes.to_dtype(d.name) is d
    assert dtypes.to_dtype(d.numpy) is d
    assert dtypes.to_dtype(d.np_dtype) is d


def test_to_dtype_python_types_and_aliases() -> None:
    assert dtypes.to_dtype(bool) is zyx.bool
    assert dtypes.to_dtype(int) is zyx.int64
    assert dtypes.to_dtype(float) is zyx.float32
    assert dtypes.to_dtype("half") is zyx.float16
    assert dtypes.to_dtype("double") is zyx.float64
    assert dtypes.to_dtype("float8_e4m3fn") is zyx.float8_e4m3
    # PyTorch's names: torch.int is int32 (NumPy's "int" is int64)
    assert dtypes.to_dtype("int") is zyx.int32
    assert dtypes.to_dtype("long") is zyx.int64
    assert dtypes.to_dtype("short") is zyx.int16


@pytest.mark.parametrize("spec", ["float128", "complex64", np.complex64, object, "", 3])
def test_to_dtype_unknown_raises_dtype_error(spec) -> None:
    with pytest.raises(zyx.DTypeError, match="unknown dtype") as info:
        dtypes.to_dtype(spec)
    assert isinstance(info.value, TypeError)
    assert "float32" in str(info.value)  # the message lists what is accepted


def test_fkc_tokens_round_trip() -> None:
    for d in ALL_DTYPES:
        assert dtypes.from_fkc(d.fkc) is d
    with pytest.raises(zyx.DTypeError, match="F128"):
        dtypes.from_fkc("F128")


# ------------------------------------------------------------------ promotion

def _torch_promote(torch, a, b):
    try:
        return torch.promote_types(torch_dtype(torch, a), torch_dtype(torch, b))
    except (RuntimeError, TypeError):
        return None


@pytest.mark.parametrize("a", ALL_DTYPES, ids=lambda d: d.name)
def test_promote_types_matches_torch(torch, a: dtypes.DType) -> None:
    compared = 0
    for b in ALL_DTYPES:
        expected = _torch_promote(torch, a, b)
        if expected is None:
            continue
        got = zyx.promote_types(a, b)
        assert torch_dtype(torch, got) == expected, (a, b, got, expected)
        assert zyx.promote_types(b, a) is got
        compared += 1
    assert compared >= 1


PROMOTION_TABLE = [  # pairs PyTorch does not define; no torch needed
    (zyx.uint16, zyx.int8, zyx.int32),
    (zyx.uint16, zyx.int16, zyx.int32),
    (zyx.uint16, zyx.int32, zyx.int32),
    (zyx.uint32, zyx.int8, zyx.int64),
    (zyx.uint32, zyx.int32, zyx.int64),
    (zyx.uint32, zyx.int64, zyx.int64),
    (zyx.uint8, zyx.uint16, zyx.uint16),
    (zyx.uint16, zyx.uint64, zyx.uint64),
    (zyx.bool, zyx.uint32, zyx.uint32),
    (zyx.uint64, zyx.float16, zyx.float16),
    (zyx.uint32, zyx.bfloat16, zyx.bfloat16),
    # and a few PyTorch rules, checked without torch too
    (zyx.uint8, zyx.int8, zyx.int16),
    (zyx.float16, zyx.bfloat16, zyx.float32),
    (zyx.int64, zyx.float16, zyx.float16),
    (zyx.bool, zyx.bool, zyx.bool),
    (zyx.float32, zyx.float64, zyx.float64),
]


@pytest.mark.parametrize("a,b,expected", PROMOTION_TABLE, ids=lambda v: getattr(v, "name", None))
def test_promote_types_documented(a, b, expected) -> None:
    assert zyx.promote_types(a, b) is expected
    assert zyx.promote_types(b, a) is expected


@pytest.mark.parametrize("signed", [zyx.int8, zyx.int16, zyx.int32, zyx.int64], ids=lambda d: d.name)
def test_uint64_with_signed_has_no_common_int(signed) -> None:
    with pytest.raises(zyx.DTypeError, match="uint64"):
        zyx.promote_types(zyx.uint64, signed)


@pytest.mark.parametrize("f8", [zyx.float8_e4m3, zyx.float8_e5m2], ids=lambda d: d.name)
def test_float8_mixing_raises(f8) -> None:
    assert zyx.promote_types(f8, f8) is f8
    for other in ALL_DTYPES:
        if other is f8:
            continue
        with pytest.raises(zyx.DTypeError, match="cast explicitly"):
            zyx.promote_types(f8, other)
        with pytest.raises(zyx.DTypeError):
            zyx.promote_types(other, f8)


def test_promote_types_accepts_names() -> None:
    assert zyx.promote_types("int8", "uint8") is zyx.int16


# ------------------------------------------------------------------ scalars

def test_scalar_promotion_examples() -> None:
    assert zyx.result_type(zyx.int8, 1000) is zyx.int8
    assert zyx.result_type(1000, zyx.int8) is zyx.int8
    assert zyx.result_type(zyx.int32, 1.5) is zyx.float32
    assert zyx.result_type(zyx.float16, 1.5) is zyx.float16
    assert zyx.result_type(zyx.bool, 3) is zyx.int64
    assert zyx.result_type(zyx.bool, 2.0) is zyx.float32
    assert zyx.result_type(zyx.uint8, True) is zyx.uint8
    assert zyx.result_type(zyx.float64, 7) is zyx.float64
    assert zyx.result_type(1, 2.0) is zyx.float32
    assert zyx.result_type(True, False) is zyx.bool


def test_scalar_promotion_with_tensors(device) -> None:
    x = zyx.tensor([1, 2], dtype=zyx.int8, device=device)
    assert zyx.result_type(x, 1000) is zyx.int8
    assert zyx.result_type(x, 1.5) is zyx.float32
    assert zyx.result_type(x, zyx.tensor([1.0], device=device)) is zyx.float32


@pytest.mark.parametrize("d", ALL_DTYPES, ids=lambda d: d.name)
def test_scalar_promotion_matches_torch(torch, d: dtypes.DType) -> None:
    t = torch.zeros(2, dtype=torch_dtype(torch, d))
    for scalar in (True, 7, 1000, 1.5, -2.0):
        expected = torch.result_type(t, scalar)
        got = zyx.result_type(d, scalar)
        assert torch_dtype(torch, got) == expected, (d, scalar, got, expected)
        got = zyx.result_type(scalar, d)
        assert torch_dtype(torch, got) == torch.result_type(scalar, t)


class _ZeroDim:
    """Stands in for a zero-dim tensor of ``dtype`` (result_type only reads dtype and ndim)."""

    ndim = 0

    def __init__(self, dtype: dtypes.DType) -> None:
        self.dtype = dtype


@pytest.mark.parametrize("a", ALL_DTYPES, ids=lambda d: d.name)
def test_zero_dim_tensor_promotion_matches_torch(torch, a: dtypes.DType) -> None:
    compared = 0
    for b in ALL_DTYPES:
        for dims_a in (True, False):
            ta = torch.zeros(2 if dims_a else (), dtype=torch_dtype(torch, a))
            tb = torch.zeros((), dtype=torch_dtype(torch, b))
            try:
                expected = torch.result_type(ta, tb)
            except RuntimeError:
                continue
            za = a if dims_a else _ZeroDim(a)
            assert torch_dtype(torch, zyx.result_type(za, _ZeroDim(b))) == expected, (a, b, dims_a)
            assert torch_dtype(torch, zyx.result_type(_ZeroDim(b), za)) == expected, (b, a, dims_a)
            compared += 1
    assert compared >= 2


def test_zero_dim_tensors_rank_between_tensors_and_scalars(device) -> None:
    i8 = zyx.tensor([1, 2], dtype=zyx.int8, device=device)
    f16 = zyx.tensor([1.0], dtype=zyx.float16, device=device)
    assert zyx.result_type(i8, zyx.tensor(1000, device=device)) is zyx.int8
    assert zyx.result_type(zyx.tensor(1000, device=device), i8) is zyx.int8
    assert zyx.result_type(f16, zyx.tensor(1.5, dtype=zyx.float64, device=device)) is zyx.float16
    assert zyx.result_type(i8, zyx.tensor(1.5, dtype=zyx.float64, device=device)) is zyx.float64
    assert zyx.result_type(zyx.tensor(True, device=device), 3) is zyx.int64
    assert zyx.result_type(zyx.tensor(1, dtype=zyx.int16, device=device), 2.5) is zyx.float32
    assert zyx.result_type(zyx.tensor(1, dtype=zyx.int16, device=device),
                           zyx.tensor(1, dtype=zyx.int32, device=device)) is zyx.int32


def test_scalar_dtype_rejects_strings() -> None:
    with pytest.raises(zyx.DTypeError, match="unsupported scalar"):
        dtypes.scalar_dtype("3")


def test_every_pair_promotes_or_raises_dtype_error() -> None:
    for a, b in itertools.product(ALL_DTYPES, repeat=2):
        try:
            r = zyx.promote_types(a, b)
        except zyx.DTypeError:
            continue
        assert r in ALL_DTYPES
        # the result holds both kinds: float beats int beats bool
        assert r.is_float or not (a.is_float or b.is_float)


def test_dtypes_are_singletons_through_copies_and_pickles() -> None:
    """A dtype compares by identity: copy, deepcopy and pickle return the same instance."""
    import copy
    import pickle

    for d in zyx.dtype.ALL_DTYPES:
        assert copy.copy(d) is d and copy.deepcopy(d) is d and pickle.loads(pickle.dumps(d)) is d
        assert d == d and hash(d) == hash(copy.deepcopy(d))
    assert zyx.float32 != zyx.float64 and len(set(zyx.dtype.ALL_DTYPES)) == len(zyx.dtype.ALL_DTYPES)
