"""zyx.nn.functional convolution, pooling and normalization against PyTorch CPU (values and gradients)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
RNG = np.random.default_rng(14)
pytestmark = pytest.mark.needs_device

TOL = {np.float32: 2e-4, np.float64: 1e-10}


def _arr(*shape, dtype=np.float32):
    return RNG.normal(size=shape).astype(dtype)


def _close(z, t, dtype=np.float32, scale=1.0):
    tol = TOL[dtype] * scale
    np.testing.assert_allclose(z.numpy().astype(np.float64), t.detach().numpy().astype(np.float64),
                               rtol=tol, atol=tol)


def _pair(a):
    """A zyx leaf and a torch leaf holding the same values, both requiring grad."""
    return zyx.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


def _check_grads(zout, tout, zs, ts, dtype, scale=1.0):
    """Backward of sum(out * a random cotangent) on both sides; compares each input's gradient."""
    cot = _arr(*tout.shape, dtype=dtype)
    (zout * zyx.tensor(cot)).sum().backward()
    (tout * torch.tensor(cot)).sum().backward()
    for z, t in zip(zs, ts):
        _close(z.grad, t.grad, dtype, scale)


# the composed convolution's backward builds a kernel per kernel offset: 2x3/3x2 kernels where the side
# is not what a case tests (a 3-tap side dilated, strided or padded 'same' remains in each)
CONV2D = [  # (N, C, H, W), O, kernel, stride, padding, dilation, groups
    ((2, 3, 7, 9), 4, 3, 1, 1, 1, 1),
    ((1, 4, 8, 8), 6, (2, 3), 2, (1, 0), 1, 2),
    ((2, 6, 9, 7), 6, (3, 2), 1, "same", 2, 3),
    ((2, 4, 9, 7), 4, (3, 2), 1, "same", 1, 4),  # depthwise; "same" with an even kernel pads more after
    ((1, 2, 5, 5), 3, 1, 1, 0, 1, 1),
    ((1, 2, 11, 10), 2, 7, (3, 2), 3, 1, 1),  # 49 offsets: the window-reduce path
    ((3, 5, 6, 8), 7, (2, 3), (2, 3), "valid", (2, 1), 1),
    ((0, 3, 5, 5), 2, 3, 1, 1, 1, 1),  # empty batch
]


