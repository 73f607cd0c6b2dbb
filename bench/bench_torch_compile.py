"""PyTorch models through ``torch.compile(backend="zyx")`` against eager PyTorch and ``torch.compile``'s default
inductor backend, in one run (PyTorch CPU at 2 threads), inference:

* a ResNet-18-shaped network (``ResNet18``: stem, four stages of two basic blocks, global pool, linear head;
  torchvision's layout, written here because its PyPI wheel needs a CUDA torch), batch 8, 3x224x224;
* Hugging Face ``BertModel`` at all-MiniLM-L6-v2's size (hidden 384, 6 layers, 12 heads, intermediate 1536)
  from a random config, batch 32, sequence 128.

Each row checks the compiled outputs against eager PyTorch before timing (largest difference over the largest
magnitude). Columns: best and median ms per call (``timing.alternating``); ``x_eager``: eager PyTorch's best
over zyx's (above 1: zyx is faster); ``x_inductor`` likewise against inductor (``n/a`` with the reason when
inductor does not run here). ``python bench/bench_torch_compile.py [--quick]``.
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from zyx.backend.timing import alternating


def resnet18(width: int = 64, classes: int = 1000) -> Any:
    """ResNet-18's layout at ``width`` stem channels (64 is torchvision's resnet18)."""
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.down = None if stride == 1 and cin == cout else nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x: Any) -> Any:
            out = torch.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return torch.relu(out + (x if self.down is None else self.down(x)))

    class ResNet18(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, width, 7, 2, 3, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                                      nn.MaxPool2d(3, 2, 1))
            chans = [width, width * 2, width * 4, width * 8]
            blocks, cin = [], width
            for i, c in enumerate(chans):
                blocks += [BasicBlock(cin, c, 1 if i == 0 else 2), BasicBlock(c, c, 1)]
                cin = c
            self.blocks = nn.Sequential(*blocks)
            self.head = nn.Linear(chans[-1], classes)

        def forward(self, x: Any) -> Any:
            x = self.blocks(self.stem(x))
            return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))

    return ResNet18()


def _bert() -> Any:
    from transformers import BertConfig, BertModel

    return BertModel(BertConfig(hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                                intermediate_size=1536, max_position_embeddings=512))


def _workloads(quick: bool) -> list[tuple[str, Any, Any]]:
    import torch

    torch.manual_seed(0)
    out = [("ResNet-18 shape, batch 8, 3x224x224", resnet18().eval(), (torch.randn(8, 3, 224, 224),))]
    try:
        out.append(("BertModel MiniLM size, batch 32, seq 128", _bert().eval(),
                    (torch.randint(0, 30522, (32, 128)),)))
    except ImportError:
        print("# BertModel row left out: transformers is not installed")
    return out


def _hidden(out: Any) -> Any:
    return out if hasattr(out, "shape") else out.last_hidden_state


def run(quick: bool = False) -> list[dict]:
    import torch

    torch.set_num_threads(2)
    rows = []
    for title, model, inputs in _workloads(quick):
        torch._dynamo.reset()
        calls: dict[str, Any] = {"torch eager": model, "zyx": torch.compile(model, backend="zyx")}
        inductor = torch.compile(model)
        note = ""
        with torch.no_grad():
            want = _hidden(model(*inputs)).numpy()
            try:
                _hidden(inductor(*inputs))
                calls["torch inductor"] = inductor
            except Exception as exc:  # noqa: BLE001 - inductor needs a C++ toolchain; the row says why it is missing
                note = f"inductor: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"
            got = _hidden(calls["zyx"](*inputs)).numpy()
            err = float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))
            fns = {name: (lambda f=f, xs=inputs: f(*xs)) for name, f in calls.items()}
            t = alternating(fns, 1 if quick else 3, 1 if quick else 2)
        row = {"workload": title, "eager_ms": t["torch eager"][0] * 1e3, "zyx_ms": t["zyx"][0] * 1e3,
               "zyx_median": t["zyx"][1] * 1e3, "x_eager": t["torch eager"][0] / t["zyx"][0]}
        if "torch inductor" in t:
            row.update(inductor_ms=t["torch inductor"][0] * 1e3, x_inductor=t["torch inductor"][0] / t["zyx"][0])
        else:
            row.update(inductor_ms="n/a", x_inductor="n/a")
        row["check"] = f"max rel. difference {err:.2e}" + (f"; {note}" if note else "")
        rows.append(row)
    return rows


if __name__ == "__main__":
    from zyx.benchmarks import bench_header, markdown_table

    print(bench_header())
    print(markdown_table(run("--quick" in sys.argv)))
