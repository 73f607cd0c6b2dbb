"""zyx.nn.parallel.reducer without a process group: buckets, and the packing of a bucket's gradients into
one flat tensor by one kernel and back into views by none (the two-rank behaviour is tests/distributed)."""
from __future__ import annotations

import numpy as np
import pytest

import zyx
from zyx import nn
from zyx.nn.parallel.reducer import make_buckets, pack, unpack

pytestmark = pytest.mark.needs_device


@pytest.mark.parametrize("dtype", ["float32", "float16", "int64"])
def test_pack_is_one_kernel_and_unpack_none(dtype):
    rng = np.random.default_rng(0)
    shapes = [(3, 4), (7,), (2, 3, 5), (1,), (0,), (4, 1)]
    arrays = [(rng.standard_normal(s) * 10).astype(dtype) for s in shapes]
    tensors = [zyx.from_numpy(a) for a in arrays]
    for t in tensors:
        t.realize()
    before = zyx.kernel_count()
    flat = pack(tensors).numpy()
    assert zyx.kernel_count() - before == 1
    np.testing.assert_array_equal(flat, np.concatenate([a.reshape(-1) for a in arrays]))
    uploaded = zyx.from_numpy(flat)
    uploaded.realize()
    before = zyx.kernel_count()
    views = unpack(uploaded, shapes)
    assert zyx.kernel_count() == before  # views of the one buffer: no copy
    for v, a in zip(views, arrays):
        np.testing.assert_array_equal(v.numpy(), a)


def test_buckets_run_backwards_by_dtype_with_a_small_first_one():
    model = nn.Sequential(nn.Linear(600, 500), nn.Linear(500, 10), nn.Linear(10, 10))  # 300,500 floats: 1.2 MB
    model[2].half()
    named = list(model.named_parameters())
    buckets = make_buckets(named, 25 * 2**20)
    # backward finishes the last layer first; float16 apart; the 1 MiB first bucket closes before 0.weight
    assert [b.names for b in buckets] == [["2.bias", "2.weight"], ["1.bias", "1.weight", "0.bias"], ["0.weight"]]
    assert [b.dtype.name for b in buckets] == ["float16", "float32", "float32"]
    tiny = make_buckets(named, 1)  # a cap below one parameter: each alone
    assert [len(b.params) for b in tiny] == [1] * len(named)
