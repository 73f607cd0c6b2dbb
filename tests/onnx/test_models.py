"""zyx.onnx on whole models: PyTorch exports against onnxruntime, the Model API (inputs, outputs,
feeds, run), refusals at load time, and model files as untrusted data (external data confined to
the model's directory, truncated or corrupt files)."""
from __future__ import annotations

import io
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# onnx.helper, not onnx: without the package, the name "onnx" imports this directory (a namespace package)
pytest.importorskip("onnx.helper")
import onnx
from onnx import TensorProto, helper, numpy_helper

import zyx
import zyx.onnx

pytestmark = pytest.mark.needs_device


def _ort_run(model: Any, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    ort = pytest.importorskip("onnxruntime")
    data = model if isinstance(model, bytes) else model.SerializeToString()
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


def _export(torch: Any, module: Any, args: tuple[Any, ...], names: list[str]) -> bytes:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript exporter's deprecation notice
        torch.onnx.export(module.eval(), args, f, dynamo=False, input_names=names, output_names=["out"],
                          opset_version=17)
    return f.getvalue()


def _check_export(torch: Any, module: Any, *inputs: np.ndarray, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    names = [f"in{i}" for i in range(len(inputs))]
    data = _export(torch, module, tuple(torch.from_numpy(a) for a in inputs), names)
    feeds = dict(zip(names, inputs))
    model = zyx.onnx.load(data)
    got = model.run(None, feeds)
    expected = _ort_run(data, feeds)
    with torch.no_grad():
        reference = module(*(torch.from_numpy(a) for a in inputs)).numpy()
    assert len(got) == len(expected) == 1
    assert got[0].dtype == expected[0].dtype and got[0].shape == expected[0].shape
    np.testing.assert_allclose(got[0], expected[0], rtol=rtol, atol=atol)
    np.testing.assert_allclose(got[0], reference, rtol=rtol, atol=atol)


def test_exported_mlp(torch: Any) -> None:
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(12, 32), torch.nn.GELU(), torch.nn.Linear(32, 16), torch.nn.Tanh(),
                              torch.nn.Linear(16, 5), torch.nn.LogSoftmax(dim=-1))
    _check_export(torch, mlp, np.random.default_rng(0).standard_normal((7, 12)).astype(np.float32))


def test_exported_cnn_with_batchnorm(torch: Any) -> None:
    torch.manual_seed(0)
    nn = torch.nn
    cnn = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10))
    with torch.no_grad():  # non-trivial running statistics, so eval-mode BatchNorm matters
        for bn in (cnn[1], cnn[5]):
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.uniform_(0.5, 1.5)
            bn.bias.uniform_(-0.2, 0.2)
    _check_export(torch, cnn, np.random.default_rng(1).standard_normal((2, 3, 16, 16)).astype(np.float32))


def test_exported_transformer_encoder_layer(torch: Any) -> None:
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                             batch_first=True)

    class Encoder(torch.nn.Module):  # is_causal passed as a Python bool: the tracer cannot export the default
        def __init__(self) -> None:
            super().__init__()
            self.layer = layer

        def forward(self, x: Any) -> Any:
            return self.layer(x, is_causal=False)

    x = np.random.default_rng(2).standard_normal((2, 6, 32)).astype(np.float32)
    _check_export(torch, Encoder(), x, rtol=1e-4, atol=1e-4)


# -- the Model API ---------------------------------------------------------------------------------

def _model(nodes: list[Any], inputs: list[Any], outputs: list[Any], initializers: list[Any] = (),
           opset: int = 17) -> Any:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _affine() -> Any:
    w = numpy_helper.from_array(np.arange(6, dtype=np.float32).reshape(3, 2), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Relu", ["xw"], ["y"]),
             helper.make_node("Shape", ["y"], ["shape"])]
    return _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 3])],
                  [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2]),
                   helper.make_tensor_value_info("shape", TensorProto.INT64, [2])], [w])


def test_model_api() -> None:
    model = zyx.onnx.load(_affine())
    assert model.inputs == ["x"] and model.outputs == ["y", "shape"]
    x = np.array([[1, -2, 0.5], [-1, -1, -1]], dtype=np.float32)
    expected = np.maximum(x @ np.arange(6, dtype=np.float32).reshape(3, 2), 0)
    out = model(x=x)
    assert list(out) == ["y", "shape"] and isinstance(out["y"], zyx.Tensor)
    np.testing.assert_allclose(out["y"].numpy(), expected, rtol=1e-6)
    assert out["shape"].numpy().tolist() == [2, 2]
    y, = model.run(["y"], {"x": zyx.tensor(x)})  # zyx inputs too
    np.testing.assert_allclose(y, expected, rtol=1e-6)
    assert [a.tolist() for a in model.run(None, {"x": x})] == [a.tolist() for a in _ort_run(_affine(), {"x": x})]


def test_model_feed_errors() -> None:
    model = zyx.onnx.load(_affine())
    with pytest.raises(ValueError, match="missing input 'x'"):
        model.run(None, {})
    with pytest.raises(ValueError, match="unknown input names"):
        model.run(None, {"x": np.zeros((1, 3), np.float32), "z": 1})
    with pytest.raises(TypeError, match="expected element type FLOAT, got"):
        model.run(None, {"x": np.zeros((1, 3), np.float64)})
    with pytest.raises(ValueError, match="unknown output names"):
        model.run(["nope"], {"x": np.zeros((1, 3), np.float32)})


