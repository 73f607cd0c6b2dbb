"""PyTorch models exported to ONNX, run by ``zyx.onnx`` and by onnxruntime's CPU provider (2 threads), in one
run, inference:

* the CNN of bench_models (two conv3x3-BatchNorm-ReLU-maxpool blocks, 32 and 64 channels, a linear head) on
  1x28x28, batch 64;
* a 6-layer ``nn.TransformerEncoder`` (d 384, 12 heads, ff 1536, gelu), batch 32, sequence 128.

Models are exported with ``torch.onnx.export(..., dynamo=False)`` (opset 17). Each row checks zyx's output
against onnxruntime's before timing (largest difference over the largest magnitude). Columns: best and
median ms per call of ``m.run`` (NumPy in, NumPy out, for both); ``x_ort``: onnxruntime's best over zyx's
(above 1: zyx is faster). ``python bench/bench_onnx.py [--quick]``.
"""
from __future__ import annotations

import io
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zyx.backend.timing import alternating


def _models() -> list[tuple[str, Any, np.ndarray]]:
    import torch
    from torch import nn

    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cnn = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Flatten(), nn.Linear(64 * 7 * 7, 10))

    class Encoder(nn.Module):  # is_causal passed as a Python bool: the tracer cannot export the default
        def __init__(self) -> None:
            super().__init__()
            layer = nn.TransformerEncoderLayer(384, 12, 1536, dropout=0.0, activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 6, enable_nested_tensor=False)

        def forward(self, x: Any) -> Any:
            return self.encoder(x, is_causal=False)

    return [("CNN 2x(conv3x3-BN-ReLU-pool) 32/64 ch, batch 64, 1x28x28", cnn,
             rng.standard_normal((64, 1, 28, 28)).astype(np.float32)),
            ("TransformerEncoder 6L d384 12h ff1536 gelu, batch 32, seq 128", Encoder(),
             rng.standard_normal((32, 128, 384)).astype(np.float32))]


def _export(module: Any, x: np.ndarray) -> bytes:
    import torch

    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module.eval(), (torch.from_numpy(x),), f, dynamo=False, input_names=["x"],
                          output_names=["out"], opset_version=17)
    return f.getvalue()


def run(quick: bool = False) -> list[dict]:
    import onnxruntime as ort

    import zyx.onnx

    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    rows = []
    for title, module, x in _models():
        data = _export(module, x)
        session = ort.InferenceSession(data, options, providers=["CPUExecutionProvider"])
        model = zyx.onnx.load(data)
        want = session.run(None, {"x": x})[0]
        got = model.run(None, {"x": x})[0]
        err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
        t = alternating({"zyx": lambda m=model, a=x: m.run(None, {"x": a}),
                         "onnxruntime": lambda s=session, a=x: s.run(None, {"x": a})},
                        1 if quick else 3, 1 if quick else 3)
        rows.append({"workload": title, "ort_ms": t["onnxruntime"][0] * 1e3, "ort_median": t["onnxruntime"][1] * 1e3,
                     "zyx_ms": t["zyx"][0] * 1e3, "zyx_median": t["zyx"][1] * 1e3,
                     "x_ort": t["onnxruntime"][0] / t["zyx"][0], "check": f"max rel. difference {err:.2e}"})
    return rows


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
