"""The spec layer (FKC documents: parse, cost, validate, registry, model) needs no OpenCL."""
from __future__ import annotations

import pkgutil
import subprocess
import sys
from pathlib import Path

import zyx.contracts.spec as spec

SPEC_DIR = Path(spec.__file__).parent
MODULES = sorted(f"zyx.contracts.spec.{m.name}" for m in pkgutil.iter_modules([str(SPEC_DIR)]))

# ``zyx/__init__`` and ``zyx/contracts/__init__`` assemble the whole library (backend
# included), so the check stands those two packages in as bare namespaces: what is
# imported is then exactly what the spec modules themselves pull in.
PROBE = """
import importlib, sys, types
zyx_dir = sys.argv[1]
for name, path in (("zyx", zyx_dir), ("zyx.contracts", zyx_dir + "/contracts")):
    package = types.ModuleType(name)
    package.__path__ = [path]
    sys.modules[name] = package
for name in sys.argv[2:]:
    importlib.import_module(name)
bad = sorted(m for m in sys.modules if m == "pyopencl" or m.startswith(("pyopencl.", "zyx.backend")))
print(" ".join(bad))
"""


def test_every_spec_module_is_listed():
    assert {"zyx.contracts.spec.parse", "zyx.contracts.spec.cost", "zyx.contracts.spec.validate",
            "zyx.contracts.spec.registry", "zyx.contracts.spec.model"} <= set(MODULES)


def test_spec_modules_import_no_opencl_nor_backend():
    for name in MODULES:  # each on its own, in a fresh interpreter
        out = subprocess.run([sys.executable, "-c", PROBE, str(SPEC_DIR.parent.parent), name],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == "", f"{name} imports {out}"
