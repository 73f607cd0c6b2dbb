"""safetensors files: round trips of every dtype, interop with the safetensors package, corrupt files."""
from __future__ import annotations

import gc
import json
import os
import struct

import numpy as np
import pytest

import zyx
from zyx.io.safetensors import DTYPE_NAMES, SafetensorsError

pytestmark = pytest.mark.needs_device

NP_OF = {name: dt.numpy for name, dt in DTYPE_NAMES.items()}
SHAPES = [(3, 5), (0,), (2, 0, 3), (), (7,)]


def _random(name: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    dt = np.dtype(NP_OF[name])
    if name == "BOOL":
        return np.asarray(rng.integers(0, 2, shape).astype(bool))
    if dt.kind in "iu":
        info = np.iinfo(dt)
        return np.asarray(rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True))
    return np.asarray((rng.standard_normal(shape) * 4).astype(np.float32).astype(dt))


def _arrays(seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"{name.lower()}_{i}": _random(name, shape, rng) for name in NP_OF for i, shape in enumerate(SHAPES)}


def _equal(actual: np.ndarray, expected: np.ndarray) -> None:
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape,
                                                                              expected.dtype, expected.shape)
    assert actual.tobytes() == expected.tobytes()


def test_round_trip_every_dtype_and_shape(tmp_path):
    arrays = _arrays()
    tensors = {k: zyx.from_numpy(v) for k, v in arrays.items()}
    path = tmp_path / "all.safetensors"
    zyx.save_file(tensors, path, metadata={"format": "pt", "note": "ünïcode"})
    loaded = zyx.load_file(path)
    assert set(loaded) == set(arrays)
    for k, v in arrays.items():
        assert loaded[k].dtype is tensors[k].dtype
        _equal(loaded[k].numpy(), v)
    assert zyx.load_file_metadata(path) == {"format": "pt", "note": "ünïcode"}
    assert not [p for p in os.listdir(tmp_path) if p.endswith(".tmp")]


def test_layout_is_the_format(tmp_path):
    path = tmp_path / "x.safetensors"
    zyx.save_file({"b": zyx.arange(3, dtype=zyx.int32), "a": zyx.ones(2, dtype=zyx.float16)}, path)
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert n % 8 == 0
    header = json.loads(raw[8:8 + n])
    assert header == {"a": {"dtype": "F16", "shape": [2], "data_offsets": [0, 4]},
                      "b": {"dtype": "I32", "shape": [3], "data_offsets": [4, 16]}}
    assert raw[8 + n:] == np.ones(2, np.float16).tobytes() + np.arange(3, dtype="<i4").tobytes()


def test_non_contiguous_inputs(tmp_path):
    base = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    t = zyx.from_numpy(base)
    views = {"permuted": t.permute(2, 0, 1), "stepped": t[:, ::2, 1:4], "expanded": zyx.ones(1, 3).expand(4, 3),
             "transposed": t[0].T}
    expected = {"permuted": base.transpose(2, 0, 1), "stepped": base[:, ::2, 1:4],
                "expanded": np.ones((4, 3), np.float32), "transposed": base[0].T}
    zyx.save_file(views, tmp_path / "v.safetensors")
    loaded = zyx.load_file(tmp_path / "v.safetensors")
    for k, v in expected.items():
        _equal(loaded[k].numpy(), np.ascontiguousarray(v))


def test_tensors_with_gradients_save_their_values(tmp_path):
    w = zyx.ones(3, requires_grad=True)
    zyx.save_file({"w": w * 2}, tmp_path / "g.safetensors")
    loaded = zyx.load_file(tmp_path / "g.safetensors")["w"]
    assert not loaded.requires_grad
    _equal(loaded.numpy(), np.full(3, 2, np.float32))


def test_load_on_a_named_device_pins(tmp_path):
    zyx.save_file({"x": zyx.ones(2)}, tmp_path / "d.safetensors")
    dev = zyx.default_device()
    assert zyx.load_file(tmp_path / "d.safetensors", device=dev)["x"].pinned
    assert not zyx.load_file(tmp_path / "d.safetensors")["x"].pinned


