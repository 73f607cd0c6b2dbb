"""Fuzz tier: seeded random op programs (``fuzz_programs``) run in zyx and in PyTorch CPU: forward values,
gradients of every float leaf against torch autograd, and a ``zyx.jit`` capture and replay against zyx's
eager run. ``ZYX_FUZZ_CASES`` sets the number of seeds (default 120), ``ZYX_FUZZ_SEED`` the first one.

Float32 results are compared with a tolerance that grows with the computation's own conditioning: the
distance between PyTorch's float32 and float64 results of the same program (a cancellation that costs
PyTorch digits costs zyx the same ones). A failing case prints its seed and the program as a script.
"""
from __future__ import annotations

import os
import warnings
from typing import Any

import numpy as np
import pytest

import zyx
import zyx.nn.functional as ZF

from fuzz_programs import Program, generate

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.needs_device

CASES = int(os.environ.get("ZYX_FUZZ_CASES", "120"))  # more seeds: set ZYX_FUZZ_CASES (CI's cold run keeps 20 minutes)
FIRST = int(os.environ.get("ZYX_FUZZ_SEED", "0"))

# float dtype -> (rtol, atol, multiple of the float32-float64 gap allowed, eps ratio applied to that gap)
TOLERANCE = {"float32": (2e-5, 1e-6, 8.0, 1.0), "float64": (1e-10, 1e-13, 8.0, 2.0 ** -29)}


def _namespace(lib: Any) -> dict[str, Any]:
    if lib is torch:
        return {"T": torch, "F": torch.nn.functional, "idx": lambda v: torch.tensor(v, dtype=torch.int64)}
    return {"T": zyx, "F": ZF, "idx": lambda v: zyx.tensor(np.array(v, dtype=np.int64))}


def _compile(prog: Program, lib: Any):
    ns = _namespace(lib)
    exec(compile(prog.function_source(), f"<fuzz seed {prog.seed}>", "exec"), ns)
    return ns["program"]


