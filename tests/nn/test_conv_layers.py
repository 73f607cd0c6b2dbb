"""Convolution, pooling, BatchNorm and GroupNorm layers against PyTorch: a torch layer's state_dict (as
NumPy arrays) loads as is; outputs, input gradients and parameter gradients agree in train and eval mode;
BatchNorm's running statistics agree after several training steps; default init and reprs match."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
from zyx import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(1515)


def _np(t):
    return t.detach().numpy()


def _close(z, t, atol=1e-4, rtol=1e-4, what=""):
    np.testing.assert_allclose(z.numpy().astype(np.float64), _np(t).astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=what)


def _randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


def _load(zm, tm):
    assert [(k, tuple(v.shape)) for k, v in zm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    zm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})


def check(zm, tm, x, modes=("train", "eval"), atol=1e-4, load=True, **kwargs):
    """Outputs, the input's gradient and every parameter's gradient of ``sum(out * r)`` in each mode
    (after loading ``tm``'s state_dict into ``zm`` unless ``load`` is false)."""
    if load:
        _load(zm, tm)
    for mode in modes:
        zm.train(mode == "train")
        tm.train(mode == "train")
        zm.zero_grad()
        tm.zero_grad()
        zx, tx = zyx.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
        zo, to = zm(zx, **kwargs), tm(tx, **kwargs)
        _close(zo, to, atol, what=f"{mode} output")
        r = RNG.normal(size=tuple(to.shape)).astype(np.float32)
        (zo * zyx.tensor(r)).sum().backward()
        (to * torch.tensor(r)).sum().backward()
        _close(zx.grad, tx.grad, atol, what=f"{mode} grad of the input")
        zp = dict(zm.named_parameters())
        for name, p in tm.named_parameters():
            _close(zp[name].grad, p.grad, atol, what=f"{mode} grad of {name}")


# The layers pass their arguments to zyx.nn.functional, whose tests cover the convolution cases (3x3 and
# larger kernels among them); here every argument kind reaches the layer once (string padding, tuples, no
# bias, groups), with 2x2 kernels: the composed convolution's backward builds a kernel per offset.
CONV2D = [
    dict(padding="same", dilation=2),
    dict(padding="valid", bias=False),
    dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2)),
    dict(groups=2, padding=1),
]


@pytest.mark.parametrize("kw", CONV2D, ids=[str(k) for k in CONV2D])
def test_conv2d(kw):
    check(nn.Conv2d(4, 6, 2, **kw), torch.nn.Conv2d(4, 6, 2, **kw), _randn(2, 4, 7, 8))


def test_conv2d_unbatched_and_rectangular_kernel():
    check(nn.Conv2d(3, 2, (2, 3), stride=(1, 2)), torch.nn.Conv2d(3, 2, (2, 3), stride=(1, 2)), _randn(3, 6, 7),
          modes=("train",))


CONV1D = [dict(stride=2, padding=2, dilation=2), dict(padding="same", groups=3, bias=False)]


@pytest.mark.parametrize("kw", CONV1D, ids=[str(k) for k in CONV1D])
def test_conv1d(kw):
    check(nn.Conv1d(3, 6, 3, **kw), torch.nn.Conv1d(3, 6, 3, **kw), _randn(2, 3, 11))


def test_conv3d():
    check(nn.Conv3d(2, 3, 2, padding=1), torch.nn.Conv3d(2, 3, 2, padding=1), _randn(2, 2, 3, 4, 3),
          modes=("train",))


CONVT = [dict(stride=2, padding=1, output_padding=1), dict(stride=(2, 3), dilation=2, padding=(0, 1), groups=2,
                                                              bias=False)]


@pytest.mark.parametrize("kw", CONVT, ids=[str(k) for k in CONVT])
def test_conv_transpose2d(kw):  # 2x2 kernels, as test_conv2d's
    check(nn.ConvTranspose2d(4, 6, 2, **kw), torch.nn.ConvTranspose2d(4, 6, 2, **kw), _randn(2, 4, 5, 4))


def test_conv_transpose2d_output_size_and_1d():
    kw = dict(stride=2, padding=1)  # a 2x2 kernel: sizes (6, 8) without output_padding, (7, 9) the largest
    check(nn.ConvTranspose2d(2, 3, 2, **kw), torch.nn.ConvTranspose2d(2, 3, 2, **kw), _randn(1, 2, 4, 5),
          modes=("train",), output_size=[7, 9])
    with pytest.raises(zyx.ShapeError):
        nn.ConvTranspose2d(2, 3, 2, **kw)(zyx.randn(1, 2, 4, 5), output_size=(20, 20))
    check(nn.ConvTranspose1d(2, 4, 3, stride=2), torch.nn.ConvTranspose1d(2, 4, 3, stride=2), _randn(2, 2, 6),
          modes=("train",))


