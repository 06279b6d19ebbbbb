"""tools/extract_features.py: the original's JSON lines, from the original's checkpoint.

The tool's runs call it in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does); the command line itself
runs as a user runs it for the exit status and stderr of a mistake.
"""

import collections
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from bert_tf.runs import extract_features
from bert_tf.errors import UserError
from bert_tf.tokenization import vocab as vocab_lib
from tests.conftest import TINY_CONFIG, make_inputs, write_config
from tests.original import run_oracle
from tests.tolerances import JSON_ATOL
from tests.tolerances import BF16_HIDDEN_ATOL
from tests.tools import toolrun

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _corpus_vocab():
    """A small WordPiece vocab from real English (CPython's pydoc topics)."""
    import re
    from pydoc_data.topics import topics
    words = collections.Counter(re.findall(r"[a-z]+", topics["if"].lower() + topics["for"].lower()))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "(", ")", ":", "'"]
    vocab += [w for w, _ in words.most_common(60)]
    vocab += ["##s", "##ed", "##ing", "##e", "##t", "##a", "##n", "##r", "##i", "##o",
              "t", "a", "n", "r", "i", "o", "e", "s"]
    seen = []
    for token in vocab:
        if token not in seen:
            seen.append(token)
    return seen


def _write_inputs(path):
    from pydoc_data.topics import topics
    lines = [line.strip() for line in topics["while"].splitlines() if line.strip()][:6]
    lines += [
        "The else clause ||| is executed when the loop terminates.",
        "a ||| b ||| c",          # split at the last " ||| "
        "",                       # blank lines are examples too
        "Ünïcödé and \u4e2d\u6587 text.",
        "word " * 40,             # truncated to max_seq_length - 2
        "first part " * 10 + "||| second " * 10,
    ]
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return len(lines)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("extract")
    vocab = _corpus_vocab()
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = write_config(d / "bert_config.json", dict(TINY_CONFIG, vocab_size=len(vocab)))
    np.savez(d / "inputs.npz", **make_inputs(vocab_size=len(vocab)))
    ckpt = str(d / "bert_model.ckpt")
    run_oracle("model_oracle", "save", config, d / "inputs.npz", ckpt, d / "unused.npz", 3, "heads")
    n = _write_inputs(d / "input.txt")
    return {"dir": d, "vocab": str(d / "vocab.txt"), "config": config, "ckpt": ckpt,
            "input": str(d / "input.txt"), "num_lines": n}


def _run_tool(*args):
    """The command line, in a child process."""
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="2")
    return subprocess.run([sys.executable, os.path.join(REPO, "tools", "extract_features.py")]
                          + list(args), capture_output=True, text=True, env=env, timeout=300)


def _run_here(*args):
    """The tool in this process: its log text."""
    return toolrun.run_tool("extract_features", args)[1]


def _flags(s, output, **overrides):
    flags = {"input_file": s["input"], "output_file": output, "vocab_file": s["vocab"],
             "bert_config_file": s["config"], "init_checkpoint": s["ckpt"],
             "layers": "-1,0,-2", "max_seq_length": "24", "batch_size": "3"}
    flags.update(overrides)
    return ["--%s=%s" % kv for kv in flags.items()]


@pytest.mark.original
def test_output_equals_the_original(setup):
    s = setup
    ours_file = str(s["dir"] / "ours.jsonl")
    _run_here(*_flags(s, ours_file))
    theirs_file = str(s["dir"] / "theirs.jsonl")
    run_oracle("extract_features_oracle", s["config"], s["vocab"], s["ckpt"], s["input"],
               theirs_file, "-1,0,-2", 24, "true")
    with open(ours_file, encoding="utf-8") as f:
        ours = [json.loads(line, object_pairs_hook=collections.OrderedDict) for line in f]
    with open(theirs_file, encoding="utf-8") as f:
        theirs = [json.loads(line, object_pairs_hook=collections.OrderedDict) for line in f]
    assert len(ours) == len(theirs) == s["num_lines"]
    worst = 0.0
    for a, b in zip(ours, theirs):
        assert list(a) == list(b) == ["linex_index", "features"]
        assert a["linex_index"] == b["linex_index"]
        assert [t["token"] for t in a["features"]] == [t["token"] for t in b["features"]]
        for ta, tb in zip(a["features"], b["features"]):
            assert list(ta) == ["token", "layers"]
            assert [l["index"] for l in ta["layers"]] == [l["index"] for l in tb["layers"]] == [-1, 0, -2]
            for la, lb in zip(ta["layers"], tb["layers"]):
                assert len(la["values"]) == TINY_CONFIG["hidden_size"]
                worst = max(worst, float(np.abs(np.subtract(la["values"], lb["values"])).max()))
    assert worst <= JSON_ATOL
    # Blank line -> [CLS] [SEP]; the 40-word line is cut to max_seq_length.
    by_id = {a["linex_index"]: a for a in ours}
    tokens = [[t["token"] for t in by_id[i]["features"]] for i in range(len(ours))]
    assert ["[CLS]", "[SEP]"] in tokens
    assert max(len(t) for t in tokens) == 24


