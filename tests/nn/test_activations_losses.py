"""zyx.nn.functional activations and losses against PyTorch: values (random and edge inputs, float32/float64,
16-bit floats), every reduction, weights / ignore_index / label smoothing / probability targets, and gradients."""
from __future__ import annotations

import zlib

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F

torch = pytest.importorskip("torch")
TF = torch.nn.functional
pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(1414)


@pytest.fixture(autouse=True)
def _seeded(request):
    """Each test draws its own data whatever ran before it on its worker (a module-wide stream made the
    data depend on the order: cosine_similarity's gradient missed its tolerance once under xdist)."""
    global RNG
    RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
EDGES = np.array([0.0, -0.0, 3.0, -3.0, 6.0, -1.0, 1.0, 20.0, 21.0, -20.0, 100.0, -100.0, 1e30, -1e30, np.inf,
                  -np.inf, np.nan])


def _np(x):
    return x.detach().float().numpy() if x.dtype == torch.bfloat16 else x.detach().numpy()


def _close(z, t, rtol=1e-5, atol=1e-6):
    got = z.numpy()
    want = t.detach().numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol, equal_nan=True)


ACTIVATIONS = {
    "relu6": {}, "elu": {"alpha": 0.7}, "selu": {}, "celu": {"alpha": 1.3}, "leaky_relu": {"negative_slope": 0.2},
    "softplus": {"beta": 2.0, "threshold": 10.0}, "mish": {}, "hardswish": {}, "hardsigmoid": {},
    "hardtanh": {"min_val": -0.5, "max_val": 2.0}, "logsigmoid": {}, "softsign": {}, "tanhshrink": {},
    "silu": {}, "sigmoid": {}, "tanh": {}, "relu": {},
}
# PyTorch computes these float64 gradients with a float32 constant (1/6, 1/alpha): 1e-7 apart
_F32_CONSTANT_GRAD = {"hardsigmoid", "celu", "hardswish"}


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values(name, dtype):
    x = np.concatenate([RNG.uniform(-8, 8, 300), EDGES]).astype(dtype)
    kw = ACTIVATIONS[name]
    _close(getattr(F, name)(zyx.tensor(x), **kw), getattr(TF, name)(torch.tensor(x), **kw),
           rtol=2e-6 if dtype == np.float32 else 1e-13, atol=1e-7 if dtype == np.float32 else 1e-15)
    if dtype == np.float32:  # rank 0 and empty tensors: a shape question, once per activation
        for shape in [(), (0,), (2, 0)]:
            e = RNG.normal(size=shape).astype(dtype)
            _close(getattr(F, name)(zyx.tensor(e), **kw), getattr(TF, name)(torch.tensor(e), **kw))


