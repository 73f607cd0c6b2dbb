"""Python numbers passed to a jitted function are plan arguments (API.md "Tapes and variables";
zyx.frontend.traced_scalar): a new value replays the plan; a value Python code reads keys it."""
from __future__ import annotations

import math

import numpy as np
import pytest

import zyx
from zyx.backend.program import BuildStats
from zyx.frontend.tape import plan_stats

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(61)


def _t(*shape, dtype=np.float32):
    return zyx.tensor(RNG.standard_normal(shape).astype(dtype))


def _counts() -> tuple[int, int]:
    return plan_stats["captures"], plan_stats["replays"]


def test_a_new_float_replays_without_capture_or_compile():
    def fn(x, alpha):
        return (x * alpha + (1 - alpha) / 2).exp() - alpha ** 2

    jf = zyx.jit(fn)
    x = _t(5, 7)
    c0, r0 = _counts()
    for i, alpha in enumerate((0.5, 1.5, -2.0)):
        if i == 1:
            k0 = BuildStats.programs()
        got = jf(x, alpha).numpy()
        np.testing.assert_allclose(got, fn(x, alpha).numpy(), rtol=1e-6, err_msg=str(alpha))
        want = (torch.from_numpy(x.numpy()) * alpha + (1 - alpha) / 2).exp() - alpha ** 2
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-5, err_msg=str(alpha))
    assert _counts() == (c0 + 1, r0 + 2)
    assert BuildStats.programs() == k0


def test_keyword_and_tuple_numbers_are_arguments_too():
    def fn(x, scale=(1.0, 2.0), *, shift=0.0):
        return x * scale[0] + scale[1] * shift

    jf = zyx.jit(fn)
    x = _t(4)
    c0 = plan_stats["captures"]
    for s in ((1.0, 2.0), (0.25, -3.0), (7.5, 0.5)):
        for shift in (0.0, 1.25):
            np.testing.assert_allclose(jf(x, s, shift=shift).numpy(), fn(x, s, shift=shift).numpy(), rtol=1e-6)
    assert plan_stats["captures"] - c0 == 1


def test_a_branch_on_the_number_keys_the_plan_by_its_value():
    def fn(x, alpha):
        if alpha > 0:
            return x * alpha
        return x - alpha

    jf = zyx.jit(fn)
    x = _t(6)
    c0 = plan_stats["captures"]
    for alpha in (0.5, -0.5, 0.5, 2.0, -3.0, -0.5):
        np.testing.assert_allclose(jf(x, alpha).numpy(), fn(x, alpha).numpy(), rtol=1e-6, err_msg=str(alpha))
    assert plan_stats["captures"] - c0 == 4  # one per distinct value: 0.5, -0.5, 2.0, -3.0


def test_untraced_reads_key_the_plan():
    """math.sqrt, int(), isinstance, formatting and the sign of zero all read the value."""
    def fn(x, a):
        assert isinstance(a, float) and f"{a:.1f}" == f"{float(a):.1f}"
        return x * math.sqrt(abs(a)) + math.copysign(1.0, a)

    jf = zyx.jit(fn)
    x = _t(3)
    for a in (4.0, 9.0, 0.0, -0.0, 4.0):
        np.testing.assert_allclose(jf(x, a).numpy(), fn(x, a).numpy(), rtol=1e-6, err_msg=repr(a))


def test_a_number_used_as_a_size_or_axis():
    def fn(x, n, dim):
        return x.reshape(n, -1).sum(dim) * n

    jf = zyx.jit(fn)
    x = _t(12)
    for n, dim in ((2, 0), (3, 0), (3, 1), (2, 0), (4, 1)):
        got = jf(x, n, dim).numpy()
        want = fn(x, n, dim).numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-6)


@pytest.mark.parametrize("dtype", [zyx.float16, zyx.bfloat16])
def test_16_bit_tensors_keep_their_dtype_and_pytorch_rounding(dtype):
    """PyTorch rounds a Python float to the tensor's dtype for + (not for *): so does the replay."""
    tdt = getattr(torch, dtype.name)

    def fn(x, a):
        return x * a + a

    jf = zyx.jit(fn)
    xt = torch.randn(33).to(tdt)
    x = zyx.tensor(xt.float().numpy()).to(dtype)
    c0 = plan_stats["captures"]
    for a in (0.1, 1.0 / 3.0, -7.77):
        got = jf(x, a)
        assert got.dtype is dtype
        want = xt * a + a
        np.testing.assert_array_equal(got.to(zyx.float32).numpy(), want.float().numpy(), err_msg=str(a))
    assert plan_stats["captures"] - c0 == 1