# float64 runs the same kernels with another element type: one case (grouped, strided, padded)
# covers it; every case runs in float32.
@pytest.mark.parametrize("case, dtype", [(c, np.float32) for c in CONV2D] + [(CONV2D[1], np.float64)])
def test_conv2d(case, dtype):
    shape, o, k, s, p, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    x, w, b = _arr(*shape, dtype=dtype), _arr(o, shape[1] // g, *kk, dtype=dtype), _arr(o, dtype=dtype)
    (zx, tx), (zw, tw), (zb, tb) = _pair(x), _pair(w), _pair(b)
    zo, to = F.conv2d(zx, zw, zb, s, p, d, g), TF.conv2d(tx, tw, tb, s, p, d, g)
    assert zo.shape == tuple(to.shape) and zo.dtype.numpy == dtype
    _close(zo, to, dtype)
    if shape[0]:
        _check_grads(zo, to, (zx, zw, zb), (tx, tw, tb), dtype, 5)


def test_conv2d_noncontiguous_unbatched_no_bias():
    x = _arr(2, 9, 6, 5)  # the input is read through a permuted, sliced view
    w = _arr(4, 5, 3, 3)
    zx = zyx.tensor(x).permute(0, 3, 2, 1)[:, :, 1:, ::2]
    tx = torch.tensor(x).permute(0, 3, 2, 1)[:, :, 1:, ::2]
    _close(F.conv2d(zx, zyx.tensor(w), padding=1), TF.conv2d(tx, torch.tensor(w), padding=1))
    _close(F.conv2d(zx[0], zyx.tensor(w), stride=2), TF.conv2d(tx[0], torch.tensor(w), stride=2))


def test_conv2d_is_one_kernel():
    x, w, b = zyx.tensor(_arr(2, 8, 10, 10)), zyx.tensor(_arr(16, 8, 3, 3)), zyx.tensor(_arr(16))
    x.realize(), w.realize(), b.realize()
    before = zyx.kernel_count()
    y = F.conv2d(x, w, b, padding=1).realize()
    # the weight's (KH, C, KW, O) relayout (a small copy), then the direct kernel (padding and bias inside)
    assert zyx.kernel_count() - before == 2
    before = zyx.kernel_count()
    y.relu().realize()  # the result is a channels-last buffer seen as NCHW: what follows is its own kernel
    assert zyx.kernel_count() - before == 1


def test_conv1d_conv3d():
    dtype = np.float64  # conv1d in float64, conv3d in float32: each dtype once per rank family
    x, w, b = _arr(2, 4, 13, dtype=dtype), _arr(6, 2, 3, dtype=dtype), _arr(6, dtype=dtype)
    (zx, tx), (zw, tw), (zb, tb) = _pair(x), _pair(w), _pair(b)
    zo, to = F.conv1d(zx, zw, zb, 2, 1, 2, 2), TF.conv1d(tx, tw, tb, 2, 1, 2, 2)
    _close(zo, to, dtype)
    _check_grads(zo, to, (zx, zw, zb), (tx, tw, tb), dtype, 5)
    dtype = np.float32
    # a kernel side differing per axis (2x3x2: 12 offsets, each its own kernel in the backward)
    x, w = _arr(1, 2, 5, 6, 4, dtype=dtype), _arr(3, 2, 2, 3, 2, dtype=dtype)
    (zx, tx), (zw, tw) = _pair(x), _pair(w)
    zo, to = F.conv3d(zx, zw, None, 1, (1, 0, 1)), TF.conv3d(tx, tw, None, 1, (1, 0, 1))
    _close(zo, to, dtype)
    _check_grads(zo, to, (zx, zw), (tx, tw), dtype, 5)


# the direct kernel (4 output channels); the composed convolution, dilated and grouped; stride 3 with
# output_padding 2 and padding 2 past dilation*(kernel-1), so the input's padding is negative on one side
# (the crop) and positive on the other (a 2x2 kernel: the composed backward builds a kernel per offset)
@pytest.mark.parametrize("case", [  # C, O, kernel, stride, padding, output_padding, dilation, groups
    (3, 4, 3, 2, 1, 1, 1, 1),
    (4, 6, (2, 3), (1, 2), 0, 0, 2, 2),
    (2, 2, 2, 3, 2, 2, 1, 1),
])
def test_conv_transpose2d(case):
    c, o, k, s, p, op, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    x, w, b = _arr(2, c, 5, 6), _arr(c, o // g, *kk), _arr(o)
    (zx, tx), (zw, tw), (zb, tb) = _pair(x), _pair(w), _pair(b)
    zo, to = F.conv_transpose2d(zx, zw, zb, s, p, op, g, d), TF.conv_transpose2d(tx, tw, tb, s, p, op, g, d)
    _close(zo, to)
    _check_grads(zo, to, (zx, zw, zb), (tx, tw, tb), np.float32, 5)
    x, w = _arr(2, 4, 7), _arr(4, 3, 3)
    _close(F.conv_transpose1d(zyx.tensor(x), zyx.tensor(w), None, 2, 1, 1),
           TF.conv_transpose1d(torch.tensor(x), torch.tensor(w), None, 2, 1, 1))


def test_conv_transpose_empty_output_and_size_errors():
    # an output size of exactly 0 gives the empty tensor (PyTorch's too) with zero gradients; a negative one
    # is a ShapeError naming the caller's own arguments
    x, w = _arr(2, 2, 3), _arr(2, 1, 2)
    (zx, tx), (zw, tw) = _pair(x), _pair(w)
    zo = F.conv_transpose1d(zx, zw, padding=2, groups=2)
    to = TF.conv_transpose1d(tx, tw, padding=2, groups=2)
    assert zo.shape == tuple(to.shape) == (2, 2, 0) and zo.numpy().shape == (2, 2, 0)
    zo.sum().backward()
    np.testing.assert_array_equal(zx.grad.numpy(), np.zeros_like(x))
    np.testing.assert_array_equal(zw.grad.numpy(), np.zeros_like(w))
    x2, w2 = zyx.tensor(_arr(1, 1, 3, 3)), zyx.tensor(_arr(1, 1, 3, 1))
    with pytest.raises(zyx.ShapeError, match=r"padding \(2, 2\).*output size \(3, -1\)"):
        F.conv_transpose2d(x2, w2, padding=2, dilation=2)
    with pytest.raises(zyx.ShapeError, match="not negative"):
        F.conv_transpose2d(x2, w2, padding=-1)
    with pytest.raises(zyx.ShapeError, match="positive"):
        F.conv_transpose2d(x2, w2, stride=0)


def test_conv_errors():
    x, w = zyx.tensor(_arr(1, 4, 5, 5)), zyx.tensor(_arr(2, 3, 3, 3))
    with pytest.raises(zyx.ShapeError, match="groups"):
        F.conv2d(x, w)
    with pytest.raises(zyx.ShapeError, match="output size"):
        F.conv2d(zyx.tensor(_arr(1, 3, 2, 2)), w)
    with pytest.raises(zyx.ShapeError, match="same"):
        F.conv2d(zyx.tensor(_arr(1, 3, 5, 5)), w, stride=2, padding="same")
    with pytest.raises(zyx.DTypeError):
        F.conv2d(zyx.tensor(np.ones((1, 3, 5, 5), np.int32)), zyx.tensor(np.ones((2, 3, 3, 3), np.int32)))
    # a bias that is not (out_channels,) would broadcast silently: PyTorch rejects it, so does zyx
    x3 = zyx.tensor(_arr(1, 3, 5, 5))
    for bad in ((1,), (2, 1)):
        with pytest.raises(zyx.ShapeError, match=r"bias of shape \(2,\)"):
            F.conv2d(x3, w, zyx.tensor(_arr(*bad)))
    with pytest.raises(zyx.ShapeError, match=r"bias of shape \(4,\)"):
        F.conv_transpose2d(x3, zyx.tensor(_arr(3, 4, 3, 3)), zyx.tensor(_arr(1)))


POOL = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(1, 2), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=(3, 2), dilation=2, padding=1),
]


