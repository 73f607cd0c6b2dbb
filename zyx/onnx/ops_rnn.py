"""Recurrent ONNX operators: RNN, GRU and LSTM (forward, reverse, bidirectional; both layouts;
peepholes, linear_before_reset, clip), unrolled over the sequence on the host. The input projection
of every step is one matmul up front; each step adds its recurrent matmul lazily."""
from __future__ import annotations

from typing import Callable

import numpy as np

import zyx.frontend.elementwise as ew
import zyx.frontend.reduce as red
from zyx.frontend.contract_ops import stack
from zyx.frontend.creation import zeros
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import Node, onnx_op

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {
    "Sigmoid": lambda x: x.sigmoid(), "Tanh": lambda x: x.tanh(), "Relu": lambda x: ew.maximum(x, 0.0),
}
_RNN_ATTRS = {"activation_alpha": None, "activation_beta": None, "activations": None, "clip": None,
              "direction": "forward", "hidden_size": None, "layout": 0}
_DIRECTIONS = {"direction": ("forward", "reverse", "bidirectional"), "layout": (0, 1)}


def _check_activations(node: Node) -> None:
    for name in node["activations"] or []:
        if name not in _ACTIVATIONS:
            raise node.unsupported(f"activation {name!r}")
    if node["activation_alpha"] or node["activation_beta"]:
        raise node.unsupported("activation_alpha/activation_beta")


