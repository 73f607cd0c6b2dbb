"""GGUF files (zyx.io.gguf, zyx.models.llama_gguf): files written by ``gguf.GGUFWriter`` with every type zyx
reads, loaded bit for bit against ``gguf.quants.dequantize``; blocks kept with ``dequantize=False``;
metadata; corrupt files (bad magic, truncated data, unknown types, offsets beyond the file) raising
GGUFError; Llama/Qwen2 checkpoints as Hugging Face configs and state dicts with the Q/K rows un-permuted
(against a NumPy implementation of llama.cpp's permutation)."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import zyx
from zyx.io import GGUFError, load_gguf
from zyx.models.llama_gguf import load_gguf_checkpoint, unpermute_rows
from zyx.nn import QuantizedWeight

import gguf_data as gd

pytestmark = pytest.mark.needs_device
RNG = np.random.default_rng(8117)


def _bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def test_every_type_bit_exact_and_metadata(tmp_path, device):
    tensors, want = {}, {}
    for i, qtype in enumerate(gd.NON_K + gd.K_TYPES):
        cols = (256 if qtype in gd.K_TYPES else 32) * (1 + i % 3)
        data = gd.raw(qtype, 3 + i % 4, cols, RNG)
        tensors[f"t.{qtype}"] = (qtype, data)
        want[f"t.{qtype}"] = gd.reference(qtype, data, cols)
    vec = RNG.standard_normal(5).astype(np.float32)
    cube = RNG.standard_normal((2, 3, 4)).astype(np.float32)
    tensors.update({"vec": ("F32", vec), "cube": ("F32", cube),
                    "cube16": ("F16", np.ascontiguousarray(cube.astype(np.float16)).view(np.uint8))})
    want.update({"vec": vec, "cube": cube, "cube16": cube.astype(np.float16).astype(np.float32)})
    meta = {"general.name": "tiny", "llama.block_count": 7, "llama.rope.freq_base": 0.5, "toks": ["a", "bc"]}
    path = gd.write(tmp_path / "all.gguf", tensors, meta)
    got, metadata = load_gguf(path, device=device)
    assert list(got) == list(tensors)
    for name, t in got.items():
        assert t.dtype == zyx.float32 and tuple(t.shape) == want[name].shape, name
        np.testing.assert_array_equal(_bits(t.numpy()), _bits(want[name]), err_msg=name)
    assert metadata["general.architecture"] == "llama"
    assert {k: metadata[k] for k in meta} == meta


def test_blocks_kept(tmp_path, device):
    data = {q: gd.raw(q, 5, 512, RNG) for q in ("Q8_0", "Q4_0", "Q4_K")}
    path = gd.write(tmp_path / "q.gguf", {q: (q, d) for q, d in data.items()} | {"n": ("F32", np.ones(4, np.float32))})
    got, _ = load_gguf(path, device=device, dequantize=False)
    assert isinstance(got["n"], zyx.Tensor)
    for q, d in data.items():
        w = got[q]
        assert isinstance(w, QuantizedWeight) and w.qtype == q and w.shape == (5, 512)
        np.testing.assert_array_equal(w.blocks.numpy(), d)
        np.testing.assert_array_equal(_bits(w.dequantize().numpy()), _bits(gd.reference(q, d, 512)))


# ------------------------------------------------------------------ corrupt files

def _tensor_info_at(buf: bytes, name: str) -> tuple[int, int]:
    """The byte positions of tensor ``name``'s type id and data offset in its tensor-info entry."""
    at = buf.index(struct.pack("<Q", len(name)) + name.encode()) + 8 + len(name)
    (n_dims,) = struct.unpack_from("<I", buf, at)
    type_at = at + 4 + 8 * n_dims
    return type_at, type_at + 4


@pytest.fixture
def good_file(tmp_path):
    return gd.write(tmp_path / "good.gguf", {"a": ("Q8_0", gd.raw("Q8_0", 4, 64, RNG)),
                                             "b": ("F32", np.ones((3, 2), np.float32))})


def _patched(path, at, fmt, value):
    buf = bytearray(path.read_bytes())
    struct.pack_into(fmt, buf, at, value)
    out = path.with_name("bad.gguf")
    out.write_bytes(bytes(buf))
    return out


