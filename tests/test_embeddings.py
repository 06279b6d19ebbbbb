"""Tests for sentence embeddings (bert_tf/tasks/embeddings/model.py, new): pooling, encode, similarity,
fine-tuning with in-batch negatives, bert-train-embeddings, the export.

* Each pooling equals NumPy's over the model's own `sequence_output` with the
  padding left out: a text gives the same vector alone and padded in a batch.
* `encode` keeps the order over several batches; `similarity` is the cosine.
* bert-run-embeddings (Keras `fit` on (anchor, positive) pairs) lowers the
  in-batch loss and pulls each pair together (its cosine above the unpaired
  ones); `from_pretrained` reads its output_dir back, and its .npy is `encode`'s.
* The export answers a plain TensorFlow process with `encode`'s vectors.
* Each mistake is one line.

Real weights (a download, so not here): bench/sentence_embeddings.py gives
all-MiniLM-L6-v2's published cosine 0.7553 through the embedder.
"""

import os
import shutil

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf import BertConfig
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling.bert_model import BertModel
from bert_tf.tasks.embeddings import model as embeddings
from bert_tf.tasks.embeddings.model import SentenceEmbedder
from bert_tf.tokenization import FullTokenizer
from bert_tf.tokenization.preprocessor import BertPreprocessor
from bert_tf.training.optimization import create_optimizer
from tests import bare_tf
from tests.conftest import TINY_CONFIG
from tests.conftest import write_config
from tests.tolerances import LAYER_ATOL

WORDS = ["apple", "banana", "cherry", "river", "lake", "ocean", "car", "truck", "train",
         "cat", "dog", "horse", "red", "green", "blue", "house", "tower", "bridge", "sun",
         "moon", "star", "piano", "violin", "drum", "a", "the", "is", "on"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + [".", ","]
MAX_SEQ_LENGTH = 16
TEXTS = ["the red apple", "a dog is on the bridge", "moon", "the green car is on the river",
         "piano , violin , drum", "sun and star", "the cat", "a blue tower . the lake",
         "banana cherry apple", "ocean", "the horse is on the train"]


def user_error(fn, *args, **kwargs):
    with pytest.raises(UserError) as e:
        fn(*args, **kwargs)
    message = str(e.value)
    assert "\n" not in message, message
    return message


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """A tiny Google-format release directory (backbone only), uncased."""
    root = tmp_path_factory.mktemp("emb_release")
    directory = root / "tiny_uncased"
    keras.utils.set_random_seed(5)
    config = BertConfig.from_dict(dict(TINY_CONFIG))
    model = BertModel(config)
    os.makedirs(directory)
    with open(directory / "vocab.txt", "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in VOCAB))
    write_config(directory / "bert_config.json", TINY_CONFIG)
    checkpoint.save_checkpoint(model, str(directory / "bert_model.ckpt"), update_state=False)
    return str(directory)


def load(release, **kwargs):
    kwargs.setdefault("max_seq_length", MAX_SEQ_LENGTH)
    return bert_tf.from_pretrained(release, head="embeddings", **kwargs)


@pytest.fixture(scope="module")
def loaded(release):
    """{pooling: from_pretrained's (config, embedder, tokenizer)}, loaded once for the module."""
    return {pooling: load(release, pooling=pooling) for pooling in embeddings.POOLINGS}


def numpy_pooling(sequence_output, mask, pooling):
    """The reference: NumPy over the real tokens of one example."""
    real = sequence_output[mask.astype(bool)]
    if pooling == "cls":
        return sequence_output[0]
    if pooling == "mean":
        return real.mean(axis=0)
    return real.max(axis=0)


def bare_outputs(model, tokenizer, text):
    """`sequence_output` of one text, unpadded, through the backbone alone."""
    tokens = ["[CLS]"] + tokenizer.tokenize(text)[:MAX_SEQ_LENGTH - 2] + ["[SEP]"]
    ids = np.array([tokenizer.convert_tokens_to_ids(tokens)], np.int32)
    out = model.bert(ids, training=False)["sequence_output"].numpy()[0]
    return out, np.ones(len(tokens), np.int32)


# ---------------------------------------------------------------------------
# Pooling, normalization, encode, similarity
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("pooling", ["cls", "mean", "max"])
def test_pooling_is_numpys_over_the_real_tokens_padded_or_not(loaded, pooling):
    _, model, tokenizer = loaded[pooling]
    assert isinstance(model, SentenceEmbedder) and model.pooling == pooling
    encoded = model.encode(TEXTS, batch_size=4)  # padded to MAX_SEQ_LENGTH, in batches
    assert encoded.shape == (len(TEXTS), 32) and encoded.dtype == np.float32
    for i, text in enumerate(TEXTS):
        out, mask = bare_outputs(model, tokenizer, text)  # no padding at all
        np.testing.assert_allclose(encoded[i], numpy_pooling(out, mask, pooling),
                                   atol=LAYER_ATOL, rtol=LAYER_ATOL, err_msg=text)
    # The pooling functions themselves, on a hand-padded batch.
    rng = np.random.RandomState(0)
    sequence = rng.randn(3, 5, 4).astype(np.float32)
    mask = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 0, 0, 0, 0]], np.int32)
    sequence[mask == 0] = 1e3  # padding that would win a max or pull a mean
    pooled = embeddings.pool(sequence, mask, pooling).numpy()
    for row in range(3):
        np.testing.assert_allclose(pooled[row], numpy_pooling(sequence[row], mask[row], pooling),
                                   atol=LAYER_ATOL, rtol=LAYER_ATOL)


