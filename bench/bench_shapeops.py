"""Shape ops, einsum and resampling: zyx vs PyTorch CPU (2 threads) and NumPy on the same inputs.

Rows: ``einsum("bij,bjk->bik")`` next to ``matmul`` on (16, 256, 256) @ (16, 256, 256) (GFLOP/s; they
should match: einsum lowers to the same matmul); ``einsum("ij->ji")`` realized next to
``.T.contiguous()`` on 4096x4096 (GB/s read + written); ``interpolate`` bilinear 2x of (8, 32, 128, 128)
and nearest 2x of the same (GB/s of output written), uint8 bilinear 2x, antialiased 0.5x and bicubic 1.5x of
(8, 3, 256, 256) (PyTorch's fixed-point path; GB/s of output written); ``repeat`` and reflect ``pad``
of (8, 64, 112, 112) (GB/s read + written). Each zyx call is realized and synchronized; implementations are timed in
alternating blocks (best and median), so load on the shared machine hits them alike. ``run(quick)``
returns the rows; ``python bench/bench_shapeops.py [--quick]`` prints them as a markdown table.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
import zyx.nn.functional as F
from zyx.backend.timing import alternating
from zyx.benchmarks import synced


def run(quick: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    tf = torch.nn.functional
    reps = 2 if quick else 5
    rng = np.random.default_rng(0)
    out: list[dict] = []

    def add(op: str, size: str, times: dict[str, tuple[float, float]], ref: str = "torch", **rate: float) -> None:
        for impl, (best, med) in times.items():
            row = {"op": op, "impl": impl, "size": size, "ms": round(best * 1e3, 3), "median_ms": round(med * 1e3, 3)}
            row.update({k: round(v / best / 1e9, 2) for k, v in rate.items()})
            if impl.startswith("zyx"):
                row["x_torch"] = round(times[ref][0] / best, 2)
                row["x_torch_median"] = round(times[ref][1] / med, 2)
            out.append(row)

    b, n = (4, 128) if quick else (16, 256)
    a1, a2 = (rng.normal(size=(b, n, n)).astype(np.float32) for _ in range(2))
    za, zb = zyx.tensor(a1).realize(), zyx.tensor(a2).realize()
    ta, tb = torch.from_numpy(a1), torch.from_numpy(a2)
    times = alternating({"zyx einsum": synced(lambda: zyx.einsum("bij,bjk->bik", za, zb)),
                          "zyx matmul": synced(lambda: za @ zb),
                          "torch": lambda: torch.einsum("bij,bjk->bik", ta, tb),
                          "numpy": lambda: np.einsum("bij,bjk->bik", a1, a2, optimize=True)}, reps)
    add("einsum bij,bjk->bik", f"{b}x{n}x{n} @ {b}x{n}x{n}", times, **{"GFLOP/s": 2.0 * b * n ** 3})

    m = 1024 if quick else 4096
    sq = rng.normal(size=(m, m)).astype(np.float32)
    zs, ts = zyx.tensor(sq).realize(), torch.from_numpy(sq)
    times = alternating({"zyx einsum": synced(lambda: zyx.einsum("ij->ji", zs).contiguous()),
                          "zyx .T.contiguous()": synced(lambda: zs.T.contiguous()),
                          "torch": lambda: torch.einsum("ij->ji", ts).contiguous(),
                          "numpy": lambda: np.ascontiguousarray(sq.T)}, reps)
    add("einsum ij->ji (realized)", f"{m}x{m}", times, **{"GB/s": 2.0 * sq.nbytes})

    shape = (2, 32, 64, 64) if quick else (8, 32, 128, 128)
    img = rng.normal(size=shape).astype(np.float32)
    zi, ti = zyx.tensor(img).realize(), torch.from_numpy(img)
    written = img.nbytes * 4.0
    for mode, kw in (("bilinear", {"align_corners": False}), ("nearest", {})):
        times = alternating({"zyx": synced(lambda m=mode, k=kw: F.interpolate(zi, scale_factor=2, mode=m, **k)),
                              "torch": lambda m=mode, k=kw: tf.interpolate(ti, scale_factor=2, mode=m, **k)}, reps)
        add(f"interpolate {mode} 2x", "x".join(map(str, shape)), times, **{"GB/s": written})
    times = alternating({"zyx": synced(lambda: F.interpolate(zi, size=(shape[2] * 3 // 2, shape[3] * 3 // 2),
                                                           mode="bicubic")),
                          "torch": lambda: tf.interpolate(ti, size=(shape[2] * 3 // 2, shape[3] * 3 // 2),
                                                          mode="bicubic")}, reps)
    add("interpolate bicubic 1.5x", "x".join(map(str, shape)), times, **{"GB/s": img.nbytes * 2.25})
    shape = (2, 3, 128, 128) if quick else (8, 3, 256, 256)  # uint8 images: PyTorch's fixed-point path
    u8 = rng.integers(0, 256, size=shape).astype(np.uint8)
    zu, tu = zyx.tensor(u8).realize(), torch.from_numpy(u8)
    for name, kw, scale in (("uint8 bilinear 2x", {}, 2), ("uint8 bilinear 0.5x antialias", {"antialias": True}, 0.5)):
        times = alternating(
            {"zyx": synced(lambda k=kw, s=scale: F.interpolate(zu, scale_factor=s, mode="bilinear", **k)),
             "torch": lambda k=kw, s=scale: tf.interpolate(tu, scale_factor=s, mode="bilinear", **k)}, reps)
        add(f"interpolate {name}", "x".join(map(str, shape)), times, **{"GB/s": u8.nbytes * scale * scale})
    big = (shape[2] * 3 // 2, shape[3] * 3 // 2)
    times = alternating({"zyx": synced(lambda: F.interpolate(zu, size=big, mode="bicubic")),
                         "torch": lambda: tf.interpolate(tu, size=big, mode="bicubic")}, reps)
    add("interpolate uint8 bicubic 1.5x", "x".join(map(str, shape)), times, **{"GB/s": u8.nbytes * 2.25})

    shape = (2, 64, 56, 56) if quick else (8, 64, 112, 112)
    p = rng.normal(size=shape).astype(np.float32)
    zp, tp = zyx.tensor(p).realize(), torch.from_numpy(p)
    times = alternating({"zyx": synced(lambda: zp.repeat(1, 1, 2, 2)), "torch": lambda: tp.repeat(1, 1, 2, 2),
                          "numpy": lambda: np.tile(p, (1, 1, 2, 2))}, reps)
    add("repeat (1,1,2,2)", "x".join(map(str, shape)), times, **{"GB/s": p.nbytes * 5.0})
    padded = p.nbytes * (shape[2] + 6) * (shape[3] + 6) / (shape[2] * shape[3])
    times = alternating({"zyx": synced(lambda: F.pad(zp, (3, 3, 3, 3), mode="reflect")),
                          "torch": lambda: tf.pad(tp, (3, 3, 3, 3), mode="reflect"),
                          "numpy": lambda: np.pad(p, ((0, 0), (0, 0), (3, 3), (3, 3)), mode="reflect")}, reps)
    add("pad reflect 3", "x".join(map(str, shape)), times, **{"GB/s": p.nbytes + padded})
    return out


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