@pytest.mark.parametrize("args, dtype", [(a, np.float32) for a in POOL] + [(POOL[1], np.float64)])
def test_max_pool2d(args, dtype):
    x = _arr(2, 3, 10, 11, dtype=dtype)
    (zx, tx) = _pair(x)
    zo, zi = F.max_pool2d(zx, return_indices=True, **args)
    to, ti = TF.max_pool2d(tx, return_indices=True, **args)
    _close(zo, to, dtype)
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())
    assert zi.dtype == zyx.int64
    _check_grads(zo, to, (zx,), (tx,), dtype)
    _close(F.max_pool2d(zyx.tensor(x[0]), **args), TF.max_pool2d(torch.tensor(x[0]), **args), dtype)


@pytest.mark.parametrize("args, count_include_pad, dtype",
                         [(a, c, np.float32) for a in POOL if "dilation" not in a for c in (True, False)]
                         + [(POOL[1], False, np.float64)])
def test_avg_pool2d(args, count_include_pad, dtype):
    x = _arr(2, 3, 10, 11, dtype=dtype)
    zx, tx = _pair(x)
    zo = F.avg_pool2d(zx, count_include_pad=count_include_pad, **args)
    to = TF.avg_pool2d(tx, count_include_pad=count_include_pad, **args)
    _close(zo, to, dtype)
    _check_grads(zo, to, (zx,), (tx,), dtype)