def test_normalize_gives_unit_vectors_in_the_same_direction(release, loaded):
    _, plain, _ = loaded["mean"]
    _, unit, _ = load(release, pooling="mean", normalize=True)
    a, b = plain.encode(TEXTS), unit.encode(TEXTS)
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-6)
    np.testing.assert_allclose(b, a / np.linalg.norm(a, axis=1, keepdims=True), atol=1e-6)


def test_encode_keeps_the_order_over_batches_and_predict_on_raw_text_agrees(loaded):
    _, model, _ = loaded["mean"]
    one_by_one = np.stack([model.encode(text) for text in TEXTS])
    for batch_size in (1, 3, 32):
        np.testing.assert_allclose(model.encode(TEXTS, batch_size=batch_size), one_by_one,
                                   atol=1e-5, err_msg="batch_size=%d" % batch_size)
    assert model.encode([]).shape == (0, 32)
    predicted = model.predict(TEXTS, batch_size=4, verbose=0)["embeddings"]
    np.testing.assert_allclose(predicted, one_by_one, atol=1e-5)


def test_encode_logs_progress_on_long_lists(loaded, info_logs):
    _, model, _ = loaded["mean"]
    model.encode(TEXTS * 3, batch_size=2)
    assert "encode: 33/33 texts" in info_logs.text, info_logs.text


def test_similarity_is_the_cosine_of_the_embeddings(loaded):
    _, model, _ = loaded["max"]
    vectors = model.encode(TEXTS)
    cosines = vectors @ vectors.T / np.outer(np.linalg.norm(vectors, axis=1),
                                             np.linalg.norm(vectors, axis=1))
    np.testing.assert_allclose(model.similarity(TEXTS, TEXTS), cosines, atol=1e-5)
    assert abs(model.similarity(TEXTS[0], TEXTS[1]) - cosines[0, 1]) < 1e-5
    np.testing.assert_allclose(model.similarity(TEXTS[2], TEXTS[:3]), cosines[2, :3], atol=1e-5)
    np.testing.assert_allclose(model.similarity(vectors[:2], vectors), cosines[:2], atol=1e-5)
    assert embeddings.cosine_similarity([1.0, 0.0], [0.0, 2.0]) == 0.0
    assert embeddings.cosine_similarity([3.0, 4.0], [6.0, 8.0]) == pytest.approx(1.0)