def _weights(prog: Program, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    rng = np.random.default_rng(prog.seed + 10**6)
    return [rng.standard_normal(s).astype(np.float64) for s in shapes]


def _run_torch(prog: Program, dtype: Any) -> tuple[list[np.ndarray], list[np.ndarray | None]] | BaseException:
    """Outputs and leaf gradients of ``(sum(out_i * w_i)).backward()`` (no gradients for integer programs)."""
    fn = _compile(prog, torch)
    leaves = [torch.tensor(a.astype(dtype) if prog.is_float else a, requires_grad=prog.is_float)
              for _, a in prog.leaves]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outs = fn(*leaves)
            grads: list[np.ndarray | None] = []
            floats = [i for i, o in enumerate(outs) if o.dtype.is_floating_point and o.requires_grad]
            if prog.is_float and floats:
                ws = _weights(prog, [tuple(o.shape) for o in outs])
                sum((outs[i] * torch.tensor(ws[i], dtype=outs[i].dtype)).sum() for i in floats).backward()
                grads = [None if x.grad is None else x.grad.numpy() for x in leaves]
    except Exception as e:  # noqa: BLE001 - PyTorch's refusal is compared with zyx's
        return e
    return [o.detach().numpy() for o in outs], grads


def _run_zyx(prog: Program, grad: bool = True, leaves: list[np.ndarray] | None = None, jit: Any = None):
    fn = jit or _compile(prog, zyx)
    arrays = leaves if leaves is not None else [a for _, a in prog.leaves]
    xs = [zyx.tensor(a, requires_grad=prog.is_float and grad) for a in arrays]
    outs = fn(*xs)
    values = [o.numpy() for o in outs]
    grads: list[np.ndarray | None] = []
    floats = [i for i, o in enumerate(outs) if o.dtype.is_float and o.requires_grad]
    if grad and prog.is_float and floats:
        ws = _weights(prog, [tuple(o.shape) for o in outs])
        loss = None
        for i in floats:
            term = (outs[i] * zyx.tensor(ws[i].astype(np.dtype(outs[i].dtype.name)))).sum()
            loss = term if loss is None else loss + term
        loss.backward()
        grads = [None if x.grad is None else x.grad.numpy() for x in xs]
    return values, grads


def _matches(g: np.ndarray, w: np.ndarray, rtol: float, atol: float, slack: Any) -> np.ndarray:
    same_special = (np.isnan(g) & np.isnan(w)) | (np.isinf(g) & (g == w))
    with np.errstate(invalid="ignore", over="ignore"):
        return same_special | (np.isfinite(g) & np.isfinite(w) & (np.abs(g - w) <= atol + rtol * np.abs(w) + slack))


def _close(what: str, got: np.ndarray, want: np.ndarray, alt: np.ndarray | None) -> str | None:
    """None when ``got`` matches ``want``; ``alt`` is PyTorch's run of the program in the other float
    precision, whose distance from ``want`` measures how many digits the computation itself loses."""
    if got.shape != want.shape:
        return f"{what}: shape {got.shape}, expected {want.shape}"
    if str(got.dtype) != str(want.dtype):
        return f"{what}: dtype {got.dtype}, expected {want.dtype}"
    if got.dtype.kind != "f":
        return None if np.array_equal(got, want) else f"{what}: {got!r}\nexpected {want!r}"
    rtol, atol, times, ratio = TOLERANCE[str(got.dtype)]
    g, w = got.astype(np.float64), want.astype(np.float64)
    slack: Any = 0.0
    ok = np.zeros(w.shape, dtype=bool)
    if alt is not None:
        a = alt.astype(np.float64)
        both = np.isfinite(a) & np.isfinite(w)
        with np.errstate(over="ignore"):
            slack = np.where(both, np.abs(np.where(both, a, 0.0) - np.where(both, w, 0.0)) * times * ratio, 0.0)
        if got.dtype == np.float32:
            # float32 at the edge of overflow: the float64 run's value (rounded to float32) counts too
            with np.errstate(over="ignore"):
                a32 = a.astype(np.float32).astype(np.float64)
            ok = ~both & _matches(g, a32, rtol, atol, 0.0)
    ok = ok | _matches(g, w, rtol, atol, slack)
    if ok.all():
        return None
    bad = np.argwhere(~ok)[:5].tolist()
    return f"{what}: mismatch at {bad}\ngot      {got!r}\nexpected {want!r}"


def _compare(prog: Program, what: str, got: list, want: list, other: list | None) -> list[str]:
    problems = []
    if len(got) != len(want):
        return [f"{what}: {len(got)} results, expected {len(want)}"]
    for i, (g, w) in enumerate(zip(got, want)):
        if w is None or g is None:
            if (w is None) != (g is None):
                problems.append(f"{what}[{i}]: {'no gradient' if g is None else 'a gradient'}, expected "
                                f"{'none' if w is None else w!r}")
            continue
        msg = _close(f"{what}[{i}]", g, w, None if other is None else other[i])
        if msg:
            problems.append(msg)
    return problems


def check_program(prog: Program, jit: bool = True) -> list[str]:
    """Every difference between zyx and PyTorch on ``prog`` (empty: none)."""
    want = _run_torch(prog, np.dtype(prog.dtype))
    other = _run_torch(prog, np.float64 if prog.dtype == "float32" else np.float32) if prog.is_float else None
    try:
        got = _run_zyx(prog)
    except Exception as e:  # noqa: BLE001 - reported with the program
        if isinstance(want, BaseException):
            return []  # both refuse
        return [f"zyx raised {type(e).__name__}: {e}"]
    if isinstance(want, BaseException):
        return [f"PyTorch raised {type(want).__name__}: {want}; zyx did not"]
    if isinstance(other, BaseException):
        other = None
    problems = _compare(prog, "out", got[0], want[0], None if other is None else other[0])
    problems += _compare(prog, "grad", got[1], want[1], None if other is None else other[1])
    if jit and not problems:
        problems += _check_jit(prog)
    return problems


def _check_jit(prog: Program) -> list[str]:
    """Capture on the program's leaves, then replay on new values: each equals zyx's eager run."""
    jf = zyx.jit(_compile(prog, zyx))
    rng = np.random.default_rng(prog.seed + 2 * 10**6)
    second = [(a * 0.5 + rng.standard_normal(a.shape)).astype(a.dtype) if prog.is_float
              else (a + rng.integers(-2, 3, a.shape)).astype(a.dtype) for _, a in prog.leaves]
    problems = []
    for label, leaves in (("capture", [a for _, a in prog.leaves]), ("replay", second)):
        try:
            eager, _ = _run_zyx(prog, grad=False, leaves=leaves)
            traced, _ = _run_zyx(prog, grad=False, leaves=leaves, jit=jf)
        except Exception as e:  # noqa: BLE001 - reported with the program
            return [f"jit {label} raised {type(e).__name__}: {e}"]
        for i, (t, e) in enumerate(zip(traced, eager)):
            if t.shape != e.shape or not np.array_equal(t, e, equal_nan=t.dtype.kind == "f"):
                problems.append(f"jit {label}[{i}]: {t!r}\neager {e!r}")
    return problems


@pytest.mark.parametrize("seed", range(FIRST, FIRST + CASES))
def test_random_program(seed):
    prog = generate(seed)
    problems = check_program(prog)
    assert not problems, f"fuzz seed {seed}:\n{prog.snippet()}\n" + "\n".join(problems)
