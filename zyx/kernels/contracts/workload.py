"""A contract kernel's calibration workload: what each kernel module's ``calibration``
returns for ``zyx.contracts.calibrate`` (which prices it with the contract's cost) and
``bench/bench_contracts.py`` (which also runs it against NumPy).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from zyx.backend import transfer
from zyx.backend.device import Device
from zyx.backend.pool import Buffer
from zyx.contracts.spec.model import Operand
from zyx.dtype import DType
from zyx.ir.view import View


@dataclass
class Case:
    """One runnable call of a kernel on device buffers.

    ``run()`` enqueues it (returning its events, as the launcher does); ``ops`` and
    ``params`` are the call's operands and op params (its cost symbols come from them);
    ``arrays`` are the host inputs, keyed as ``bench_contracts.py`` expects; ``keep`` holds
    the buffers the launches use.
    """

    describe: str
    run: Callable[[], Any]
    ops: list[Operand]
    params: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    keep: list[Any] = field(default_factory=list, repr=False)


def square(n: int) -> tuple[int, int]:
    """A (rows, cols) of about ``n`` elements with cols a multiple of 64."""
    cols = max(64, 1 << (int(math.log2(max(n, 1))) // 2))
    rows = max(1, n // cols)
    return rows, cols


def data(shape: tuple[int, ...], dtype: DType, seed: int = 0) -> np.ndarray:
    """Reproducible host data of ``shape``: uniform floats, or small integers."""
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        return rng.random(shape, dtype=np.float64).astype(dtype.numpy)
    return rng.integers(0, 100, size=shape).astype(dtype.numpy)


def upload(device: Device, a: np.ndarray) -> Buffer:
    """``a`` in a new device buffer."""
    return transfer.upload(device, a)


def alloc(device: Device, n: int, dtype: DType) -> Buffer:
    """An uninitialized device buffer of ``n`` elements of ``dtype``."""
    return device.pool.allocate(n * dtype.itemsize)


def events(result: Any) -> list[Any]:
    """The launch events in ``result``: None, one event, or (nested) lists of them."""
    if result is None:
        return []
    if isinstance(result, (list, tuple)):
        return [e for r in result for e in events(r)]
    return [result]


@dataclass
class WriteBox:
    """The shared set-up of the write_slice* workloads: a (rows, cols) source written into
    rows of a (2 * rows, cols) zero destination."""

    rows: int
    cols: int
    dest_rows: int
    start: int
    x: np.ndarray
    src: Buffer
    dest: Buffer
    strides: tuple[int, ...]

    @property
    def arrays(self) -> dict[str, np.ndarray]:
        return {"x": self.x, "dest": np.zeros((self.dest_rows, self.cols), self.x.dtype)}


def write_box(device: Device, dt: DType, n: int) -> WriteBox:
    """A write of about ``n`` elements (see ``WriteBox``)."""
    rows, cols = square(n)
    x = data((rows, cols), dt)
    dest_rows = 2 * rows
    dest = upload(device, np.zeros((dest_rows, cols), dt.numpy))
    return WriteBox(rows, cols, dest_rows, rows // 2, x, upload(device, x), dest,
                    View.contiguous((dest_rows, cols)).strides)