@pytest.mark.slow
def test_the_embedder_saves_and_loads_back_with_its_settings(loaded, tmp_path):
    _, model, _ = loaded["max"]
    out = model.save_pretrained(str(tmp_path / "saved"))
    _, again, _ = bert_tf.from_pretrained(out, head="embeddings")
    assert (again.pooling, again.normalize, again.preprocessor.max_seq_length) == (
        "max", False, MAX_SEQ_LENGTH)
    np.testing.assert_array_equal(again.encode(TEXTS), model.encode(TEXTS))
    # A .keras file keeps the preprocessor and the settings.
    model.save(str(tmp_path / "embedder.keras"))
    restored = keras.saving.load_model(str(tmp_path / "embedder.keras"))
    np.testing.assert_allclose(restored.encode(TEXTS), model.encode(TEXTS), atol=1e-6)


def test_a_sentence_transformers_directory_gives_its_pooling_normalization_and_length(
        release, tmp_path):
    """all-MiniLM-L6-v2's layout: modules.json, 1_Pooling/config.json, sentence_bert_config.json."""
    import json
    import shutil
    directory = tmp_path / "st"
    shutil.copytree(release, directory)
    (directory / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling",
         "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize",
         "type": "sentence_transformers.models.Normalize"}]))
    (directory / "1_Pooling").mkdir()
    modes = {"pooling_mode_cls_token": False, "pooling_mode_mean_tokens": False,
             "pooling_mode_max_tokens": True, "pooling_mode_mean_sqrt_len_tokens": False}
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(modes))
    (directory / "sentence_bert_config.json").write_text('{"max_seq_length": 12}')
    assert embeddings.embedding_settings(str(directory)) == ("max", True, 12)
    assert embeddings.embedding_settings(str(directory), "cls", False, 9) == ("cls", False, 9)
    modes.update(pooling_mode_max_tokens=False, pooling_mode_mean_sqrt_len_tokens=True)
    (directory / "1_Pooling" / "config.json").write_text(json.dumps(modes))
    message = user_error(embeddings.embedding_settings, str(directory))
    assert "pooling pooling_mode_mean_sqrt_len_tokens; SentenceEmbedder pools one of" in message


def test_mistakes_are_one_line(release, tmp_path):
    config = BertConfig.from_dict(dict(TINY_CONFIG))
    assert "pooling='sum': one of 'cls', 'mean', 'max'" in user_error(
        SentenceEmbedder, config, pooling="sum")
    assert "needs raw-text input" in user_error(SentenceEmbedder(config).encode, ["a"])
    assert "is for head='embeddings' only" in user_error(
        bert_tf.from_pretrained, release, pooling="mean")
    _, model, _ = load(release, max_seq_length=8)
    assert "texts[1] is int" in user_error(model.encode, ["a", 3])
    assert "batch_size=0" in user_error(model.encode, ["a"], batch_size=0)
    bad = tmp_path / "bad"
    model.save_pretrained(str(bad))
    (bad / "embedding_config.json").write_text("[1, 2")
    assert "not an embedding config" in user_error(bert_tf.from_pretrained, str(bad),
                                                   head="embeddings")


# ---------------------------------------------------------------------------
# Fine-tuning with in-batch negatives
# ---------------------------------------------------------------------------

# Eight topics; a pair is two different descriptions of one topic.
TOPICS = [("apple", "banana", "cherry"), ("river", "lake", "ocean"), ("car", "truck", "train"),
          ("cat", "dog", "horse"), ("red", "green", "blue"), ("house", "tower", "bridge"),
          ("sun", "moon", "star"), ("piano", "violin", "drum")]
ANCHORS = ["%s %s" % (a, b) for a, b, _ in TOPICS]
POSITIVES = ["%s %s" % (c, b) for a, b, c in TOPICS]


def in_batch_loss(model, anchors, positives):
    a, p = model.encode(anchors), model.encode(positives)
    loss, _ = embeddings.in_batch_negatives_loss(a, p, embeddings.DEFAULT_SCALE)
    return float(np.mean(loss.numpy())), embeddings.cosine_similarity(a, p)