def test_pool_noncontiguous_divisor_1d_3d_int():
    x = _arr(2, 11, 9, 3)
    zx, tx = zyx.tensor(x).permute(0, 3, 2, 1), torch.tensor(x).permute(0, 3, 2, 1)
    _close(F.max_pool2d(zx, 3, 2), TF.max_pool2d(tx, 3, 2))
    _close(F.avg_pool2d(zx, 3, 2, 1, divisor_override=5), TF.avg_pool2d(tx, 3, 2, 1, divisor_override=5))
    y = _arr(2, 3, 13)
    _close(F.max_pool1d(zyx.tensor(y), 3, 2, 1, 2), TF.max_pool1d(torch.tensor(y), 3, 2, 1, 2))
    _close(F.avg_pool1d(zyx.tensor(y), 4, 3, 2, True, False), TF.avg_pool1d(torch.tensor(y), 4, 3, 2, True, False))
    v = _arr(1, 2, 5, 6, 7)
    _close(F.max_pool3d(zyx.tensor(v), 2, padding=1), TF.max_pool3d(torch.tensor(v), 2, padding=1))
    _close(F.avg_pool3d(zyx.tensor(v), (2, 3, 2)), TF.avg_pool3d(torch.tensor(v), (2, 3, 2)))
    i = RNG.integers(-100, 100, size=(2, 3, 8, 8)).astype(np.int32)
    np.testing.assert_array_equal(F.max_pool2d(zyx.tensor(i), 3, 2, 1).numpy(),
                                  TF.max_pool2d(torch.tensor(i).double(), 3, 2, 1).numpy().astype(np.int32))
    with pytest.raises(zyx.ShapeError, match="half"):
        F.max_pool2d(zyx.tensor(x), 2, padding=2)


@pytest.mark.parametrize("fn, shape, args", [
    ("avg_pool1d", (2, 3, 11), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", (2, 3, 7, 8), dict(kernel_size=(3, 2), stride=2, padding=1, ceil_mode=True)),
    ("avg_pool2d", (3, 7, 8), dict(kernel_size=2, divisor_override=3)),
    ("avg_pool3d", (1, 2, 5, 6, 4), dict(kernel_size=2, stride=(2, 1, 2), padding=1, count_include_pad=False)),
])
def test_avg_pool_int64(fn, shape, args):
    # PyTorch pools int64 too: the int64 window sum divided by the divisor, truncated toward zero
    i = RNG.integers(-50, 50, size=shape)
    zo, to = getattr(F, fn)(zyx.tensor(i), **args), getattr(TF, fn)(torch.tensor(i), **args)
    assert zo.dtype is zyx.int64
    np.testing.assert_array_equal(zo.numpy(), to.numpy())
    with pytest.raises(zyx.DTypeError, match="int64"):
        getattr(F, fn)(zyx.tensor(i.astype(np.int32)), **args)


# uneven overlapping windows on both axes, a None (kept) axis, the global pool; 4 rows: an uneven max
# reduces each bin on its own, and the kept axis is one bin a row
@pytest.mark.parametrize("size", [(3, 4), (None, 3), 1])
def test_adaptive_pool2d(size):
    x = _arr(2, 3, 4, 11)
    zx, tx = _pair(x)
    zo, to = F.adaptive_avg_pool2d(zx, size), TF.adaptive_avg_pool2d(tx, size)
    _close(zo, to)
    _check_grads(zo, to, (zx,), (tx,), np.float32)
    zx, tx = _pair(x)
    zo, to = F.adaptive_max_pool2d(zx, size), TF.adaptive_max_pool2d(tx, size)
    _close(zo, to)
    _check_grads(zo, to, (zx,), (tx,), np.float32)
    y = _arr(2, 3, 12)
    _close(F.adaptive_avg_pool1d(zyx.tensor(y), 5), TF.adaptive_avg_pool1d(torch.tensor(y), 5))
    _close(F.adaptive_max_pool1d(zyx.tensor(y), 4), TF.adaptive_max_pool1d(torch.tensor(y), 4))
    _, zi = F.adaptive_max_pool2d(zyx.tensor(x), (2, 1), return_indices=True)
    _, ti = TF.adaptive_max_pool2d(torch.tensor(x), (2, 1), return_indices=True)
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())