def test_loading_keeps_no_host_copy(tmp_path, monkeypatch):
    """Each tensor is uploaded straight from the file's memory map."""
    from zyx.backend import transfer

    zyx.save_file({"w": zyx.ones(64, 64), "b": zyx.zeros(64)}, tmp_path / "m.safetensors")
    seen = []
    real = transfer.upload

    def spy(device, host):
        seen.append(host)
        return real(device, host)

    monkeypatch.setattr(transfer, "upload", spy)
    zyx.load_file(tmp_path / "m.safetensors")
    assert len(seen) == 2
    for host in seen:
        base = host
        while getattr(base, "base", None) is not None and not isinstance(base, np.memmap):
            base = base.base
        assert isinstance(base, np.memmap), type(base)


# ------------------------------------------------------------------ save / load of state dicts

def test_save_load_nested_state_dict(tmp_path):
    w = zyx.arange(6, dtype=zyx.float32).reshape(2, 3)
    obj = {"model": {"layer.weight": w, "bias": zyx.zeros(2)},
           "optim": {"state": {0: {"step": 3.0, "exp_avg": zyx.ones(2, 3)}},
                     "param_groups": [{"lr": 0.1, "betas": (0.9, 0.999), "params": [0], "nesterov": False,
                                       "name": None}]}}
    path = tmp_path / "ckpt.safetensors"
    zyx.save(obj, path)
    back = zyx.load(path)
    _equal(back["model"]["layer.weight"].numpy(), w.numpy())
    assert back["optim"]["state"][0]["step"] == 3.0
    assert back["optim"]["param_groups"] == obj["optim"]["param_groups"]
    assert isinstance(back["optim"]["param_groups"][0]["betas"], tuple)
    # a plain safetensors reader sees the tensors under dotted names
    assert sorted(zyx.load_file(path)) == ["model.bias", "model.layer.weight", "optim.state.0.exp_avg"]


def test_save_flat_dict_is_plain_safetensors(tmp_path):
    zyx.save({"a": zyx.ones(2)}, tmp_path / "f.safetensors")
    assert zyx.load_file_metadata(tmp_path / "f.safetensors") == {}
    _equal(zyx.load(tmp_path / "f.safetensors")["a"].numpy(), np.ones(2, np.float32))


def test_save_refuses_what_it_cannot_store(tmp_path):
    with pytest.raises(SafetensorsError, match="never pickles"):
        zyx.save({"a": object()}, tmp_path / "x.safetensors")
    with pytest.raises(SafetensorsError, match="both named"):
        zyx.save({"a": {"b": zyx.ones(1)}, "a.b": zyx.ones(1)}, tmp_path / "x.safetensors")
    with pytest.raises(SafetensorsError, match="str to str"):
        zyx.save_file({"a": zyx.ones(1)}, tmp_path / "x.safetensors", metadata={"n": 1})
    with pytest.raises(SafetensorsError, match="tensor name 1 is not allowed"):  # was a bare TypeError (sort)
        zyx.save_file({"a": zyx.ones(1), 1: zyx.ones(1)}, tmp_path / "x.safetensors")
    assert not os.listdir(tmp_path)  # nothing written, not even a temporary file


def test_unwritable_targets_name_the_target(tmp_path):
    """The error names the path the user gave (it named the hidden temporary file) and leaves nothing."""
    target = tmp_path / "missing" / "x.safetensors"
    with pytest.raises(FileNotFoundError, match="does not exist") as info:
        zyx.save_file({"a": zyx.ones(1)}, target)
    assert str(target) in str(info.value) and ".tmp" not in str(info.value)
    with pytest.raises(IsADirectoryError, match="is a directory"):
        zyx.save({"a": zyx.ones(1)}, tmp_path)
    assert not os.listdir(tmp_path)


