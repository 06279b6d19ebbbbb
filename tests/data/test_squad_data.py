"""bert_tf.tasks.squad.data and bert_tf.tasks.squad.data_evaluate (the original run_squad's data side).

The `original` tests run Google's run_squad.py (tests/original/squad_oracle.py)
once per module on synthetic SQuAD 1.1 / 2.0 files made of real English
(CPython's pydoc topics) plus hand-written edge cases, and require our
examples, features, TFRecords and first-20 log to equal the original's (the
prediction files: tests/data/test_squad_predictions.py, on these files). The
other tests check the evaluation on hand-computed cases, the port's decisions
where the original fails, bad input and the tool.
"""

import collections
import json
import logging as std_logging
import os
import random
import re
import string
import subprocess
import sys

import pytest
from absl import logging

from bert_tf.tasks.squad import data_evaluate as squad_evaluate
from bert_tf import tokenization
from bert_tf.data import demo_corpus
from bert_tf.tasks.squad import data as squad_data
from bert_tf.data import squad_windows
from bert_tf.errors import UserError
from tests.records import decode_record
from tests.squad_reference import check_is_max_context

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "evaluate_squad.py")

# --------------------------------------------------------------------------
# The synthetic SQuAD files.
# --------------------------------------------------------------------------

# Hand-written contexts: (context, [(question, answer text, occurrence) ...]).
# The answer is the `occurrence`-th match of its text in the context (its
# char offset becomes answer_start). None as the text marks an impossible
# question (v2.0).
EDGE_PARAGRAPHS = [
    ("The leader was John Smith (1895-1943). He was born in Caf\u00e9 Z\u00fcrich, near the "
     "\u535a\u63a8 lake, and walked 10\u202fkm daily. His na\u00efve r\u00e9sum\u00e9 said "
     "\"Steve Smith's\" house was Japanese.",
     [("What year was John Smith born?", "1895", 0),        # inside "(1895-1943)."
      ("Where was the leader born?", "Caf\u00e9 Z\u00fcrich", 0),  # accents, then ","
      ("Which lake was near?", "\u535a\u63a8", 0),             # CJK, one char not in vocab
      ("How far did he walk every day?", "10\u202fkm", 0),     # U+202F splits words
      ("Whose house was it?", "Steve Smith", 0),               # inside "\"Steve Smith's\""
      ("What country?", "Japan", 0),                           # a sub-word of "Japanese."
      ("Who was the leader of the whole country in those long years before?",
       "The leader", 0),                                       # question > max_query_length
      ("Which question has no answer here?", None, 0)]),
    ("  \tLeading  white\nspace, a 12\u00a0percent rate and tabs\tat the end.  ",
     [("What rate?", "12\u00a0percent", 0),   # NBSP: the original cannot find it (skipped)
      ("What is leading?", "Leading", 0),     # the first word (start_position 0)
      ("Where are the tabs?", "at the end.", 0),  # up to the last word
      ("What is not here?", None, 0)]),
]


def _word_spans(text):
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


def _generated_paragraphs(rng):
    """Real-English contexts from pydoc topics with questions on real sub-spans."""
    paragraphs = [" ".join(p) for p in demo_corpus.pydoc_documents("paragraph")]
    medium = [p for p in paragraphs if 25 <= len(p.split()) <= 60][:6]
    long = [p for p in paragraphs if 110 <= len(p.split()) <= 160][:2]
    out = []
    for context in medium + long:
        spans = _word_spans(context)
        qas = []
        num_questions = 3 if context in medium else 6
        for q in range(num_questions):
            i = rng.randrange(len(spans))
            k = rng.randint(1, 4)
            j = min(len(spans), i + k) - 1
            start, end = spans[i][0], spans[j][1]
            answer = context[start:end]
            if q % 2 == 0:
                # Trim punctuation at the ends (what annotators do): the
                # answer is then a part of a whitespace word.
                while answer and answer[0] in string.punctuation:
                    answer, start = answer[1:], start + 1
                while answer and answer[-1] in string.punctuation:
                    answer = answer[:-1]
            if not answer:
                continue
            around = [context[a:b] for a, b in spans[max(0, i - 6):i]]
            question = "What comes after \"%s\"?" % " ".join(around[-4:] or ["the start"])
            qas.append((question, answer, context[:start].count(answer)))
        qas.append(("Is there an answer to question %d?" % len(out), None, 0))
        out.append((context, qas))
    return out