POOLS = [  # each layer once (the pooling cases are zyx.nn.functional's tests)
    ("MaxPool2d", (3,), dict(stride=2, padding=1, ceil_mode=True)),
    ("MaxPool2d", (2,), dict(dilation=2)),
    ("AvgPool2d", (3,), dict(stride=2, padding=1, count_include_pad=False, ceil_mode=True)),
    ("AvgPool2d", (2,), dict(divisor_override=3)),
    ("AdaptiveAvgPool2d", ((None, 3),), {}),
    ("AdaptiveMaxPool2d", (2,), {}),
    ("MaxPool1d", (3,), dict(stride=2)),
    ("AvgPool1d", (2,), {}),
    ("AdaptiveAvgPool1d", (3,), {}),
]


@pytest.mark.parametrize("name,args,kw", POOLS, ids=[f"{n}{a}{k}" for n, a, k in POOLS])
def test_pooling(name, args, kw):
    shape = (2, 3, 9) if name.endswith("1d") else (2, 3, 7, 6)
    zm, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(zm) == repr(tm)
    check(zm, tm, _randn(*shape), modes=("train",))


def test_max_pool2d_return_indices():
    x = _randn(2, 3, 6, 6)
    zv, zi = nn.MaxPool2d(2, return_indices=True)(zyx.tensor(x))
    tv, ti = torch.nn.MaxPool2d(2, return_indices=True)(torch.tensor(x))
    _close(zv, tv)
    assert np.array_equal(zi.numpy(), ti.numpy())


def _randomize_affine(tm):
    """Non-trivial affine parameters (they start at one and zero)."""
    with torch.no_grad():
        for p in tm.parameters():
            p.copy_(torch.tensor(_randn(*p.shape)))


BN_SHAPES = [("BatchNorm2d", (4, 3, 5, 4)), ("BatchNorm1d", (6, 3)), ("BatchNorm1d", (4, 3, 5))]
BN_KW = [dict(momentum=None), dict(affine=False), dict(track_running_stats=False),
         dict(momentum=0.3, eps=1e-3, bias=False)]
# the defaults on every input rank; each other option once, the ranks taking turns
BATCHNORM = [(*s, dict()) for s in BN_SHAPES] + [(*BN_SHAPES[i % 3], kw) for i, kw in enumerate(BN_KW)]


@pytest.mark.parametrize("name,shape,kw", BATCHNORM, ids=[f"{n}{s}{k}" for n, s, k in BATCHNORM])
def test_batch_norm(name, shape, kw):
    zm, tm = getattr(nn, name)(3, **kw), getattr(torch.nn, name)(3, **kw)
    assert repr(zm) == repr(tm)
    _randomize_affine(tm)
    _load(zm, tm)
    for _ in range(4):  # train steps update the running statistics (lazily), each module its own
        check(zm, tm, (_randn(*shape) * 2 + 0.5).astype(np.float32), modes=("train",), load=False)
    for k, v in tm.state_dict().items():
        z = zm.state_dict()[k].numpy()
        np.testing.assert_allclose(z, _np(v), rtol=1e-5, atol=1e-6, err_msg=k)
        assert z.dtype == _np(v).dtype, k
    check(zm, tm, _randn(*shape), modes=("eval",), load=False)  # with the trained statistics


def test_batch_norm_wrong_rank():
    with pytest.raises(zyx.ShapeError, match="expected 4D input"):
        nn.BatchNorm2d(3)(zyx.randn(2, 3, 4))
    with pytest.raises(ValueError, match="2D or 3D"):
        nn.BatchNorm1d(3)(zyx.randn(2, 3, 4, 4))


@pytest.mark.parametrize("shape, kw", [((2, 6, 4, 3), dict()), ((3, 6, 5), dict()), ((4, 6), dict()),
                                       ((2, 6, 4, 3), dict(affine=False, eps=1e-3)), ((3, 6, 5), dict(bias=False))])
def test_group_norm(shape, kw):
    zm, tm = nn.GroupNorm(3, 6, **kw), torch.nn.GroupNorm(3, 6, **kw)
    assert repr(zm) == repr(tm)
    _randomize_affine(tm)
    check(zm, tm, _randn(*shape), modes=("train",))
    with pytest.raises(ValueError):
        nn.GroupNorm(4, 6)


REPRS = [("Conv2d", (3, 8, 3), {}), ("Conv2d", (4, 8, (3, 5)), dict(stride=2, padding=1, dilation=2, groups=2,
                                                                     bias=False)),
         ("Conv2d", (3, 8, 3), dict(padding="same")), ("Conv1d", (3, 8, 5), dict(padding=2)),
         ("ConvTranspose2d", (4, 8, 3), dict(stride=2, output_padding=1)), ("Conv3d", (1, 2, 3), {}),
         ("ConvTranspose1d", (2, 2, 3), {})]