def test_read_examples_splits_like_the_original(tmp_path):
    path = tmp_path / "in.txt"
    path.write_bytes(b"  a ||| b ||| c  \n\nplain\xff text\nx|||y\n")
    examples = extract_features.read_examples(str(path))
    assert [(e.unique_id, e.text_a, e.text_b) for e in examples] == [
        (0, "a ||| b", "c"), (1, "", None), (2, "plain text", None), (3, "x|||y", None)]


def test_feature_json_rounds_like_the_original():
    feature = extract_features.InputFeatures(5, ["[CLS]", "h\u00e9", "[SEP]"], [], [], [])
    values = np.array([[0.1234567, -1.0000004], [2.5e-7, 3.0], [0.0, -0.5]], np.float32)
    line = extract_features.feature_to_json(feature, [-1], [values])
    expected = json.dumps(collections.OrderedDict([
        ("linex_index", 5),
        ("features", [collections.OrderedDict([
            ("token", tok),
            ("layers", [collections.OrderedDict([
                ("index", -1), ("values", [round(float(x), 6) for x in row])])])])
            for tok, row in zip(feature.tokens, values)])]))
    assert line == expected
    assert '"h\\u00e9"' in line  # json.dumps default: ASCII escapes, as the original


@pytest.mark.parametrize("overrides, needle", [
    ({"vocab_file": "/nonexistent/vocab.txt"}, "vocab.txt"),
    ({"max_seq_length": "65"}, "--max_seq_length=65"),
    ({"layers": "0,2"}, "--layers=0,2"),
    ({"input_file": "/nonexistent/in.txt"}, "--input_file=/nonexistent/in.txt"),
    ({"init_checkpoint": "/nonexistent/bert_model.ckpt"}, "--init_checkpoint"),
    ({"init_checkpoint": "bert-base-uncased"}, "--init_checkpoint=bert-base-uncased: not a "
     "directory, not a checkpoint prefix (no bert-base-uncased.index) and not the name of one "
     "of Google's releases (uncased_L-12_H-768_A-12, "),
])
def test_bad_input_is_one_line_and_writes_nothing(setup, tmp_path, overrides, needle):
    """A one-line UserError (`main` prints it as `error: ...`, exit 2: the test below)."""
    output = str(tmp_path / "out.jsonl")
    message = toolrun.user_errors_here(
        "extract_features", [("case", _flags(setup, output, **overrides))])["case"]
    assert message is not None and "\n" not in message and needle in message, message
    assert not os.listdir(tmp_path)


def test_an_empty_input_file_is_a_one_line_error_and_writes_nothing(setup, tmp_path):
    # The original wrote an empty output and said nothing.
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    output = str(tmp_path / "out" / "out.jsonl")
    message = toolrun.user_errors_here(
        "extract_features", [("case", _flags(setup, output, input_file=str(empty)))])["case"]
    assert message == "--input_file=%s is empty: no line to extract features from" % empty
    assert os.listdir(tmp_path) == ["empty.txt"]