def test_int_numbers_with_int_tensors():
    def fn(x, k):
        return (x + k) * k - (k - 1), x // k

    jf = zyx.jit(fn)
    xs = RNG.integers(-50, 50, 9).astype(np.int32)
    x = zyx.tensor(xs)
    c0 = plan_stats["captures"]
    for k in (3, 5, -7, 3):
        a, b = jf(x, k)
        xt = torch.from_numpy(xs)
        assert a.dtype is zyx.int32 and b.dtype is zyx.int32
        np.testing.assert_array_equal(a.numpy(), ((xt + k) * k - (k - 1)).numpy())
        np.testing.assert_array_equal(b.numpy(), (xt // k).numpy())
    # ``//`` takes its divisor as a literal (and checks it for zero): keyed by the value
    assert plan_stats["captures"] - c0 == 3


def test_int_number_with_a_float_tensor_and_in_where_and_clamp():
    def fn(x, n, lo):
        return zyx.where(x > 0, x * n, lo).clamp(lo, n)

    jf = zyx.jit(fn)
    x = _t(10)
    c0 = plan_stats["captures"]
    for n, lo in ((2, -0.5), (5, -1.5), (1, 0.25)):
        xt = torch.from_numpy(x.numpy())
        want = torch.where(xt > 0, xt * n, lo).clamp(lo, n)
        np.testing.assert_allclose(jf(x, n, lo).numpy(), want.numpy(), rtol=1e-6)
    assert plan_stats["captures"] - c0 == 1


def test_a_returned_number_is_the_new_calls():
    jf = zyx.jit(lambda x, a: (x * a, a * 2, [a - 1]))
    x = _t(2)
    for a in (1.5, 4.0):
        y, twice, (less,) = jf(x, a)
        assert type(twice) is float and twice == a * 2 and less == a - 1
        np.testing.assert_allclose(y.numpy(), x.numpy() * a, rtol=1e-6)


def test_host_arithmetic_errors_at_replay_launch_nothing():
    jf = zyx.jit(lambda x, a: x * (1 / (a - 1)))
    x = _t(3)
    np.testing.assert_allclose(jf(x, 3.0).numpy(), x.numpy() / 2, rtol=1e-6)
    with pytest.raises(ZeroDivisionError):
        jf(x, 1.0)
    np.testing.assert_allclose(jf(x, 5.0).numpy(), x.numpy() / 4, rtol=1e-6)


def test_python_state_keeps_the_captured_number():
    """A number the function stores is its capture-time value between calls (a Python side effect)."""
    kept = {}

    def fn(x, a):
        kept["a"] = a
        return x + a

    jf = zyx.jit(fn)
    x = _t(2)
    jf(x, 1.0)
    np.testing.assert_allclose(jf(x, 2.0).numpy(), x.numpy() + 2.0, rtol=1e-6)
    assert kept["a"] == 1.0 and float(kept["a"]) == 1.0


@pytest.mark.parametrize("name,options", [("SGD", {"momentum": 0.9}), ("Adam", {})])
def test_learning_rate_argument_of_a_training_step(name, options):
    """A jitted step taking ``lr``: replays use each call's rate (as the eager step), no capture per rate."""
    zyx.manual_seed(7)
    w1 = zyx.randn(5, requires_grad=True)
    w2 = zyx.tensor(w1.numpy(), requires_grad=True)
    o1 = getattr(zyx.optim, name)([w1], lr=0.1, **options)
    o2 = getattr(zyx.optim, name)([w2], lr=0.1, **options)

    def step(w, opt, x, lr):
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad()
        loss = ((w * x).sum() - 1.0) ** 2 * (lr * 10)  # the backward multiplies by the traced number too
        loss.backward()
        opt.step()
        return loss

    jstep = zyx.jit(step)
    c0 = plan_stats["captures"]
    for i, lr in enumerate((0.1, 0.05, 0.2, 0.01, 0.3, 0.07)):
        x = _t(5)
        want = step(w1, o1, x, lr)
        got = jstep(w2, o2, x, lr)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, err_msg=f"call {i}")
        np.testing.assert_allclose(w2.numpy(), w1.numpy(), rtol=1e-5, atol=1e-7, err_msg=f"call {i}")
    assert plan_stats["captures"] - c0 == 2  # the first step creates the state: the second captures again


def test_bools_and_numbers_in_lists_stay_structural():
    jf = zyx.jit(lambda x, flag, ks: x * ks[0] if flag else x - ks[0])
    x = _t(3)
    c0 = plan_stats["captures"]
    for flag, ks in ((True, [2.0]), (False, [2.0]), (True, [3.0]), (True, [2.0])):
        want = x.numpy() * ks[0] if flag else x.numpy() - ks[0]
        np.testing.assert_allclose(jf(x, flag, ks).numpy(), want, rtol=1e-6)
    assert plan_stats["captures"] - c0 == 3


def test_comparisons_with_tensors_are_traced():
    """``t < x`` with the number on the left is the tensor's reflected comparison: an operand, not a read."""
    def fn(x, t):
        return ((t < x) & (x <= t + 1.0)).to(zyx.float32) * t

    jf = zyx.jit(fn)
    x = _t(16)
    c0 = plan_stats["captures"]
    for t in (-0.5, 0.0, 0.75):
        xt = torch.from_numpy(x.numpy())
        want = ((t < xt) & (xt <= t + 1.0)).float() * t
        np.testing.assert_array_equal(jf(x, t).numpy(), want.numpy())
    assert plan_stats["captures"] - c0 == 1


def test_a_jitted_function_called_inside_a_capture_gets_the_traced_number():
    inner = zyx.jit(lambda x, a: x * a)
    outer = zyx.jit(lambda x, a: inner(x, a + 1.0) - a)
    x = _t(5)
    c0 = plan_stats["captures"]
    for a in (0.5, 2.0, -1.0):
        np.testing.assert_allclose(outer(x, a).numpy(), x.numpy() * (a + 1.0) - a, rtol=1e-6)
    assert plan_stats["captures"] - c0 == 1


def test_host_arithmetic_the_result_does_not_use_still_raises():
    """``1 / a`` computed and dropped raises for a = 0 at a replay, as the call itself would."""
    def fn(x, a):
        unused = 1 / a  # noqa: F841
        return x + a

    jf = zyx.jit(fn)
    x = _t(3)
    jf(x, 2.0)
    with pytest.raises(ZeroDivisionError):
        jf(x, 0.0)
    np.testing.assert_allclose(jf(x, 4.0).numpy(), x.numpy() + 4.0, rtol=1e-6)


def test_the_tracer_behaves_as_a_number():
    seen = {}

    def fn(x, a, n):
        seen.update(cls=isinstance(a, float), c=complex(a), r=round(a, 1), s=str(a), i=isinstance(n, int),
                    idx=[10, 20, 30][n], b=bool(n))
        with pytest.raises(TypeError):
            a << 1
        return x * a

    jf = zyx.jit(fn)
    x = _t(2)
    jf(x, 1.25, 2)
    assert seen == dict(cls=True, c=1.25 + 0j, r=1.2, s="1.25", i=True, idx=30, b=True)
    np.testing.assert_allclose(jf(x, 1.25, 2).numpy(), x.numpy() * 1.25, rtol=1e-6)


def test_a_float_number_promotes_an_int_tensor_as_pytorch():
    jf = zyx.jit(lambda x, a: x * a - a)
    xs = RNG.integers(-9, 9, 7).astype(np.int16)
    x = zyx.tensor(xs)
    c0 = plan_stats["captures"]
    for a in (0.5, -1.75):
        got = jf(x, a)
        want = torch.from_numpy(xs) * a - a
        assert got.dtype is zyx.float32 and want.dtype is torch.float32
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert plan_stats["captures"] - c0 == 1


def test_apis_that_read_the_number_stay_correct():
    """Ops that take the number by reading it (a fill, a lerp weight's branch) key the plan by its value."""
    import zyx.nn.functional as F

    def fn(x, a):
        return (zyx.full_like(x, a) + F.leaky_relu(x, a) + x.masked_fill(x > 0, a) + x.lerp(x * 2, a)
                + F.dropout(x, 0.0) * a)

    jf = zyx.jit(fn)
    x = zyx.tensor(np.linspace(-2, 2, 9).astype(np.float32))
    for a in (0.1, 0.3, 0.7, 0.1):
        np.testing.assert_array_equal(jf(x, a).numpy(), fn(x, a).numpy(), err_msg=str(a))
