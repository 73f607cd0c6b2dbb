"""``zyx.linalg.svdvals`` / ``svd`` and the singular-value matrix norms (``ord`` 2, -2, ``"nuc"``)
against torch 2.13 on random data: values, reconstruction and orthogonality, rank-deficient and
empty matrices, non-contiguous inputs, non-finite entries, gradients, error paths."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")

RNG = np.random.default_rng(14)
TOL = {"float32": dict(rtol=2e-5, atol=2e-5), "float64": dict(rtol=1e-11, atol=1e-11)}


def _arr(shape, dtype="float32"):
    return RNG.normal(size=shape).astype(dtype)


def _close(got, want, dtype="float32", scale=1.0):
    tol = TOL[dtype]
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=tol["rtol"], atol=tol["atol"] * scale)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (3, 5), (2, 4, 6, 4), (1, 1), (0, 3), (64, 64)])
def test_svdvals_matches_torch(shape, dtype):
    a = _arr(shape, dtype)
    got = zyx.linalg.svdvals(zyx.tensor(a))
    want = torch.linalg.svdvals(torch.tensor(a))
    assert got.shape == tuple(want.shape) and got.dtype.name == dtype
    _close(got, want, dtype, scale=10 if shape == (64, 64) else 1)


def _check_svd(a, full, dtype="float64"):
    u, s, vh = zyx.linalg.svd(zyx.tensor(a), full_matrices=full)
    tu, ts, tvh = torch.linalg.svd(torch.tensor(a), full_matrices=full)
    assert (u.shape, s.shape, vh.shape) == (tuple(tu.shape), tuple(ts.shape), tuple(tvh.shape))
    un, sn, vhn = u.numpy(), s.numpy(), vh.numpy()
    k = sn.shape[-1]
    tol = 1e-12 if dtype == "float64" else 3e-5
    np.testing.assert_allclose(sn, ts.numpy(), rtol=tol, atol=tol)
    rec = (un[..., :, :k] * sn[..., None, :]) @ vhn[..., :k, :]
    np.testing.assert_allclose(rec, a, atol=tol * 10)
    for gram in (np.swapaxes(un, -1, -2) @ un, vhn @ np.swapaxes(vhn, -1, -2)):
        np.testing.assert_allclose(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape), atol=tol * 10)


@pytest.mark.parametrize("full", [False, True])
def test_svd_reconstructs_and_is_orthogonal(full):
    for shape in [(5, 3), (3, 5), (2, 4, 4)]:
        _check_svd(_arr(shape, "float64"), full)
    _check_svd(_arr((7, 4), "float32"), full, "float32")


def test_svd_larger_odd_sizes():
    # odd row counts (the sweeps take rows two at a time), rows padded to whole vectors, pivoting
    # that reorders U's and V's rows along with the values
    _check_svd(_arr((2, 23, 17), "float64"), False)
    _check_svd(_arr((19, 30), "float32"), True, "float32")


def test_small_singular_values_keep_relative_accuracy():
    # columns graded from 1 down to 1e-6 (singular values down to ~1e-7): float32 one-sided Jacobi
    # gets every value to a few ulps of itself, not only of the largest (reference: float64 LAPACK
    # on the same float32 entries)
    a = (_arr((24, 24), "float64") * np.logspace(0, -6, 24)).astype(np.float32)
    got = zyx.linalg.svdvals(zyx.tensor(a)).numpy()
    np.testing.assert_allclose(got, np.linalg.svd(a.astype(np.float64), compute_uv=False), rtol=1e-5)


def test_rank_deficient_and_zero_matrices():
    b = _arr((6, 2), "float64")
    a = b @ _arr((2, 5), "float64")  # rank 2
    s = zyx.linalg.svdvals(zyx.tensor(a)).numpy()
    np.testing.assert_allclose(s, torch.linalg.svdvals(torch.tensor(a)).numpy(), atol=1e-12)
    assert np.all(np.abs(s[2:]) < 1e-12)
    for full in (False, True):  # the vectors of zero singular values still complete orthonormal bases
        _check_svd(a, full)
        _check_svd(np.zeros((4, 3)), full)
        _check_svd(np.ones((3, 4)), full)
    np.testing.assert_array_equal(zyx.linalg.svdvals(zyx.zeros(3, 2)).numpy(), np.zeros(2, np.float32))


def test_empty_shapes():
    for shape in [(0, 3), (3, 0), (2, 0, 4), (0, 3, 3)]:
        for full in (False, True):
            u, s, vh = zyx.linalg.svd(zyx.zeros(*shape), full_matrices=full)
            tu, ts, tvh = torch.linalg.svd(torch.zeros(shape), full_matrices=full)
            for z, t in ((u, tu), (s, ts), (vh, tvh)):
                assert z.shape == tuple(t.shape)
                np.testing.assert_array_equal(z.numpy(), t.numpy())


def test_non_contiguous_and_batched_inputs():
    base = _arr((4, 6, 5), "float64")
    t = torch.tensor(base)
    z = zyx.tensor(base)
    for zv, tv in ((z.permute(2, 0, 1), t.permute(2, 0, 1)), (z[:, ::2, 1:], t[:, ::2, 1:]),
                   (z[0].transpose(0, 1), t[0].transpose(0, 1)),
                   (z[:1, :3, :3].expand(3, 3, 3), t[:1, :3, :3].expand(3, 3, 3))):
        _close(zyx.linalg.svdvals(zv), torch.linalg.svdvals(tv), "float64")


def test_non_finite_entries_give_nan():
    a = _arr((2, 3, 3))
    a[0, 1, 1] = np.inf
    a[1, 0, 2] = np.nan
    good = _arr((3, 3))
    z = zyx.linalg.svdvals(zyx.tensor(np.concatenate([a, good[None]])))
    assert np.isnan(z.numpy()[:2]).all()
    np.testing.assert_allclose(z.numpy()[2], torch.linalg.svdvals(torch.tensor(good)).numpy(), rtol=2e-5)
    u, s, vh = zyx.linalg.svd(zyx.tensor(a[:1]))
    assert np.isnan(u.numpy()).all() and np.isnan(vh.numpy()).all()
    np.testing.assert_array_equal(torch.linalg.svdvals(torch.tensor(a[:1])).isnan().numpy(), np.isnan(s.numpy()))


@pytest.mark.parametrize("ord_", [2, -2, "nuc"])
def test_matrix_norms_match_torch(ord_):
    a = _arr((3, 4, 5), "float64")
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(zyx.linalg.matrix_norm(z, ord_), torch.linalg.matrix_norm(t, ord_), "float64")
    _close(zyx.linalg.norm(z[0], ord_), torch.linalg.norm(t[0], ord_), "float64")
    _close(zyx.linalg.norm(z, ord_, dim=(2, 0), keepdim=True), torch.linalg.norm(t, ord_, dim=(2, 0), keepdim=True),
           "float64")
    a32 = a.astype(np.float32)
    _close(zyx.linalg.matrix_norm(zyx.tensor(a32), ord_, dtype="float64"),
           torch.linalg.matrix_norm(torch.tensor(a32), ord_, dtype=torch.float64), "float64")
    if ord_ != -2:
        assert zyx.linalg.matrix_norm(zyx.zeros(0, 3), ord_).item() == torch.linalg.matrix_norm(
            torch.zeros(0, 3), ord_).item()


@pytest.mark.parametrize("ord_", [2, -2, "nuc"])
def test_matrix_norm_gradients_match_torch(ord_):
    a = _arr((2, 4, 3), "float64")
    z = zyx.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    w = _arr((2,), "float64")
    (zyx.linalg.matrix_norm(z, ord_) * zyx.tensor(w)).sum().backward()
    (torch.linalg.matrix_norm(t, ord_) * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)
    # a wide matrix, permuted dims, float32
    b = _arr((3, 5), "float32")
    z = zyx.tensor(b, requires_grad=True)
    t = torch.tensor(b, requires_grad=True)
    zyx.linalg.norm(z.transpose(0, 1), ord_).backward()
    torch.linalg.norm(t.transpose(0, 1), ord_).backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-4, atol=1e-5)


def test_svd_gradients():
    a = _arr((5, 3), "float64")
    g = _arr((3,), "float64")
    z = zyx.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    (zyx.linalg.svdvals(z) * zyx.tensor(g)).sum().backward()
    (torch.linalg.svdvals(t) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)
    for full in (True, False):  # through svd's S, full or reduced vectors
        z = zyx.tensor(a, requires_grad=True)
        (zyx.linalg.svd(z, full_matrices=full).S * zyx.tensor(g)).sum().backward()
        np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("shape,full", [((5, 3), False), ((3, 5), False), ((2, 5, 3), True), ((3, 5), True)])
def test_svd_vector_gradients_match_torch(shape, full):
    """A loss of U, S and Vh invariant to the vectors' signs (PyTorch's may differ): the squares of the
    first k columns of U and rows of Vh, weighted (the extra columns of full U/Vh get no gradient)."""
    a = _arr(shape, "float64")
    k = min(shape[-2:])
    w1, w2, w3 = _arr(shape[:-2] + (shape[-2], k), "float64"), _arr(shape[:-2] + (k, shape[-1]), "float64"), \
        _arr(shape[:-2] + (k,), "float64")

    def loss(lib, u, s, vh):
        return ((u[..., :, :k] ** 2) * lib.tensor(w1)).sum() + ((vh[..., :k, :] ** 2) * lib.tensor(w2)).sum() \
            + (s * lib.tensor(w3)).sum()

    z = zyx.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    loss(zyx, *zyx.linalg.svd(z, full_matrices=full)).backward()
    loss(torch, *torch.linalg.svd(t, full_matrices=full)).backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_norm_second_derivative_matches_torch():
    a = _arr((4, 3), "float64")
    z = zyx.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    gz, = zyx.autograd.grad(zyx.linalg.matrix_norm(z, "nuc"), [z], create_graph=True)
    (gz ** 2 * zyx.tensor(a)).sum().backward()
    gt, = torch.autograd.grad(torch.linalg.matrix_norm(t, "nuc"), [t], create_graph=True)
    (gt ** 2 * torch.tensor(a)).sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-9, atol=1e-10)


def test_errors():
    with pytest.raises(zyx.ShapeError, match="rank >= 2"):
        zyx.linalg.svdvals(zyx.zeros(3))
    with pytest.raises(zyx.DTypeError, match="float32 or float64"):
        zyx.linalg.svd(zyx.tensor([[1, 2], [3, 4]]))
    with pytest.raises(zyx.DTypeError, match="no 16-bit floats"):
        zyx.linalg.svdvals(zyx.zeros(2, 2, dtype="float16"))
    with pytest.raises(zyx.DTypeError, match="no 16-bit floats"):
        zyx.linalg.matrix_norm(zyx.zeros(2, 2, dtype="bfloat16"), 2)
    with pytest.raises(zyx.DTypeError, match="without narrowing"):
        zyx.linalg.matrix_norm(zyx.zeros(2, 2), "nuc", dtype="float16")
    with pytest.raises(zyx.ShapeError, match="ord=-2 of an empty matrix"):
        zyx.linalg.matrix_norm(zyx.zeros(0, 3), -2)
