"""No import circles and no import from a layer above (issue 12; DESIGN.md "Layers").

Three checks over every module of the ``zyx`` package, all pure Python (no OpenCL device):
each module imports on its own in a fresh interpreter; the module-level import graph, read
with ``ast``, has no cycle; and no module imports (at module level, in a function or under
``TYPE_CHECKING``) from a layer above its own, as ranked by ``LAYERS``.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import zyx

PACKAGE = Path(zyx.__file__).resolve().parent

# DESIGN.md "Layers", bottom first: a module may import from its own unit and from the units
# of lower tiers; units that share a tier are independent of each other. A unit is a list of
# packages and modules (a package covers its submodules); the root package ``zyx`` (its
# __init__) is exempt as an importer, it composes the public API.
LAYERS: list[dict[str, tuple[str, ...]]] = [
    {"base": ("zyx.dtype", "zyx.errors", "zyx.settings", "zyx.version", "zyx.op")},  # zyx.op: the Op enum
    # OpenCL; kernel IR; FKC documents (no OpenCL)
    {"backend": ("zyx.backend",), "ir": ("zyx.ir",), "contracts.spec": ("zyx.contracts.spec",)},
    {"codegen": ("zyx.codegen",)},  # linear IR -> OpenCL C (renders only; kernels builds and launches it)
    {"opt": ("zyx.opt",)},  # heuristics, search and database; the tuner renders and times candidates
    {"kernels": ("zyx.kernels",)},  # hand-written kernel families, the IR kernel launcher, the launch helper
    {"contracts": ("zyx.contracts",)},  # listing, calibrate
    {"graph": ("zyx.graph",)},  # nodes, fusion, scheduling and realization of IR and contract kernels
    {"frontend": ("zyx.frontend",), "runtime": ("zyx.runtime",)},  # the user API
    {"nn": ("zyx.nn",), "optim": ("zyx.optim",), "autograd": ("zyx.autograd",),
     "linalg": ("zyx.linalg",), "profiler": ("zyx.profiler",),
     "utils": ("zyx.utils",), "distributed": ("zyx.distributed",)},  # distributed: collectives on torch.distributed
    {"io": ("zyx.io",)},  # files; GGUF blocks load as zyx.nn.QuantizedWeight (so above nn)
    {"models": ("zyx.models",)},  # reference model families built from nn, their checkpoints read by io
    # ONNX graphs mapped onto frontend ops and nn.functional (so above nn); data parallelism (nn modules on
    # zyx.distributed's collectives)
    {"onnx": ("zyx.onnx",), "nn.parallel": ("zyx.nn.parallel",)},
    {"api": ("zyx",)},  # the root package: what ``import zyx`` gives (matched exactly)
    # entry points: python -m zyx, bench; torch.compile's backend (other frameworks' graphs)
    {"cli": ("zyx.cli", "zyx.__main__", "zyx.benchmarks"), "torch_backend": ("zyx.torch_backend",)},
]

# Importing zyx.__main__ runs the command line.
NOT_IMPORTED_ALONE = {"zyx.__main__"}


@dataclass(frozen=True)
class Import:
    importer: str
    target: str
    line: int
    where: str  # "module", "function" or "type-checking"

    def __str__(self) -> str:
        return f"{self.importer}:{self.line} imports {self.target} ({self.where})"


@cache
def modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its __init__.py)."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _resolve(name: str) -> str | None:
    """The module a dotted zyx name loads: itself, else its longest known prefix (a name
    that is no file is a namespace package or an attribute)."""
    while name:
        if name in modules():
            return name
        name = name.rpartition(".")[0]
    return None


def _imports_of(name: str, path: Path) -> list[Import]:
    """The zyx modules one module imports, each with its line and where it is imported."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: list[Import] = []

    def add(target: str, line: int, where: str) -> None:
        if target == "zyx" or target.startswith("zyx."):
            resolved = _resolve(target)
            if resolved is not None and resolved != name:
                found.append(Import(name, resolved, line, where))

    def walk(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                walk(child, "function")
                continue
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                for stmt in child.body:
                    walk(ast.Module(body=[stmt], type_ignores=[]), "type-checking")
                for stmt in child.orelse:
                    walk(ast.Module(body=[stmt], type_ignores=[]), where)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    add(alias.name, child.lineno, where)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(up + ([child.module] if child.module else []))
                for alias in child.names:
                    # `from zyx.a import b` loads the submodule zyx.a.b where there is one
                    sub = f"{base}.{alias.name}"
                    add(sub if sub in modules() else base, child.lineno, where)
            walk(child, where)

    walk(ast.parse(path.read_text(encoding="utf-8"), str(path)), "module")
    return found


@cache
def imports() -> list[Import]:
    """Every import of a zyx module by a zyx module: module-level, function-local, TYPE_CHECKING."""
    return [imp for name, path in modules().items() for imp in _imports_of(name, path)]


# -- each module on its own in a fresh interpreter ---------------------------------------------

# Runs in a child interpreter. With several names it preloads the third-party modules zyx
# imports, then forks one process per name (as many at a time as there are cores), so each zyx
# module is imported into an interpreter that has loaded no zyx module. For a submodule the
# root package's __init__ is not run first (it would import nearly everything in its own
# order, hiding the module's own chain): ``zyx`` is a bare package there; the root itself is
# imported as usual. Prints {name: traceback or ""}.
_DRIVER = r"""
import importlib, json, os, sys, traceback, types

names, package_dir, preload = json.loads(sys.argv[1])

def import_alone(name):
    try:
        if name != "zyx":
            root = types.ModuleType("zyx")
            root.__path__ = [package_dir]
            sys.modules["zyx"] = root
        importlib.import_module(name)
    except BaseException:
        return traceback.format_exc()[-4000:]
    return ""

results = {}
if len(names) == 1:
    results[names[0]] = import_alone(names[0])
else:
    for mod in preload:
        try:
            importlib.import_module(mod)
        except Exception:
            pass
    running, pending = {}, list(names)
    while pending or running:
        while pending and len(running) < (os.cpu_count() or 1):
            name = pending.pop()
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                message = import_alone(name)
                os.write(write, message.encode())
                os._exit(1 if message else 0)
            os.close(write)
            running[pid] = (name, read)
        pid, status = os.wait()
        name, read = running.pop(pid)
        message = b"".join(iter(lambda: os.read(read, 65536), b"")).decode()
        os.close(read)
        results[name] = "" if status == 0 else message or f"wait status {status}"
print(json.dumps(results))
"""


def _third_party() -> list[str]:
    """The top-level names of the non-zyx modules zyx imports at module level."""
    names = set()
    for path in modules().values():
        stack: list[ast.AST] = [ast.parse(path.read_text(encoding="utf-8"))]
        while stack:
            node = stack.pop()
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names.add(node.module.split(".")[0])
            elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(node))
    return sorted(names - {"zyx", "__future__"})


