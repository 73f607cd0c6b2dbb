"""The gradients of the scans beyond cumsum (cumprod, cummax/cummin, logcumsumexp), composed
from frontend ops (each is lazy, so a backward pass fuses like any other graph).

Each rule takes the output gradient ``g``, the input ``x`` and the forward results, and
returns the input's gradient equal to PyTorch's (up to rounding): cumprod's also where
``x`` has zeros, cummax/cummin's flows to the positions the indices name.
"""
from __future__ import annotations

from typing import Any

from zyx.frontend.creation import arange
from zyx.frontend.elementwise import where
from zyx.frontend.index_access import take_rows


def _reverse_cumsum(t: Any, dim: int) -> Any:
    return t.flip(dim).cumsum(dim).flip(dim)


def cumprod_grad(g: Any, x: Any, out: Any, dim: int) -> Any:
    """d(sum g * cumprod(x)) / dx.

    Lane by lane, with z the first zero of x: before z, x_k divides out the sum of g_j * out_j
    over j >= k (later terms vanish with out_j); at z, the products skip x_z, which is
    cumprod of x with that zero replaced by 1; after z every product holds x_z = 0.
    """
    zero = x == 0
    seen = zero.cast(x.dtype).cumsum(dim)  # zeros up to and including k (exact small counts)
    before = seen == 0
    first = zero & (seen == 1)
    safe = where(before, x, 1.0)
    ahead = _reverse_cumsum(g * out, dim) / safe
    skipped = where(first, 1.0, x).cumprod(dim)
    at_zero = _reverse_cumsum(g * skipped, dim)
    return where(before, ahead, where(first, at_zero, 0.0))


def logcumsumexp_grad(g: Any, x: Any, out: Any, dim: int) -> Any:
    """d(sum g * logcumsumexp(x)) / dx = exp(x_k) * sum_{j >= k} g_j exp(-out_j), taken in the log
    domain for the positive and the negative parts of g separately (no overflow)."""
    import ml_dtypes

    lowest = float(ml_dtypes.finfo(x.dtype.numpy).min)
    log_abs = g.abs().log()
    parts = []
    for mask in (g > 0, g < 0):
        logs = where(mask, log_abs, lowest) - out
        parts.append((logs.flip(dim).logcumsumexp(dim).flip(dim) + x).exp())
    return parts[0] - parts[1]


def extremum_grad(g: Any, indices: Any, dim: int) -> Any:
    """The gradient of cummax/cummin's values: each g_j goes to position indices_j of its lane.

    The indices never decrease along a lane and index k holds from position k (where
    indices_k == k, a "mark") to just before the next mark, so position k receives
    T_k - T_{k+1} with T_k the reverse cumsum of g at the first mark at or after k.
    """
    n = g.shape[dim]
    last = g.ndim - 1
    gl, il = g.transpose(dim, last), indices.transpose(dim, last)
    pos = arange(n, device=g.device)
    marked = il == pos
    # first mark at or after k: a reverse running minimum of the marked positions (n: none)
    nxt = where(marked, pos, n).flip(last).cummin(last).values.flip(last)
    tail = _reverse_cumsum(gl, last).pad((0, 1))  # tail[..., n] = 0
    rows = tail.reshape(-1, 1)
    lane = arange(rows.shape[0] // (n + 1), device=g.device).reshape(*gl.shape[:-1], 1) * (n + 1)
    t = take_rows(rows.detach(), (lane + nxt).detach()).reshape(*gl.shape)
    grad = t - t.pad((0, 1)).narrow(last, 1, n)
    return grad.transpose(dim, last)
