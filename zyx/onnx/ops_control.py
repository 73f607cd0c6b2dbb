"""Control-flow ONNX operators: If, Loop and Scan run their subgraphs (prepared at load like the main
graph) from the host. If and Loop read their conditions back; Scan's iterations stay lazy, so a
scan over a sequence queues its steps without a readback."""
from __future__ import annotations

from typing import Any

import numpy as np

from zyx.frontend.contract_ops import stack
from zyx.frontend.tensor import Tensor
from zyx.onnx.registry import REQUIRED, Node, axis_of, onnx_op, upload

_LATEST = 10**6


@onnx_op("If", attrs={"then_branch": REQUIRED, "else_branch": REQUIRED}, versions=(11, _LATEST))
def _if(node: Node, cond: Tensor) -> tuple[Tensor, ...]:
    taken = node["then_branch"] if bool(np.asarray(node.host(0, cond)).reshape(-1)[0]) else node["else_branch"]
    return tuple(taken.run(node.scope, node.host_values))


def _stacked(node: Node, values: list[Tensor], axis: int, what: str) -> Tensor:
    if not values:
        raise node.unsupported(f"{what} of zero iterations (its shape is unknown)")
    return stack(values, axis_of(axis, values[0].ndim + 1))


@onnx_op("Loop", attrs={"body": REQUIRED}, versions=(11, _LATEST))
def _loop(node: Node, trip_count: Tensor | None = None, cond: Tensor | None = None, *initial: Tensor
          ) -> tuple[Tensor, ...]:
    body = node["body"]
    limit = None if trip_count is None else int(np.asarray(node.host(0, trip_count)).reshape(-1)[0])
    keep = True if cond is None else bool(np.asarray(node.host(1, cond)).reshape(-1)[0])
    carried = list(initial)
    scans: list[list[Tensor]] = [[] for _ in range(len(body.outputs) - 1 - len(carried))]
    step = 0
    while keep and (limit is None or step < limit):
        counter, flag = np.array(step, dtype=np.int64), np.array(keep)
        env: dict[str, Any] = {**node.scope, body.inputs[0]: upload(counter), body.inputs[1]: upload(flag)}
        env.update(zip(body.inputs[2:], carried))
        host = {**node.host_values, body.inputs[0]: counter, body.inputs[1]: flag}
        outs = body.run(env, host)
        keep = bool(outs[0].numpy().reshape(-1)[0])
        carried = outs[1:1 + len(carried)]
        for values, value in zip(scans, outs[1 + len(carried):]):
            values.append(value)
        step += 1
    return (*carried, *(_stacked(node, values, 0, "a Loop scan output") for values in scans))


@onnx_op("Scan", attrs={"body": REQUIRED, "num_scan_inputs": REQUIRED, "scan_input_axes": None,
                        "scan_input_directions": None, "scan_output_axes": None, "scan_output_directions": None},
         versions=(9, _LATEST))
def _scan(node: Node, *inputs: Tensor) -> tuple[Tensor, ...]:
    body = node["body"]
    count = node["num_scan_inputs"]
    states, sequences = list(inputs[:len(inputs) - count]), inputs[len(inputs) - count:]
    in_axes = [axis_of(a, x.ndim) for a, x in zip(node["scan_input_axes"] or [0] * count, sequences)]
    in_dirs = node["scan_input_directions"] or [0] * count
    n_out = len(body.outputs) - len(states)
    out_axes = node["scan_output_axes"] or [0] * n_out
    out_dirs = node["scan_output_directions"] or [0] * n_out
    length = sequences[0].shape[in_axes[0]]
    collected: list[list[Tensor]] = [[] for _ in range(n_out)]
    for t in range(length):
        steps = [x.narrow(axis, length - 1 - t if d else t, 1).squeeze(axis)
                 for x, axis, d in zip(sequences, in_axes, in_dirs)]
        env = {**node.scope, **dict(zip(body.inputs, [*states, *steps]))}
        outs = body.run(env, dict(node.host_values))
        states = outs[:len(states)]
        for values, value in zip(collected, outs[len(states):]):
            values.append(value)
    results = []
    for values, axis, d in zip(collected, out_axes, out_dirs):
        results.append(_stacked(node, values[::-1] if d else values, axis, "a Scan output"))
    return (*states, *results)
