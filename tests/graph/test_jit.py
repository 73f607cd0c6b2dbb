"""zyx.jit: capture once per signature, replay without running the function (API.md "Tapes and variables")."""
from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.backend.program import BuildStats
from zyx.frontend.tape import plan_stats

pytestmark = pytest.mark.needs_device

RNG = np.random.default_rng(16)


def _t(*shape, dtype=np.float32):
    return zyx.tensor(RNG.standard_normal(shape).astype(dtype))


def _stats() -> tuple[int, int, int]:
    return plan_stats["captures"], plan_stats["replays"], plan_stats["eager"]


# (name, function, argument shapes): a broad set of fused, reduce, movement and contract ops
CASES = [
    ("elementwise", lambda a, b: (a * b + 1.5).exp().clamp(0.0, 4.0) - a.abs().sqrt(), [(5, 7), (5, 7)]),
    ("broadcast_where", lambda a, b: zyx.where(a > 0, a, b[:1] * 2.0), [(5, 7), (3, 7)]),
    ("reduce", lambda a, b: a.sum(1) + b.amax(0).mean() + a.argmax(1).to(zyx.float32), [(5, 7), (3, 7)]),
    ("matmul_softmax", lambda a, b: (a @ b.T).softmax(-1), [(5, 7), (3, 7)]),
    ("movement", lambda a, b: a.permute(1, 0)[1:6:2].contiguous() + b.reshape(21)[:3].reshape(3, 1),
     [(5, 7), (3, 7)]),
    ("contract_ops", lambda a, b: zyx.cat([a.flip(0), b.roll(1, 1)], 0).cumsum(1).triu(), [(5, 7), (3, 7)]),
    ("cast_int", lambda a, b: ((a * 10).to(zyx.int32) // 3 + (b > 0).to(zyx.int32).sum()), [(5, 7), (3, 7)]),
    ("norm_layers", lambda a, b: F.layer_norm(a, (7,)) + F.gelu(a), [(5, 7), (3, 7)]),
    ("conv", lambda a, b: F.conv2d(a.reshape(1, 1, 5, 7), b[:1, :3].reshape(1, 1, 1, 3), padding=(0, 1)),
     [(5, 7), (3, 7)]),
    ("setitem_on_copy", lambda a, b: _setitem(a.clone(), b), [(5, 7), (3, 7)]),
]


def _setitem(x, b):
    x[1:4] = b
    return x * 2.0


@pytest.mark.parametrize("name,fn,shapes", CASES, ids=[c[0] for c in CASES])
def test_replay_equals_eager(name, fn, shapes):
    jf = zyx.jit(fn)
    c0, r0, e0 = _stats()
    for _ in range(3):
        args = [_t(*s) for s in shapes]
        want = fn(*args).numpy()
        got = jf(*args)
        assert got.shape == want.shape and got.dtype == fn(*args).dtype
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, atol=1e-6)
    assert _stats() == (c0 + 1, r0 + 2, e0), "one capture, then replays"


def test_replay_runs_no_python_and_compiles_nothing():
    calls = []

    def fn(x, y):
        calls.append(1)
        return ((x + y) * 0.5).sum(0)

    jf = zyx.jit(fn)
    x, y = _t(64, 9), _t(64, 9)
    jf(x, y).realize()
    compiles, kernels = BuildStats.programs(), zyx.kernel_count()
    for _ in range(5):
        out = jf(x, y)
    np.testing.assert_allclose(out.numpy(), ((x.numpy() + y.numpy()) * 0.5).sum(0), rtol=1e-5)
    assert len(calls) == 1
    assert BuildStats.programs() == compiles
    assert zyx.kernel_count() - kernels == 5  # one kernel per replay (the fused sum)


def test_new_shapes_and_dtypes_capture_again():
    jf = zyx.jit(lambda x, s: x * s + 1.0)
    c0 = plan_stats["captures"]
    for shape, dt, s in [((4,), np.float32, 2.0), ((4,), np.float32, 2.0), ((6,), np.float32, 2.0),
                         ((4,), np.float64, 2.0), ((4,), np.float32, 3.0), ((6,), np.float32, 2.0)]:
        x = _t(*shape, dtype=dt)
        got = jf(x, s)
        assert got.dtype == x.dtype
        np.testing.assert_allclose(got.numpy(), x.numpy() * s + 1.0, rtol=1e-6)
    # (4,) f32; (6,); float64; a new float (s = 3.0) is an argument of the plan (frontend/traced_scalar.py)
    assert plan_stats["captures"] - c0 == 3


def test_views_of_the_same_data_are_different_signatures():
    jf = zyx.jit(lambda x: x + 1.0)
    base = _t(4, 6)
    for x in (base, base.T, base[:, 1:5], base):
        np.testing.assert_allclose(jf(x).numpy(), x.numpy() + 1.0)


def test_leaves_written_in_place_between_replays_are_read_fresh():
    jf = zyx.jit(lambda x, w: (x @ w).sum(1))
    x, w = _t(3, 5), _t(5, 4)
    for step in range(4):
        np.testing.assert_allclose(jf(x, w).numpy(), (x.numpy() @ w.numpy()).sum(1), rtol=1e-5, atol=1e-5)
        x[0] = float(step)  # a write into the leaf's own buffer
        w[:, 1] = w[:, 1] * 2.0
        x._assign((x * 0.5).realize())  # and a rebinding to another buffer (as an optimizer does)


def test_in_place_writes_inside_the_function_are_replayed():
    def fn(cache, row, i):
        cache[i] = row  # i: a Python int, part of the signature
        return cache.sum(0)

    jf = zyx.jit(fn)
    c1, c2 = zyx.zeros(4, 3), zyx.zeros(4, 3)
    for step in range(6):
        row = _t(3)
        want = fn(c1, row, step % 2)
        got = jf(c2, row, step % 2)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(c1.numpy(), c2.numpy())


def test_results_structure_and_non_tensor_values_come_back():
    jf = zyx.jit(lambda x: {"a": (x + 1.0, x * 2.0), "n": 3, "b": [x.sum()]})
    x = _t(5)
    for _ in range(2):
        out = jf(x)
        assert out["n"] == 3 and isinstance(out["a"], tuple) and isinstance(out["b"], list)
        np.testing.assert_allclose(out["a"][1].numpy(), x.numpy() * 2.0)
        np.testing.assert_allclose(out["b"][0].numpy(), x.numpy().sum(), rtol=1e-5)


def test_returning_an_argument_or_a_view_of_it():
    jf = zyx.jit(lambda x: (x, x[1:], x.T))
    x = _t(3, 4)
    for _ in range(2):
        a, b, c = jf(x)
        np.testing.assert_array_equal(a.numpy(), x.numpy())
        np.testing.assert_array_equal(b.numpy(), x.numpy()[1:])
        np.testing.assert_array_equal(c.numpy(), x.numpy().T)


def test_a_branch_on_a_device_value_runs_eagerly():
    def fn(x):
        return x * 2.0 if x.sum().item() > 0 else x * -1.0  # a branch on a device value

    jf = zyx.jit(fn)
    e0 = plan_stats["eager"]
    a = _t(6)
    for x in (a.abs(), -a.abs(), a.abs()):
        np.testing.assert_allclose(jf(x).numpy(), fn(x).numpy())
    assert plan_stats["eager"] - e0 == 2


def test_random_numbers_replay_the_next_draws():
    """A replay draws from the generator as the call would (a hook advances it, the kernel takes the new
    seed and counter): the same seed gives the same values jitted and eager, and every call new ones."""
    def fn(x):
        return x + zyx.rand(*x.shape) + zyx.randn(3, 2).sum()

    a = _t(7)
    zyx.manual_seed(11)
    eager = [fn(a).numpy() for _ in range(4)]
    jf = zyx.jit(fn)
    zyx.manual_seed(11)
    r0 = plan_stats["replays"]
    jitted = [jf(a).numpy() for _ in range(4)]
    assert plan_stats["replays"] - r0 == 3
    for i, (e, j) in enumerate(zip(eager, jitted)):
        np.testing.assert_array_equal(j, e, err_msg=f"call {i}")
    assert not np.array_equal(jitted[2], jitted[3]), "each call draws new numbers"


def test_memory_stays_flat_over_1000_replays():
    jf = zyx.jit(lambda x, w: ((x @ w).relu() + 1.0).sum(0))
    x, w = _t(8, 6), _t(6, 5)
    for _ in range(2):  # the capture, then the first replay, which allocates the buffers the plan keeps
        jf(x, w).realize()
    gc.collect()
    zyx.synchronize()
    start = zyx.memory_stats()
    for _ in range(1000):
        out = jf(x, w)
    del out
    gc.collect()
    zyx.synchronize()
    end = zyx.memory_stats()
    assert end["live_buffers"] == start["live_buffers"]
    assert end["bytes_in_use"] == start["bytes_in_use"]


def test_two_threads_replaying_different_plans():
    f1 = zyx.jit(lambda x: (x * 2.0 + 1.0).sum(1))
    f2 = zyx.jit(lambda x, y: (x @ y).softmax(-1))
    x1, x2, y2 = _t(16, 8), _t(5, 8), _t(8, 3)
    f1(x1).realize()
    f2(x2, y2).realize()
    want1 = (x1.numpy() * 2 + 1).sum(1)
    e = np.exp(x2.numpy() @ y2.numpy())
    want2 = e / e.sum(-1, keepdims=True)
    errors = []

    def run(fn, args, want):
        try:
            for _ in range(100):
                np.testing.assert_allclose(fn(*args).numpy(), want, rtol=1e-5, atol=1e-6)
        except Exception as exc:  # noqa: BLE001 - reported by the main thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(f1, (x1,), want1)),
               threading.Thread(target=run, args=(f2, (x2, y2), want2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def _training_step(m, opt, x, y):
    """Forward, cross entropy, backward and an optimizer step: eager, or jitted by the tests."""
    opt.zero_grad()
    loss = F.cross_entropy(m(x), y)
    loss.backward()
    opt.step()
    return loss


def test_jitted_training_step_matches_eager():
    """Forward, backward and SGD in one plan; the parameters (reached through the model, not
    arguments) are rebound at each replay as the optimizer does eagerly."""
    zyx.manual_seed(3)

    def model():
        return zyx.nn.Sequential(zyx.nn.Linear(6, 8), zyx.nn.Tanh(), zyx.nn.Linear(8, 3))

    m1, m2 = model(), model()
    m2.load_state_dict({k: v.numpy() for k, v in m1.state_dict().items()})
    o1, o2 = zyx.optim.SGD(m1.parameters(), lr=0.2), zyx.optim.SGD(m2.parameters(), lr=0.2)

    step = _training_step
    jstep = zyx.jit(step)
    c0, r0, _ = _stats()
    for _ in range(6):
        x, y = _t(4, 6), zyx.tensor(RNG.integers(0, 3, 4))
        l1, l2 = step(m1, o1, x, y).item(), jstep(m2, o2, x, y).item()
        assert l2 == pytest.approx(l1, rel=1e-5)
    assert _stats()[:2] == (c0 + 1, r0 + 5)
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


@pytest.mark.parametrize("name,options", [("Adam", {"lr": 0.1}), ("AdamW", {"lr": 0.1, "amsgrad": True}),
                                          ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
                                          ("RMSprop", {"lr": 0.05, "centered": True, "momentum": 0.5}),
                                          ("Adagrad", {"lr": 0.1, "lr_decay": 0.01})])
def test_optimizers_with_state_replay_their_bookkeeping(name, options):
    """An optimizer's step counts and bias corrections live in Python: a replay runs the step's
    bookkeeping as a hook and launches with the fresh numbers, so a jitted step equals the eager one.
    The first call creates the state (moments, buffers), so the second captures again; then replays."""
    zyx.manual_seed(4)
    w1 = zyx.randn(5, requires_grad=True)
    w2 = zyx.tensor(w1.numpy(), requires_grad=True)
    o1 = getattr(zyx.optim, name)([w1], **options)
    o2 = getattr(zyx.optim, name)([w2], **options)

    def step(w, opt, x):
        opt.zero_grad()
        ((w * x).sum() ** 2).backward()
        opt.step()

    jstep = zyx.jit(step)
    c0, r0 = plan_stats["captures"], plan_stats["replays"]
    for i in range(6):
        x = _t(5)
        step(w1, o1, x)
        jstep(w2, o2, x)
        np.testing.assert_allclose(w2.numpy(), w1.numpy(), rtol=1e-5, atol=1e-7, err_msg=f"call {i}")
    assert (plan_stats["captures"] - c0, plan_stats["replays"] - r0) == (2, 4)
    for key, value in o1.state[w1].items():
        got = o2.state[w2][key]
        if key == "step":
            assert got == value
        else:
            np.testing.assert_allclose(got.numpy(), value.numpy(), rtol=1e-5, atol=1e-7, err_msg=key)


def test_variables_are_run_time_arguments():
    """A bound variable as an elementwise operand and as write_slice_rotating's position: one
    capture serves every value, and nothing compiles after the first call."""
    W = 8
    t = zyx.Variable("t", 1, W)
    p = zyx.Variable("p", 0, 1 << 20)

    def fn(cache, row, pos, n):
        zyx.write_slice_rotating(cache, row, 0, pos)
        keep = zyx.arange(W) < n
        return zyx.where(keep.reshape(W, 1), cache, 0.0).sum(0)

    jf = zyx.jit(fn)
    c1, c2 = zyx.zeros(W, 3), zyx.zeros(W, 3)
    rows = [_t(1, 3) for _ in range(12)]
    wants = [fn(c1, row, i, min(i + 1, W)).numpy() for i, row in enumerate(rows)]
    c0 = plan_stats["captures"]
    for i, row in enumerate(rows):
        got = jf(c2, row, p.bind(i), t.bind(min(i + 1, W))).numpy()
        np.testing.assert_allclose(got, wants[i], rtol=1e-6)
        if i == 0:
            compiles = BuildStats.programs()
    assert plan_stats["captures"] - c0 == 1
    assert BuildStats.programs() == compiles, "a new variable value compiled a kernel"
    np.testing.assert_array_equal(c1.numpy(), c2.numpy())


def test_a_variable_used_as_a_size_keys_the_plan_by_its_value():
    """Python code that reads a bound value (here int() of it as a slice bound) gets a plan per value."""
    t = zyx.Variable("t", 0, 10)
    jf = zyx.jit(lambda x, n: x[:int(n)].sum(0))
    x = _t(10, 3)
    c0 = plan_stats["captures"]
    for n in (3, 5, 3, 5, 7):
        np.testing.assert_allclose(jf(x, t.bind(n)).numpy(), x.numpy()[:n].sum(0), rtol=1e-5, atol=1e-6)
    assert plan_stats["captures"] - c0 == 3


def test_variable_errors():
    t = zyx.Variable("t", 1, 8)
    with pytest.raises(zyx.ShapeError, match=r"'t' bound to 9, outside its range \[1, 8\]"):
        t.bind(9)
    with pytest.raises(zyx.ShapeError, match="outside its range"):
        t.bind(0)
    jf = zyx.jit(lambda x, a, b: x + a + b)
    with pytest.raises(zyx.ShapeError, match="bound to both 2 and 3"):
        jf(_t(2), t.bind(2), t.bind(3))


def test_kwargs_and_grad_mode_are_part_of_the_signature():
    jf = zyx.jit(lambda x, scale=1.0: x * scale)
    x = _t(4)
    np.testing.assert_allclose(jf(x, scale=2.0).numpy(), x.numpy() * 2)
    np.testing.assert_allclose(jf(x, scale=3.0).numpy(), x.numpy() * 3)
    with zyx.no_grad():
        np.testing.assert_allclose(jf(x, scale=3.0).numpy(), x.numpy() * 3)


def test_pending_state_from_before_the_call_is_not_recomputed_at_replay():
    """A closed-over lazy zeros() ring is realized by the first call: that call captures again
    later, so replays write into the realized ring instead of a fresh zeroed one each time."""
    ring_a, ring_b = zyx.zeros(4, 2), zyx.zeros(4, 2)  # pending until first used
    p = zyx.Variable("p", 0, 100)

    def step(ring, row, pos):
        zyx.write_slice_rotating(ring, row, 0, pos)
        return ring.sum(0)

    jf = zyx.jit(lambda row, pos: step(ring_b, row, pos))
    for i in range(7):
        row = _t(1, 2)
        want = step(ring_a, row, i)
        np.testing.assert_allclose(jf(row, p.bind(i)).numpy(), want.numpy(), rtol=1e-6)
    np.testing.assert_array_equal(ring_b.numpy(), ring_a.numpy())


def test_signatures_per_function_are_bounded():
    from zyx.frontend import tape

    jf = zyx.jit(lambda x, s: x * s)
    x = _t(3)
    for i in range(tape.SIGNATURES + 6):
        np.testing.assert_allclose(jf(x, float(i) if i % 2 else i).numpy(), x.numpy() * i, rtol=1e-6)
    assert len(jf.cache) == 2  # a float and an int: numbers are arguments of the plan
    # a number the function reads is part of the signature: each value one more, within the same bound
    jf = zyx.jit(lambda x, s: x * s if s >= 0 else x)
    for i in range(tape.SIGNATURES + 6):
        np.testing.assert_allclose(jf(x, float(i)).numpy(), x.numpy() * i, rtol=1e-6)
    assert sum(len(v) for v in jf.cache.values()) == tape.SIGNATURES


def test_a_replayed_in_place_write_bumps_the_version_autograd_checks():
    w = zyx.tensor(np.arange(3, dtype=np.float32), requires_grad=True)
    jf = zyx.jit(lambda buf, v: zyx.write_slice(buf, v, [(0, 3)]))
    buf, v = zyx.zeros(3).realize(), _t(3)
    jf(buf, v)
    y = (w * buf).sum()  # saves buf
    jf(buf, v)  # a replay writes into it again
    with pytest.raises(zyx.AutogradError):
        y.backward()


def test_a_rebound_tensor_that_died_makes_the_next_call_capture_again():
    def make():
        return zyx.tensor(np.ones(3, np.float32)).realize()

    holder = [make()]

    def fn(x):
        holder[0]._assign((holder[0] + x).realize())
        return holder[0] * 1.0

    jf = zyx.jit(fn)
    x = _t(3)
    jf(x)
    jf(x)
    holder[0] = make()  # the tensor the plan rebinds is gone
    c0 = plan_stats["captures"]
    np.testing.assert_allclose(jf(x).numpy(), 1 + x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(jf(x).numpy(), 1 + 2 * x.numpy(), rtol=1e-6)
    assert plan_stats["captures"] - c0 == 1


def test_closed_over_weights_rebound_outside_the_call_are_read_fresh():
    """An eager optimizer step between calls of a jitted forward rebinds the weights it closes over."""
    lin = zyx.nn.Linear(4, 3)
    opt = zyx.optim.SGD(lin.parameters(), lr=0.5)
    fwd = zyx.jit(lambda x: lin(x).relu())
    for _ in range(4):
        x = _t(2, 4)
        with zyx.no_grad():
            want = (x.numpy() @ lin.weight.numpy().T + lin.bias.numpy()).clip(0)
            np.testing.assert_allclose(fwd(x).numpy(), want, rtol=1e-5, atol=1e-6)
        opt.zero_grad()
        lin(x).sum().backward()
        opt.step()


def test_a_closed_over_tensor_replaced_by_another_makes_the_call_capture_again():
    state = {"w": _t(3)}
    jf = zyx.jit(lambda x: x * state["w"])
    x = _t(3)
    for _ in range(3):
        np.testing.assert_allclose(jf(x).numpy(), x.numpy() * state["w"].numpy(), rtol=1e-6)
        state["w"] = _t(3)  # a new tensor object: the old one dies


def test_nested_jit_and_tape_inside_a_jitted_function():
    inner = zyx.jit(lambda x: (x * 3.0).sum(0))

    def outer(x):
        with zyx.Tape(x) as tape:
            y = tape.realize(x + 1.0)
        return inner(y) + inner(x)

    jf = zyx.jit(outer)
    inner(_t(4, 2))  # inner has a plan of its own already
    for _ in range(3):
        x = _t(4, 2)
        np.testing.assert_allclose(jf(x).numpy(), ((x.numpy() + 1) * 3).sum(0) + (x.numpy() * 3).sum(0),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(), (0,), (2, 0, 3), (1, 1, 1, 1, 1, 1, 1, 2)])
@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_])
def test_rank_0_empty_rank_8_and_dtypes(shape, dtype):
    def fn(x):
        return (x == x), x.sum() if dtype is not np.bool_ else x.any()

    jf = zyx.jit(fn)
    for _ in range(2):
        x = zyx.tensor((RNG.standard_normal(shape) * 3).astype(dtype))
        got, want = jf(x), fn(x)
        for g, w in zip(got, want):
            assert g.shape == w.shape and g.dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())


