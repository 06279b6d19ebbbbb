"""bert_tf.tasks.classifier.data and classifier_processors against the original
run_classifier.py data side.

The data directories are GLUE-layout TSV files made from real English
(`pydoc_data.topics`) plus hand-written edge cases: double quotes (kept
literally), accents, CJK, a character missing from the vocab, texts long
enough to truncate, an empty and a whitespace-only text_b, CRLF line ends, a
lone "\\r" and a file without a final newline. The original's processors and
`file_based_convert_examples_to_features` run in one oracle process for
MRPC, CoLA, MNLI and XNLI; our examples, records and logged examples must
equal theirs.
"""

import csv
import json
import os

import numpy as np
import pytest
import tensorflow as tf
from absl import logging

from bert_tf import tokenization
from bert_tf.tasks.classifier import data as cd
from bert_tf.tasks.classifier import data_processors as cp
from bert_tf.data import demo_corpus
from bert_tf.errors import UserError
from tests.data import pretraining_testlib as lib
from tests.records import decode_record

MAX_SEQ_LENGTH = 24

EDGE_TEXTS = [
    'He said "stop the loop" and it stopped.',
    '"An unbalanced quote opens this text',
    "Caf\u00e9 na\u00efve r\u00e9sum\u00e9s are accented words.",
    "Chinese \u535a\u63a8 characters \u4e2d\u6587 are split one by one.",
    "The \u03c9mega word is unknown to the vocab.",
    "a 'single' quote and a \"double\" one",
]


def _sentences():
    out = []
    for document in demo_corpus.pydoc_documents("paragraph", max_docs=60):
        out.extend(s for s in document if "\t" not in s)
    return out


SENTENCES = _sentences()
LONG = " ".join(SENTENCES[0:6])          # forces truncation at MAX_SEQ_LENGTH
LONG_B = " ".join(SENTENCES[6:9])


