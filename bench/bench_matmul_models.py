"""Matmuls at the shapes the models run (issue 30): each layer's forward ``x @ W.T`` (``F.linear``: the right
operand a transposed view of the (out, in) weight), and its backward's ``dW = g.T @ x`` (the left operand a
transposed view) and ``dx = g @ W`` (both row-major), for the MLP 784-1024-1024-10 at batch 256, the GPT of
``bench_training`` (d 256: 2048 rows, qkv 256->768, proj 256->256, MLP 256->1024->256, head 256->65), the
same GPT at batch 1 (128 rows), a TransformerEncoder layer (d 384, ff 1536, 4096 rows), attention's batched
``q @ k.T`` and ``p @ v`` (t 128, head dims 64 and 32) and one product with its bias + gelu fused.
zyx (the heuristic opts, or the tuned ones with ``ZYX_TUNE=1``) against NumPy (OpenBLAS, its pins dropped:
``bench_header``) in alternating blocks of whole calls (best and median).
``python bench/bench_matmul_models.py [--quick] [--only NAME]`` prints a markdown table with GFLOP/s."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import zyx
from zyx.backend.timing import alternating
from zyx.benchmarks import synced

# (name, batch, M, K, N, layout, epilogue): layout "nn" row-major operands, "nt" the right operand a
# transposed view (a weight (N, K) seen as (K, N)), "tn" the left operand a transposed view (x (K, M) seen as
# (M, K)); epilogue "gelu": + a bias row, then gelu, fused into the product's kernel
SHAPES = (
    ("mlp fc1 fwd", 1, 256, 784, 1024, "nt", ""),
    ("mlp fc1 dW", 1, 1024, 256, 784, "tn", ""),
    ("mlp fc2 fwd", 1, 256, 1024, 1024, "nt", ""),
    ("mlp fc2 dW", 1, 1024, 256, 1024, "tn", ""),
    ("mlp fc2 dx", 1, 256, 1024, 1024, "nn", ""),
    ("mlp fc3 fwd", 1, 256, 1024, 10, "nt", ""),
    ("mlp fc3 dx", 1, 256, 10, 1024, "nn", ""),
    ("gpt qkv fwd", 1, 2048, 256, 768, "nt", ""),
    ("gpt qkv dW", 1, 768, 2048, 256, "tn", ""),
    ("gpt qkv dx", 1, 2048, 768, 256, "nn", ""),
    ("gpt proj fwd", 1, 2048, 256, 256, "nt", ""),
    ("gpt mlp1 fwd+gelu", 1, 2048, 256, 1024, "nt", "gelu"),
    ("gpt mlp2 fwd", 1, 2048, 1024, 256, "nt", ""),
    ("gpt mlp2 dW", 1, 256, 2048, 1024, "tn", ""),
    ("gpt mlp2 dx", 1, 2048, 256, 1024, "nn", ""),
    ("gpt head fwd", 1, 2048, 256, 65, "nt", ""),
    ("gpt1 qkv fwd", 1, 128, 256, 768, "nt", ""),
    ("gpt1 mlp1 fwd", 1, 128, 256, 1024, "nt", ""),
    ("gpt1 mlp2 fwd", 1, 128, 1024, 256, "nt", ""),
    ("gpt1 qkv dW", 1, 768, 128, 256, "tn", ""),
    ("enc ff1 fwd", 1, 4096, 384, 1536, "nt", ""),
    ("enc ff2 fwd", 1, 4096, 1536, 384, "nt", ""),
    ("enc ff1 dW", 1, 1536, 4096, 384, "tn", ""),
    ("attn q@k.T hd64", 32, 128, 64, 128, "nt", ""),
    ("attn p@v hd64", 32, 128, 128, 64, "nn", ""),
    ("attn q@k.T hd32", 32, 128, 32, 128, "nt", ""),
    ("attn p@v hd32", 32, 128, 128, 32, "nn", ""),
)


def _gelu(x: np.ndarray) -> np.ndarray:
    from math import erf

    return 0.5 * x * (1.0 + np.vectorize(erf, otypes=[np.float64])(x / np.sqrt(2.0)))


def _operands(batch: int, m: int, k: int, n: int, layout: str, rng: np.random.Generator):
    """The stored arrays (NumPy views with zyx's layout) and zyx tensors over the same bytes' layout."""
    lead = (batch,) if batch > 1 else ()
    a = rng.standard_normal((*lead, k, m) if layout == "tn" else (*lead, m, k), dtype=np.float32)
    b = rng.standard_normal((*lead, n, k) if layout == "nt" else (*lead, k, n), dtype=np.float32)
    za, zb = zyx.tensor(a).realize(), zyx.tensor(b).realize()
    if layout == "tn":
        a, za = a.swapaxes(-1, -2), za.transpose(-1, -2)
    if layout == "nt":
        b, zb = b.swapaxes(-1, -2), zb.transpose(-1, -2)
    return a, b, za, zb


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    reps = 2 if quick else 4
    rng = np.random.default_rng(0)
    out: list[dict] = []
    for name, batch, m, k, n, layout, epi in SHAPES:
        if only and only not in name:
            continue
        a, b, za, zb = _operands(batch, m, k, n, layout, rng)
        if epi:  # NumPy has no fused gelu: it is timed for the product and the bias, checked with the gelu
            bias = rng.standard_normal(n, dtype=np.float32)
            zbias = zyx.tensor(bias).realize()
            fz = synced(lambda za=za, zb=zb, zbias=zbias: zyx.nn.functional.gelu(za @ zb + zbias))

            def fnp(a=a, b=b, bias=bias):
                return a @ b + bias

            def fn(a=a, b=b, bias=bias):
                return _gelu(a @ b + bias)
        else:
            fz = synced(lambda za=za, zb=zb: za @ zb)

            def fnp(a=a, b=b):
                return a @ b
            fn = fnp
        got, want = fz().numpy(), fn()
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        if err > 1e-4:
            raise AssertionError(f"{name}: zyx differs from NumPy by {err:.2e} (relative to the largest value)")
        times = alternating({"zyx": fz, "numpy": fnp}, reps, block=3)
        flops = 2.0 * batch * m * k * n
        size = (f"{batch}x" if batch > 1 else "") + f"({m}x{k})@({k}x{n}) {layout}" + (f" +{epi}" if epi else "")
        (zb_, zm), (nb, nm) = times["zyx"], times["numpy"]
        out.append({"shape": name, "size": size, "zyx_ms": round(zb_ * 1e3, 3), "zyx_median_ms": round(zm * 1e3, 3),
                    "zyx_GFLOP/s": round(flops / zb_ / 1e9, 1), "numpy_ms": round(nb * 1e3, 3),
                    "numpy_median_ms": round(nm * 1e3, 3), "numpy_GFLOP/s": round(flops / nb / 1e9, 1),
                    "x_numpy": round(nb / zb_, 2)})
    return out


if __name__ == "__main__":
    from zyx import settings
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(f"ZYX_TUNE={settings.TUNE}")
    only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
    print(markdown_table(run("--quick" in sys.argv, only)))
