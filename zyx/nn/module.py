"""``zyx.nn.Module`` and ``zyx.nn.Parameter``: parameters, buffers and submodules as PyTorch keeps them.

A module registers what is assigned to it: a ``Parameter`` goes to ``_parameters``, a ``Module`` to
``_modules``, and ``register_buffer`` tensors to ``_buffers``; names are PyTorch's dotted paths, so a
PyTorch ``state_dict`` (as arrays) loads as is. Loading writes into the existing tensors in place
(``p[...] = value`` under ``no_grad``), so an optimizer holding the parameters keeps seeing them.

``Parameter(t)`` returns a plain ``Tensor``: a leaf sharing ``t``'s storage that requires grad. It is
not a subclass (the elementwise fast paths test ``type(x) is Tensor``, and views and ``detach`` of a
subclass would keep its type); ``isinstance(x, Parameter)`` asks a registry of the tensors it made.
"""
from __future__ import annotations

import copy
import weakref
from collections import OrderedDict, namedtuple
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from zyx.backend.device import Device
from zyx.dtype import DType, to_dtype
from zyx.errors import DTypeError, ZyxError
from zyx.frontend.autograd.engine import no_grad
from zyx.frontend.base import TensorBase
from zyx.frontend.creation import from_numpy, zeros, zeros_like

# id(tensor) -> weak reference: the tensors ``Parameter`` made (see the module docstring)
_PARAMETERS: dict[int, weakref.ref] = {}


def _forget(key: int, ref: weakref.ref) -> None:
    if _PARAMETERS.get(key) is ref:
        del _PARAMETERS[key]


