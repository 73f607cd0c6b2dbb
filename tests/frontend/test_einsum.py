"""einsum, outer, dot, bmm, tensordot and zyx.linalg norms against PyTorch CPU: equations (ellipsis,
implicit output, diagonals, broadcasting), dtypes, empty and non-contiguous operands, errors, gradients."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(41)
pytestmark = pytest.mark.needs_device


def _arr(shape, dtype=np.float32):
    a = RNG.normal(size=shape) * 2
    return a.astype(dtype) if np.dtype(dtype).kind == "f" else np.round(a).astype(dtype)


def _close(z, t, rtol=1e-5, atol=1e-5):
    got = z.numpy()
    want = t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert z.dtype.name == str(t.dtype).replace("torch.", ""), (z.dtype.name, t.dtype)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol)


EQUATIONS = [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("i,i->", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("abc->", [(2, 3, 4)]),
    ("...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
    ("a...->...a", [(2, 3, 4)]),
    ("...", [(2, 3)]),
    ("bhqd,bhkd->bhqk", [(2, 3, 4, 5), (2, 3, 6, 5)]),
    ("ijk,jkl,lm->im", [(2, 3, 4), (3, 4, 5), (5, 6)]),
    ("i,i,i->i", [(4,), (1,), (4,)]),  # a size-1 dim broadcasts
    ("Ab,bC->CA", [(3, 2), (2, 4)]),
    ("abcdefgh,h->abcdefg", [(1, 2, 1, 2, 1, 2, 1, 3), (3,)]),  # rank 8
    ("ij,ij->ij", [(0, 3), (0, 3)]),
    ("ij,jk->ik", [(2, 0), (0, 3)]),  # an empty contraction: zeros
    ("ij...,ij...->ij", [(2, 3, 4, 2), (2, 3, 1, 2)]),  # ellipsis dims absent from the output are summed
    ("...ij->ij", [(2, 3, 4)]),
]


@pytest.mark.parametrize("eq,shapes", EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_equations(eq, shapes):
    arrs = [_arr(s) for s in shapes]
    _close(zyx.einsum(eq, *[zyx.tensor(a) for a in arrs]), torch.einsum(eq, *[torch.tensor(a) for a in arrs]))


def test_einsum_list_form_noncontiguous_and_dtypes():
    a, b = _arr((4, 3)), _arr((5, 4))
    za, zb = zyx.tensor(a).T, zyx.tensor(b)[::2].T  # permuted and strided operands
    ta, tb = torch.tensor(a).T, torch.tensor(b)[::2].T
    _close(zyx.einsum("ij,jk->ik", [za, zb]), torch.einsum("ij,jk->ik", [ta, tb]))
    _close(F.einsum("ij->i", za), torch.einsum("ij->i", ta))
    ia, ib = _arr((3, 4), np.int32), _arr((4, 2), np.int32)
    _close(zyx.einsum("ij,jk->ik", zyx.tensor(ia), zyx.tensor(ib)),
           torch.einsum("ij,jk->ik", torch.tensor(ia), torch.tensor(ib)))
    _close(zyx.einsum("ij->", zyx.tensor(ia)), torch.einsum("ij->", torch.tensor(ia)))
    h = _arr((3, 4))
    _close(zyx.einsum("ij,kj->ik", zyx.tensor(h).cast("float16"), zyx.tensor(h).cast("float16")),
           torch.einsum("ij,kj->ik", torch.tensor(h).half(), torch.tensor(h).half()), rtol=2e-3, atol=2e-2)
    _close(zyx.einsum("i,i->i", zyx.tensor(a[0]), zyx.tensor(a[0]).cast("float64")),
           torch.einsum("i,i->i", torch.tensor(a[0]), torch.tensor(a[0]).double()))


def test_einsum_sublist_form():
    # PyTorch's einsum(op, sublist, ..., [out]): ints name the labels, ... the broadcast dims
    a, b, c = _arr((3, 4)), _arr((4, 2)), _arr((2, 3, 4))
    za, zb, zc = zyx.tensor(a), zyx.tensor(b), zyx.tensor(c)
    ta, tb, tc = torch.tensor(a), torch.tensor(b), torch.tensor(c)
    _close(zyx.einsum(za, [0, 1], zb, [1, 30], [30, 0]), torch.einsum(ta, [0, 1], tb, [1, 30], [30, 0]))
    _close(zyx.einsum(za, [0, 1], zb, [1, 2]), torch.einsum(ta, [0, 1], tb, [1, 2]))
    _close(zyx.einsum(zc, [..., 1], zb, [1, 2], [..., 2]), torch.einsum(tc, [..., 1], tb, [1, 2], [..., 2]))
    with pytest.raises(zyx.ShapeError, match=r"in \[0, 52\)"):
        zyx.einsum(za, [0, 99])
    with pytest.raises(zyx.ShapeError, match="list of subscripts"):
        zyx.einsum(za, 3)


def test_einsum_lowers_to_matmul_and_views():
    a, b = zyx.tensor(_arr((2, 8, 16))).realize(), zyx.tensor(_arr((2, 16, 4))).realize()
    before = zyx.kernel_count()
    zyx.einsum("bij,bjk->bik", a, b).realize()
    mid = zyx.kernel_count()
    (a @ b).realize()
    assert mid - before == zyx.kernel_count() - mid == 1
    t = zyx.einsum("ij->ji", a[0])
    assert t._data is a._data  # a view
    d = zyx.einsum("ii->i", a[0, :, :8])
    assert d._data is a._data


ERRORS = [
    ("ij,jk->ik", [(2, 3)], "2 operand terms but 1 operands"),
    ("ij->ij", [(2, 3, 4)], "has 2 labels but the operand has rank 3"),
    ("ij,jk->ik", [(2, 3), (4, 5)], "subscript 'j' has size 4"),
    ("ii->i", [(2, 3)], "sizes don't match, 2 != 3"),
    ("i1->i", [(2, 2)], "invalid subscript '1'"),
    ("ij->k", [(2, 2)], "output label 'k' does not appear"),
    ("ij->ii", [(2, 2)], "repeats a label"),
    ("......->", [(2,)], "more than one ellipsis"),
]


@pytest.mark.parametrize("eq,shapes,msg", ERRORS, ids=[m for _, _, m in ERRORS])
def test_einsum_errors(eq, shapes, msg):
    with pytest.raises(zyx.ShapeError, match=msg):
        zyx.einsum(eq, *[zyx.zeros(*s) for s in shapes])


def test_einsum_gradients():
    a, b, c = _arr((2, 3, 4)), _arr((2, 4, 5)), _arr((5,))
    za, zb, zc = (zyx.tensor(x, requires_grad=True) for x in (a, b, c))
    ta, tb, tc = (torch.tensor(x, requires_grad=True) for x in (a, b, c))
    (zyx.einsum("bij,bjk,k->bi", za, zb, zc) ** 2).sum().backward()
    (torch.einsum("bij,bjk,k->bi", ta, tb, tc) ** 2).sum().backward()
    for z, t in ((za, ta), (zb, tb), (zc, tc)):
        _close(z.grad, t.grad, rtol=1e-4, atol=1e-4)
    d = _arr((3, 3))
    zd, td = zyx.tensor(d, requires_grad=True), torch.tensor(d, requires_grad=True)
    (zyx.einsum("ii->i", zd) * zyx.tensor([1.0, 2.0, 3.0])).sum().backward()
    (torch.einsum("ii->i", td) * torch.tensor([1.0, 2.0, 3.0])).sum().backward()
    _close(zd.grad, td.grad)


# ------------------------------------------------------------------ outer, dot, bmm, tensordot

def test_outer_dot_bmm_tensordot():
    u, v = _arr((3,)), _arr((4,))
    _close(zyx.outer(zyx.tensor(u), zyx.tensor(v)), torch.outer(torch.tensor(u), torch.tensor(v)))
    _close(zyx.dot(zyx.tensor(u), zyx.tensor(u)), torch.dot(torch.tensor(u), torch.tensor(u)))
    iu = _arr((5,), np.int64)
    _close(zyx.dot(zyx.tensor(iu), zyx.tensor(iu)), torch.dot(torch.tensor(iu), torch.tensor(iu)))
    a, b = _arr((2, 3, 4)), _arr((2, 4, 5))
    _close(zyx.bmm(zyx.tensor(a), zyx.tensor(b)), torch.bmm(torch.tensor(a), torch.tensor(b)))
    _close(zyx.tensor(a).bmm(zyx.tensor(b)), torch.tensor(a).bmm(torch.tensor(b)))
    _close(zyx.tensor(u).outer(zyx.tensor(v)), torch.tensor(u).outer(torch.tensor(v)))
    _close(zyx.tensor(v).dot(zyx.tensor(v)), torch.tensor(v).dot(torch.tensor(v)))
    x, y = _arr((2, 3, 4)), _arr((3, 4, 5))
    for dims in (2, 0, ([1, 2], [0, 1]), ([2], [1]), ([1], [0])):
        want = torch.tensordot(torch.tensor(x), torch.tensor(y), dims)
        _close(zyx.tensordot(zyx.tensor(x), zyx.tensor(y), dims), want, rtol=1e-4, atol=1e-4)


def test_small_contraction_errors():
    with pytest.raises(zyx.ShapeError, match="two 1-D tensors"):
        zyx.outer(zyx.zeros(2, 2), zyx.zeros(2))
    with pytest.raises(zyx.ShapeError, match="same size, got 2 and 3"):
        zyx.dot(zyx.zeros(2), zyx.zeros(3))
    with pytest.raises(zyx.DTypeError, match="same dtype"):
        zyx.dot(zyx.zeros(2), zyx.zeros(2, dtype=zyx.float64))
    with pytest.raises(zyx.ShapeError, match="two 3-D tensors"):
        zyx.bmm(zyx.zeros(2, 2), zyx.zeros(2, 2))
    with pytest.raises(zyx.ShapeError, match="cannot be multiplied"):
        zyx.bmm(zyx.zeros(2, 2, 3), zyx.zeros(3, 3, 2))
    with pytest.raises(zyx.ShapeError, match="contracted dims differ"):
        zyx.tensordot(zyx.zeros(2, 3), zyx.zeros(2, 3), 1)
    with pytest.raises(zyx.ShapeError, match="must be in"):
        zyx.tensordot(zyx.zeros(2, 3), zyx.zeros(3, 2), 3)


# ------------------------------------------------------------------ linalg norms

VECTOR_ORDS = [2, 1, 0, 3, 0.5, -1, math.inf, -math.inf]


@pytest.mark.parametrize("ord_", VECTOR_ORDS)
def test_vector_norm(ord_):
    a = _arr((3, 4, 5))
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(zyx.linalg.vector_norm(z, ord_), torch.linalg.vector_norm(t, ord_), rtol=1e-5)
    _close(zyx.linalg.vector_norm(z, ord_, (0, 2), keepdim=True),
           torch.linalg.vector_norm(t, ord_, (0, 2), keepdim=True))
    _close(zyx.linalg.norm(z[0, 0], ord_), torch.linalg.norm(t[0, 0], ord_))
    _close(zyx.linalg.norm(z.permute(2, 0, 1), ord_, dim=1), torch.linalg.norm(t.permute(2, 0, 1), ord_, dim=1))


@pytest.mark.parametrize("ord_", ["fro", 1, -1, math.inf, -math.inf])
def test_matrix_norm(ord_):
    a = _arr((2, 3, 4))
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(zyx.linalg.matrix_norm(z, ord_), torch.linalg.matrix_norm(t, ord_))
    _close(zyx.linalg.norm(z[0], ord_), torch.linalg.norm(t[0], ord_))
    _close(zyx.linalg.norm(z, ord_, dim=(2, 0), keepdim=True), torch.linalg.norm(t, ord_, dim=(2, 0), keepdim=True))


def test_norm_defaults_dtypes_and_errors():
    a = _arr((3, 4))
    z, t = zyx.tensor(a), torch.tensor(a)
    _close(zyx.linalg.norm(z), torch.linalg.norm(t))
    _close(zyx.linalg.norm(z, dim=1), torch.linalg.norm(t, dim=1))
    _close(zyx.linalg.norm(z.cast("float16")), torch.linalg.norm(t.half()), rtol=1e-3)
    _close(zyx.linalg.norm(z.cast("float64"), 3, dim=0), torch.linalg.norm(t.double(), 3, dim=0))
    _close(zyx.linalg.vector_norm(zyx.zeros(0, 3), 2, 0), torch.linalg.vector_norm(torch.zeros(0, 3), 2, 0))
    for o in (2, -2, "nuc"):  # singular-value norms (more in test_linalg_svd.py)
        _close(zyx.linalg.norm(z, o), torch.linalg.norm(t, o), rtol=1e-5)
    with pytest.raises(zyx.DTypeError, match="floating point"):
        zyx.linalg.norm(zyx.tensor([1, 2]))
    with pytest.raises(zyx.ShapeError, match="needs dim"):
        zyx.linalg.norm(zyx.zeros(2, 2, 2), 1)
    with pytest.raises(zyx.ShapeError, match="rank >= 2"):
        zyx.linalg.matrix_norm(zyx.zeros(3))
    with pytest.raises(zyx.ShapeError, match="empty tensor"):
        zyx.linalg.vector_norm(zyx.zeros(0), math.inf)


@pytest.mark.parametrize("ord_", [2, 3, 1, math.inf, "fro"])
def test_norm_gradients(ord_):
    a = _arr((3, 4))
    a[1] = 0.0  # a zero row: the 2-norm's gradient there is 0, not NaN
    a[2, 1] = a[2, 3] = 9.0  # tied maxima share the inf-norm's gradient
    z, t = zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    if ord_ == "fro":
        zyx.linalg.norm(z, "fro").backward()
        torch.linalg.norm(t, "fro").backward()
    else:
        zyx.linalg.vector_norm(z, ord_, dim=1).sum().backward()
        torch.linalg.vector_norm(t, ord_, dim=1).sum().backward()
    _close(z.grad, t.grad)
