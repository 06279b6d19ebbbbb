"""The official SQuAD evaluation (original: `evaluate-v1.1.py` and `evaluate-v2.0.py`).

The SQuAD explorer's scripts, re-stated: the same numbers for the same files.

* `normalize_answer`: lower case, drop ASCII punctuation (`string.punctuation`),
  replace the articles a/an/the (whole words) with a space, collapse white space.
* v1.1 (`evaluate_v1`): per question, exact match and token F1 maxed over the
  gold answers; `{"exact_match", "f1"}`, both * 100, over all questions of the
  file (a question without a prediction scores 0).
* v2.0 (`evaluate_v2`): gold answers that normalize to nothing are dropped, and
  a question left without gold answers has the single gold answer "" (so only
  an empty prediction is right, and F1 is 1 or 0). With no-answer
  probabilities, a prediction whose probability is above `na_prob_thresh`
  counts as "" (default 1.0: never, for probabilities). The result holds
  `exact`, `f1`, `total`, the `HasAns_*` / `NoAns_*` breakdown, and, given
  `na_probs`, the best-threshold search `best_exact`, `best_exact_thresh`,
  `best_f1`, `best_f1_thresh`, under the official key names and order.

run_squad's null_odds.json (null score minus best non-null score) is what
goes in as `na_probs`; `best_f1_thresh` is then the `--null_score_diff_threshold`
to predict with.

Port notes (where the official scripts crash, this module decides):
* v1.1, a question without any gold answer (max() of nothing): UserError naming it.
* v2.0, a question without a prediction (KeyError in the official breakdown):
  it scores 0 in every number and counts in every total, as in v1.1, and is
  never credited as a correct no-answer in the threshold search; a warning
  says how many.
* A no-answer probability file that lacks a predicted question: UserError naming it.
"""

import collections
import json
import re
import string

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


# --------------------------------------------------------------------------
# Answer normalization and per-answer scores.
# --------------------------------------------------------------------------

def normalize_answer(s):
    """Lower text and remove punctuation, articles and extra whitespace."""
    text = s.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _tokens(s):
    return normalize_answer(s).split() if s else []


