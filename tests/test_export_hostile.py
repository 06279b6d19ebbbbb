# coding=utf-8
"""Hostile requests to the exported SavedModels' text signatures, and the byte cap.

A server must answer whatever a client sends: every text signature of every
export (`bert_tf.export.saved_model.export_saved_model`: classifier,
classifier with --doc_stride, encoder, embeddings, multiple_choice,
fill_mask, squad, ner) is given, in this process (`tf.saved_model.load`):

  * a 1 MiB text (punctuation: one token per byte, the most tokens and so
    the most windows a byte can make);
  * 10,000 empty texts (10,000 rows back);
  * invalid UTF-8 (stray and truncated sequences, overlong forms, encoded
    surrogates, code points past U+10FFFF);
  * NUL, control and format characters;
  * one batch of all of them with ordinary text.

Each is answered with one row per text, within `SECONDS` and `PEAK_MB` of
peak resident memory over the memory before the call (the kernel's
high-water mark, reset before each call where /proc allows). The answers
are checked, not only their shapes: the classifier's and the encoder's for
every text of the mixed batch against `serve_features` on FullTokenizer's
features of the text's first `max_text_bytes` bytes (Python's own cut and
decoding); every other signature's rows in the mixed batch against each
text alone; ner's words and offsets against `ner_data.split_words`; squad's
windows against the bound the cap gives, ner's against its `max_windows`.

The cap itself (`graph_tokenizer.cut_texts`, fast): the first bytes
decoded as Python decodes them, over every 2-byte string, the 3-byte ones
of boundary bytes and random longer ones; a text
within the cap tokenized as FullTokenizer tokenizes it, a longer one as its
first max_text_bytes bytes; at most one token per byte (the bound of the
windows); a bad `--max_text_bytes` a one-line error of the tool, nothing
written.
"""

import itertools
import random
import re
import time

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tasks.token_classification import data as ner_data
from bert_tf.tokenization.pair_features import build_pair_features
from bert_tf.errors import UserError
from bert_tf.tasks.token_classification import serving as ner_export
from bert_tf.tokenization import graph_tokenizer
from tests import export_cache
from tests.test_export import SEQ_LENGTH
from tests.tolerances import MODEL_ATOL
from tests.tools import toolrun

CAP = graph_tokenizer.DEFAULT_MAX_TEXT_BYTES  # the exports' (the default)
MIB = 1 << 20
DOC_STRIDE = export_cache.DOC_STRIDE
# The most sub-tokens of a text the ner export reads: its max_windows windows (64 of 30
# tokens, 16 apart: 1,038).
NER_WINDOW_TOKENS = ner_export.max_window_tokens(ner_export.DEFAULT_MAX_WINDOWS, SEQ_LENGTH,
                                                 DOC_STRIDE)
MAX_QUERY_LENGTH = export_cache.MAX_QUERY_LENGTH
# Bounds per request on 2 shared cores (measured: at most about 1.5 s and
# 200 MB; without the cap the 1 MiB text takes squad and ner over 20 s and
# 3.5 GB). 10,000 texts (20,000 rows for multiple_choice) take what the
# model takes on that many rows (at most about 6 s and 700 MB).
SECONDS = 10.0
PEAK_MB = 1000
BATCH_SECONDS = 40.0
BATCH_PEAK_MB = 1500

INVALID_UTF8 = [b"\xff\xfe", b"\xff", b"\x80", b"\xbf\x80\x80", b"\xe2\x82", b"\xf0\x9f\x98",
                b"\xc0\xaf", b"\xc1\xbf", b"\xe0\x80\xaf", b"\xf0\x80\x80\xaf",  # overlong
                b"\xed\xa0\x80", b"\xed\xbf\xbf\xed\xa0\x80",  # encoded surrogates
                b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80",  # past U+10FFFF, 5 bytes
                b"caf\xc3", b"na\xefve", b"Hello\xff world\xfe!"]
CONTROL = [b"\x00", u"\x01\x1f\x7f".encode(), u"\u200b".encode(), b"a\x00b", b"\x00" * 50,
           u"\ufeff\u200d\u2028\u2029\x85".encode(), u"\t\r\n\x0b\x0c".encode(),
           u"\ufffd".encode(), u"a\u0301\u0301\u0301".encode(), u"\U000E0001x".encode()]
