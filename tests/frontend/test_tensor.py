"""``Tensor`` is composed from the frontend mixins (STYLE.md item 8): nothing patches it, the
mixin modules never import it, and it keeps every public method it had before the split."""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

import zyx
from zyx.frontend.base import TensorBase

FRONTEND = Path(zyx.__file__).parent / "frontend"

# dir(zyx.Tensor) before the frontend package (public names and operator dunders)
PUBLIC_BEFORE = {
    "T", "abs", "add", "all", "amax", "amin", "any", "argmax", "argmin", "bitcast", "broadcast_to", "cast", "ceil",
    "chunk", "clamp", "clip", "clone", "contiguous", "cos", "cumsum", "device", "dim", "div", "dtype", "eq", "erf",
    "exp", "exp2", "expand", "flatten", "flip", "floor", "gelu", "is_contiguous", "isinf", "isnan", "item", "log",
    "log2", "log_softmax", "logical_not", "logsumexp", "masked_fill", "matmul", "max", "maximum", "mean", "min",
    "minimum", "mul", "narrow", "ndim", "ne", "neg", "numel", "numpy", "pad", "permute", "pinned", "pow", "prod",
    "realize", "reciprocal", "relu", "reshape", "roll", "round", "rsqrt", "shape", "sigmoid", "sign", "silu", "sin",
    "size", "softmax", "split", "sqrt", "square", "squeeze", "std", "stride", "sub", "sum", "tan", "tanh", "to",
    "tolist", "transpose", "tril", "triu", "trunc", "type", "unsqueeze", "var", "view", "where",
}
DUNDERS_BEFORE = {
    "__abs__", "__add__", "__and__", "__array__", "__array_priority__", "__bool__", "__float__", "__floordiv__",
    "__getitem__", "__index__", "__int__", "__invert__", "__iter__", "__len__", "__matmul__", "__mod__", "__mul__",
    "__neg__", "__or__", "__pos__", "__pow__", "__radd__", "__rand__", "__rfloordiv__", "__rmatmul__", "__rmod__",
    "__rmul__", "__ror__", "__rpow__", "__rsub__", "__rtruediv__", "__rxor__", "__setitem__", "__sub__",
    "__truediv__", "__xor__",
    # defined by object too: Tensor's own versions
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__repr__", "__str__",
}


def test_every_public_method_is_still_there():
    missing = {n for n in PUBLIC_BEFORE | DUNDERS_BEFORE if not hasattr(zyx.Tensor, n)}
    assert not missing, f"Tensor lost {sorted(missing)}"
    inherited = {n for n in DUNDERS_BEFORE if getattr(zyx.Tensor, n) is getattr(object, n, None)}
    assert not inherited, f"Tensor falls back to object's {sorted(inherited)}"
    assert zyx.Tensor.__hash__ is object.__hash__  # identity hashing although == is elementwise


@pytest.mark.needs_device
def test_tensor_is_composed_from_mixins_with_slots():
    mixins = [c for c in zyx.Tensor.__mro__[1:] if c not in (TensorBase, object)]
    assert [c.__name__ for c in mixins] == ["IndexingMixin", "CompositesMixin", "ElementwiseMixin",
                                            "ElementwiseMathMixin", "ReduceMixin", "VarEntryMixin", "MovementMixin",
                                            "ContractOpsMixin", "SoftmaxMixin", "SortingMixin", "ShapeOpsMixin",
                                            "EinsumMixin", "InplaceMixin", "AutogradMixin"]
    assert all("__slots__" in c.__dict__ for c in mixins)
    assert not hasattr(zyx.tensor([1.0]), "__dict__")


@pytest.mark.needs_device
def test_fresh_interpreter_imports_the_tensor_module_alone():
    code = (
        "import sys\n"
        "from zyx.frontend.tensor import Tensor\n"
        "import numpy as np\n"
        "for name in ('__add__', 'sum', 'reshape', 'flip', 'softmax'):\n"
        "    assert name in dir(Tensor), name\n"
        "from zyx.frontend.creation import tensor\n"
        "x = tensor([[1.0, 2.0], [3.0, 4.0]])\n"
        "y = ((x + 1) * x - x / 2).sum(1).reshape(2, 1).flip(0).softmax(0)\n"
        "a = np.array([[1.0, 2.0], [3.0, 4.0]], dtype=np.float32)\n"
        "b = ((a + 1) * a - a / 2).sum(1).reshape(2, 1)[::-1]\n"
        "e = np.exp(b - b.max(0))\n"
        "assert np.allclose(y.numpy(), e / e.sum(0)), y.numpy()\n"
        "assert (x @ x).tolist() == [[7.0, 10.0], [15.0, 22.0]]\n"
        "print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ),
                         timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def _imports(path: Path) -> set[str]:
    """Every module a file imports (``from a import b`` counts as ``a`` and ``a.b``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_no_frontend_module_imports_the_tensor_module():
    offenders = [p.name for p in sorted(FRONTEND.glob("*.py"))
                 if p.name != "__init__.py" and "zyx.frontend.tensor" in _imports(p) and p.name != "tensor.py"]
    assert not offenders, f"{offenders} import zyx.frontend.tensor; mixins build results through frontend/base.py"


def test_no_patching_of_tensor_anywhere():
    for p in sorted(Path(zyx.__file__).parent.rglob("*.py")):
        for node in ast.walk(ast.parse(p.read_text(), str(p))):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    assert not (isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name)
                                and t.value.id == "Tensor"), f"{p}:{node.lineno} assigns Tensor.{t.attr}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr != "update" or not (isinstance(node.func.value, ast.Call)
                                                          and getattr(node.func.value.func, "id", "") == "globals"), \
                    f"{p}:{node.lineno} calls globals().update"
