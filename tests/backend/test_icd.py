"""zyx.backend.icd: pip-installed OpenCL runtimes (Intel's CPU runtime) are found and registered
through a vendors directory of zyx's own, and a user's OCL_ICD_VENDORS is respected."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from zyx.backend import icd


def _fake_prefix(root: Path) -> Path:
    (root / "lib").mkdir(parents=True)
    (root / "lib" / "libintelocl.so").write_bytes(b"\x7fELF")
    return root


def test_finds_runtime_libraries_under_a_prefix(tmp_path: Path) -> None:
    assert icd.pip_runtime_libraries((str(tmp_path),)) == {}
    prefix = _fake_prefix(tmp_path / "venv")
    found = icd.pip_runtime_libraries((str(tmp_path / "nothing"), str(prefix)))
    assert found == {"intel-cpu.icd": (prefix / "lib" / "libintelocl.so").resolve()}


def test_vendors_dir_keeps_the_systems_files(tmp_path: Path) -> None:
    system = tmp_path / "vendors"
    system.mkdir()
    (system / "pocl.icd").write_text("libpocl.so.2\n")
    (system / "intel-cpu.icd").write_text("/opt/intel/libintelocl.so\n")
    lib = Path("/venv/lib/libintelocl.so")
    files = icd.vendors_dir_contents({"intel-cpu.icd": lib, "other.icd": lib}, system)
    assert files == {"pocl.icd": "libpocl.so.2\n", "intel-cpu.icd": "/opt/intel/libintelocl.so\n",
                     "other.icd": f"{lib}\n"}
    assert icd.vendors_dir_contents({"intel-cpu.icd": lib}, tmp_path / "missing") == {"intel-cpu.icd": f"{lib}\n"}


def test_register_writes_a_vendors_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix = _fake_prefix(tmp_path / "venv")
    monkeypatch.setenv("ZYX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("OCL_ICD_VENDORS", "")
    find = icd.pip_runtime_libraries
    monkeypatch.setattr(icd, "pip_runtime_libraries", lambda: find((str(prefix),)))
    target = icd.register_pip_runtimes()
    assert target is not None and os.environ["OCL_ICD_VENDORS"] == str(target)
    assert target.is_relative_to(tmp_path / "cache")
    assert (target / "intel-cpu.icd").read_text().strip() == str((prefix / "lib" / "libintelocl.so").resolve())
    assert icd.register_pip_runtimes() is None  # OCL_ICD_VENDORS is now set: nothing changes again


def test_a_users_ocl_icd_vendors_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OCL_ICD_VENDORS", str(tmp_path))
    monkeypatch.setattr(icd, "pip_runtime_libraries", lambda: {"intel-cpu.icd": tmp_path / "lib.so"})
    assert icd.register_pip_runtimes() is None
    assert os.environ["OCL_ICD_VENDORS"] == str(tmp_path)


def test_nothing_to_register(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OCL_ICD_VENDORS", raising=False)
    monkeypatch.setattr(icd, "pip_runtime_libraries", lambda: {})
    assert icd.register_pip_runtimes() is None
    assert "OCL_ICD_VENDORS" not in os.environ


@pytest.mark.skipif(not icd.pip_runtime_libraries(), reason="Intel's CPU runtime (zyx[intel]) is not installed")
def test_pip_installed_intel_runtime_is_listed(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "OCL_ICD_VENDORS"}
    env["ZYX_CACHE_DIR"] = str(tmp_path)
    code = "import zyx; print('|'.join(d.platform for d in zyx.devices()))"
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Intel(R) OpenCL" in res.stdout.strip().split("|")
