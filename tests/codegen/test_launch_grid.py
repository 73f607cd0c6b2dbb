"""IR kernels have no bounds test: they launch exactly their work items (whole work-groups,
then the rest as groups of one at a global offset). Every element is written once, nothing
past the output, and the pair of launches counts as one kernel."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx.backend import launch as launch_mod
from zyx.backend import transfer
from zyx.codegen.ir_source import kernel_source
from zyx.kernels.ir_launch import launch_kernel

pytestmark = pytest.mark.needs_device

POISON = 0xA5


def _captured(monkeypatch):
    """Record (kernel, opts, args) of every IR kernel the lazy engine launches."""
    import zyx.graph.realization as ck

    seen = []
    real = ck.launch_kernel

    def spy(device, k, opts, args):
        seen.append((k, opts, list(args)))
        return real(device, k, opts, args)
    monkeypatch.setattr(ck, "launch_kernel", spy)
    return seen


@pytest.mark.parametrize("dtype", [zyx.float32, zyx.uint8, zyx.float16, zyx.bfloat16, zyx.int64])
@pytest.mark.parametrize("n", [1, 3, 255, 256, 257, 1000, 4099])
def test_odd_sizes_write_every_element_and_nothing_else(monkeypatch, dtype, n):
    rng = np.random.default_rng(n)
    a = rng.integers(0, 50, n).astype(dtype.numpy)
    b = rng.integers(0, 50, n).astype(dtype.numpy)
    seen = _captured(monkeypatch)
    za, zb = zyx.tensor(a).realize(), zyx.tensor(b).realize()
    got = (za * zb + za).numpy()  # one fused kernel
    want = a * b + a  # NumPy / ml_dtypes round (or wrap) each op in the dtype, as zyx does
    assert np.array_equal(got, want)
    k, opts, args = seen[-1]
    assert "return;" not in kernel_source(k, opts)
    # the same kernel again, into a poisoned buffer one element longer than its output
    dev = zyx.default_device()
    size = n * dtype.itemsize
    out = transfer.upload(dev, np.full(size + dtype.itemsize, POISON, dtype=np.uint8))
    launch_kernel(dev, k, opts, [out.cl, *args[1:]])
    back = transfer.read(out, size + dtype.itemsize)
    assert (back[size:] == POISON).all(), "wrote past the output"
    assert np.array_equal(back[:size].view(dtype.numpy), want), "an element was skipped or wrong"


def test_whole_groups_plus_rest_count_as_one_kernel(monkeypatch):
    launches = []
    real = launch_mod.launch

    def spy(ck, g, loc, a, **kw):
        launches.append((g, loc, kw.get("offset")))
        return real(ck, g, loc, a, **kw)
    monkeypatch.setattr(launch_mod, "launch", spy)
    x = zyx.ones(1000 * 256 + 17).realize()
    before = zyx.kernel_count()
    y = (x * 3 + 1).numpy()
    assert zyx.kernel_count() == before + 1
    assert (y == 4).all()
    glob, local, offset = launches[-1]
    assert offset == (1000 * 256 // local[0] * local[0],) and glob[0] == 1000 * 256 + 17 - offset[0] and local == (1,)
    assert launches[-2][0][0] % launches[-2][1][0] == 0 and launches[-2][2] is None


def test_the_exact_grid_is_replayed_from_the_schedule_cache():
    x = zyx.arange(777, dtype=zyx.float32).realize()
    for _ in range(3):  # the second and third runs replay the recorded launches
        np.testing.assert_array_equal(((x + 1) * 2).numpy(), (np.arange(777, dtype=np.float32) + 1) * 2)


def test_split_reduces_keep_whole_groups(monkeypatch):
    """A split reduce (items sharing one output's reduce through local memory) launches whole
    groups in one launch, its items past the end reaching the barriers."""
    a = np.random.default_rng(1).standard_normal((3, 5000)).astype(np.float32)
    seen = _captured(monkeypatch)
    launches = []
    real = launch_mod.launch
    monkeypatch.setattr(launch_mod, "launch",
                        lambda ck, g, loc, a, **kw: launches.append((g, loc, kw)) or real(ck, g, loc, a, **kw))
    got = zyx.tensor(a).sum(1).numpy()
    np.testing.assert_allclose(got, a.sum(1), rtol=1e-5)
    k, opts, _ = seen[-1]
    if opts.split > 1:
        g, loc, kw = launches[-1]
        assert g[0] % loc[0] == 0 and not kw.get("offset")