def test_a_failed_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.safetensors"
    zyx.save_file({"a": zyx.ones(3)}, path)
    before = path.read_bytes()
    bad = zyx.ones(4)
    monkeypatch.setattr(type(bad), "numpy", lambda self: (_ for _ in ()).throw(RuntimeError("boom")))
    with pytest.raises(RuntimeError, match="boom"):
        zyx.save_file({"a": bad}, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.safetensors"]


# ------------------------------------------------------------------ corrupt files

def _file(tmp_path, header: dict | bytes, data: bytes = b"", length: int | None = None):
    text = header if isinstance(header, bytes) else json.dumps(header).encode()
    path = tmp_path / "bad.safetensors"
    path.write_bytes(struct.pack("<Q", len(text) if length is None else length) + text + data)
    return path


@pytest.mark.parametrize("header,data,length,message", [
    (b"", b"", None, "not valid JSON"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, 10 ** 6, "header length"),
    (b"{not json", b"", None, "not valid JSON"),
    (b"[1, 2]", b"", None, "expected an object"),
    ({"a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}}, b"\0" * 12, None, "outside the data"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 12]}}, b"\0" * 12, None, "needs 8 bytes"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
      "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}, b"\0" * 12, None, "overlap"),
    ({"a": {"dtype": "C64", "shape": [1], "data_offsets": [0, 8]}}, b"\0" * 8, None, "dtype 'C64'"),
    ({"a": {"dtype": "F32", "shape": [-1], "data_offsets": [0, 0]}}, b"", None, "non-negative"),
    ({"a": {"dtype": "F32", "shape": [1]}}, b"\0" * 4, None, "data_offsets"),
    ({"__metadata__": {"k": 1}}, b"", None, "__metadata__"),
    ({"a": {"dtype": ["F32"], "shape": [1], "data_offsets": [0, 4]}}, b"\0" * 4, None, "has dtype"),  # unhashable
])
def test_corrupt_files_raise_and_load_nothing(tmp_path, header, data, length, message):
    path = _file(tmp_path, header, data, length)
    gc.collect()  # an earlier test's tensors in reference cycles, freed mid-call, made the count drop (flaky)
    live = zyx.memory_stats()["live_buffers"]
    with pytest.raises(SafetensorsError, match=message) as info:
        zyx.load_file(path)
    assert isinstance(info.value, zyx.ZyxError) and isinstance(info.value, ValueError)
    assert str(path) in str(info.value)
    assert zyx.memory_stats()["live_buffers"] == live  # nothing half-loaded


def test_truncated_files(tmp_path):
    path = tmp_path / "t.safetensors"
    zyx.save_file({"a": zyx.ones(4), "b": zyx.zeros(3)}, path)
    raw = path.read_bytes()
    for cut in (0, 5, 8, 20, len(raw) - 1):
        path.write_bytes(raw[:cut])
        with pytest.raises(SafetensorsError):
            zyx.load_file(path)


# ------------------------------------------------------------------ the safetensors package

def _numpy_readable(arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """All but float8: safetensors.numpy handles bfloat16 through ml_dtypes but not the float8 types
    (safetensors.torch covers those below)."""
    return {k: v for k, v in arrays.items() if not k.startswith("f8_")}


def test_files_from_safetensors_numpy_load_equal(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    arrays = _numpy_readable(_arrays(1))
    path = tmp_path / "np.safetensors"
    st_numpy.save_file(arrays, str(path), metadata={"m": "1"})
    loaded = zyx.load_file(path)
    assert set(loaded) == set(arrays)
    for k, v in arrays.items():
        _equal(loaded[k].numpy(), v)
    assert zyx.load_file_metadata(path) == {"m": "1"}


def test_zyx_files_load_in_safetensors_numpy(tmp_path):
    st_numpy = pytest.importorskip("safetensors.numpy")
    arrays = _numpy_readable(_arrays(2))
    zyx.save_file({k: zyx.from_numpy(v) for k, v in arrays.items()}, tmp_path / "z.safetensors", {"m": "2"})
    back = st_numpy.load_file(str(tmp_path / "z.safetensors"))
    assert set(back) == set(arrays)
    for k, v in arrays.items():
        _equal(back[k], v)


TORCH_OF = {"BOOL": "bool", "U8": "uint8", "I8": "int8", "U16": "uint16", "I16": "int16", "U32": "uint32",
            "I32": "int32", "U64": "uint64", "I64": "int64", "F16": "float16", "BF16": "bfloat16",
            "F32": "float32", "F64": "float64", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}


def _to_torch(torch, arr: np.ndarray):
    """A torch tensor with the same bits (through an unsigned view: torch.from_numpy knows no ml_dtypes)."""
    name = next(n for n, d in NP_OF.items() if np.dtype(d) == arr.dtype)
    if arr.dtype.kind in "biuf" and name not in ("BF16", "F8_E4M3", "F8_E5M2", "U16", "U32", "U64"):
        return torch.from_numpy(np.array(arr, order="C"))
    signed = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[arr.dtype.itemsize]
    return torch.from_numpy(np.array(arr, order="C").view(signed)).view(getattr(torch, TORCH_OF[name]))


def _from_torch(t) -> bytes:
    signed = {1: "int8", 2: "int16", 4: "int32", 8: "int64"}[t.element_size()]
    import torch

    return t.contiguous().view(getattr(torch, signed)).numpy().tobytes() if t.dtype != torch.bool else \
        t.numpy().tobytes()


def test_files_from_safetensors_torch_load_equal(tmp_path, torch):
    st_torch = pytest.importorskip("safetensors.torch")
    arrays = _arrays(3)
    tensors = {k: _to_torch(torch, v) for k, v in arrays.items()}
    st_torch.save_file(tensors, str(tmp_path / "t.safetensors"), metadata={"format": "pt"})
    loaded = zyx.load_file(tmp_path / "t.safetensors")
    for k, v in arrays.items():
        _equal(loaded[k].numpy(), v)


def test_zyx_files_load_in_safetensors_torch(tmp_path, torch):
    st_torch = pytest.importorskip("safetensors.torch")
    arrays = _arrays(4)
    zyx.save_file({k: zyx.from_numpy(v) for k, v in arrays.items()}, tmp_path / "z.safetensors")
    back = st_torch.load_file(str(tmp_path / "z.safetensors"))
    for k, v in arrays.items():
        name = k.rsplit("_", 1)[0].upper()
        assert back[k].dtype == getattr(torch, TORCH_OF[name]), (k, back[k].dtype)
        assert tuple(back[k].shape) == v.shape
        assert _from_torch(back[k]) == v.tobytes(), k


def test_sharded_checkpoint_reads_every_shard(tmp_path):
    """A Hugging Face style index (``weight_map``: name -> shard file) loads every shard's tensors, in the index's
    order; an index that disagrees with its shards is an error."""
    rng = np.random.default_rng(3)
    a, b, c = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (5,), (2, 2, 2)))
    zyx.save_file({"a": zyx.tensor(a), "c": zyx.tensor(c)}, tmp_path / "model-00001-of-00002.safetensors")
    zyx.save_file({"b": zyx.tensor(b)}, tmp_path / "model-00002-of-00002.safetensors")
    index = {"metadata": {"total_size": 0}, "weight_map": {"a": "model-00001-of-00002.safetensors",
                                                           "b": "model-00002-of-00002.safetensors",
                                                           "c": "model-00001-of-00002.safetensors"}}
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    got = zyx.load_file(tmp_path / "model.safetensors.index.json")
    assert list(got) == ["a", "b", "c"]
    for name, want in zip("abc", (a, b, c)):
        np.testing.assert_array_equal(got[name].numpy(), want)
    del index["weight_map"]["c"]
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(SafetensorsError, match="does not give it"):
        zyx.load_file(tmp_path / "model.safetensors.index.json")
    (tmp_path / "bad.index.json").write_text(json.dumps({"weight_map": {"a": "../x.safetensors"}}))
    with pytest.raises(SafetensorsError, match="expected a .safetensors file"):
        zyx.load_file(tmp_path / "bad.index.json")
