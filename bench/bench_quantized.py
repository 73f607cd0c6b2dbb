"""Decode-shaped (one activation row) x @ W^T with W in GGUF blocks: ``zyx.nn.QuantizedLinear`` in Q8_0,
Q4_0 and Q4_K (the matmul dequantizes inside its kernel) against zyx's float32 matmul over the same
weight dequantized (``x @ W^T``, as ``Linear`` computes it, and the same product written as the reduce
``(W * x).sum(-1)``), for the projection shapes of 768..3072-wide models and their 32000-token heads. A decode
step reads every weight byte once, so each row reports the bytes read (weight, activations and output) per
second and their ratio to the device's copy ceiling (``zyx.benchmarks.copy_ceiling``, read + write bytes,
measured in the same run). Implementations are timed in alternating blocks (best and median).
``python bench/bench_quantized.py [--quick]`` prints a markdown table."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.backend.timing import alternating
from zyx.benchmarks import synced
from zyx.nn import QuantizedLinear, QuantizedWeight

# (K, N): attention / MLP projections of 768..3072-wide models, and a 32000-token vocabulary head
SHAPES = ((768, 768), (768, 3072), (3072, 768), (2048, 2048), (2048, 8192), (3072, 3072), (768, 32000),
          (2048, 32000))
QUICK = ((768, 3072), (3072, 768), (2048, 32000))
TYPES = ("Q8_0", "Q4_0", "Q4_K")


def _blocks(qtype: str, n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """Random ``qtype`` blocks of an (n, k) weight (random bytes, finite float16 scales), as uint8 rows."""
    from zyx.kernels.gguf_dequant import QTYPES

    q = QTYPES[qtype]
    raw = rng.integers(0, 256, (n * k // q.block, q.type_size), dtype=np.uint8)
    scales = (0, 2) if qtype == "Q4_K" else (0,)
    for at in scales:
        raw[:, at:at + 2] = rng.uniform(-0.01, 0.01, (len(raw), 1)).astype(np.float16).view(np.uint8)
    return raw.reshape(n, -1)


def run(quick: bool = False) -> list[dict]:
    from zyx.benchmarks import copy_ceiling

    reps = 2 if quick else 4
    rng = np.random.default_rng(0)
    ceiling = max(r["GB/s"] for r in copy_ceiling(zyx.default_device(), 64 << 20, runs=reps + 3))
    out: list[dict] = [{"shape": "copy ceiling", "impl": "best of enqueue_copy, copy kernels",
                        "GB/s": round(ceiling, 1)}]
    for k, n in QUICK if quick else SHAPES:
        x = zyx.tensor(rng.standard_normal((1, k), dtype=np.float32)).realize()
        fns, nbytes = {}, {}
        dense = None
        for qtype in TYPES:
            w = QuantizedWeight(zyx.tensor(_blocks(qtype, n, k, rng)).realize(), qtype, (n, k))
            layer = QuantizedLinear.from_weight(w)
            fns[f"zyx {qtype}"] = synced(lambda layer=layer, x=x: layer(x))
            nbytes[f"zyx {qtype}"] = w.nbytes + 4 * (k + n)
            if dense is None:  # the float32 reference: the first type's weight expanded
                dense = w.dequantize().realize()
                want = (x.numpy().astype(np.float64) @ dense.numpy().T.astype(np.float64))
                got = layer(x).numpy()
                err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
                if err > 1e-4:
                    raise AssertionError(f"({k}, {n}) {qtype}: differs from the float matmul by {err:.2e}")
        wt = dense.T  # x @ W^T as zyx's Linear computes it
        fns["zyx float32 matmul"] = synced(lambda x=x, wt=wt: x @ wt)
        fns["zyx float32 (W*x).sum(-1)"] = synced(lambda x=x, w=dense: (w * x).sum(-1))  # as a reduce
        nbytes["zyx float32 matmul"] = nbytes["zyx float32 (W*x).sum(-1)"] = 4 * (n * k + k + n)
        times = alternating(fns, reps, block=5, pause=0.0)
        for impl, (best, median) in times.items():
            gbs = nbytes[impl] / best / 1e9
            out.append({"shape": f"M=1 K={k} N={n}", "impl": impl, "MB": round(nbytes[impl] / 1e6, 2),
                        "ms": round(best * 1e3, 3), "median_ms": round(median * 1e3, 3), "GB/s": round(gbs, 1),
                        "x_copy": round(gbs / ceiling, 2),
                        "x_f32": round(times["zyx float32 matmul"][0] / best, 2)})
    return out


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
