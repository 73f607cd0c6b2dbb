"""zyx.distributed and DistributedDataParallel with two real ranks on localhost (``ranks.py`` is what each
runs). Every way of meeting is used once: ``env://`` (as torchrun sets it), ``file://``, ``tcp://``, a
group torch made, and torchrun itself. The ranks share the session's ``ZYX_CACHE_DIR`` (their kernels
compile once) and each gets one core (``LOCAL_RANK``/``LOCAL_WORLD_SIZE``), as torchrun gives them."""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed", reason="zyx.distributed runs on torch.distributed: pip install "
                    "'zyx[distributed]'")
pytestmark = pytest.mark.needs_device

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
LIMIT_S = 240  # per pair of ranks: a cold kernel cache on two shared cores; a hang fails here, not forever


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _env(rank: int, world: int, port: int, tmp_path: Path, extra: dict[str, str]) -> dict[str, str]:
    env = {**os.environ, **extra}
    env.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE=str(world),
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), ZYX_TEST_STORE=str(tmp_path / "store"),
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")])))
    return env


def spawn(scenario: str, init: str, tmp_path: Path, world: int = 2,
          extra: dict[str, str] | None = None) -> list[tuple[int, dict | None, str]]:
    """Run ``ranks.py scenario init`` as ``world`` ranks; (exit code, JSON summary or None, output) per rank."""
    port = _free_port()
    procs = [subprocess.Popen([sys.executable, str(HERE / "ranks.py"), scenario, init], cwd=tmp_path,
                              env=_env(r, world, port, tmp_path, extra or {}), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for r in range(world)]
    results = []
    deadline = time.monotonic() + LIMIT_S
    try:
        for p in procs:
            out, _ = p.communicate(timeout=max(1.0, deadline - time.monotonic()))
            lines = [ln for ln in out.splitlines() if ln.startswith("{")]
            results.append((p.returncode, json.loads(lines[-1]) if lines else None, out))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    return results


def _ok(results: list) -> list[dict]:
    for rc, summary, out in results:
        assert rc == 0 and summary is not None, f"a rank exited {rc}:\n{out[-4000:]}"
    return [summary for _, summary, _ in results]


def test_collectives_equal_numpy_over_tcp_init(tmp_path: Path) -> None:
    """all_reduce (SUM, PRODUCT, MIN, MAX, AVG), broadcast, all_gather for 14 dtypes bit for bit against
    NumPy, reduce_scatter, an async all_reduce, barrier (ranks met through tcp://); then rank 1 lives on
    without joining a collective and a group's 3 s timeout ends rank 0's wait."""
    (rc0, summary, out0), (rc1, _, out1) = spawn("collectives", "tcp", tmp_path)
    assert rc1 == 0, out1[-3000:]
    summaries = _ok([(rc0, summary, out0)])
    assert summaries[0]["checked"] == 91
    assert 2.5 < summaries[0]["failed_after_s"] < 15, summaries[0]
    assert "all_reduce on rank 0 of 2 failed" in summaries[0]["message"]


def test_ddp_mlp_equals_one_process_over_file_init(tmp_path: Path) -> None:
    """10 Adam steps of 2 ranks on halves of a batch give both ranks one process's parameters on the whole
    batch (several buckets); no_sync accumulates locally and the next backward averages the sum;
    find_unused_parameters; an unfinished reduction is reported; destroy_process_group (ranks met through
    file://)."""
    summaries = _ok(spawn("ddp_mlp", "file", tmp_path))
    assert summaries[0]["params"] == summaries[1]["params"]  # bit for bit the same on every rank
    assert max(s["err"] for s in summaries) < 2e-5


def test_ddp_on_an_adopted_torch_group_and_a_dead_rank(tmp_path: Path) -> None:
    """On a group torch.distributed made (env://), used as is: BatchNorm normalizes by each rank's own batch,
    so no single process matches, and the CNN is compared with PyTorch's DDP run on the same group from the
    same weights (parameters and running statistics after 10 Adam steps). Then rank 1 dies and rank 0's
    next collective raises DistributedError at once instead of hanging."""
    (rc0, summary, out0), (rc1, _, out1) = spawn("adopt_cnn_and_die", "torch", tmp_path)
    assert rc1 == 3, out1[-3000:]
    assert rc0 == 0 and summary is not None, out0[-3000:]
    assert summary["err"] < 1e-4 and abs(summary["loss"] - summary["torch_loss"]) < 1e-4
    assert summary["failed_after_s"] < 20
    assert "all_reduce on rank 0 of 2 failed" in summary["message"]


@pytest.mark.examples
def test_torchrun_example(tmp_path: Path) -> None:
    """``torchrun --standalone --nproc_per_node=2 examples/train_ddp.py``: the ranks end with the same
    parameters (so the same test loss) and the accuracy of train_cnn.py (the script checks 97%)."""
    pytest.importorskip("sklearn", reason="the example needs scikit-learn (pip install 'zyx[examples]')")
    pytest.importorskip("tqdm", reason="the example needs tqdm (pip install 'zyx[examples]')")
    torchrun = shutil.which("torchrun", path=os.pathsep.join([str(Path(sys.executable).parent),
                                                             os.environ.get("PATH", "")]))
    if torchrun is None:
        pytest.skip("torchrun is not on PATH")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    done = subprocess.run([torchrun, "--standalone", "--nproc_per_node=2", str(ROOT / "examples" / "train_ddp.py")],
                          cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=LIMIT_S)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    losses = dict(re.findall(r"rank (\d): final test loss ([\d.]+)", done.stdout))
    assert set(losses) == {"0", "1"}, done.stdout[-3000:]
    assert losses["0"] == losses["1"]
