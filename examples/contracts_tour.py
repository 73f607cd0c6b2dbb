"""A tour of zyx's contract ops: each op on a small tensor, printed, then the contract list.

Run: python examples/contracts_tour.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

try:
    import zyx
except ImportError:  # run from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import zyx


def show(title: str, value: object) -> None:
    print(f"--- {title}")
    print(value)


def main() -> None:
    x = zyx.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    show("x", x)
    show("x.T.contiguous()  (contiguize a transposed view)", x.T.contiguous())
    show("x.flip(1)", x.flip(1))
    show("x.roll(1, 0)", x.roll(1, 0))
    show("x.roll((1, -1), (0, 1))", x.roll((1, -1), (0, 1)))
    show("zyx.cat([x, x[:1]], dim=0)", zyx.cat([x, x[:1]], dim=0))
    show("x.triu(1)", x.triu(1))
    show("x.tril()", x.tril())
    mask = zyx.tensor([True, False, False, True])
    show("x.masked_fill(mask broadcast over rows, -1)", x.masked_fill(mask, -1.0))
    show("x.cumsum(1)", x.cumsum(1))
    ones = zyx.ones(1000, dtype=zyx.bfloat16)
    show("1000 bfloat16 ones: cumsum()[-1]  (float32 accumulation; bfloat16 would stop at 256)",
         ones.cumsum(0)[-1].item())

    dest = zyx.zeros(4, 5)
    zyx.write_slice(dest, zyx.ones(2, 3), [(1, 3), (1, 4)])
    show("write_slice(zeros(4, 5), ones(2, 3), [(1, 3), (1, 4)])", dest)

    ring = zyx.zeros(5, 2)
    position = zyx.tensor([4], dtype=zyx.int32)  # read by the kernel when it runs
    zyx.write_slice_rotating(ring, zyx.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]), 0, position)
    show("write_slice_rotating(zeros(5, 2), 3 rows, axis 0, position tensor [4])  (wraps to rows 4, 0, 1)", ring)

    cache = zyx.zeros(6, 2)
    zyx.write_slice_doff(cache, zyx.full((2, 2), 7.0), 0, zyx.tensor([3]))
    show("write_slice_doff(zeros(6, 2), 2 rows of 7, axis 0, offset tensor [3])", cache)
    zyx.write_slice_doff(cache, zyx.full((2, 2), 9.0), 0, zyx.tensor([5]))  # out of range on the device
    try:
        cache.numpy()
    except zyx.ContractError as exc:
        show("an out-of-range device offset is reported at the next read", exc)
    show("... and nothing was written", cache)

    y = zyx.zeros(3, 4)
    y[1] = 5.0
    y[:, ::2] = zyx.tensor([1.0, 2.0])
    show("y[1] = 5; y[:, ::2] = [1, 2]", y)

    try:
        zyx.write_slice(dest, zyx.ones(2, 3), [(1, 3), (3, 6)])
    except zyx.ContractError as exc:
        show("a bad range is refused before anything is written", exc)

    show("zyx.contracts()", zyx.contracts())
    flip = zyx.contracts.get("flip")
    show("flip.cost(outer=1, dim_size=1 << 20, inner=1, dtype_size=4)",
         flip.cost(outer=1, dim_size=1 << 20, inner=1, dtype_size=4))
    show("zyx.contracts.calibrate.cost(flip, ...) (predicted_s once calibrated)",
         zyx.contracts.calibrate.cost(flip, outer=1, dim_size=1 << 20, inner=1, dtype_size=4))


if __name__ == "__main__":
    main()