@pytest.mark.parametrize("shape, size", [((2, 3, 9, 7), (4, 3)), ((3, 5, 4), 7)])
def test_adaptive_max_pool_uneven_indices_ties(shape, size):
    # uneven bins: return_indices works, and with ties (integer-valued data) and a NaN the indices and
    # the gradient go to each bin's first maximum, as PyTorch's (not split among the tied maxima)
    a = RNG.integers(0, 3, size=shape).astype(np.float64)
    a[(0,) * (len(shape) - 2) + (2, 3)] = np.nan
    zo, zi = F.adaptive_max_pool2d(zyx.tensor(a), size, return_indices=True)
    to, ti = TF.adaptive_max_pool2d(torch.tensor(a), size, return_indices=True)
    _close(zo, to, np.float64)
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())
    zx, tx = _pair(np.nan_to_num(a))
    zo, to = F.adaptive_max_pool2d(zx, size), TF.adaptive_max_pool2d(tx, size)
    _check_grads(zo, to, (zx,), (tx,), np.float64)
    y = RNG.integers(0, 3, size=(2, 3, 9)).astype(np.float32)
    zo, zi = F.adaptive_max_pool1d(zyx.tensor(y), 4, return_indices=True)
    to, ti = TF.adaptive_max_pool1d(torch.tensor(y), 4, return_indices=True)
    _close(zo, to)
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=3, stride=2, padding=1),
                                dict(kernel_size=2, stride=1, dilation=2)])
def test_max_pool_windows_with_several_nans(kw):
    # PyTorch walks a window in increasing index and keeps a value that is larger or NaN: the index is the
    # window's last NaN (its first maximum when it holds none), and the gradient goes there too
    a = RNG.integers(0, 3, size=(2, 3, 6, 6)).astype(np.float32)
    a[0, 0, :2, :2] = np.nan  # a whole 2x2 window of NaNs
    a[1, 2, 2, 3] = a[1, 2, 3, 2] = a[1, 2, 3, 3] = np.nan
    a[0, 1, ::2, 1::2] = -np.inf
    zx, tx = _pair(a)
    (zo, zi), (to, ti) = F.max_pool2d(zx, return_indices=True, **kw), TF.max_pool2d(tx, return_indices=True, **kw)
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())
    np.testing.assert_array_equal(zo.numpy(), to.detach().numpy())
    _check_grads(zo, to, (zx,), (tx,), np.float32)
    zx, tx = _pair(a)  # without return_indices (the tiled windows' own gradient path)
    _check_grads(F.max_pool2d(zx, **kw), TF.max_pool2d(tx, **kw), (zx,), (tx,), np.float32)
    r = a.reshape(2, 3, 36)
    (zo, zi), (to, ti) = F.max_pool1d(zyx.tensor(r), 4, return_indices=True), TF.max_pool1d(torch.tensor(r), 4,
                                                                                            return_indices=True)
    np.testing.assert_array_equal(zi.numpy(), ti.numpy())
    for size in (1, (4, 5)):  # one bin; uneven bins
        (zo, zi) = F.adaptive_max_pool2d(zyx.tensor(a), size, return_indices=True)
        (to, ti) = TF.adaptive_max_pool2d(torch.tensor(a), size, return_indices=True)
        np.testing.assert_array_equal(zi.numpy(), ti.numpy())


def test_adaptive_pool_empty_output_and_errors():
    x = _arr(2, 3, 6, 5)
    assert F.adaptive_avg_pool2d(zyx.tensor(x), 0).shape == (2, 3, 0, 0)
    out, idx = F.adaptive_max_pool2d(zyx.tensor(x), (0, 2), return_indices=True)
    assert out.shape == idx.shape == (2, 3, 0, 2) and idx.dtype is zyx.int64
    with pytest.raises(zyx.ShapeError, match="3-D .* or 4-D"):
        F.adaptive_avg_pool2d(zyx.tensor(_arr(6, 5)), 2)  # was pooled silently over the only two dims
    with pytest.raises(zyx.ShapeError, match="non-negative"):
        F.adaptive_max_pool2d(zyx.tensor(x), -1)
    with pytest.raises(zyx.ShapeError, match="non-empty"):
        F.adaptive_max_pool2d(zyx.tensor(_arr(2, 3, 0, 5)), 2)


@pytest.mark.parametrize("shape, dtype", [((4, 3), np.float32), ((4, 3, 5), np.float32),
                                          ((2, 3, 5, 4), np.float32), ((2, 3, 5, 4), np.float64)])