def test_in_batch_negatives_loss_is_the_cross_entropy_of_scaled_cosines():
    rng = np.random.RandomState(1)
    a, p = rng.randn(5, 8).astype(np.float32), rng.randn(5, 8).astype(np.float32)
    loss, correct = embeddings.in_batch_negatives_loss(a, p, 20.0)
    scores = 20.0 * embeddings.cosine_similarity(a, p)
    log_softmax = scores - np.log(np.exp(scores - scores.max(1, keepdims=True)).sum(
        1, keepdims=True)) - scores.max(1, keepdims=True)
    np.testing.assert_allclose(loss.numpy(), -np.diag(log_softmax), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(correct.numpy(), scores.argmax(1) == np.arange(5))


def test_fit_without_pairs_is_one_line(release):
    _, model, _ = load(release)
    model.compile(optimizer=create_optimizer(1e-3, num_train_steps=2, num_warmup_steps=0))
    message = user_error(model.fit, ANCHORS, batch_size=4, verbose=0)
    assert "trains on pairs" in message, message


# ---------------------------------------------------------------------------
# bert-run-embeddings
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_the_tool_fine_tunes_on_pairs_and_from_pretrained_reads_back_the_embedder(
        release, tmp_path, loaded):
    """bert-run-embeddings --do_train --do_encode in this process: Keras fit on a dataset of
    (anchor, positive) pairs lowers the in-batch loss and pulls each pair together; the
    output_dir is a Google-format directory that from_pretrained reads back, settings and all."""
    from tests.tools.toolrun import run_tool
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join("%s\t%s\n" % pair for pair in zip(ANCHORS, POSITIVES)))
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(text + "\n" for text in TEXTS))
    output_dir = tmp_path / "embedder"
    keras.utils.set_random_seed(0)
    result, log = run_tool("run_embeddings", [
        "--do_train", "--do_encode", "--init_checkpoint=%s" % release,
        "--train_file=%s" % pairs, "--input_file=%s" % lines,
        "--output_file=%s" % (tmp_path / "out.npy"), "--output_dir=%s" % output_dir,
        "--pooling=mean", "--normalize", "--max_seq_length=%d" % MAX_SEQ_LENGTH,
        "--train_batch_size=8", "--learning_rate=1e-3", "--num_train_epochs=30"])
    assert "Trained on 8 pairs (30 steps" in log and "training: 30/30 steps" in log, log
    # Keras fit's first step traces the graph: said before it, not after a silence.
    assert (log.index("training: tracing the step (its first call builds the graph")
            < log.index("training: 30/30 steps")), log
    assert sorted(os.listdir(output_dir)) == [
        "bert_config.json", "bert_model.ckpt.data-00000-of-00001", "bert_model.ckpt.index",
        "embedding_config.json", "vocab.txt"]
    _, model, _ = bert_tf.from_pretrained(str(output_dir), head="embeddings")
    assert (model.pooling, model.normalize) == ("mean", True)
    assert model.preprocessor.max_seq_length == MAX_SEQ_LENGTH
    trained = checkpoint.read_checkpoint(str(output_dir / "bert_model.ckpt"))
    start = checkpoint.read_checkpoint(os.path.join(release, "bert_model.ckpt"))
    assert set(trained) == set(start)  # the backbone's variables, no optimizer state

    before, _ = in_batch_loss(loaded["mean"][1], ANCHORS, POSITIVES)
    after, cosines = in_batch_loss(model, ANCHORS, POSITIVES)
    assert after < before / 4, (before, after)
    paired = np.diag(cosines)
    unpaired = cosines[~np.eye(len(ANCHORS), dtype=bool)]
    assert paired.min() > unpaired.max(), (paired, unpaired.max())
    assert paired.mean() - unpaired.mean() > 0.3, (paired.mean(), unpaired.mean())

    written = np.load(tmp_path / "out.npy")
    assert written.shape == (len(TEXTS), 32) and written.dtype == np.float32
    np.testing.assert_allclose(written, model.encode(TEXTS), atol=1e-6)
    # Keras evaluate on an in-memory (anchors, positives) tuple: the same loss.
    model.compile(optimizer=create_optimizer(1e-3, num_train_steps=2, num_warmup_steps=0))
    results = model.evaluate((ANCHORS, POSITIVES), batch_size=8, return_dict=True, verbose=0)
    assert results["eval_accuracy"] == 1.0
    assert results["eval_loss"] == pytest.approx(after, rel=1e-3, abs=1e-5)
    # --do_encode alone, on what training wrote: its settings come along.
    run_tool("run_embeddings", ["--do_encode", "--init_checkpoint=%s" % output_dir,
                                "--input_file=%s" % lines,
                                "--output_file=%s" % (tmp_path / "again.npy")])
    np.testing.assert_allclose(np.load(tmp_path / "again.npy"), written, atol=1e-6)