def test_tape_with_a_variable_operand():
    t = zyx.Variable("t", 0, 16)
    x = _t(16)
    for n in (3, 9, 16):
        with zyx.Tape(x) as tape:
            y = tape.realize(zyx.where(zyx.arange(16) < t.bind(n), x, 0.0).sum())
        assert tape.replayed == (n != 3)
        np.testing.assert_allclose(y.numpy(), x.numpy()[:n].sum(), rtol=1e-5, atol=1e-6)


def test_arguments_sharing_storage_are_part_of_the_signature():
    jf = zyx.jit(lambda a, b: a * 2.0 + b)
    x, y = _t(4), _t(4)
    for a, b in ((x, x), (x, y), (y, y), (y, x), (x, x.reshape(2, 2).reshape(4))):
        np.testing.assert_allclose(jf(a, b).numpy(), a.numpy() * 2 + b.numpy(), rtol=1e-6)


def test_jitted_training_step_with_batchnorm_updates_running_statistics():
    zyx.manual_seed(5)

    def model():
        return zyx.nn.Sequential(zyx.nn.Linear(6, 8), zyx.nn.BatchNorm1d(8), zyx.nn.ReLU(), zyx.nn.Linear(8, 3))

    m1, m2 = model(), model()
    m2.load_state_dict({k: v.numpy() for k, v in m1.state_dict().items()})
    o1, o2 = zyx.optim.SGD(m1.parameters(), lr=0.1), zyx.optim.SGD(m2.parameters(), lr=0.1)

    step = _training_step
    jstep = zyx.jit(step)
    r0 = plan_stats["replays"]
    for _ in range(4):
        x, y = _t(5, 6), zyx.tensor(RNG.integers(0, 3, 5))
        assert jstep(m2, o2, x, y).item() == pytest.approx(step(m1, o1, x, y).item(), rel=1e-5)
    assert plan_stats["replays"] - r0 == 3
    for (k, a), b in zip(m1.state_dict().items(), m2.state_dict().values()):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-5, atol=1e-6, err_msg=k)