@pytest.mark.slow
def test_checkpoint_of_another_architecture_is_refused(setup, tmp_path):
    # The original would silently leave the missing layer at its random
    # initial values; we stop, naming the variable. The command line, as a
    # user runs it: one `error: ...` line, exit status 2, no traceback.
    config = write_config(tmp_path / "deeper.json",
                          dict(TINY_CONFIG, num_hidden_layers=3,
                               vocab_size=len(_corpus_vocab())))
    output = str(tmp_path / "out.jsonl")
    proc = _run_tool(*_flags(setup, output, bert_config_file=config))
    assert proc.returncode == 2
    assert "error: --init_checkpoint=" in proc.stderr
    assert "bert/encoder/layer_2/" in proc.stderr and "missing" in proc.stderr
    assert len([l for l in proc.stderr.splitlines() if l.startswith("error: ")]) == 1
    assert "Traceback" not in proc.stderr
    assert not os.path.exists(output)


def test_layer_indexes_are_checked():
    assert extract_features.parse_layer_indexes("-1,-2,0", 2) == [-1, -2, 0]
    with pytest.raises(UserError):
        extract_features.parse_layer_indexes("-3", 2)
    with pytest.raises(UserError):
        extract_features.parse_layer_indexes("a", 2)


def test_vocab_config_and_output_mistakes_are_one_line_errors(setup, tmp_path):
    """Refused before the model is built (the cases run in this process)."""
    big_vocab, num_tokens = toolrun.vocab_with_extra_tokens(setup["vocab"],
                                                            tmp_path / "vocab_plus_3.txt")
    no_sep = toolrun.vocab_without(setup["vocab"], tmp_path / "vocab_no_sep.txt", "[SEP]")
    # Another model's vocab, far shorter than vocab_size (1,922 tokens against 30522: the
    # ids would pick the wrong rows, and the features would be wrong without a word).
    num_rows = len(_corpus_vocab()) + vocab_lib.PADDING_ROWS
    wide_config = write_config(tmp_path / "wide.json", dict(TINY_CONFIG, vocab_size=num_rows))
    under_a_file, blocker = toolrun.path_under_a_file(tmp_path / "blocked", "out.jsonl")
    a_directory = tmp_path / "a_directory"
    a_directory.mkdir()
    output = str(tmp_path / "out" / "out.jsonl")
    cases = [
        ("vocab larger than vocab_size", _flags(setup, output, vocab_file=big_vocab),
         "--vocab_file=%s has %d tokens, more than vocab_size %d of %s (the vocab is not the "
         "checkpoint's)" % (big_vocab, num_tokens, num_tokens - 3, setup["config"])),
        ("vocab smaller than vocab_size", _flags(setup, output, bert_config_file=wide_config),
         "--vocab_file=%s has %d tokens, fewer than vocab_size %d of %s (the vocab is not the "
         "checkpoint's; a model trained with it: pad it with [unusedN] lines to %d tokens)"
         % (setup["vocab"], num_rows - vocab_lib.PADDING_ROWS, num_rows, wide_config,
            num_rows)),
        ("vocab without [SEP]", _flags(setup, output, vocab_file=no_sep),
         "--vocab_file=%s has no [SEP] token" % no_sep),
        ("output_file under a file", _flags(setup, under_a_file),
         "--output_file=%s: %s is a file, not a directory" % (under_a_file, blocker)),
        ("output_file is a directory", _flags(setup, str(a_directory)),
         "--output_file=%s is a directory, not a file" % a_directory),
    ]
    results = toolrun.user_errors_here("extract_features", cases)
    for name, _, expected in cases:
        assert results[name] == expected, (name, results[name])
    assert not os.path.exists(os.path.dirname(output))
    assert os.listdir(a_directory) == []


def test_output_goes_through_tf_io_gfile_for_remote_paths(tmp_path):
    """A `scheme://` output (gs:// in the original's README) is written with tf.io.gfile.

    TensorFlow's in-memory `ram://` file system stands in for Cloud Storage.
    """
    import tensorflow as tf
    from bert_tf.modeling.config import BertConfig
    from bert_tf.modeling.bert_model import BertModel
    config = BertConfig.from_dict(dict(TINY_CONFIG, vocab_size=len(_corpus_vocab())))
    model = BertModel(config)
    features = [extract_features.InputFeatures(i, ["[CLS]", "a", "[SEP]"], [2, 20 + i, 3, 0],
                                               [1, 1, 1, 0], [0, 0, 0, 0]) for i in range(3)]
    local = str(tmp_path / "local.jsonl")
    remote = "ram://extract_features_test/out/features.jsonl"
    assert extract_features.write_features_jsonl(model, features, [-1], 2, local) == 3
    assert extract_features.write_features_jsonl(model, features, [-1], 2, remote) == 3
    with tf.io.gfile.GFile(remote) as f:
        remote_text = f.read()
    with open(local) as f:
        assert remote_text == f.read()
    assert tf.io.gfile.listdir("ram://extract_features_test/out/") == ["features.jsonl"]