ORDINARY = [u"Hello, world!".encode(), u"The company said the deal would close.".encode(),
            u"Caf\u00e9 \u4e2d\u6587 na\u00efve \u03a3\u039f\u03a3".encode()]
LONG = (u"!" * MIB).encode()  # 1 MiB: one token per byte
# The cut matters: a character split at the cap (taken off) and a word past it.
SPLIT = b" " * (CAP - 2) + u"\u20ac hello world".encode()
# Exactly the cap: kept whole.
AT_CAP = b" " * (CAP - len(b"hello world")) + b"hello world"


def mixed_batch():
    return ORDINARY[:1] + [LONG] + INVALID_UTF8 + ORDINARY[1:2] + CONTROL + [SPLIT, AT_CAP, b""] \
        + ORDINARY[2:]


def python_cut(text, max_bytes=CAP):
    """The first `max_bytes` bytes of `text` as Python decodes them (invalid bytes dropped)."""
    return text[:max_bytes].decode("utf-8", "ignore")


# ---------------------------------------------------------------------------
# The cap: fast, no export
# ---------------------------------------------------------------------------


def _byte_strings():
    edges = [0x00, 0x41, 0x20, 0x7F, 0x80, 0x8F, 0x90, 0xA0, 0xBF, 0xC0, 0xC2, 0xDF, 0xE0,
             0xE2, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xF8, 0xFF]
    out = [bytes([a, b]) for a in range(256) for b in range(256)]
    out += [bytes(t) for t in itertools.product(edges, repeat=3)]
    rng = random.Random(0)
    out += [bytes(rng.choice(edges) for _ in range(rng.randint(4, 10))) for _ in range(5000)]
    chars = [u"a", u" ", u"\u00e9", u"\u20ac", u"\U0001F600", u"\u4e2d"]
    valid = [u"".join(rng.choice(chars) for _ in range(rng.randint(0, 6))).encode()
             for _ in range(3000)]
    return out, valid


def test_cut_texts_is_the_first_bytes_as_python_decodes_them():
    strings, valid = _byte_strings()
    for max_bytes in range(1, 9):
        got = graph_tokenizer.cut_texts(tf.constant(strings + valid), max_bytes).numpy().tolist()
        for text, cut in zip(strings + valid, got):
            assert text.startswith(cut) and len(cut) <= max_bytes, (max_bytes, text, cut)
            assert cut.decode("utf-8", "ignore") == python_cut(text, max_bytes), (
                max_bytes, text, cut)
            if len(text) <= max_bytes:
                assert cut == text
        for text, cut in zip(valid, got[len(strings):]):
            cut.decode("utf-8")  # valid stays valid: no character is split
            # At most one character off.
            assert cut == text or len(cut) > max_bytes - 4, (max_bytes, text, cut)


def test_texts_within_the_cap_tokenize_as_full_tokenizer_longer_as_their_first_bytes(tmp_path):
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "hello", "world", "!", "caf", "##e", u"\u20ac"]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(t + "\n" for t in vocab), encoding="utf-8")
    full = tokenization.FullTokenizer(str(vocab_file), do_lower_case=True)
    max_bytes = 16
    graph = graph_tokenizer.GraphTokenizer(vocab, do_lower_case=True, max_text_bytes=max_bytes)
    assert int(graph.max_text_bytes.numpy()) == max_bytes
    texts = [b"", b"hello", b"hello world !", b"hello world! hello", b" " * 11 + b"hello",
             b" " * 14 + u"\u20ac".encode() + b" world", b"\xff" * 20 + b"hello",
             b"hello   world  \xe2\x82", u"Caf\u00e9 ".encode() * 5, b"\x00" * 16 + b"!",
             LONG[:1000]]
    got = graph.tokenize(tf.constant(texts)).to_list()
    for text, row in zip(texts, got):
        assert row == full.convert_tokens_to_ids(full.tokenize(python_cut(text, max_bytes))), text
    # As their first max_bytes bytes, whatever follows.
    assert got == graph.tokenize(tf.constant([t[:max_bytes] for t in texts])).to_list()
    # Within the cap nothing is cut; past it the cut changes these answers.
    assert got[4] == [vocab.index("hello")] and got[5] == [] and got[6] == []
    assert [full.tokenize(t.decode("utf-8", "ignore")) for t in texts[5:7]] == [
        [u"\u20ac", "world"], ["hello"]]
    assert len(got[-1]) == max_bytes  # one token per byte