def test_a_changed_learning_rate_captures_again():
    """A plan holds the optimizer's numbers: a learning rate changed between calls (a scheduler) is
    not replayed stale, the next call captures again and then replays with the new rate."""
    zyx.manual_seed(6)
    w1 = zyx.randn(4, requires_grad=True)
    w2 = zyx.tensor(w1.numpy(), requires_grad=True)
    o1, o2 = zyx.optim.SGD([w1], lr=0.1), zyx.optim.SGD([w2], lr=0.1)

    def step(w, opt, x):
        opt.zero_grad()
        ((w * x).sum() ** 2).backward()
        opt.step()

    jstep = zyx.jit(step)
    c0 = plan_stats["captures"]
    for i in range(6):
        if i == 3:
            for o in (o1, o2):
                o.param_groups[0]["lr"] = 0.02
        x = _t(4)
        step(w1, o1, x)
        jstep(w2, o2, x)
        np.testing.assert_allclose(w2.numpy(), w1.numpy(), rtol=1e-6, err_msg=f"call {i}")
    assert plan_stats["captures"] - c0 == 2


def test_numpy_scalars_and_fresh_objects_are_never_replayed_stale():
    # a NumPy scalar keys the plan by its value; an object keys it by identity, and the cache keeps
    # the object alive, so a new object can never reuse a captured one's id and its stale plan
    class Scale:
        def __init__(self, s: float) -> None:
            self.s = s

    x = RNG.standard_normal(5).astype(np.float32)
    f = zyx.jit(lambda x, a, cfg: x * float(a) + cfg.s)
    for i in range(12):
        cfg, a = Scale(float(i)), np.float32(i % 3)
        out = f(zyx.tensor(x), a, cfg).numpy()
        del cfg, a  # CPython hands the next call's objects the same addresses
        np.testing.assert_allclose(out, x * np.float32(i % 3) + np.float32(i), rtol=1e-6)


