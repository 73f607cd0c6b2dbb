"""zyx.backend.driver_cache: PoCL's kernel cache directory and the cross-process build lock."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

import zyx
from zyx.backend import driver_cache, program
from zyx.backend.driver_cache import LOCK_NAME, build_lock, pocl_cache_dir, uses_pocl_cache

POCL = SimpleNamespace(info=SimpleNamespace(platform_version="OpenCL 3.0 PoCL 3.1+debian  Linux, RelWithDebInfo"))
OTHER = SimpleNamespace(info=SimpleNamespace(platform_version="OpenCL 3.0 CUDA 12.4.131"))


def _locked_elsewhere(path: Path) -> bool:
    """Whether another open file description of ``path`` cannot take the lock now (flock locks
    belong to open file descriptions, so this works inside the locking process too)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_cache_dir_follows_pocl(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path / "explicit"))
    assert pocl_cache_dir() == tmp_path / "explicit"
    monkeypatch.delenv("POCL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert pocl_cache_dir() == tmp_path / "xdg" / "pocl"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert pocl_cache_dir() == tmp_path / "home" / ".cache" / "pocl"


def test_only_pocl_with_its_cache_on_is_locked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    assert uses_pocl_cache(POCL) and not uses_pocl_cache(OTHER)
    with build_lock(OTHER):
        assert not (tmp_path / LOCK_NAME).exists()
    monkeypatch.setenv("POCL_KERNEL_CACHE", "0")
    assert not uses_pocl_cache(POCL)


def test_lock_excludes_another_process_until_released(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cache = tmp_path / "made-on-demand"
    monkeypatch.setenv("POCL_CACHE_DIR", str(cache))
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    probe = ("import fcntl, os, sys; fd = os.open(sys.argv[1], os.O_RDWR)\n"
             "try:\n    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')\n"
             "except BlockingIOError:\n    print('held')\n")

    def other_process_sees() -> str:
        run = subprocess.run([sys.executable, "-c", probe, str(cache / LOCK_NAME)], capture_output=True, text=True,
                             timeout=60)
        assert run.returncode == 0, run.stderr
        return run.stdout.strip()

    with build_lock(POCL):
        assert other_process_sees() == "held"
    assert other_process_sees() == "free"


def test_unwritable_cache_dir_builds_unlocked(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("POCL_CACHE_DIR", str(blocker / "pocl"))  # below a file: mkdir fails
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    with build_lock(POCL):
        pass


@pytest.mark.skipif(not zyx.devices(), reason="no OpenCL device available")
def test_a_source_build_on_pocl_holds_the_lock(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    device = zyx.default_device()
    if not uses_pocl_cache(device):
        pytest.skip(f"{device} does not build into PoCL's kernel cache")
    # zyx reads the lock's place at each build (PoCL read its cache dir once, at load): a private lock
    # file, so other processes building into the real cache meanwhile cannot hold it
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    seen: list[bool] = []
    real = program._build_from_source

    def spying(*args: object) -> object:
        seen.append(_locked_elsewhere(driver_cache.pocl_cache_dir() / LOCK_NAME))
        return real(*args)

    monkeypatch.setattr(program, "_build_from_source", spying)
    source = f"/* {uuid.uuid4().hex} */\n__kernel void zyx_test_k(__global int *x) {{ x[0] = 7; }}\n"
    program.build_program(device, source, name="zyx_test_k")
    assert seen == [True]
    assert not _locked_elsewhere(driver_cache.pocl_cache_dir() / LOCK_NAME)


_HOLDER = ("import fcntl, os, sys, time\n"
           "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o666)\n"
           "fcntl.flock(fd, fcntl.LOCK_EX); os.ftruncate(fd, 0); os.pwrite(fd, f'{os.getpid()}\\n'.encode(), 0)\n"
           "print('held', flush=True); time.sleep(float(sys.argv[2]))\n")


def _hold_in_another_process(path: Path, seconds: float) -> subprocess.Popen:
    path.parent.mkdir(parents=True, exist_ok=True)
    holder = subprocess.Popen([sys.executable, "-c", _HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE,
                              text=True)
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    return holder


def test_waiting_for_a_holder_says_so_and_takes_the_lock_when_freed(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    monkeypatch.setattr(driver_cache, "NOTICE_AFTER_S", 0.05)
    holder = _hold_in_another_process(tmp_path / LOCK_NAME, 1.0)
    try:
        with build_lock(POCL):
            assert holder.poll() is not None  # the lock came only once the holder was gone
            assert (tmp_path / LOCK_NAME).read_text().strip() == str(os.getpid())
    finally:
        holder.kill()
        holder.wait()
    err = capsys.readouterr().err
    assert f"waiting for process {holder.pid} to finish building kernels" in err and "got the kernel build lock" in err


def test_a_holder_that_never_lets_go_is_given_up_on_with_a_warning(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("POCL_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("POCL_KERNEL_CACHE", raising=False)
    monkeypatch.setattr(driver_cache, "NOTICE_AFTER_S", 0.05)
    monkeypatch.setattr(driver_cache, "GIVE_UP_AFTER_S", 0.3)
    holder = _hold_in_another_process(tmp_path / LOCK_NAME, 60.0)
    try:
        held_too_long = rf"process {holder.pid} has held the kernel build lock .* building without it"
        with pytest.warns(RuntimeWarning, match=held_too_long):
            with build_lock(POCL):
                assert holder.poll() is None and _locked_elsewhere(tmp_path / LOCK_NAME)  # still the holder's
    finally:
        holder.kill()
        holder.wait()