def test_bad_magic(good_file):
    bad = _patched(good_file, 0, "<4s", b"GGUX")
    with pytest.raises(GGUFError, match=r"bad\.gguf.*magic"):
        load_gguf(bad)


def test_empty_file(tmp_path):
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(GGUFError, match="empty.gguf"):
        load_gguf(tmp_path / "empty.gguf")


def test_truncated_data(good_file):
    buf = good_file.read_bytes()
    cut = good_file.with_name("cut.gguf")
    cut.write_bytes(buf[:-20])  # "b" (24 bytes) ends the file, padded to 32
    with pytest.raises(GGUFError, match=r"cut\.gguf: tensor 'b' data .* runs past the end of the file .*truncated"):
        load_gguf(cut)


@pytest.mark.parametrize("type_id, what", [(99, "unknown type id 99"), (16, "type IQ2_XXS")])
def test_unknown_type(good_file, type_id, what):
    type_at, _ = _tensor_info_at(good_file.read_bytes(), "a")
    with pytest.raises(GGUFError, match=f"tensor 'a' has {what}; zyx reads"):
        load_gguf(_patched(good_file, type_at, "<I", type_id))


def test_offset_beyond_file(good_file):
    _, offset_at = _tensor_info_at(good_file.read_bytes(), "a")
    with pytest.raises(GGUFError, match="tensor 'a' data offset .* is beyond the end of the file"):
        load_gguf(_patched(good_file, offset_at, "<Q", 1 << 40))


# ------------------------------------------------------------------ Llama-family checkpoints

