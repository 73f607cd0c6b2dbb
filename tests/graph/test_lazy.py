"""The lazy engine: fusion by kernel counts, views launch nothing, lifetimes and no leaks."""
from __future__ import annotations

import gc

import numpy as np
import pytest

import zyx
import zyx.nn.functional as F
from zyx.backend.launch import recording
from zyx.nn import functional_attention

pytestmark = pytest.mark.needs_device


def _count(fn):
    before = zyx.kernel_count()
    out = fn()
    out.realize()
    return zyx.kernel_count() - before, out


@pytest.fixture
def abc():
    rng = np.random.default_rng(3)
    a, b = (zyx.tensor(rng.uniform(-1, 1, (16, 24)).astype(np.float32)) for _ in range(2))
    c = zyx.tensor(rng.uniform(-1, 1, (16,)).astype(np.float32))
    for t in (a, b, c):
        t.realize()
    return a, b, c


def test_fusion_kernel_counts(abc):
    a, b, c = abc
    w = zyx.tensor(np.ones((24, 16), np.float32)).realize()
    d = zyx.tensor(np.ones((16, 16), np.float32)).realize()
    assert _count(lambda: ((a + b) * a).exp().sqrt())[0] == 1
    assert _count(lambda: (a * b).sum(1))[0] == 1
    assert _count(lambda: (a * b).sum(1) + c)[0] == 1
    assert _count(lambda: a.T.reshape(-1)[::3] * 2)[0] == 1
    assert _count(lambda: a @ w)[0] == 1
    assert _count(lambda: (a @ w).relu() + d)[0] == 1
    assert _count(lambda: a.softmax(1))[0] <= 3
    assert _count(lambda: F.layer_norm(a, (24,)))[0] <= 4


def test_two_matmuls_of_one_input_are_never_sibling_reduces(abc):
    """SwiGLU's ``silu(x @ a) * (x @ b)``: the matmuls reduce over the same axis, but one kernel holding both
    fits no matmul tiling (it ran ~70x slower): one is stored, the other fuses with the epilogue. Sibling
    reduces of one row (``(a * b).sum(1) + a.sum(1)``, no broadcast operand) still share a kernel."""
    a, b, c = abc
    rng = np.random.default_rng(8)
    w1, w2 = (zyx.tensor(rng.uniform(-1, 1, (24, 20)).astype(np.float32)).realize() for _ in range(2))
    with recording() as launches:
        out = (F.silu(a @ w1) * (a @ w2)).realize()
    reduces = [k.name for k, *_ in launches if k.name.startswith("zyx_r_")]
    assert len(reduces) == 2, reduces
    an, w1n, w2n = a.numpy(), w1.numpy(), w2.numpy()
    g = an @ w1n
    np.testing.assert_allclose(out.numpy(), g / (1 + np.exp(-g)) * (an @ w2n), rtol=1e-5, atol=1e-6)
    assert _count(lambda: (a * b).sum(1) + a.sum(1))[0] == 1


def test_row_fusion_kernel_counts(abc):
    """A reduce broadcast back along the last axis fuses with its consumer (one row kernel)."""
    a, _, c = abc
    assert _count(lambda: a.softmax(1))[0] == 1
    assert _count(lambda: F.log_softmax(a, -1))[0] == 1
    assert _count(lambda: F.layer_norm(a, (24,), a[0], a[1]))[0] == 1
    n, out = _count(lambda: (a - a.max(1, keepdim=True)) / (a.max(1, keepdim=True) + 2))
    assert n == 1  # the same row reduce read twice is computed once per row
    an = a.numpy()
    np.testing.assert_allclose(out.numpy(), (an - an.max(1, keepdims=True)) / (an.max(1, keepdims=True) + 2),
                               rtol=1e-6)
    assert _count(lambda: a.softmax(0))[0] <= 3  # a reduce over the first axis: not a row kernel