def test_mixed_precision_bf16_is_close_to_float32_but_computed_in_bf16(setup, tmp_path):
    import keras
    from bert_tf.modeling import checkpoint
    from bert_tf import tokenization
    from bert_tf.modeling.config import BertConfig
    from bert_tf.modeling.bert_model import BertModel
    from bert_tf.modeling import precision

    s = setup
    config = BertConfig.from_json_file(s["config"])
    tokenizer = tokenization.FullTokenizer(s["vocab"], do_lower_case=True)
    features = extract_features.convert_examples_to_features(
        extract_features.read_examples(s["input"]), 24, tokenizer, log_examples=0)
    layers = [-1, 0]
    fp32 = extract_features.load_model(config, s["ckpt"])
    bf16 = extract_features.load_model(config, s["ckpt"], mixed_precision="bf16")
    assert keras.config.dtype_policy().name == "float32"  # the process's policy is untouched
    assert fp32.compute_dtype == "float32" and bf16.compute_dtype == "bfloat16"
    # The encoder's dense weights are stored in bfloat16; LayerNorm and the
    # embedding tables stay float32.
    stored = {v.path: v.dtype for v in bf16.weights}
    assert stored["bert/encoder/layer_0/attention/self/query/kernel"] == "bfloat16"
    assert stored["bert/encoder/layer_1/output/dense/bias"] == "bfloat16"
    assert stored["bert/pooler/dense/kernel"] == "bfloat16"
    assert stored["bert/encoder/layer_0/output/LayerNorm/gamma"] == "float32"
    assert stored["bert/embeddings/word_embeddings"] == "float32"
    assert {v.dtype for v in fp32.weights} == {"float32"}
    ref = [values for _, values in extract_features.predict_layers(fp32, features, layers, 4)]
    lib = [values for _, values in extract_features.predict_layers(bf16, features, layers, 4)]
    # Stored bfloat16 gives the mixed policy's numbers (float32 variables cast
    # at every call) up to bfloat16 rounding: the same weights, rounded once.
    with precision.dtype_policy("bf16"):
        mixed = BertModel(config)
    checkpoint.load_checkpoint(mixed, s["ckpt"])
    assert {v.dtype for v in mixed.weights} == {"float32"}
    mixed_values = [values for _, values in
                    extract_features.predict_layers(mixed, features, layers, 4)]
    for row_mixed, row_lib in zip(mixed_values, lib):
        for a, b in zip(row_mixed, row_lib):
            np.testing.assert_allclose(a, b, atol=BF16_HIDDEN_ATOL)
    assert all(v.dtype == np.float32 for row in lib for v in row)
    lib_diff = max(float(np.abs(a - b).max()) for ra, rb in zip(lib, ref) for a, b in zip(ra, rb))
    assert 1e-3 < lib_diff <= BF16_HIDDEN_ATOL, lib_diff

    # The tool's flag: the same bf16 numbers, written as the original's JSON.
    output = str(tmp_path / "bf16.jsonl")
    _run_here(*_flags(s, output, layers="-1,0", batch_size="4", mixed_precision="bf16"))
    with open(output, encoding="utf-8") as f:
        lines = [json.loads(line) for line in f]
    assert [line["linex_index"] for line in lines] == [f.unique_id for f in features]
    tool_diff = 0.0
    for line, feature, values in zip(lines, features, ref):
        assert [t["token"] for t in line["features"]] == feature.tokens
        for i, token in enumerate(line["features"]):
            for j, layer in enumerate(token["layers"]):
                assert layer["index"] == layers[j]
                tool_diff = max(tool_diff, float(np.abs(
                    np.asarray(layer["values"]) - values[j][i]).max()))
    assert 1e-3 < tool_diff <= BF16_HIDDEN_ATOL, tool_diff
    print("bf16 vs float32, max abs difference of the hidden states: library %.4f, tool %.4f"
          % (lib_diff, tool_diff))
