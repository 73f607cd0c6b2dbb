"""``VarTensor``, a tensor of variable size (``frontend.varsize``): ``Tensor`` with its movement,
elementwise and compute methods replaced by their variable forms (``varsize_shapes``, ``varsize_compute``)
and its shape read at the bound values."""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx import graph
from zyx.errors import AutogradError
from zyx.frontend.base import check_writable
from zyx.frontend.tensor import Tensor
from zyx.frontend.varsize import _taint
from zyx.frontend.varsize_compute import VarComputeMixin, VarElementwiseMixin
from zyx.frontend.varsize_shapes import VarMovementMixin
from zyx.ir.view import View


class VarTensor(VarMovementMixin, VarElementwiseMixin, VarComputeMixin, Tensor, varsize=True):
    """A tensor with variable-size axes (``frontend.varsize``): ``_data`` is computed at the
    static extents of ``_pview``; ``_vax[d]`` is the ``VDim`` of axis ``d`` (None: static)."""

    __slots__ = ("_pview", "_vax")

    @property  # type: ignore[override]
    def _view(self) -> View:
        """The view at the bound values (a read of them: reported, so a capture keys by the values)."""
        v = self._pview
        for d, vd in enumerate(self._vax):
            if vd is not None:
                for var, _ in vd.terms:
                    _taint(var)
                v = v.slice(d, 0, vd.value, 1)
        return v

    @_view.setter
    def _view(self, v: View) -> None:
        check_writable(self, "rebinding its view")

    @property
    def requires_grad(self) -> bool:
        return self._ag is not None

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:  # ``x.requires_grad = True`` as ``requires_grad_``
        self.requires_grad_(flag)

    def requires_grad_(self, requires_grad: bool = True) -> VarTensor:
        if requires_grad:
            raise AutogradError("a tensor of variable size cannot require grad (expected a static tensor: "
                                "slice a leaf that requires grad instead; that slice is taken by value)")
        return self

    def _assign(self, value: Tensor) -> None:
        check_writable(self, "_assign")

    @property
    def shape(self) -> tuple:
        ps = self._pview.shape
        return tuple(ps[d] if vd is None else vd.public() for d, vd in enumerate(self._vax))

    @property
    def ndim(self) -> int:
        return len(self._vax)

    def dim(self) -> int:
        return len(self._vax)

    def __len__(self) -> int:
        if not self._vax:
            raise TypeError("len() of a 0-d tensor")
        return int(self.shape[0])

    def realize(self) -> VarTensor:
        """Run the pending work (at the static extents) and return this tensor."""
        graph.realize(self._data)
        return self

    def numpy(self) -> Any:
        """A NumPy copy of the values at the bound sizes (read at the static extents, then cut on the
        host: one readback kernel serves every value)."""
        arr = Tensor.numpy(self.phys())
        cut = []
        for vd in self._vax:
            if vd is None:
                cut.append(slice(None))
            else:
                for var, _ in vd.terms:
                    _taint(var)
                cut.append(slice(0, vd.value))
        return np.ascontiguousarray(arr[tuple(cut)])

    def phys(self) -> Tensor:
        """The data at the static extents (a plain tensor; elements past a size are unspecified)."""
        return Tensor(self._data, self._pview, self._dtype, self._device)