def _token_f1(prediction_tokens, ground_truth_tokens):
    """Token-overlap F1 of two token lists (0 when nothing is shared)."""
    common = collections.Counter(prediction_tokens) & collections.Counter(ground_truth_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(prediction_tokens)
    recall = 1.0 * num_same / len(ground_truth_tokens)
    return (2 * precision * recall) / (precision + recall)


def f1_score(prediction, ground_truth):
    """v1.1's token F1 (0 when either side normalizes to nothing)."""
    return _token_f1(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def exact_match_score(prediction, ground_truth):
    """v1.1's exact match (a bool)."""
    return normalize_answer(prediction) == normalize_answer(ground_truth)


def compute_exact(a_gold, a_pred):
    """v2.0's exact match (0/1)."""
    return int(normalize_answer(a_gold) == normalize_answer(a_pred))


def compute_f1(a_gold, a_pred):
    """v2.0's F1: if either side is no-answer, 1 if both are, else 0; else token F1."""
    gold_toks = _tokens(a_gold)
    pred_toks = _tokens(a_pred)
    if not gold_toks or not pred_toks:
        return int(gold_toks == pred_toks)
    return _token_f1(pred_toks, gold_toks)


# --------------------------------------------------------------------------
# Walking a dataset.
# --------------------------------------------------------------------------

def _qas(dataset, source="the dataset", require_answers=True):
    """Yields every qa dict of `dataset` (the file's "data" list), in order."""
    if not isinstance(dataset, list):
        raise UserError("%s: 'data' is a JSON %s, not a list" % (source, type(dataset).__name__))
    for i, article in enumerate(dataset):
        if not isinstance(article, dict) or "paragraphs" not in article:
            raise UserError("%s: data[%d] has no key 'paragraphs'" % (source, i))
        for j, paragraph in enumerate(article["paragraphs"]):
            if not isinstance(paragraph, dict) or "qas" not in paragraph:
                raise UserError("%s: data[%d].paragraphs[%d] has no key 'qas'" % (source, i, j))
            for k, qa in enumerate(paragraph["qas"]):
                if not isinstance(qa, dict) or "id" not in qa:
                    raise UserError("%s: data[%d].paragraphs[%d].qas[%d] has no key 'id'"
                                    % (source, i, j, k))
                if require_answers and "answers" not in qa:
                    raise UserError("%s: question %r has no key 'answers'" % (source, qa["id"]))
                yield qa


def _gold_texts(qa, source):
    texts = []
    for answer in qa["answers"]:
        if not isinstance(answer, dict) or "text" not in answer:
            raise UserError("%s: an answer of question %r has no key 'text'" % (source, qa["id"]))
        texts.append(answer["text"])
    return texts


def _prediction(predictions, qid, source):
    prediction = predictions[qid]
    if not isinstance(prediction, str):
        raise UserError("%s: the prediction for question %r is a JSON %s, not a string"
                        % (source, qid, type(prediction).__name__))
    return prediction


def _check_predictions(predictions, source):
    if not isinstance(predictions, dict):
        raise UserError("%s: predictions must be a JSON object {question id: answer text}, "
                        "not a JSON %s" % (source, type(predictions).__name__))


# --------------------------------------------------------------------------
# v1.1
# --------------------------------------------------------------------------

def evaluate_v1(dataset, predictions, source="the dataset", prediction_source="the predictions"):
    """SQuAD v1.1 scores (evaluate-v1.1.py's `evaluate`).

    Args:
      dataset: the data file's "data" list.
      predictions: dict {question id: answer text}.
      source, prediction_source: names for error messages (the files).

    Returns:
      {"exact_match": float, "f1": float}, each 100 * the mean over all
      questions of the dataset; a question without a prediction scores 0 (and
      is logged, as the official script prints it).
    """
    _check_predictions(predictions, prediction_source)
    f1 = exact_match = total = 0
    for qa in _qas(dataset, source):
        total += 1
        if qa["id"] not in predictions:
            logging.warning("Unanswered question %s will receive score 0.", qa["id"])
            continue
        ground_truths = _gold_texts(qa, source)
        if not ground_truths:
            # Port note: evaluate-v1.1.py fails here with max() of nothing.
            raise UserError("%s: question %r has no gold answers (a SQuAD 2.0 file? evaluate it "
                            "as v2.0)" % (source, qa["id"]))
        prediction = _prediction(predictions, qa["id"], prediction_source)
        # Summed in the official order and types (bools for exact match).
        exact_match += max(exact_match_score(prediction, g) for g in ground_truths)
        f1 += max(f1_score(prediction, g) for g in ground_truths)
    if total == 0:
        raise UserError("%s holds no questions" % (source,))
    exact_match = 100.0 * exact_match / total
    f1 = 100.0 * f1 / total
    return {"exact_match": exact_match, "f1": f1}


# --------------------------------------------------------------------------
# v2.0
# --------------------------------------------------------------------------

def _make_eval_dict(exact_scores, f1_scores, qid_list, total):
    return collections.OrderedDict([
        ("exact", 100.0 * sum(exact_scores[k] for k in qid_list if k in exact_scores) / total),
        ("f1", 100.0 * sum(f1_scores[k] for k in qid_list if k in f1_scores) / total),
        ("total", total),
    ])


def _find_best_thresh(preds, scores, na_probs, qid_to_has_ans, num_missing_no_ans, total):
    """The threshold on na_probs that maximizes the score (evaluate-v2.0.py's).

    Starts from "every question predicted no-answer" and, in increasing order
    of na_prob, switches questions to their answer, keeping the best total.
    """
    num_no_ans = sum(1 for k in qid_to_has_ans if not qid_to_has_ans[k])
    # A question without a prediction is never a correct no-answer.
    cur_score = num_no_ans - num_missing_no_ans
    best_score = cur_score
    best_thresh = 0.0
    qid_list = sorted(na_probs, key=lambda k: na_probs[k])
    for qid in qid_list:
        if qid not in scores:
            continue
        if qid_to_has_ans[qid]:
            diff = scores[qid]
        else:
            if preds[qid]:
                diff = -1
            else:
                diff = 0
        cur_score += diff
        if cur_score > best_score:
            best_score = cur_score
            best_thresh = na_probs[qid]
    return 100.0 * best_score / total, best_thresh


def evaluate_v2(dataset, predictions, na_probs=None, na_prob_thresh=1.0,
                source="the dataset", prediction_source="the predictions",
                na_prob_source="the no-answer probabilities"):
    """SQuAD v2.0 scores (evaluate-v2.0.py's `main`, without the plots).

    Args:
      dataset: the data file's "data" list.
      predictions: dict {question id: answer text}; "" is the no-answer.
      na_probs: dict {question id: float} or None: the model's no-answer
        probability (for run_squad, null_odds.json's score differences). None
        means 0.0 for every question and no threshold search.
      na_prob_thresh: float; a prediction whose na_prob is greater counts as "".
      source, prediction_source, na_prob_source: names for error messages.

    Returns:
      OrderedDict with the official keys: exact, f1, total, then HasAns_exact,
      HasAns_f1, HasAns_total (if any question has answers), NoAns_exact,
      NoAns_f1, NoAns_total (if any has none), and, with `na_probs`,
      best_exact, best_exact_thresh, best_f1, best_f1_thresh.
    """
    _check_predictions(predictions, prediction_source)
    qid_to_has_ans = {}
    exact_raw = {}
    f1_raw = {}
    missing = []
    for qa in _qas(dataset, source):
        qid = qa["id"]
        golds = _gold_texts(qa, source)
        qid_to_has_ans[qid] = bool(golds)
        gold_answers = [a for a in golds if normalize_answer(a)]
        if not gold_answers:
            # For unanswerable questions, only correct answer is empty string
            gold_answers = [""]
        if qid not in predictions:
            missing.append(qid)
            continue
        a_pred = _prediction(predictions, qid, prediction_source)
        # Take max over all gold answers
        exact_raw[qid] = max(compute_exact(a, a_pred) for a in gold_answers)
        f1_raw[qid] = max(compute_f1(a, a_pred) for a in gold_answers)
    if not qid_to_has_ans:
        raise UserError("%s holds no questions" % (source,))
    # Port note: the official script prints "Missing prediction for <id>" and
    # then fails with KeyError; here such a question scores 0 (see module doc).
    missing = [q for q in dict.fromkeys(missing) if q not in exact_raw]
    if missing:
        logging.warning("Missing prediction for %d question(s) (they score 0), e.g. %s",
                        len(missing), missing[0])

    if na_probs is None:
        thresh_probs = {k: 0.0 for k in predictions}
    else:
        if not isinstance(na_probs, dict):
            raise UserError("%s: must be a JSON object {question id: probability}, not a JSON %s"
                            % (na_prob_source, type(na_probs).__name__))
        for qid in exact_raw:
            if qid not in na_probs:
                raise UserError("%s has no entry for question %r" % (na_prob_source, qid))
            if isinstance(na_probs[qid], bool) or not isinstance(na_probs[qid], (int, float)):
                raise UserError("%s: the entry for question %r is %r, not a number"
                                % (na_prob_source, qid, na_probs[qid]))
        thresh_probs = na_probs

    def apply_no_ans_threshold(scores):
        new_scores = {}
        for qid, s in scores.items():
            pred_na = thresh_probs[qid] > na_prob_thresh
            if pred_na:
                new_scores[qid] = float(not qid_to_has_ans[qid])
            else:
                new_scores[qid] = s
        return new_scores

    exact_thresh = apply_no_ans_threshold(exact_raw)
    f1_thresh = apply_no_ans_threshold(f1_raw)

    # The official divides by the number of scored questions; with every
    # question predicted, that is the number of questions.
    all_qids = list(qid_to_has_ans)
    out_eval = _make_eval_dict(exact_thresh, f1_thresh, list(exact_thresh), len(all_qids))
    has_ans_qids = [k for k, v in qid_to_has_ans.items() if v]
    no_ans_qids = [k for k, v in qid_to_has_ans.items() if not v]
    for prefix, qids in (("HasAns", has_ans_qids), ("NoAns", no_ans_qids)):
        if qids:
            new_eval = _make_eval_dict(exact_thresh, f1_thresh, qids, len(qids))
            for k in new_eval:
                out_eval["%s_%s" % (prefix, k)] = new_eval[k]
    if na_probs is not None:
        num_missing_no_ans = sum(1 for q in missing if not qid_to_has_ans[q])
        best_exact, exact_thresh_value = _find_best_thresh(
            predictions, exact_raw, na_probs, qid_to_has_ans, num_missing_no_ans, len(all_qids))
        best_f1, f1_thresh_value = _find_best_thresh(
            predictions, f1_raw, na_probs, qid_to_has_ans, num_missing_no_ans, len(all_qids))
        out_eval["best_exact"] = best_exact
        out_eval["best_exact_thresh"] = exact_thresh_value
        out_eval["best_f1"] = best_f1
        out_eval["best_f1_thresh"] = f1_thresh_value
    return out_eval


# --------------------------------------------------------------------------
# Files.
# --------------------------------------------------------------------------

def _load_json(path, what):
    if not fileio.exists(path):
        raise UserError("%s: no such file (%s)" % (path, what))
    if fileio.isdir(path):
        raise UserError("%s is a directory, not a JSON file (%s)" % (path, what))
    try:
        with fileio.open_file(path, "r") as f:
            return json.load(f)
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError("%s is not JSON (%s): %s" % (path, what, str(e).splitlines()[0])) from None


def _load_dataset(data_file):
    data = _load_json(data_file, "SQuAD data file")
    if not isinstance(data, dict) or "data" not in data:
        raise UserError("%s is not a SQuAD file: the top level has no key 'data'" % (data_file,))
    return data["data"]


def is_version_2(dataset, source="the dataset"):
    """Whether any question of `dataset` carries "is_impossible" (a SQuAD 2.0 file)."""
    return any("is_impossible" in qa for qa in _qas(dataset, source, require_answers=False))


def has_answers(data_file):
    """Whether any question of the SQuAD file carries gold answers (so it can be scored)."""
    dataset = _load_dataset(data_file)
    return any(qa.get("answers") for qa in _qas(dataset, data_file, require_answers=False))


def evaluate_file(data_file, prediction_file, na_prob_file=None, version_2_with_negative=None,
                  na_prob_thresh=1.0, out_file=None):
    """Scores a predictions.json against a SQuAD file, as the official scripts do.

    Args:
      data_file: the SQuAD JSON file with gold answers.
      prediction_file: JSON {question id: answer text} (run_squad's predictions.json).
      na_prob_file: optional JSON {question id: float} (run_squad's
        null_odds.json); v2.0 only.
      version_2_with_negative: True (v2.0), False (v1.1) or None: v2.0 when
        any question carries "is_impossible" or `na_prob_file` is given.
      na_prob_thresh: float, v2.0's --na-prob-thresh.
      out_file: optional path; the result is also written there as one line
        of JSON (the official --out-file), atomically.

    Returns:
      v1.1: {"exact_match", "f1"}; v2.0: the OrderedDict of `evaluate_v2`.
    """
    if out_file:
        fileio.check_writable(out_file, "out_file", directory=False)
    result = _evaluate_file(data_file, prediction_file, na_prob_file, version_2_with_negative,
                            na_prob_thresh)
    if out_file:
        fileio.write_text(out_file, json.dumps(result) + "\n")
    return result


def _evaluate_file(data_file, prediction_file, na_prob_file, version_2_with_negative,
                   na_prob_thresh):
    dataset = _load_dataset(data_file)
    predictions = _load_json(prediction_file, "predictions")
    _check_predictions(predictions, prediction_file)
    if version_2_with_negative is None:
        version_2_with_negative = bool(na_prob_file) or is_version_2(dataset, data_file)
    if not version_2_with_negative:
        if na_prob_file:
            raise UserError("%s: a no-answer probability file is for SQuAD 2.0 only"
                            % (na_prob_file,))
        return evaluate_v1(dataset, predictions, data_file, prediction_file)
    na_probs = _load_json(na_prob_file, "no-answer probabilities") if na_prob_file else None
    return evaluate_v2(dataset, predictions, na_probs, na_prob_thresh,
                       data_file, prediction_file, na_prob_file)
