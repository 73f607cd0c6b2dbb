"""zyx.nn loss and distance modules (zyx/nn/loss.py, zyx/nn/distance.py) against torch.nn's: values,
gradients, buffers and reprs."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(77)
pytestmark = pytest.mark.needs_device


def _args(name):
    """(module kwargs, input arrays) for each module; arrays are float32 unless integer targets."""
    x, y = RNG.normal(size=(4, 5)).astype(np.float32), RNG.normal(size=(4, 5)).astype(np.float32)
    p, q = RNG.uniform(0.05, 0.95, (4, 5)).astype(np.float32), RNG.uniform(0, 1, (4, 5)).astype(np.float32)
    w5 = RNG.uniform(0.1, 2, 5).astype(np.float32)
    cls = np.array([0, 4, -1, 2])
    sign = RNG.choice([-1.0, 1.0], (4, 5)).astype(np.float32)
    return {
        "MSELoss": (dict(reduction="sum"), (x, y)),
        "L1Loss": (dict(reduction="none"), (x, y)),
        "SmoothL1Loss": (dict(beta=0.5), (x, y)),
        "HuberLoss": (dict(reduction="sum", delta=0.3), (x, y)),
        "NLLLoss": (dict(weight=w5, ignore_index=-1), (np.log(p), cls)),
        "CrossEntropyLoss": (dict(weight=w5, ignore_index=-1, label_smoothing=0.2), (x, cls)),
        "BCELoss": (dict(weight=w5, reduction="sum"), (p, q)),
        "BCEWithLogitsLoss": (dict(weight=w5, pos_weight=w5[::-1].copy()), (x, q)),
        "KLDivLoss": (dict(reduction="batchmean", log_target=True), (np.log(p), np.log(q))),
        "MarginRankingLoss": (dict(margin=0.2), (x, y, sign)),
        "HingeEmbeddingLoss": (dict(margin=0.7, reduction="none"), (x, sign)),
        "CosineSimilarity": (dict(dim=0, eps=1e-6), (x, y)),
        "PairwiseDistance": (dict(p=3.0, keepdim=True), (x, y)),
    }[name]


NAMES = ["MSELoss", "L1Loss", "SmoothL1Loss", "HuberLoss", "NLLLoss", "CrossEntropyLoss", "BCELoss",
         "BCEWithLogitsLoss", "KLDivLoss", "MarginRankingLoss", "HingeEmbeddingLoss", "CosineSimilarity",
         "PairwiseDistance"]


@pytest.mark.parametrize("name", NAMES)
def test_loss_module_matches_torch(name):
    kw, arrays = _args(name)
    zkw = {k: zyx.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    zm, tm = getattr(zyx.nn, name)(**zkw), getattr(torch.nn, name)(**tkw)
    assert repr(zm) == repr(tm)
    assert sorted(zm.state_dict()) == sorted(tm.state_dict())
    zs = [zyx.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
    ts = [torch.tensor(a, requires_grad=a.dtype == np.float32) for a in arrays]
    zo, to = zm(*zs), tm(*ts)
    np.testing.assert_allclose(zo.numpy(), to.detach().numpy(), rtol=1e-5, atol=1e-6)
    g = RNG.normal(size=tuple(to.shape)).astype(np.float32)
    zo.backward(zyx.tensor(g))
    to.backward(torch.tensor(g))
    for z, t in zip(zs, ts):
        if t.grad is not None:
            np.testing.assert_allclose(z.grad.numpy(), t.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_loss_module_bad_reduction():
    with pytest.raises(zyx.ShapeError, match="reduction"):
        zyx.nn.MSELoss(reduction="avg")
    with pytest.raises(zyx.ShapeError, match="reduction"):
        zyx.nn.NLLLoss(reduction="batchmean")  # only KLDivLoss takes it
    assert zyx.nn.KLDivLoss(reduction="batchmean").reduction == "batchmean"
