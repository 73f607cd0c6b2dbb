"""Singular value decomposition: ``zyx.linalg.svdvals`` and ``zyx.linalg.svd`` (PyTorch's semantics).

The last two dims of the input are the matrix; the rest is a batch. The device kernel
(``zyx.kernels.svd``, one-sided Jacobi) decomposes dense (batch, N, M) inputs with M >= N whose
rows are the columns of the matrix: an (m, n) matrix with m >= n goes in as its transpose, one
with m < n as itself (then the kernel decomposes A^T = P S Q^T, so U = Q and Vh = P^T). The kernel
runs as lazy ``EXTERN`` graph nodes: the singular values node runs it, the U and Vh nodes read it
(so it runs first) and take the buffers it left behind.

float32 and float64 only: PyTorch's CPU SVD rejects float16 and bfloat16, and so does this
(``DTypeError``). A matrix with a NaN or infinite entry gets NaN singular values and vectors
(PyTorch returns NaN for infinities and raises for NaN). Gradients: PyTorch's rules (``svd_backward``):
of the singular values ``U diag(g) Vh``; through U and Vh the full real SVD rule (finite for distinct
non-zero singular values).
"""
from __future__ import annotations

import math
from typing import Any, NamedTuple

from zyx import dtype as dtypes
from zyx.backend.pool import Buffer
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.engine import is_grad_enabled, needs_grad, no_grad, record
from zyx.frontend.base import TensorBase, extern_tensor
from zyx.frontend.creation import eye, zeros
from zyx.kernels.svd import svd_batch


class SVD(NamedTuple):
    """``(U, S, Vh)`` of ``zyx.linalg.svd``: ``A = U @ diag(S) @ Vh``."""

    U: Any
    S: Any
    Vh: Any


def _check(a: Any, fn: str) -> None:
    if not isinstance(a, TensorBase):
        raise DTypeError(f"linalg.{fn}: expected a zyx.Tensor, got {type(a).__name__}")
    if a.ndim < 2:
        raise ShapeError(f"linalg.{fn}: expected a tensor of rank >= 2 (a matrix or a batch of them), got shape "
                         f"{a.shape}")
    if a.dtype not in (dtypes.float32, dtypes.float64):
        raise DTypeError(f"linalg.{fn}: expected a float32 or float64 input, got {a.dtype.name} (as PyTorch's CPU "
                         "SVD, no 16-bit floats; cast to float32)")


def _decompose(a: Any, uv: bool, full: bool) -> tuple[Any, Any, Any]:
    """The kernel's pending outputs for the batch-flattened ``a`` (nothing recorded for autograd):
    S (lead + (k,)) and, with ``uv``, U and Vh in ``a``'s layout."""
    *lead, m, n = a.shape
    batch, k = math.prod(lead), min(m, n)
    tall = m >= n
    big, small = (m, n) if tall else (n, m)
    pc = big if full else small
    with no_grad():
        x = (a.transpose(-2, -1) if tall else a).contiguous().reshape(batch, small, big)
    dt, dev, pinned = a.dtype, a.device, a.pinned
    size = dt.itemsize
    left: dict[str, Buffer] = {}

    def run(buffers: list[Buffer]) -> Buffer:
        s = dev.pool.allocate(batch * small * size)
        p = dev.pool.allocate(batch * pc * big * size) if uv else None
        q = dev.pool.allocate(batch * small * small * size) if uv else None
        svd_batch(dev, s, p, q, buffers[0], dt, batch, small, big, pc)
        if p is not None and q is not None:
            left["p"], left["q"] = p, q
        return s

    s = extern_tensor("linalg_svd", run, [x], dt, (batch, small), dev, pinned)
    if not uv:
        return s.reshape(*lead, k), None, None
    p = extern_tensor("linalg_svd_p", lambda buffers: left.pop("p"), [s], dt, (batch, pc, big), dev, pinned)
    q = extern_tensor("linalg_svd_q", lambda buffers: left.pop("q"), [s], dt, (batch, small, small), dev, pinned)
    if tall:  # A = P S Q^T: U = P (rows of p are its columns), Vh = Q^T = q
        u, vh = p.transpose(-2, -1), q
    else:  # A^T = P S Q^T: U = Q = q^T, Vh = P^T = p
        u, vh = q.transpose(-2, -1), p
    return s.reshape(*lead, k), u.reshape(*lead, *u.shape[1:]), vh.reshape(*lead, *vh.shape[1:])


def _empty(a: Any, uv: bool, full: bool) -> tuple[Any, Any, Any]:
    """An input with no elements: empty S; U and Vh identities (full) or empty, as PyTorch."""
    *lead, m, n = a.shape
    k = min(m, n)
    s = zeros(*lead, k, dtype=a.dtype, device=a.device)
    if not uv:
        return s, None, None

    def basis(r: int, c: int) -> Any:
        return eye(r, c, dtype=a.dtype, device=a.device).expand(*lead, r, c).contiguous()

    if full:
        return s, basis(m, m), basis(n, n)
    return s, basis(m, k), basis(k, n)


def _t(x: Any) -> Any:
    return x.transpose(-2, -1)


