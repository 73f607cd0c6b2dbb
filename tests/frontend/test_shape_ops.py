"""More movement and shape ops (API.md) against PyTorch CPU: repeat, tile, repeat_interleave, movedim,
swapaxes, diagonal, diag, meshgrid, tril/triu_indices and the pad modes, over dtypes, ranks 0..8, empty
and non-contiguous inputs, error messages and gradients."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.frontend import padding

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(14)
pytestmark = pytest.mark.needs_device

DTYPES = ["float32", "float16", "bfloat16", "float64", "int64", "int8", "uint8", "bool"]


def _data(shape, dtype="float32"):
    a = RNG.normal(size=shape) * 4
    if dtype == "bool":
        return a > 0
    if dtype in ("int64", "int8"):
        return a.astype(dtype)
    if dtype == "uint8":
        return np.abs(a).astype(dtype)
    return a.astype(np.float32 if dtype in ("float16", "bfloat16") else dtype)


def _pair(shape, dtype="float32"):
    a = _data(shape, dtype)
    t = torch.tensor(a)
    z = zyx.tensor(a)
    if dtype in ("float16", "bfloat16"):
        t = t.to(getattr(torch, dtype))
        z = z.cast(dtype)
    return z, t


def _same(z, t):
    """Same shape, dtype name and values (bit for bit: these ops only move elements)."""
    got = z.numpy()
    want = t.float().numpy() if t.dtype in (torch.bfloat16,) else t.numpy()
    if z.dtype is zyx.bfloat16:
        got = got.astype(np.float32)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert z.dtype.name == str(t.dtype).replace("torch.", ""), (z.dtype.name, t.dtype)
    np.testing.assert_array_equal(got, want)


def _noncontig(z, t):
    """The same values seen through a permuted, sliced view (rank >= 2)."""
    return z.transpose(0, -1)[::1], t.transpose(0, -1)


def _grad(fz, ft, shape, g_seed=0):
    """Gradients of ``sum(f(x) * g)`` for a random ``g`` agree with PyTorch's."""
    a = RNG.normal(size=shape).astype(np.float32)
    zx = zyx.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    zo, to = fz(zx), ft(tx)
    g = np.random.default_rng(g_seed).normal(size=tuple(to.shape)).astype(np.float32)
    zo.backward(zyx.tensor(g))
    to.backward(torch.tensor(g))
    np.testing.assert_allclose(zx.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ repeat, tile, repeat_interleave

@pytest.mark.parametrize("dtype", DTYPES)
def test_repeat_tile_dtypes(dtype):
    z, t = _pair((2, 3), dtype)
    _same(z.repeat(2, 1, 3), t.repeat(2, 1, 3))
    _same(z.tile(2), t.tile(2))
    _same(z.repeat_interleave(2, 1), t.repeat_interleave(2, 1))


@pytest.mark.parametrize("rank", [0, 1, 3, 8])
def test_repeat_ranks(rank):
    shape = tuple([2, 1, 3, 1, 2, 1, 1, 2][:rank])
    z, t = _pair(shape)
    reps = tuple([1, 2, 1, 3, 1, 1, 2, 1][:rank]) + (2,)
    _same(z.repeat(*reps), t.repeat(*reps))
    _same(zyx.tile(z, (2,)), torch.tile(t, (2,)))
    _same(z.repeat_interleave(3), t.repeat_interleave(3))
    if rank:
        _same(z.repeat_interleave(2, dim=-1), t.repeat_interleave(2, dim=-1))


def test_repeat_empty_and_noncontiguous():
    z, t = _pair((0, 3))
    _same(z.repeat(2, 2), t.repeat(2, 2))
    _same(z.repeat(0, 1, 1), t.repeat(0, 1, 1))
    _same(z.repeat_interleave(2, 1), t.repeat_interleave(2, 1))
    z, t = _noncontig(*_pair((3, 2, 4)))
    _same(z.repeat(1, 2, 1), t.repeat(1, 2, 1))
    _same(z[:, ::2].repeat_interleave(2, 0), t[:, ::2].repeat_interleave(2, 0))


def test_repeat_interleave_tensor_repeats():
    z, t = _pair((3, 4, 2))
    for dim, reps in ((1, [2, 0, 1, 3]), (0, [1, 2, 0]), (None, [1] * 24)):
        zr, tr = zyx.tensor(np.array(reps)), torch.tensor(reps)
        _same(z.repeat_interleave(zr, dim), t.repeat_interleave(tr, dim))
    _same(zyx.repeat_interleave(zyx.tensor([1, 0, 3])), torch.repeat_interleave(torch.tensor([1, 0, 3])))
    _same(zyx.repeat_interleave(z, zyx.tensor([2]), dim=2), torch.repeat_interleave(t, torch.tensor([2]), dim=2))
    zn, tn = _noncontig(z, t)  # a permuted input: the gather reads its strides
    _same(zn.repeat_interleave(zyx.tensor([3, 1]), 0), tn.repeat_interleave(torch.tensor([3, 1]), 0))
    zi, ti = _pair((4,), "int8")
    _same(zi.repeat_interleave(zyx.tensor([0, 1, 2, 3]), 0), ti.repeat_interleave(torch.tensor([0, 1, 2, 3]), 0))


def test_repeat_errors():
    z = zyx.zeros(2, 3)
    with pytest.raises(zyx.ShapeError, match="at least one per dim"):
        z.repeat(2)
    with pytest.raises(zyx.ShapeError, match="non-negative"):
        z.repeat(2, -1)
    with pytest.raises(zyx.ShapeError, match="same size as input along dim 1"):
        z.repeat_interleave(zyx.tensor([1, 2]), 1)
    with pytest.raises(zyx.ShapeError, match="non-negative"):
        z.repeat_interleave(zyx.tensor([1, -2, 1]), 1)
    with pytest.raises(zyx.DTypeError, match="integer tensor"):
        z.repeat_interleave(zyx.tensor([1.0, 2.0, 1.0]), 1)
    with pytest.raises(zyx.ShapeError, match="output_size 5"):
        z.repeat_interleave(2, 1, output_size=5)
    with pytest.raises(IndexError):
        z.repeat_interleave(2, 2)


def test_repeat_gradients():
    _grad(lambda x: x.repeat(2, 1, 3), lambda x: x.repeat(2, 1, 3), (3, 2))
    _grad(lambda x: x.tile((2, 2)), lambda x: x.tile((2, 2)), (3, 2))
    _grad(lambda x: x.repeat_interleave(3, 0), lambda x: x.repeat_interleave(3, 0), (3, 2))
    reps = [2, 0, 3]
    _grad(lambda x: x.repeat_interleave(zyx.tensor(reps), 1), lambda x: x.repeat_interleave(torch.tensor(reps), 1),
          (2, 3))


# ------------------------------------------------------------------ movedim, swapaxes, diagonal, diag

def test_movedim_swapaxes_views():
    z, t = _pair((2, 3, 4, 5))
    cases = [((0, 2), (0, 2)), ((1, -1), (1, -1)), (((0, 1), (2, 3)), ((0, 1), (2, 3))), (((3, 0), (0, 3)),) * 2]
    for zargs, targs in cases:
        out = z.movedim(*zargs)
        assert out._data is z._data  # a view
        _same(out, t.movedim(*targs))
    _same(zyx.moveaxis(z, -1, 0), torch.moveaxis(t, -1, 0))
    _same(zyx.swapaxes(z, 1, 3), torch.swapaxes(t, 1, 3))
    _same(z.swapdims(0, 2), t.swapdims(0, 2))
    s, ts = _pair(())
    _same(s.movedim(0, 0), ts.movedim(0, 0))
    with pytest.raises(zyx.ShapeError, match="repeated dim"):
        z.movedim((0, 0), (1, 2))
    with pytest.raises(zyx.ShapeError, match="as many dims"):
        z.movedim((0, 1), (1,))
    with pytest.raises(IndexError):
        z.movedim(4, 0)


@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "bfloat16"])
def test_diagonal_dtypes(dtype):
    z, t = _pair((3, 4, 5), dtype)
    for off, d1, d2 in ((0, 0, 1), (1, 0, 2), (-2, 2, 1), (3, 1, 2), (-7, 0, 1)):
        out = z.diagonal(off, d1, d2)
        assert out._data is z._data
        _same(out, t.diagonal(off, d1, d2))
    _same(zyx.diagonal(z, 1, -1, -2), torch.diagonal(t, 1, -1, -2))