class _ParameterType(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        ref = _PARAMETERS.get(id(obj))
        return ref is not None and ref() is obj


class Parameter(metaclass=_ParameterType):
    """``Parameter(tensor, requires_grad=True)``: a leaf tensor sharing ``tensor``'s storage, marked as
    a module parameter (``isinstance(p, zyx.nn.Parameter)`` is True; ``type(p)`` is ``zyx.Tensor``)."""

    def __new__(cls, data: Any = None, requires_grad: bool = True) -> Any:
        if data is None:
            data = zeros(0)
        if not isinstance(data, TensorBase):
            raise DTypeError(f"Parameter: expected a zyx Tensor, got {type(data).__name__}")
        t = data.detach()
        if requires_grad:
            t.requires_grad_(True)
        key = id(t)
        _PARAMETERS[key] = weakref.ref(t, lambda r, k=key: _forget(k, r))
        return t


def _hold(t: Any, new: Any) -> None:
    """Make the leaf ``t`` hold ``new``'s storage, view, dtype and device (PyTorch's ``t.data = new``);
    its identity, ``requires_grad`` and parameter mark stay."""
    t._data, t._view, t._dtype, t._device = new._data, new._view, new._dtype, new._device


class StateDictError(ZyxError, RuntimeError):
    """``load_state_dict`` found missing or unexpected keys (strict) or a shape mismatch (a
    ``RuntimeError``, as PyTorch raises)."""


_IncompatibleKeys = namedtuple("IncompatibleKeys", ["missing_keys", "unexpected_keys"])


class IncompatibleKeys(_IncompatibleKeys):
    """What ``load_state_dict`` returns: the keys it expected and did not get, and the keys it got
    and did not expect."""

    __slots__ = ()

    def __repr__(self) -> str:
        if not self.missing_keys and not self.unexpected_keys:
            return "<All keys matched successfully>"
        return super().__repr__()


def _as_tensor(value: Any, like: Any) -> Any:
    """``value`` (a zyx tensor, NumPy array or anything ``np.asarray`` takes) on ``like``'s device."""
    if isinstance(value, TensorBase):
        return value if value.device is like.device else value.to(like.device)
    arr = np.asarray(value)
    # ascontiguousarray makes a 0-d array 1-d; a scalar buffer (num_batches_tracked) keeps its shape
    return from_numpy(np.ascontiguousarray(arr).reshape(arr.shape), device=like.device)


def _copy_tensor(t: Any) -> Any:
    with no_grad():
        c = t.clone()
    if not isinstance(t, Parameter):
        return c
    p = Parameter(c, requires_grad=t.requires_grad)
    if t.grad is not None:
        p.grad = t.grad.detach().clone()
    return p


def _addindent(text: str, spaces: int) -> str:
    lines = text.split("\n")
    return lines[0] if len(lines) == 1 else "\n".join([lines[0]] + [" " * spaces + ln for ln in lines[1:]])


class Module:
    """The base class of layers and models (PyTorch's ``nn.Module``): subclasses call
    ``super().__init__()`` first, assign parameters and submodules as attributes, and define
    ``forward``."""

    training: bool
    _version = 1

    def __init__(self) -> None:
        object.__setattr__(self, "training", True)
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers", set())
        object.__setattr__(self, "_modules", OrderedDict())

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError(f"{type(self).__name__} has no forward(); define it in the subclass")

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    # -- registration -----------------------------------------------------------------
    def _check_name(self, name: Any, kind: str) -> None:
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {kind} before Module.__init__() call")
        if not isinstance(name, str):
            raise TypeError(f"{kind} name should be a string, got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"{kind} name can't be empty or contain '.', got {name!r}")

    def _weight_and_bias(self, weight_shape: tuple[int, ...], bias_size: int, bias: bool, dtype: Any,
                         device: Any) -> None:
        """Register ``weight`` (zeros of ``weight_shape``) and ``bias`` (``bias_size`` zeros, or None when
        ``bias`` is False) as parameters; the layer's ``reset_parameters`` then initializes them."""
        from zyx.frontend.creation import zeros

        self.weight = Parameter(zeros(*weight_shape, dtype=dtype, device=device))
        if bias:
            self.bias = Parameter(zeros(bias_size, dtype=dtype, device=device))
        else:
            self.register_parameter("bias", None)

    def register_parameter(self, name: str, param: Any) -> None:
        """Add a parameter (a ``Parameter`` or None) under ``name``."""
        self._check_name(name, "parameter")
        if hasattr(self, name) and name not in self._parameters:
            raise KeyError(f"attribute {name!r} already exists")
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"cannot assign {type(param).__name__} object to parameter {name!r} "
                            "(zyx.nn.Parameter or None required)")
        self._parameters[name] = param

    def register_buffer(self, name: str, tensor: Any, persistent: bool = True) -> None:
        """Add a buffer (a tensor that is state but not a parameter, or None); a persistent buffer is
        part of ``state_dict``."""
        self._check_name(name, "buffer")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute {name!r} already exists")
        if tensor is not None and not isinstance(tensor, TensorBase):
            raise TypeError(f"cannot assign {type(tensor).__name__} object to buffer {name!r} "
                            "(zyx Tensor or None required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers.discard(name)
        else:
            self._non_persistent_buffers.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Add a submodule (or None) under ``name``."""
        self._check_name(name, "module")
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"{type(module).__name__} is not a Module subclass")
        if hasattr(self, name) and name not in self._modules:
            raise KeyError(f"attribute {name!r} already exists")
        self._modules[name] = module

    register_module = add_module

    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        params = d.get("_parameters")
        if isinstance(value, Parameter):
            if params is None:
                raise AttributeError("cannot assign parameters before Module.__init__() call")
            self._remove_from(name, d, self._buffers, self._modules)
            self.register_parameter(name, value)
        elif params is not None and name in params:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as parameter {name!r} "
                                "(zyx.nn.Parameter or None expected)")
            params[name] = None
        elif isinstance(value, Module):
            if params is None:
                raise AttributeError("cannot assign module before Module.__init__() call")
            self._remove_from(name, d, params, self._buffers)
            self._modules[name] = value
        elif params is not None and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} as child module {name!r} "
                                "(zyx.nn.Module or None expected)")
            self._modules[name] = None
        elif params is not None and name in self._buffers:
            if value is not None and not isinstance(value, TensorBase):
                raise TypeError(f"cannot assign {type(value).__name__} as buffer {name!r} "
                                "(zyx Tensor or None expected)")
            self._buffers[name] = value
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name: str, d: dict, *dicts: dict) -> None:
        d.pop(name, None)
        for dd in dicts:
            dd.pop(name, None)

    def __getattr__(self, name: str) -> Any:
        # only called when normal lookup fails: parameters, buffers and submodules live in dicts
        d = self.__dict__
        for key in ("_parameters", "_buffers", "_modules"):
            table = d.get(key)
            if table is not None and name in table:
                return table[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name: str) -> None:
        for key in ("_parameters", "_buffers", "_modules"):
            table = self.__dict__[key]
            if name in table:
                del table[name]
                self._non_persistent_buffers.discard(name)
                return
        object.__delattr__(self, name)

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._parameters) | set(self._buffers) | set(self._modules))

    # -- traversal ----------------------------------------------------------------------
    def named_modules(self, memo: set | None = None, prefix: str = "",
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Module]]:
        """This module and every submodule, depth first, with dotted names (each module once)."""
        if memo is None:
            memo = set()
        if remove_duplicate:
            if id(self) in memo:
                return
            memo.add(id(self))
        yield prefix, self
        for name, module in self._modules.items():
            if module is None:
                continue
            yield from module.named_modules(memo, f"{prefix}.{name}" if prefix else name, remove_duplicate)

    def modules(self) -> Iterator[Module]:
        for _, m in self.named_modules():
            yield m

    def named_children(self) -> Iterator[tuple[str, Module]]:
        seen: set[int] = set()
        for name, module in self._modules.items():
            if module is not None and id(module) not in seen:
                seen.add(id(module))
                yield name, module

    def children(self) -> Iterator[Module]:
        for _, m in self.named_children():
            yield m

    def _named_members(self, table: str, prefix: str, recurse: bool,
                       remove_duplicate: bool) -> Iterator[tuple[str, Any]]:
        seen: set[int] = set()
        owners = self.named_modules(prefix=prefix, remove_duplicate=remove_duplicate) if recurse else [(prefix, self)]
        for mod_prefix, module in owners:
            for name, t in getattr(module, table).items():
                if t is None:
                    continue
                if remove_duplicate:
                    if id(t) in seen:
                        continue
                    seen.add(id(t))
                yield (f"{mod_prefix}.{name}" if mod_prefix else name), t

    def named_parameters(self, prefix: str = "", recurse: bool = True,
                         remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        """``(dotted name, parameter)`` pairs; a parameter shared by several modules comes once."""
        yield from self._named_members("_parameters", prefix, recurse, remove_duplicate)

    def parameters(self, recurse: bool = True) -> Iterator[Any]:
        for _, p in self.named_parameters(recurse=recurse):
            yield p

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, Any]]:
        yield from self._named_members("_buffers", prefix, recurse, remove_duplicate)

    def buffers(self, recurse: bool = True) -> Iterator[Any]:
        for _, b in self.named_buffers(recurse=recurse):
            yield b

    def get_submodule(self, target: str) -> Module:
        """The submodule at dotted path ``target`` (``""`` is this module)."""
        module = self
        for part in target.split(".") if target else []:
            child = module._modules.get(part)
            if child is None:
                raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (looking up {target!r})")
            module = child
        return module

    # -- modes and gradients ------------------------------------------------------------
    def train(self, mode: bool = True) -> Module:
        """Set training mode on this module and every submodule; returns ``self``."""
        if not isinstance(mode, bool):
            raise ValueError(f"training mode is expected to be a bool, got {type(mode).__name__}")
        for m in self.modules():
            object.__setattr__(m, "training", mode)
        return self

    def eval(self) -> Module:
        """``train(False)``."""
        return self.train(False)

    def requires_grad_(self, requires_grad: bool = True) -> Module:
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Drop every parameter's gradient (``set_to_none``) or fill it with zeros in place."""
        for p in self.parameters():
            g = p.grad
            if g is None:
                continue
            # a fresh zero tensor rather than a write: a gradient may be a broadcast (stride-0) view
            p.grad = None if set_to_none else zeros_like(g)

    def apply(self, fn: Callable[[Module], Any]) -> Module:
        """Call ``fn`` on every submodule (children first), then on ``self``; returns ``self``."""
        for m in self.children():
            m.apply(fn)
        fn(self)
        return self

    # -- dtype and device ---------------------------------------------------------------------
    def _apply_to_tensors(self, convert: Callable[[Any], Any]) -> Module:
        """Convert every parameter and its gradient in place (the same tensor objects now hold
        ``convert(tensor)``'s values, as PyTorch's ``param.data = ...``: an optimizer made before
        ``to`` keeps updating the module's parameters) and replace every buffer by ``convert(buffer)``."""
        done: set[int] = set()
        with no_grad():
            for m in self.modules():
                for p in m._parameters.values():
                    if p is None or id(p) in done:
                        continue
                    done.add(id(p))
                    new = convert(p)
                    if new is not p:
                        grad = p.grad
                        _hold(p, new)
                        if grad is not None:
                            p.grad = convert(grad)
                for name, b in m._buffers.items():
                    if b is not None:
                        m._buffers[name] = convert(b)
        return self

    def to(self, *args: Any, device: Any = None, dtype: Any = None) -> Module:
        """Move parameters and buffers to a device and/or cast the floating ones to a dtype:
        ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, or the keywords. Parameters stay the
        same tensor objects (converted in place, as in PyTorch); buffers are replaced."""
        for a in args:
            if isinstance(a, (Device, str)) and not _is_dtype(a):
                device = a
            else:
                dtype = a
        dt: DType | None = to_dtype(dtype) if dtype is not None else None
        if dt is not None and not dt.is_float:
            raise DTypeError(f"Module.to only accepts floating dtypes, got {dt.name}")

        def convert(t: Any) -> Any:
            out = t
            if device is not None:
                out = out.to(device)
            if dt is not None and out.dtype.is_float:
                out = out.cast(dt)
            return out

        return self._apply_to_tensors(convert)

    def float(self) -> Module:
        return self.to(dtype="float32")

    def double(self) -> Module:
        return self.to(dtype="float64")

    def half(self) -> Module:
        return self.to(dtype="float16")

    def bfloat16(self) -> Module:
        return self.to(dtype="bfloat16")

    # -- state dicts --------------------------------------------------------------------------
    def state_dict(self, destination: dict | None = None, prefix: str = "",
                   keep_vars: bool = False) -> OrderedDict:
        """Parameters and persistent buffers by dotted name (detached, sharing storage, unless
        ``keep_vars``); a shared parameter appears under each of its names, as in PyTorch."""
        out = OrderedDict() if destination is None else destination
        for name, p in self._parameters.items():
            if p is not None:
                out[prefix + name] = p if keep_vars else p.detach()
        for name, b in self._buffers.items():
            if b is not None and name not in self._non_persistent_buffers:
                out[prefix + name] = b if keep_vars else b.detach()
        for name, m in self._modules.items():
            if m is not None:
                m.state_dict(out, prefix + name + ".", keep_vars)
        return out

    def _local_state(self) -> dict[str, Any]:
        state = {n: p for n, p in self._parameters.items() if p is not None}
        state.update((n, b) for n, b in self._buffers.items()
                     if b is not None and n not in self._non_persistent_buffers)
        return state

    def load_state_dict(self, state_dict: Any, strict: bool = True, assign: bool = False) -> IncompatibleKeys:
        """Copy ``state_dict``'s values (zyx tensors, NumPy arrays, or anything ``np.asarray``
        takes) into the parameters and buffers in place (cast to their dtypes). Missing or
        unexpected keys raise ``StateDictError`` when ``strict`` (all of them listed), a shape
        mismatch always; returns ``IncompatibleKeys(missing_keys, unexpected_keys)``. Nothing is
        written when it raises. ``assign=True`` makes the loaded tensors the new parameters and
        buffers instead (no copy; they keep their own dtype; parameters keep ``requires_grad``)."""
        state_dict = dict(state_dict)
        missing: list[str] = []
        expected: set[str] = set()
        mismatched: list[str] = []
        writes: list[tuple[Any, Any]] = []
        for prefix, module in self.named_modules(remove_duplicate=False):
            pre = prefix + "." if prefix else ""
            for name, target in module._local_state().items():
                key = pre + name
                expected.add(key)
                if key not in state_dict:
                    missing.append(key)
                    continue
                value = state_dict[key]
                shape = tuple(value.shape) if hasattr(value, "shape") else np.shape(value)
                if tuple(shape) != tuple(target.shape):
                    mismatched.append(f"size mismatch for {key}: copying a param with shape {tuple(shape)} from "
                                      f"checkpoint, the shape in current model is {tuple(target.shape)}.")
                    continue
                writes.append((module, name, target, value))
        unexpected = [k for k in state_dict if k not in expected]
        errors = list(mismatched)
        if strict:
            if unexpected:
                errors.insert(0, "Unexpected key(s) in state_dict: " + ", ".join(f'"{k}"' for k in unexpected) + ".")
            if missing:
                errors.insert(0, "Missing key(s) in state_dict: " + ", ".join(f'"{k}"' for k in missing) + ".")
        if errors:
            raise StateDictError(f"Error(s) in loading state_dict for {type(self).__name__}:\n\t" + "\n\t".join(errors))
        with no_grad():
            for module, name, target, value in writes:
                if not assign:
                    target[...] = _as_tensor(value, target)
                elif name in module._parameters:
                    module._parameters[name] = Parameter(_as_tensor(value, target), target.requires_grad)
                else:
                    module._buffers[name] = _as_tensor(value, target)
        return IncompatibleKeys(missing, unexpected)

    # -- copies -----------------------------------------------------------------------------
    def __deepcopy__(self, memo: dict) -> Module:
        """``copy.deepcopy(module)``: the same structure with copied parameters (still parameters,
        same ``requires_grad``, gradients copied), buffers copied, sharing kept."""
        for t in (*self.parameters(), *self.buffers()):
            if id(t) not in memo:
                memo[id(t)] = _copy_tensor(t)
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        for k, v in self.__dict__.items():
            object.__setattr__(new, k, copy.deepcopy(v, memo))
        return new

    # -- printing ---------------------------------------------------------------------------
    def extra_repr(self) -> str:
        """The text between the parentheses of this module's repr (subclasses override it)."""
        return ""

    def _get_name(self) -> str:
        return type(self).__name__

    def __repr__(self) -> str:
        extra = self.extra_repr()
        lines = extra.split("\n") if extra else []
        for name, m in self._modules.items():
            lines.append(f"({name}): " + _addindent(repr(m), 2))
        if not lines:
            return f"{self._get_name()}()"
        if len(lines) == 1 and not self._modules:
            return f"{self._get_name()}({lines[0]})"
        return f"{self._get_name()}(\n  " + "\n  ".join(lines) + "\n)"


def _is_dtype(x: Any) -> bool:
    if isinstance(x, DType):
        return True
    try:
        to_dtype(x)
    except (DTypeError, TypeError, KeyError, ValueError):
        return False
    return True