def test_softmax_of_a_computed_value_is_one_row_kernel(monkeypatch):
    """A shared pending matmul (read by the max and by the exp) is stored first, then softmax is one row kernel,
    not an exp kernel plus a normalizing kernel; so is the composed attention (the kernels turned off)."""
    monkeypatch.setattr(functional_attention, "use_kernels", lambda *args: False)
    rng = np.random.default_rng(5)
    qn, kn, vn = (rng.standard_normal((2, 16, 8)).astype(np.float32) for _ in range(3))
    q, k, v = (zyx.tensor(t).realize() for t in (qn, kn, vn))
    n, out = _count(lambda: (q @ k.transpose(1, 2)).softmax(-1))
    assert n == 2  # the matmul, then the row softmax
    s = qn @ kn.transpose(0, 2, 1)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), e / e.sum(-1, keepdims=True), rtol=2e-6, atol=1e-7)
    assert _count(lambda: F.scaled_dot_product_attention(q, k, v))[0] == 3  # scores, softmax, @ v
    n, out = _count(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
    assert n == 4  # the causal mask, masked scores, softmax, @ v
    s = np.where(np.tril(np.ones((16, 16), bool)), s / np.sqrt(8), -np.inf)
    e = np.exp(s - s.max(-1, keepdims=True))
    np.testing.assert_allclose(out.numpy(), (e / e.sum(-1, keepdims=True)) @ vn, rtol=2e-5, atol=1e-6)


def test_fused_values(abc):
    a, b, c = abc
    an, bn, cn = a.numpy(), b.numpy(), c.numpy()
    np.testing.assert_allclose(((a * b).sum(1) + c).numpy(), (an * bn).sum(1) + cn, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose((a.T.reshape(-1)[::3] * 2).numpy(), an.T.reshape(-1)[::3] * 2)


def test_views_launch_nothing(abc):
    a, _, _ = abc
    before = zyx.kernel_count()
    v = a.T[1:, ::2].unsqueeze(0).expand(3, -1, -1).permute(1, 0, 2).reshape(23, 3, 8)[:, 1]
    v = v.narrow(0, 2, 5).squeeze()
    assert zyx.kernel_count() == before
    np.testing.assert_array_equal(v.numpy(), np.broadcast_to(a.numpy().T[1:, ::2][None], (3, 23, 8))
                                  .transpose(1, 0, 2)[:, 1][2:7])


def test_ops_are_lazy_and_shared_values_computed_once(abc):
    a, b, _ = abc
    before = zyx.kernel_count()
    x = (a * b).exp()
    y = x + 1
    assert zyx.kernel_count() == before  # nothing ran
    x.realize()
    n = zyx.kernel_count()
    z = x * 2 + x * 3  # x is realized: read twice, computed once
    z.realize()
    assert zyx.kernel_count() == n + 1
    np.testing.assert_allclose(z.numpy(), x.numpy() * 5, rtol=1e-6)
    del y


def test_dropped_pending_work_never_runs(abc):
    a, b, _ = abc
    before = zyx.kernel_count()
    for _ in range(10):
        t = (a + b).exp()
        del t
    gc.collect()
    assert zyx.kernel_count() == before


def test_no_leaks_after_50_steps():
    gc.collect()
    start = zyx.memory_stats()["live_buffers"]
    x = zyx.ones(32, 32)
    w = zyx.ones(32, 32) * 0.01
    for _ in range(50):
        x = ((x @ w).relu() + x.sum(1, keepdim=True) * 0.001).realize()
    x.numpy()
    del x, w
    gc.collect()
    assert zyx.memory_stats()["live_buffers"] == start


def test_chain_on_64mib_tensor_holds_at_most_three_buffers():
    n = 16 * 1024 * 1024  # 64 MiB of float32
    gc.collect()
    base = zyx.memory_stats()["bytes_in_use"]
    x = zyx.zeros(n)
    worst = 0
    for _ in range(30):
        x = (x + 1).realize()
        worst = max(worst, zyx.memory_stats()["bytes_in_use"] - base)
    assert x[n - 1].item() == 30.0
    assert worst <= 3 * n * 4 + (1 << 20)
    del x


def test_in_place_write_runs_pending_readers_first():
    x = zyx.tensor(np.arange(6, dtype=np.float32))
    y = x * 2  # pending reader of x's buffer
    buf = x._buf  # what in-place writers use: flushes pending readers first
    from zyx.backend import transfer

    transfer.write(buf, np.full(6, 100, np.float32))
    np.testing.assert_array_equal(y.numpy(), np.arange(6) * 2)
    np.testing.assert_array_equal((x + 0).numpy(), np.full(6, 100, np.float32))


def test_a_long_lived_buffer_keeps_a_short_list_of_pending_readers():
    """Thousands of pending readers of one weight come and go: its reader list is pruned of dead
    and realized nodes, and an in-place write still runs the live pending ones first."""
    w = zyx.tensor(np.ones(8, dtype=np.float32)).realize()
    node = w._data  # the realized node: pending readers of its buffer are listed on it
    for i in range(3000):
        y = w * float(i)
        if i % 2:
            y.realize()
        del y
    assert len(node.readers or []) < 128
    live = [w + float(i) for i in range(5)]  # still pending
    w[:] = 7.0  # in place: the pending readers run first, on the old values
    for i, t in enumerate(live):
        np.testing.assert_array_equal(t.numpy(), np.full(8, 1.0 + i, np.float32))
    np.testing.assert_array_equal(w.numpy(), np.full(8, 7.0, np.float32))


def test_second_run_of_same_graph_structure_does_no_codegen(monkeypatch):
    from zyx import graph
    from zyx.codegen import ir_source

    calls = []
    real_source = ir_source.source
    monkeypatch.setattr(ir_source, "source", lambda *a, **k: (calls.append(1), real_source(*a, **k))[1])
    rng = np.random.default_rng(5)

    def compute(a, b):
        # softmax over dim 0 is three kernels (dim 1 would make the whole graph one row kernel)
        return ((a * b + 1.5).exp().sum(1, keepdim=True) + a.softmax(0)) / (b - -0.0)

    a, b = (zyx.tensor(rng.uniform(-1, 1, (5, 37)).astype(np.float32)) for _ in range(2))
    want = compute(a, b).numpy()
    c, d = (zyx.tensor(rng.uniform(-1, 1, (5, 37)).astype(np.float32)) for _ in range(2))
    want2 = compute(c, d).numpy()  # same structure, other buffers: replayed
    builds, hits = graph.schedule_stats["builds"], graph.schedule_stats["hits"]
    n_calls, n_kernels = len(calls), zyx.kernel_count()
    got = compute(a, b).numpy()
    assert graph.schedule_stats["builds"] == builds and graph.schedule_stats["hits"] == hits + 1
    assert len(calls) == n_calls  # no codegen
    assert zyx.kernel_count() - n_kernels >= 3  # softmax + sum + final, all replayed
    np.testing.assert_array_equal(got, want)
    an, bn = a.numpy(), b.numpy()
    e = np.exp(an - an.max(0, keepdims=True))
    np.testing.assert_allclose(want, (np.exp(an * bn + 1.5).sum(1, keepdims=True) + e / e.sum(0, keepdims=True)) / bn,
                               rtol=1e-4, atol=1e-5)
    cn, dn = c.numpy(), d.numpy()
    e = np.exp(cn - cn.max(0, keepdims=True))
    np.testing.assert_allclose(want2, (np.exp(cn * dn + 1.5).sum(1, keepdims=True) + e / e.sum(0, keepdims=True)) / dn,
                               rtol=1e-4, atol=1e-5)


def test_schedule_cache_tells_apart_constants_views_and_shared_buffers():
    x = zyx.tensor(np.array([1.0, -2.0, 3.0], np.float32))
    y = zyx.tensor(np.array([5.0, 6.0, 7.0], np.float32))
    assert np.signbit((x * 0.0).numpy()).tolist() == [False, True, False]
    assert np.signbit((x * -0.0).numpy()).tolist() == [True, False, True]
    np.testing.assert_array_equal((x + y).numpy(), [6, 4, 10])
    np.testing.assert_array_equal((x + x).numpy(), [2, -4, 6])  # one buffer read twice
    np.testing.assert_array_equal((y + x).numpy(), [6, 4, 10])
    np.testing.assert_array_equal((x[::-1] + y).numpy(), [8, 4, 8])
    np.testing.assert_array_equal((x + y[::-1]).numpy(), [8, 4, 8])
    assert np.isnan((x + float("nan")).numpy()).all()
    np.testing.assert_array_equal((x + 1).numpy(), [2, -1, 4])


def test_replayed_schedules_leak_nothing():
    gc.collect()
    start = zyx.memory_stats()["live_buffers"]
    x = zyx.ones(64)
    for _ in range(20):
        x = ((x * 2).softmax(0) + 1).realize()
    assert x.numpy().shape == (64,)
    del x
    gc.collect()
    assert zyx.memory_stats()["live_buffers"] == start


def _second_device():
    from zyx.backend.device import Device

    d0 = zyx.default_device()
    return d0, Device(d0.cl_device, d0.platform_index, d0.device_index)


def _on_default(device, make):
    """``make()`` run with ``device`` as the default device: tensors there, not pinned."""
    before = zyx.default_device()
    zyx.set_default_device(device)
    try:
        return make()
    finally:
        zyx.set_default_device(before)


def test_mixed_devices_run_where_most_input_bytes_are():
    d0, d1 = _second_device()
    assert d1 is not d0 and d1.context is not d0.context
    an = np.arange(6, dtype=np.float32)
    bign = np.arange(24, dtype=np.float32).reshape(4, 6)
    a = zyx.tensor(an)
    b, big = _on_default(d1, lambda: (zyx.tensor(an * 10), zyx.tensor(bign)))
    assert b.device is d1 and not (a.pinned or b.pinned or big.pinned)
    c = a + b  # equal bytes: the first operand's device
    assert c.device is d0
    np.testing.assert_array_equal(c.numpy(), an * 11)
    e = a * big  # most bytes on d1
    assert e.device is d1
    np.testing.assert_array_equal(e.numpy(), an * bign)
    f = zyx.where(a > 2, b, big)
    assert f.device is d1
    np.testing.assert_array_equal(f.numpy(), np.where(an > 2, an * 10, bign))
    g = ((a.exp() + 1) @ big.T).relu()  # pending work of d0 runs there, then moves (a transfer node)
    assert g.device is d1
    np.testing.assert_allclose(g.numpy(), np.maximum((np.exp(an) + 1) @ bign.T, 0), rtol=1e-5)
    h = (a.sum() + b.sum()) * 2  # a stored reduce on d0 copied over
    np.testing.assert_allclose(h.item(), (an.sum() + an.sum() * 10) * 2)
    assert zyx.memory_stats(d1)["live_buffers"] >= 2


def test_a_pinned_device_wins_over_input_bytes():
    d0, d1 = _second_device()
    an = np.arange(6, dtype=np.float32)
    bign = np.arange(24, dtype=np.float32).reshape(4, 6)
    big = zyx.tensor(bign).to(d1)  # moved there: pinned to d1
    assert big.pinned and big.device is d1
    small = zyx.tensor(an)  # default device, not named: not pinned
    assert not small.pinned
    assert (small * big).device is d1
    named = zyx.tensor(an, device=d0)  # the device named: pinned to d0
    assert named.pinned
    e = named * big  # both pinned: the pinned device holding more of the bytes
    assert e.device is d1 and e.pinned
    np.testing.assert_array_equal(e.numpy(), an * bign)
    assert (named * big[0]).device is d0  # equal bytes: the first pinned operand's
    derived = (named.exp() + 1).sum(0, keepdim=True)[None]  # computed from a pinned tensor: pinned
    assert derived.pinned and not (small + 1).pinned
    f = derived * _on_default(d1, lambda: zyx.tensor(bign))  # the derived pinned operand decides
    assert f.device is d0
    g = zyx.zeros_like(named) + _on_default(d1, lambda: zyx.tensor(bign))  # *_like keeps the pin of its model
    assert g.device is d0
    assert zyx.zeros(3, device=d1).pinned and zyx.randn(3, device=d1).pinned and not zyx.zeros(3).pinned
    w = zyx.tensor(an).realize()
    w[1:3] = 5.0  # an in-place write keeps the tensor's pin state
    assert not w.pinned
    v = zyx.tensor(an, device=d0)
    v[1:3] = 5.0
    assert v.pinned
    np.testing.assert_array_equal(f.numpy(), (np.exp(an) + 1).sum(0, keepdims=True)[None] * bign)
    # contract ops carry the pin too, and cat follows it like any kernel
    assert named.flip(0).pinned and named[None].expand(2, 6).contiguous().pinned and not small.roll(1, 0).pinned
    joined = zyx.cat([big.reshape(-1), named])  # big is on d1 and pinned there: the first pinned input wins
    assert joined.device is d1 and joined.pinned
    np.testing.assert_array_equal(joined.numpy(), np.concatenate([bign.reshape(-1), an]))
    assert zyx.cat([_on_default(d1, lambda: zyx.tensor(bign.reshape(-1))), named]).device is d0
    # helper tensors zyx makes inside an op (causal mask, dropout draw, one-hot classes) pin nothing
    q = zyx.tensor(np.ones((1, 4, 2), np.float32))
    assert not F.scaled_dot_product_attention(q, q, q, is_causal=True).pinned
    assert not F.dropout(q, 0.5).pinned and F.dropout(zyx.ones(4, device=d0), 0.5).pinned
    assert not F.cross_entropy(zyx.tensor(np.ones((2, 3), np.float32)), zyx.tensor([0, 2])).pinned


def test_mixed_devices_prefer_a_device_with_room(monkeypatch):
    from zyx import graph

    d0, d1 = _second_device()
    assert graph.choose_device([(d0, 100), (d1, 400)], 64) is d1
    monkeypatch.setattr(d1.pool, "bytes_in_use", d1.global_mem_bytes - 10)
    assert graph.choose_device([(d0, 100), (d1, 400)], 64) is d0


def test_new_float_scalars_reuse_the_compiled_kernel():
    """A float scalar is a kernel argument, not a literal: a loop over many values builds one
    schedule and compiles one kernel, and every value (NaN, inf, -0.0 included) lands exactly."""
    from zyx import graph

    a = np.linspace(-3, 3, 257).astype(np.float32)
    for np_dt in (np.float32, np.float64):
        x = zyx.tensor(a.astype(np_dt)).realize()
        (x * 0.5 + 0.25).realize()
        builds = graph.schedule_stats["builds"]
        for s in (1.5, -2.75, 1e-30, float("inf"), float("nan"), -0.0, 0.1):
            got = (x * s + 0.25).numpy()
            with np.errstate(invalid="ignore"):
                want = a.astype(np_dt) * np_dt(s) + np_dt(0.25)
            np.testing.assert_array_equal(got.view(f"u{got.itemsize}"), want.view(f"u{want.itemsize}"))
        assert graph.schedule_stats["builds"] == builds, "a new scalar value rebuilt the schedule"


def test_scalar_arguments_keep_16_bit_rounding_rules():
    """bfloat16 ``x + s`` rounds s to bfloat16 first and ``x * s`` does not (as PyTorch): with s a
    kernel argument, both hold for every value, with one schedule per op."""
    import ml_dtypes

    from zyx import graph

    x = zyx.tensor(np.array([100.0, 1.0], np.float32)).cast(zyx.bfloat16).realize()
    (x * 1.0).realize(), (x + 1.0).realize()
    builds = graph.schedule_stats["builds"]
    bf = ml_dtypes.bfloat16
    for s in (1.006, 0.0039063, 3.3):
        got_mul = (x * s).numpy()
        got_add = (x + s).numpy()
        xs = np.array([100.0, 1.0], np.float32)
        np.testing.assert_array_equal(got_mul, (xs * np.float32(s)).astype(bf))
        np.testing.assert_array_equal(got_add, (xs + np.float32(np.float32(s).astype(bf))).astype(bf))
    assert graph.schedule_stats["builds"] == builds


@pytest.mark.parametrize("dt", ["int8", "uint8", "int16", "int32", "int64", "uint32", "uint64"])
def test_integer_scalars_are_arguments_and_wrap_like_literals(dt):
    """Integer add/mul/compare/where operands are kernel arguments (one schedule for a loop of
    values); a value outside the dtype wraps exactly as PyTorch's int ops do; ``//`` keeps a
    literal and still gives the right values."""
    from zyx import graph

    a = np.arange(-5, 6).astype(np.int64).astype(dt)
    x = zyx.tensor(a).realize()
    ((x + 1) * 2 > 3).realize()
    builds = graph.schedule_stats["builds"]
    for s in (0, 3, 200, 300, -7, 2**40 + 5):
        wrapped = np.array(s % 2**64, dtype=np.uint64).astype(dt)  # the value modulo 2**bits, as the dtype
        got = ((x + s) * 2 > int(wrapped)).numpy()
        with np.errstate(over="ignore"):
            want = ((a + wrapped) * np.array(2, dt)) > wrapped
        np.testing.assert_array_equal(got, want, err_msg=f"{dt} {s}")
    assert graph.schedule_stats["builds"] == builds
    np.testing.assert_array_equal(zyx.where(x > 0, x, 7).numpy(), np.where(a > 0, a, np.array(7, dt)))
    np.testing.assert_array_equal((x // 3).numpy(), a // np.array(3, dt))


def test_thousands_of_lazy_ops_run_in_kernels_of_bounded_depth():
    # a pending chain deeper than Python's recursion limit allows to walk is cut into realized pieces
    from zyx.graph.build import MAX_PENDING_DEPTH

    x, want = zyx.ones(5), np.ones(5, np.float32)
    before = zyx.kernel_count()
    for _ in range(3000):  # 6000 pending nodes
        x = x * 1.0001 + 0.5
        want = want * np.float32(1.0001) + np.float32(0.5)
    np.testing.assert_array_equal(x.numpy(), want)
    assert zyx.kernel_count() - before <= 6000 // (MAX_PENDING_DEPTH // 2) + 2


def test_deep_recurrences_and_their_gradients():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    w0, b0 = rng.uniform(-0.3, 0.3, (8, 8)).astype(np.float32), rng.standard_normal((1, 8)).astype(np.float32)
    w, b = zyx.tensor(w0, requires_grad=True), zyx.tensor(b0)
    tw, tb = torch.tensor(w0, requires_grad=True), torch.tensor(b0)
    h, th = zyx.zeros(1, 8), torch.zeros(1, 8)
    for _ in range(400):  # a reduce (matmul) and a tanh per step: 400 kernel boundaries pending
        h, th = (h @ w + b).tanh(), (th @ tw + tb).tanh()
    h.sum().backward()
    th.sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-3, atol=1e-4)
    y = zyx.ones(3, requires_grad=True)
    z = y
    for _ in range(3000):
        z = z * 1.0001
    z.sum().backward()
    np.testing.assert_allclose(y.grad.numpy(), np.full(3, 1.0001 ** 3000, np.float32), rtol=1e-3)


def test_a_tape_of_a_deep_chain_replays():
    x = zyx.tensor(np.linspace(-1, 1, 7, dtype=np.float32)).realize()
    for step in range(2):
        with zyx.Tape(x) as tape:
            y = x
            for _ in range(400):
                y = (y * 0.999).sin()
            (out,) = [tape.realize(y)]
        assert tape.replayed == (step > 0)
        want = np.linspace(-1, 1, 7, dtype=np.float32)
        for _ in range(400):
            want = np.sin(want * np.float32(0.999))
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ offsets as kernel arguments

def _builds() -> int:
    from zyx import graph

    return graph.schedule_stats["builds"]


def test_rows_at_new_offsets_reuse_the_schedule_and_the_program(monkeypatch):
    """``x[i]`` of a realized buffer passes the row's offset as a kernel argument: every row of one
    alignment class is one schedule and one program (was one of each per row), with each row's values."""
    from zyx import graph
    from zyx.backend import program

    built = []
    real = program._build_from_source
    monkeypatch.setattr(program, "_build_from_source", lambda *a: (built.append(a[1]), real(*a))[1])
    a = np.arange(61 * 29, dtype=np.float32).reshape(61, 29)  # rows of 29: odd rows start at odd offsets
    x = zyx.tensor(a).realize()
    np.testing.assert_array_equal((x[1] * 3.0).numpy(), a[1] * 3)
    builds, hits, programs = _builds(), graph.schedule_stats["hits"], len(built)
    for i in range(3, 61, 2):
        np.testing.assert_array_equal((x[i] * 3.0).numpy(), a[i] * 3)
    assert _builds() == builds, "a new offset rebuilt the schedule"
    assert graph.schedule_stats["hits"] == hits + 29
    assert len(built) == programs, "a new offset compiled a program"
    for i in range(0, 61, 2):  # offset 0 (a literal) and the other alignments (16 at most): a few more
        np.testing.assert_array_equal((x[i] * 3.0).numpy(), a[i] * 3)
    assert _builds() - builds <= 5


def test_a_recurrence_over_slices_builds_a_bounded_number_of_schedules():
    """An RNN step ``tanh(h @ w + xs[t:t+1])`` realized each step reuses its schedules: the step's
    input slice is an argument (was one schedule and program per step)."""
    rng = np.random.default_rng(8)
    wn, xn = rng.uniform(-0.5, 0.5, (8, 8)).astype(np.float32), rng.standard_normal((40, 8)).astype(np.float32)
    w, xs = zyx.tensor(wn), zyx.tensor(xn).realize()
    h, hn = zyx.zeros(1, 8), np.zeros((1, 8), np.float32)
    counts = []
    for t in range(40):
        h = (h @ w + xs[t:t + 1]).tanh().realize()
        hn = np.tanh(hn @ wn + xn[t:t + 1])
        counts.append(_builds())
    assert counts[-1] == counts[4], "later steps built new schedules"
    np.testing.assert_allclose(h.numpy(), hn, rtol=1e-4, atol=1e-5)


OFFSET_DTYPES = ["float32", "float16", "bfloat16", "float64", "int8", "uint8", "int16", "int32", "int64", "bool"]


@pytest.mark.parametrize("dt", OFFSET_DTYPES)
def test_reads_at_offsets_of_every_alignment(dt):
    """Slices at offsets 1..17 (every alignment class, two offset arguments in one kernel, a copy
    of raw bits) read the right elements, in at most one schedule per alignment class and kind."""
    rng = np.random.default_rng(9)
    a = (rng.standard_normal(160) * 20).astype(np.float32)
    x = zyx.tensor(a).cast(dt).realize()
    xn = x.numpy()
    before = _builds()
    for o in range(1, 18):
        n = 40 + o % 3  # a length of each class too
        np.testing.assert_array_equal(x[o:o + n].clone().numpy(), xn[o:o + n], err_msg=f"{dt} copy at {o}")
        np.testing.assert_array_equal((x[o:o + n] == x[o + 1:o + n + 1]).numpy(), xn[o:o + n] == xn[o + 1:o + n + 1],
                                      err_msg=f"{dt} compare at {o}")
    # 3 lengths x 5 alignment classes x 2 kinds; one per offset was 34
    assert _builds() - before <= 30


def test_strided_reversed_and_2d_slices_with_offsets():
    """Offsets of strided, reversed and 2-D views (``x[3:, 5:]``), of a reduce's input and of a gathered
    table: NumPy's values, with one schedule per alignment class of each shape."""
    rng = np.random.default_rng(10)
    a = rng.standard_normal(400).astype(np.float32)
    m = rng.standard_normal((37, 41)).astype(np.float32)
    x, xm = zyx.tensor(a).realize(), zyx.tensor(m).realize()
    idx = zyx.tensor(np.array([0, 3, 2, 1], np.int64))
    before = _builds()
    for o in range(1, 18):
        np.testing.assert_array_equal((x[o::3][:50] + 1).numpy(), a[o::3][:50] + 1)
        np.testing.assert_array_equal((x[o + 59::-1][:60] * 2).numpy(), a[o + 59::-1][:60] * 2)  # stride -1
        np.testing.assert_allclose(x[o:o + 64].sum().numpy(), a[o:o + 64].sum(), rtol=1e-5, atol=1e-5)
        i, j = o % 6 + 1, o // 3 + 1
        np.testing.assert_array_equal((xm[3:, 5:][i:i + 20, j:j + 20] - 1).numpy(), m[3:, 5:][i:i + 20, j:j + 20] - 1)
        np.testing.assert_array_equal((xm[i:i + 9, j:j + 30:2].T * 3).numpy(), m[i:i + 9, j:j + 30:2].T * 3)
        np.testing.assert_array_equal(xm[o:o + 10][idx].numpy(), m[o:o + 10][[0, 3, 2, 1]])
    np.testing.assert_array_equal((xm[3:, 5:] * 2).numpy(), m[3:, 5:] * 2)
    assert _builds() - before <= 6 * 5 + 1  # six kinds x five alignment classes; one per offset was 103
