"""zyx.models.llama against Hugging Face transformers on tiny random Llama, Qwen2 and Mistral checkpoints written
with ``save_pretrained``: logits, greedy generation, the KV-cache decode plan, sampling, eos, left padding, and
the checkpoint checks (pickle, remote code, config/weights mismatch)."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import zyx
from zyx.models.decoding import Decoder
from zyx.models.llama import CheckpointError, Llama, LlamaConfig
from zyx.nn.module import StateDictError

pytestmark = pytest.mark.needs_device
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

TINY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            vocab_size=128, max_position_embeddings=256, bos_token_id=None, eos_token_id=None, pad_token_id=None)
# each family with a feature of its own: Llama with tied embeddings, attention biases and llama3 rope scaling;
# Qwen2 (q/k/v biases) with linear rope scaling; Mistral with a sliding window shorter than the prompt
FAMILIES = {
    "llama": ("LlamaConfig", "LlamaForCausalLM",
              dict(tie_word_embeddings=True, attention_bias=True, rope_theta=500000.0,
                   rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                 "original_max_position_embeddings": 32})),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", dict(rope_scaling={"rope_type": "linear", "factor": 2.0})),
    "mistral": ("MistralConfig", "MistralForCausalLM", dict(sliding_window=5)),
}
PROMPT = np.array([[5, 17, 99, 3, 64, 21, 7, 88, 12]])


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """family -> (save_pretrained directory, the transformers model)."""
    out = {}
    for family, (config_cls, model_cls, extra) in FAMILIES.items():
        torch.manual_seed(0)
        config = getattr(transformers, config_cls)(**TINY, **extra)
        hf = getattr(transformers, model_cls)(config).eval()
        with torch.no_grad():  # nonzero biases so a dropped bias shows
            for name, p in hf.named_parameters():
                if name.endswith("bias"):
                    p.normal_(0, 0.1)
        path = tmp_path_factory.mktemp(family)
        hf.save_pretrained(path)
        out[family] = (path, hf)
    return out


@pytest.fixture(scope="module")
def models(checkpoints):
    return {family: Llama.from_pretrained(path) for family, (path, _) in checkpoints.items()}


def hf_logits(hf, ids, mask=None):
    with torch.no_grad():
        m = None if mask is None else torch.tensor(mask)
        return hf(torch.tensor(ids), attention_mask=m).logits.numpy()


@pytest.mark.parametrize("family", FAMILIES)
def test_logits_equal_transformers(checkpoints, models, family):
    path, hf = checkpoints[family]
    ids = np.random.default_rng(1).integers(0, 128, (2, 11))
    got = models[family](ids)
    assert got.shape == (2, 11, 128)
    np.testing.assert_allclose(got.numpy(), hf_logits(hf, ids), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("family", FAMILIES)
def test_greedy_generation_equals_transformers(checkpoints, models, family):
    _, hf = checkpoints[family]
    got = models[family].generate(PROMPT, 32, temperature=0).numpy()
    with torch.no_grad():
        want = hf.generate(torch.tensor(PROMPT), max_new_tokens=32, do_sample=False).numpy()
    assert got.shape == (1, PROMPT.shape[1] + 32)
    np.testing.assert_array_equal(got, want)


def test_the_config_is_read_as_transformers_wrote_it(models):
    c = models["mistral"].config
    assert c.sliding_windows == (5, 5) and c.head_dim == 16 and c.num_key_value_heads == 2
    q = models["qwen2"].config
    assert q.qkv_bias and not q.o_bias and q.rope_scaling["rope_type"] == "linear"
    llama = models["llama"]
    assert llama.lm_head.weight is llama.model.embed_tokens.weight
    names = set(dict(llama.state_dict()))
    assert {"model.embed_tokens.weight", "model.layers.1.self_attn.q_proj.bias", "model.norm.weight",
            "lm_head.weight"} <= names


def test_decode_steps_replay_one_plan(models):
    """After the first decode step, the later ones build and load no program."""
    model = models["qwen2"]
    dec = Decoder(model, 1, PROMPT.shape[1] + 8)
    mask = np.ones_like(PROMPT)
    dec.prefill(PROMPT, mask).numpy()
    token, pos = zyx.tensor([[3]]), np.array([[PROMPT.shape[1]]])
    counts = []
    for i in range(6):
        _, chosen = dec(token, zyx.tensor(pos + i), PROMPT.shape[1] + i)
        token = zyx.tensor(chosen.numpy()[:, None])
        stats = zyx.build_stats()
        counts.append(stats["source_builds"] + stats["binary_loads"])
    assert counts[1:] == [counts[0]] * 5, counts


def test_sharded_checkpoint_loads_the_same(checkpoints, models, tmp_path):
    _, hf = checkpoints["qwen2"]
    hf.save_pretrained(tmp_path, max_shard_size="40KB")
    assert (tmp_path / "model.safetensors.index.json").is_file()
    sharded = Llama.from_pretrained(tmp_path)
    ids = PROMPT[:, :6]
    np.testing.assert_array_equal(sharded(ids).numpy(), models["qwen2"](ids).numpy())


def test_sampling_is_seeded_and_top_k_one_is_greedy(models):
    model = models["llama"]
    a = model.generate(PROMPT, 12, temperature=1.3, top_p=0.9, seed=7).numpy()
    b = model.generate(PROMPT, 12, temperature=1.3, top_p=0.9, seed=7).numpy()
    np.testing.assert_array_equal(a, b)
    others = [model.generate(PROMPT, 12, temperature=1.3, seed=s).numpy() for s in (1, 2)]
    assert not all(np.array_equal(a, o) for o in others)  # the seed matters
    greedy = model.generate(PROMPT, 12, temperature=0).numpy()
    np.testing.assert_array_equal(model.generate(PROMPT, 12, temperature=0.8, top_k=1, seed=3).numpy(), greedy)


def test_eos_stops_and_pads_finished_rows(models):
    model = models["qwen2"]
    greedy = model.generate(PROMPT, 10, temperature=0).numpy()
    n = PROMPT.shape[1]
    eos = int(greedy[0, n + 3])
    first = n + list(greedy[0, n:]).index(eos)
    stopped = model.generate(PROMPT, 10, temperature=0, eos_token_id=eos).numpy()
    np.testing.assert_array_equal(stopped, greedy[:, :first + 1])
    # a batch: the finished row is padded (with the eos id: the config has no pad id) until the other ends
    other = np.array([[40, 41, 42, 43, 44, 45, 46, 47, 48]])
    both = model.generate(np.concatenate([PROMPT, other]), 10, temperature=0, eos_token_id=[eos, 9999]).numpy()
    alone = model.generate(other, 10, temperature=0, eos_token_id=eos).numpy()
    np.testing.assert_array_equal(both[1, :alone.shape[1]], alone[0])
    assert (both[0, first + 1:] == eos).all()


@pytest.mark.parametrize("family", ["llama", "mistral"])
def test_left_padded_batch_equals_each_prompt(checkpoints, models, family):
    model = models[family]
    short = [7, 30, 2, 99]
    ids = np.array([PROMPT[0].tolist(), [0] * (PROMPT.shape[1] - len(short)) + short])
    mask = (np.arange(ids.shape[1]) >= np.array([[0], [ids.shape[1] - len(short)]])).astype(np.int64)
    batch = model.generate(ids, 12, temperature=0, attention_mask=mask).numpy()
    np.testing.assert_array_equal(batch[0], model.generate(PROMPT, 12, temperature=0).numpy()[0])
    np.testing.assert_array_equal(batch[1, ids.shape[1] - len(short):],
                                  model.generate([short], 12, temperature=0).numpy()[0])
    # the real positions' logits equal transformers' on the same padded batch
    got, want = model(ids, attention_mask=mask).numpy(), hf_logits(checkpoints[family][1], ids, mask)
    np.testing.assert_allclose(got[mask == 1], want[mask == 1], rtol=1e-4, atol=1e-5)


def test_pickle_checkpoints_are_refused(checkpoints, tmp_path):
    (tmp_path / "model.bin").write_bytes(b"\x80\x04not really")
    with pytest.raises(CheckpointError, match="safetensors"):
        Llama.from_pretrained(tmp_path / "model.bin")
    shutil.copy(checkpoints["llama"][0] / "config.json", tmp_path / "config.json")
    (tmp_path / "pytorch_model.bin").write_bytes(b"\x80\x04")
    with pytest.raises(CheckpointError, match=r"pickle files \(.*pytorch_model.bin\).*safetensors"):
        Llama.from_pretrained(tmp_path)


def _edited(src, dst, **changes):
    shutil.copytree(src, dst)
    config = json.loads((dst / "config.json").read_text())
    config.update(changes)
    (dst / "config.json").write_text(json.dumps(config))
    return dst


def test_config_contradicting_the_weights_is_a_shape_error(checkpoints, tmp_path):
    path = _edited(checkpoints["mistral"][0], tmp_path / "m", num_key_value_heads=4, intermediate_size=96)
    with pytest.raises(zyx.ShapeError, match=r"k_proj.weight: checkpoint \(32, 64\), config gives \(64, 64\)") as e:
        Llama.from_pretrained(path)
    assert "mlp.up_proj.weight" in str(e.value)  # every mismatch is listed
    path = _edited(checkpoints["mistral"][0], tmp_path / "l", num_hidden_layers=3)
    with pytest.raises(StateDictError, match=r'Missing key\(s\).*"model.layers.2.self_attn.q_proj.weight"'):
        Llama.from_pretrained(path)
    path = _edited(checkpoints["mistral"][0], tmp_path / "u", model_type="llama", attention_bias=True)
    with pytest.raises(StateDictError, match="q_proj.bias"):
        Llama.from_pretrained(path)


def test_remote_code_and_unknown_rope_are_refused(checkpoints, tmp_path):
    path = _edited(checkpoints["llama"][0], tmp_path / "r", auto_map={"AutoModelForCausalLM": "modeling_x.MyModel"})
    with pytest.raises(CheckpointError, match="remote code"):
        Llama.from_pretrained(path)
    with pytest.raises(NotImplementedError, match="'yarn'"):
        LlamaConfig.from_hf({**TINY, "num_hidden_layers": 2, "rope_parameters": {"rope_type": "yarn", "factor": 2.0}})
    with pytest.raises(CheckpointError, match="model_type 'gpt2'"):
        LlamaConfig.from_hf({**TINY, "model_type": "gpt2"})


def test_bfloat16_checkpoint_computes_in_float32(checkpoints, tmp_path):
    import copy

    half = copy.deepcopy(checkpoints["qwen2"][1]).to(torch.bfloat16)
    half.save_pretrained(tmp_path)
    model = Llama.from_pretrained(tmp_path)
    assert model.model.layers[0].self_attn.q_proj.weight.dtype == zyx.float32
    ids = PROMPT[:, :5]
    np.testing.assert_allclose(model(ids).numpy(), hf_logits(half.float(), ids), rtol=1e-4, atol=1e-5)


def test_a_gguf_path_goes_through_llama_gguf(checkpoints, models, tmp_path, monkeypatch):
    """A .gguf path is read by ``zyx.models.llama_gguf.load_gguf_checkpoint`` (imported only then), whose
    (transformers config, transformers-named weights) build the same model as the directory does. The loader
    here stands in for the GGUF reader with the directory's own files."""
    import sys
    import types

    path, _ = checkpoints["mistral"]
    calls = []

    def load_gguf_checkpoint(p, device=None, dequantize=True):
        calls.append((p, dequantize))
        return json.loads((path / "config.json").read_text()), zyx.load_file(path / "model.safetensors")

    monkeypatch.setitem(sys.modules, "zyx.models.llama_gguf",
                        types.SimpleNamespace(load_gguf_checkpoint=load_gguf_checkpoint))
    model = Llama.from_pretrained(tmp_path / "tiny.gguf")
    assert calls == [(tmp_path / "tiny.gguf", True)]
    np.testing.assert_array_equal(model(PROMPT).numpy(), models["mistral"](PROMPT).numpy())