def _squad_json(paragraphs, version, training, empty_context=False):
    """A SQuAD file's JSON: {"version", "data": [{"title", "paragraphs"}]}."""
    data_paragraphs = []
    qid = 0
    for context, qas in paragraphs:
        entries = []
        for question, answer, occurrence in qas:
            qid += 1  # ids are the same in every file made from `paragraphs`
            if answer is None and version == "v1.1":
                continue
            qa = {"id": "q%03d" % qid, "question": question}
            if answer is None:
                qa["answers"] = []
                qa["plausible_answers"] = [{"text": context.split()[0], "answer_start": 0}]
            else:
                start = -1
                for _ in range(occurrence + 1):
                    start = context.index(answer, start + 1)
                assert context[start:start + len(answer)] == answer
                qa["answers"] = [{"text": answer, "answer_start": start}]
                if not training:
                    # Dev files have several gold answers (here: the first word too).
                    first = answer.split()[0]
                    qa["answers"].append({"text": first, "answer_start": start})
            if version == "v2.0":
                qa["is_impossible"] = answer is None
            entries.append(qa)
        data_paragraphs.append({"context": context, "qas": entries})
    if empty_context:
        data_paragraphs.append({"context": " \n ", "qas": [
            {"id": "q_empty", "question": "Is anything here?",
             "answers": [{"text": "nothing", "answer_start": 0}]}]})
    half = len(data_paragraphs) // 2
    return {"version": version, "data": [
        {"title": "Edge_cases", "paragraphs": data_paragraphs[:half]},
        {"title": "Pydoc", "paragraphs": data_paragraphs[half:]}]}


def _write_json(path, obj):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(obj, f, ensure_ascii=False)
    return str(path)


def _write_vocab(path, paragraphs):
    """A small WordPiece vocab from the text: frequent words, letters, digits, pieces."""
    basic = tokenization.BasicTokenizer(do_lower_case=True)
    counts = collections.Counter()
    for context, qas in paragraphs:
        counts.update(basic.tokenize(context))
        for question, _, _ in qas:
            counts.update(basic.tokenize(question))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    # Punctuation, minus a few that become [UNK].
    vocab += [c for c in string.punctuation if c not in "*`~"]
    vocab += [w for w, _ in counts.most_common(150) if w.isalpha() and len(w) > 1]
    vocab += list(string.ascii_lowercase) + list(string.digits)
    vocab += ["##" + c for c in string.ascii_lowercase + string.digits]
    vocab += ["##ing", "##ed", "##er", "##tion", "\u535a"]
    seen = []
    for token in vocab:
        if token not in seen:
            seen.append(token)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(seen) + "\n")
    return str(path)


@pytest.fixture(scope="module")
def squad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("squad")
    paragraphs = EDGE_PARAGRAPHS + _generated_paragraphs(random.Random(12345))
    files = {
        "dir": str(d),
        "train_v1": _write_json(d / "train-v1.1.json", _squad_json(paragraphs, "v1.1", True)),
        "train_v2": _write_json(d / "train-v2.0.json", _squad_json(paragraphs, "v2.0", True)),
        "dev_v1": _write_json(d / "dev-v1.1.json",
                              _squad_json(paragraphs, "v1.1", False, empty_context=True)),
        "dev_v2": _write_json(d / "dev-v2.0.json", _squad_json(paragraphs, "v2.0", False)),
        "vocab": _write_vocab(d / "vocab.txt", paragraphs),
    }
    return files


# Feature configurations: (name, SQuAD file, is_training, v2, do_lower_case,
# max_seq_length, doc_stride, max_query_length).
FEATURE_CONFIGS = [
    ("train_v1", "train_v1", True, False, True, 64, 16, 12),
    ("train_v2", "train_v2", True, True, True, 64, 16, 12),
    ("eval_v1", "dev_v1", False, False, True, 64, 16, 12),
    ("eval_v2_cased", "dev_v2", False, True, False, 48, 8, 10),
]

