"""Vector and matrix norms (``zyx.linalg.norm``, ``vector_norm``, ``matrix_norm``), composed from
reductions so they fuse; PyTorch's semantics and gradients (zero at a zero vector, ties of the
max/min norms sharing the gradient). The matrix norms ``ord=2``, ``-2`` and ``"nuc"`` are the max,
min and sum of the singular values (``zyx.frontend.svd.svdvals``, its gradient ``U diag(g) Vh``), as
PyTorch computes them; like PyTorch they reject 16-bit float inputs."""
from __future__ import annotations

import math
from typing import Any

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend.autograd.rules import with_gradient
from zyx.frontend.elementwise import unary, where
from zyx.frontend.reduce import _dims, reduce
from zyx.frontend.svd import svdvals
from zyx.ir.view import normalize_dim
from zyx.op import Op

_SVD_ORDS = (2, -2, "nuc")


def _float_input(x: Any, dtype: Any, fn: str) -> tuple[Any, Any]:
    """The working tensor (16-bit floats in float32) and the result dtype."""
    if dtype is not None:
        x = x.cast(dtypes.to_dtype(dtype))
    if not x.dtype.is_float:
        raise DTypeError(f"linalg.{fn}: expected a floating point input, got {x.dtype.name}")
    return (x.cast(dtypes.float32) if x.dtype.itemsize < 4 else x), x.dtype