def test_batch_norm(shape, dtype):
    x, w, b = _arr(*shape, dtype=dtype), _arr(3, dtype=dtype), _arr(3, dtype=dtype)
    rm, rv = _arr(3, dtype=dtype), np.abs(_arr(3, dtype=dtype)) + 0.5
    (zx, tx), (zw, tw), (zb, tb) = _pair(x), _pair(w), _pair(b)
    zrm, zrv, trm, trv = zyx.tensor(rm), zyx.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    zo = F.batch_norm(zx, zrm, zrv, zw, zb, training=True, momentum=0.3)
    to = TF.batch_norm(tx, trm, trv, tw, tb, training=True, momentum=0.3)
    _close(zo, to, dtype)
    _close(zrm, trm, dtype)
    _close(zrv, trv, dtype)
    _check_grads(zo, to, (zx, zw, zb), (tx, tw, tb), dtype, 5)
    _close(F.batch_norm(zyx.tensor(x), zrm, zrv, zyx.tensor(w), None),
           TF.batch_norm(torch.tensor(x), trm, trv, torch.tensor(w), None), dtype)
    with pytest.raises(zyx.ShapeError, match="more than 1 value"):
        F.batch_norm(zyx.tensor(x[:1, :, :1, :1] if x.ndim == 4 else x[:1, :, :1] if x.ndim == 3 else x[:1]),
                     None, None, training=True)


def test_norm_statistics_of_the_wrong_size():
    # one value per channel, else a ShapeError naming the argument, and the running statistics unmoved
    x = zyx.tensor(_arr(2, 4, 5))
    rm, rv = zyx.tensor(np.zeros(3, np.float32)), zyx.tensor(np.ones(4, np.float32))
    with pytest.raises(zyx.ShapeError, match=r"batch_norm: expected running_mean of 4 elements .* got shape \(3,\)"):
        F.batch_norm(x, rm, rv, training=True)
    np.testing.assert_array_equal(rv.numpy(), 1)
    with pytest.raises(zyx.ShapeError, match="batch_norm: expected weight of 4"):
        F.batch_norm(x, rv, rv, weight=zyx.ones(2, 2, 2))
    with pytest.raises(zyx.ShapeError, match="instance_norm: expected bias of 4"):
        F.instance_norm(x, bias=zyx.ones(5))
    with pytest.raises(zyx.ShapeError, match="group_norm: expected weight of 4"):
        F.group_norm(x, 2, zyx.ones(2))


def test_group_instance_rms_lrn():
    x, w, b = _arr(2, 6, 5, 4), _arr(6), _arr(6)
    (zx, tx), (zw, tw), (zb, tb) = _pair(x), _pair(w), _pair(b)
    zo, to = F.group_norm(zx, 3, zw, zb), TF.group_norm(tx, 3, tw, tb)
    _close(zo, to)
    _check_grads(zo, to, (zx, zw, zb), (tx, tw, tb), np.float32, 5)
    rm, rv = _arr(6), np.abs(_arr(6)) + 0.5
    zrm, zrv, trm, trv = zyx.tensor(rm), zyx.tensor(rv), torch.tensor(rm), torch.tensor(rv)
    _close(F.instance_norm(zyx.tensor(x), zrm, zrv, zyx.tensor(w), zyx.tensor(b)),
           TF.instance_norm(torch.tensor(x), trm, trv, torch.tensor(w), torch.tensor(b)))
    _close(zrm, trm)
    _close(zrv, trv)
    _close(F.instance_norm(zyx.tensor(x)), TF.instance_norm(torch.tensor(x)))
    _close(F.rms_norm(zyx.tensor(x), (5, 4), zyx.tensor(_arr(5, 4) * 0 + 2)),
           TF.rms_norm(torch.tensor(x), (5, 4), torch.tensor(_arr(5, 4) * 0 + 2)))
    zx, tx = _pair(x)
    zo, to = F.local_response_norm(zx, 3, 1e-2, 0.75, 2.0), TF.local_response_norm(tx, 3, 1e-2, 0.75, 2.0)
    _close(zo, to)
    _check_grads(zo, to, (zx,), (tx,), np.float32, 5)
    _close(F.local_response_norm(zyx.tensor(x), 4), TF.local_response_norm(torch.tensor(x), 4))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_rms_norm_16_bit_default_eps(dtype):
    # 16-bit inputs compute in float32 with float32's epsilon (PyTorch's opmath default), rounded once:
    # bfloat16's own epsilon (0.0078) moved rows of small values by several ulps
    import ml_dtypes

    t = (torch.randn(64, 4, generator=torch.Generator().manual_seed(6)) * 3).to(getattr(torch, dtype))
    a = t.float().numpy().astype(np.float16 if dtype == "float16" else ml_dtypes.bfloat16)
    want = TF.rms_norm(t, (4,)).float().numpy()
    np.testing.assert_array_equal(F.rms_norm(zyx.tensor(a), (4,)).numpy().astype(np.float32), want)
    module = zyx.nn.RMSNorm(4, elementwise_affine=False)
    np.testing.assert_array_equal(module(zyx.tensor(a)).numpy().astype(np.float32), want)
    with pytest.raises(zyx.ShapeError, match="RMSNorm: normalized_shape"):
        module(zyx.tensor(a[:, :3]))


