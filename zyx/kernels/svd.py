"""Singular values (and vectors) of a batch of matrices: the launcher of ``templates/svd.cl.mako``.

One-sided Jacobi (Hestenes): one work-item per matrix rotates pairs of the matrix's columns until
they are orthogonal; the column norms are the singular values. The kernel pads the columns to whole
vectors, pivots (de Rijk) and runs several disjoint pairs per step so their latencies overlap. The
launcher takes a dense (batch, N, M) buffer with M >= N (row j: column j of the M x N matrix
decomposed), enqueues asynchronously and allocates its own scratch; ``zyx.frontend.svd`` runs it as
an ``EXTERN`` graph node and maps the general (m, n) case onto it by transposing.
"""
from __future__ import annotations

import numpy as np

from zyx import settings
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.codegen.render import render
from zyx.dtype import DType
from zyx.kernels.launch import run

#: The most sweeps over all column pairs (cyclic Jacobi converges quadratically: well-conditioned
#: 64 x 64 matrices take 6-10; the cap only bounds the work for inputs that never settle).
MAX_SWEEPS = 60
#: CPU work-group size: matrices per group (each work-item runs its own matrix serially).
CPU_GROUP = 1
#: The widest vector the rotations and dot products use (lanes; 8 x float32 is one AVX register).
MAX_LANES = 8
#: Rows a sweep step takes at a time: the pairs (i + r, k - r) of one step share no row, so their
#: dependency chains (dot product, test, rotation) overlap in the core.
ROWS = 4


def lanes_for(m: int) -> int:
    """The vector width for rows of ``m`` elements: the widest of 1, 2, 4, 8 not wider than ``m`` (tiny
    matrices keep narrow vectors instead of rows of mostly padding)."""
    lanes = 1
    while lanes < MAX_LANES and lanes * 2 <= m:
        lanes *= 2
    return lanes


def svd_batch(device: Device, s: Buffer, p: Buffer | None, q: Buffer | None, x: Buffer, dtype: DType, batch: int,
              n: int, m: int, pc: int) -> None:
    """Decompose each dense (n, m) ``x[b]`` (m >= n; its rows are the columns of B = x[b]^T): write
    the descending singular values ``s`` (batch, n) and, when ``p`` and ``q`` are given, ``p`` (batch,
    pc, m) whose rows are B's left singular vectors (completed to pc orthonormal rows) and ``q``
    (batch, n, n), the transposed right singular vectors (B = p^T diag(s) q)."""
    if m < n:
        raise ValueError(f"internal: svd_batch expects m >= n, got n={n}, m={m}")
    if batch * n == 0:
        return
    uv = p is not None and q is not None
    lanes = lanes_for(m)
    source = render("svd.cl.mako", dtype=dtype, uv=uv, max_sweeps=MAX_SWEEPS, VW=lanes, ROWS=ROWS)
    size = dtype.itemsize
    mp, np_ = -(-m // lanes) * lanes, -(-n // lanes) * lanes  # rows padded to whole vectors
    work = device.pool.allocate(batch * n * mp * size)
    norms = device.pool.allocate(batch * n * size)
    order = device.pool.allocate(batch * n * 4)
    vwork = device.pool.allocate(batch * n * np_ * size) if uv else norms  # norms: a stand-in, never read
    want = CPU_GROUP if settings.heuristics_kind(device) != "gpu" else 32
    u32 = np.uint32
    run(device, source, "zyx_svd_jacobi", (batch,), want,
        [s.cl, (p or s).cl, (q or s).cl, x.cl, work.cl, vwork.cl, norms.cl, order.cl, u32(batch), u32(n),
         u32(m), u32(pc), u32(mp), u32(np_)])
