"""Template kernels outside the IR and the contracts, under Oclgrind on small shapes: the padding kernel
(templates/pad_rows.cl.mako: every element width, its GPU and CPU shapes, rows split into chunks, offset
and strided inputs; bit for bit against NumPy's pad), the uint8 resampling pass
(templates/resample_pass.cl.mako: along a dim with rows, uchar vectors and their scalar tail, and along
the last dim) and the optimizers' step (templates/optim_step.cl.mako), both against the default device."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx import settings
from zyx.frontend import padding
from zyx.kernels import pad as pad_kernel
from zyx.kernels import resample as resample_kernel

NUMPY_MODE = {"reflect": "reflect", "replicate": "edge", "circular": "wrap"}


@pytest.mark.parametrize("kind", ["gpu", "cpu"])
@pytest.mark.parametrize("mode", list(NUMPY_MODE))
@pytest.mark.parametrize("dtype", [zyx.uint8, zyx.float16, zyx.float32, zyx.float64], ids=lambda d: d.name)
def test_pad_kernel(sim, needs, monkeypatch, kind, mode, dtype):
    needs(dtype)
    monkeypatch.setattr(settings, "HEURISTICS", kind)  # a vector a work item; runs of words a work item
    monkeypatch.setattr(padding, "KERNEL_MIN", 0)  # the kernel for every size, not the fused gather
    monkeypatch.setattr(pad_kernel, "CHUNK", 24)  # CPU rows split across work items, a partial last chunk
    a = (np.arange(4 * 5 * 37) % 251).astype(dtype.numpy).reshape(4, 5, 37)
    x = zyx.from_numpy(a, device=sim)
    for view, want, pads in ((x, a, (3, 2, 1, 4)), (x[1:], a[1:], (0, 0, 2, 1)), (x[:, ::2, 1:], a[:, ::2, 1:], (5, 1)),
                             (x, a, (1, 1, 0, 0, 2, 1))):
        per_dim = [(0, 0)] * (a.ndim - len(pads) // 2) + [pads[i:i + 2] for i in range(len(pads) - 2, -1, -2)]
        got = F.pad(view, pads, mode=mode).numpy()
        np.testing.assert_array_equal(got, np.pad(want, per_dim, mode=NUMPY_MODE[mode]))


@pytest.mark.needs_device  # the reference resize runs on the default device
@pytest.mark.parametrize("shape, size", [((2, 3, 9, 21), (5, 40)), ((20, 1, 6, 7), (9, 3))])
def test_uint8_resample_passes(sim, monkeypatch, shape, size):
    monkeypatch.setattr(resample_kernel, "TRANSPOSE_MIN_ROWS", 16)  # (20, 1, 6, 7): the last dim transposed
    a = np.random.default_rng(5).integers(0, 256, shape, dtype=np.uint8)
    got, want = (F.interpolate(zyx.from_numpy(a, device=dev), size=size, mode="bilinear", antialias=True).numpy()
                 for dev in (sim, zyx.default_device()))
    np.testing.assert_array_equal(got, want)


OPTIMIZERS = [("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
              ("Adam", {"lr": 0.01}), ("AdamW", {"lr": 0.01, "amsgrad": True}),
              ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True}), ("Adagrad", {"lr": 0.1})]


@pytest.mark.needs_device  # the reference steps run on the default device
@pytest.mark.parametrize("kind", ["gpu", "cpu"])  # one element a work-item; a loop over 16 a work-item
@pytest.mark.parametrize("name, kw", OPTIMIZERS, ids=[n for n, _ in OPTIMIZERS])
def test_optimizer_step_kernel(sim, monkeypatch, kind, name, kw):
    """templates/optim_step.cl.mako: three steps of one launch over a (7, 5) weight whose gradient is a
    transposed view (the kernel reads it through its strides), a 3-element bias and tensors of 1 and 70
    elements (work-groups and work-items past a tensor's end), on the simulator and the default device."""
    monkeypatch.setattr(settings, "HEURISTICS", kind)
    rng = np.random.default_rng(7)
    w0, b0, x = rng.normal(size=(7, 5)), rng.normal(size=3), rng.normal(size=(4, 5))
    extra0 = [rng.normal(size=1), rng.normal(size=70)]
    results = []
    for dev in (sim, zyx.default_device()):
        w = zyx.tensor(w0.astype(np.float32), device=dev, requires_grad=True)
        b = zyx.tensor(b0.astype(np.float32), device=dev, requires_grad=True)
        extra = [zyx.tensor(e.astype(np.float32), device=dev, requires_grad=True) for e in extra0]
        opt = getattr(zyx.optim, name)([w, b, *extra], **kw)
        for _ in range(3):
            opt.zero_grad()
            loss = (zyx.tensor(x.astype(np.float32), device=dev) @ w.T).square().sum() + (b * b).sum()
            (loss + sum((e * e * e).sum() for e in extra)).backward()
            opt.step()
        results.append((w.numpy(), b.numpy(), *(e.numpy() for e in extra)))
    for got, want in zip(*results):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
