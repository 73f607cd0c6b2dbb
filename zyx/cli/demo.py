"""``zyx demo``: a short end-to-end run on the default device, checked against NumPy."""
from __future__ import annotations

import argparse
from typing import Any, Callable

import numpy as np

from zyx.backend.timing import Stopwatch


def cmd_demo(_: argparse.Namespace) -> int:
    """A short end-to-end run on the default device, printing results and timings."""
    import zyx

    dev = zyx.default_device()
    print(f"zyx demo on {dev}")
    watch = Stopwatch()
    zyx.manual_seed(0)
    a = zyx.rand(512, 1024)
    b = a.T.contiguous()
    ok = np.array_equal(b.numpy(), a.numpy().T)
    print(f"  rand(512, 1024) and transpose copy: {'ok' if ok else 'MISMATCH'}  "
          f"({watch.seconds() * 1e3:.1f} ms incl. compile)")
    h = a.cast(zyx.bfloat16)
    back = h.numpy().astype(np.float32)
    print(f"  float32 -> bfloat16 max abs error {np.abs(back - a.numpy()).max():.2e} (bf16 has 8 significant bits)")
    x = zyx.arange(12).reshape(3, 4)
    print(f"  arange(12).reshape(3, 4)[::-1, 1::2] =\n{x[::-1, 1::2]}")
    ok = _demo_fused_ops(zyx) and ok
    _demo_contract_ops(zyx)
    stats = zyx.memory_stats()
    print(f"  kernels launched: {zyx.kernel_count()}, device memory in use: {stats['bytes_in_use']} bytes")
    return 0 if ok else 1


def _timed(fn: Callable[[], object]) -> tuple[object, float]:
    """``fn()`` realized and synchronized, with its wall time in ms (second run: compiled)."""
    import zyx

    fn()
    zyx.synchronize()
    watch = Stopwatch()
    out = fn()
    zyx.synchronize()
    return out, watch.seconds() * 1e3


def _demo_fused_ops(zyx: object) -> bool:
    """The lazy engine: fused elementwise, a fused reduce, matmul and softmax vs NumPy."""
    a, b, c = zyx.rand(1 << 20), zyx.rand(1 << 20), zyx.rand(1 << 20)
    k0 = zyx.kernel_count()
    y, ms = _timed(lambda: (a * b + c).exp().realize())
    kernels = (zyx.kernel_count() - k0) // 2
    ref = np.exp(a.numpy() * b.numpy() + c.numpy())
    ok = bool(np.allclose(y.numpy(), ref, rtol=1e-6))
    print(f"  exp(a*b+c) on 1M float32: {kernels} fused kernel(s), {ms:.2f} ms, "
          f"{'ok' if ok else 'MISMATCH'}")
    m = zyx.rand(256, 512)
    k0 = zyx.kernel_count()
    s, ms = _timed(lambda: ((m * m).sum(1) + 1).realize())
    kernels = (zyx.kernel_count() - k0) // 2
    ok_s = bool(np.allclose(s.numpy(), (m.numpy() ** 2).sum(1) + 1, rtol=1e-5))
    print(f"  (m*m).sum(1) + 1 on 256x512: {kernels} fused kernel(s), {ms:.2f} ms, {'ok' if ok_s else 'MISMATCH'}")
    p, q = zyx.rand(512, 512), zyx.rand(512, 512)
    r, ms = _timed(lambda: (p @ q).realize())
    ok_m = bool(np.allclose(r.numpy(), p.numpy() @ q.numpy(), rtol=1e-4))
    print(f"  matmul 512^3: {2 * 512**3 / ms / 1e6:.1f} GFLOP/s, {'ok' if ok_m else 'MISMATCH'}")
    x = zyx.randn(64, 1000)
    sm, ms = _timed(lambda: x.softmax(-1).realize())
    xe = np.exp(x.numpy() - x.numpy().max(-1, keepdims=True))
    ok_x = bool(np.allclose(sm.numpy(), xe / xe.sum(-1, keepdims=True), rtol=1e-5, atol=1e-7))
    print(f"  softmax 64x1000: {ms:.2f} ms, {'ok' if ok_x else 'MISMATCH'}")
    return ok and ok_s and ok_m and ok_x


def _demo_contract_ops(zyx: Any) -> None:
    """The contract ops' section of ``python -m zyx demo``: a few ops checked against NumPy."""
    watch = Stopwatch()
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    x = zyx.tensor(a)
    checks = {
        "flip/roll/cat": np.array_equal(zyx.cat([x.flip(1), x.roll(2, 0)], 0).numpy(),
                                        np.concatenate([np.flip(a, 1), np.roll(a, 2, 0)], 0)),
        "triu/masked_fill": np.array_equal(x.triu(1).masked_fill(zyx.tensor(np.eye(4, 6, dtype=bool)), -1.0).numpy(),
                                           np.where(np.eye(4, 6, dtype=bool), np.float32(-1), np.triu(a, 1))),
        "cumsum": np.allclose(x.cumsum(1).numpy(), np.cumsum(a, 1)),
    }
    ring = zyx.zeros(4, 2)
    zyx.write_slice_rotating(ring, zyx.ones(3, 2), 0, zyx.tensor([3], dtype=zyx.int32))
    checks["write_slice_rotating"] = ring.numpy()[:, 0].tolist() == [1.0, 1.0, 0.0, 1.0]
    ok = all(checks.values())
    print(f"  contract ops ({', '.join(checks)}): {'ok' if ok else 'MISMATCH'}  "
          f"({watch.seconds() * 1e3:.1f} ms incl. compile)")
    if not ok:
        raise RuntimeError(f"contract ops demo mismatch: {checks}")