def test_qwen2_sliding_window_on_some_layers(tmp_path):
    """Qwen2's ``use_sliding_window`` with ``max_window_layers=1``: layer 0 attends to everything, layer 1 to a
    window of 4; the decode plan then serves rings of two sizes (two length variables)."""
    torch.manual_seed(1)
    config = transformers.Qwen2Config(**TINY, use_sliding_window=True, sliding_window=4, max_window_layers=1)
    hf = transformers.Qwen2ForCausalLM(config).eval()
    hf.save_pretrained(tmp_path)
    model = Llama.from_pretrained(tmp_path)
    assert model.config.sliding_windows == (None, 4)
    np.testing.assert_allclose(model(PROMPT).numpy(), hf_logits(hf, PROMPT), rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        want = hf.generate(torch.tensor(PROMPT), max_new_tokens=20, do_sample=False).numpy()
    np.testing.assert_array_equal(model.generate(PROMPT, 20, temperature=0).numpy(), want)


GGUF_LAYER = {"input_layernorm": "attn_norm", "post_attention_layernorm": "ffn_norm", "self_attn.q_proj": "attn_q",
              "self_attn.k_proj": "attn_k", "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
              "mlp.gate_proj": "ffn_gate", "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down"}


def _as_gguf(hf, arch):
    """``hf``'s weights under llama.cpp's names, Q/K rows permuted as convert_hf_to_gguf does for arch llama."""
    c = hf.config
    tensors = {}
    for name, w in hf.state_dict().items():
        w = w.numpy()
        if name in ("model.embed_tokens.weight", "model.norm.weight", "lm_head.weight"):
            g = {"model.embed_tokens.weight": "token_embd", "model.norm.weight": "output_norm",
                 "lm_head.weight": "output"}[name] + ".weight"
        else:
            i, rest = name.removeprefix("model.layers.").split(".", 1)
            mod, kind = rest.rsplit(".", 1)
            g = f"blk.{i}.{GGUF_LAYER[mod]}.{kind}"
            heads = {"self_attn.q_proj": c.num_attention_heads, "self_attn.k_proj": c.num_key_value_heads}.get(mod)
            if arch == "llama" and heads:
                w = w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)
        tensors[g] = ("F32", np.ascontiguousarray(w))
    meta = {f"{arch}.{k}": v for k, v in {
        "context_length": 256, "embedding_length": c.hidden_size, "feed_forward_length": c.intermediate_size,
        "block_count": c.num_hidden_layers, "attention.head_count": c.num_attention_heads,
        "attention.head_count_kv": c.num_key_value_heads, "attention.layer_norm_rms_epsilon": 1e-5,
        "rope.freq_base": 10000.0}.items()}
    return tensors, meta | {"tokenizer.ggml.tokens": [f"t{i}" for i in range(c.vocab_size)]}