def test_diagonal_noncontiguous_rank8_empty():
    z, t = _noncontig(*_pair((3, 4, 5)))
    _same(z.diagonal(1, 0, 1), t.diagonal(1, 0, 1))
    z, t = _pair((2, 1, 2, 1, 3, 1, 3, 2))
    _same(z.diagonal(0, 4, 6), t.diagonal(0, 4, 6))
    z, t = _pair((0, 3))
    _same(z.diagonal(), t.diagonal())
    with pytest.raises(zyx.ShapeError, match="rank >= 2"):
        zyx.zeros(3).diagonal()
    with pytest.raises(IndexError, match="rank >= 2"):  # PyTorch: dim 1 out of range, an IndexError
        zyx.zeros(3).diagonal()
    with pytest.raises(zyx.ShapeError, match="cannot be the same"):
        zyx.zeros(3, 3).diagonal(0, 1, -1)


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_diag(dtype):
    v, tv = _pair((4,), dtype)
    m, tm = _pair((3, 5), dtype)
    for k in (0, 2, -1):
        _same(v.diag(k), tv.diag(k))
        _same(zyx.diag(m, k), torch.diag(tm, k))
    e, te = _pair((0,), dtype)
    _same(e.diag(1), te.diag(1))
    with pytest.raises(zyx.ShapeError, match="1-D or 2-D"):
        zyx.zeros(2, 2, 2).diag()