@pytest.mark.parametrize("name", ["elu", "selu", "softplus", "mish", "hardswish", "hardsigmoid", "logsigmoid"])
def test_activation_bfloat16_rounds_once(name):
    x = torch.tensor(RNG.uniform(-5, 5, 64), dtype=torch.float32).to(torch.bfloat16)
    z = zyx.tensor(x.float().numpy()).cast(zyx.bfloat16)
    got = getattr(F, name)(z)
    assert got.dtype == zyx.bfloat16
    np.testing.assert_allclose(got.cast(zyx.float32).numpy(), _np(getattr(TF, name)(x)), rtol=8e-3, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", sorted(set(ACTIVATIONS) - {"relu"}))
def test_activation_gradients(name, dtype):
    # the boundaries of the clamped family are included: PyTorch's gradient there is its own choice
    x = np.concatenate([RNG.uniform(-8, 8, 60), [-3.0, 3.0, 0.0, 6.0, -0.5, 2.0, 25.0, -1.0, 1.0, 100.0, -100.0]])
    x = x.astype(dtype)
    kw = ACTIVATIONS[name]
    z, t = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    g = RNG.normal(size=x.shape).astype(dtype)
    getattr(F, name)(z, **kw).backward(zyx.tensor(g))
    getattr(TF, name)(t, **kw).backward(torch.tensor(g))
    tol = 1e-5 if dtype == np.float32 else 1e-6 if name in _F32_CONSTANT_GRAD else 1e-12
    _close(z.grad, t.grad, rtol=tol, atol=tol)


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_is_exported(approximate):
    x = RNG.uniform(-3, 3, 50).astype(np.float32)
    _close(F.gelu(zyx.tensor(x), approximate=approximate), TF.gelu(torch.tensor(x), approximate=approximate))


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_glu(dim):
    x = RNG.normal(size=(4, 6, 2)).astype(np.float32)
    z, t = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    _close(F.glu(z, dim), TF.glu(t, dim))
    F.glu(z, dim).sum().backward()
    TF.glu(t, dim).sum().backward()
    _close(z.grad, t.grad)
    with pytest.raises(zyx.ShapeError):
        F.glu(zyx.tensor(np.zeros((3, 5), np.float32)), 1)


# every axis once (dim 0 by p=3); each norm once (1 and inf along dim 1, through the zero vector)
@pytest.mark.parametrize("p, dim", [(2.0, 1), (2.0, -1), (1.0, 1), (3.0, 0), (float("inf"), 1)])
def test_normalize(p, dim):
    x = RNG.normal(size=(3, 4, 5)).astype(np.float32)
    x[0, :, 0] = 0.0  # a zero vector along dim 1: divided by eps, gradient finite
    z, t = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    _close(F.normalize(z, p=p, dim=dim), TF.normalize(t, p=p, dim=dim))
    g = RNG.normal(size=x.shape).astype(np.float32)
    F.normalize(z, p=p, dim=dim).backward(zyx.tensor(g))
    TF.normalize(t, p=p, dim=dim).backward(torch.tensor(g))
    _close(z.grad, t.grad, rtol=1e-4, atol=1e-4)


def test_one_hot():
    y = np.array([[0, 2], [1, 4]], np.int64)
    _close(F.one_hot(zyx.tensor(y)), TF.one_hot(torch.tensor(y)))
    _close(F.one_hot(zyx.tensor(y), 7), TF.one_hot(torch.tensor(y), 7))
    _close(F.one_hot(zyx.tensor(np.zeros(0, np.int64)), 3), TF.one_hot(torch.zeros(0, dtype=torch.int64), 3))
    with pytest.raises(zyx.ShapeError):
        F.one_hot(zyx.tensor(y), 3)
    with pytest.raises(zyx.ShapeError):
        F.one_hot(zyx.tensor(np.array([-1, 0])))


# ------------------------------------------------------------------ losses

REDUCTIONS = ["mean", "sum", "none"]


def _pair(shape, dtype=np.float32, lo=-2.0, hi=2.0):
    x = RNG.uniform(lo, hi, shape).astype(dtype)
    return zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)