@pytest.fixture(scope="module")
def alone() -> dict[str, str]:
    """For each module, the traceback of importing it alone ("" when it imported)."""
    names = sorted(set(modules()) - NOT_IMPORTED_ALONE)
    batches = [names] if hasattr(os, "fork") else [[name] for name in names]
    results: dict[str, str] = {}
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}  # no BLAS threads across fork
    for batch in batches:
        run = subprocess.run([sys.executable, "-c", _DRIVER, json.dumps([batch, str(PACKAGE), _third_party()])],
                             cwd=PACKAGE.parent, capture_output=True, text=True, timeout=600, env=env)
        assert run.returncode == 0, run.stderr[-4000:]
        results.update(json.loads(run.stdout.splitlines()[-1]))
    return results


@pytest.mark.parametrize("name", sorted(set(modules()) - NOT_IMPORTED_ALONE))
def test_module_imports_alone(alone: dict[str, str], name: str) -> None:
    assert not alone[name], f"import {name} alone in a fresh interpreter failed:\n{alone[name]}"


# -- no circles ----------------------------------------------------------------------------------

def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """One shortest cycle through each strongly connected component of more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(v: str) -> None:  # Tarjan
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(component)

    for v in sorted(edges):
        if v not in index:
            connect(v)
    cycles = []
    for component in components:
        start = min(component)
        paths = {start: [start]}
        frontier = [start]
        while frontier:  # breadth first inside the component, back to start
            nxt = []
            for v in frontier:
                for w in sorted(edges[v] & component):
                    if w == start:
                        cycles.append(paths[v] + [start])
                        nxt, frontier = [], []
                        break
                    if w not in paths:
                        paths[w] = paths[v] + [w]
                        nxt.append(w)
                else:
                    continue
                break
            frontier = nxt
    return cycles


def test_no_import_cycles() -> None:
    # module-level imports only: a function-local import runs after every module has loaded
    edges: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], int] = {}
    for imp in imports():
        if imp.where == "module":
            edges.setdefault(imp.importer, set()).add(imp.target)
            lines.setdefault((imp.importer, imp.target), imp.line)
    cycles = _cycles(edges)
    report = [" -> ".join(f"{a} (l.{lines[a, b]})" for a, b in zip(c, c[1:])) + f" -> {c[-1]}" for c in cycles]
    assert not cycles, "module-level import cycles:\n" + "\n".join(report)


# -- layers --------------------------------------------------------------------------------------

def unit_of(name: str) -> tuple[int, str] | None:
    """(tier, unit) of a module: the unit whose longest entry covers it; None if none does."""
    best: tuple[int, int, str] | None = None
    for tier, units in enumerate(LAYERS):
        for unit, entries in units.items():
            for entry in entries:
                covers = name == entry or (entry != "zyx" and name.startswith(entry + "."))
                if covers and (best is None or len(entry) > best[0]):
                    best = (len(entry), tier, unit)
    return None if best is None else best[1:]


def test_every_module_has_a_layer() -> None:
    missing = [name for name in modules() if unit_of(name) is None]
    assert not missing, f"modules in no unit of LAYERS (add them): {missing}"


def test_no_import_from_a_layer_above() -> None:
    violations = []
    for imp in imports():
        if imp.importer == "zyx":
            continue
        source, target = unit_of(imp.importer), unit_of(imp.target)
        if source is None or target is None or source[1] == target[1]:
            continue
        if target[0] >= source[0]:
            violations.append(f"{imp}: {source[1]} (tier {source[0]}) -> {target[1]} (tier {target[0]})")
    assert not violations, f"{len(violations)} imports from a layer above or beside:\n" + "\n".join(violations)


# -- ranks inside each package -------------------------------------------------------------------

def _child_of(package: str, name: str) -> str | None:
    """The direct child of ``package`` (a module or a subpackage) that covers ``name``."""
    if not name.startswith(package + "."):
        return None
    return package + "." + name[len(package) + 1:].split(".")[0]


def _packages() -> list[str]:
    """Every package but the root, whose packages ``LAYERS`` ranks (it splits some, as contracts.spec)."""
    return sorted(name for name, path in modules().items() if path.name == "__init__.py" and name != "zyx")


@pytest.mark.parametrize("package", _packages())
def test_files_inside_a_package_form_a_stack(package: str) -> None:
    # Function-local imports count: a cycle hidden behind them is still a web a reader must hold in
    # mind. TYPE_CHECKING imports run never, so they carry annotations only. A subpackage is one node
    # here (its own files are ranked by its own case), and the package's __init__ composes, so it is
    # exempt as an importer.
    edges: dict[str, set[str]] = {}
    lines: dict[tuple[str, str], int] = {}
    for imp in imports():
        if imp.where == "type-checking" or imp.importer == package:
            continue
        source, target = _child_of(package, imp.importer), _child_of(package, imp.target)
        if source is None or target is None or source == target:
            continue
        edges.setdefault(source, set()).add(target)
        lines.setdefault((source, target), imp.line)
    cycles = _cycles(edges)
    report = [" -> ".join(f"{a} (l.{lines[a, b]})" for a, b in zip(c, c[1:])) + f" -> {c[-1]}" for c in cycles]
    assert not cycles, f"files of {package} import each other in a circle (function-local imports included):\n" + \
        "\n".join(report)


MAX_MODULE_LINES = 800  # STYLE.md: one concept per module, roughly 150-800 lines


@pytest.mark.parametrize("name", sorted(modules()))
def test_module_is_at_most_800_lines(name: str) -> None:
    lines = len(modules()[name].read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_MODULE_LINES, f"{name} has {lines} lines (at most {MAX_MODULE_LINES}): split it by concern"
