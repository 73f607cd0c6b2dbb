"""Every layer against PyTorch: a torch layer's state_dict (as NumPy arrays) loads into the zyx
layer as is; outputs on random inputs, and the gradients of a scalar loss w.r.t. the inputs and
every parameter, agree within float32 tolerance (train and eval mode where they differ)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import nn

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(15)


def _np(t):
    return t.detach().numpy()


def _close(z, t, atol=1e-5, rtol=1e-5, what=""):
    np.testing.assert_allclose(z.numpy().astype(np.float64), _np(t).astype(np.float64), rtol=rtol, atol=atol,
                               err_msg=what)


def _same_parameters(zm, tm):
    """Same names and shapes, in the same order, as PyTorch's state_dict."""
    assert [(k, tuple(v.shape)) for k, v in zm.state_dict().items()] == \
        [(k, tuple(v.shape)) for k, v in tm.state_dict().items()]


def check(zm, tm, inputs, atol=1e-5, modes=("train", "eval"), output=lambda out: out, rtol=1e-5, **kwargs):
    """Load ``tm``'s weights into ``zm`` and compare outputs, input gradients and parameter
    gradients of ``sum(out * r)`` (a fixed random ``r``) in each mode."""
    _same_parameters(zm, tm)
    zm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
    for mode in modes:
        zm.train(mode == "train")
        tm.train(mode == "train")
        zm.zero_grad()
        tm.zero_grad()
        zx = [zyx.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a for a in inputs]
        tx = [torch.tensor(a, requires_grad=a.dtype.kind == "f") if isinstance(a, np.ndarray) else a for a in inputs]
        zo, to = output(zm(*zx, **_zyx_kwargs(kwargs))), output(tm(*tx, **_torch_kwargs(kwargs)))
        _close(zo, to, atol, rtol, what=f"{mode} output")
        r = RNG.normal(size=tuple(to.shape)).astype(np.float32)
        (zo * zyx.tensor(r)).sum().backward()
        (to * torch.tensor(r)).sum().backward()
        for i, (za, ta) in enumerate(zip(zx, tx)):
            if isinstance(ta, torch.Tensor) and ta.grad is not None:
                _close(za.grad, ta.grad, atol, rtol, what=f"{mode} grad of input {i}")
            elif isinstance(ta, torch.Tensor) and ta.requires_grad:  # the output does not depend on it
                assert za.grad is None or np.all(za.grad.numpy() == 0), i
        zp = dict(zm.named_parameters())
        for name, p in tm.named_parameters():
            if p.grad is None:
                assert zp[name].grad is None or np.all(zp[name].grad.numpy() == 0), name
            else:
                _close(zp[name].grad, p.grad, atol, rtol, what=f"{mode} grad of {name}")


