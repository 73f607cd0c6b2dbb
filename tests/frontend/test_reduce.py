"""Reductions and matmul against PyTorch CPU: dims, keepdim, dtypes, empty and rank-0 inputs."""
from __future__ import annotations

import numpy as np
import pytest

import zyx

torch = pytest.importorskip("torch")
RNG = np.random.default_rng(1)


def _check(z, t, rtol=1e-5, atol=1e-5):
    got, want = z.numpy(), t.numpy()
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    if got.dtype.kind == "f" or "float" in got.dtype.name:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=atol,
                                   equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


DIMS = [None, 0, 1, -1, (0, 2), (1, 2)]


@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("op", ["sum", "mean", "max", "min", "prod"])
def test_float_reductions(op, dim, keepdim):
    a = RNG.uniform(-1, 1, (3, 4, 5)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    if op in ("max", "min") and dim is not None:
        tr = getattr(torch, "amax" if op == "max" else "amin")(t, dim=dim, keepdim=keepdim)
    elif dim is None and not keepdim:
        tr = getattr(t, op)()
    elif dim is None:
        tr = getattr(torch, "amax" if op == "max" else "amin" if op == "min" else op)(
            t, dim=tuple(range(3)), keepdim=True) if op != "prod" else t.prod().reshape(1, 1, 1)
    else:
        tr = getattr(t, op)(dim=dim, keepdim=keepdim) if op != "prod" or isinstance(dim, int) else None
    if tr is None:
        pytest.skip("torch.prod takes a single dim")
    _check(getattr(z, op)(dim=dim, keepdim=keepdim), tr)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
@pytest.mark.parametrize("dim", [None, 0, 1])
def test_arg_reductions_first_extreme(op, dim):
    a = RNG.integers(0, 4, (6, 7)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    _check(getattr(z, op)(dim=dim), getattr(t, op)(dim=dim))
    _check(getattr(z, op)(dim=dim, keepdim=True), getattr(t, op)(dim=dim, keepdim=True))


def test_argmax_nan_counts_as_max():
    a = np.array([[1.0, np.nan, 3.0], [2.0, 5.0, 1.0]], np.float32)
    _check(zyx.tensor(a).argmax(1), torch.tensor(a).argmax(1))
    _check(zyx.tensor(a).max(1), torch.tensor(a).amax(1))


@pytest.mark.parametrize("dt", [np.int32, np.uint8, np.bool_])
def test_int_sums_accumulate_int64(dt):
    a = RNG.integers(0, 200, (5, 9)).astype(dt)
    z, t = zyx.tensor(a), torch.tensor(a)
    _check(z.sum(), t.sum())
    _check(z.sum(1), t.sum(1))
    _check(z.max(0), t.amax(0))
    if dt is not np.bool_:
        _check(z.prod(1), t.prod(1))


def test_16bit_sum_accumulates_float32():
    a = np.full((4096,), 0.1, np.float32)
    for dt in ("float16", "bfloat16"):
        z = zyx.tensor(a).cast(dt)
        t = torch.tensor(a).to(getattr(torch, dt))
        got = z.sum()
        assert got.dtype.name == dt
        np.testing.assert_allclose(float(got.item()), float(t.sum().item()), rtol=1e-2)


def test_var_std_logsumexp_any_all():
    a = RNG.normal(size=(4, 6)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    for dim in (None, 1, 0):
        _check(z.var(dim=dim), t.var(dim=dim))
        _check(z.std(dim=dim), t.std(dim=dim))
        _check(z.logsumexp(dim=dim if dim is not None else (0, 1)), t.logsumexp(dim=dim if dim is not None else (0, 1)))
    _check(z.var(1, correction=0, keepdim=True), t.var(1, correction=0, keepdim=True))
    _check((z > 1).any(1), (t > 1).any(1))
    _check((z > -3).all(), (t > -3).all())
    _check(z.any(), t.any())


def test_empty_and_rank0():
    e = np.zeros((0, 3), np.float32)
    _check(zyx.tensor(e).sum(0), torch.tensor(e).sum(0))
    _check(zyx.tensor(e).sum(1), torch.tensor(e).sum(1))
    s = zyx.tensor(2.5)
    assert s.sum().item() == 2.5 and s.max().item() == 2.5
    with pytest.raises(zyx.ShapeError):
        zyx.tensor(e).max(0)


def test_non_contiguous_and_big_split_reduce():
    a = RNG.uniform(-1, 1, (8, 6)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    _check(z.T[::2].sum(1), t.T[::2].sum(1))
    big = RNG.uniform(-1, 1, (1 << 16,)).astype(np.float32)
    _check(zyx.tensor(big).sum(), torch.tensor(big).sum(), rtol=1e-4, atol=1e-3)
    _check(zyx.tensor(big).max(), torch.tensor(big).max())


@pytest.mark.parametrize("sa,sb", [((5, 7), (7, 3)), ((7,), (7, 3)), ((5, 7), (7,)), ((2, 1, 4, 6), (3, 6, 5)),
                                   ((8, 16), (16, 12))])
def test_matmul_shapes(sa, sb):
    a = RNG.uniform(-1, 1, sa).astype(np.float32)
    b = RNG.uniform(-1, 1, sb).astype(np.float32)
    _check(zyx.tensor(a) @ zyx.tensor(b), torch.tensor(a) @ torch.tensor(b))


@pytest.mark.parametrize("sa,sw,dt", [((37, 70), (45, 70), "float32"), ((2, 9, 33), (3, 1, 20, 33), "float32"),
                                      ((300, 130), (257, 130), "float32"), ((12, 40), (17, 40), "bfloat16"),
                                      ((6, 5), (7, 5), "int64")])
def test_matmul_with_a_transposed_right_operand(monkeypatch, sa, sw, dt):
    """``a @ w.T`` (F.linear): above TRANSPOSED_MIN the transposed operand is copied row-major
    first (here forced for every size, and the natural big case), batched and broadcast included."""
    from zyx.frontend import reduce as ops_reduce

    kinds = [1, ops_reduce.TRANSPOSED_MIN] if sa == (300, 130) else [1]
    for threshold in kinds:
        monkeypatch.setattr(ops_reduce, "TRANSPOSED_MIN", threshold)
        a = RNG.uniform(-1, 1, sa)
        w = RNG.uniform(-1, 1, sw)
        if dt == "int64":
            a, w = (np.rint(v * 4).astype(np.int64) for v in (a, w))
        else:
            a, w = a.astype(np.float32), w.astype(np.float32)
        za, zw = zyx.tensor(a).cast(dt), zyx.tensor(w).cast(dt)
        ta, tw = torch.tensor(a).to(getattr(torch, dt)), torch.tensor(w).to(getattr(torch, dt))
        got, want = za @ zw.transpose(-1, -2), ta @ tw.transpose(-1, -2)
        if dt == "bfloat16":  # one rounding of a float32 sum, as PyTorch: equal bits
            np.testing.assert_array_equal(got.cast("float32").numpy(), want.float().numpy())
        else:
            _check(got, want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("sa,sb", [((70, 37), (70, 45)), ((3, 1, 33, 9), (2, 33, 20)), ((5, 1), (5, 4)),
                                   ((70, 37), (70, 80))])
def test_matmul_with_a_transposed_left_operand(monkeypatch, sa, sb):
    """``a.T @ b``: the transposed left operand is copied row-major first (forced for every size)."""
    from zyx.frontend import reduce as ops_reduce

    monkeypatch.setattr(ops_reduce, "TRANSPOSED_MIN", 1)
    a = RNG.uniform(-1, 1, sa).astype(np.float32)
    b = RNG.uniform(-1, 1, sb).astype(np.float32)
    _check(zyx.tensor(a).transpose(-1, -2) @ zyx.tensor(b), torch.tensor(a).transpose(-1, -2) @ torch.tensor(b),
           rtol=1e-4, atol=1e-4)


def test_matmul_int_and_errors():
    a = RNG.integers(-4, 4, (3, 4)).astype(np.int64)
    b = RNG.integers(-4, 4, (4, 2)).astype(np.int64)
    _check(zyx.tensor(a) @ zyx.tensor(b), torch.tensor(a) @ torch.tensor(b))
    with pytest.raises(zyx.ShapeError):
        zyx.tensor(a) @ zyx.tensor(a)


@pytest.mark.parametrize("shape,dim", [((70, 1024), 0), ((33, 4096), 0), ((9, 520), 0), ((34, 2048), 1),
                                       ((64, 1030), 1), ((3, 40, 2048), 2)])
@pytest.mark.parametrize("op", ["sum", "max", "mean"])
def test_reduce_tiles_on_cpu_defaults(shape, dim, op):
    """Shapes that take the CPU defaults' tiles: 64 columns a work item for column reduces, two rows a
    work item for long row reduces, and the shapes where they fall back."""
    a = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    got = getattr(zyx.tensor(a), op)(dim).numpy()
    np.testing.assert_allclose(got, getattr(np, op)(a, axis=dim), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize("op", ["any", "all"])
@pytest.mark.parametrize("dtype,dim", [(np.uint8, None), (np.uint8, 1), (np.uint8, ()), (np.float32, ()),
                                       (np.int32, (0, 1))])
def test_any_all_dtype_and_empty_dim_as_pytorch(op, dtype, dim):
    """``any``/``all`` of uint8 give uint8 (PyTorch's one exception to bool), and an empty dim tuple
    reduces nothing there (unlike ``sum``)."""
    a = RNG.integers(0, 2, (3, 4)).astype(dtype)
    kw = {} if dim is None else {"dim": dim}
    _check(getattr(zyx.tensor(a), op)(**kw), getattr(torch.tensor(a), op)(**kw))


def test_reductions_as_top_level_functions():
    """API.md's reductions are importable from ``zyx`` like ``torch.sum``/``torch.amax``."""
    a = RNG.uniform(-1, 1, (3, 4)).astype(np.float32)
    z, t = zyx.tensor(a), torch.tensor(a)
    for name in ("sum", "amax", "amin"):
        _check(getattr(zyx, name)(z, 1), getattr(torch, name)(t, 1))
    _check(zyx.max(z, 0, keepdim=True), torch.amax(t, 0, keepdim=True))
    _check(zyx.min(z), torch.min(t))
    _check(zyx.any(z > 0.5, 0), torch.any(t > 0.5, 0))
    _check(zyx.all(z > -2), torch.all(t > -2))
    for name in ("sum", "prod", "mean", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "any", "all"):
        with pytest.raises(zyx.DTypeError, match=f"{name}\\(\\): expected a Tensor, got list"):
            getattr(zyx, name)([1.0, 2.0])