def test_diagonal_diag_gradients():
    _grad(lambda x: x.diagonal(1, 0, 2), lambda x: x.diagonal(1, 0, 2), (3, 2, 4))
    _grad(lambda x: x.diagonal(-1, 2, 0), lambda x: x.diagonal(-1, 2, 0), (3, 2, 4))
    _grad(lambda x: x.diag(1), lambda x: x.diag(1), (3,))
    _grad(lambda x: x.diag(-1), lambda x: x.diag(-1), (3, 4))


# ------------------------------------------------------------------ meshgrid, tril/triu_indices

@pytest.mark.parametrize("indexing", ["ij", "xy"])
def test_meshgrid(indexing):
    a, ta = _pair((3,))
    b, tb = _pair((4,))
    c, tc = _pair(())
    zs = zyx.meshgrid(a, b, c, indexing=indexing)
    ts = torch.meshgrid(ta, tb, tc, indexing=indexing)
    for z, t in zip(zs, ts):
        _same(z, t)
    for z, t in zip(zyx.meshgrid([a], indexing=indexing), torch.meshgrid([ta], indexing=indexing)):
        _same(z, t)
    assert zs[0]._data is a._data  # broadcast views, no copy
    with pytest.raises(zyx.ShapeError, match="0-D or 1-D"):
        zyx.meshgrid(zyx.zeros(2, 2))
    with pytest.raises(zyx.ShapeError, match="'ij' or 'xy'"):
        zyx.meshgrid(a, indexing="yx")


def test_meshgrid_gradient():
    b = torch.tensor(RNG.normal(size=4).astype(np.float32))
    _grad(lambda x: zyx.meshgrid(x, zyx.tensor(b.numpy()), indexing="xy")[0] * 2,
          lambda x: torch.meshgrid(x, b, indexing="xy")[0] * 2, (3,))


