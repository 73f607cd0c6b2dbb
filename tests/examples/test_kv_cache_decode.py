"""examples/kv_cache_decode.py: the jitted decode step compiles nothing after warm-up and generates
the eager run's tokens (in-process with few tokens; the script itself as a subprocess)."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.needs_device

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "kv_cache_decode.py"


def _example():
    spec = importlib.util.spec_from_file_location("kv_cache_decode", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_compile_counter_stays_flat_and_tokens_match_eager():
    ex = _example()
    model = ex.Decoder(seed=1)
    eager, _, _ = ex.generate(model, 10, jit=False)
    jitted, _, compiles = ex.generate(model, 10, jit=True)
    assert jitted == eager
    assert compiles[1:] == [compiles[1]] * (len(compiles) - 1), compiles


def test_script_runs_past_the_ring_wrap():
    done = subprocess.run([sys.executable, str(SCRIPT), "--tokens", "140"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "compiles after warm-up (step 2 on): 0" in done.stdout
    assert "ms/token" in done.stdout