def _loss_and_grads(zf, tf, zs, ts, rtol=1e-5, atol=1e-6):
    zl, tl = zf(), tf()
    _close(zl, tl, rtol=rtol, atol=atol)
    g = RNG.normal(size=tuple(tl.shape)).astype(np.float32 if tl.dtype == torch.float32 else np.float64)
    zl.backward(zyx.tensor(g))
    tl.backward(torch.tensor(g))
    for z, t in zip(zs, ts):
        _close(z.grad, t.grad, rtol=rtol, atol=atol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("name,kw", [("mse_loss", {}), ("l1_loss", {}), ("smooth_l1_loss", {"beta": 0.5}),
                                     ("smooth_l1_loss", {"beta": 0.0}), ("huber_loss", {"delta": 0.7})])
def test_regression_losses(name, kw, reduction):
    (za, ta), (zb, tb) = _pair((4, 5)), _pair((4, 5))
    _loss_and_grads(lambda: getattr(F, name)(za, zb, reduction=reduction, **kw),
                    lambda: getattr(TF, name)(ta, tb, reduction=reduction, **kw), (za, zb), (ta, tb))


# every option combination on a batch of rows; the K-d and unbatched inputs with the weighted
# mean over an ignored class (its denominator) and one unweighted other reduction each
NLL = ([((6, 4), w, r, i) for w in (False, True) for r in REDUCTIONS for i in (-100, 1)]
       + [((3, 4, 2, 5), True, "mean", 1), ((3, 4, 2, 5), False, "none", -100),
          ((4,), True, "mean", -100), ((4,), False, "sum", 1)])


@pytest.mark.parametrize("shape, weighted, reduction, ignore", NLL)
def test_nll_loss(shape, weighted, reduction, ignore):
    zx, tx = _pair(shape, lo=-4.0, hi=0.0)
    tshape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    y = RNG.integers(0, shape[-1] if len(shape) == 1 else shape[1], tshape).astype(np.int64)
    if y.ndim:
        y.reshape(-1)[::3] = 1  # ignore_index below
    w = RNG.uniform(0.2, 2.0, shape[0] if len(shape) == 1 else shape[1]).astype(np.float32)
    kw_z = {"weight": zyx.tensor(w)} if weighted else {}
    kw_t = {"weight": torch.tensor(w)} if weighted else {}
    _loss_and_grads(lambda: F.nll_loss(zx, zyx.tensor(y), reduction=reduction, ignore_index=ignore, **kw_z),
                    lambda: TF.nll_loss(tx, torch.tensor(y), reduction=reduction, ignore_index=ignore, **kw_t),
                    (zx,), (tx,))


def test_nll_loss_all_ignored_mean_is_nan():
    z = F.nll_loss(zyx.tensor(np.zeros((2, 3), np.float32)), zyx.tensor(np.array([-100, -100])))
    assert np.isnan(z.item())


@pytest.mark.parametrize("case", [
    ("nll_loss", (4, 5), [1, 5, 0, 2], 5, {}),
    ("nll_loss", (5,), 7, 7, {"weight": True}),
    ("cross_entropy", (2, 5, 3), [[1, 4, 0], [-1, 2, 3]], -1, {"weight": True, "label_smoothing": 0.1,
                                                                "reduction": "none"}),
])
def test_class_index_out_of_range_raises(case):
    """A target outside [0, C) (other than ignore_index) raises IndexOutOfRange when values are read, as
    PyTorch raises IndexError ("Target 5 is out of bounds."), instead of contributing 0."""
    name, shape, y, bad, kw = case
    x = RNG.normal(size=shape).astype(np.float32)
    w = RNG.uniform(0.5, 1.5, shape[0] if len(shape) == 1 else shape[1]).astype(np.float32)
    kz = {**kw, "weight": zyx.tensor(w)} if kw.get("weight") else kw
    kt = {**kw, "weight": torch.tensor(w)} if kw.get("weight") else kw
    with pytest.raises(IndexError):
        getattr(TF, name)(torch.tensor(x), torch.tensor(y), **kt)
    with pytest.raises(zyx.IndexOutOfRange, match="index out of range") as info:
        getattr(F, name)(zyx.tensor(x), zyx.tensor(np.array(y)), **kz).numpy()
    assert isinstance(info.value, zyx.ShapeError) and isinstance(info.value, IndexError)
    # the same target as ignore_index is fine, and matches PyTorch
    got = getattr(F, name)(zyx.tensor(x), zyx.tensor(np.array(y)), ignore_index=bad, **kz).numpy()
    want = getattr(TF, name)(torch.tensor(x), torch.tensor(y), ignore_index=bad, **kt).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# every option combination on rows; the K-d input weighted and smoothed (mean), and plain (none)
CE = ([((6, 5), w, s, r) for w in (False, True) for s in (0.0, 0.2) for r in REDUCTIONS]
      + [((2, 5, 3), True, 0.2, "mean"), ((2, 5, 3), False, 0.0, "none")])


@pytest.mark.parametrize("shape, weighted, smoothing, reduction", CE)
def test_cross_entropy_index_targets(shape, weighted, smoothing, reduction):
    zx, tx = _pair(shape, lo=-3.0, hi=3.0)
    y = RNG.integers(0, shape[1], shape[:1] + shape[2:]).astype(np.int64)
    y.reshape(-1)[1] = 3
    w = RNG.uniform(0.2, 2.0, shape[1]).astype(np.float32)
    kw_z = {"weight": zyx.tensor(w)} if weighted else {}
    kw_t = {"weight": torch.tensor(w)} if weighted else {}
    _loss_and_grads(lambda: F.cross_entropy(zx, zyx.tensor(y), reduction=reduction, ignore_index=3,
                                            label_smoothing=smoothing, **kw_z),
                    lambda: TF.cross_entropy(tx, torch.tensor(y), reduction=reduction, ignore_index=3,
                                             label_smoothing=smoothing, **kw_t), (zx,), (tx,))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probability_targets(weighted, smoothing, reduction):
    zx, tx = _pair((4, 3, 2))
    p = RNG.dirichlet(np.ones(3), (4, 2)).transpose(0, 2, 1).astype(np.float32)
    w = RNG.uniform(0.2, 2.0, 3).astype(np.float32)
    kw_z = {"weight": zyx.tensor(w)} if weighted else {}
    kw_t = {"weight": torch.tensor(w)} if weighted else {}
    _loss_and_grads(lambda: F.cross_entropy(zx, zyx.tensor(p), reduction=reduction, label_smoothing=smoothing, **kw_z),
                    lambda: TF.cross_entropy(tx, torch.tensor(p), reduction=reduction, label_smoothing=smoothing,
                                             **kw_t), (zx,), (tx,))


def test_cross_entropy_loss_module_passes_options():
    x = RNG.normal(size=(5, 4)).astype(np.float32)
    y = np.array([0, 3, 1, 2, 1])
    w = np.array([1.0, 2.0, 0.5, 1.5], np.float32)
    m = zyx.nn.CrossEntropyLoss(weight=zyx.tensor(w), ignore_index=1, label_smoothing=0.1)
    want = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=1, label_smoothing=0.1)
    _close(m(zyx.tensor(x), zyx.tensor(y)), want(torch.tensor(x), torch.tensor(y)))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy(weighted, reduction):
    x = np.concatenate([RNG.uniform(0.01, 0.99, 20), [0.0, 1.0, 1e-30, 0.5]]).astype(np.float32)
    y = np.concatenate([RNG.uniform(0, 1, 20), [0.0, 1.0, 1.0, 0.5]]).astype(np.float32)
    w = RNG.uniform(0.5, 2, x.shape).astype(np.float32)
    zx, tx = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    kw_z = {"weight": zyx.tensor(w)} if weighted else {}
    kw_t = {"weight": torch.tensor(w)} if weighted else {}
    _loss_and_grads(lambda: F.binary_cross_entropy(zx, zyx.tensor(y), reduction=reduction, **kw_z),
                    lambda: TF.binary_cross_entropy(tx, torch.tensor(y), reduction=reduction, **kw_t), (zx,), (tx,),
                    rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("case", [
    ("input", 1.5, "mean", "float32"), ("input", -1e-7, "none", "float32"), ("input", np.nan, "sum", "float32"),
    ("input", np.inf, "mean", "float64"), ("target", 2.0, "none", "float32"), ("target", np.nan, "mean", "float16"),
    ("both", -0.5, "sum", "float32"),
])
def test_binary_cross_entropy_values_outside_0_1_raise(case):
    """As PyTorch's RuntimeError "all elements of input (target) should be between 0 and 1" (zyx gave NaN, or a
    finite loss for a target outside [0, 1]): ShapeError (a RuntimeError), input named first, checked by the
    loss's own kernel (no launch or sync of its own) and raised when values are read; the failing elements
    read as NaN. The same values inside [0, 1] give PyTorch's loss."""
    where, bad, reduction, dtype = case
    x = np.array([[0.2, 0.9, 0.0], [1.0, 0.5, 0.7]], dtype)
    y = np.array([[0.0, 1.0, 0.3], [1.0, 0.5, 0.0]], dtype)
    if where in ("input", "both"):
        x[1, 2] = bad
    if where in ("target", "both"):  # both at one element: PyTorch names input (it names the first bad element's)
        y[1 if where == "both" else 0, 2 if where == "both" else 1] = bad
    what = "target" if where == "target" else "input"
    with pytest.raises(RuntimeError, match=f"all elements of {what} should be between 0 and 1"):
        TF.binary_cross_entropy(torch.tensor(x), torch.tensor(y), reduction=reduction)
    ok = (np.nan_to_num(x, nan=0.5).clip(0, 1), np.nan_to_num(y, nan=0.5).clip(0, 1))
    zok = (zyx.tensor(ok[0]), zyx.tensor(ok[1]))
    before = zyx.kernel_count()
    _close(F.binary_cross_entropy(*zok, reduction=reduction),
           TF.binary_cross_entropy(torch.tensor(ok[0]), torch.tensor(ok[1]), reduction=reduction), rtol=1e-3, atol=1e-3)
    kernels = zyx.kernel_count() - before
    zxy = (zyx.tensor(x), zyx.tensor(y))
    before = zyx.kernel_count()
    loss = F.binary_cross_entropy(*zxy, reduction=reduction)
    with pytest.raises(zyx.ShapeError, match=f"binary_cross_entropy: all elements of {what} should be between "
                                             "0 and 1") as info:
        loss.numpy()
    assert isinstance(info.value, RuntimeError)
    assert zyx.kernel_count() - before == kernels  # checked inside the loss's own kernels
    assert np.isnan(loss.numpy()).any()  # raised once; the failing elements became NaN, not a loss


@pytest.mark.parametrize("write", ["setitem", "iadd", "write_slice_rotating", "index_put_", "scatter_add_"])
def test_binary_cross_entropy_failed_check_is_never_written_in_place(write):
    """A loss whose range check fails, written in place into another tensor (``running += loss``), raises
    before the write (PyTorch raised at the loss): the destination keeps its values, no NaN stored."""
    y = zyx.ones(3)
    loss = F.binary_cross_entropy(zyx.tensor(np.array([0.2, 1.5, 0.3], np.float32)),
                                  zyx.tensor(np.array([0.0, 1.0, 0.5], np.float32)), reduction="none")
    idx = zyx.tensor(np.array([2, 0, 1]))
    with pytest.raises(zyx.ShapeError, match="all elements of input should be between 0 and 1"):
        if write == "setitem":
            y[...] = loss
        elif write == "iadd":
            y += loss
        elif write == "write_slice_rotating":
            zyx.write_slice_rotating(y, loss, 0, 1)
        elif write == "index_put_":
            y.index_put_((idx,), loss, accumulate=True)
        else:
            y.scatter_add_(0, idx, loss)
    np.testing.assert_array_equal(y.numpy(), np.ones(3, np.float32))


def test_binary_cross_entropy_failed_check_stops_an_optimizer_step():
    """loss.backward(); opt.step() before any read: the step's kernel reads the device's error bits and
    updates nothing (the parameters took NaN before); the next read raises the failed check."""
    m = zyx.nn.Linear(3, 1)
    opt = zyx.optim.SGD(m.parameters(), lr=0.1)
    w0, b0 = m.weight.numpy().copy(), m.bias.numpy().copy()
    x = zyx.tensor(np.array([[1.0, 2.0, 3.0], [-4.0, 5.0, 6.0]], np.float32))
    F.binary_cross_entropy(m(x).reshape(-1) * 100.0, zyx.tensor(np.array([0.0, 1.0], np.float32))).backward()
    opt.step()
    with pytest.raises(zyx.ShapeError, match="all elements of input should be between 0 and 1"):
        zyx.synchronize()
    np.testing.assert_array_equal(m.weight.numpy(), w0)
    np.testing.assert_array_equal(m.bias.numpy(), b0)


def test_binary_cross_entropy_check_reaches_gradient_and_module():
    """A gradient read without the loss checks the values too (its kernels carry the check); BCELoss raises
    the same way."""
    zx = zyx.tensor(np.array([0.3, 1.2], np.float32), requires_grad=True)
    F.binary_cross_entropy(zx, zyx.tensor(np.array([0.0, 1.0], np.float32))).backward()
    with pytest.raises(zyx.ShapeError, match="all elements of input should be between 0 and 1"):
        zx.grad.numpy()
    with pytest.raises(zyx.ShapeError, match="all elements of target should be between 0 and 1"):
        zyx.nn.BCELoss()(zyx.tensor(np.array([0.3], np.float32)), zyx.tensor(np.array([-1.0], np.float32))).item()


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("options", ["plain", "weight", "pos_weight"])
def test_binary_cross_entropy_with_logits(options, reduction):
    x = np.concatenate([RNG.uniform(-5, 5, (6, 3)), [[100.0, -100.0, 0.0]]]).astype(np.float32)
    y = RNG.uniform(0, 1, x.shape).astype(np.float32)
    zx, tx = zyx.tensor(x).requires_grad_(), torch.tensor(x, requires_grad=True)
    w = RNG.uniform(0.5, 2, (3,)).astype(np.float32)
    kw_z = {options: zyx.tensor(w)} if options != "plain" else {}
    kw_t = {options: torch.tensor(w)} if options != "plain" else {}
    _loss_and_grads(lambda: F.binary_cross_entropy_with_logits(zx, zyx.tensor(y), reduction=reduction, **kw_z),
                    lambda: TF.binary_cross_entropy_with_logits(tx, torch.tensor(y), reduction=reduction, **kw_t),
                    (zx,), (tx,))


@pytest.mark.parametrize("reduction", REDUCTIONS + ["batchmean"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(log_target, reduction):
    zx, tx = _pair((4, 5), lo=-3.0, hi=0.0)
    t = RNG.uniform(0, 1, (4, 5)).astype(np.float32)
    t[0, 0] = 0.0
    if log_target:
        t = np.log(t + 0.1).astype(np.float32)
    _loss_and_grads(lambda: F.kl_div(zx, zyx.tensor(t), reduction=reduction, log_target=log_target),
                    lambda: TF.kl_div(tx, torch.tensor(t), reduction=reduction, log_target=log_target), (zx,), (tx,))


@pytest.mark.parametrize("dim", [1, -1, 0])
def test_cosine_similarity(dim):
    (za, ta), (zb, tb) = _pair((3, 4, 5)), _pair((4, 5))
    # atol: along dim 0 the broadcast x2's gradient is a sum that cancels to rounding noise (~1e-6)
    _loss_and_grads(lambda: F.cosine_similarity(za, zb, dim=dim), lambda: TF.cosine_similarity(ta, tb, dim=dim),
                    (za, zb), (ta, tb), atol=2e-5)


@pytest.mark.parametrize("p, keepdim", [(2.0, False), (2.0, True), (1.0, False), (3.0, False), (float("inf"), True)])
def test_pairwise_distance(p, keepdim):
    (za, ta), (zb, tb) = _pair((6, 5)), _pair((6, 5))
    _loss_and_grads(lambda: F.pairwise_distance(za, zb, p=p, keepdim=keepdim),
                    lambda: TF.pairwise_distance(ta, tb, p=p, keepdim=keepdim), (za, zb), (ta, tb))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_and_hinge_embedding(reduction):
    (za, ta), (zb, tb) = _pair((7,)), _pair((7,))
    y = RNG.choice([-1.0, 1.0], 7).astype(np.float32)
    _loss_and_grads(lambda: F.margin_ranking_loss(za, zb, zyx.tensor(y), margin=0.3, reduction=reduction),
                    lambda: TF.margin_ranking_loss(ta, tb, torch.tensor(y), margin=0.3, reduction=reduction),
                    (za, zb), (ta, tb))
    zx, tx = _pair((7,))
    _loss_and_grads(lambda: F.hinge_embedding_loss(zx, zyx.tensor(y), margin=0.5, reduction=reduction),
                    lambda: TF.hinge_embedding_loss(tx, torch.tensor(y), margin=0.5, reduction=reduction),
                    (zx,), (tx,))


def test_float64_losses():
    (za, ta), (zb, tb) = _pair((3, 4), np.float64), _pair((3, 4), np.float64)
    _loss_and_grads(lambda: F.huber_loss(za, zb), lambda: TF.huber_loss(ta, tb), (za, zb), (ta, tb), rtol=1e-12)
    zx, tx = _pair((3, 4), np.float64)
    y = np.array([0, 3, 2])
    _loss_and_grads(lambda: F.cross_entropy(zx, zyx.tensor(y), label_smoothing=0.1),
                    lambda: TF.cross_entropy(tx, torch.tensor(y), label_smoothing=0.1), (zx,), (tx,), rtol=1e-12)


@pytest.mark.parametrize("dtype", ["int16", "int64", "uint8"])
def test_hardtanh_relu6_keep_integer_dtypes(dtype):
    """PyTorch clamps integer tensors in their own dtype, the limits truncated to integers."""
    a = np.array([-3, -1, 0, 1, 2, 5, 7, 9])
    z, t = zyx.tensor(a).cast(dtype), torch.tensor(a).to(getattr(torch, dtype))
    cases = [(F.relu6, TF.relu6, ()), (F.hardtanh, TF.hardtanh, (0.5, 2.9))]
    if dtype != "uint8":
        cases += [(F.hardtanh, TF.hardtanh, ()), (F.hardtanh, TF.hardtanh, (-1.7, 2.9))]
    for zf, tf, args in cases:
        got, want = zf(z, *args), tf(t, *args)
        assert got.dtype.name == dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    if dtype == "uint8":
        with pytest.raises(zyx.DTypeError, match="negative limits"):
            F.hardtanh(z)
    with pytest.raises(zyx.DTypeError, match="bool"):
        F.relu6(z > 0)


@pytest.mark.parametrize("zdt, tdt", [("bfloat16", torch.bfloat16), ("float16", torch.float16)])
def test_cosine_similarity_pairwise_distance_keep_16bit_dtype(zdt, tdt):
    # reduced in float32 and rounded once: the result keeps the inputs' 16-bit dtype, as PyTorch's (was float32)
    a, b = RNG.normal(size=(3, 4, 5)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    za, zb = zyx.tensor(a).cast(getattr(zyx, zdt)), zyx.tensor(b).cast(getattr(zyx, zdt))
    ta, tb = torch.tensor(a).to(tdt), torch.tensor(b).to(tdt)
    for zo, to in [(F.cosine_similarity(za, zb), TF.cosine_similarity(ta, tb)),
                   (F.pairwise_distance(za, zb, p=3.0), TF.pairwise_distance(ta, tb, p=3.0))]:
        assert zo.dtype.name == zdt
        np.testing.assert_allclose(zo.cast(zyx.float32).numpy(), to.float().numpy(), rtol=2e-2, atol=2e-2)
