"""zyx.backend.pocl_env: PoCL's worker threads pinned one per CPU only where PoCL can do it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from zyx.backend import pocl_env
from zyx.backend.pocl_env import core_share, pin_pocl_workers, pinning_is_safe, share_cores_among_local_ranks


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


def test_local_ranks_split_the_allowed_cpus() -> None:
    assert [core_share({0, 1}, r, 2) for r in range(2)] == [{0}, {1}]
    assert [core_share({0, 1, 2, 3, 4}, r, 2) for r in range(2)] == [{0, 1, 2}, {3, 4}]  # earlier ranks one more
    assert [core_share({4, 5, 6, 7}, r, 4) for r in range(4)] == [{4}, {5}, {6}, {7}]  # a cpuset's own numbers
    assert [core_share({0, 1}, r, 3) for r in range(3)] == [{0}, {1}, {0}]  # more ranks than CPUs: round-robin
    for n, world in ((8, 3), (16, 5), (3, 3)):
        shares = [core_share(set(range(n)), r, world) for r in range(world)]
        assert set().union(*shares) == set(range(n)) and sum(map(len, shares)) == n  # a partition


def test_a_ranks_share_limits_its_process_and_pocl(monkeypatch: pytest.MonkeyPatch) -> None:
    taken: list[set[int]] = []
    monkeypatch.setattr(pocl_env.sys, "platform", "linux")
    monkeypatch.setattr(pocl_env.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setattr(pocl_env.os, "sched_setaffinity", lambda pid, cpus: taken.append(set(cpus)), raising=False)
    env = {"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "2"}
    assert share_cores_among_local_ranks(env) == {2, 3} and taken == [{2, 3}]
    assert env["POCL_MAX_PTHREAD_COUNT"] == "2"
    env = {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "2", "POCL_MAX_PTHREAD_COUNT": "1"}  # the user's count stays
    assert share_cores_among_local_ranks(env) == {0, 1} and env["POCL_MAX_PTHREAD_COUNT"] == "1"
    monkeypatch.setattr(pocl_env.os, "cpu_count", lambda: 4)
    assert not pin_pocl_workers(env) and "POCL_AFFINITY" not in env  # (the real mask is now the share)
    taken.clear()
    for alone in ({}, {"LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}, {"LOCAL_RANK": "x", "LOCAL_WORLD_SIZE": "2"},
                  {"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"}):
        assert share_cores_among_local_ranks(dict(alone)) is None
    assert taken == []


@pytest.mark.skipif(not sys.platform.startswith("linux") or len(os.sched_getaffinity(0)) < 2,
                    reason="needs two CPUs allowed")
def test_two_local_ranks_each_run_kernels_on_their_own_cpus(tmp_path) -> None:
    """As torchrun starts them: each rank's process (and so PoCL's workers) keeps to its half of the CPUs."""
    code = ("import os, zyx\n"
            "if not zyx.devices(): print('no device'); raise SystemExit\n"
            "v = float((zyx.arange(10, dtype=zyx.float32) * 2).sum())\n"
            "print(sorted(os.sched_getaffinity(0)), os.environ['POCL_MAX_PTHREAD_COUNT'], v)\n")
    allowed = sorted(os.sched_getaffinity(0))
    runs = []
    for rank in range(2):
        env = {k: v for k, v in os.environ.items() if k not in ("POCL_AFFINITY", "POCL_MAX_PTHREAD_COUNT")}
        env.update(LOCAL_RANK=str(rank), LOCAL_WORLD_SIZE="2")
        runs.append(subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, env=env))
    outs = [r.communicate(timeout=300) for r in runs]
    assert all(r.returncode == 0 for r in runs), [o[1][-2000:] for o in outs]
    half = len(allowed) // 2 + len(allowed) % 2
    for rank, (out, _) in enumerate(outs):
        if out.split() == ["no", "device"]:
            continue
        cpus = allowed[:half] if rank == 0 else allowed[half:]
        assert out.strip() == f"{cpus} {len(cpus)} 90.0", out
