"""``zyx.nn.functional`` losses (API.md "Convolution, pooling and resampling", the losses list): regression
(mse, l1, smooth_l1, huber), classification (nll_loss, cross_entropy with weight / ignore_index /
label_smoothing / class-probability targets, binary_cross_entropy and its logits form), kl_div, the embedding
and ranking losses, cosine_similarity and pairwise_distance.

Composed from lazy elementwise ops and reductions, so each fuses into few kernels and gets its gradient by
composition. A class index picks its log-probability with a gather (``frontend.indexing``: one load per
target, its gradient a scatter), so a target outside ``[0, C)`` (other than ``ignore_index``) raises
``IndexOutOfRange`` (an ``IndexError``) when values are read, as PyTorch: the gather checks it on the
device. ``binary_cross_entropy`` alone has its own gradient rule (PyTorch's, through the log clamp at -100);
its input and target outside [0, 1] (or NaN) raise ``ShapeError`` when values are read, checked on the device
the same way.
"""
from __future__ import annotations

from typing import Any

from zyx import dtype as dtypes
from zyx.errors import DTypeError, ShapeError
from zyx.frontend import reduce as R
from zyx.frontend.autograd.rules import with_gradient
from zyx.frontend.elementwise import binary, unary, where
from zyx.frontend.elementwise_math import log1p
from zyx.frontend.softmax import log_softmax
from zyx.nn.functional_activations import logsigmoid, vector_norm
from zyx.op import Op

_REDUCTIONS = ("mean", "sum", "none")


def _reduce(loss: Any, reduction: str, what: str):
    if reduction == "mean":
        return R.mean(loss)
    if reduction == "sum":
        return R.reduce(loss, Op.SUM, None).cast(loss.dtype)
    if reduction == "none":
        return loss
    raise ShapeError(f"{what}: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")


def mse_loss(input: Any, target: Any, reduction: str = "mean"):  # noqa: A002 - PyTorch's name
    """``(input - target) ** 2``, reduced."""
    d = input - target
    return _reduce(d * d, reduction, "mse_loss")


def l1_loss(input: Any, target: Any, reduction: str = "mean"):  # noqa: A002 - PyTorch's name
    """``|input - target|``, reduced."""
    return _reduce(unary(Op.ABS, input - target), reduction, "l1_loss")


def smooth_l1_loss(input: Any, target: Any, reduction: str = "mean", beta: float = 1.0):  # noqa: A002
    """``0.5 * d**2 / beta`` where ``d = |input - target| < beta``, else ``d - 0.5 * beta`` (l1 when beta is 0)."""
    if beta < 0:
        raise ShapeError(f"smooth_l1_loss: beta must be non-negative, got {beta}")
    d = unary(Op.ABS, input - target)
    if beta == 0:
        return _reduce(d, reduction, "smooth_l1_loss")
    return _reduce(where(binary(Op.LT, d, beta), d * 0.5 * d / beta, d - 0.5 * beta), reduction, "smooth_l1_loss")


def huber_loss(input: Any, target: Any, reduction: str = "mean", delta: float = 1.0):  # noqa: A002
    """``0.5 * d**2`` where ``d = |input - target| < delta``, else ``delta * (d - 0.5 * delta)``."""
    if delta <= 0:
        raise ShapeError(f"huber_loss: delta must be positive, got {delta}")
    d = unary(Op.ABS, input - target)
    return _reduce(where(binary(Op.LT, d, delta), d * 0.5 * d, (d - 0.5 * delta) * delta), reduction, "huber_loss")


def _class_layout(x: Any, target: Any, what: str) -> int:
    """The class dim of input ``x``, after checking that ``target`` holds integer class indices shaped like
    ``x`` without it."""
    if not target.dtype.is_int:
        raise DTypeError(f"{what}: expected integer class indices, got {target.dtype.name}")
    cdim = 0 if x.ndim == 1 else 1
    want = x.shape[:cdim] + x.shape[cdim + 1:]
    if tuple(target.shape) != want:
        raise ShapeError(f"{what}: target shape {target.shape} does not match input shape {x.shape} "
                         f"(expected {want}: the input without its class dim {cdim})")
    return cdim