def _text(i):
    """The i-th text: real sentences with the edge cases mixed in."""
    if i % 4 == 3:
        return EDGE_TEXTS[(i // 4) % len(EDGE_TEXTS)]
    return SENTENCES[(7 * i) % len(SENTENCES)]


def _write(path, rows, newline="\n", final_newline=True):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    text = newline.join("\t".join(str(c) for c in row) for row in rows)
    if final_newline:
        text += newline
    with open(path, "wb") as f:
        f.write(text.encode("utf-8"))


def _pairs(n, offset=0):
    """n (text_a, text_b) pairs, with a long pair, a long a, an empty and a blank b."""
    pairs = [(_text(offset + 2 * i), _text(offset + 2 * i + 1)) for i in range(n)]
    pairs[1] = (LONG, LONG_B)
    pairs[2] = (LONG, "Short.")
    pairs[3] = (_text(offset + 5), "")
    pairs[4] = ("Short a.", "   ")
    return pairs


def make_glue_dirs(root):
    """GLUE-layout data dirs for every task; returns {task: data_dir}."""
    dirs = {}

    # MRPC: header; Quality, #1 ID, #2 ID, #1 String, #2 String. dev has CRLF
    # line ends and a lone "\r"; test has no final newline.
    d = dirs["mrpc"] = os.path.join(root, "MRPC")
    head = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    _write(os.path.join(d, "train.tsv"),
           [head] + [[i % 2, 1000 + i, 2000 + i, a, b] for i, (a, b) in enumerate(_pairs(14))])
    dev = [[i % 2, 3000 + i, 4000 + i, a, b] for i, (a, b) in enumerate(_pairs(8, 40))]
    dev[5][3] = "A lone carriage\r return inside."
    _write(os.path.join(d, "dev.tsv"), [head] + dev, newline="\r\n")
    _write(os.path.join(d, "test.tsv"),
           [["index"] + head[1:]] + [[i, 5000 + i, 6000 + i, a, b]
                                     for i, (a, b) in enumerate(_pairs(7, 80))],
           final_newline=False)

    # CoLA: train/dev without a header (source, label, original label, sentence);
    # test with a header (index, sentence).
    d = dirs["cola"] = os.path.join(root, "CoLA")
    for name, n, offset in (("train.tsv", 12, 0), ("dev.tsv", 6, 30)):
        rows = [["gj04", i % 2, "" if i % 2 else "*", _text(offset + i)] for i in range(n)]
        rows[2][3] = LONG
        _write(os.path.join(d, name), rows)
    _write(os.path.join(d, "test.tsv"),
           [["index", "sentence"]] + [[i, _text(60 + i)] for i in range(6)])

    # MNLI: train 12 columns, dev_matched 16, test_matched 10; header each.
    d = dirs["mnli"] = os.path.join(root, "MNLI")
    labels = ["entailment", "neutral", "contradiction"]
    base = ["index", "promptID", "pairID", "genre", "sentence1_binary_parse",
            "sentence2_binary_parse", "sentence1_parse", "sentence2_parse", "sentence1",
            "sentence2"]

    def mnli_rows(n, offset, extra):
        rows = []
        for i, (a, b) in enumerate(_pairs(n, offset)):
            row = [offset + i, 100 + i, "%dn" % i, "fiction", "( x )", "( y )", "(ROOT x)",
                   "(ROOT y)", a, b]
            rows.append(row + [labels[(i + k) % 3] for k in range(extra)])
        return rows

    _write(os.path.join(d, "train.tsv"), [base + ["label1", "gold_label"]] + mnli_rows(12, 0, 2))
    _write(os.path.join(d, "dev_matched.tsv"),
           [base + ["label%d" % k for k in range(1, 6)] + ["gold_label"]] + mnli_rows(8, 50, 6))
    _write(os.path.join(d, "test_matched.tsv"), [base] + mnli_rows(6, 90, 0))

    # XNLI: multinli/multinli.train.zh.tsv (premise, hypo, label with
    # "contradictory") and xnli.dev.tsv (language, gold_label, ..., sentence1,
    # sentence2 at 6, 7); only the zh dev rows are read.
    d = dirs["xnli"] = os.path.join(root, "XNLI")
    xlabels = ["contradictory", "entailment", "neutral"]
    _write(os.path.join(d, "multinli", "multinli.train.zh.tsv"),
           [["premise", "hypo", "label"]]
           + [[a, b, xlabels[i % 3]] for i, (a, b) in enumerate(_pairs(10, 120))])
    langs = ["zh", "en", "zh", "fr", "zh", "zh", "en", "zh"]
    _write(os.path.join(d, "xnli.dev.tsv"),
           [["language", "gold_label", "s1_bp", "s2_bp", "s1_p", "s2_p", "sentence1",
             "sentence2", "promptID", "pairID"]]
           + [[lang, labels[i % 3], "-", "-", "-", "-", a + " \u4e2d\u6587", b, i, i]
              for i, (lang, (a, b)) in enumerate(zip(langs, _pairs(8, 150)))])

    # The other GLUE tasks, as the GLUE benchmark distributes them.
    d = dirs["sst-2"] = os.path.join(root, "SST-2")
    _write(os.path.join(d, "train.tsv"),
           [["sentence", "label"]] + [[_text(i), i % 2] for i in range(6)])
    _write(os.path.join(d, "dev.tsv"),
           [["sentence", "label"]] + [[_text(20 + i), i % 2] for i in range(4)])
    _write(os.path.join(d, "test.tsv"),
           [["index", "sentence"]] + [[i, _text(40 + i)] for i in range(3)])

    for task, head, lab in (("qnli", ["index", "question", "sentence"],
                             ["entailment", "not_entailment"]),
                            ("rte", ["index", "sentence1", "sentence2"],
                             ["not_entailment", "entailment"]),
                            ("wnli", ["index", "sentence1", "sentence2"], ["1", "0"])):
        d = dirs[task] = os.path.join(root, task.upper())
        for name, n, offset in (("train.tsv", 6, 0), ("dev.tsv", 4, 20)):
            _write(os.path.join(d, name), [head + ["label"]]
                   + [[offset + i, a, b, lab[i % 2]] for i, (a, b) in
                      enumerate(_pairs(max(n, 5), offset))])
        _write(os.path.join(d, "test.tsv"),
               [head] + [[i, a, b] for i, (a, b) in enumerate(_pairs(5, 40))])

    d = dirs["qqp"] = os.path.join(root, "QQP")
    head = ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"]
    train = [[700 + i, 2 * i, 2 * i + 1, a, b, i % 2] for i, (a, b) in enumerate(_pairs(6))]
    train.insert(3, [9999, "a broken row"])
    _write(os.path.join(d, "train.tsv"), [head] + train)
    _write(os.path.join(d, "dev.tsv"),
           [head] + [[800 + i, 0, 1, a, b, 1] for i, (a, b) in enumerate(_pairs(5, 20))])
    _write(os.path.join(d, "test.tsv"),
           [["id", "question1", "question2"]] + [[i, a, b] for i, (a, b) in
                                                 enumerate(_pairs(5, 40))])

    d = dirs["sts-b"] = os.path.join(root, "STS-B")
    head = ["index", "genre", "filename", "year", "old_index", "source1", "source2",
            "sentence1", "sentence2"]
    scores = ["5.000", "3.800", "0.000", "2.250", "4.6", "1.0"]
    for name, offset in (("train.tsv", 0), ("dev.tsv", 20)):
        _write(os.path.join(d, name), [head + ["score"]]
               + [[i, "main-news", "2012", "2012train", i, "none", "none", a, b, scores[i]]
                  for i, (a, b) in enumerate(_pairs(6, offset))])
    _write(os.path.join(d, "test.tsv"),
           [head] + [[i, "main-news", "2012", "2012test", i, "none", "none", a, b]
                     for i, (a, b) in enumerate(_pairs(5, 40))])
    return dirs


@pytest.fixture(scope="module")
def glue(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("glue"))
    dirs = make_glue_dirs(root)
    corpus = os.path.join(root, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write("\n".join(SENTENCES + EDGE_TEXTS + ["\u4e2d\u6587"]) + "\n")
    vocab = lib.write_vocab([corpus], os.path.join(root, "vocab.txt"), vocab_size=400)
    return {"root": root, "dirs": dirs, "vocab": vocab}


def _tokenizer(glue, do_lower_case=True):
    return tokenization.FullTokenizer(glue["vocab"], do_lower_case=do_lower_case)


def _as_lists(examples):
    return [[e.guid, e.text_a, e.text_b, e.label] for e in examples]


def _write_ours_capturing_log(examples, processor, tokenizer, output_file):
    # The examples' dumps are DEBUG lines (the original's INFO: the tools' --verbosity=1).
    with lib.absl_log_lines(logging.DEBUG) as log_lines:
        n = cd.file_based_convert_examples_to_features(
            examples, processor.get_labels(), MAX_SEQ_LENGTH, tokenizer, output_file,
            is_regression=processor.is_regression)
    return n, log_lines


def _example_log(lines):
    """The "Writing example" and "*** Example ***" lines of a log, in order."""
    keys = ("Writing example ", "*** Example ***", "guid: ", "tokens: ", "input_ids: ",
            "input_mask: ", "segment_ids: ", "label: ")
    return [line for line in lines if line.startswith(keys)]


# --------------------------------------------------------------------------
# Against the original (one oracle process for the four original tasks).
# --------------------------------------------------------------------------

ORIGINAL_TASKS = [("mrpc", True), ("cola", True), ("mnli", True), ("xnli", False)]


@pytest.fixture(scope="module")
def original(glue):
    from tests.original import run_oracle  # pylint: disable=g-import-not-at-top
    runs = [{"task": task, "data_dir": glue["dirs"][task], "vocab_file": glue["vocab"],
             "do_lower_case": lower, "max_seq_length": MAX_SEQ_LENGTH,
             "output_dir": os.path.join(glue["root"], "original", task)}
            for task, lower in ORIGINAL_TASKS]
    runs_file = os.path.join(glue["root"], "oracle_runs.json")
    with open(runs_file, "w") as f:
        json.dump(runs, f)
    run_oracle("classifier_oracle", runs_file)
    return {run["task"]: run["output_dir"] for run in runs}


@pytest.mark.original
@pytest.mark.parametrize("task,do_lower_case", ORIGINAL_TASKS, ids=[t for t, _ in ORIGINAL_TASKS])
def test_examples_and_records_equal_original(task, do_lower_case, glue, original):
    processor = cp.get_processor(task.upper())
    tokenizer = _tokenizer(glue, do_lower_case)
    data_dir = glue["dirs"][task]
    out_dir = os.path.join(glue["root"], "ours", task)
    getters = {"train": processor.get_train_examples, "dev": processor.get_dev_examples,
               "test": processor.get_test_examples}
    compared_records = 0
    for split, get in getters.items():
        with open(os.path.join(original[task], split + ".json"), encoding="utf-8") as f:
            theirs = json.load(f)
        if theirs is None:
            # The original's XNLI has no test set (NotImplementedError): ours says so.
            with pytest.raises(UserError, match="XNLI task has no test examples"):
                get(data_dir)
            continue
        examples = get(data_dir)
        assert _as_lists(examples) == theirs, split
        assert len(examples) > 3

        ours_file = os.path.join(out_dir, split + ".tf_record")
        n, log = _write_ours_capturing_log(examples, processor, tokenizer, ours_file)
        assert n == len(examples)
        ours = lib.read_records(ours_file)
        original_file = os.path.join(original[task], split + ".tf_record")
        canonical = lib.canonical_records(original_file)
        assert len(ours) == len(canonical) == len(examples)
        for i, (a, b) in enumerate(zip(ours, canonical)):
            assert a == b, "%s record %d differs:\nours %s\noriginal %s" % (
                split, i, lib.decode(a), lib.decode(b))
        # Our bytes are the canonical (deterministic) serialization of the
        # original's Examples, so they are the same in every process.
        canonical_file = original_file + ".canonical"
        with tf.io.TFRecordWriter(canonical_file) as w:
            for record in canonical:
                w.write(record)
        with open(ours_file, "rb") as f1, open(canonical_file, "rb") as f2:
            assert f1.read() == f2.read()
        # The first 5 examples are logged exactly as the original logs them.
        with open(os.path.join(original[task], split + ".log"), encoding="utf-8") as f:
            original_log = f.read().splitlines()
        assert _example_log(log) == _example_log(original_log)
        assert len(_example_log(log)) == 1 + 7 * min(5, len(examples))
        compared_records += n
    assert compared_records > 10


def test_data_covers_the_edge_cases(glue):
    """The compared data really holds truncated pairs, single-segment pairs, [UNK] and quotes."""
    tokenizer = _tokenizer(glue)
    examples = cp.MrpcProcessor().get_train_examples(glue["dirs"]["mrpc"])
    features = [cd.convert_single_example(99, e, ["0", "1"], MAX_SEQ_LENGTH, tokenizer)
                for e in examples]
    lengths = [sum(f.input_mask) for f in features]
    assert MAX_SEQ_LENGTH in lengths                      # truncation happened
    single = [f for e, f in zip(examples, features) if e.text_b is not None
              and not any(f.segment_ids)]
    assert len(single) >= 2                               # "" and "   " text_b
    assert any(tokenizer.vocab["[UNK]"] in f.input_ids for f in features)
    assert any('"' in e.text_a and tokenizer.vocab['"'] in f.input_ids
               for e, f in zip(examples, features))
    dev = cp.MrpcProcessor().get_dev_examples(glue["dirs"]["mrpc"])
    assert "A lone carriage return inside." in [e.text_a for e in dev]


# --------------------------------------------------------------------------
# Reading as the original reads.
# --------------------------------------------------------------------------

def test_read_tsv_equals_csv_over_tf_gfile(tmp_path):
    """read_tsv = the original's csv.reader over tf.gfile.GFile(path, "r") (quotes literal)."""
    cases = [
        b'a\t"b c"\td\n"x\ty\n\n',
        b"crlf\tline\r\nlone\rcr\tx\r\nno final newline\t\"q\"",
        "caf\u00e9\t\u535a\u63a8\n\t\t\n".encode("utf-8"),
        b"",
        b"trailing\tcr\n\r",
    ]
    for i, data in enumerate(cases):
        path = str(tmp_path / ("f%d.tsv" % i))
        with open(path, "wb") as f:
            f.write(data)
        with tf.io.gfile.GFile(path, "r") as f:
            expected = list(csv.reader(f, delimiter="\t", quotechar=None))
        assert cd.read_tsv(path) == expected, data
        assert cp.DataProcessor.read_tsv(path) == expected


def test_unreadable_lines_are_user_errors(tmp_path):
    path = str(tmp_path / "train.tsv")
    with open(path, "wb") as f:
        f.write(b"h\th\nok\tfine\nbad \xff byte\tx\n")
    with pytest.raises(UserError, match=r"train\.tsv line 3: not valid UTF-8"):
        cd.read_tsv(path)
    with open(path, "wb") as f:
        f.write(b"h\th\n" + b"x" * (csv.field_size_limit() + 1) + b"\n")
    with pytest.raises(UserError, match=r"train\.tsv line 2: field larger than field limit"):
        cd.read_tsv(path)


# --------------------------------------------------------------------------
# The GLUE tasks beyond the original.
# --------------------------------------------------------------------------

# task -> (first train example [guid, text_a, text_b, label], test dummy label, #train)
GLUE_EXTRA = {
    "sst-2": (["train-1", _text(0), None, "0"], "0", 6),
    "qnli": (["train-0", _text(0), _text(1), "entailment"], "entailment", 6),
    "rte": (["train-0", _text(0), _text(1), "not_entailment"], "entailment", 6),
    "wnli": (["train-0", _text(0), _text(1), "1"], "0", 6),
    "qqp": (["train-700", _text(0), _text(1), "0"], "0", 6),
    "sts-b": (["train-0", _text(0), _text(1), 5.0], 0.0, 6),
}


@pytest.mark.parametrize("task", sorted(GLUE_EXTRA))
def test_glue_extra_processor_reads_its_layout(task, glue):
    first, test_label, num_train = GLUE_EXTRA[task]
    processor = cp.get_processor(task)
    data_dir = glue["dirs"][task]
    train = processor.get_train_examples(data_dir)
    assert len(train) == num_train
    assert _as_lists(train[:1]) == [first]
    if task == "sst-2":
        assert [e.text_a for e in train] == [_text(i) for i in range(6)]
    else:
        # The long pair, the empty and the blank text_b read as written.
        assert [(e.text_a, e.text_b) for e in train] == _pairs(6)
    dev = processor.get_dev_examples(data_dir)
    assert dev and all(e.guid.startswith("dev-") for e in dev)
    test = processor.get_test_examples(data_dir)
    assert test and all(e.label == test_label and e.guid.startswith("test-") for e in test)
    if task == "sst-2":
        assert [e.text_a for e in test] == [_text(40 + i) for i in range(3)]
    else:
        assert [(e.text_a, e.text_b) for e in test] == _pairs(5, 40)
    for example in train + dev:
        if processor.is_regression:
            assert isinstance(example.label, float)
        else:
            assert example.label in processor.get_labels()


def test_sst2_rows_and_aliases(glue):
    train = cp.get_processor("SST2").get_train_examples(glue["dirs"]["sst-2"])
    assert [e.text_a for e in train] == [_text(i) for i in range(6)]
    assert [e.label for e in train] == ["0", "1"] * 3
    assert [e.guid for e in train] == ["train-%d" % i for i in range(1, 7)]
    assert type(cp.get_processor("stsb")) is type(cp.get_processor("STS-B"))


def test_qqp_skips_broken_rows_with_a_warning(glue):
    with lib.absl_log_lines() as log_lines:
        train = cp.QqpProcessor().get_train_examples(glue["dirs"]["qqp"])
    assert [e.guid for e in train] == ["train-%d" % (700 + i) for i in range(6)]
    assert any("skipped 1 row" in line and "line 5" in line for line in log_lines)


def test_stsb_scores_are_floats_in_the_records(glue, tmp_path):
    processor = cp.get_processor("sts-b")
    assert processor.is_regression
    examples = processor.get_train_examples(glue["dirs"]["sts-b"])
    assert [e.label for e in examples] == [5.0, 3.8, 0.0, 2.25, 4.6, 1.0]
    out = str(tmp_path / "train.tf_record")
    cd.file_based_convert_examples_to_features(
        examples + [cd.PaddingInputExample()], processor.get_labels(), MAX_SEQ_LENGTH,
        _tokenizer(glue), out, is_regression=True)
    spec = cd.name_to_features(MAX_SEQ_LENGTH, is_regression=True)
    decoded = [decode_record(r, spec) for r in tf.data.TFRecordDataset(out)]
    assert [d["label_ids"].dtype for d in decoded] == [tf.float32] * 7
    np.testing.assert_array_equal([d["label_ids"].numpy() for d in decoded],
                                  np.float32([5.0, 3.8, 0.0, 2.25, 4.6, 1.0, 0.0]))
    assert [int(d["is_real_example"]) for d in decoded] == [1] * 6 + [0]
    assert decoded[0]["input_ids"].dtype == tf.int32
    assert decoded[0]["input_ids"].shape == [MAX_SEQ_LENGTH]
    raw = tf.train.Example.FromString(lib.read_records(out)[0]).features.feature
    assert list(raw["label_ids"].float_list.value) == [5.0]


def test_decode_record_casts_to_int32_as_the_original(glue, tmp_path):
    examples = cp.MrpcProcessor().get_dev_examples(glue["dirs"]["mrpc"])[:3]
    out = str(tmp_path / "eval.tf_record")
    cd.file_based_convert_examples_to_features(
        examples + [cd.PaddingInputExample()], ["0", "1"], MAX_SEQ_LENGTH, _tokenizer(glue), out)
    decoded = [decode_record(r, cd.name_to_features(MAX_SEQ_LENGTH))
               for r in tf.data.TFRecordDataset(out)]
    features = [cd.convert_single_example(5, e, ["0", "1"], MAX_SEQ_LENGTH, _tokenizer(glue))
                for e in examples]
    for d, f in zip(decoded, features):
        assert {k: v.dtype for k, v in d.items()} == {k: tf.int32 for k in cd.FEATURE_NAMES}
        assert d["input_ids"].numpy().tolist() == f.input_ids
        assert d["segment_ids"].numpy().tolist() == f.segment_ids
        assert int(d["label_ids"]) == f.label_id
    padding = decoded[-1]
    assert int(padding["is_real_example"]) == 0 and not padding["input_mask"].numpy().any()


def test_records_are_canonical_and_reproducible(glue, tmp_path):
    examples = cp.ColaProcessor().get_train_examples(glue["dirs"]["cola"])
    paths = [str(tmp_path / ("r%d.tf_record" % i)) for i in range(2)]
    for path in paths:
        cd.file_based_convert_examples_to_features(examples, ["0", "1"], MAX_SEQ_LENGTH,
                                                   _tokenizer(glue), path)
    records = lib.read_records(paths[0])
    assert records == lib.canonical_records(paths[0])
    with open(paths[0], "rb") as f1, open(paths[1], "rb") as f2:
        assert f1.read() == f2.read()
    assert sorted(os.listdir(str(tmp_path))) == ["r0.tf_record", "r1.tf_record"]


# --------------------------------------------------------------------------
# Registry.
# --------------------------------------------------------------------------

def test_registry_knows_the_glue_tasks():
    assert set(cp.PROCESSORS) >= {"cola", "mnli", "mrpc", "xnli", "sst-2", "sst2", "qnli",
                                  "qqp", "rte", "wnli", "sts-b", "stsb"}
    assert isinstance(cp.get_processor("MRPC"), cp.MrpcProcessor)  # lower-cased
    assert isinstance(cp.get_processor("CoLA"), cp.ColaProcessor)
    with pytest.raises(UserError) as e:
        cp.get_processor("Nope")
    message = str(e.value)
    assert message.startswith("Task not found: nope (known: cola, mnli, mrpc, xnli")
    assert "sts-b" in message and "\n" not in message


def test_a_user_task_is_one_small_class(tmp_path, monkeypatch):
    monkeypatch.setattr(cp, "PROCESSORS", type(cp.PROCESSORS)(cp.PROCESSORS))

    class SentimentProcessor(cp.DataProcessor):
        files = {"train": "reviews.tsv", "dev": "reviews_dev.tsv"}
        header = False

        def get_labels(self):
            return ["neg", "pos"]

        def create_example(self, row, set_type):
            text, label = row.columns(1, 0)
            return cd.InputExample("%s-%d" % (set_type, row.index), text, None,
                                   self.check_label(label, row))

    cp.register_processor("Sentiment", SentimentProcessor)
    _write(str(tmp_path / "reviews.tsv"), [["pos", 'A "great" film.'], ["neg", "Dull."]])
    processor = cp.get_processor("sentiment")
    assert _as_lists(processor.get_train_examples(str(tmp_path))) == [
        ["train-0", 'A "great" film.', None, "pos"], ["train-1", "Dull.", None, "neg"]]
    with pytest.raises(UserError, match=r"no reviews_dev\.tsv \(the Sentiment task reads "
                                        r"reviews\.tsv and reviews_dev\.tsv\)"):
        processor.get_dev_examples(str(tmp_path))
    with pytest.raises(UserError, match="the Sentiment task has no test examples"):
        processor.get_test_examples(str(tmp_path))
    with pytest.raises(UserError, match="already names SentimentProcessor"):
        cp.register_processor("sentiment", cp.MrpcProcessor)
    cp.register_processor("sentiment", cp.MrpcProcessor, replace=True)
    assert isinstance(cp.get_processor("sentiment"), cp.MrpcProcessor)


# --------------------------------------------------------------------------
# Bad input: one line that names the culprit.
# --------------------------------------------------------------------------

def test_missing_file_names_data_dir_file_and_task(tmp_path):
    with pytest.raises(UserError) as e:
        cp.get_processor("mrpc").get_train_examples(str(tmp_path))
    assert str(e.value) == ("--data_dir=%s: no train.tsv (the MRPC task reads train.tsv, "
                            "dev.tsv and test.tsv)" % tmp_path)
    with pytest.raises(UserError, match=r"no multinli/multinli\.train\.zh\.tsv \(the XNLI"):
        cp.XnliProcessor().get_train_examples(str(tmp_path))


def test_short_row_names_file_line_and_columns(tmp_path):
    _write(str(tmp_path / "dev.tsv"),
           [["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
            ["1", "1", "2", "a", "b"], ["0", "3", "only four columns"]])
    with pytest.raises(UserError) as e:
        cp.MrpcProcessor().get_dev_examples(str(tmp_path))
    assert str(e.value) == (
        "%s line 3: 3 tab-separated column(s), but the MRPC task reads column(s) 4, 5 "
        "(1-based), so it needs at least 5" % (tmp_path / "dev.tsv"))
    # A blank line is a row without columns (the original: IndexError).
    _write(str(tmp_path / "train.tsv"), [["gj04", "1", "", "Fine."], []])
    with pytest.raises(UserError, match=r"train\.tsv line 2: 0 tab-separated column"):
        cp.ColaProcessor().get_train_examples(str(tmp_path))


def test_unknown_label_names_file_line_label_and_labels(tmp_path):
    _write(str(tmp_path / "train.tsv"), [["gj04", "1", "", "Fine."], ["gj04", "yes", "", "Bad."]])
    with pytest.raises(UserError) as e:
        cp.ColaProcessor().get_train_examples(str(tmp_path))
    assert str(e.value) == ("%s line 2: label 'yes' is not one of the CoLA task's labels "
                            "'0', '1'" % (tmp_path / "train.tsv"))
    _write(str(tmp_path / "dev.tsv"), [["i", "s1", "s2", "score"], ["0", "a", "b", "high"]])
    stsb = cp.StsbProcessor()
    stsb.text_columns = (1, 2)
    with pytest.raises(UserError, match=r"dev\.tsv line 2: score 'high' of the STS-B task"):
        stsb.get_dev_examples(str(tmp_path))
    example = cd.InputExample("x-1", "text", None, "maybe")
    with pytest.raises(UserError, match="example x-1: label 'maybe' is not one of the labels"):
        cd.convert_single_example(0, example, ["0", "1"], 8, _FakeTokenizer())


class _FakeTokenizer(object):
    def tokenize(self, text):
        return text.split()

    def convert_tokens_to_ids(self, tokens):
        return [len(t) for t in tokens]


def test_padding_example_is_all_zeros():
    f = cd.convert_single_example(0, cd.PaddingInputExample(), ["0", "1"], 6, _FakeTokenizer())
    assert f == cd.InputFeatures([0] * 6, [0] * 6, [0] * 6, 0, is_real_example=False)
    f = cd.convert_single_example(0, cd.InputExample("g", "a bb", "ccc", "1"), ["0", "1"], 6,
                                  _FakeTokenizer())
    assert f == cd.InputFeatures([5, 1, 2, 5, 3, 5], [1] * 6, [0, 0, 0, 0, 1, 1], 1)


def test_interrupted_write_leaves_no_file(glue, tmp_path, monkeypatch):
    examples = cp.MrpcProcessor().get_train_examples(glue["dirs"]["mrpc"])
    out = str(tmp_path / "train.tf_record")
    with open(out, "wb") as f:
        f.write(b"an earlier run's file")
    calls = {"n": 0}
    convert = cd.convert_single_example

    def failing_convert(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt()
        return convert(*args, **kwargs)

    monkeypatch.setattr(cd, "convert_single_example", failing_convert)
    with pytest.raises(KeyboardInterrupt):
        cd.file_based_convert_examples_to_features(examples, ["0", "1"], MAX_SEQ_LENGTH,
                                                   _tokenizer(glue), out)
    assert os.listdir(str(tmp_path)) == ["train.tf_record"]
    with open(out, "rb") as f:
        assert f.read() == b"an earlier run's file"
    fresh = str(tmp_path / "sub" / "fresh.tf_record")
    calls["n"] = 0
    with pytest.raises(KeyboardInterrupt):
        cd.file_based_convert_examples_to_features(examples, ["0", "1"], MAX_SEQ_LENGTH,
                                                   _tokenizer(glue), fresh)
    assert os.listdir(str(tmp_path / "sub")) == []


@pytest.mark.parametrize("module", [cd, cp], ids=["classifier_data", "classifier_processors"])
def test_module_imports_no_tensorflow_at_import_time(module):
    import ast  # pylint: disable=g-import-not-at-top
    with open(module.__file__, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    top_level = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    names = [a.name for n in top_level for a in n.names] + [
        n.module for n in top_level if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n and n.startswith("tensorflow")]
