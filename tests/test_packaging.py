"""The Mako templates must be found from an installed (non-editable) wheel too."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("hatchling")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, text=True)
    (whl,) = out.glob("zyx-*.whl")
    return whl


def test_wheel_ships_templates_and_contract_docs(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for tpl in (ROOT / "templates").rglob("*.mako"):
        assert f"zyx/templates/{tpl.relative_to(ROOT / 'templates').as_posix()}" in names
    docs = list((ROOT / "zyx" / "contracts" / "docs").glob("*.md"))
    for doc in docs:
        assert f"zyx/contracts/docs/{doc.name}" in names


def test_installed_wheel_runs_kernels_without_the_checkout(wheel: Path, tmp_path: Path) -> None:
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    code = (
        "import numpy as np, zyx\n"
        "from zyx.codegen.render import templates_dir\n"
        f"assert str(templates_dir()).startswith({str(site)!r}), templates_dir()\n"
        "x = zyx.arange(12, dtype=zyx.float32).reshape(3, 4)\n"
        "assert np.array_equal(x.T.contiguous().numpy(), np.arange(12, dtype=np.float32).reshape(3, 4).T)\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"