def llama_cpp_permute(w: np.ndarray, n_head: int) -> np.ndarray:
    """convert_hf_to_gguf's Q/K row permutation, from its definition: per head, the rows (2, D/2) -> (D/2, 2)."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def test_unpermute_inverts_llama_cpp():
    for rows, heads in ((32, 4), (16, 2), (12, 3)):
        w = RNG.standard_normal((rows, 5))
        np.testing.assert_array_equal(llama_cpp_permute(w, heads)[unpermute_rows(rows, heads)], w)
    with pytest.raises(GGUFError, match="even size"):
        unpermute_rows(12, 4)


H, HEADS, KV, FF, VOCAB, LAYERS = 64, 4, 2, 96, 40, 2


def _hf_llama(bias: bool):
    hd = H // HEADS
    sd = {"model.embed_tokens.weight": (VOCAB, H), "model.norm.weight": (H,)}
    for i in range(LAYERS):
        p = f"model.layers.{i}."
        sd |= {p + "input_layernorm.weight": (H,), p + "post_attention_layernorm.weight": (H,),
               p + "self_attn.q_proj.weight": (HEADS * hd, H), p + "self_attn.k_proj.weight": (KV * hd, H),
               p + "self_attn.v_proj.weight": (KV * hd, H), p + "self_attn.o_proj.weight": (H, HEADS * hd),
               p + "mlp.gate_proj.weight": (FF, H), p + "mlp.up_proj.weight": (FF, H),
               p + "mlp.down_proj.weight": (H, FF)}
        if bias:
            sd |= {p + "self_attn.q_proj.bias": (HEADS * hd,), p + "self_attn.k_proj.bias": (KV * hd,),
                   p + "self_attn.v_proj.bias": (KV * hd,)}
    return {k: RNG.standard_normal(s).astype(np.float32) for k, s in sd.items()}


GGUF_NAME = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
             "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
             "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def _write_llama(path, arch, hf, qtype, tied):
    """``hf`` as llama.cpp writes it: GGUF names, Q/K permuted (arch llama), 2-D weights in ``qtype``;
    returns what each HF tensor must load as (the dequantized stored values, un-permuted)."""
    tensors, want = {}, {}
    for name, w in hf.items():
        if name == "model.embed_tokens.weight":
            g = "token_embd.weight"
        elif name == "model.norm.weight":
            g = "output_norm.weight"
        else:
            i, rest = name.removeprefix("model.layers.").split(".", 1)
            mod, kind = rest.rsplit(".", 1)
            g = f"blk.{i}.{GGUF_NAME[mod]}.{kind}"
        heads = {"attn_q": HEADS, "attn_k": KV}.get(g.split(".")[2]) if g.startswith("blk.") else None
        stored = llama_cpp_permute(w, heads) if arch == "llama" and heads else w
        if w.ndim == 2 and qtype != "F32":
            data = gd.gguf.quants.quantize(stored, gd.T[qtype])
            tensors[g] = (qtype, np.ascontiguousarray(data).view(np.uint8).reshape(w.shape[0], -1))
            back = gd.reference(qtype, tensors[g][1], w.shape[1])
        else:
            tensors[g], back = ("F32", stored), stored
        want[name] = back[unpermute_rows(w.shape[0], heads)] if arch == "llama" and heads else back
    if not tied:
        tensors["output.weight"] = ("F32", RNG.standard_normal((VOCAB, H)).astype(np.float32))
        want["lm_head.weight"] = tensors["output.weight"][1]
    meta = {f"{arch}.{k}": v for k, v in {
        "context_length": 128, "embedding_length": H, "feed_forward_length": FF, "block_count": LAYERS,
        "attention.head_count": HEADS, "attention.head_count_kv": KV, "attention.layer_norm_rms_epsilon": 1e-5,
        "rope.freq_base": 500000.0}.items()}
    meta |= {"tokenizer.ggml.tokens": [f"t{i}" for i in range(VOCAB)], "tokenizer.ggml.eos_token_id": 2}
    return gd.write(path, tensors, meta, arch=arch), want


@pytest.mark.parametrize("arch, qtype, tied", [("llama", "F32", False), ("llama", "Q8_0", True),
                                               ("qwen2", "Q8_0", False)])
def test_llama_checkpoint(tmp_path, device, arch, qtype, tied):
    hf = _hf_llama(bias=arch == "qwen2")
    path, want = _write_llama(tmp_path / "m.gguf", arch, hf, qtype, tied)
    config, state = load_gguf_checkpoint(path, device=device)
    assert config == {
        "model_type": arch, "architectures": ["LlamaForCausalLM" if arch == "llama" else "Qwen2ForCausalLM"],
        "vocab_size": VOCAB, "hidden_size": H, "intermediate_size": FF, "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS, "num_key_value_heads": KV, "head_dim": H // HEADS, "rms_norm_eps": 1e-5,
        "rope_theta": 500000.0, "max_position_embeddings": 128, "tie_word_embeddings": tied,
        "attention_bias": arch == "qwen2", "torch_dtype": "float32", "eos_token_id": 2}
    assert set(state) == set(hf) | {"lm_head.weight"}
    for name, w in want.items():
        np.testing.assert_array_equal(_bits(state[name].numpy()), _bits(w), err_msg=name)
    if tied:
        assert state["lm_head.weight"] is state["model.embed_tokens.weight"]
    if qtype != "F32":  # blocks kept: the rows of blocks un-permuted, equal once expanded
        _, blocks = load_gguf_checkpoint(path, device=device, dequantize=False)
        for name in ("model.layers.1.self_attn.q_proj.weight", "model.layers.0.self_attn.k_proj.weight"):
            assert isinstance(blocks[name], QuantizedWeight)
            np.testing.assert_array_equal(_bits(blocks[name].dequantize().numpy()), _bits(want[name]))


def test_not_a_llama(tmp_path):
    path = gd.write(tmp_path / "gpt2.gguf", {"x": ("F32", np.ones(2, np.float32))}, arch="gpt2")
    with pytest.raises(GGUFError, match="gpt2.gguf: general.architecture 'gpt2' is not a Llama-family model"):
        load_gguf_checkpoint(path)


def test_bad_llama_metadata(tmp_path):
    x = {"x": ("F32", np.ones(2, np.float32))}
    base = {"llama.attention.head_count": 4, "llama.embedding_length": 64}
    path = gd.write(tmp_path / "no-ff.gguf", x, base)
    with pytest.raises(GGUFError, match="no-ff.gguf: metadata key llama.feed_forward_length is missing"):
        load_gguf_checkpoint(path)
    path = gd.write(tmp_path / "per-layer.gguf", x, base | {"llama.feed_forward_length": ["a", "b"]})
    with pytest.raises(GGUFError, match="llama.feed_forward_length = .* is not one int"):
        load_gguf_checkpoint(path)
    path = gd.write(tmp_path / "zero.gguf", x, base | {"llama.attention.head_count": 0})
    with pytest.raises(GGUFError, match="expected positive counts"):
        load_gguf_checkpoint(path)
