"""A 3-layer MLP forward pass in zyx, checked against NumPy, with time per forward."""
import time

import numpy as np

import zyx
import zyx.nn.functional as F

rng = np.random.default_rng(0)
sizes = [784, 512, 256, 10]
# divide before the cast: float32 / np.float64 is float64 under NumPy 2's promotion rules
weights = [((rng.normal(size=(o, i)) / np.sqrt(i)).astype(np.float32), np.zeros(o, np.float32))
           for i, o in zip(sizes[:-1], sizes[1:])]
x = rng.normal(size=(256, 784)).astype(np.float32)


def forward_np(x):
    for k, (w, b) in enumerate(weights):
        x = x @ w.T + b
        if k < len(weights) - 1:
            x = np.maximum(x, 0)
    return x


zw = [(zyx.tensor(w), zyx.tensor(b)) for w, b in weights]


def forward_zyx(x):
    for k, (w, b) in enumerate(zw):
        x = F.linear(x, w, b)
        if k < len(zw) - 1:
            x = x.relu()
    return x


zx = zyx.tensor(x)
out = forward_zyx(zx).numpy()
ref = forward_np(x)
print("max abs diff vs numpy:", float(np.abs(out - ref).max()))
np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)
for name, fn, arg in (("zyx", lambda a: forward_zyx(a).realize(), zx), ("numpy", forward_np, x)):
    time.sleep(0.2)  # NumPy's BLAS threads spin for a while after a call and would slow what runs next
    fn(arg)
    zyx.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        fn(arg)
    zyx.synchronize()
    print(f"{name:6s} {(time.perf_counter() - t0) / 10 * 1e3:8.2f} ms per forward")