def test_tril_triu_indices():
    for row, col, off in ((4, 3, 0), (3, 5, 1), (5, 5, -2), (0, 3, 0), (3, 4, 9), (3, 4, -9)):
        _same(zyx.tril_indices(row, col, off), torch.tril_indices(row, col, off))
        _same(zyx.triu_indices(row, col, off), torch.triu_indices(row, col, off))
    _same(zyx.tril_indices(3, 3, dtype=zyx.int32), torch.tril_indices(3, 3, dtype=torch.int32))
    with pytest.raises(zyx.ShapeError, match="non-negative"):
        zyx.tril_indices(-1, 3)
    with pytest.raises(zyx.DTypeError, match="integer dtype"):
        zyx.triu_indices(3, 3, dtype=zyx.float32)


# ------------------------------------------------------------------ pad modes

PADS = [(2, 1), (0, 3), (1, 2, 2, 0), (-1, 2), (1, 1, 1, 1, 1, 1)]


def _tpad(t, pads, mode):
    """PyTorch's pad in ``mode`` for any rank (it only takes 2-5-D inputs: flatten the leading dims)."""
    k = len(pads) // 2
    flat = t.reshape(-1, *t.shape[t.ndim - k:])
    out = TF.pad(flat, pads, mode=mode)
    return out.reshape(*t.shape[:t.ndim - k], *out.shape[1:])


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_modes(mode):
    z, t = _pair((2, 3, 4, 5))
    for pads in PADS:
        _same(F.pad(z, pads, mode=mode), _tpad(t, pads, mode))
    zn, tn = _noncontig(z, t)
    _same(zn.pad((1, 1, 1, 3), mode=mode), _tpad(tn.contiguous(), (1, 1, 1, 3), mode))
    _same(zyx.pad(z * 2, (1, 2), mode), _tpad(t * 2, (1, 2), mode))  # pending input
    zb, tb = _pair((2, 3, 100, 120))  # a large output: the padding kernel instead of the fused gather
    assert zb.numel() > padding.KERNEL_MIN
    _same(F.pad(zb, (3, 1, 0, 2), mode=mode), _tpad(tb, (3, 1, 0, 2), mode))
    _same(F.pad(zb.transpose(2, 3), (1, 2), mode=mode), _tpad(tb.transpose(2, 3), (1, 2), mode))


@pytest.mark.parametrize("dtype", ["float16", "int64", "uint8"])
def test_pad_modes_dtypes(dtype):
    z, t = _pair((3, 6), dtype)
    for mode in ("reflect", "replicate", "circular"):
        _same(F.pad(z, (2, 3, 1, 0), mode=mode), TF.pad(t.unsqueeze(0), (2, 3, 1, 0), mode=mode).squeeze(0))


def test_pad_modes_keep_bits_bool_and_empty():
    a = np.array([[-0.0, np.nan, 1.0, -np.inf]], np.float32)
    for mode in ("reflect", "replicate", "circular"):
        got = F.pad(zyx.tensor(a), (2, 2), mode=mode).numpy()
        want = TF.pad(torch.tensor(a), (2, 2), mode=mode).numpy()
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    b = np.array([[True, False, False]])
    np.testing.assert_array_equal(F.pad(zyx.tensor(b), (2, 1), mode="reflect").numpy(),
                                  np.pad(b, ((0, 0), (2, 1)), mode="reflect"))
    e = zyx.zeros(0, 4)
    assert F.pad(e, (1, 2), mode="reflect").shape == (0, 7)
    assert F.pad(zyx.zeros(2, 3, 4, 2, 1, 1, 2, 3), (1, 1, 2, 0), mode="replicate").shape == (2, 3, 4, 2, 1, 1, 4, 5)


