"""Tuning IR kernels end to end: search on real buffers, persistence, verification."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import zyx
from zyx.opt import ir_tuning
from zyx.opt.db import TuningDB
from zyx.opt.tuner import TuneStats


def _matmul(n: int = 48, seed: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, n)).astype(np.float32)
    b = rng.standard_normal((n, n)).astype(np.float32)
    out = (zyx.tensor(a) @ zyx.tensor(b)).numpy()
    return out, a @ b


@pytest.mark.needs_device
def test_tuning_off_by_default_searches_nothing() -> None:
    before = TuneStats.searches
    x = zyx.rand(33, 17)
    (x * 2).sum(1).numpy()
    assert TuneStats.searches == before


@pytest.mark.needs_device
def test_tuned_kernel_is_correct_and_stored(tuning: Path) -> None:
    before = TuneStats.searches
    got, ref = _matmul()
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    assert TuneStats.searches > before
    entries = TuningDB(tuning / "tuning.sqlite3").entries()
    assert entries and all(e.tuned_s <= e.baseline_s for e in entries)


@pytest.mark.needs_device
def test_new_process_finds_the_result_and_builds_nothing(tuning: Path) -> None:
    # a size no other test uses: realized graph schedules are cached per process
    _matmul(56)
    code = ("import numpy as np, zyx\n"
            "from zyx.opt.tuner import TuneStats\n"
            "from zyx.backend.program import BuildStats\n"
            "rng = np.random.default_rng(3)\n"
            "a = rng.standard_normal((56, 56)).astype(np.float32)\n"
            "b = rng.standard_normal((56, 56)).astype(np.float32)\n"
            "out = (zyx.tensor(a) @ zyx.tensor(b)).numpy()\n"
            "assert np.allclose(out, a @ b, rtol=1e-4, atol=1e-4)\n"
            "print(TuneStats.searches, TuneStats.db_hits, BuildStats.source_builds)\n")
    env = {**os.environ, "ZYX_CACHE_DIR": str(tuning), "ZYX_TUNE": "1"}
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    searches, hits, builds = map(int, res.stdout.split())
    assert (searches, builds) == (0, 0) and hits >= 1


@pytest.mark.needs_device
def test_wrong_candidates_never_win(tuning: Path, corrupt_candidates) -> None:
    corrupt_candidates(ir_tuning)
    got, ref = _matmul(40, seed=5)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)
    (entry,) = TuningDB(tuning / "tuning.sqlite3").entries()
    assert entry.candidates > 1
    assert entry.tuned_s == entry.baseline_s  # only the baseline was accepted


@pytest.mark.needs_device
def test_failing_candidates_are_skipped(tuning: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from zyx.graph import realization

    real_launch = realization.launch_kernel

    def flaky_launch(device, k, opts, args):
        if opts.local > 1 and opts.local != ir_tuning.default_opts(k, device.info.max_work_group_size,
                                                                    device.info).local:
            raise zyx.CompileError("injected build failure", source="", build_log="injected")
        return real_launch(device, k, opts, args)

    monkeypatch.setattr(realization, "launch_kernel", flaky_launch)
    got, ref = _matmul(40, seed=7)
    np.testing.assert_allclose(got, ref, rtol=1e-4, atol=1e-4)


@pytest.mark.needs_device
def test_structural_key_ignores_sizes() -> None:
    keys = set()
    for n in (32, 48):
        kernels = []
        real = ir_tuning.choose_opts

        def spy(k, device, args, launch, _real=real, _kernels=kernels):
            _kernels.append(k)
            return _real(k, device, args, launch)

        import zyx.graph.realization as realize_mod

        realize_mod.choose_opts, saved = spy, realize_mod.choose_opts
        try:
            (zyx.rand(n, n) * 3 + 1).numpy()
        finally:
            realize_mod.choose_opts = saved
        keys.add(ir_tuning.structural_key(kernels[-1]))
    assert len(keys) == 1


def test_matmul_config_names_the_row_and_column_axes() -> None:
    from zyx import dtype as dt
    from zyx.ir import expr
    from zyx.ir import symbolic as sym
    from zyx.ir.kernel import Kernel, Opts, out_var, red_var

    i, j, r = out_var(0, 64), out_var(1, 48), red_var(0, 32)
    a = expr.Load(1, dt.float32, sym.add(sym.mul(i, 32), r))
    b = expr.Load(2, dt.float32, sym.add(sym.mul(r, 48), j))
    k = Kernel((64, 48, 1), (32,), (dt.float32,) * 3,
               expr.Reduce("sum", expr.Alu("mul", (a, b), dt.float32), dt.float32))
    opts = Opts(local=1, upcast=(8, 2, 1), unroll=2, vec=8, vec_axis=1)
    cfg = ir_tuning.to_config(k, opts)
    assert cfg["up_row"] == 8 and cfg["up_last"] == 2  # the keepdim axis of size 1 is not the column axis
    assert ir_tuning.from_config(k, opts, {**cfg, "up_row": 6}).upcast == (6, 2, 1)
    assert 6 in next(p.values for p in ir_tuning.opts_space(k, 256).params if p.name == "up_row")
    plain = Kernel((64, 48), (), (dt.float32, dt.float32), expr.Load(1, dt.float32, sym.add(sym.mul(i, 48), j)))
    assert ir_tuning.from_config(plain, Opts(), {"up_row": 2, "up_last": 4}).upcast == (2, 4)
