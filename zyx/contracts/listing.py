"""``zyx.contracts()``: the loaded contracts, printable as a table of costs.

The call returns a list of ``Contract`` objects (``.name``, ``.op_kind``, ``.dtypes``,
``.cost(**params)``); printing it shows each contract with its dtypes, the cost symbols
``.cost`` takes (the FKC reference's), its cost formula and,
once ``zyx.contracts.calibrate`` has measured the device, the fitted overhead and
bandwidth and the predicted against the measured time of a held-out run.

``zyx.contracts`` is a ``ContractsEntry``: called, it lists; otherwise it stands for the
package ``zyx/contracts/``, so ``zyx.contracts.get(...)`` and ``import zyx.contracts as zc``
keep working.
"""
from __future__ import annotations

import types
from typing import Any

from zyx.contracts import calibrate
from zyx.contracts.spec.cost import Cost
from zyx.contracts.spec.model import Contract
from zyx.contracts.spec.registry import all_contracts


class DeviceContract:
    """A contract seen from one device (None: the default): ``cost(**symbols)`` fills
    ``predicted_s`` from that device's stored calibration, as API.md promises; every other
    attribute is the contract's own."""

    def __init__(self, contract: Contract, device: Any = None) -> None:
        self.contract = contract
        self.device = device

    def __getattr__(self, name: str) -> Any:
        return getattr(self.contract, name)

    def cost(self, calibration: Any = None, **symbols: Any) -> Cost:
        """The contract's cost for ``symbols``, its time predicted from the device's calibration."""
        if calibration is not None:
            return self.contract.cost(calibration, **symbols)
        return calibrate.cost(self.contract, self.device, **symbols)

    def __eq__(self, other: object) -> bool:
        return self.contract == (other.contract if isinstance(other, DeviceContract) else other)

    def __hash__(self) -> int:
        return hash(self.contract)

    def __repr__(self) -> str:
        return repr(self.contract)


class ContractList(list):
    """The loaded contracts; ``str()`` is the report table (``print(zyx.contracts())``)."""

    def __init__(self, items: list[Contract], device: Any = None) -> None:
        super().__init__(items)
        self.device = device

    def __str__(self) -> str:
        return report(list(self), self.device)

    def names(self) -> list[str]:
        """The kernel names, in document order."""
        return [c.name for c in self]


def contracts(device: Any = None) -> ContractList:
    """Every loaded contract, seen from ``device`` (its calibration predicts ``cost().predicted_s``)."""
    return ContractList([DeviceContract(c, device) for c in all_contracts()], device)


def _dtypes(c: Contract) -> str:
    names = [d.name for d in c.dtypes]
    return "all 15" if len(names) == 15 else ",".join(names)


def _symbols(c: Contract) -> str:
    """What ``c.cost(...)`` takes (the FKC symbols), optional ones in brackets."""
    spec = c.cost_spec
    return ", ".join(f"[{s}]" if s in spec.optional else s for s in spec.symbols)


def report(items: list[Contract] | None = None, device: Any = None) -> str:
    """A markdown table of the contracts with their calibrated cost figures."""
    items = all_contracts() if items is None else items
    try:
        data = calibrate.load(device) or {}
    except Exception:  # noqa: BLE001 - no device: show the formulas only
        data = {}
    fits = data.get("kernels", {})
    lines = []
    if fits:
        lines.append(f"calibrated on {data.get('device', '?')}")
    else:
        lines.append("not calibrated on this device (run `python -m zyx contracts --calibrate`)")
    lines.append("")
    lines.append("| contract | op kinds | dtypes | cost symbols | bytes_moved | overhead | bandwidth "
                 "| held-out workload | predicted | measured |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    for c in items:
        rec = fits.get(c.name)
        if rec and rec.get("points"):
            last = rec.get("check") or rec["points"][-1]
            cal = (f"{rec['overhead_s'] * 1e6:.1f} us | {rec['bytes_per_s'] / 1e9:.2f} GB/s | {last['workload']} | "
                   f"{last['predicted_s'] * 1e3:.3f} ms | {last['measured_s'] * 1e3:.3f} ms")
        else:
            cal = "- | - | - | - | -"
        lines.append(f"| {c.name} | {', '.join(c.op_kinds)} | {_dtypes(c)} | {_symbols(c)} | "
                     f"`{c.cost_spec.bytes_moved}` | {cal} |")
    return "\n".join(lines)


def cli_main(args: Any) -> int:
    """``python -m zyx contracts [--calibrate]``: print the table (measuring first if asked)."""
    from zyx.backend.device import default_device

    if getattr(args, "calibrate", False):
        dev = default_device()
        print(f"calibrating contract kernels on {dev}")
        calibrate.calibrate(dev, quick=getattr(args, "quick", False), log=print)
        print()
    print(report())
    return 0


class ContractsEntry:
    """``zyx.contracts``: called, the loaded contracts (``contracts(device)``); every other
    attribute is the package's (``zyx.contracts.get``, ``zyx.contracts.calibrate``), since the
    package and the listing share the name."""

    def __init__(self, package: types.ModuleType) -> None:
        self.package = package

    def __call__(self, device: Any = None) -> ContractList:
        return contracts(device)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.package, name)

    def __dir__(self) -> list[str]:
        return sorted({*dir(self.package), "package"})

    def __repr__(self) -> str:
        return f"<zyx.contracts: call it to list the loaded contracts; the package {self.package!r}>"