class _Cell:
    """What the three recurrences share: activations per direction, clipping, inputs per direction."""

    def __init__(self, node: Node, x: Tensor, defaults: list[str], sequence_lens: Tensor | None) -> None:
        self.node = node
        self.x = x.permute(1, 0, 2) if node["layout"] else x  # (seq, batch, input)
        self.directions = 2 if node["direction"] == "bidirectional" else 1
        names = node["activations"] or defaults * self.directions
        per = len(defaults)
        self.acts = [[_ACTIVATIONS[n] for n in names[d * per:(d + 1) * per]] for d in range(self.directions)]
        if sequence_lens is not None:
            lens = np.asarray(node.host(4, sequence_lens)).reshape(-1)
            if (lens != self.x.shape[0]).any():
                raise node.unsupported("sequence_lens shorter than the sequence")

    def clip(self, v: Tensor) -> Tensor:
        limit = self.node["clip"]
        return v if limit is None else ew.clip(v, -limit, limit)

    def reverse(self, d: int) -> bool:
        return self.node["direction"] == "reverse" or d == 1

    def state(self, given: Tensor | None, d: int, hidden: int) -> Tensor:
        if given is not None:
            h = given.permute(1, 0, 2) if self.node["layout"] else given
            return h[d]
        return zeros(self.x.shape[1], hidden, dtype=self.x.dtype)

    def outputs(self, per_dir: list[list[Tensor]], finals: list[list[Tensor]]) -> tuple[Tensor, ...]:
        y = stack([stack(hs, 0) for hs in per_dir], 1)  # (seq, dirs, batch, hidden)
        last = [stack([f[k] for f in finals], 0) for k in range(len(finals[0]))]  # (dirs, batch, hidden)
        if self.node["layout"]:
            return y.permute(2, 0, 1, 3), *(s.permute(1, 0, 2) for s in last)
        return y, *last

    def run(self, d: int, step: Callable[[Tensor, list[Tensor]], list[Tensor]], w: Tensor, bias: Tensor | None,
            initial: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
        """Unroll direction ``d``: ``step(projected_x_t, state) -> new state`` (hidden first); the hidden
        state of every step in sequence order, and the last state."""
        seq = self.x.shape[0]
        projected = red.matmul(self.x, w.transpose(0, 1))  # (seq, batch, gates * hidden)
        if bias is not None:
            projected = projected + bias
        hs, state = [], initial
        order = range(seq - 1, -1, -1) if self.reverse(d) else range(seq)
        for t in order:
            state = step(projected[t], state)
            hs.append(state[0])
        return (hs[::-1] if self.reverse(d) else hs), state

    def each_direction(self, fn: Callable[[int], tuple[list[Tensor], list[Tensor]]]) -> tuple[Tensor, ...]:
        runs = [fn(d) for d in range(self.directions)]
        return self.outputs([hs for hs, _ in runs], [state for _, state in runs])


def _bias_halves(b: Tensor | None, d: int, width: int) -> tuple[Tensor | None, Tensor | None]:
    if b is None:
        return None, None
    return b[d, :width], b[d, width:]


@onnx_op("RNN", attrs=_RNN_ATTRS, choices=_DIRECTIONS, check=_check_activations)
def _rnn(node: Node, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None, sequence_lens: Tensor | None = None,
         initial_h: Tensor | None = None) -> tuple[Tensor, ...]:
    cell = _Cell(node, x, ["Tanh"], sequence_lens)
    hidden = r.shape[-1]

    def direction(d: int) -> tuple[list[Tensor], list[Tensor]]:
        wb, rb = _bias_halves(b, d, hidden)
        bias = None if b is None else wb + rb
        rt = r[d].transpose(0, 1)
        f = cell.acts[d][0]
        return cell.run(d, lambda xt, s: [f(cell.clip(xt + red.matmul(s[0], rt)))], w[d], bias,
                        [cell.state(initial_h, d, hidden)])
    return cell.each_direction(direction)


@onnx_op("GRU", attrs={**_RNN_ATTRS, "linear_before_reset": 0}, choices=_DIRECTIONS, check=_check_activations)
def _gru(node: Node, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None, sequence_lens: Tensor | None = None,
         initial_h: Tensor | None = None) -> tuple[Tensor, ...]:
    cell = _Cell(node, x, ["Sigmoid", "Tanh"], sequence_lens)
    hidden = r.shape[-1]

    def direction(d: int) -> tuple[list[Tensor], list[Tensor]]:
        wb, rb = _bias_halves(b, d, 3 * hidden)
        rz, rr, rh = (r[d, k * hidden:(k + 1) * hidden].transpose(0, 1) for k in range(3))
        rbz, rbr, rbh = (None, None, None) if rb is None else (rb[k * hidden:(k + 1) * hidden] for k in range(3))
        f, g = cell.acts[d]

        def add(a: Tensor, c: Tensor | None) -> Tensor:
            return a if c is None else a + c

        def step(xt: Tensor, state: list[Tensor]) -> list[Tensor]:
            h = state[0]
            xz, xr, xh = xt[:, :hidden], xt[:, hidden:2 * hidden], xt[:, 2 * hidden:]
            z = f(cell.clip(add(xz + red.matmul(h, rz), rbz)))
            reset = f(cell.clip(add(xr + red.matmul(h, rr), rbr)))
            if node["linear_before_reset"]:
                candidate = g(cell.clip(xh + reset * add(red.matmul(h, rh), rbh)))
            else:
                candidate = g(cell.clip(add(xh + red.matmul(reset * h, rh), rbh)))
            return [(1 - z) * candidate + z * h]
        return cell.run(d, step, w[d], wb, [cell.state(initial_h, d, hidden)])
    return cell.each_direction(direction)


@onnx_op("LSTM", attrs={**_RNN_ATTRS, "input_forget": 0}, choices=_DIRECTIONS, check=_check_activations)
def _lstm(node: Node, x: Tensor, w: Tensor, r: Tensor, b: Tensor | None = None, sequence_lens: Tensor | None = None,
          initial_h: Tensor | None = None, initial_c: Tensor | None = None, p: Tensor | None = None
          ) -> tuple[Tensor, ...]:
    if node["input_forget"]:
        raise node.unsupported("input_forget=1")
    cell = _Cell(node, x, ["Sigmoid", "Tanh", "Tanh"], sequence_lens)
    hidden = r.shape[-1]

    def direction(d: int) -> tuple[list[Tensor], list[Tensor]]:
        wb, rb = _bias_halves(b, d, 4 * hidden)
        bias = None if b is None else wb + rb
        rt = r[d].transpose(0, 1)
        pi, po, pf = (None, None, None) if p is None else (p[d, k * hidden:(k + 1) * hidden] for k in range(3))
        f, g, h_act = cell.acts[d]

        def peep(v: Tensor, weight: Tensor | None, c: Tensor) -> Tensor:
            return v if weight is None else v + weight * c

        def step(xt: Tensor, state: list[Tensor]) -> list[Tensor]:
            h, c = state
            gates = xt + red.matmul(h, rt)
            gi, go, gf, gc = (gates[:, k * hidden:(k + 1) * hidden] for k in range(4))
            i = f(cell.clip(peep(gi, pi, c)))
            forget = f(cell.clip(peep(gf, pf, c)))
            c_new = forget * c + i * g(cell.clip(gc))
            o = f(cell.clip(peep(go, po, c_new)))
            return [o * h_act(c_new), c_new]
        return cell.run(d, step, w[d], bias, [cell.state(initial_h, d, hidden), cell.state(initial_c, d, hidden)])
    return cell.each_direction(direction)
