"""CPU matmuls whose right operand's rows would lie a multiple of ``PAD_PERIOD`` bytes apart (N = 512, 1024,
1536 floats): the frontend's copy of that operand writes its rows ``PAD_BYTES`` further apart and the product
reads the padded view (``frontend.reduce._right_copy``). Checked by which copies are made (the ``row`` the
contiguize kernel is given), by kernel counts, against NumPy on odd sizes, and bit for bit against the same
product over the unpadded copy (the same tile, so the same order of summation)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.frontend import reduce as frontend_reduce
from zyx.kernels import contracts as kernels

pytestmark = pytest.mark.needs_device


@pytest.fixture
def rows(monkeypatch):
    """The ``row`` of each contiguize launch (0: a dense copy)."""
    seen: list[int] = []
    launch = kernels.contiguize

    def spy(*args, **kw):
        seen.append(kw.get("row", 0))
        return launch(*args, **kw)

    monkeypatch.setattr(kernels, "contiguize", spy)
    return seen


def _unpadded(monkeypatch, fn):
    """``fn()`` with padding switched off (a fresh graph: the schedule cache keys on its structure)."""
    monkeypatch.setattr(frontend_reduce, "PAD_PERIOD", 1 << 60)
    try:
        return fn()
    finally:
        monkeypatch.undo()


@pytest.mark.parametrize("n, kk, m, dtype, row", [
    (37, 300, 512, np.float32, 528),      # 2048-byte rows: 16 floats more
    (19, 301, 1024, np.float32, 1040),    # a reduce tail, a last partial row tile
    (33, 300, 256, np.float64, 264),      # 2048-byte rows of doubles: 8 more
    (40, 300, 600, np.float32, 0),        # 2400-byte rows: a dense copy
])
def test_transposed_right_operand_copied_with_padded_rows(rows, monkeypatch, n, kk, m, dtype, row):
    rng = np.random.default_rng(n + kk + m)
    x = rng.standard_normal((n, kk)).astype(dtype)
    w = rng.standard_normal((m, kk)).astype(dtype)
    zx, zw = zyx.tensor(x).realize(), zyx.tensor(w).realize()
    before = zyx.kernel_count()
    got = (zx @ zw.T).numpy()
    assert zyx.kernel_count() - before == 2 and rows == [row]
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-3)
    dense = _unpadded(monkeypatch, lambda: (zx @ zw.T).numpy())
    assert rows == [row, 0]
    np.testing.assert_array_equal(got, dense)  # the same tile over the same values: the same bits


def test_batched_transposed_right_operand_and_bias_gelu(rows):
    """A batch of ``x @ w.T`` (the copy's rows padded within each matrix) and ``gelu(x @ w.T + b)`` fused."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((3, 20, 70)).astype(np.float32)
    w = rng.standard_normal((3, 512, 70)).astype(np.float32)
    got = (zyx.tensor(x) @ zyx.tensor(w).transpose(-1, -2)).numpy()
    assert rows == [528]
    np.testing.assert_allclose(got, x @ w.swapaxes(-1, -2), rtol=1e-4, atol=1e-3)
    x2 = rng.standard_normal((64, 96)).astype(np.float32)
    w2 = rng.standard_normal((512, 96)).astype(np.float32) * 0.1
    b2 = rng.standard_normal(512).astype(np.float32)
    zx, zw, zb = (zyx.tensor(v).realize() for v in (x2, w2, b2))
    before = zyx.kernel_count()
    got2 = zyx.nn.functional.gelu(zyx.nn.functional.linear(zx, zw, zb)).numpy()
    assert zyx.kernel_count() - before == 2 and rows[-1] == 528  # the copy, then product + bias + gelu
    y = x2.astype(np.float64) @ w2.T.astype(np.float64) + b2
    from math import erf
    np.testing.assert_allclose(got2, 0.5 * y * (1 + np.vectorize(erf)(y / np.sqrt(2))), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n, copies", [
    (frontend_reduce.PAD_COPY_ROWS + 6, 1),   # many rows: the copy pays
    (frontend_reduce.PAD_COPY_ROWS // 2, 0),  # too few rows to pay for it
])
def test_row_major_right_operand_copied_with_padded_rows_for_many_rows(rows, monkeypatch, n, copies):
    rng = np.random.default_rng(n)
    a = rng.standard_normal((n, 72)).astype(np.float32)
    b = rng.standard_normal((72, 512)).astype(np.float32)
    za, zb = zyx.tensor(a).realize(), zyx.tensor(b).realize()
    before = zyx.kernel_count()
    got = (za @ zb).numpy()
    assert zyx.kernel_count() - before == 1 + copies and rows == [528] * copies
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(got, _unpadded(monkeypatch, lambda: (za @ zb).numpy()))


def test_gpu_heuristics_keep_dense_rows(rows, monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    rng = np.random.default_rng(2)
    x = rng.standard_normal((64, 128)).astype(np.float32)
    w = rng.standard_normal((512, 128)).astype(np.float32)
    got = (zyx.tensor(x) @ zyx.tensor(w).T).numpy()
    assert rows == [0]
    np.testing.assert_allclose(got, x @ w.T, rtol=1e-4, atol=1e-3)


def test_linear_gradients_through_the_padded_copy(rows):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((48, 96)).astype(np.float32)
    w = rng.standard_normal((512, 96)).astype(np.float32)
    zx, zw = zyx.tensor(x, requires_grad=True), zyx.tensor(w, requires_grad=True)
    g = rng.standard_normal((48, 512)).astype(np.float32)
    y = zyx.nn.functional.linear(zx, zw)
    (y * zyx.tensor(g)).sum().backward()
    np.testing.assert_allclose(y.numpy(), x @ w.T, rtol=1e-4, atol=1e-3)
    assert 528 in rows
    np.testing.assert_allclose(zx.grad.numpy(), g @ w, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(zw.grad.numpy(), g.T @ x, rtol=1e-4, atol=1e-3)