def test_pad_mode_errors():
    z = zyx.zeros(2, 3)
    with pytest.raises(zyx.ShapeError, match="less than its size 3"):
        z.pad((3, 0), mode="reflect")
    with pytest.raises(zyx.ShapeError, match="at most its size 3"):
        z.pad((0, 4), mode="circular")
    with pytest.raises(zyx.ShapeError, match="non-empty dim"):
        zyx.zeros(2, 0).pad((1, 1), mode="replicate")
    with pytest.raises(zyx.ShapeError, match="mode must be one of"):
        z.pad((1, 1), mode="wrap")
    with pytest.raises(zyx.ShapeError, match="only applies to mode 'constant'"):
        z.pad((1, 1), mode="reflect", value=3.0)
    _same(z.pad((1, 1), 7.0), TF.pad(torch.zeros(2, 3), (1, 1), value=7.0))  # a number in mode's place: value


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_mode_gradients(mode):
    _grad(lambda x: F.pad(x, (2, 1, 1, 2), mode=mode), lambda x: _tpad(x, (2, 1, 1, 2), mode), (2, 3, 4))
    _grad(lambda x: F.pad(x, (2, 1, 1, 2), mode=mode), lambda x: _tpad(x, (2, 1, 1, 2), mode), (4, 130, 130))


def test_pad_mode_one_kernel():
    for shape in ((2, 3, 8, 8), (4, 16, 64, 64)):  # the fused gather; the padding kernel (every dim at once)
        x = zyx.tensor(_data(shape)).realize()
        before = zyx.kernel_count()
        F.pad(x, (2, 2, 3, 1), mode="reflect").realize()
        assert zyx.kernel_count() - before == 1


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "bool"])
def test_pad_modes_large_outputs(mode, dtype):
    """The padding kernel against NumPy's pad (every element width, bool included, which PyTorch refuses):
    rows split across work items (long last dims), blocks of unpadded inner dims, padded outer dims between
    unpadded ones, rank 8, offset and strided views, a pending input."""
    numpy_mode = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]

    def check(z, a, pads):
        """``z`` (holding ``a``'s values, maybe still pending) padded, against NumPy's pad of ``a``."""
        got = F.pad(z, pads, mode=mode)
        per_dim = [(0, 0)] * (a.ndim - len(pads) // 2) + [tuple(pads[i:i + 2]) for i in range(len(pads) - 2, -1, -2)]
        want = np.pad(a, per_dim, mode=numpy_mode)
        assert got.dtype is z.dtype and got.numel() >= padding.KERNEL_MIN
        np.testing.assert_array_equal(got.numpy().view(np.uint8), want.view(np.uint8))

    for shape, pads in [((5, 70000), (3, 9)), ((3, 40, 700), (0, 0, 5, 2)), ((6, 7, 30, 60), (0, 0, 4, 3, 0, 0)),
                        ((2, 3, 2, 2, 3, 2, 40, 50), (2, 1, 1, 3)), ((2, 45, 2000), (1, 2, 0, 0, 1, 1))]:
        z = _pair(shape, dtype)[0]
        check(z, z.numpy(), pads)
    z = _pair((9, 50, 300), dtype)[0]
    a = z.numpy()
    check(z[2:], a[2:], (4, 5, 1, 2))  # dense from an offset
    check(z[:, ::2, 1:], a[:, ::2, 1:], (4, 5, 1, 2))
    if dtype == "bool":  # pending inputs: the pad's node realizes them
        check(z.flip(0), a[::-1], (0, 7, 3, 3))
    else:
        check(z * 3, (a * 3).astype(a.dtype), (0, 7, 3, 3))


def test_split_and_chunk_of_a_0d_tensor_raise():
    for fn in (lambda s: s.split(1), lambda s: s.chunk(1), lambda s: zyx.split(s, [1])):
        with pytest.raises(IndexError, match="at least 1 dim"):
            fn(zyx.tensor(1.0))