def _along(weight: Any, x: Any, cdim: int):
    """A per-class weight (C,) broadcastable along ``x``'s class dim."""
    c = x.shape[cdim]
    if tuple(weight.shape) != (c,):
        raise ShapeError(f"weight must have shape ({c},) (one per class), got {weight.shape}")
    return weight.reshape(c, *([1] * (x.ndim - cdim - 1)))


def _classes(x: Any, cdim: int, dtype: Any = None):
    """The class numbers ``0..C-1`` (int64, or ``dtype``) laid along ``x``'s class dim (shape (C, 1, ...))."""
    from zyx.frontend.creation import arange, pinned_as

    c = x.shape[cdim]
    return pinned_as(arange(c, dtype=dtype, device=x.device), x).reshape(c, *([1] * (x.ndim - cdim - 1)))


def _pick(x: Any, cdim: int, target: Any, valid: Any):
    """``x[n, target[n], ...]`` along the class dim ``cdim``, shaped like ``target``: a gather, so a target
    outside ``[0, C)`` where ``valid`` (not ``ignore_index``) raises ``IndexOutOfRange`` at readback; an
    ignored target reads class 0 (its loss is masked to 0 after). Its gradient puts ``g`` where the class
    number equals the target (elementwise, so it fuses with the log_softmax gradient; a gather's own rule
    would be a scatter into zeros, two more kernels)."""
    from zyx.frontend.autograd import engine as autograd
    from zyx.frontend.gather_scatter import gather

    safe = where(valid, target, 0).unsqueeze(cdim)
    if not autograd.needs_grad(x):
        return gather(x, cdim, safe).squeeze(cdim)
    with autograd.no_grad():
        out = gather(x, cdim, safe).squeeze(cdim)

    def fn(g: Any, t: Any) -> tuple:
        # the raw target (not ``safe``, which would then be stored by its own kernel): an ignored target's
        # ``g`` is 0 (its loss is masked), so where it points does not matter
        if g.dtype.name in ("float32", "float64") and x.shape[cdim] <= 1 << 24:
            # class numbers compared as floats (exact below 2**24), the targets converted by a kernel of their
            # own: the one-hot kernel then holds float values only and gets explicit vectors on CPUs
            t, classes = t.cast(g.dtype).realize(), _classes(x, cdim, g.dtype)
        else:
            classes = _classes(x, cdim)
        return (where(binary(Op.EQ, t.unsqueeze(cdim), classes), g.unsqueeze(cdim), 0.0),)

    return autograd.record("nll_pick", out, [x], fn, [target])


def _class_weight(weight: Any, x: Any, cdim: int, target: Any, valid: Any):
    """``weight[target]`` in ``x``'s dtype, shaped like ``target`` (a gather, as ``_pick``)."""
    from zyx.frontend.gather_scatter import gather

    w = _along(weight, x, cdim).reshape(x.shape[cdim])
    flat = gather(w, 0, where(valid, target, 0).reshape(-1))
    return flat.reshape(target.shape).cast(x.dtype)