@pytest.mark.parametrize("arch", ["llama", "qwen2"])
def test_gguf_file_equals_transformers(tmp_path, arch):
    """A GGUF file as llama.cpp writes it (names, Q/K permutation) loads through zyx.models.llama_gguf and gives
    transformers' logits and greedy tokens."""
    gd = pytest.importorskip("gguf_data", reason="the GGUF test helpers come with the GGUF work (tests/gguf_data)")
    pytest.importorskip("zyx.models.llama_gguf")
    torch.manual_seed(2)
    kw = dict(TINY, rms_norm_eps=1e-5)
    hf = (transformers.LlamaForCausalLM(transformers.LlamaConfig(**kw)) if arch == "llama" else
          transformers.Qwen2ForCausalLM(transformers.Qwen2Config(**kw))).eval()
    tensors, meta = _as_gguf(hf, arch)
    model = Llama.from_pretrained(gd.write(tmp_path / "tiny.gguf", tensors, meta, arch=arch))
    np.testing.assert_allclose(model(PROMPT).numpy(), hf_logits(hf, PROMPT), rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        want = hf.generate(torch.tensor(PROMPT), max_new_tokens=16, do_sample=False).numpy()
    np.testing.assert_array_equal(model.generate(PROMPT, 16, temperature=0).numpy(), want)


def _stored(qtype, rows, cols, gd, rng):
    """(bytes as the file stores them, their gguf.quants.dequantize) for a (rows, cols) weight of small values:
    non-K types quantize 0.05 * N(0, 1); K types are random blocks whose float16 scales are set to 1e-3 * U(-1, 1)
    (so activations stay in float32's comfortable range)."""
    if qtype in gd.K_TYPES:
        data = gd.raw(qtype, rows, cols, rng).reshape(-1, gd.gguf.GGML_QUANT_SIZES[gd.T[qtype]][1])
        for at in gd.K_SCALES[qtype]:
            data[:, at:at + 2] = (rng.uniform(-1, 1, (len(data), 1)) * 1e-3).astype(np.float16).view(np.uint8)
        data = data.reshape(rows, -1)
    else:
        values = (0.05 * rng.standard_normal((rows, cols))).astype(np.float32)
        data = np.ascontiguousarray(gd.gguf.quants.quantize(values, gd.T[qtype])).view(np.uint8).reshape(rows, -1)
    return data, gd.reference(qtype, data, cols)


@pytest.mark.parametrize("qtype", ["F16", "Q8_0", "Q4_0", "Q4_K", "Q6_K"])
def test_gguf_types_give_the_dequantized_references_logits(tmp_path, qtype):
    """Every 2-D weight of a llama.cpp-style file in ``qtype`` (Q/K rows permuted as llama.cpp writes them):
    zyx's logits equal transformers' on the dequantized weights."""
    gd = pytest.importorskip("gguf_data", reason="the GGUF test helpers (tests/gguf_data)")
    rng = np.random.default_rng(3)
    h, ff, heads, kv, vocab = 256, 512, 4, 2, 64  # rows of 256 values: whole K-type blocks
    config = transformers.LlamaConfig(hidden_size=h, intermediate_size=ff, num_hidden_layers=1,
                                      num_attention_heads=heads, num_key_value_heads=kv, vocab_size=vocab,
                                      max_position_embeddings=64, rms_norm_eps=1e-5, bos_token_id=None,
                                      eos_token_id=None, pad_token_id=None)
    hf = transformers.LlamaForCausalLM(config).eval()
    names = {"model.embed_tokens.weight": "token_embd.weight", "lm_head.weight": "output.weight",
             "model.norm.weight": "output_norm.weight"}
    tensors, state = {}, {}
    for name, p in hf.state_dict().items():
        if name not in names:
            i, rest = name.removeprefix("model.layers.").split(".", 1)
            mod, kind = rest.rsplit(".", 1)
            names[name] = f"blk.{i}.{GGUF_LAYER[mod]}.{kind}"
        if p.ndim == 1:
            values = (1 + 0.1 * rng.standard_normal(p.shape)).astype(np.float32)
            tensors[names[name]], state[name] = ("F32", values), values
            continue
        data, values = _stored(qtype, *p.shape, gd, rng)
        n_head = {"self_attn.q_proj.weight": heads, "self_attn.k_proj.weight": kv}.get(name.split(".", 3)[-1])
        if n_head:  # llama.cpp's permutation moves whole rows, so it moves rows of blocks
            order = np.arange(p.shape[0]).reshape(n_head, 2, -1).swapaxes(1, 2).reshape(-1)
            data = data[order]
        tensors[names[name]], state[name] = (qtype, data), values
    hf.load_state_dict({k: torch.from_numpy(v) for k, v in state.items()})
    meta = {f"llama.{k}": v for k, v in {
        "context_length": 64, "embedding_length": h, "feed_forward_length": ff, "block_count": 1,
        "attention.head_count": heads, "attention.head_count_kv": kv, "attention.layer_norm_rms_epsilon": 1e-5,
        "rope.freq_base": 10000.0}.items()}
    meta["tokenizer.ggml.tokens"] = [f"t{i}" for i in range(vocab)]
    path = gd.write(tmp_path / f"tiny-{qtype}.gguf", tensors, meta)
    model = Llama.from_pretrained(path)
    ids = PROMPT % vocab
    want = hf_logits(hf, ids)  # float32 tolerance on the logits' scale (the K types' weights reach a few units)
    np.testing.assert_allclose(model(ids).numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
    if qtype in ("Q8_0", "Q4_0", "Q4_K"):  # kept in blocks: the matmuls dequantize inside their kernels
        kept = Llama.from_pretrained(path, dequantize=False)
        attn = kept.model.layers[0].self_attn
        assert all(isinstance(m, zyx.nn.QuantizedLinear) for m in (attn.q_proj, attn.o_proj, kept.lm_head))
        np.testing.assert_allclose(kept(ids).numpy(), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
        greedy = model.generate(ids, 6, temperature=0).numpy()  # the decode step's fused Q/K/V and gate/up
        np.testing.assert_array_equal(kept.generate(ids, 6, temperature=0).numpy(), greedy)
