"""bert_tf.tasks.squad.data_predictions (the original run_squad's write_predictions and helpers).

The `original` test runs Google's run_squad.py (tests/original/squad_oracle.py)
once per module on the synthetic SQuAD files of tests/data/test_squad_data.py
with random logits, and requires our predictions.json, nbest_predictions.json
and null_odds.json to equal the original's byte for byte. The other tests
check the port's decisions where the original crashes, and the helpers.
"""

import json
import os

import numpy as np
import pytest

from bert_tf.tasks.squad import data as squad_data
from bert_tf.tasks.squad import data_evaluate as squad_evaluate
from bert_tf.tasks.squad import data_predictions as squad_predictions
from tests.data.test_squad_data import _ours_features
from tests.data.test_squad_data import _write_json
from tests.data.test_squad_data import squad_files  # noqa: F401  (a fixture)

# Prediction configurations: (name, SQuAD file, v2, do_lower_case, max_seq_length,
# doc_stride, max_query_length, [(n_best_size, max_answer_length,
# null_score_diff_threshold, verbose_logging), ...]).
PREDICT_CONFIGS = [
    ("v1", "dev_v1", False, True, 64, 16, 12,
     [(20, 30, 0.0, False), (5, 4, 0.0, True), (3, 10, 0.0, False)]),
    ("v2", "dev_v2", True, True, 64, 16, 12,
     [(20, 30, 0.0, False), (8, 6, 1.5, False), (10, 8, -2.0, True)]),
    ("v1_cased", "dev_v1", False, False, 48, 8, 10, [(10, 15, 0.0, False)]),
]

PREDICTION_FILES = ("predictions.json", "nbest_predictions.json", "null_odds.json")


def _random_logits(features, max_seq_length, seed):
    """Logits rounded to 0.1 (many ties, so the stable sorts matter), float32.

    Padding gets low logits, as from a trained model; otherwise the n-best of
    a short feature is mostly padding, and the original crashes on v2.0
    examples without a non-null answer (see the test of that case).
    """
    rng = np.random.RandomState(seed)
    n = len(features)
    start = np.round(rng.randn(n, max_seq_length) * 3, 1).astype(np.float32)
    end = np.round(rng.randn(n, max_seq_length) * 3, 1).astype(np.float32)
    for i, f in enumerate(features):
        start[i, len(f.tokens):] -= 12.0
        end[i, len(f.tokens):] -= 12.0
        if i % 3 == 0:  # a confident [CLS]: the null answer wins sometimes
            start[i, 0] += 6.0
            end[i, 0] += 6.0
    return np.array([f.unique_id for f in features], np.int64), start, end


@pytest.fixture(scope="module")
def original_predictions(squad_files):  # noqa: F811
    """Runs every prediction configuration through the original, in one oracle process."""
    from tests.original import run_oracle
    d = squad_files["dir"]
    runs = []
    for name, key, v2, lower, seq, stride, query, settings in PREDICT_CONFIGS:
        _, features = _ours_features(squad_files[key], squad_files["vocab"], False, v2, lower,
                                     seq, stride, query)
        unique_ids, start, end = _random_logits(features, seq, seed=len(name))
        npz = os.path.join(d, name + ".logits.npz")
        np.savez(npz, unique_ids=unique_ids, start_logits=start, end_logits=end)
        predictions = []
        for i, (n_best, max_len, thresh, verbose) in enumerate(settings):
            predictions.append({"n_best_size": n_best, "max_answer_length": max_len,
                                "null_score_diff_threshold": thresh, "verbose_logging": verbose,
                                "out_dir": os.path.join(d, "pred_%s_%d" % (name, i), "original")})
        runs.append({"mode": "predict", "input_file": squad_files[key],
                     "vocab_file": squad_files["vocab"], "do_lower_case": lower,
                     "version_2_with_negative": v2, "max_seq_length": seq, "doc_stride": stride,
                     "max_query_length": query, "logits_npz": npz, "predictions": predictions})
    runs_file = os.path.join(d, "oracle_prediction_runs.json")
    with open(runs_file, "w") as f:
        json.dump(runs, f)
    run_oracle("squad_oracle", runs_file)
    return d


# --------------------------------------------------------------------------
# Against the original.
# --------------------------------------------------------------------------