def test_unfold_view_and_gradient():
    a = _arr(3, 10, 4)
    for d, size, step in [(1, 3, 1), (1, 3, 2), (1, 4, 3), (0, 1, 1), (2, 4, 4), (1, 10, 1), (1, 0, 2)]:
        (z, t) = _pair(a)
        zo, to = z.unfold(d, size, step), t.unfold(d, size, step)
        assert zo.shape == tuple(to.shape)
        _close(zo, to)
        if size:
            _check_grads(zo, to, (z,), (t,), np.float32)
    assert zyx.tensor(5.0).unfold(0, 1, 1).shape == (1,)
    with pytest.raises(zyx.ShapeError):
        zyx.tensor(a).unfold(1, 11, 1)


@pytest.mark.parametrize("args", [dict(kernel_size=3), dict(kernel_size=(2, 3), dilation=(2, 1), padding=1, stride=2)])
def test_unfold_fold_im2col(args):
    x = _arr(2, 3, 7, 8)
    zx, tx = _pair(x)
    zo, to = F.unfold(zx, **args), TF.unfold(tx, **args)
    _close(zo, to)
    _check_grads(zo, to, (zx,), (tx,), np.float32)
    cols = _arr(*to.shape)
    zc, tc = _pair(cols)
    zo, to = F.fold(zc, (7, 8), **args), TF.fold(tc, (7, 8), **args)
    _close(zo, to)
    _check_grads(zo, to, (zc,), (tc,), np.float32)
    _close(F.fold(zyx.tensor(cols[0]), (7, 8), **args), TF.fold(torch.tensor(cols[0]), (7, 8), **args))


def test_norm_fold_edge_cases():
    # group_norm of an empty batch is empty (reshape(0, G, -1) used to fail); a missing running statistic
    # and a 4-D fold input raise ShapeError (were AttributeError and a bare unpacking ValueError)
    e = np.zeros((0, 6, 3), np.float32)
    assert F.group_norm(zyx.tensor(e), 3).shape == TF.group_norm(torch.tensor(e), 3).shape == (0, 6, 3)
    c0 = np.zeros((4, 0, 3), np.float32)  # no channels: empty, not "expected more than 1 value per channel"
    assert F.batch_norm(zyx.tensor(c0), None, None, training=True).shape == (4, 0, 3)
    with pytest.raises(zyx.ShapeError, match="use_input_stats"):
        F.instance_norm(zyx.tensor(_arr(2, 3, 4)), use_input_stats=False)
    with pytest.raises(zyx.ShapeError, match="2-D .* or 3-D"):
        F.fold(zyx.tensor(_arr(2, 12, 9, 1)), (4, 4), 2)
    # a string where ints are expected, and an empty channel window: ShapeError (were a bare ValueError from
    # int('s') and a ZeroDivisionError)
    x = zyx.tensor(_arr(2, 3, 5, 5))
    with pytest.raises(zyx.ShapeError, match="padding must be an int or 2 ints"):
        F.conv_transpose2d(x, zyx.tensor(_arr(3, 2, 3, 3)), padding="same")
    with pytest.raises(zyx.ShapeError, match="size must be a positive"):
        F.local_response_norm(x, 0)