def _zyx_kwargs(kwargs):
    return {k: zyx.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _torch_kwargs(kwargs):
    return {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kwargs.items()}


def _randn(*shape):
    return RNG.normal(size=shape).astype(np.float32)


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    check(nn.Linear(6, 4, bias=bias), torch.nn.Linear(6, 4, bias=bias), [_randn(2, 3, 6)], modes=("train",))


def test_bilinear():
    check(nn.Bilinear(3, 5, 4), torch.nn.Bilinear(3, 5, 4), [_randn(2, 6, 3), _randn(2, 6, 5)], modes=("train",))


@pytest.mark.parametrize("shape,affine,bias", [((8,), True, True), ((3, 8), True, False), ((8,), False, True)])
def test_layer_norm(shape, affine, bias):
    check(nn.LayerNorm(shape, elementwise_affine=affine, bias=bias),
          torch.nn.LayerNorm(shape, elementwise_affine=affine, bias=bias), [_randn(4, 3, 8) * 3 + 1],
          atol=2e-5, modes=("train",))


@pytest.mark.parametrize("eps", [None, 1e-3])
def test_rms_norm(eps):
    tm = torch.nn.RMSNorm(8, eps=eps)
    with torch.no_grad():
        tm.weight.normal_()
    check(nn.RMSNorm(8, eps=eps), tm, [_randn(5, 8) * 2], modes=("train",))


def test_embedding_padding_idx():
    idx = np.array([[1, 0, 3], [9, 0, 1]], np.int64)
    zm, tm = nn.Embedding(10, 4, padding_idx=0), torch.nn.Embedding(10, 4, padding_idx=0)
    check(zm, tm, [idx], modes=("train",))
    np.testing.assert_array_equal(zm.weight.grad.numpy()[0], 0)
    np.testing.assert_array_equal(nn.Embedding(5, 3, padding_idx=-1).weight.numpy()[4], 0)
    frozen = nn.Embedding.from_pretrained(zyx.ones(3, 2))
    assert not frozen.weight.requires_grad and frozen(zyx.tensor([2])).shape == (1, 2)


@pytest.mark.parametrize("name,args", [("ReLU", ()), ("GELU", ()), ("GELU", ("tanh",)), ("SiLU", ()), ("Tanh", ()),
                                       ("Sigmoid", ()), ("Softmax", (1,)), ("Softmax", (-1,)), ("LogSoftmax", (1,)),
                                       ("Softmin", (0,)), ("LeakyReLU", ()), ("LeakyReLU", (0.2,)), ("Identity", ()),
                                       ("Flatten", ()), ("Flatten", (0, 1)), ("Unflatten", (1, (2, 2)))])
def test_parameter_free(name, args):
    check(getattr(nn, name)(*args), getattr(torch.nn, name)(*args), [_randn(3, 4, 5) * 2], modes=("train",))


@pytest.mark.parametrize("name", ["Softmax", "LogSoftmax", "Softmin"])
def test_softmax_modules_implicit_dim(name):
    """``dim=None``: PyTorch's deprecated choice (0 for 0-, 1- and 3-D inputs, else 1) and its warning,
    pointing at the line that called the module."""
    for shape in ((2, 3, 4), (3, 4)):
        x = _randn(*shape)
        with pytest.warns(UserWarning, match="Implicit dimension choice for") as rec:
            got = getattr(nn, name)()(zyx.tensor(x))
        with pytest.warns(UserWarning, match="Implicit dimension choice for"):
            want = getattr(torch.nn, name)()(torch.tensor(x))
        assert rec[0].filename == __file__
        _close(got, want)
    assert getattr(nn, name)().dim is None and getattr(nn, name)(2).dim == 2


def test_dropout_modes():
    check(nn.Dropout(0.0), torch.nn.Dropout(0.0), [_randn(4, 5)])
    check(nn.Dropout(0.5), torch.nn.Dropout(0.5), [_randn(4, 5)], modes=("eval",))
    zm = nn.Dropout(0.25)
    y = zm(zyx.ones(4000)).numpy()
    assert abs((y == 0).mean() - 0.25) < 0.03
    np.testing.assert_allclose(y[y != 0], 1 / 0.75, rtol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_losses(reduction):
    a, b = _randn(4, 5), _randn(4, 5)
    for name in ("MSELoss", "L1Loss"):
        check(getattr(nn, name)(reduction=reduction), getattr(torch.nn, name)(reduction=reduction), [a, b],
              modes=("train",))
    tgt = np.array([1, 0, 4, 2], np.int64)
    check(nn.CrossEntropyLoss(reduction=reduction), torch.nn.CrossEntropyLoss(reduction=reduction), [a, tgt],
          modes=("train",))
    probs = np.exp(b) / np.exp(b).sum(-1, keepdims=True)
    check(nn.CrossEntropyLoss(reduction=reduction), torch.nn.CrossEntropyLoss(reduction=reduction),
          [a, probs.astype(np.float32)], modes=("train",))


def test_cross_entropy_loss_class_dim_one():
    logits, tgt = _randn(2, 5, 3, 4), RNG.integers(0, 5, size=(2, 3, 4))
    check(nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss(), [logits, tgt], modes=("train",))
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    check(nn.CrossEntropyLoss(reduction="none"), torch.nn.CrossEntropyLoss(reduction="none"),
          [_randn(2, 5, 3), probs[..., 0].astype(np.float32)], modes=("train",))


def test_repr_matches_pytorch():
    cases = [("Linear", (4, 3)), ("Bilinear", (2, 3, 4)), ("Embedding", (10, 4, 0)), ("LayerNorm", ((3, 4),)),
             ("RMSNorm", (4,)), ("Dropout", (0.2,)), ("GELU", ("tanh",)), ("LeakyReLU", (0.1,)), ("Softmax", (1,)),
             ("Flatten", ()), ("Unflatten", (1, (2, 2))), ("ReLU", ()), ("Identity", ()), ("MSELoss", ()),
             ("CrossEntropyLoss", ())]
    for args in cases:
        name, a = args
        assert repr(getattr(nn, name)(*a)) == repr(getattr(torch.nn, name)(*a))
    assert repr(nn.Sequential(nn.Linear(2, 2), nn.Tanh())) == repr(torch.nn.Sequential(torch.nn.Linear(2, 2),
                                                                                        torch.nn.Tanh()))


def _mha_inputs(batch_first, L=5, S=5, N=2, E=8, kdim=8, vdim=8):
    q = _randn(N, L, E) if batch_first else _randn(L, N, E)
    k = _randn(N, S, kdim) if batch_first else _randn(S, N, kdim)
    v = _randn(N, S, vdim) if batch_first else _randn(S, N, vdim)
    return q, k, v


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("average", [True, False])
def test_multihead_attention(batch_first, average):
    zm = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    tm = torch.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q, k, v = _mha_inputs(batch_first, L=4, S=6)
    check(zm, tm, [q, k, v], output=lambda o: o[0], average_attn_weights=average)
    check(zm, tm, [q, k, v], output=lambda o: o[1], average_attn_weights=average, modes=("eval",))


def test_multihead_attention_masks_and_self_attention():
    zm, tm = nn.MultiheadAttention(8, 4, batch_first=True), torch.nn.MultiheadAttention(8, 4, batch_first=True)
    x = _randn(2, 5, 8)
    causal = np.triu(np.ones((5, 5), bool), 1)
    pad = np.array([[False] * 5, [False, False, False, True, True]])

    for kwargs in ({"attn_mask": causal}, {"key_padding_mask": pad}, {"attn_mask": causal, "key_padding_mask": pad},
                   {"attn_mask": np.where(causal, -1e9, 0.0).astype(np.float32)}):
        _same_parameters(zm, tm)
        zm.load_state_dict({k: _np(v) for k, v in tm.state_dict().items()})
        zo, zw = zm(*(zyx.tensor(x),) * 3, **{k: zyx.tensor(v) for k, v in kwargs.items()})
        to, tw = tm(*(torch.tensor(x),) * 3, **_torch_kwargs(kwargs))
        _close(zo, to, what=str(kwargs))
        _close(zw, tw, what=str(kwargs))


def test_multihead_attention_kdim_vdim_unbatched_and_3d_mask():
    zm, tm = nn.MultiheadAttention(8, 2, kdim=6, vdim=4), torch.nn.MultiheadAttention(8, 2, kdim=6, vdim=4)
    q, k, v = _mha_inputs(False, L=3, S=5, kdim=6, vdim=4)
    check(zm, tm, [q, k, v], output=lambda o: o[0])
    check(zm, tm, [q[:, 0], k[:, 0], v[:, 0]], output=lambda o: o[0], modes=("train",))
    mask = RNG.normal(size=(2 * 2, 3, 5)).astype(np.float32)
    check(zm, tm, [q, k, v], output=lambda o: o[0], attn_mask=mask, modes=("train",))


# every pair of option values once (an orthogonal array over the three switches), not all 8
@pytest.mark.parametrize("norm_first, activation, batch_first", [(False, "relu", True), (False, "gelu", False),
                                                                 (True, "relu", False), (True, "gelu", True)])
def test_transformer_encoder_layer(norm_first, activation, batch_first):
    args = dict(d_model=8, nhead=2, dim_feedforward=16, activation=activation, batch_first=batch_first,
                norm_first=norm_first)
    x = _randn(2, 5, 8) if batch_first else _randn(5, 2, 8)
    # dropout 0.1 in eval mode (the identity), and no dropout in train mode
    check(nn.TransformerEncoderLayer(**args), torch.nn.TransformerEncoderLayer(**args), [x], atol=3e-5,
          modes=("eval",))
    check(nn.TransformerEncoderLayer(dropout=0.0, **args), torch.nn.TransformerEncoderLayer(dropout=0.0, **args),
          [x], atol=3e-5, modes=("train",))


def test_transformer_encoder_layer_masks():
    args = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    causal = np.triu(np.ones((5, 5), bool), 1)
    pad = np.array([[False] * 5, [False, False, False, False, True]])
    check(nn.TransformerEncoderLayer(**args), torch.nn.TransformerEncoderLayer(**args), [_randn(2, 5, 8)],
          atol=3e-5, modes=("train",), src_mask=causal, src_key_padding_mask=pad)


def test_default_init_shapes_match_pytorch():
    pairs = [(nn.Linear(5, 3), torch.nn.Linear(5, 3)), (nn.Bilinear(2, 3, 4), torch.nn.Bilinear(2, 3, 4)),
             (nn.Embedding(7, 3), torch.nn.Embedding(7, 3)), (nn.LayerNorm(4), torch.nn.LayerNorm(4)),
             (nn.RMSNorm(4), torch.nn.RMSNorm(4)), (nn.MultiheadAttention(8, 2), torch.nn.MultiheadAttention(8, 2)),
             (nn.TransformerEncoderLayer(8, 2, 16), torch.nn.TransformerEncoderLayer(8, 2, 16))]
    for zm, tm in pairs:
        _same_parameters(zm, tm)
    zm = nn.MultiheadAttention(16, 4)
    assert np.all(zm.in_proj_bias.numpy() == 0) and np.all(zm.out_proj.bias.numpy() == 0)
    assert np.abs(zm.in_proj_weight.numpy()).max() <= np.sqrt(6 / (16 + 48))
    assert np.abs(zm.out_proj.weight.numpy()).max() <= 1 / np.sqrt(16)
    ln = nn.LayerNorm(4)
    assert np.all(ln.weight.numpy() == 1) and np.all(ln.bias.numpy() == 0)


def test_model_state_dict_from_torch():
    """A small transformer-ish model: torch's state_dict loads into the same zyx structure as is."""
    def build(m):
        return m.Sequential(m.Embedding(11, 8, padding_idx=0),
                            m.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True),
                            m.LayerNorm(8), m.Flatten(), m.Linear(40, 3), m.GELU())
    zm, tm = build(nn), build(torch.nn)
    idx = RNG.integers(0, 11, size=(2, 5))
    check(zm, tm, [idx], atol=3e-5)


def test_multihead_attention_dropout_weights():
    zm = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    x = zyx.randn(2, 6, 8)
    _, w = zm(x, x, x, average_attn_weights=False)
    w = w.numpy()
    assert (w == 0).mean() > 0.3  # dropped in training, as PyTorch returns the weights after dropout
    _, w = zm.eval()(x, x, x, average_attn_weights=False)
    np.testing.assert_allclose(w.numpy().sum(-1), 1, rtol=1e-5)


def test_module_to_device():
    zm = nn.Linear(3, 2)
    w = zm.weight
    dev = zyx.default_device()
    assert zm.to(dev) is zm and zm.weight is w and zm.weight.device is dev


def test_transformer_encoder():
    layer_args = dict(d_model=8, nhead=2, dim_feedforward=16, dropout=0.0, batch_first=True)
    zm = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer_args), 2, norm=nn.LayerNorm(8))
    tm = torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(**layer_args), 2, norm=torch.nn.LayerNorm(8),
                                     enable_nested_tensor=False)
    assert zm.layers[0].linear1.weight is not zm.layers[1].linear1.weight
    pad = np.array([[False] * 5, [False, False, False, True, True]])
    check(zm, tm, [_randn(2, 5, 8)], atol=3e-5, src_key_padding_mask=pad)


def test_float64_model():
    """The same comparison in float64 (``Module.to`` / ``.double()``), to a float64 tolerance."""
    def build(m):
        return m.Sequential(m.Linear(6, 8), m.LayerNorm(8), m.GELU(), m.Identity(),
                            m.Linear(8, 3))
    zm, tm = build(nn), build(torch.nn)
    zm.double()
    tm.double()
    check(zm, tm, [RNG.normal(size=(4, 6))], atol=1e-10, rtol=1e-10, modes=("train",))
    attn_z, attn_t = nn.MultiheadAttention(8, 2, batch_first=True).double(), \
        torch.nn.MultiheadAttention(8, 2, batch_first=True).double()
    x = RNG.normal(size=(2, 3, 8))
    check(attn_z, attn_t, [x, x, x], atol=1e-10, rtol=1e-10, output=lambda o: o[0], modes=("train",))