def test_the_tools_bad_input_is_one_line_naming_file_and_line_and_writes_nothing(
        release, tmp_path):
    from tests.tools.toolrun import user_errors_here
    short = tmp_path / "short.tsv"
    short.write_text("red apple\tgreen apple\nonly one column\n")
    wide = tmp_path / "wide.tsv"
    wide.write_text("a\tb\tc\n")
    empty = tmp_path / "empty.tsv"
    empty.write_text("")
    good = tmp_path / "good.tsv"
    good.write_text("red apple\tgreen apple\n")
    full = tmp_path / "full"
    full.mkdir()
    (full / "keep.txt").write_text("x")
    common = ["--do_train", "--init_checkpoint=%s" % release]
    out = tmp_path / "out"
    errors = user_errors_here("run_embeddings", [
        ("short", common + ["--train_file=%s" % short, "--output_dir=%s" % out]),
        ("wide", common + ["--train_file=%s" % wide, "--output_dir=%s" % out]),
        ("empty", common + ["--train_file=%s" % empty, "--output_dir=%s" % out]),
        ("missing", common + ["--train_file=%s" % (tmp_path / "nope.tsv"),
                              "--output_dir=%s" % out]),
        ("not empty", common + ["--train_file=%s" % good, "--output_dir=%s" % full]),
        ("nothing to do", ["--init_checkpoint=%s" % release]),
        ("no output_file", ["--do_encode", "--init_checkpoint=%s" % release,
                            "--input_file=%s" % short]),
    ])
    assert errors["short"] == "%s:2: 1 column(s); a line is anchor<TAB>positive" % short
    assert errors["wide"] == "%s:1: 3 column(s); a line is anchor<TAB>positive" % wide
    assert errors["empty"].startswith("%s: no pairs (the file is empty)" % empty)
    assert "no such file" in errors["missing"]
    assert "is not empty; pass --overwrite" in errors["not empty"]
    assert "do_train" in errors["nothing to do"] and "do_encode" in errors["nothing to do"]
    assert errors["no output_file"] == "--do_encode needs --output_file"
    assert all("\n" not in e for e in errors.values()), errors
    assert not out.exists() and os.listdir(full) == ["keep.txt"]