@pytest.mark.original
@pytest.mark.parametrize("config", PREDICT_CONFIGS, ids=[c[0] for c in PREDICT_CONFIGS])
def test_prediction_files_equal_original(config, squad_files,  # noqa: F811
                                         original_predictions):
    name, key, v2, lower, seq, stride, query, settings = config
    d = squad_files["dir"]
    examples, features = _ours_features(squad_files[key], squad_files["vocab"], False, v2,
                                        lower, seq, stride, query)
    arrays = np.load(os.path.join(d, name + ".logits.npz"))
    # Results as numpy float32 rows (what a model gives), in reverse order.
    results = [squad_predictions.RawResult(int(u), s, e) for u, s, e in zip(
        arrays["unique_ids"], arrays["start_logits"], arrays["end_logits"])][::-1]
    num_empty = 0
    for i, (n_best, max_len, thresh, verbose) in enumerate(settings):
        out_dir = os.path.join(d, "pred_%s_%d" % (name, i))
        ours_dir = os.path.join(out_dir, "ours")
        predictions = squad_predictions.write_predictions(
            examples, features, results, n_best, max_len, lower,
            os.path.join(ours_dir, "predictions.json"),
            os.path.join(ours_dir, "nbest_predictions.json"),
            os.path.join(ours_dir, "null_odds.json"),
            version_2_with_negative=v2, null_score_diff_threshold=thresh,
            verbose_logging=verbose)
        for filename in PREDICTION_FILES:
            ours_file = os.path.join(ours_dir, filename)
            theirs_file = os.path.join(out_dir, "original", filename)
            assert os.path.exists(ours_file) == os.path.exists(theirs_file) == (
                v2 or filename != "null_odds.json"), filename
            if os.path.exists(theirs_file):
                with open(ours_file, "rb") as f1, open(theirs_file, "rb") as f2:
                    assert f1.read() == f2.read(), "%s differs (setting %d)" % (filename, i)
        with open(os.path.join(ours_dir, "predictions.json")) as f:
            assert predictions == json.load(f)
        assert list(predictions) == list(dict.fromkeys(e.qas_id for e in examples))
        assert not [n for n in os.listdir(ours_dir) if ".tmp-" in n]
        if v2:
            num_empty += sum(1 for text in predictions.values() if text == "")
        if key == "dev_v1":
            assert predictions["q_empty"] == "empty"  # no features: the original's nonce
    if v2:
        assert 0 < num_empty < len(settings) * len(predictions)


# --------------------------------------------------------------------------
# Where the original crashes, and the helpers.
# --------------------------------------------------------------------------

def _one_example_features(context, question, max_seq_length=32, v2=True, tmp_path=None):
    path = tmp_path / "one.json"
    _write_json(path, {"data": [{"paragraphs": [{"context": context, "qas": [
        {"id": "only", "question": question, "answers": [], "is_impossible": True}]}]}]})
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat", "on",
                                "mat", "who", "?", "."]) + "\n", encoding="utf-8")
    return _ours_features(str(path), str(vocab), False, v2, True, max_seq_length, 8, 8)


def test_v2_without_a_non_null_answer_predicts_empty(tmp_path):
    """Where the original crashes (best_non_null_entry is None): "" and +inf."""
    examples, features = _one_example_features("The cat sat on the mat.", "Who sat?",
                                               tmp_path=tmp_path)
    (feature,) = features
    seq = len(feature.input_ids)
    start = np.full(seq, -5.0, np.float32)
    end = np.full(seq, -5.0, np.float32)
    start[0] = end[0] = 4.0      # the null answer scores highest ...
    start[6] = end[7] = 1.0      # ... a valid span ("cat sat") comes next
    results = [squad_predictions.RawResult(feature.unique_id, start, end)]
    files = [str(tmp_path / n) for n in PREDICTION_FILES]
    # n_best_size=1: the n-best holds only the null answer.
    predictions = squad_predictions.write_predictions(examples, features, results, 1, 30, True,
                                                      *files, version_2_with_negative=True)
    assert predictions == {"only": ""}
    with open(files[2]) as f:
        assert f.read() == '{\n    "only": Infinity\n}\n'
    with open(files[1]) as f:
        assert [e["text"] for e in json.load(f)["only"]] == [""]
    # With room in the n-best, the usual rule (and a finite difference).
    predictions = squad_predictions.write_predictions(examples, features, results, 2, 30, True,
                                                      *files, version_2_with_negative=True,
                                                      null_score_diff_threshold=100.0)
    assert predictions == {"only": "cat sat"}
    with open(files[2]) as f:
        assert json.load(f) == {"only": 8.0 - 2.0}
    # The official evaluation reads the Infinity back.
    assert squad_evaluate._load_json(files[2], "x") == {"only": 6.0}


def test_v2_example_without_features_predicts_empty(tmp_path):
    """A context that tokenizes to nothing: the original raises IndexError in v2.0."""
    examples, features = _one_example_features("\u0001 \u0002", "Who?", tmp_path=tmp_path)
    assert examples[0].doc_tokens and not features
    files = [str(tmp_path / n) for n in PREDICTION_FILES]
    assert squad_predictions.write_predictions(examples, features, [], 5, 30, True, *files,
                                               version_2_with_negative=True) == {"only": ""}
    with open(files[2]) as f:
        assert json.load(f) == {"only": float("inf")}
    assert squad_predictions.write_predictions(examples, features, [], 5, 30, True,
                                               *files) == {
        "only": "empty"}  # v1.1: the original's nonce answer


def test_get_final_text_and_helpers():
    assert squad_predictions.get_final_text("steve smith", "Steve Smith's", True) == "Steve Smith"
    assert squad_predictions.get_final_text("1895", "(1895-1943).", True) == "1895"
    assert squad_predictions.get_final_text("cafe", "Caf\u00e9,", True) == "Caf\u00e9"
    assert squad_predictions.get_final_text("xyz", "Steve Smith's", True) == "Steve Smith's"
    assert squad_predictions._get_best_indexes([1.0, 3.0, 3.0, 2.0, 3.0], 3) == [1, 2, 4]
    probs = squad_predictions._compute_softmax([1.0, 2.0, 3.0])
    assert probs == pytest.approx(np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum())
    assert squad_predictions._compute_softmax([]) == []


def test_run_squads_names_stay_importable_from_squad_data():
    """RawResult, write_predictions and get_final_text: one object, two places to import it."""
    for name in ("RawResult", "write_predictions", "get_final_text"):
        assert getattr(squad_data, name) is getattr(squad_predictions, name), name