def svd_backward(gu: Any, gs: Any, gvh: Any, u: Any, s: Any, vh: Any) -> Any:
    """PyTorch's real SVD gradient for the reduced ``A = U diag(S) Vh`` (U (m, k), Vh (k, n)) given the
    gradients of any of U, S, Vh (None: zero). Finite only for distinct non-zero singular values when
    U or Vh get a gradient (the terms divide by s_j^2 - s_i^2 and by s), as PyTorch's."""
    m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
    if gu is None and gvh is None:
        return (u * gs.unsqueeze(-2)) @ vh
    eye_k = eye(k, dtype=s.dtype, device=s.device)
    s2 = s * s
    e = s2.unsqueeze(-2) - s2.unsqueeze(-1) + eye_k  # e[i, j] = s_j^2 - s_i^2, 1 on the diagonal
    v, gv = _t(vh), None if gvh is None else _t(gvh)
    uhgu = None if gu is None else _t(u) @ gu
    vhgv = None if gv is None else vh @ gv
    if uhgu is not None:
        uhgu = uhgu - _t(uhgu)
    if vhgv is not None:
        vhgv = vhgv - _t(vhgv)
    if uhgu is not None and vhgv is not None:
        inner = (uhgu * s.unsqueeze(-2) + s.unsqueeze(-1) * vhgv) / e
    elif uhgu is not None:
        inner = (uhgu / e) * s.unsqueeze(-2)
    else:
        inner = s.unsqueeze(-1) * (vhgv / e)
    if gs is not None:
        inner = inner + gs.unsqueeze(-1) * eye_k
    if m > n and gu is not None:
        ga = u @ inner
        gu_sinv = gu / s.unsqueeze(-2)
        ga = ga + gu_sinv - u @ (_t(u) @ gu_sinv)
        return ga @ vh
    if m < n and gv is not None:
        ga = inner @ vh
        gv_sinv = gv / s.unsqueeze(-2)
        ga = ga + _t(gv_sinv) - (_t(gv_sinv) @ v) @ vh
        return u @ ga
    return u @ (inner @ vh) if m >= n else (u @ inner) @ vh


def _record(a: Any, u: Any, s: Any, vh: Any, ur: Any, vhr: Any, k: int) -> None:
    """Record the gradient rules of the outputs: S, U and Vh each carry their own share of
    ``svd_backward`` (it is linear in the three gradients, so the shares add up to the whole).
    ``ur``, ``vhr``: the reduced U and Vh; of full ones only the first k columns / rows get a gradient,
    as PyTorch's. The outputs are saved detached (saving one with its own node would be a reference
    cycle); under ``create_graph`` the rules decompose ``a`` again, with history."""
    def rule(which: str) -> Any:
        def fn(g: Any, a: Any, ur: Any, s: Any, vhr: Any) -> tuple:
            if is_grad_enabled():  # create_graph: the factors with their own history
                ur, s, vhr = svd(a, full_matrices=False)
            if which == "S":
                return (svd_backward(None, g, None, ur, s, vhr),)
            if which == "U":
                return (svd_backward(g[..., :, :k] if g.shape[-1] != k else g, None, None, ur, s, vhr),)
            return (svd_backward(None, None, g[..., :k, :] if g.shape[-2] != k else g, ur, s, vhr),)
        return fn

    saved = [a, ur.detach(), s.detach(), vhr.detach()]
    record("linalg_svd_S", s, [a], rule("S"), saved)
    if u is not None:
        record("linalg_svd_U", u, [a], rule("U"), saved)
        record("linalg_svd_Vh", vh, [a], rule("Vh"), saved)


def svdvals(a: Any) -> Any:
    """The singular values of each matrix (the last two dims), descending: shape ``(*, min(m, n))``.
    Gradient: PyTorch's ``U diag(g) Vh``."""
    _check(a, "svdvals")
    grad = needs_grad(a)
    if a.numel() == 0:
        s, u, vh = _empty(a, grad, False)
    else:
        s, u, vh = _decompose(a, grad, False)
    if grad:
        _record(a, None, s, None, u, vh, s.shape[-1])
    return s


def svd(a: Any, full_matrices: bool = True) -> SVD:
    """``A = U diag(S) Vh`` for each matrix (the last two dims): U ``(*, m, m)`` (``(*, m, k)`` when not
    ``full_matrices``, k = min(m, n)), S ``(*, k)`` descending, Vh ``(*, n, n)`` (``(*, k, n)``). The
    vectors of repeated or zero singular values are one valid choice (PyTorch's may differ). Gradients
    are PyTorch's (through U and Vh finite only for distinct non-zero singular values; of full U and Vh
    only the first k columns / rows count)."""
    _check(a, "svd")
    if a.numel() == 0:
        s, u, vh = _empty(a, True, bool(full_matrices))
    else:
        s, u, vh = _decompose(a, True, bool(full_matrices))
    if needs_grad(a):
        k = s.shape[-1]
        with no_grad():  # the reduced vectors: full U's first k columns, full Vh's first k rows
            ur, vhr = u[..., :, :k], vh[..., :k, :]
        _record(a, u, s, vh, ur, vhr, k)
    return SVD(u, s, vh)
