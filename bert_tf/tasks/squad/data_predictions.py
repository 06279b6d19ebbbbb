"""SQuAD answers from the model's logits (original: `run_squad.py`'s prediction side).

Ports, from google-research/bert `run_squad.py` (same line numbers in pip
bert-tensorflow 1.0.4 and GitHub HEAD):

  RawResult (737)                          write_predictions (741-924)
  get_final_text (927-1020)                _get_best_indexes (1023-1032)
  _compute_softmax (1035-1055)

`write_predictions` turns each feature's start/end logits into the n-best
answers of its example (the best spans of every doc-stride window, mapped
back to the context's words by `get_final_text`, their probabilities a
softmax over the n-best), and writes predictions.json, nbest_predictions.json
and, for SQuAD 2.0, null_odds.json (the null score minus the best non-null
score). The examples and features it reads are `bert_tf.tasks.squad.data`'s.

The library reads no flags: what the original took from `FLAGS`
(`version_2_with_negative`, `null_score_diff_threshold`, `verbose_logging`)
is an argument here. No TensorFlow.

Same output as the original (tests/data/test_squad_predictions.py runs
both): byte-identical predictions.json, nbest_predictions.json and
null_odds.json for the same logits.

Port notes (each also marked `Port note:` where it happens):

* v2.0, an example whose n-best holds no non-null answer (the original
  crashes: `best_non_null_entry` is None, issues #211/#417/#476): predict ""
  and write +Infinity to null_odds.json (the null answer wins at every
  threshold; Python's json and the official evaluate-v2.0.py read it back).
* v2.0, an example without any feature (its context tokenizes to nothing; the
  original raises IndexError): the same as above.
* Every output file is written atomically.
* `write_predictions` also accepts float arrays as logits (it takes them as
  Python floats, exactly what the original's main() passed) and returns the
  predictions.
"""

import collections
import json
import math

from absl import logging

from bert_tf import fileio
from bert_tf import tokenization

# The model's output for one feature: unique_id (int) and the start/end logits
# (sequences of max_seq_length floats).
RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])

_PrelimPrediction = collections.namedtuple(
    "PrelimPrediction", ["feature_index", "start_index", "end_index", "start_logit", "end_logit"])

_NbestPrediction = collections.namedtuple("NbestPrediction", ["text", "start_logit", "end_logit"])