def vector_norm(x: Any, ord: Any = 2, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:  # noqa: A002
    """``(sum |x|^ord)^(1/ord)`` over ``dim`` (all dims when None); ``ord`` inf/-inf: max/min of
    ``|x|``, 0: the count of non-zeros."""
    w, out_dt = _float_input(x, dtype, "vector_norm")
    dims = _dims(w, dim) if w.ndim else ()
    if w.numel() == 0 and ord in (math.inf, -math.inf) and any(w.shape[d] == 0 for d in dims):
        raise ShapeError(f"linalg.vector_norm: cannot compute the {ord} norm of an empty tensor over a dim of "
                         "size 0 (the max/min of nothing)")
    a = unary(Op.ABS, w)
    if ord == math.inf:
        out = reduce(a, Op.MAX, dims, keepdim)
    elif ord == -math.inf:
        out = reduce(a, Op.MIN, dims, keepdim)
    elif ord == 0:
        out = reduce((w != 0).cast(w.dtype), Op.SUM, dims, keepdim)
    elif ord == 1:
        out = reduce(a, Op.SUM, dims, keepdim)
    elif isinstance(ord, (int, float)) and not isinstance(ord, bool):
        out = _p_norm(w, float(ord), dims, keepdim)
    else:
        raise ShapeError(f"linalg.vector_norm: ord must be a number (or inf, -inf), got {ord!r}")
    return out.cast(out_dt)


def _p_norm(w: Any, p: float, dims: tuple[int, ...], keepdim: bool) -> Any:
    """``(sum |w|^p)^(1/p)`` with PyTorch's gradient ``w |w|^(p-2) g / norm^(p-1)``, zero where the
    norm is 0 (the composed chain rule would give NaN there)."""
    def forward(t: Any) -> Any:
        a = unary(Op.ABS, t)
        if p == 2:
            return unary(Op.SQRT, reduce(a * a, Op.SUM, dims, keepdim))
        return reduce(a ** p, Op.SUM, dims, keepdim) ** (1.0 / p)

    def backward(g: Any, t: Any) -> tuple:
        norm = forward(t)
        kept = tuple(1 if i in dims else s for i, s in enumerate(t.shape))
        n, gk = norm.reshape(kept), g.reshape(kept)
        if p == 2:
            scale = t / n
        else:
            a = unary(Op.ABS, t)
            scale = t * a ** (p - 2) / n ** (p - 1)
        return (where(n == 0, 0.0, scale * gk),)

    return with_gradient("linalg_vector_norm", [w], forward, backward)


def matrix_norm(x: Any, ord: Any = "fro", dim: Any = (-2, -1), keepdim: bool = False,  # noqa: A002
                dtype: Any = None) -> Any:
    """``"fro"`` (root of the sum of squares), 1/-1 (max/min column sum of ``|x|``), inf/-inf (max/min
    row sum) over the two dims ``dim``; 2, -2, ``"nuc"``: the largest, smallest and sum of the singular
    values (float32/float64 inputs only, as PyTorch)."""
    if x.ndim < 2:
        raise ShapeError(f"linalg.matrix_norm: expected a tensor of rank >= 2, got shape {x.shape}")
    if not isinstance(dim, (tuple, list)) or len(dim) != 2:
        raise ShapeError(f"linalg.matrix_norm: dim must be a pair of dims, got {dim!r}")
    r, c = (normalize_dim(d, x.ndim) for d in dim)
    if r == c:
        raise ShapeError(f"linalg.matrix_norm: dims must be different, got {tuple(dim)}")
    if ord in _SVD_ORDS:
        return _svd_norm(x, ord, r, c, keepdim, dtype)
    if ord == "fro":
        return vector_norm(x, 2, (r, c), keepdim, dtype)
    w, out_dt = _float_input(x, dtype, "matrix_norm")
    if ord in (1, -1):
        inner, outer = r, c  # column sums, then the max/min over columns
    elif ord in (math.inf, -math.inf):
        inner, outer = c, r
    else:
        raise ShapeError(f"linalg.matrix_norm: ord must be 'fro', 'nuc', 1, -1, 2, -2, inf or -inf, got {ord!r}")
    if w.numel() == 0:
        raise ShapeError(f"linalg.matrix_norm: ord={ord!r} of an empty matrix of shape {x.shape} is undefined")
    sums = reduce(unary(Op.ABS, w), Op.SUM, (inner,), True)
    out = reduce(sums, Op.MAX if ord in (1, math.inf) else Op.MIN, (outer,), True)
    if not keepdim:
        out = out.reshape(tuple(s for i, s in enumerate(out.shape) if i not in (r, c)))
    return out.cast(out_dt)


def _svd_norm(x: Any, ord: Any, r: int, c: int, keepdim: bool, dtype: Any) -> Any:  # noqa: A002
    """Matrix norm ``ord`` 2 / -2 / ``"nuc"`` over dims ``(r, c)``: the max / min / sum of the singular
    values (the max and min share the gradient among ties, as PyTorch's amax/amin)."""
    if dtype is not None:
        want = dtypes.to_dtype(dtype)
        if x.dtype.is_float and want.itemsize < x.dtype.itemsize:
            raise DTypeError(f"linalg.matrix_norm: the input's dtype {x.dtype.name} cannot be converted without "
                             f"narrowing to dtype={want.name}")
        x = x.cast(want)
    if x.dtype.is_float and x.dtype.itemsize < 4:
        raise DTypeError(f"linalg.matrix_norm: ord={ord!r} needs float32 or float64, got {x.dtype.name} (as "
                         "PyTorch, no 16-bit floats)")
    others = tuple(i for i in range(x.ndim) if i not in (r, c))
    s = svdvals(x.permute(*others, r, c))
    if s.shape[-1] == 0 and ord == -2:
        raise ShapeError(f"linalg.matrix_norm: ord=-2 of an empty matrix (dims of sizes {x.shape[r]}, {x.shape[c]}) "
                         "is undefined (the min of no singular values)")
    if s.shape[-1] == 0:
        out = reduce(s, Op.SUM, (s.ndim - 1,), False)  # PyTorch: 0 for 2 and "nuc"
    else:
        out = reduce(s, {2: Op.MAX, -2: Op.MIN, "nuc": Op.SUM}[ord], (s.ndim - 1,), False)
    if keepdim:
        out = out.reshape(tuple(1 if i in (r, c) else d for i, d in enumerate(x.shape)))
    return out


def norm(x: Any, ord: Any = None, dim: Any = None, keepdim: bool = False, dtype: Any = None) -> Any:  # noqa: A002
    """``torch.linalg.norm``: with ``ord=None`` the 2-norm of the flattened input (over ``dim`` when
    given); a vector norm for a 1-D input or one ``dim``, a matrix norm for a 2-D input or two dims."""
    if isinstance(dim, int):
        dim = (dim,)
    if ord is None:
        return vector_norm(x, 2, dim, keepdim, dtype)
    if dim is None:
        if x.ndim == 1:
            return vector_norm(x, ord, None, keepdim, dtype)
        if x.ndim == 2:
            return matrix_norm(x, ord, (0, 1), keepdim, dtype)
        raise ShapeError(f"linalg.norm: input of rank {x.ndim} with ord={ord!r} needs dim (1 or 2 dims), as "
                         "PyTorch")
    dim = tuple(dim)
    if len(dim) == 1:
        return vector_norm(x, ord, dim, keepdim, dtype)
    if len(dim) == 2:
        return matrix_norm(x, ord, dim, keepdim, dtype)
    raise ShapeError(f"linalg.norm: dim must name 1 or 2 dims, got {dim}")
