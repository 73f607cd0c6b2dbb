"""ZYX_HEURISTICS: the GPU (or CPU) heuristics on any device, decided in one place
(``settings.heuristics_kind``): IR opts (grouped reductions through local memory, GPU matmul
tiles, row work-groups), the contract kernels' GPU variants, and cache keys that keep the
two modes' kernels and tuning results apart."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import zyx
from zyx import dtype as dt
from zyx import settings
from zyx.codegen.ir_source import kernel_source
from zyx.ir import expr
from zyx.ir import symbolic as sym
from zyx.ir.kernel import Kernel, out_var, red_var
from zyx.kernels import contracts as kernels
from zyx.kernels.contracts import common
from zyx.opt.heuristics import default_opts

CPU = SimpleNamespace(kind="cpu", compute_units=2, preferred_vector_width={"float": 8, "double": 4})
GPU = SimpleNamespace(kind="gpu", compute_units=132, preferred_vector_width={"float": 1, "double": 1})


def _sum_all(n: int) -> Kernel:
    return Kernel((1,), (n,), (dt.float32, dt.float32),
                  expr.Reduce("sum", expr.Load(1, dt.float32, red_var(0, n)), dt.float32))


def _matmul(n: int, m: int, kk: int) -> Kernel:
    i, j, r = out_var(0, n), out_var(1, m), red_var(0, kk)
    a = expr.Load(1, dt.float32, sym.add(sym.mul(i, kk), r))
    b = expr.Load(2, dt.float32, sym.add(sym.mul(r, m), j))
    return Kernel((n, m), (kk,), (dt.float32,) * 3, expr.Reduce("sum", expr.Alu("mul", (a, b), dt.float32), dt.float32))


def test_heuristics_kind_is_the_setting_or_the_device_kind(monkeypatch):
    acc = SimpleNamespace(kind="accelerator")
    monkeypatch.setattr(settings, "HEURISTICS", "auto")
    assert [settings.heuristics_kind(d) for d in (CPU, GPU, acc, None)] == ["cpu", "gpu", "gpu", "gpu"]
    assert settings.heuristics_tag(CPU) == settings.heuristics_tag(GPU) == ""
    settings.set_heuristics("GPU")
    assert [settings.heuristics_kind(d) for d in (CPU, GPU, acc)] == ["gpu"] * 3
    assert settings.heuristics_tag(CPU) == "|h=gpu" and settings.heuristics_tag(GPU) == ""
    settings.set_heuristics("cpu")
    assert settings.heuristics_kind(GPU) == "cpu" and settings.heuristics_tag(GPU) == "|h=cpu"
    with pytest.raises(ValueError, match="auto, cpu, gpu"):
        settings.set_heuristics("fast")


def test_env_var_is_read_at_start(run_python):
    code = "from zyx import settings; print(settings.HEURISTICS)"
    assert run_python(code, env={"ZYX_HEURISTICS": " GPU "}).stdout.strip() == "gpu"
    res = run_python(code, env={"ZYX_HEURISTICS": "gpus"})
    assert res.stdout.strip() == "auto" and "ZYX_HEURISTICS='gpus'" in res.stderr


def test_gpu_setting_chooses_the_gpu_opts_on_a_cpu(monkeypatch):
    full, mm = _sum_all(100_003), _matmul(1024, 1024, 1024)
    monkeypatch.setattr(settings, "HEURISTICS", "auto")
    cpu_full, cpu_mm = default_opts(full, 1024, CPU), default_opts(mm, 256, CPU)
    assert cpu_full.split == 16 and cpu_mm.vec == 8 and cpu_mm.upcast == (8, 2)
    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    for k, max_local in ((full, 1024), (mm, 256)):  # on the CPU exactly what a GPU gets
        assert default_opts(k, max_local, CPU) == default_opts(k, max_local, GPU)
    o = default_opts(full, 1024, CPU)
    assert o.split == 256 and o.local == 256  # a grouped reduction through local memory
    src = kernel_source(full, o)
    assert "__local float zyx_part" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src
    o = default_opts(mm, 256, CPU)
    assert o.upcast == (4, 4) and o.vec == 1 and o.local == 64  # 4 x 4 register tiles, 64-item work-groups
    assert "barrier" not in kernel_source(_sum_all(100), default_opts(_sum_all(100), 1024, CPU))  # too short to split
    monkeypatch.setattr(settings, "HEURISTICS", "cpu")
    assert default_opts(full, 1024, GPU) == cpu_full  # the other way round (given the CPU's vector widths)


def _captured(monkeypatch):
    import zyx.graph.realization as realize_mod

    seen = []
    choose = realize_mod.choose_opts

    def spy(k, device, args, launch):
        opts = choose(k, device, args, launch)
        seen.append((k, opts))
        return opts

    monkeypatch.setattr(realize_mod, "choose_opts", spy)
    return seen


def test_gpu_paths_through_the_api_and_the_schedule_cache(device, monkeypatch):
    """A reduce, a matmul and a softmax with the GPU heuristics on a CPU device, against NumPy; switching
    the mode in-process builds new kernels (a cached schedule of the other mode is not replayed)."""
    rng = np.random.default_rng(3)
    a = rng.standard_normal(50_001).astype(np.float32)
    b, c = rng.standard_normal((36, 53)).astype(np.float32), rng.standard_normal((53, 44)).astype(np.float32)
    za, zb, zc = (zyx.tensor(x, device=device) for x in (a, b, c))
    seen = _captured(monkeypatch)
    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    np.testing.assert_allclose(za.sum().numpy(), a.astype(np.float64).sum(), rtol=1e-4)
    k, o = seen[-1]
    assert o.split > 1 and "barrier(CLK_LOCAL_MEM_FENCE)" in kernel_source(k, o)
    np.testing.assert_allclose((zb @ zc).numpy(), b @ c, rtol=1e-4, atol=1e-4)
    k, o = seen[-1]
    assert o.vec == 1 and sorted(o.upcast)[-2:] == [4, 4] and o.split == 1
    e = np.exp(b - b.max(1, keepdims=True))
    np.testing.assert_allclose(zb.softmax(-1).numpy(), e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    built = len(seen)
    monkeypatch.setattr(settings, "HEURISTICS", "cpu")
    np.testing.assert_allclose(za.sum().numpy(), a.astype(np.float64).sum(), rtol=1e-4)
    assert len(seen) == built + 1 and seen[-1][1].split != 256


def test_contract_kernels_take_their_gpu_variants(device, monkeypatch):
    monkeypatch.setattr(settings, "HEURISTICS", "gpu")
    tun = kernels.default_tunables(device)
    assert tun.per_item == 1 and tun.stream_bytes == kernels.NEVER
    assert tun.scan_local == min(256, 1 << (device.max_work_group_size.bit_length() - 1))
    assert kernels.widen(device, 1, tun, 64) == 1 and not common.exact_grid(device, 1, 1, 1, (64,))
    x = np.random.default_rng(5).standard_normal((3, 5001)).astype(np.float32)  # > 256 x 8: block scan
    assert kernels.cumsum_strategy(3, 5001, 1, tun) == "blocks"
    np.testing.assert_allclose(zyx.tensor(x, device=device).cumsum(1).numpy(), np.cumsum(x, 1), rtol=1e-4,
                               atol=1e-4)
    monkeypatch.setattr(settings, "HEURISTICS", "cpu")
    assert kernels.default_tunables(device).per_item == 4  # cached per mode, not per device only


def test_tuning_results_are_kept_per_mode(monkeypatch, tmp_path):
    from zyx.opt.db import TuningDB
    from zyx.opt.search import Param, Space
    from zyx.opt.tuner import choose

    db = TuningDB(tmp_path / "t.sqlite3")
    dev = SimpleNamespace(kind="cpu", info=SimpleNamespace(signature="sig"))
    space = Space((Param("local", (1, 2)),))
    for mode, best in (("auto", 1), ("gpu", 2)):
        monkeypatch.setattr(settings, "HEURISTICS", mode)
        cfg = choose(dev, "k", (8,), space, {"local": 1}, lambda c, b=best: (abs(c["local"] - b) + 1.0, 0),
                     lambda x, y: True, mode=1, db=db, budget_s=5)
        assert cfg == {"local": best}
    assert sorted(e.kernel for e in db.entries("sig")) == ["k", "k|h=gpu"]
    db.close()