def _ours_features(input_file, vocab, is_training, v2, do_lower_case, max_seq_length,
                   doc_stride, max_query_length, tf_record=None):
    tokenizer = tokenization.FullTokenizer(vocab, do_lower_case=do_lower_case)
    examples = squad_data.read_squad_examples(input_file, is_training, v2)
    features = []
    writer = squad_data.FeatureWriter(tf_record, is_training) if tf_record else None

    def output_fn(feature):
        features.append(feature)
        if writer:
            writer.process_feature(feature)

    squad_data.convert_examples_to_features(examples, tokenizer, max_seq_length, doc_stride,
                                            max_query_length, is_training, output_fn)
    if writer:
        writer.close()
        assert writer.num_features == len(features)
    return examples, features


class _Capture(std_logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines = []

    def emit(self, record):
        self.lines.extend(record.getMessage().split("\n"))


def _capture_logs(fn):
    capture = _Capture()
    absl_logger = std_logging.getLogger("absl")
    absl_logger.addHandler(capture)
    old_verbosity = logging.get_verbosity()
    logging.set_verbosity(logging.DEBUG)  # the features' dumps (the original's INFO lines)
    try:
        result = fn()
    finally:
        logging.set_verbosity(old_verbosity)
        absl_logger.removeHandler(capture)
    return result, capture.lines


_LOG_PREFIXES = ("*** Example ***", "unique_id: ", "example_index: ", "doc_span_index: ",
                 "tokens: ", "token_to_orig_map: ", "token_is_max_context: ", "input_ids: ",
                 "input_mask: ", "segment_ids: ", "impossible example", "start_position: ",
                 "end_position: ", "answer: ", "Could not find answer: ")


def _data_log(lines):
    return [line for line in lines if line.startswith(_LOG_PREFIXES)]


@pytest.fixture(scope="module")
def original(squad_files):
    """Runs every feature configuration through the original, in one oracle process."""
    from tests.original import run_oracle
    d = squad_files["dir"]
    runs = []
    for name, key, is_training, v2, lower, seq, stride, query in FEATURE_CONFIGS:
        runs.append({"mode": "features", "input_file": squad_files[key],
                     "vocab_file": squad_files["vocab"], "do_lower_case": lower,
                     "version_2_with_negative": v2, "max_seq_length": seq, "doc_stride": stride,
                     "max_query_length": query, "is_training": is_training,
                     "tf_record": os.path.join(d, name + ".original.tf_record"),
                     "json_file": os.path.join(d, name + ".original.json"),
                     "log_file": os.path.join(d, name + ".original.log")})
    runs_file = os.path.join(d, "oracle_runs.json")
    with open(runs_file, "w") as f:
        json.dump(runs, f)
    run_oracle("squad_oracle", runs_file)
    return d


# --------------------------------------------------------------------------
# Against the original.
# --------------------------------------------------------------------------

def _example_json(e):
    return {"qas_id": e.qas_id, "question_text": e.question_text, "doc_tokens": e.doc_tokens,
            "orig_answer_text": e.orig_answer_text, "start_position": e.start_position,
            "end_position": e.end_position, "is_impossible": e.is_impossible}


def _feature_json(f):
    return {"unique_id": f.unique_id, "example_index": f.example_index,
            "doc_span_index": f.doc_span_index, "tokens": f.tokens,
            "token_to_orig_map": [[k, v] for k, v in f.token_to_orig_map.items()],
            "token_is_max_context": [[k, v] for k, v in f.token_is_max_context.items()],
            "input_ids": f.input_ids, "input_mask": f.input_mask, "segment_ids": f.segment_ids,
            "start_position": f.start_position, "end_position": f.end_position,
            "is_impossible": f.is_impossible}


def _records(path):
    import tensorflow as tf
    return [tf.train.Example.FromString(r).SerializeToString(deterministic=True)
            for r in tf.data.TFRecordDataset(path).as_numpy_iterator()]


@pytest.mark.original
@pytest.mark.parametrize("config", FEATURE_CONFIGS, ids=[c[0] for c in FEATURE_CONFIGS])
def test_examples_features_and_records_equal_original(config, squad_files, original):
    import tensorflow as tf
    name, key, is_training, v2, lower, seq, stride, query = config
    d = squad_files["dir"]
    tf_record = os.path.join(d, name + ".ours.tf_record")
    (examples, features), log_lines = _capture_logs(lambda: _ours_features(
        squad_files[key], squad_files["vocab"], is_training, v2, lower, seq, stride, query,
        tf_record=tf_record))
    with open(os.path.join(d, name + ".original.json"), encoding="utf-8") as f:
        theirs = json.load(f)

    ours_examples = json.loads(json.dumps([_example_json(e) for e in examples]))
    assert len(ours_examples) == len(theirs["examples"])
    for a, b in zip(ours_examples, theirs["examples"]):
        assert a == b, a["qas_id"]
    ours_features = json.loads(json.dumps([_feature_json(x) for x in features]))
    assert len(ours_features) == len(theirs["features"])
    for a, b in zip(ours_features, theirs["features"]):
        assert a == b, a["unique_id"]

    # The records: the same Examples, in order (the original's map order
    # varies per process, so both are compared deterministically serialized).
    ours_records = _records(tf_record)
    assert ours_records == _records(os.path.join(d, name + ".original.tf_record"))
    with open(tf_record, "rb") as f1:
        raw = f1.read()
    canonical = os.path.join(d, name + ".canonical.tf_record")
    with tf.io.TFRecordWriter(canonical) as w:
        for r in ours_records:
            w.write(r)
    with open(canonical, "rb") as f2:
        assert raw == f2.read()  # ours is written deterministically already
    # Parsed with the original's spec: int32, and the features' values.
    spec = squad_data.name_to_features(seq, is_training)
    parsed = [decode_record(r, spec) for r in ours_records[:3]]
    for p, f in zip(parsed, features):
        assert all(t.dtype == tf.int32 for t in p.values())
        assert int(p["unique_ids"]) == f.unique_id
        assert p["input_ids"].numpy().tolist() == f.input_ids
        if is_training:
            assert (int(p["start_positions"]), int(p["end_positions"])) == (
                f.start_position, f.end_position)
            assert "is_impossible" not in p
        else:
            assert "start_positions" not in p

    # The log: the skipped answers and the first 20 examples' features.
    with open(os.path.join(d, name + ".original.log"), encoding="utf-8") as f:
        theirs_log = f.read().splitlines()
    assert _data_log(log_lines) == _data_log(theirs_log)

    # What the fixture set out to cover is covered.
    if is_training:
        assert any(line.startswith("Could not find answer") for line in log_lines)
        assert not any(e.qas_id == "q009" for e in examples)  # the NBSP answer
        assert any(f.start_position == 0 and not f.is_impossible for f in features)
        assert any(f.start_position > 0 for f in features)
    if v2 and is_training:
        assert any(e.is_impossible for e in examples)
    assert max(f.doc_span_index for f in features) >= 3
    assert any(not all(f.token_is_max_context.values()) for f in features)


# --------------------------------------------------------------------------
# Our own checks of the data side.
# --------------------------------------------------------------------------

def _reference_improve_answer_span(doc_tokens, input_start, input_end, answer_tokens):
    """The original's quadratic search (run_squad.py:502-510), for comparison."""
    tok_answer_text = " ".join(answer_tokens)
    for new_start in range(input_start, input_end + 1):
        for new_end in range(input_end, new_start - 1, -1):
            if " ".join(doc_tokens[new_start:(new_end + 1)]) == tok_answer_text:
                return (new_start, new_end)
    return (input_start, input_end)


class _ListTokenizer(object):
    def tokenize(self, text):
        return text.split("|") if text else []


def test_fast_answer_span_and_max_context_equal_the_original_searches():
    rng = random.Random(0)
    alphabet = ["a", "b", "##c", "(", ")", "1895"]
    for _ in range(2000):
        doc = [rng.choice(alphabet) for _ in range(rng.randint(1, 12))]
        s = rng.randrange(len(doc))
        e = rng.randrange(s, len(doc)) if rng.random() < 0.9 else s - 1
        answer = [rng.choice(alphabet) for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.5 and e >= s:
            a = rng.randint(s, e)
            answer = doc[a:rng.randint(a, e) + 1]
        got = squad_data._improve_answer_span(doc, s, e, _ListTokenizer(), "|".join(answer))
        assert got == _reference_improve_answer_span(doc, s, e, answer), (doc, s, e, answer)
    # Tokens with spaces (a custom tokenizer) take the original's path.
    doc = ["a b", "c"]
    assert squad_data._improve_answer_span(doc, 0, 1, _ListTokenizer(), "a|b c") == (0, 1)
    assert squad_data._improve_answer_span(doc, 0, 1, _ListTokenizer(), "a b") == (0, 0)

    for _ in range(300):
        n = rng.randint(1, 60)
        spans = squad_windows.doc_spans(n, rng.randint(1, 20), rng.randint(1, 12))
        best = squad_windows.max_context_span_indexes(spans, n)
        for span_index, span in enumerate(spans):
            for position in range(span.start, span.start + span.length):
                assert (best[position] == span_index) == check_is_max_context(
                    spans, span_index, position)


def test_paragraph_tokens_are_shared_but_features_are_not(squad_files):
    examples, features = _ours_features(squad_files["dev_v1"], squad_files["vocab"], False,
                                        False, True, 64, 16, 12)
    assert examples[0].doc_tokens is examples[1].doc_tokens
    f0 = [f for f in features if f.example_index == 0][0]
    f1 = [f for f in features if f.example_index == 1][0]
    assert f0.tokens is not f1.tokens and f0.input_ids is not f1.input_ids
    assert [f.unique_id for f in features] == list(range(1000000000, 1000000000 + len(features)))


def test_read_squad_examples_positions_and_whitespace(squad_files):
    examples = squad_data.read_squad_examples(squad_files["train_v2"], True, True)
    by_id = {e.qas_id: e for e in examples}
    first = by_id["q001"]
    # U+202F splits words; "(1895-1943)." is one whitespace word.
    assert "(1895-1943)." in first.doc_tokens and "10" in first.doc_tokens
    assert first.doc_tokens[first.start_position] == "(1895-1943)."
    assert by_id["q004"].doc_tokens[by_id["q004"].start_position:by_id["q004"].end_position + 1] \
        == ["10", "km"]
    leading = by_id["q010"]
    assert (leading.start_position, leading.end_position) == (0, 0)
    assert leading.doc_tokens[0] == "Leading"
    impossible = by_id["q008"]
    assert (impossible.is_impossible, impossible.start_position, impossible.orig_answer_text) == (
        True, -1, "")
    # Prediction mode reads no answers, even for v2.0.
    for e in squad_data.read_squad_examples(squad_files["dev_v2"], False, True):
        assert (e.start_position, e.end_position, e.orig_answer_text, e.is_impossible) == (
            None, None, None, False)


def test_convert_refuses_a_window_that_cannot_move(squad_files):
    examples = squad_data.read_squad_examples(squad_files["dev_v1"], False)
    tokenizer = tokenization.FullTokenizer(squad_files["vocab"])
    with pytest.raises(UserError, match="must be greater than max_query_length"):
        squad_data.convert_examples_to_features(examples, tokenizer, 10, 4, 8, False,
                                                lambda f: None)


def _bad(tmp_path, obj, is_training=True, v2=False, raw=None):
    path = tmp_path / "bad.json"
    if raw is not None:
        path.write_bytes(raw)
    else:
        path.write_text(json.dumps(obj), encoding="utf-8")
    with pytest.raises(UserError) as info:
        squad_data.read_squad_examples(str(path), is_training, v2)
    message = str(info.value)
    assert "\n" not in message and str(path) in message
    return message


def test_bad_squad_files_name_the_file_and_the_key(tmp_path):
    qa = {"id": "x1", "question": "Why?", "answers": [{"text": "A", "answer_start": 0}]}
    good = {"data": [{"paragraphs": [{"context": "A b.", "qas": [qa]}]}]}
    assert len(squad_data.read_squad_examples(_write_json(tmp_path / "ok.json", good), True)) == 1

    def without(path, key):
        obj = json.loads(json.dumps(good))
        target = obj
        for step in path:
            target = target[step]
        del target[key]
        return obj

    assert "not JSON" in _bad(tmp_path, None, raw=b"{\"data\": [")
    assert "not JSON" in _bad(tmp_path, None, raw=b"\xff\xfe garbage")
    assert "'data'" in _bad(tmp_path, {"version": "1.1"})
    assert "'data'" in _bad(tmp_path, [1, 2])
    assert "'paragraphs'" in _bad(tmp_path, without(["data", 0], "paragraphs"))
    assert "'context'" in _bad(tmp_path, without(["data", 0, "paragraphs", 0], "context"))
    assert "'qas'" in _bad(tmp_path, without(["data", 0, "paragraphs", 0], "qas"))
    qa_path = ["data", 0, "paragraphs", 0, "qas", 0]
    assert "'id'" in _bad(tmp_path, without(qa_path, "id"))
    assert "'question'" in _bad(tmp_path, without(qa_path, "question"))
    assert "'answers'" in _bad(tmp_path, without(qa_path, "answers"))
    assert "'is_impossible'" in _bad(tmp_path, good, v2=True)
    assert "'answer_start'" in _bad(tmp_path, without(qa_path + ["answers", 0], "answer_start"))
    two = json.loads(json.dumps(good))
    two["data"][0]["paragraphs"][0]["qas"][0]["answers"] *= 2
    message = _bad(tmp_path, two)
    assert "For training, each question should have exactly 1 answer." in message
    assert "'x1'" in message
    far = json.loads(json.dumps(good))
    far["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 99
    assert "outside" in _bad(tmp_path, far)
    # Prediction reads no answers: a file without them is fine.
    no_answers = without(qa_path, "answers")
    assert len(squad_data.read_squad_examples(
        _write_json(tmp_path / "pred.json", no_answers), False)) == 1
    with pytest.raises(UserError, match="no such file"):
        squad_data.read_squad_examples(str(tmp_path / "missing.json"), False)


def test_feature_writer_is_atomic(tmp_path):
    feature = squad_data.InputFeatures(1000000000, 0, 0, ["[CLS]", "[SEP]"], {}, {}, [2, 3, 0],
                                       [1, 1, 0], [0, 0, 0], 0, 0, False)
    path = str(tmp_path / "out" / "train.tf_record")
    writer = squad_data.FeatureWriter(path, is_training=True)
    writer.process_feature(feature)
    assert not os.path.exists(path)
    writer.close()
    assert os.path.exists(path) and writer.num_features == 1
    assert os.listdir(tmp_path / "out") == ["train.tf_record"]
    # Left by an exception: nothing under the final name, no temporary file.
    other = str(tmp_path / "out" / "eval.tf_record")
    with pytest.raises(RuntimeError):
        with squad_data.FeatureWriter(other, is_training=False) as w:
            w.process_feature(feature)
            raise RuntimeError("interrupted")
    assert os.listdir(tmp_path / "out") == ["train.tf_record"]
    # An unclosed writer leaves nothing under the final name.
    w = squad_data.FeatureWriter(other, is_training=False)
    w.process_feature(feature)
    assert not os.path.exists(other)
    w.abort()


# --------------------------------------------------------------------------
# The official evaluation.
# --------------------------------------------------------------------------

def _dataset(questions):
    """[(id, [gold texts]), ...] -> a SQuAD "data" list."""
    return [{"paragraphs": [{"context": "irrelevant", "qas": [
        {"id": qid, "question": "?", "answers": [{"text": t, "answer_start": 0} for t in golds]}
        for qid, golds in questions]}]}]


def test_normalize_answer():
    n = squad_evaluate.normalize_answer
    assert n("The  Cat's (hat)!") == "cats hat"
    assert n("An a THE") == ""
    assert n("theater and anthem") == "theater and anthem"  # whole words only
    assert n("  Caf\u00e9\tau lait. ") == "caf\u00e9 au lait"  # no accent stripping
    assert n("1,000-2,000") == "10002000"


def test_evaluate_v1_hand_computed():
    dataset = _dataset([("q1", ["The Eiffel Tower", "Eiffel Tower"]),
                        ("q2", ["Paris, France"]),
                        ("q3", ["an apple a day"]),
                        ("q4", ["red", "blue", "dark blue"])])
    predictions = {"q1": "eiffel tower!", "q2": "in Paris", "q4": "the dark blue sky"}
    result = squad_evaluate.evaluate_v1(dataset, predictions)
    # q1: EM 1, F1 1. q2: {in, paris} vs {paris, france}: P = R = 1/2, F1 1/2.
    # q3: unanswered, 0. q4: best gold "dark blue": P = 2/3, R = 1, F1 = 4/5.
    assert result == {"exact_match": 100.0 * 1 / 4, "f1": 100.0 * (1 + 0.5 + 0.8) / 4}
    assert list(result) == ["exact_match", "f1"]
    with pytest.raises(UserError, match="'q9'.*no gold answers"):
        squad_evaluate.evaluate_v1(_dataset([("q9", [])]), {"q9": "x"})
    with pytest.raises(UserError, match="JSON object"):
        squad_evaluate.evaluate_v1(dataset, ["not", "a", "dict"])


V2_QUESTIONS = [("a", ["Denver Broncos"]), ("b", ["Carolina Panthers"]), ("c", []), ("d", []),
                ("e", ["The"])]
V2_PREDICTIONS = {"a": "Denver Broncos", "b": "the Panthers", "c": "", "d": "Santa Clara",
                  "e": ""}


def test_evaluate_v2_hand_computed():
    dataset = _dataset(V2_QUESTIONS)
    result = squad_evaluate.evaluate_v2(dataset, V2_PREDICTIONS)
    # a: 1/1. b: EM 0, {panthers} vs {carolina, panthers}: P 1, R 1/2, F1 2/3.
    # c: "" right. d: wrong. e: the gold "The" normalizes to nothing -> gold
    # [""], so "" is right (but e counts as HasAns: it has an answer).
    assert list(result) == ["exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total",
                            "NoAns_exact", "NoAns_f1", "NoAns_total"]
    assert result["exact"] == 100.0 * 3 / 5
    assert result["f1"] == 100.0 * (1 + 2 / 3 + 1 + 0 + 1) / 5
    assert (result["HasAns_exact"], result["HasAns_total"]) == (100.0 * 2 / 3, 3)
    assert result["HasAns_f1"] == 100.0 * (1 + 2 / 3 + 1) / 3
    assert (result["NoAns_exact"], result["NoAns_f1"], result["NoAns_total"]) == (50.0, 50.0, 2)

    na_probs = {"a": 0.1, "b": 0.6, "c": 0.9, "d": 0.05, "e": 0.3}
    result = squad_evaluate.evaluate_v2(dataset, V2_PREDICTIONS, na_probs)
    assert result["exact"] == 100.0 * 3 / 5  # thresh 1.0: nothing flips
    # Best threshold: start with every answer null (c, d right: 2), then in
    # order of na_prob switch to the answers: d (0.05) -1 -> 1, a (0.1) +1 -> 2,
    # e (0.3) has-answer with score 1 -> 3 (best: thresh 0.3), b (0.6) +0 for
    # EM (3) / +2/3 for F1 (3.67, best: thresh 0.6), c (0.9) +0.
    assert (result["best_exact"], result["best_exact_thresh"]) == (100.0 * 3 / 5, 0.3)
    assert (result["best_f1"], result["best_f1_thresh"]) == (100.0 * (3 + 2 / 3) / 5, 0.6)
    assert list(result)[-4:] == ["best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"]

    # na_prob_thresh 0.5: b and c count as "" (b wrong, c right).
    result = squad_evaluate.evaluate_v2(dataset, V2_PREDICTIONS, na_probs, na_prob_thresh=0.5)
    assert result["exact"] == result["f1"] == 100.0 * 3 / 5
    assert result["HasAns_f1"] == 100.0 * 2 / 3


def test_evaluate_v2_missing_prediction_scores_zero():
    dataset = _dataset(V2_QUESTIONS)
    predictions = {k: v for k, v in V2_PREDICTIONS.items() if k not in ("a", "c")}
    result = squad_evaluate.evaluate_v2(dataset, predictions,
                                        {"b": 0.6, "d": 0.05, "e": 0.3})
    assert result["total"] == 5 and result["exact"] == 100.0 * 1 / 5
    assert (result["NoAns_exact"], result["HasAns_exact"]) == (0.0, 100.0 / 3)
    # Start: d right (c has no prediction, so it never counts): 1; d -1 -> 0;
    # e +1 -> 1; b +2/3 -> 1.67 (F1 best, thresh 0.6).
    assert (result["best_exact"], result["best_exact_thresh"]) == (20.0, 0.0)
    assert result["best_f1"] == 100.0 * (1 + 2 / 3) / 5
    with pytest.raises(UserError, match="no entry for question 'b'"):
        squad_evaluate.evaluate_v2(dataset, predictions, {"d": 0.05, "e": 0.3})


def test_evaluate_file_detects_the_version_and_has_answers(tmp_path, squad_files):
    v1 = _write_json(tmp_path / "v1.json", {"version": "1.1", "data": _dataset(
        [("q1", ["The Eiffel Tower"]), ("q2", ["Paris"])])})
    preds = _write_json(tmp_path / "p.json", {"q1": "Eiffel Tower", "q2": "Lyon"})
    assert squad_evaluate.evaluate_file(v1, preds) == {"exact_match": 50.0, "f1": 50.0}
    v2_data = _dataset(V2_QUESTIONS)
    for qa in v2_data[0]["paragraphs"][0]["qas"]:
        qa["is_impossible"] = not qa["answers"]
    v2 = _write_json(tmp_path / "v2.json", {"version": "v2.0", "data": v2_data})
    preds2 = _write_json(tmp_path / "p2.json", V2_PREDICTIONS)
    assert squad_evaluate.evaluate_file(v2, preds2)["exact"] == 60.0
    with pytest.raises(UserError, match="no gold answers"):
        squad_evaluate.evaluate_file(v2, preds2, version_2_with_negative=False)
    assert squad_evaluate.has_answers(v1) and squad_evaluate.has_answers(squad_files["dev_v2"])
    no_answers = _write_json(tmp_path / "test.json", {"data": [{"paragraphs": [
        {"context": "c", "qas": [{"id": "t", "question": "?"}]}]}]})
    assert not squad_evaluate.has_answers(no_answers)
    for bad, needle in [(str(tmp_path / "nope.json"), "no such file"),
                        (_write_json(tmp_path / "list.json", [1]), "JSON object")]:
        with pytest.raises(UserError, match=needle):
            squad_evaluate.evaluate_file(v1, bad)
    (tmp_path / "broken.json").write_text("{", encoding="utf-8")
    with pytest.raises(UserError, match="not JSON"):
        squad_evaluate.evaluate_file(str(tmp_path / "broken.json"), preds)
    with pytest.raises(UserError, match="'data'"):
        squad_evaluate.evaluate_file(preds, preds)


def _start_tool(*args):
    env = dict(os.environ, PYTHONPATH=REPO, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.Popen([sys.executable, TOOL] + list(args), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)


def _finish(proc):
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err


def test_tool_prints_the_official_json(tmp_path):
    v2_data = _dataset(V2_QUESTIONS)
    for qa in v2_data[0]["paragraphs"][0]["qas"]:
        qa["is_impossible"] = not qa["answers"]
    data = _write_json(tmp_path / "dev-v2.0.json", {"version": "v2.0", "data": v2_data})
    preds = _write_json(tmp_path / "predictions.json", V2_PREDICTIONS)
    na = _write_json(tmp_path / "null_odds.json",
                     {"a": 0.1, "b": 0.6, "c": 0.9, "d": 0.05, "e": 0.3})
    out_file = str(tmp_path / "out" / "eval.json")
    v1 = _write_json(tmp_path / "dev-v1.1.json", {"version": "1.1", "data": _dataset(
        [("q1", ["The Eiffel Tower"]), ("q2", ["Paris"])])})
    v1_preds = _write_json(tmp_path / "v1_predictions.json", {"q1": "Eiffel Tower", "q2": "Lyon"})
    # The three runs go in parallel (each pays TensorFlow's start-up).
    procs = [
        # The official command line: positional files, --na-prob-file.
        _start_tool(data, preds, "--na-prob-file", na, "--out_file=" + out_file),
        # v1.1 with flags.
        _start_tool("--data_file=" + v1, "--prediction_file=" + v1_preds),
        # A missing file.
        _start_tool("--data_file=" + data, "--prediction_file=" + str(tmp_path / "nope.json")),
    ]
    (rc, out, err), (rc1, out1, err1), (rc2, out2, err2) = [_finish(p) for p in procs]

    assert rc == 0, err[-3000:]
    expected = squad_evaluate.evaluate_file(data, preds, na)
    assert out == json.dumps(expected, indent=2) + "\n"  # as evaluate-v2.0.py prints
    with open(out_file) as f:
        assert json.load(f) == json.loads(json.dumps(expected))

    assert rc1 == 0, err1[-3000:]
    assert out1 == '{"exact_match": 50.0, "f1": 50.0}\n'  # one line, as evaluate-v1.1.py

    assert rc2 == 2
    assert out2 == ""
    assert err2.strip().splitlines()[-1].startswith("error: ")
    assert "nope.json" in err2 and "Traceback" not in err2
    assert len([line for line in err2.splitlines() if line.startswith("error: ")]) == 1
