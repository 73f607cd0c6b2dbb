"""A sliding-window KV cache written token by token with zyx.write_slice_rotating.

The cache keeps the last WINDOW tokens' keys in a ring of WINDOW rows. Each step writes
one token's (heads, head_dim) row at ring slot ``position % WINDOW``; the position lives
on the device (a view into an int32 tensor of positions), so the kernel reads it when it
runs and the host never reads anything back until the final check. A prefill of several
tokens at once wraps around the end of the ring inside one launch.

The result is checked against a NumPy ring buffer; the script exits non-zero on mismatch.
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

WINDOW, HEADS, HEAD_DIM = 8, 2, 4
PREFILL, DECODE = 5, 19


def main() -> int:
    device = zyx.default_device()
    rng = np.random.default_rng(0)
    tokens = rng.standard_normal((PREFILL + DECODE, HEADS, HEAD_DIM)).astype(np.float32)
    start = 6  # the stream begins at ring slot 6, so the prefill wraps to slots 0, 1, 2
    # Token t's absolute position start + t, kept on the device.
    positions = zyx.arange(start, start + PREFILL + DECODE, dtype=zyx.int32, device=device)

    cache = zyx.zeros(WINDOW, HEADS, HEAD_DIM, device=device)
    ring = np.zeros((WINDOW, HEADS, HEAD_DIM), np.float32)

    # Prefill: PREFILL tokens in one launch.
    zyx.write_slice_rotating(cache, zyx.tensor(tokens[:PREFILL], device=device), 0, positions[0])
    for t in range(PREFILL):
        ring[(start + t) % WINDOW] = tokens[t]

    # Decode: one token per step, its position read by the kernel from device memory.
    for t in range(PREFILL, PREFILL + DECODE):
        zyx.write_slice_rotating(cache, zyx.tensor(tokens[t:t + 1], device=device), 0, positions[t])
        ring[(start + t) % WINDOW] = tokens[t]

    got = cache.numpy()
    if not np.array_equal(got, ring):
        bad = np.argwhere(got != ring)
        print(f"mismatch: {len(bad)} elements differ, first at {tuple(bad[0])}")
        return 1
    print(f"match: {PREFILL} prefill + {DECODE} decode tokens in a ring of {WINDOW} rows on {device}")
    print("ring slot of the newest token:", (start + PREFILL + DECODE - 1) % WINDOW)
    return 0


if __name__ == "__main__":
    sys.exit(main())
