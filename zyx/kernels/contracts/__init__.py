"""The contract kernels: one module per kernel (``templates/contracts/*.cl.mako``).

Each module renders its contract's template (the document's ``entry_point``) with a small
explicit parameter dict, builds it once per device (``backend.launch.compile_kernel``
caches by source) and enqueues it, returning the OpenCL event(s). It also declares its
tunables (``DECLARED``) and its calibration workload (``calibration``). Launchers take
device buffers and plain ints; checking the contract, contiguizing and making Tensors is
``zyx.frontend.contract_ops``'s job. ``common`` holds what they share (tunables, vector widths,
grids, index types, stream decisions); ``tuning`` the ``tuned`` decorator.

Byte kernels are specialized on the element size (not the dtype) and on shapes; values
that change from call to call in real use (roll shift, write positions and offsets,
concat column, triangular diagonal, masked_fill value and length) are run-time
arguments, so they never cause a rebuild.
"""
from __future__ import annotations

import importlib
from types import ModuleType

from zyx.dtype import index_type
from zyx.kernels.contracts.common import (
    NEVER,
    Tunables,
    default_tunables,
    fold_axes,
    set_tunables,
    streams,
    tunables,
    vector_width,
    widen,
)
from zyx.kernels.contracts.concat import concat_part
from zyx.kernels.contracts.contiguize import (
    TRANSPOSE_TILE_BYTES,
    TRANSPOSE_TILE_L_BYTES,
    contiguize,
    tile_length,
    transpose_axis,
)
from zyx.kernels.contracts.cummax import cummax, cummin
from zyx.kernels.contracts.cumprod import cumprod
from zyx.kernels.contracts.cumsum import (
    accumulator,
    cumsum,
    cumsum_strategy,
    result_dtype,
    row_vector,
    scan_lane_vector,
)
from zyx.kernels.contracts.flip import flip, flip_groups
from zyx.kernels.contracts.logcumsumexp import logcumsumexp
from zyx.kernels.contracts.masked_fill import masked_fill, masked_fill_tunables
from zyx.kernels.contracts.roll import roll
from zyx.kernels.contracts.triangular import triangular
from zyx.kernels.contracts.write_slice import write_slice
from zyx.kernels.contracts.write_slice_doff import write_slice_doff
from zyx.kernels.contracts.write_slice_rotating import write_slice_rotating

#: The kernel modules, one per template (a module's launcher shares its name, so the
#: modules are taken from ``sys.modules``, not from this package's attributes).
MODULES: tuple[ModuleType, ...] = tuple(importlib.import_module(f"{__name__}.{name}") for name in (
    "contiguize", "flip", "roll", "concat", "write_slice", "write_slice_rotating", "write_slice_doff",
    "triangular", "masked_fill", "cumsum", "cumprod", "cummax", "logcumsumexp"))

_BY_NAME: dict[str, ModuleType] = {m.__name__.rsplit(".", 1)[1]: m for m in MODULES}
_BY_NAME.update((c, m) for m in MODULES for c in m.CONTRACTS)


def module_for(name: str) -> ModuleType:
    """The kernel module implementing contract ``name`` (``cumsum_bf16`` -> ``cumsum``), or
    the module of that name."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no kernel module implements contract {name!r}; known: "
                       f"{', '.join(sorted(_BY_NAME))}") from None


#: The tunables each kernel module declares, by module name.
DECLARED: dict[str, tuple[str, ...]] = {m.__name__.rsplit(".", 1)[1]: m.DECLARED for m in MODULES}

__all__ = [
    "DECLARED", "MODULES", "NEVER", "TRANSPOSE_TILE_BYTES", "TRANSPOSE_TILE_L_BYTES", "Tunables", "accumulator",
    "concat_part", "contiguize", "cummax", "cummin", "cumprod", "cumsum", "cumsum_strategy", "default_tunables",
    "flip", "flip_groups", "fold_axes", "index_type", "logcumsumexp", "masked_fill", "masked_fill_tunables",
    "module_for", "result_dtype", "roll", "row_vector", "scan_lane_vector", "set_tunables", "streams", "tile_length",
    "transpose_axis", "triangular", "tunables", "vector_width", "widen", "write_slice", "write_slice_doff",
    "write_slice_rotating",
]