@pytest.mark.parametrize("name,args,kw", REPRS, ids=[f"{n}{a}{k}" for n, a, k in REPRS])
def test_conv_repr_shapes_and_default_init(name, args, kw):
    zm, tm = getattr(nn, name)(*args, **kw), getattr(torch.nn, name)(*args, **kw)
    assert repr(zm) == repr(tm)
    assert [(k, tuple(v.shape)) for k, v in zm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]
    w = zm.weight.numpy()
    bound = 1 / math.sqrt(w.shape[1] * math.prod(w.shape[2:]))  # kaiming_uniform_(a=sqrt(5)) and the bias
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.5 * bound
    if zm.bias is not None:
        assert np.abs(zm.bias.numpy()).max() <= bound


PADDING_MODES = [("reflect", 2, dict(padding=(1, 2), stride=2)), ("replicate", 1, dict(padding=2, dilation=2)),
                 ("circular", 2, dict(padding="same", dilation=(1, 2))), ("reflect", 3, dict(padding=1))]


@pytest.mark.parametrize("mode, nd, kw", PADDING_MODES, ids=[f"{m}-{n}d" for m, n, _ in PADDING_MODES])
def test_conv_padding_modes(mode, nd, kw):
    # PyTorch pads the input with the mode first, then convolves unpadded (was: ValueError, zeros only)
    zm = getattr(nn, f"Conv{nd}d")(3, 4, 3, padding_mode=mode, **kw)
    tm = getattr(torch.nn, f"Conv{nd}d")(3, 4, 3, padding_mode=mode, **kw)
    assert repr(zm) == repr(tm)
    check(zm, tm, _randn(2, 3, *(6, 7, 5)[:nd]), modes=("train",))


def test_conv_constructor_errors():
    with pytest.raises(ValueError, match="groups"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(ValueError, match="padding_mode"):
        nn.Conv2d(3, 4, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="padding_mode='zeros'"):
        nn.ConvTranspose2d(3, 4, 3, padding_mode="reflect")
    with pytest.raises(ValueError, match="strided"):
        nn.Conv2d(3, 4, 3, stride=2, padding="same")


def test_small_cnn_from_torch_state_dict():
    """A CNN with every layer kind: torch's state_dict loads as is; train and eval agree."""
    def build(m):
        return m.Sequential(m.Conv2d(1, 4, 3, padding=1), m.BatchNorm2d(4), m.ReLU(), m.MaxPool2d(2),
                            m.Conv2d(4, 6, 3, padding=1), m.GroupNorm(2, 6), m.ReLU(), m.AdaptiveAvgPool2d(2),
                            m.Flatten(), m.Linear(24, 5))
    check(build(nn), build(torch.nn), _randn(3, 1, 8, 8))


def test_batch_norm_many_steps_without_reading_the_statistics():
    """Nothing reads the running statistics while training; each step's update still runs (no pending chain
    growing a step at a time until realizing it overflows the stack), and they equal PyTorch's after."""
    zm, tm = nn.BatchNorm1d(2, momentum=None), torch.nn.BatchNorm1d(2, momentum=None)
    x = _randn(1500, 4, 2)
    with zyx.no_grad(), torch.no_grad():
        for xi in x:
            zm(zyx.tensor(xi))
            tm(torch.tensor(xi))
    for k, v in tm.state_dict().items():
        np.testing.assert_allclose(zm.state_dict()[k].numpy(), _np(v), rtol=1e-4, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("momentum", [0.1, None])
def test_batch_norm_statistics_untouched_by_a_failed_gather(momentum):
    """An out-of-range index upstream raises IndexError by the BatchNorm step at the latest (PyTorch raises at
    the gather), and the running statistics and the batch count keep their values."""
    zm = nn.BatchNorm1d(3, momentum=momentum)
    zm(zyx.tensor(_randn(4, 3)))
    before = {k: v.numpy().copy() for k, v in zm.state_dict().items()}
    table = zyx.tensor(_randn(5, 3))
    with pytest.raises(IndexError, match="out of range"):
        zm(table[zyx.tensor([0, 7, 2, 1])] * 2.0)
    for k, v in zm.state_dict().items():
        np.testing.assert_array_equal(v.numpy(), before[k], err_msg=k)
    with pytest.raises(IndexError, match="out of range"):  # the functional form guards its update too
        nn.functional.batch_norm(table[zyx.tensor([9, 1])], zm.running_mean, zm.running_var, training=True)
    np.testing.assert_array_equal(zm.running_mean.numpy(), before["running_mean"])
    np.testing.assert_array_equal(zm.running_var.numpy(), before["running_var"])