def test_a_bad_pairs_file_is_one_line_before_tensorflow_loads(tmp_path):
    """The tool reads its files before it imports the run (and TensorFlow with it): a bad
    one is one line in a fraction of a second, not after TensorFlow's start."""
    import subprocess
    import sys
    from tests.tools.toolrun import REPO_ROOT
    from tests.tools.toolrun import tool_env
    short = tmp_path / "short.tsv"
    short.write_text("red apple\tgreen apple\nonly one column\n")
    code = ("import sys\nfrom bert_tf.tools import run_embeddings\n"
            "rc = run_embeddings.main(['run_embeddings'] + sys.argv[1:])\n"
            "print(rc, 'tensorflow' in sys.modules)\n")
    # --verbosity=1: no stderr filter, so main returns its status where TensorFlow
    # has not loaded (after it has, it ends the process at once).
    result = subprocess.run(
        [sys.executable, "-c", code, "--verbosity=1", "--do_train",
         "--init_checkpoint=%s" % (tmp_path / "model"), "--train_file=%s" % short,
         "--output_dir=%s" % (tmp_path / "out")],
        cwd=REPO_ROOT, env=tool_env(), capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["2", "False"], (result.stdout, result.stderr[-3000:])
    assert result.stderr.splitlines()[-1] == (
        "error: %s:2: 1 column(s); a line is anchor<TAB>positive" % short)
    assert not (tmp_path / "out").exists()


def test_the_command_line_help_and_a_bad_flag():
    import sys
    from tests.tools.toolrun import run
    code, out, err = run([sys.executable, "tools/run_embeddings.py", "--help"], timeout=120)
    assert code == 0 and "bert-run-embeddings" in out + err and "--pooling" in out + err
    code, out, err = run([sys.executable, "tools/run_embeddings.py", "--init_checkpoint=x",
                          "--pooling=sum"], timeout=120)
    assert code == 2 and err.strip().count("\n") == 0 and "pooling" in err, err


# ---------------------------------------------------------------------------
# The export: raw text -> vector in a plain TensorFlow process
# ---------------------------------------------------------------------------

_BARE_ENCODE = bare_tf.PRELUDE + r'''
import json
import numpy as np
export, texts_file, out = sys.argv[1:4]
texts = json.load(open(texts_file))
loaded = tf.saved_model.load(export)
serve = loaded.signatures["serving_default"]
result = {
    "default": serve(text_a=tf.constant(texts))["embeddings"].numpy().tolist(),
    "one": serve(text_a=tf.constant(texts[:1]))["embeddings"].numpy().tolist(),
    "inputs": sorted(serve.structured_input_signature[1]),
    "outputs": sorted(serve.structured_outputs),
    "pooling": loaded.pooling.numpy().decode(),
    "normalize": bool(loaded.normalize.numpy()),
    "max_seq_length": int(loaded.max_seq_length.numpy()),
    "blocked": sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED),
}
json.dump(result, open(out, "w"))
'''


@pytest.mark.slow
def test_the_export_serves_encodes_vectors_to_a_plain_tensorflow_process(
        release, loaded, tmp_path):
    import json
    from tests.tools.toolrun import run_tool
    # The embedder's own length (no --max_seq_length); the flags outrank its pooling.
    embedder = shutil.copytree(release, tmp_path / "embedder")
    (embedder / "embedding_config.json").write_text(json.dumps(
        {"pooling": "cls", "normalize": False, "max_seq_length": MAX_SEQ_LENGTH}))
    export_dir, _ = run_tool("export_saved_model", [
        "--task_name=embeddings", "--init_checkpoint=%s" % embedder,
        "--bert_config_file=%s" % (embedder / "bert_config.json"),
        "--vocab_file=%s" % (embedder / "vocab.txt"), "--do_lower_case=true",
        "--export_dir=%s" % (tmp_path / "export"), "--version=1", "--pooling=max",
        "--normalize"])
    texts_file = tmp_path / "texts.json"
    texts_file.write_text(json.dumps(TEXTS))
    bare_tf.run_script(_BARE_ENCODE, [export_dir, texts_file, tmp_path / "out.json"], tmp_path)
    got = json.loads((tmp_path / "out.json").read_text())
    assert got["blocked"] == [] and got["inputs"] == ["text_a"]
    assert got["outputs"] == ["embeddings"] and (got["pooling"], got["normalize"]) == ("max", True)
    assert got["max_seq_length"] == MAX_SEQ_LENGTH != 128
    want = loaded["max"][1].encode(TEXTS)
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(np.array(got["default"]), want, atol=1e-5)
    np.testing.assert_allclose(np.array(got["one"]), want[:1], atol=1e-5)
    assert "--pooling and --normalize are for --task_name=embeddings only" in user_error(
        run_tool, "export_saved_model", [
            "--task_name=encoder", "--init_checkpoint=%s" % release,
            "--bert_config_file=%s" % os.path.join(release, "bert_config.json"),
            "--vocab_file=%s" % os.path.join(release, "vocab.txt"),
            "--max_seq_length=%d" % MAX_SEQ_LENGTH, "--export_dir=%s" % (tmp_path / "export2"),
            "--pooling=cls"])
