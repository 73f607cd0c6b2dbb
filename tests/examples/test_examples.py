"""The training examples run as scripts (subprocesses, as a user runs them), reach their accuracy targets
(each checks its own and exits non-zero below it) and write what they promise. Marked ``examples``:
each takes seconds with warm kernel caches and under a minute cold on PoCL (compiling dominates);
``-m "not examples"`` leaves them out."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sklearn", reason="the examples need scikit-learn (pip install 'zyx[examples]')")
pytest.importorskip("tqdm", reason="the examples need tqdm (pip install 'zyx[examples]')")
pytestmark = [pytest.mark.needs_device, pytest.mark.examples]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(script: str, cwd: Path, *args: str) -> tuple[str, float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, str(EXAMPLES / script), *args], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)
    elapsed = time.perf_counter() - start
    assert done.returncode == 0, f"{script} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout, elapsed


def _accuracy(out: str) -> float:
    m = re.search(r"test accuracy: ([\d.]+)%", out)
    assert m, out[-2000:]
    return float(m.group(1)) / 100


def test_train_mlp(tmp_path):
    out, elapsed = _run("train_mlp.py", tmp_path)
    assert _accuracy(out) >= 0.95
    try:
        import matplotlib  # noqa: F401 - only whether it is installed
    except ImportError:
        assert not (tmp_path / "train_mlp_loss.png").exists()
    else:
        assert (tmp_path / "train_mlp_loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    print(f"train_mlp.py: {elapsed:.1f} s")


def test_train_cnn(tmp_path):
    out, elapsed = _run("train_cnn.py", tmp_path)
    assert _accuracy(out) >= 0.97
    assert "BatchNorm2d" in out and "MaxPool2d" in out and "Conv2d" in out  # the model it printed
    print(f"train_cnn.py: {elapsed:.1f} s")


def test_failed_target_exits_nonzero(tmp_path):
    """An example that misses its target says so and exits 1 (one epoch at a tiny learning rate)."""
    done = subprocess.run([sys.executable, str(EXAMPLES / "train_mlp.py"), "--epochs", "1", "--lr", "1e-5",
                           "--plot", ""], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "below 95%" in done.stderr, done.stderr[-2000:]
