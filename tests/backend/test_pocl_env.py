"""zyx.backend.pocl_env: PoCL's worker threads pinned one per CPU only where PoCL can do it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zyx.backend import pocl_env
from zyx.backend.pocl_env import pin_pocl_workers, pinning_is_safe


def test_pinning_needs_every_worker_cpu_allowed() -> None:
    assert pinning_is_safe({0, 1, 2, 3}, 4, None)
    assert not pinning_is_safe({0, 1}, 4, None)  # a cpuset/taskset: PoCL would abort pinning worker 2
    assert not pinning_is_safe({2, 3}, 4, "2")  # workers 0 and 1 would go to CPUs 0 and 1
    assert not pinning_is_safe({0}, 1, None)  # one worker: nothing to spread
    assert not pinning_is_safe({0, 1, 2, 3}, 4, "lots")  # an odd thread count: PoCL's reading is unknown
    assert pinning_is_safe({0, 1, 2, 3}, 4, " ")


def test_a_users_setting_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pocl_env.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(pocl_env.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(pocl_env.sys, "platform", "linux")
    env = {"POCL_AFFINITY": "0"}
    assert not pin_pocl_workers(env) and env == {"POCL_AFFINITY": "0"}
    env = {}
    assert pin_pocl_workers(env) and env == {"POCL_AFFINITY": "1"}
    env = {"POCL_MAX_PTHREAD_COUNT": "8"}  # more workers than CPUs: PoCL caps them at the CPUs
    assert pin_pocl_workers(env) and env["POCL_AFFINITY"] == "1"


def test_no_pinning_off_linux_or_under_a_cpu_mask(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pocl_env.os, "cpu_count", lambda: 4)
    monkeypatch.setattr(pocl_env.sys, "platform", "darwin")
    assert not pin_pocl_workers({})
    monkeypatch.setattr(pocl_env.sys, "platform", "linux")
    monkeypatch.setattr(pocl_env.os, "sched_getaffinity", lambda pid: {1, 3}, raising=False)
    env: dict[str, str] = {}
    assert not pin_pocl_workers(env) and env == {}


@pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2
                    or set(range(os.cpu_count() or 0)) - os.sched_getaffinity(0), reason="needs every CPU allowed")
def test_a_process_under_taskset_still_runs_kernels(tmp_path) -> None:
    """PoCL aborts when it cannot pin a worker: a process limited to one CPU must not ask it to."""
    code = ("import os; os.sched_setaffinity(0, {0})\n"
            "import zyx\n"
            "if not zyx.devices(): print('no device'); raise SystemExit\n"
            "print(os.environ.get('POCL_AFFINITY'), float((zyx.arange(10, dtype=zyx.float32) * 2).sum()))\n")
    env = {k: v for k, v in os.environ.items() if k != "POCL_AFFINITY"}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() in (["None", "90.0"], ["no", "device"])