def nll_loss(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,  # noqa: A002
             reduction: str = "mean"):
    """``-weight[t] * input[n, t]`` for log-probabilities ``input`` (N, C) / (N, C, d1, ...) / (C,) and class
    indices ``target``; targets equal to ``ignore_index`` contribute 0, and ``mean`` divides by the summed
    weight of the others (NaN when there are none, as PyTorch); any other target outside ``[0, C)`` raises
    ``IndexOutOfRange`` (an ``IndexError``) when values are read."""
    if reduction not in _REDUCTIONS:
        raise ShapeError(f"nll_loss: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    cdim = _class_layout(input, target, "nll_loss")
    valid = binary(Op.NE, target, ignore_index)
    picked = _pick(input, cdim, target, valid)
    if weight is not None:
        w = _class_weight(weight, input, cdim, target, valid)
        loss = where(valid, -(picked * w), 0.0)
    else:
        w = None
        loss = where(valid, -picked, 0.0)
    if reduction == "none":
        return loss
    total = R.reduce(loss, Op.SUM, None).cast(input.dtype)
    if reduction == "sum":
        return total
    denom = valid.cast(input.dtype) if w is None else where(valid, w, 0.0)
    return total / R.reduce(denom, Op.SUM, None).cast(input.dtype)


def cross_entropy(input: Any, target: Any, weight: Any = None, ignore_index: int = -100,  # noqa: A002
                  reduction: str = "mean", label_smoothing: float = 0.0):
    """``nll_loss(log_softmax(input, class dim), target)`` for class indices, or ``-sum(target * log_softmax)``
    for class probabilities (``target`` shaped like ``input``), with PyTorch's weight, ignore_index and
    label_smoothing rules."""
    if reduction not in _REDUCTIONS:
        raise ShapeError(f"cross_entropy: reduction must be 'mean', 'sum' or 'none', got {reduction!r}")
    if not 0.0 <= label_smoothing <= 1.0:
        raise ShapeError(f"cross_entropy: label_smoothing must be in [0, 1], got {label_smoothing}")
    cdim = 0 if input.ndim == 1 else 1
    logp = log_softmax(input, cdim)
    n_classes = input.shape[cdim]
    if not target.dtype.is_int:  # class probabilities
        if tuple(target.shape) != tuple(input.shape):
            raise ShapeError(f"cross_entropy: probability targets must have the input's shape {input.shape}, "
                             f"got {target.shape}")
        if label_smoothing > 0:
            target = target * (1.0 - label_smoothing) + label_smoothing / n_classes
        prod = logp * target
        if weight is not None:
            prod = prod * _along(weight, input, cdim)
        loss = -R.reduce(prod, Op.SUM, cdim).cast(logp.dtype)
        if reduction == "mean":
            n = input.numel() // n_classes if n_classes else 0
            return R.reduce(loss, Op.SUM, None).cast(loss.dtype) / n if n else R.mean(loss)
        return _reduce(loss, reduction, "cross_entropy")
    nll = nll_loss(logp, target, weight, ignore_index, reduction)
    if label_smoothing == 0:
        return nll
    keep = binary(Op.NE, target, ignore_index)
    spread = logp * _along(weight, input, cdim) if weight is not None else logp
    smooth = where(keep, -R.reduce(spread, Op.SUM, cdim).cast(logp.dtype), 0.0)
    if reduction == "sum":
        smooth = R.reduce(smooth, Op.SUM, None).cast(logp.dtype)
    elif reduction == "mean":
        if weight is not None:
            w = _class_weight(weight, input, cdim, target, keep)
            denom = R.reduce(where(keep, w, 0.0), Op.SUM, None)
        else:
            denom = R.reduce(keep.cast(logp.dtype), Op.SUM, None)
        smooth = R.reduce(smooth, Op.SUM, None).cast(logp.dtype) / denom.cast(logp.dtype)
    return nll * (1.0 - label_smoothing) + smooth * (label_smoothing / n_classes)


def _bce_terms(x: Any):
    return binary(Op.MAXIMUM, log1p(-x), -100.0), binary(Op.MAXIMUM, unary(Op.LOG, x), -100.0)


def _checked(x: Any, y: Any) -> tuple[Any, Any]:
    """Input and target passed through the device-side check PyTorch makes on the host (each in [0, 1], NaN
    refused): the kernel that reads them sets an error-flag bit, raised as ``ShapeError`` (a RuntimeError, as
    PyTorch's) at the latest when values are read, with no sync of its own; the failing elements read as NaN."""
    if not x.dtype.is_float:  # the check is a float op; integer probabilities compute in float32 anyway
        x, y = x.cast(dtypes.float32), y.cast(dtypes.float32)
    return unary(Op.CHECK_PROB_INPUT, x), unary(Op.CHECK_PROB_TARGET, y)


def _bce(x: Any, y: Any):
    x, y = _checked(x, y)
    log_not, log_x = _bce_terms(x)
    return (y - 1.0) * log_not - y * log_x


def _bce_grads(g: Any, x: Any, y: Any) -> tuple:
    x, y = _checked(x, y)  # a gradient read without the loss checks the values too
    dx = g * (x - y) / binary(Op.MAXIMUM, (1.0 - x) * x, 1e-12)
    log_not, log_x = _bce_terms(x)
    return dx, g * (log_not - log_x)


def binary_cross_entropy(input: Any, target: Any, weight: Any = None, reduction: str = "mean"):  # noqa: A002
    """``-(target * log(input) + (1 - target) * log(1 - input))`` for probabilities ``input``, each log
    clamped at -100 (so 0 and 1 give finite losses and gradients, as PyTorch)."""
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"binary_cross_entropy: target shape {target.shape} must equal input shape {input.shape}")
    loss = with_gradient("binary_cross_entropy", (input, target.cast(input.dtype)), _bce, _bce_grads)
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy")