def test_a_replayed_optimizer_step_arms_no_error_check():
    """The fused optimizer step reads the device's error word (it writes nothing while an error is unread):
    a plan holding it treats the word as a constant, so replays of a step without gathers leave no check armed
    (it made every later in-place write sync, and a jitted one run eagerly)."""
    from zyx.backend import errorflags

    lin = zyx.nn.Linear(4, 2)
    opt = zyx.optim.SGD(lin.parameters(), lr=0.1)
    x = zyx.tensor(np.ones((3, 4), np.float32)).realize()

    @zyx.jit
    def step(x):
        opt.zero_grad()
        loss = lin(x).square().mean()
        loss.backward()
        opt.step()
        return loss

    replays = plan_stats["replays"]
    for _ in range(5):
        zyx.synchronize()
        step(x)
        assert not errorflags.unread(x.device)
    assert plan_stats["replays"] - replays >= 3


def test_intermediates_share_the_buffers_a_plan_keeps():
    """A replay's intermediates live in buffers the plan keeps (sharing one where lifetimes do not overlap,
    per pool size class); its results are new buffers each replay, never overwritten by the next one."""
    from zyx.graph.plan import arena_layout

    # steps as (..., new slots, freed slots): 0 and 1 overlap; 2 reuses 0's buffer; 3 is a result (never freed)
    steps = [((0,), ()), ((1,), (0,)), ((2,), (1,)), ((3,), (2,))]
    arena_of, sizes = arena_layout(steps, [100, 100, 90, 100], [128, 128, 128, 128])
    assert arena_of == [0, 1, 0, None] and sizes == [128, 128]
    # another size class, and an unpooled size (class 0: exact sizes only) never share with a pooled one
    steps = [((0,), ()), ((1,), (0,)), ((2,), (1,)), ((3,), (2,)), ((4,), (3,))]
    arena_of, sizes = arena_layout(steps, [100, 700, 100, 100, 8], [128, 1024, 0, 0, 8])
    assert arena_of == [0, 1, 2, 3, None] and sizes == [128, 1024, 100, 100]  # 2 is read by 3's launch
    jf = zyx.jit(lambda x: ((x @ x).relu() @ x).relu().sum(0) + 1.0)
    x = _t(6, 6)
    xs = x.numpy()
    want = np.maximum(np.maximum(xs @ xs, 0) @ xs, 0).sum(0) + 1.0
    outs = [jf(x) for _ in range(4)]
    for out in outs:
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    assert len({id(o._buf) for o in outs[1:]}) == 3