def write_predictions(all_examples, all_features, all_results, n_best_size,
                      max_answer_length, do_lower_case, output_prediction_file,
                      output_nbest_file, output_null_log_odds_file,
                      version_2_with_negative=False, null_score_diff_threshold=0.0,
                      verbose_logging=False):
    """Writes final predictions to the json file and log-odds of null if needed.

    Args:
      all_examples: list of SquadExample (prediction mode).
      all_features: list of InputFeatures made from `all_examples`.
      all_results: iterable of RawResult, one per feature (any order); the
        logits may be lists of floats or float arrays (they are taken as
        Python floats, as the original's main() did).
      n_best_size: int, the number of n-best predictions per question.
      max_answer_length: int, the longest answer in WordPiece tokens.
      do_lower_case: bool, as the tokenizer's (for `get_final_text`).
      output_prediction_file: path of predictions.json ({qas_id: text}).
      output_nbest_file: path of nbest_predictions.json ({qas_id: [{text,
        probability, start_logit, end_logit}, ...]}).
      output_null_log_odds_file: path of null_odds.json ({qas_id: null score
        minus the best non-null score}), written only for v2.0.
      version_2_with_negative: bool, SQuAD 2.0 (null answers).
      null_score_diff_threshold: float; with v2.0, predict "" when the null score
        minus the best non-null score is greater than this.
      verbose_logging: bool; log why `get_final_text` fell back to the whole words.

    Returns:
      The predictions, an OrderedDict {qas_id: answer text} in example order
      (what predictions.json holds).

    Each file is `json.dumps(..., indent=4) + "\\n"`, written atomically; the
    bytes equal the original's for the same logits.
    """
    logging.info("Writing predictions to: %s" % (output_prediction_file))
    logging.info("Writing nbest to: %s" % (output_nbest_file))

    example_index_to_features = collections.defaultdict(list)
    for feature in all_features:
        example_index_to_features[feature.example_index].append(feature)

    unique_id_to_result = {}
    for result in all_results:
        unique_id_to_result[result.unique_id] = result

    all_predictions = collections.OrderedDict()
    all_nbest_json = collections.OrderedDict()
    scores_diff_json = collections.OrderedDict()

    for (example_index, example) in enumerate(all_examples):
        features = example_index_to_features[example_index]

        prelim_predictions = []
        # keep track of the minimum score of null start+end of position 0
        score_null = 1000000  # large and positive
        min_null_feature_index = 0  # the paragraph slice with min mull score
        null_start_logit = 0  # the start logit at the slice with min null score
        null_end_logit = 0  # the end logit at the slice with min null score
        for (feature_index, feature) in enumerate(features):
            if feature.unique_id not in unique_id_to_result:
                raise ValueError("write_predictions: no RawResult for feature unique_id %d "
                                 "(question %r)" % (feature.unique_id, example.qas_id))
            result = unique_id_to_result[feature.unique_id]
            start_logits = _as_floats(result.start_logits)
            end_logits = _as_floats(result.end_logits)
            start_indexes = _get_best_indexes(start_logits, n_best_size)
            end_indexes = _get_best_indexes(end_logits, n_best_size)
            # if we could have irrelevant answers, get the min score of irrelevant
            if version_2_with_negative:
                feature_null_score = start_logits[0] + end_logits[0]
                if feature_null_score < score_null:
                    score_null = feature_null_score
                    min_null_feature_index = feature_index
                    null_start_logit = start_logits[0]
                    null_end_logit = end_logits[0]
            num_tokens = len(feature.tokens)
            token_to_orig_map = feature.token_to_orig_map
            token_is_max_context = feature.token_is_max_context
            for start_index in start_indexes:
                # We could hypothetically create invalid predictions, e.g., predict
                # that the start of the span is in the question. We throw out all
                # invalid predictions. (The tests on start_index alone are hoisted
                # out of the inner loop; the candidates and their order are the
                # original's.)
                if start_index >= num_tokens:
                    continue
                if start_index not in token_to_orig_map:
                    continue
                if not token_is_max_context.get(start_index, False):
                    continue
                for end_index in end_indexes:
                    if end_index >= num_tokens:
                        continue
                    if end_index not in token_to_orig_map:
                        continue
                    if end_index < start_index:
                        continue
                    length = end_index - start_index + 1
                    if length > max_answer_length:
                        continue
                    prelim_predictions.append(
                        _PrelimPrediction(
                            feature_index=feature_index,
                            start_index=start_index,
                            end_index=end_index,
                            start_logit=start_logits[start_index],
                            end_logit=end_logits[end_index]))

        if version_2_with_negative:
            prelim_predictions.append(
                _PrelimPrediction(
                    feature_index=min_null_feature_index,
                    start_index=0,
                    end_index=0,
                    start_logit=null_start_logit,
                    end_logit=null_end_logit))
        prelim_predictions = sorted(
            prelim_predictions,
            key=lambda x: (x.start_logit + x.end_logit),
            reverse=True)

        seen_predictions = {}
        nbest = []
        for pred in prelim_predictions:
            if len(nbest) >= n_best_size:
                break
            if pred.start_index > 0:  # this is a non-null prediction
                # Port note: the original looks the feature up before this
                # test, which raises IndexError for the v2.0 null prediction of
                # an example without features; only non-null predictions need it.
                feature = features[pred.feature_index]
                tok_tokens = feature.tokens[pred.start_index:(pred.end_index + 1)]
                orig_doc_start = feature.token_to_orig_map[pred.start_index]
                orig_doc_end = feature.token_to_orig_map[pred.end_index]
                orig_tokens = example.doc_tokens[orig_doc_start:(orig_doc_end + 1)]
                tok_text = " ".join(tok_tokens)

                # De-tokenize WordPieces that have been split off.
                tok_text = tok_text.replace(" ##", "")
                tok_text = tok_text.replace("##", "")

                # Clean whitespace
                tok_text = tok_text.strip()
                tok_text = " ".join(tok_text.split())
                orig_text = " ".join(orig_tokens)

                final_text = get_final_text(tok_text, orig_text, do_lower_case, verbose_logging)
                if final_text in seen_predictions:
                    continue

                seen_predictions[final_text] = True
            else:
                final_text = ""
                seen_predictions[final_text] = True

            nbest.append(
                _NbestPrediction(
                    text=final_text,
                    start_logit=pred.start_logit,
                    end_logit=pred.end_logit))

        # if we didn't inlude the empty option in the n-best, inlcude it
        if version_2_with_negative:
            if "" not in seen_predictions:
                nbest.append(
                    _NbestPrediction(
                        text="", start_logit=null_start_logit, end_logit=null_end_logit))
        # In very rare edge cases we could have no valid predictions. So we
        # just create a nonce prediction in this case to avoid failure.
        if not nbest:
            nbest.append(_NbestPrediction(text="empty", start_logit=0.0, end_logit=0.0))

        assert len(nbest) >= 1

        total_scores = []
        best_non_null_entry = None
        for entry in nbest:
            total_scores.append(entry.start_logit + entry.end_logit)
            if not best_non_null_entry:
                if entry.text:
                    best_non_null_entry = entry

        probs = _compute_softmax(total_scores)

        nbest_json = []
        for (i, entry) in enumerate(nbest):
            output = collections.OrderedDict()
            output["text"] = entry.text
            output["probability"] = probs[i]
            output["start_logit"] = entry.start_logit
            output["end_logit"] = entry.end_logit
            nbest_json.append(output)

        assert len(nbest_json) >= 1

        if not version_2_with_negative:
            all_predictions[example.qas_id] = nbest_json[0]["text"]
        elif best_non_null_entry is None:
            # Port note: the original crashes here (AttributeError on None,
            # google-research/bert issues #211, #417, #476): the n-best holds
            # no non-empty answer (every candidate span was invalid, or the
            # n-best was filled up before one came). The null answer is then
            # the only answer there is, so predict "" and record the score
            # difference as +inf: the null wins at every threshold (a finite
            # stand-in would claim a margin the model never gave). json writes
            # it as `Infinity`, which Python's json (and the official
            # evaluate-v2.0.py) read back as float("inf").
            logging.info("Question %r: no non-null answer in the n-best; predicting \"\"",
                         example.qas_id)
            scores_diff_json[example.qas_id] = float("inf")
            all_predictions[example.qas_id] = ""
        else:
            # predict "" iff the null score - the score of best non-null > threshold
            score_diff = score_null - best_non_null_entry.start_logit - (
                best_non_null_entry.end_logit)
            scores_diff_json[example.qas_id] = score_diff
            if score_diff > null_score_diff_threshold:
                all_predictions[example.qas_id] = ""
            else:
                all_predictions[example.qas_id] = best_non_null_entry.text

        all_nbest_json[example.qas_id] = nbest_json

    fileio.write_text(output_prediction_file, json.dumps(all_predictions, indent=4) + "\n")
    fileio.write_text(output_nbest_file, json.dumps(all_nbest_json, indent=4) + "\n")
    if version_2_with_negative:
        fileio.write_text(output_null_log_odds_file, json.dumps(scores_diff_json, indent=4) + "\n")

    return all_predictions