def binary_cross_entropy_with_logits(input: Any, target: Any, weight: Any = None,  # noqa: A002
                                     reduction: str = "mean", pos_weight: Any = None):
    """``binary_cross_entropy(sigmoid(input), target)`` computed stably from the logits:
    ``(1 - target) * input - (1 + (pos_weight - 1) * target) * logsigmoid(input)``."""
    if tuple(target.shape) != tuple(input.shape):
        raise ShapeError(f"binary_cross_entropy_with_logits: target shape {target.shape} must equal input shape "
                         f"{input.shape}")
    ls = logsigmoid(input)
    if pos_weight is not None:
        loss = (1.0 - target) * input - ((pos_weight - 1.0) * target + 1.0) * ls
    else:
        loss = (1.0 - target) * input - ls
    if weight is not None:
        loss = loss * weight
    return _reduce(loss, reduction, "binary_cross_entropy_with_logits")


def kl_div(input: Any, target: Any, reduction: str = "mean", log_target: bool = False):  # noqa: A002
    """Pointwise ``target * (log(target) - input)`` for log-probabilities ``input`` (``target`` given as
    log-probabilities with ``log_target``); ``reduction="batchmean"`` divides the sum by the batch size."""
    if log_target:
        loss = unary(Op.EXP, target) * (target - input)
    else:  # xlogy(target, target): 0 where target is 0 (its log reads 1 there, so no -inf * 0 in the gradient)
        safe = where(binary(Op.EQ, target, 0.0), 1.0, target)
        loss = target * unary(Op.LOG, safe) - target * input
    if reduction == "batchmean":
        total = R.reduce(loss, Op.SUM, None).cast(loss.dtype)
        return total / input.shape[0] if input.ndim else total
    return _reduce(loss, reduction, "kl_div")


def cosine_similarity(x1: Any, x2: Any, dim: int = 1, eps: float = 1e-8):
    """``sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps))`` along ``dim`` (each normalized first, as
    PyTorch, which keeps the result in [-1, 1])."""
    from zyx.frontend.elementwise import broadcast_shapes

    shape = broadcast_shapes(x1.shape, x2.shape)
    (a, b), out_dt = _work16(x1.expand(*shape), x2.expand(*shape))
    na = vector_norm(a, 2.0, dim, keepdim=True).clip(min=eps)
    nb = vector_norm(b, 2.0, dim, keepdim=True).clip(min=eps)
    return R.reduce((a / na) * (b / nb), Op.SUM, dim).cast(out_dt)


def pairwise_distance(x1: Any, x2: Any, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False):
    """``||x1 - x2 + eps||_p`` over the last dim."""
    (a, b), out_dt = _work16(x1, x2)
    return vector_norm(a - b + eps, p, -1, keepdim).cast(out_dt)


def _work16(x1: Any, x2: Any) -> tuple[tuple[Any, Any], Any]:
    """The operands in float32 when their common dtype is a 16-bit float (reduced in float32, rounded once at
    the end, so the result keeps the inputs' dtype as PyTorch's does), and that common dtype."""
    from zyx import dtype as dtypes

    dt = dtypes.result_type(x1, x2)
    if dt.is_float and dt.itemsize < 4:
        return (x1.cast(dtypes.float32), x2.cast(dtypes.float32)), dt
    return (x1, x2), dt


def margin_ranking_loss(input1: Any, input2: Any, target: Any, margin: float = 0.0, reduction: str = "mean"):
    """``max(0, -target * (input1 - input2) + margin)``."""
    return _reduce((-target * (input1 - input2) + margin).clip(min=0.0), reduction, "margin_ranking_loss")


def hinge_embedding_loss(input: Any, target: Any, margin: float = 1.0, reduction: str = "mean"):  # noqa: A002
    """``input`` where ``target`` is 1, ``max(0, margin - input)`` where it is -1."""
    clamped = (margin - input).clip(min=0.0)
    loss = where(binary(Op.NE, target, 1), clamped, 0.0) + where(binary(Op.NE, target, -1), input, 0.0)
    return _reduce(loss, reduction, "hinge_embedding_loss")


__all__ = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_similarity", "cross_entropy",
           "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss",
           "nll_loss", "pairwise_distance", "smooth_l1_loss"]
