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

from bert_tf.errors import UserError
from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (
    groups.string("data_file", None,
                  "SQuAD json with gold answers, e.g. dev-v1.1.json or dev-v2.0.json "
                  "(or the first positional argument)."),
    groups.string("prediction_file", None,
                  "Model predictions, JSON {question id: answer text}, e.g. run_squad's "
                  "predictions.json (or the second positional argument)."),
    groups.string("na_prob_file", None,
                  "SQuAD 2.0: model estimates of the no-answer probability, JSON "
                  "{question id: float}, e.g. run_squad's null_odds.json. Adds the "
                  "best-threshold search (best_exact, best_f1 and their thresholds)."),
    groups.float_("na_prob_thresh", 1.0,
                  "SQuAD 2.0: predict \"\" if the no-answer probability exceeds this."),
    groups.boolean("version_2_with_negative", None,
                   "Evaluate as SQuAD 2.0 (True) or 1.1 (False); default: 2.0 if a question "
                   "of --data_file carries \"is_impossible\" or --na_prob_file is given."),
    groups.string("out_file", None, "Also write the result as JSON to this file."),
)

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


def files_from_positional(values, positional):
    """The official scripts' positional `data_file prediction_file` as the two flags."""
    if len(positional) > 2:
        raise UserError("Too many command-line arguments: %s" % " ".join(positional))
    if positional:
        if values["data_file"] or (len(positional) == 2 and values["prediction_file"]):
            raise UserError("Give the files as flags or as positional arguments, not both.")
        values["data_file"] = positional[0]
        if len(positional) == 2:
            values["prediction_file"] = positional[1]
    for name in ("data_file", "prediction_file"):
        if not values[name]:
            raise UserError("--%s is required" % name)
    return []


def report(result, values):
    """The result as the official scripts print it (v1.1: one line; v2.0: indented)."""
    if "exact_match" in result:
        text = json.dumps(result)  # evaluate-v1.1.py
    else:
        text = json.dumps(result, indent=2)  # evaluate-v2.0.py
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.squad.data_evaluate import evaluate_file
    return evaluate_file


TOOL = cli.Tool(__name__, function, FLAGS,
                positional="positional", argv_rewrite=official_argv,
                prepare=files_from_positional, report=report)


def main(argv=None):
    """The command line: `bert-evaluate-squad`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
