"""Registering OpenCL runtimes that pip installs but the ICD loader cannot find.

Intel's CPU runtime from PyPI (``intel-opencl-rt``) puts ``libintelocl.so`` in the
environment's ``lib/`` and an ``.icd`` file whose path is a build-time placeholder, in a
directory the pyopencl wheel's loader (ocl-icd) never reads. That loader reads
``OCL_ICD_VENDORS`` (a directory of ``.icd`` files), else ``/etc/OpenCL/vendors``, plus
always ``pyopencl/.libs/*.icd``. So zyx writes a vendors directory of its own holding the
system's ``.icd`` files and one for each runtime found, and points ``OCL_ICD_VENDORS`` at
it before the loader first runs. A user's own ``OCL_ICD_VENDORS`` is left alone.
"""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from zyx import settings

SYSTEM_VENDORS = Path("/etc/OpenCL/vendors")

# (icd file name, library file name) of runtimes that pip installs into ``<prefix>/lib``.
PIP_RUNTIMES = (("intel-cpu.icd", "libintelocl.so"),)


def pip_runtime_libraries(prefixes: tuple[str, ...] | None = None) -> dict[str, Path]:
    """The pip-installed runtime libraries present: ``{icd file name: library path}``."""
    roots = prefixes if prefixes is not None else tuple(dict.fromkeys((sys.prefix, sys.base_prefix)))
    found: dict[str, Path] = {}
    for icd_name, lib_name in PIP_RUNTIMES:
        for root in roots:
            lib = Path(root) / "lib" / lib_name
            if lib.is_file():
                found[icd_name] = lib.resolve()
                break
    return found


def vendors_dir_contents(libraries: dict[str, Path], system_dir: Path = SYSTEM_VENDORS) -> dict[str, str]:
    """The ``.icd`` files of a vendors directory: the system's, plus one per pip runtime.

    A system file of the same name wins: a runtime installed system-wide is the user's choice.
    """
    files: dict[str, str] = {}
    try:
        for icd in sorted(system_dir.glob("*.icd")):
            try:
                files[icd.name] = icd.read_text()
            except OSError:
                continue
    except OSError:
        pass
    for icd_name, lib in libraries.items():
        files.setdefault(icd_name, f"{lib}\n")
    return files


def _write_vendors_dir(files: dict[str, str]) -> Path | None:
    """A directory holding exactly ``files``, under the cache directory; None if unwritable."""
    digest = hashlib.sha256(repr(sorted(files.items())).encode()).hexdigest()[:16]
    target = settings.cache_dir() / "icd" / digest
    try:
        target.mkdir(parents=True, exist_ok=True)
        for name, text in files.items():
            path = target / name
            if not path.is_file() or path.read_text() != text:
                tmp = target / f".{name}.{os.getpid()}"
                tmp.write_text(text)
                os.replace(tmp, path)
    except OSError:
        return None
    return target


def register_pip_runtimes() -> Path | None:
    """Point ``OCL_ICD_VENDORS`` at a directory that also lists pip-installed runtimes.

    Returns that directory, or None when nothing was changed (no such runtime, or the user
    set ``OCL_ICD_VENDORS`` themselves). Call before the OpenCL loader first lists platforms.
    """
    if os.environ.get("OCL_ICD_VENDORS", "").strip():
        return None
    libraries = pip_runtime_libraries()
    if not libraries:
        return None
    target = _write_vendors_dir(vendors_dir_contents(libraries))
    if target is not None:
        os.environ["OCL_ICD_VENDORS"] = str(target)
    return target
