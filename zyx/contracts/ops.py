"""The contract ops' section of ``python -m zyx demo`` (the ops themselves: ``zyx/frontend/contract_ops.py``).

It uses only the ``zyx`` module it is handed, so this layer imports nothing of the frontend.
"""
from __future__ import annotations

from typing import Any

import numpy as np


def demo(zyx: Any) -> None:
    """The contract ops' section of ``python -m zyx demo``: a few ops checked against NumPy."""
    import time

    t0 = time.perf_counter()
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
          f"({(time.perf_counter() - t0) * 1e3:.1f} ms incl. compile)")
    if not ok:
        raise RuntimeError(f"contract ops demo mismatch: {checks}")
