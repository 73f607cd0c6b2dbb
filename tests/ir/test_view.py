"""zyx.ir.view and the tensor movement ops built on it, checked against NumPy views."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import zyx
from zyx.ir.view import View, contiguous_strides, normalize_dim


def np_view(base_flat: np.ndarray, arr: np.ndarray) -> View:
    """The zyx View of a NumPy view ``arr`` into the 1-D array ``base_flat``."""
    item = arr.itemsize
    offset = (arr.__array_interface__["data"][0] - base_flat.__array_interface__["data"][0]) // item
    return View(arr.shape, tuple(s // item for s in arr.strides), offset)


def gather(base_flat: np.ndarray, view: View) -> np.ndarray:
    """The elements ``view`` selects from ``base_flat`` (evaluated on the host)."""
    if view.numel == 0:
        return np.empty(view.shape, base_flat.dtype)
    idx = np.full(view.shape, view.offset, dtype=np.int64)
    for dim, (size, stride) in enumerate(zip(view.shape, view.strides)):
        shape = [1] * view.ndim
        shape[dim] = size
        idx = idx + np.arange(size).reshape(shape) * stride
    return base_flat[idx]


def dense(a: np.ndarray) -> np.ndarray:
    """``np.ascontiguousarray(a)`` keeping rank 0 (NumPy's own returns at least 1-D)."""
    return np.array(a, order="C", copy=True)


# ------------------------------------------------------------------ View itself

def test_contiguous_strides() -> None:
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
    assert contiguous_strides(()) == ()
    assert contiguous_strides((5,)) == (1,)
    assert contiguous_strides((2, 1, 3)) == (3, 0, 1)  # size-1 dims: stride irrelevant, 0
    assert contiguous_strides((0, 3)) == (3, 1)


def test_normalize_dim() -> None:
    assert normalize_dim(-1, 3) == 2
    assert normalize_dim(0, 0) == 0 and normalize_dim(-1, 0) == 0  # rank 0 accepts 0 and -1, like PyTorch
    for bad in (3, -4):
        with pytest.raises(zyx.ShapeError) as info:
            normalize_dim(bad, 3)
        assert isinstance(info.value, IndexError)
        assert f"{bad}" in str(info.value) and "[-3, 2]" in str(info.value)
    with pytest.raises(zyx.ShapeError, match="must be an int"):
        normalize_dim(True, 3)


def test_view_properties() -> None:
    v = View.contiguous((2, 3, 4))
    assert v.is_contiguous and v.is_dense and not v.has_broadcast and not v.has_negative_strides
    assert v.numel == 24 and v.ndim == 3 and v.span() == (0, 23)
    t = v.permute((2, 0, 1))
    assert not t.is_contiguous and not t.is_dense and t.span() == (0, 23)
    s = v.slice(2, 3, -1, -1)  # [..., ::-1] from normalized indices
    assert s.has_negative_strides and s.span() == (0, 23)
    e = View((1, 3), (0, 1)).expand((4, 3))
    assert e.has_broadcast and e.shape == (4, 3) and e.strides == (0, 1)
    o = View((2, 3), (3, 1), 5)
    assert o.is_dense and not o.is_contiguous and o.span() == (5, 10)
    assert View((0, 3), (3, 1), 7).is_contiguous
    assert View((0, 3), (3, 1), 7).span() == (7, 6)


def _random_views(rng: np.random.Generator, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random strided NumPy views (slices, steps, transposes) of a flat arange buffer."""
    out = []
    for _ in range(count):
        ndim = int(rng.integers(1, 5))
        shape = tuple(int(s) for s in rng.integers(1, 5, ndim))
        base = np.arange(math.prod(shape) * 4, dtype=np.int32)
        arr = base[: math.prod(shape) * 4].reshape(shape[:-1] + (shape[-1] * 4,))
        sl = []
        for d in arr.shape:
            start = int(rng.integers(0, max(d // 2, 1)))
            step = int(rng.choice([1, 1, 2, -1, -2]))
            sl.append(slice(start, None, step) if step > 0 else slice(None, start if start else None, step))
        arr = arr[tuple(sl)]
        if rng.random() < 0.5:
            arr = arr.transpose(rng.permutation(arr.ndim))
        out.append((base, arr))
    return out


def _factorizations(n: int, max_len: int = 4) -> list[tuple[int, ...]]:
    divs = [d for d in range(1, n + 1) if n % d == 0]
    shapes = {(n,)}
    for length in range(2, max_len + 1):
        for combo in itertools.product(divs, repeat=length - 1):
            p = math.prod(combo)
            if n % p == 0:
                shapes.add(combo + (n // p,))
    return sorted(shapes)


def test_reshape_is_zero_copy_exactly_when_numpy_can() -> None:
    rng = np.random.default_rng(0)
    checked = 0
    for base, arr in _random_views(rng, 60):
        view = np_view(base, arr)
        assert np.array_equal(gather(base, view), arr)
        for shape in _factorizations(arr.size)[:40]:
            try:
                expected = arr.reshape(shape, copy=False)
            except ValueError:
                expected = None
            got = view.reshape(shape)
            if expected is None:
                assert got is None, (arr.shape, arr.strides, shape)
                continue
            assert got is not None, f"no zero-copy reshape {arr.shape} {view.strides} -> {shape}"
            assert got.shape == shape
            assert np.array_equal(gather(base, got), expected)
            checked += 1
    assert checked > 200


def test_reshape_size_mismatch() -> None:
    with pytest.raises(zyx.ShapeError, match="cannot reshape"):
        View.contiguous((2, 3)).reshape((4, 2))


def test_merged_keeps_the_mapping() -> None:
    rng = np.random.default_rng(1)
    for base, arr in _random_views(rng, 60):
        view = np_view(base, arr)
        m = view.merged()
        assert m.ndim <= max(view.ndim, 1)
        assert np.array_equal(gather(base, m).reshape(-1), arr.reshape(-1))


def test_expand_rules() -> None:
    v = View.contiguous((3, 1))
    assert v.expand((2, 3, 4)).strides == (0, 1, 0)
    assert v.expand((3, -1)).shape == (3, 1)
    assert v.expand((3, 0)).shape == (3, 0)
    with pytest.raises(zyx.ShapeError, match="cannot expand"):
        v.expand((4, 4))
    with pytest.raises(zyx.ShapeError, match="fewer dims"):
        v.expand((3,))
    with pytest.raises(zyx.ShapeError, match="-1"):
        v.expand((-1, 3, 1))


def test_permute_rules() -> None:
    v = View.contiguous((2, 3, 4))
    assert v.permute((-1, 0, 1)).shape == (4, 2, 3)
    with pytest.raises(zyx.ShapeError, match="permutation"):
        v.permute((0, 0, 1))
    with pytest.raises(zyx.ShapeError, match="expected 3 dims"):
        v.permute((0, 1))


# ------------------------------------------------------------------ tensors vs NumPy

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
R8 = np.arange(2 * 3 * 2 * 2 * 3, dtype=np.int32).reshape(2, 1, 3, 1, 2, 2, 1, 3)

# (id, numpy source, numpy op, zyx op, shares the buffer)
VIEW_CASES = [
    ("flip0", A, lambda a: a[::-1], lambda x: x[::-1], True),
    ("step-2", A, lambda a: a[:, ::-2], lambda x: x[:, ::-2], True),
    ("mixed-steps", A, lambda a: a[1:, :3:2, ::-3], lambda x: x[1:, :3:2, ::-3], True),
    ("flip-all", A, lambda a: a[::-1, ::-1, ::-1], lambda x: x[::-1, ::-1, ::-1], True),
    ("ellipsis-int", A, lambda a: a[..., 1], lambda x: x[..., 1], True),
    ("none-int-ellipsis", A, lambda a: a[None, 1, ..., None], lambda x: x[None, 1, ..., None], True),
    ("neg-int", A, lambda a: a[-1, -2], lambda x: x[-1, -2], True),
    ("tail-slice", A, lambda a: a[:, -2:], lambda x: x[:, -2:], True),
    ("empty-slice", A, lambda a: a[2:1], lambda x: x[2:1], True),
    ("big-bounds", A, lambda a: a[-10:10, 1:100:3], lambda x: x[-10:10, 1:100:3], True),
    ("neg-step-stop", A, lambda a: a[:, 3:0:-2, 4::-4], lambda x: x[:, 3:0:-2, 4::-4], True),
    ("scalar-all", A, lambda a: a[1, 2, 3], lambda x: x[1, 2, 3], True),
    ("permute", A, lambda a: a.transpose(2, 0, 1), lambda x: x.permute(2, 0, 1), True),
    ("permute-neg", A, lambda a: a.transpose(1, 2, 0), lambda x: x.permute(-2, -1, 0), True),
    ("transpose", A, lambda a: a.swapaxes(0, 2), lambda x: x.transpose(0, 2), True),
    ("T", A[0], lambda a: a.T, lambda x: x.T, True),
    ("T-1d", A[0, 0], lambda a: a.T, lambda x: x.T, True),
    ("expand", A[:, :1], lambda a: np.broadcast_to(a, (2, 3, 4, 5)), lambda x: x.expand(2, 3, 4, 5), True),
    ("expand-keep", A[:, :1], lambda a: np.broadcast_to(a, (3, 6, 5)), lambda x: x.expand(-1, 6, -1), True),
    ("broadcast_to", A[0, 0, :1], lambda a: np.broadcast_to(a, (4, 3)), lambda x: x.broadcast_to((4, 3)), True),
    ("expand-then-flip", A[:, :1], lambda a: np.broadcast_to(a, (3, 4, 5))[::-1, :, ::2],
     lambda x: x.expand(3, 4, 5)[::-1, :, ::2], True),
    ("squeeze-all", A[:, :1, None], lambda a: a.squeeze(), lambda x: x.squeeze(), True),
    ("squeeze-dim", A[:, :1], lambda a: a.squeeze(1), lambda x: x.squeeze(1), True),
    ("squeeze-nonone", A, lambda a: a, lambda x: x.squeeze(0), True),
    ("unsqueeze", A, lambda a: a[:, None], lambda x: x.unsqueeze(1), True),
    ("unsqueeze-neg", A, lambda a: a[..., None], lambda x: x.unsqueeze(-1), True),
    ("flatten", A, lambda a: a.reshape(-1), lambda x: x.flatten(), True),
    ("flatten-part", A, lambda a: a.reshape(3, 20), lambda x: x.flatten(1), True),
    ("flatten-strided", A[:, ::2], lambda a: a.reshape(6, 5), lambda x: x.flatten(0, 1), True),
    ("narrow", A, lambda a: a[:, 1:3], lambda x: x.narrow(1, 1, 2), True),
    ("narrow-neg", A, lambda a: a[..., 2:5], lambda x: x.narrow(-1, -3, 3), True),
    ("reshape-view", A, lambda a: a.reshape(12, 5), lambda x: x.reshape(12, 5), True),
    ("reshape-infer", A, lambda a: a.reshape(2, -1, 3), lambda x: x.reshape(2, -1, 3), True),
    ("reshape-strided-view", A[:, :, ::2], lambda a: a.reshape(12, 3), lambda x: x.reshape(12, 3), True),
    ("view-alias", A, lambda a: a.reshape(5, 12), lambda x: x.view(5, 12), True),
    ("reshape-copy", A, lambda a: a.transpose(1, 0, 2).reshape(4, 15),
     lambda x: x.permute(1, 0, 2).reshape(4, 15), False),
    ("reshape-copy-flip", A, lambda a: a[:, ::-1].reshape(-1), lambda x: x[:, ::-1].reshape(-1), False),
    ("reshape-expand-copy", A[:, :1], lambda a: np.broadcast_to(a, (3, 4, 5)).reshape(12, 5),
     lambda x: x.expand(3, 4, 5).reshape(12, 5), False),
    # rank 0
    ("r0-none", np.float32(2.5), lambda a: np.asarray(a)[None], lambda x: x[None], True),
    ("r0-reshape", np.float32(2.5), lambda a: np.asarray(a).reshape(1, 1), lambda x: x.reshape(1, 1), True),
    ("r0-ellipsis", np.float32(2.5), lambda a: np.asarray(a)[...], lambda x: x[...], True),
    ("r0-expand", np.float32(2.5), lambda a: np.broadcast_to(a, (3, 2)), lambda x: x.expand(3, 2), True),
    ("r0-flatten", np.float32(2.5), lambda a: np.asarray(a).reshape(1), lambda x: x.flatten(), True),
    ("r0-unsqueeze", np.float32(2.5), lambda a: np.asarray(a)[None], lambda x: x.unsqueeze(0), True),
    ("r0-squeeze", np.float32(2.5), lambda a: np.asarray(a), lambda x: x.squeeze(), True),
    ("scalar-back-to-r0", A[:1, :1, :1], lambda a: a.reshape(()), lambda x: x.reshape(()), True),
    # rank 8
    ("r8-reverse-dims", R8, lambda a: a.transpose(7, 6, 5, 4, 3, 2, 1, 0), lambda x: x.permute(7, 6, 5, 4, 3, 2, 1, 0),
     True),
    ("r8-slices", R8, lambda a: a[::-1, :, 1:, ..., ::-2], lambda x: x[::-1, :, 1:, ..., ::-2], True),
    ("r8-squeeze", R8, lambda a: a.squeeze(), lambda x: x.squeeze(), True),
    ("r8-flatten", R8[:, :, ::2], lambda a: a.reshape(2, 1, 2 * 1 * 2 * 2, 1, 3), lambda x: x.flatten(2, 5), True),
    ("r8-expand", R8, lambda a: np.broadcast_to(a, (2, 4, 3, 2, 2, 2, 3, 3)),
     lambda x: x.expand(2, 4, 3, 2, 2, 2, 3, 3), True),
    ("r8-transpose-copy", R8, lambda a: a.swapaxes(0, 7).reshape(-1), lambda x: x.transpose(0, 7).reshape(-1), False),
    # empty
    ("empty-T", np.zeros((0, 3), np.float32), lambda a: a.T, lambda x: x.T, True),
    ("empty-flip", np.zeros((0, 3), np.float32), lambda a: a[:, ::-1], lambda x: x[:, ::-1], True),
    ("empty-reshape", np.zeros((0, 3), np.float32), lambda a: a.reshape(3, 0), lambda x: x.reshape(3, 0), True),
    ("empty-expand", np.zeros((0, 1), np.float32), lambda a: np.broadcast_to(a, (2, 0, 4)), lambda x: x.expand(2, 0, 4),
     True),
    ("expand-to-zero", A[:1, :1, :1], lambda a: np.broadcast_to(a, (1, 0, 1)), lambda x: x.expand(1, 0, 1), True),
]


@pytest.mark.parametrize("case", VIEW_CASES, ids=[c[0] for c in VIEW_CASES])
def test_tensor_views_match_numpy(device: zyx.Device, case) -> None:
    _, src, np_op, zyx_op, shares = case
    src = np.asarray(src)
    x = zyx.tensor(src, device=device)
    expected = np_op(src)
    y = zyx_op(x)
    assert y.shape == expected.shape
    assert y.dtype == x.dtype and y.device is device
    assert (y._buf is x._buf) == shares
    np.testing.assert_array_equal(y.numpy(), expected)
    c = y.contiguous()
    assert c.is_contiguous() and c.shape == expected.shape
    out = c.numpy()
    assert out.flags.c_contiguous
    np.testing.assert_array_equal(out, dense(expected))
    # the source is untouched
    np.testing.assert_array_equal(x.numpy(), src)


def test_contiguous_of_contiguous_is_self(device: zyx.Device) -> None:
    x = zyx.tensor(A, device=device)
    assert x.contiguous() is x
    assert x.reshape(60).contiguous()._buf is x._buf
    assert x[1:].is_contiguous() is False and x[1:].contiguous()._buf is not x._buf
    assert x.clone()._buf is not x._buf


def test_iteration_and_len(device: zyx.Device) -> None:
    x = zyx.tensor(A, device=device)
    rows = list(x)
    assert len(rows) == len(x) == 3
    for row, ref in zip(rows, A):
        np.testing.assert_array_equal(row.numpy(), ref)
    with pytest.raises(TypeError):
        iter(zyx.tensor(1.0, device=device))


def test_stride_and_size(device: zyx.Device) -> None:
    x = zyx.tensor(A, device=device)
    assert x.stride() == (20, 5, 1)
    assert x.permute(2, 0, 1).stride() == (1, 20, 5)
    assert x.size() == (3, 4, 5) and x.size(-1) == 5 and x.size(1) == 4
    assert x.dim() == x.ndim == 3
