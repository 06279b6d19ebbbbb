r"""Score SQuAD predictions: the official evaluate-v1.1.py / evaluate-v2.0.py.

  bert-evaluate-squad --data_file=$SQUAD_DIR/dev-v1.1.json \
    --prediction_file=/tmp/squad_base/predictions.json

  bert-evaluate-squad --data_file=$SQUAD_DIR/dev-v2.0.json \
    --prediction_file=/tmp/squad2/predictions.json --na_prob_file=/tmp/squad2/null_odds.json

The official command lines work too:
  bert-evaluate-squad $SQUAD_DIR/dev-v2.0.json predictions.json \
    --na-prob-file null_odds.json

Prints the result as the official scripts do: v1.1 one JSON line
({"exact_match": ..., "f1": ...}), v2.0 `json.dumps(result, indent=2)` (exact,
f1, total, HasAns_*, NoAns_*, and best_* with --na_prob_file). SQuAD 2.0 is
detected from the data file ("is_impossible" on a question) unless
--version_2_with_negative says otherwise.

Also `python -m bert_tf.tools.evaluate_squad`; in a clone, `python tools/evaluate_squad.py`.
"""

import json
import sys

from absl import app
from absl import flags

from bert_tf.runs import cli

flags.DEFINE_string("data_file", None,
                    "SQuAD json with gold answers, e.g. dev-v1.1.json or dev-v2.0.json "
                    "(or the first positional argument).")
flags.DEFINE_string("prediction_file", None,
                    "Model predictions, JSON {question id: answer text}, e.g. run_squad's "
                    "predictions.json (or the second positional argument).")
flags.DEFINE_string("na_prob_file", None,
                    "SQuAD 2.0: model estimates of the no-answer probability, JSON "
                    "{question id: float}, e.g. run_squad's null_odds.json. Adds the "
                    "best-threshold search (best_exact, best_f1 and their thresholds).")
flags.DEFINE_float("na_prob_thresh", 1.0,
                   "SQuAD 2.0: predict \"\" if the no-answer probability exceeds this.")
flags.DEFINE_bool("version_2_with_negative", None,
                  "Evaluate as SQuAD 2.0 (True) or 1.1 (False); default: 2.0 if a question "
                  "of --data_file carries \"is_impossible\" or --na_prob_file is given.")
flags.DEFINE_string("out_file", None, "Also write the result as JSON to this file.")

FLAGS = flags.FLAGS

# The official scripts' option spellings -> ours.
_OFFICIAL_FLAGS = {"--na-prob-file": "--na_prob_file", "-n": "--na_prob_file",
                   "--na-prob-thresh": "--na_prob_thresh", "-t": "--na_prob_thresh",
                   "--out-file": "--out_file", "-o": "--out_file"}


def official_argv(argv):
    """Rewrites the official scripts' dashed options into our flags."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        if name in _OFFICIAL_FLAGS:
            arg = _OFFICIAL_FLAGS[name] + eq + value
        out.append(arg)
    return out


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    from bert_tf.data import squad_evaluate  # pylint: disable=g-import-not-at-top
    from bert_tf.errors import UserError  # pylint: disable=g-import-not-at-top

    positional = argv[1:]
    if len(positional) > 2:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(positional))
    data_file = FLAGS.data_file
    prediction_file = FLAGS.prediction_file
    if positional:
        if data_file or (len(positional) == 2 and prediction_file):
            raise app.UsageError("Give the files as flags or as positional arguments, not both.")
        data_file = positional[0]
        if len(positional) == 2:
            prediction_file = positional[1]
    if not data_file:
        raise UserError("--data_file is required")
    if not prediction_file:
        raise UserError("--prediction_file is required")

    result = squad_evaluate.evaluate_file(
        data_file, prediction_file, na_prob_file=FLAGS.na_prob_file,
        version_2_with_negative=FLAGS.version_2_with_negative,
        na_prob_thresh=FLAGS.na_prob_thresh, out_file=FLAGS.out_file)
    if "exact_match" in result:
        text = json.dumps(result)  # evaluate-v1.1.py
    else:
        text = json.dumps(result, indent=2)  # evaluate-v2.0.py
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def main():
    """The command line: `bert-evaluate-squad`."""
    sys.argv = official_argv(sys.argv)
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