def test_initializers_upload_once() -> None:
    model = zyx.onnx.load(_affine())
    x = np.ones((4, 3), np.float32)
    model.run(None, {"x": x})
    with zyx.profiler.profile() as prof:
        model.run(None, {"x": x})
    uploads = [e for e in prof.events() if e.kind == "transfer" and e.name == "host_to_device"]
    # the feed and Shape's host-computed value; the weights stay on the device between runs
    assert [e.bytes for e in uploads] == [x.nbytes, 16]


# -- refusals --------------------------------------------------------------------------------------

def _unary(op: str, opset: int = 17, domain: str = "", **attrs: Any) -> Any:
    node = helper.make_node(op, ["x"], ["y"], domain=domain, **attrs)
    model = _model([node], [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])], opset=opset)
    if domain:
        model.opset_import.append(helper.make_opsetid(domain, 1))
    return model


def test_unsupported_operator_named_at_load() -> None:
    with pytest.raises(NotImplementedError, match=r"ONNX operator Det \(opset 17\)"):
        zyx.onnx.load(_unary("Det"))


def test_other_domain_refused() -> None:
    with pytest.raises(NotImplementedError, match="domain 'com.example'"):
        zyx.onnx.load(_unary("Gelu", domain="com.example"))


def test_operator_version_older_than_opset_13_refused() -> None:
    with pytest.raises(NotImplementedError, match=r"ONNX operator Softmax \(opset 11, operator version 11\)"):
        zyx.onnx.load(_unary("Softmax", opset=11))


def test_unsupported_attribute_value_refused() -> None:
    with pytest.raises(NotImplementedError, match=r"Gelu \(opset 20\): approximate='erf_fast'"):
        zyx.onnx.load(_unary("Gelu", opset=20, approximate="erf_fast"))


def test_unsupported_element_type_refused() -> None:
    node = helper.make_node("Identity", ["x"], ["y"])
    model = _model([node], [helper.make_tensor_value_info("x", TensorProto.COMPLEX64, [2])],
                   [helper.make_tensor_value_info("y", TensorProto.COMPLEX64, [2])])
    with pytest.raises(NotImplementedError, match="COMPLEX64"):
        zyx.onnx.load(model)


# -- model files are data --------------------------------------------------------------------------

def _with_external_weights(tmp_path: Path) -> Path:
    from onnx.external_data_helper import convert_model_to_external_data

    model = _affine()
    convert_model_to_external_data(model, all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)
    path = tmp_path / "model.onnx"
    onnx.save_model(model, str(path))
    return path


def _set_location(path: Path, location: str) -> None:
    model = onnx.load_model(str(path), load_external_data=False)
    for init in model.graph.initializer:
        for entry in init.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save_model(model, str(path))


def test_external_data_inside_the_directory(tmp_path: Path) -> None:
    path = _with_external_weights(tmp_path)
    x = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(zyx.onnx.load(path).run(["y"], {"x": x})[0], [[6.0, 9.0]])
    proto = onnx.load_model(str(path), load_external_data=False)
    with pytest.raises(ValueError, match="load the model from its path"):
        zyx.onnx.load(proto)
    np.testing.assert_allclose(zyx.onnx.load(proto, base_dir=tmp_path).run(["y"], {"x": x})[0], [[6.0, 9.0]])
    assert proto.graph.initializer[0].data_location == TensorProto.EXTERNAL  # the caller's proto is untouched


@pytest.mark.parametrize("location", ["../weights.bin", "/etc/passwd", "sub/../../weights.bin", "link.bin"])
def test_external_data_leaving_the_directory_refused(tmp_path: Path, location: str) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    path = _with_external_weights(inner)
    (tmp_path / "weights.bin").write_bytes((inner / "weights.bin").read_bytes())
    (inner / "link.bin").symlink_to(tmp_path / "weights.bin")
    _set_location(path, location)
    with pytest.raises(ValueError, match="leaves the model's directory"):
        zyx.onnx.load(path)


def test_external_data_out_of_range_refused(tmp_path: Path) -> None:
    path = _with_external_weights(tmp_path)
    (tmp_path / "weights.bin").write_bytes(b"\0" * 8)
    with pytest.raises(ValueError, match="exceeds"):
        zyx.onnx.load(path)


@pytest.mark.parametrize("cut", [0.5, 0.9, 0.99])
def test_truncated_file_refused(tmp_path: Path, cut: float) -> None:
    data = _affine().SerializeToString()
    path = tmp_path / "cut.onnx"
    path.write_bytes(data[:int(len(data) * cut)])
    with pytest.raises(ValueError, match="not a valid ONNX model|malformed"):
        zyx.onnx.load(path)


@pytest.mark.parametrize("data", [b"", b"\xff" * 64, b"PK\x03\x04 a zip, not a model", b"\x80\x04\x95 pickle"])
def test_garbage_file_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "bad.onnx"
    path.write_bytes(data)
    with pytest.raises(ValueError, match="not a valid ONNX model"):
        zyx.onnx.load(path)


def test_supported_operators_listed() -> None:
    ops = zyx.onnx.supported_operators()
    assert ops == sorted(ops) and {"Conv", "MatMul", "Resize", "Attention", "Softmax"} <= set(ops)
    assert "Det" not in ops
