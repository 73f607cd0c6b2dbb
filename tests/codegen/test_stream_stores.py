"""Streamed (non-temporal) whole-vector output stores of IR kernels (templates/common/stream.mako)."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

import zyx
from zyx import settings
from zyx.codegen.ir_source import kernel_source
from zyx.ir.kernel import Opts
from zyx.opt.heuristics import STREAM_MIN_BYTES

pytestmark = pytest.mark.needs_device


def _captured(monkeypatch):
    """Record the (kernel, opts) of every launch."""
    import zyx.graph.realization as realize_mod

    seen = []
    choose = realize_mod.choose_opts

    def spy(k, device, args, launch):
        opts = choose(k, device, args, launch)
        seen.append((k, opts, args))
        return opts
    monkeypatch.setattr(realize_mod, "choose_opts", spy)
    return seen


@pytest.mark.parametrize("shape", [((1 << 20) + 3,), (1100, 1001), (2048, 1024)])
def test_large_elementwise_outputs_stream_and_stay_exact(monkeypatch, shape):
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal(shape).astype(np.float32) for _ in range(2))
    seen = _captured(monkeypatch)
    za, zb = zyx.tensor(a), zyx.tensor(b)
    lazy_out = (za * zb + za).exp() if len(shape) == 1 else (za.T * zb.T + 1).T  # also through transposes
    got = lazy_out.numpy()
    want = np.exp(a * b + a) if len(shape) == 1 else (a.T * b.T + 1).T
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-30)
    if settings.heuristics_kind(zyx.default_device()) == "cpu" and a.nbytes >= STREAM_MIN_BYTES:
        k, opts, _ = seen[-1]
        assert opts.stream and "zyx_stream_store_" in kernel_source(k, opts)


def test_stream_opt_off_and_on_give_the_same_bits(monkeypatch):
    from zyx.kernels.ir_launch import launch_kernel
    from zyx.opt.ir_tuning import from_config, to_config

    x = zyx.rand(3, 5000).realize()
    seen = _captured(monkeypatch)
    ref = (x * 3 - 1).sqrt().numpy()
    k, _, args = seen[-1]
    scalars = args[len(k.bufs):]  # the float constants 3 and 1, passed as kernel arguments
    dev = zyx.default_device()
    for stream in (False, True):
        n = len(k.out_shape)  # (3, 5000) is one contiguous axis to the kernel (ir.merge_axes)
        opts = Opts(local=64, upcast=(1,) * n, vec=8, vec_axis=n - 1, stream=stream)
        assert from_config(k, Opts(), to_config(k, opts)) == opts
        out = zyx.full((3, 5000), -7.0).realize()  # poisoned: every element must be written
        launch_kernel(dev, k, opts, [out._data.buffer.cl, x._data.buffer.cl, *scalars])
        np.testing.assert_array_equal(out.numpy().view(np.uint32), ref.view(np.uint32))


def test_row_kernels_stream_unless_they_read_their_output_back(monkeypatch):
    """layer_norm's row kernel streams its large output; softmax's re-reads the exp values it stored, so its
    stores stay ordinary even with the stream opt set."""
    import zyx.nn.functional as F

    rng = np.random.default_rng(8)
    a = rng.standard_normal((1100, 1001)).astype(np.float32)  # > 4 MiB, rows not a whole number of vectors
    w = rng.standard_normal(1001).astype(np.float32)
    seen = _captured(monkeypatch)
    got = F.layer_norm(zyx.tensor(a), (1001,), zyx.tensor(w), zyx.tensor(w)).numpy()
    mu = a.mean(1, keepdims=True)
    want = (a - mu) / np.sqrt(((a - mu) ** 2).mean(1, keepdims=True) + 1e-5) * w + w
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-5)
    k, opts, _ = seen[-1]
    if settings.heuristics_kind(zyx.default_device()) == "cpu":
        assert opts.stream and "zyx_stream_store_" in kernel_source(k, opts)
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(zyx.tensor(a).softmax(-1).numpy(), e / e.sum(1, keepdims=True), rtol=2e-6,
                               atol=1e-9)
    k, opts, _ = seen[-1]
    assert "zyx_stream_store_" not in kernel_source(k, replace(opts, stream=True))