@pytest.mark.parametrize("do_lower_case", [True, False])
def test_no_code_point_maps_to_more_characters_than_its_bytes(do_lower_case):
    """So a text has at most one token per byte: the cap bounds tokens and windows."""
    tables = graph_tokenizer._code_point_tables(do_lower_case)  # pylint: disable=protected-access
    non_space = np.concatenate([[0], np.cumsum(tables.map_values != 0x20)])
    non_space = non_space[tables.map_splits[1:]] - non_space[tables.map_splits[:-1]]
    utf8 = np.array([len(chr(c).encode("utf-8")) for c in tables.map_keys])
    worst = np.argmax(non_space - utf8)
    assert non_space[worst] <= utf8[worst], hex(tables.map_keys[worst])


@pytest.mark.parametrize("value", [0, -1, 1.5, True, "64"])
def test_max_text_bytes_must_be_a_positive_integer(value):
    with pytest.raises(UserError) as error:
        graph_tokenizer.GraphTokenizer(["[UNK]"], max_text_bytes=value)
    assert str(error.value) == ("max_text_bytes=%r: must be a positive integer (the bytes of "
                                "each text read before tokenizing)" % (value,))


# ---------------------------------------------------------------------------
# The exports: every text signature, hostile requests
# ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """{name: (loaded SavedModel, its signature names)} of every export kind, the default cap.

    The exports are `tests.export_cache`'s (the ONNX and SavedModel tests read some of them).
    """
    files = export_cache.task_files(tmp_path_factory, "hostile")
    paths = export_cache.saved_models(tmp_path_factory, list(export_cache.KINDS))
    return dict(files=files, loaded={name: tf.saved_model.load(path)
                                     for name, path in paths.items()})


# The text signatures: (export, signature).
TEXT_SIGNATURES = [
    ("classifier", "serving_default"), ("classifier", "serve_text_a"),
    ("doc_stride", "serving_default"),
    ("encoder", "serving_default"), ("encoder", "serve_text_a"),
    ("embeddings", "serving_default"),
    ("fill_mask", "serving_default"),
    ("multiple_choice", "serving_default"),
    ("squad", "serving_default"),
    ("ner", "serving_default"),
]


# The exports of text (one text, or a pair) and the signatures each has.
_TEXT_EXPORTS = {
    "classifier": {"serving_default": ["text_a", "text_b"], "serve_text_a": ["text_a"]},
    "doc_stride": {"serving_default": ["text_a"], "serve_text_a": ["text_a"]},
    "encoder": {"serving_default": ["text_a", "text_b"], "serve_text_a": ["text_a"]},
    "embeddings": {"serving_default": ["text_a"], "serve_text_a": ["text_a"]},
    # The name before, kept by its own signature.
    "fill_mask": {"serving_default": ["text_a"], "serve_text_a": ["text_a"],
                  "serve_text": ["text"]},
    "ner": {"serving_default": ["text_a"], "serve_text_a": ["text_a"], "serve_text": ["text"]},
}


@pytest.mark.slow
def test_every_text_export_takes_the_same_input_names(served):
    """`text_a` (and a pair's `text_b`) in every export of text: `serve_text_a` in each, and
    `serving_default` takes `text_a`; the ner and fill-mask exports' `serve_text` answers
    `text` (their input's name before) as `serving_default` answers `text_a`."""
    texts = [b"w1 [MASK] w2 Paris", b""]
    for kind, signatures in _TEXT_EXPORTS.items():
        loaded = served["loaded"][kind]
        assert {k: sorted(loaded.signatures[k].structured_input_signature[1])
                for k in signatures} == signatures, kind
        assert "serve_text_a" in loaded.signatures and "text_a" in sorted(
            loaded.signatures["serving_default"].structured_input_signature[1])
        alone = loaded.signatures["serve_text_a"](text_a=tf.constant(texts))
        if "serve_text" in signatures:
            old = loaded.signatures["serve_text"](text=tf.constant(texts))
            assert sorted(old) == sorted(alone), kind
            for key in alone:
                np.testing.assert_array_equal(old[key].numpy(), alone[key].numpy(), key)


def _inputs(fn, texts):
    """Each string input of `fn` gets `texts` (a second one reversed; endings two of them)."""
    specs = fn.structured_input_signature[1]
    inputs = {}
    for i, (key, spec) in enumerate(sorted(specs.items())):
        assert spec.dtype == tf.string, key
        column = texts if i % 2 == 0 else texts[::-1]
        if spec.shape.rank == 2:  # multiple choice's endings: [batch, 2]
            inputs[key] = tf.constant([[t, b"the end"] for t in column])
        else:
            inputs[key] = tf.constant(column)
    return inputs


def _memory_kb(field):
    with open("/proc/self/status") as f:
        return int(re.search(r"%s:\s+(\d+)" % field, f.read()).group(1))


def _reset_peak():
    """Resets the kernel's peak resident memory (VmHWM); False where /proc does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def ask(fn, texts):
    """(outputs as NumPy, seconds, peak MB over the memory before the call)."""
    inputs = _inputs(fn, texts)
    before = _memory_kb("VmRSS") if _reset_peak() else _memory_kb("VmHWM")
    start = time.perf_counter()
    outputs = {k: v.numpy() for k, v in fn(**inputs).items()}
    seconds = time.perf_counter() - start
    return outputs, seconds, (_memory_kb("VmHWM") - before) / 1024.0


HOSTILE = {
    "1 MiB": [LONG],
    "10,000 empty": [b""] * 10000,
    "invalid UTF-8": INVALID_UTF8,
    "control": CONTROL,
    "mixed": mixed_batch(),
}


def _bounds(name):
    """(seconds, peak MB) of a request: 10,000 rows through the model cost what they cost."""
    return (BATCH_SECONDS, BATCH_PEAK_MB) if name == "10,000 empty" else (SECONDS, PEAK_MB)


@pytest.mark.slow
@pytest.mark.parametrize("kind,signature", TEXT_SIGNATURES)
def test_hostile_requests_are_answered_in_bounded_time_and_memory(served, kind, signature):
    loaded = served["loaded"][kind]
    tokenizer = loaded.squad.tokenizer if kind == "squad" else loaded.tokenizer
    assert int(tokenizer.max_text_bytes.numpy()) == CAP  # the cap, for a server to read
    fn = loaded.signatures[signature]
    ask(fn, [b"warm up"])  # the first call of a loaded function optimizes its graph
    empty, _, _ = ask(fn, [b""])
    figures = []
    for name, texts in HOSTILE.items():
        outputs, seconds, peak_mb = ask(fn, texts)
        figures.append("%s: %.2f s, %+.0f MB" % (name, seconds, peak_mb))
        assert sorted(outputs) == sorted(empty), name
        for key, value in outputs.items():
            assert value.shape[0] == len(texts), (name, key, value.shape)
            if name == "10,000 empty":  # each row the answer to "" alone
                for row in (0, len(texts) // 2, len(texts) - 1):
                    _same_row(key, value[row], empty[key][0])
        seconds_bound, peak_bound = _bounds(name)
        assert seconds < seconds_bound, (name, figures)
        assert peak_mb < peak_bound, (name, figures)
    print("%s %s: %s" % (kind, signature, "; ".join(figures)))


def _features(files, texts_a, texts_b=None):
    """FullTokenizer + build_pair_features of each text's first CAP bytes (Python's cut)."""
    full = tokenization.FullTokenizer(files["vocab"], do_lower_case=True)
    rows = []
    for i, a in enumerate(texts_a):
        b = python_cut(texts_b[i]) if texts_b is not None else ""
        rows.append(build_pair_features(full.tokenize(python_cut(a)),
                                        full.tokenize(b) if b else None, SEQ_LENGTH, full))
    return {key: tf.constant([getattr(r, key) for r in rows], tf.int32)
            for key in ("input_ids", "input_mask", "segment_ids")}


@pytest.mark.slow
def test_every_text_gets_the_features_of_its_first_max_text_bytes(served):
    """Classifier and encoder, every text of the mixed batch: serve_features on Python's features."""
    files = served["files"]
    texts = mixed_batch()
    full = tokenization.FullTokenizer(files["vocab"], do_lower_case=True)
    # The cut matters to SPLIT (its words are past the cap) and not to AT_CAP.
    assert full.tokenize(python_cut(SPLIT)) == [] and full.tokenize(SPLIT.decode("utf-8"))
    assert python_cut(AT_CAP) == AT_CAP.decode("utf-8")
    single = _features(files, texts)
    pair = _features(files, texts, texts[::-1])
    assert single["input_mask"].numpy().sum(axis=1).max() == SEQ_LENGTH  # the long text is cut
    for kind, key in (("classifier", "probabilities"), ("encoder", "pooled_output")):
        signatures = served["loaded"][kind].signatures
        for features, got in (
                (single, signatures["serve_text_a"](text_a=tf.constant(texts))),
                (pair, signatures["serving_default"](text_a=tf.constant(texts),
                                                     text_b=tf.constant(texts[::-1])))):
            want = signatures["serve_features"](**features)
            np.testing.assert_allclose(got[key].numpy(), want[key].numpy(), atol=MODEL_ATOL)
            if kind == "encoder":
                np.testing.assert_array_equal(got["input_mask"], features["input_mask"])


def _same_row(key, row, alone):
    """`row` of a batch's output is `alone` (a batch of one's) up to the batch's padding."""
    row, alone = np.asarray(row), np.asarray(alone)
    row = row[tuple(slice(0, n) for n in alone.shape)]
    if alone.dtype.kind in "OSUbiu":  # strings, bools, ints: exactly
        np.testing.assert_array_equal(row, alone, err_msg=key)
    else:
        np.testing.assert_allclose(row, alone, atol=MODEL_ATOL, err_msg=key)


# Outputs that near ties between a batch's float32 logits and a text's alone may change.
_TIE_KEYS = {"answer", "score", "window", "start_index", "end_index"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["doc_stride", "embeddings", "fill_mask", "multiple_choice",
                                  "squad", "ner"])
def test_each_text_of_the_mixed_batch_is_answered_as_alone(served, kind):
    fn = served["loaded"][kind].signatures["serving_default"]
    texts = mixed_batch()
    batch, _, _ = ask(fn, texts)
    columns = _inputs(fn, texts)
    for i, text in enumerate(texts):
        alone = {k: v.numpy() for k, v in fn(**{k: v[i:i + 1] for k, v in columns.items()}).items()}
        for key, value in alone.items():
            if kind == "squad" and key in _TIE_KEYS and len(text) > CAP:
                continue
            _same_row(key, batch[key][i], value[0])


@pytest.mark.slow
def test_ner_words_are_python_s_words_of_the_first_bytes(served):
    fn = served["loaded"]["ner"].signatures["serving_default"]
    texts = mixed_batch()
    got = {k: v.numpy() for k, v in fn(text_a=tf.constant(texts)).items()}
    for i, text in enumerate(texts):
        words = ner_data.split_words(text[:CAP].decode("utf-8", "replace"))
        n = got["num_words"][i]
        # The words that fit in max_windows windows (the 1 MiB text's first ones).
        words = words[:NER_WINDOW_TOKENS] if i == 1 else words
        assert n == len(words), i
        assert [w.decode("utf-8") for w in got["words"][i][:n]] == [w for w, _, _ in words], i
        assert got["word_start"][i][:n].tolist() == [s for _, s, _ in words], i
        assert got["word_end"][i][:n].tolist() == [e for _, _, e in words], i
        for entity in got["entity_texts"][i][:got["num_entities"][i]]:
            entity.decode("utf-8")  # valid UTF-8, whatever the bytes in
    # The 1 MiB text: one word (and sub-token) per byte, as many as max_windows windows hold.
    assert got["num_words"][1] == NER_WINDOW_TOKENS < CAP


def _windows(num_tokens, max_tokens, stride):
    """run_squad's number of windows of `num_tokens` sub-tokens (`doc_spans`)."""
    return 1 if num_tokens <= max_tokens else 1 + -(-(num_tokens - max_tokens) // stride)


@pytest.mark.slow
def test_max_windows_bounds_ner_s_windows(served):
    """A text's windows through the model are at most max_windows: the 1 MiB text of
    punctuation (65,536 sub-tokens in the cap, 4,096 windows of the test export, over 500
    of a 128-token model) runs 64; a text that fits is answered whole."""
    loaded = served["loaded"]["ner"]
    fn = loaded.signatures["serving_default"]
    assert int(loaded.max_windows.numpy()) == ner_export.DEFAULT_MAX_WINDOWS == 64
    max_tokens, stride = SEQ_LENGTH - 2, min(SEQ_LENGTH - 2, DOC_STRIDE)
    assert _windows(CAP, max_tokens, stride) == 4096  # what the cap alone let through
    fits = b"!" * NER_WINDOW_TOKENS
    got = fn(text_a=tf.constant([LONG, fits, fits + b"!", b"a " * 3000]))["num_words"].numpy()
    assert got.tolist() == [NER_WINDOW_TOKENS] * 3 + [NER_WINDOW_TOKENS]
    assert _windows(NER_WINDOW_TOKENS, max_tokens, stride) == 64
    assert _windows(NER_WINDOW_TOKENS + 1, max_tokens, stride) == 65
    assert ner_export.max_window_tokens(1, SEQ_LENGTH, DOC_STRIDE) == max_tokens
    _, seconds, _ = ask(fn, [LONG])
    _, seconds_fits, _ = ask(fn, [fits])
    print("ner: 1 MiB %.2f s, %d sub-tokens %.2f s" % (seconds, NER_WINDOW_TOKENS, seconds_fits))


@pytest.mark.slow
def test_the_cap_bounds_squad_s_windows(served):
    fn = served["loaded"]["squad"].signatures["serving_default"]
    full = tokenization.FullTokenizer(served["files"]["vocab"], do_lower_case=True)
    question = u"Who said the deal would close?"
    query = min(len(full.tokenize(question)), MAX_QUERY_LENGTH)
    room = SEQ_LENGTH - query - 3
    step = min(room, DOC_STRIDE)
    got = fn(question=tf.constant([question.encode()] * 2),
             context=tf.constant([LONG, LONG[:CAP]]))["num_windows"].numpy()
    # CAP tokens (one per byte), as the first CAP bytes alone.
    assert got.tolist() == [1 + -(-(CAP - room) // step)] * 2


@pytest.mark.slow
@pytest.mark.parametrize("value", [0, -5])
def test_a_bad_max_text_bytes_is_one_line_and_writes_nothing(served, tmp_path, value):
    files = served["files"]
    export_dir = tmp_path / "models"
    flags = ["--task_name=MRPC", "--bert_config_file=" + files["config_file"],
             "--vocab_file=" + files["vocab"], "--do_lower_case=true",
             "--init_checkpoint=" + files["finetuned"], "--max_seq_length=%d" % SEQ_LENGTH,
             "--export_dir=%s" % export_dir, "--max_text_bytes=%d" % value]
    message = ("--max_text_bytes=%d: must be a positive integer (the bytes of each text read "
               "before tokenizing)" % value)
    # The tool's own flags, parsed as the command line parses them (its exit status 2 and
    # one `error:` line for a UserError: tests/tools/test_export_saved_model_tool.py).
    assert toolrun.user_errors_here("export_saved_model", [("bad", flags)]) == {"bad": message}
    assert not export_dir.exists()


@pytest.mark.slow
def test_a_bad_max_windows_is_one_line_and_writes_nothing(served, tmp_path):
    files = served["files"]
    export_dir = tmp_path / "models"
    flags = ["--bert_config_file=" + files["config_file"], "--vocab_file=" + files["vocab"],
             "--do_lower_case=true", "--init_checkpoint=" + files["finetuned"],
             "--max_seq_length=%d" % SEQ_LENGTH, "--export_dir=%s" % export_dir]
    argvs = [("zero", ["--task_name=ner", "--max_windows=0"] + flags),
             ("not ner", ["--task_name=MRPC", "--max_windows=8"] + flags)]
    assert toolrun.user_errors_here("export_saved_model", argvs) == {
        "zero": "--max_windows=0: must be a positive integer (the windows of a text the model "
                "runs on)",
        "not ner": "--max_windows is for --task_name=ner (not MRPC)"}
    assert not export_dir.exists()
