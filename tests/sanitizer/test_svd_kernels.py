"""The one-sided Jacobi SVD kernel (templates/svd.cl.mako) under Oclgrind on tiny odd batches (fewer
matrices than a work-group: idle work-items), tall and wide, with a rank-deficient and a zero matrix
(the completion of U) and a NaN matrix, and one with rows padded to whole vectors and two-row sweep
steps; compared with NumPy's SVD."""
from __future__ import annotations

import numpy as np

import zyx


def _batch(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    a = np.random.default_rng(6).standard_normal(shape)
    a[1] = np.outer(a[1, :, 0], a[1, 0, :])  # rank 1
    a[2] = 0
    return a.astype(dtype)


def test_svd_full_and_values(sim, needs):
    # (3, 9, 6): six rows, so the sweeps' two-row steps rotate two pairs at once; 9 pads to 16
    for shape, dt, full in (((3, 5, 3), zyx.float32, True), ((3, 2, 4), zyx.float64, False),
                            ((3, 9, 6), zyx.float32, False)):
        needs(dt)
        a = _batch(shape, dt.name)
        u, s, vh = zyx.linalg.svd(zyx.from_numpy(a, device=sim), full_matrices=full)
        un, sn, vhn = u.numpy(), s.numpy(), vh.numpy()
        tol = 1e-5 if dt == zyx.float32 else 1e-12
        np.testing.assert_allclose(sn, np.linalg.svd(a, compute_uv=False), atol=tol)
        k = sn.shape[-1]
        np.testing.assert_allclose((un[..., :k] * sn[..., None, :]) @ vhn[..., :k, :], a, atol=tol * 10)
        for gram in (np.swapaxes(un, -1, -2) @ un, vhn @ np.swapaxes(vhn, -1, -2)):
            np.testing.assert_allclose(gram, np.broadcast_to(np.eye(gram.shape[-1]), gram.shape), atol=tol * 10)
    bad = _batch((3, 4, 3), "float32")
    bad[0, 1, 2] = np.nan
    got = zyx.linalg.svdvals(zyx.from_numpy(bad, device=sim)).numpy()
    assert np.isnan(got[0]).all()
    np.testing.assert_allclose(got[1:], np.linalg.svd(bad[1:], compute_uv=False), atol=1e-5)