def _as_floats(logits):
    """A list of Python floats (the original's main() made them with float(x)).

    Port note: the original's write_predictions needs lists of Python floats
    (float32 sums differ, and json cannot write numpy floats); arrays are
    converted here, exactly as its main() converted them.
    """
    if isinstance(logits, list) and all(type(x) is float for x in logits):
        return logits
    if hasattr(logits, "tolist") and getattr(logits, "dtype", None) is not None:
        # float32 -> float64 is exact, as float(np.float32(x)) is.
        return [float(x) for x in logits.tolist()]
    return [float(x) for x in logits]


def get_final_text(pred_text, orig_text, do_lower_case, verbose_logging=False):
    """Project the tokenized prediction back to the original text.

    When we created the data, we kept track of the alignment between original
    (whitespace tokenized) tokens and our WordPiece tokenized tokens. So
    now `orig_text` contains the span of our original text corresponding to the
    span that we predicted.

    However, `orig_text` may contain extra characters that we don't want in
    our prediction.

    For example, let's say:
      pred_text = steve smith
      orig_text = Steve Smith's

    We don't want to return `orig_text` because it contains the extra "'s".

    We don't want to return `pred_text` because it's already been normalized
    (the SQuAD eval script also does punctuation stripping/lower casing but
    our tokenizer does additional normalization like stripping accent
    characters).

    What we really want to return is "Steve Smith".

    Therefore, we have to apply a semi-complicated alignment heruistic between
    `pred_text` and `orig_text` to get a character-to-charcter alignment. This
    can fail in certain cases in which case we just return `orig_text`.
    """

    def _strip_spaces(text):
        ns_chars = []
        ns_to_s_map = collections.OrderedDict()
        for (i, c) in enumerate(text):
            if c == " ":
                continue
            ns_to_s_map[len(ns_chars)] = i
            ns_chars.append(c)
        ns_text = "".join(ns_chars)
        return (ns_text, ns_to_s_map)

    # We first tokenize `orig_text`, strip whitespace from the result
    # and `pred_text`, and check if they are the same length. If they are
    # NOT the same length, the heuristic has failed. If they are the same
    # length, we assume the characters are one-to-one aligned.
    tokenizer = tokenization.BasicTokenizer(do_lower_case=do_lower_case)

    tok_text = " ".join(tokenizer.tokenize(orig_text))

    start_position = tok_text.find(pred_text)
    if start_position == -1:
        if verbose_logging:
            logging.info("Unable to find text: '%s' in '%s'" % (pred_text, orig_text))
        return orig_text
    end_position = start_position + len(pred_text) - 1

    (orig_ns_text, orig_ns_to_s_map) = _strip_spaces(orig_text)
    (tok_ns_text, tok_ns_to_s_map) = _strip_spaces(tok_text)

    if len(orig_ns_text) != len(tok_ns_text):
        if verbose_logging:
            logging.info("Length not equal after stripping spaces: '%s' vs '%s'",
                         orig_ns_text, tok_ns_text)
        return orig_text

    # We then project the characters in `pred_text` back to `orig_text` using
    # the character-to-character alignment.
    tok_s_to_ns_map = {}
    for (i, tok_index) in tok_ns_to_s_map.items():
        tok_s_to_ns_map[tok_index] = i

    # (The original spells this out for the start, then again for the end.)
    orig_positions = []
    for which, position in (("start", start_position), ("end", end_position)):
        orig_position = None
        if position in tok_s_to_ns_map:
            ns_position = tok_s_to_ns_map[position]
            if ns_position in orig_ns_to_s_map:
                orig_position = orig_ns_to_s_map[ns_position]

        if orig_position is None:
            if verbose_logging:
                logging.info("Couldn't map %s position" % which)
            return orig_text
        orig_positions.append(orig_position)

    orig_start_position, orig_end_position = orig_positions
    output_text = orig_text[orig_start_position:(orig_end_position + 1)]
    return output_text


def _get_best_indexes(logits, n_best_size):
    """Get the n-best logits from a list (indexes, highest logit first; ties in index order)."""
    index_and_score = sorted(enumerate(logits), key=lambda x: x[1], reverse=True)
    return [index for index, _ in index_and_score[:n_best_size]]


def _compute_softmax(scores):
    """Compute softmax probability over raw logits (Python floats, max subtracted)."""
    if not scores:
        return []

    max_score = None
    for score in scores:
        if max_score is None or score > max_score:
            max_score = score

    exp_scores = []
    total_sum = 0.0
    for score in scores:
        x = math.exp(score - max_score)
        exp_scores.append(x)
        total_sum += x

    probs = []
    for score in exp_scores:
        probs.append(score / total_sum)
    return probs
