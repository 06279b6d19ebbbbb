"""Evaluation on the dev set while training, the best checkpoint, early stopping (new).

The original evaluated once, after training, on whatever the last
checkpoint was (google-research/bert #115, #970 ask for more). With
`DevEval(eval_every_steps=N)`, a fine-tuning run evaluates on its dev set
every N steps and after its last step, and `BestCheckpoint` keeps what that
tells:

  output_dir/eval_history.jsonl   one JSON line per evaluation: global_step,
                                  the results, whether it was the best so far
  output_dir/best/model.ckpt-<N>  the weights of the best evaluation so far
                                  (Google's format: any tool's
                                  --init_checkpoint, the original's Saver)
  output_dir/best/eval_results.txt  its results

and, with `early_stopping_patience=K`, stops training after K evaluations
in a row without a better `best_metric`. The same `BestCheckpoint` serves
`bert_tf.training.Trainer.train` (every fine-tuning tool) and Keras `fit`
(`bert_tf.training.callbacks.BestCheckpointCallback`).

A resumed run reads the history back: the best so far, the evaluations
since it, and whether the run had stopped early (a rerun then trains no
further). An evaluation at a step the history already holds (a run killed
after evaluating and before its next checkpoint) replaces the entries from
that step on.

This module imports TensorFlow only to write a checkpoint.
"""

import dataclasses
import json
import os
from typing import Optional

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.options import option

BEST_DIR = "best"
HISTORY_FILE = "eval_history.jsonl"


@dataclasses.dataclass(frozen=True)
class DevEval(object):
    """When to evaluate on the dev set while training, what ranks the results, when to stop.

    Attributes (the flags of the same names):
      eval_every_steps: 0 (off, as the original) or N: evaluate every N steps
        and after the last one.
      best_metric: the key of the results that ranks evaluations (None: the
        task's `default_best_metric`); a name ending in "loss" is better
        lower, any other higher.
      early_stopping_patience: 0 (never) or K: stop after K evaluations in a
        row without a better `best_metric`.
    """

    eval_every_steps: int = option(
        0,
        "New: while --do_train runs, evaluate on the dev set (run_squad: --predict_file, "
        "which must hold answers) every this many steps and after the last one; keep "
        "the checkpoint with the best --best_metric in output_dir/best/ (Google's format, "
        "with its eval_results.txt) and use it for --do_eval and --do_predict. Every "
        "evaluation is a line of output_dir/eval_history.jsonl and a TensorBoard "
        "summary. 0 (default): off, as the original.",
        lower_bound=0)
    best_metric: Optional[str] = option(
        None,
        "With --eval_every_steps: the result that ranks the evaluations (eval_accuracy, "
        "eval_loss, pearson, spearman, exact_match, f1, ...); a name ending in 'loss' is "
        "better lower, any other higher. Default: the task's (classification: "
        "eval_accuracy; regression: pearson; SQuAD: f1).")
    early_stopping_patience: int = option(
        0,
        "With --eval_every_steps: stop training after this many evaluations in a row "
        "without a better --best_metric (the best checkpoint is kept). 0 (default): "
        "never stop early.",
        lower_bound=0)

    @property
    def enabled(self):
        return bool(self.eval_every_steps)

    def check(self):
        """Raises a one-line `UserError` for values no run can use."""
        for name in ("eval_every_steps", "early_stopping_patience"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UserError("--%s must be a non-negative integer, got %r" % (name, value))
        if not self.enabled:
            for name, default in (("best_metric", None), ("early_stopping_patience", 0)):
                if getattr(self, name) != default:
                    raise UserError("--%s needs --eval_every_steps" % name)


def lower_is_better(metric):
    """Whether a smaller `metric` is better (losses) or a larger one (everything else)."""
    return metric.endswith("loss")


class BestCheckpoint(object):
    """The cadence, the ranking, the best checkpoint and the patience of `DevEval`.

    Args:
      output_dir: the run's directory (the history and `best/` go in it).
      options: a `DevEval` (enabled).
      default_metric: the task's metric when `options.best_metric` is None.
      evaluate: `fn(step) -> {name: number}`: one evaluation on the dev set
        (every worker calls it; the results are the same on each).
      is_chief: whether this process writes.

    Attributes:
      metric: the metric that ranks evaluations.
      history: the evaluations so far (dicts: `global_step`, `results`, `best`,
        and `stopped` on the one that stopped training early).
    """

    def __init__(self, output_dir, options, default_metric, evaluate, is_chief=True):
        options.check()
        if not options.enabled:
            raise ValueError("BestCheckpoint needs DevEval(eval_every_steps > 0)")
        self.output_dir = output_dir
        self.every = int(options.eval_every_steps)
        self.patience = int(options.early_stopping_patience)
        self.metric = options.best_metric or default_metric
        self.evaluate = evaluate
        self.is_chief = is_chief
        self.directory = os.path.join(output_dir, BEST_DIR)
        self.history_file = os.path.join(output_dir, HISTORY_FILE)
        self.history = _read_history(self.history_file)
        self._last_evaluated = self.history[-1]["global_step"] if self.history else None

    # ------------------------------------------------------------- cadence

    def steps_to_next(self, step):
        """Steps from `step` to the next multiple of `eval_every_steps`."""
        return (step // self.every + 1) * self.every - step

    def due(self, step):
        """Whether `step` passed a multiple of `eval_every_steps` since the last evaluation.

        (`>`, as `Checkpoints.due`: Keras's `steps_per_execution` > 1 can pass
        a multiple between two reports.)
        """
        last = self._last_evaluated or 0
        return step // self.every > last // self.every

    def evaluated_at(self, step):
        """Whether the history's last evaluation is at `step` (nothing new to evaluate)."""
        return self._last_evaluated == step

    @property
    def stopped_early(self):
        """The history's last evaluation stopped training early (a rerun trains no further)."""
        return bool(self.history and self.history[-1].get("stopped"))

    # ------------------------------------------------------------- ranking

    def best(self):
        """The best evaluation of the history (a dict), or None."""
        return _best_entry(self.history)

    def best_checkpoint(self):
        """`output_dir/best/model.ckpt-<N>` of the best evaluation, if its files are there."""
        return _best_prefix(self.output_dir, self.history)

    def _prefix(self, step):
        return os.path.join(self.directory, "model.ckpt-%d" % step)

    def _value(self, results):
        if self.metric not in results:
            raise UserError("--best_metric=%s is not a result of this task's evaluation (it has "
                            "%s)" % (self.metric, ", ".join(sorted(k for k in results
                                                                   if k != "global_step"))))
        return float(results[self.metric])

    def _better(self, value, than):
        return value < than if lower_is_better(self.metric) else value > than

    def evaluate_and_record(self, step, save):
        """Evaluates at `step`, ranks the result, keeps the best checkpoint; True: stop training.

        Args:
          step: the global step the model is at.
          save: `fn(prefix)`: writes the model's weights (and `global_step`)
            to the checkpoint `prefix` (the chief's files).

        Returns:
          True when early stopping asks training to stop here.
        """
        # (Here, not at the top: TensorFlow loads with it.)
        from bert_tf.training import output_dir as output_dir_lib  # noqa: E402
        results = {k: v for k, v in self.evaluate(step).items() if k != "global_step"}
        value = self._value(results)
        # A step evaluated before (a run killed after an evaluation, resumed from an
        # earlier checkpoint): what the history holds from it on is replaced.
        replayed = [e for e in self.history if e["global_step"] >= step]
        self.history = [e for e in self.history if e["global_step"] < step]
        if replayed and self.is_chief:
            for entry in replayed:
                if entry.get("best"):
                    _remove_checkpoint(self._prefix(entry["global_step"]))
        previous = self.best()
        is_best = previous is None or self._better(value, float(previous["results"][self.metric]))
        since = 0 if is_best else 1 + sum(
            1 for e in self.history if e["global_step"] > previous["global_step"])
        stop = bool(self.patience and since >= self.patience)
        entry = {"global_step": int(step), "results": {k: float(v) for k, v in results.items()},
                 "best": is_best}
        if stop:
            entry["stopped"] = True
        self.history.append(entry)
        self._last_evaluated = step
        if self.is_chief:
            if is_best:
                prefix = self._prefix(step)
                save(prefix)
                output_dir_lib.write_eval_results(
                    dict(results, global_step=step),
                    os.path.join(self.directory, "eval_results.txt"))
                if previous is not None:
                    _remove_checkpoint(self._prefix(previous["global_step"]))
            fileio.write_text(self.history_file,
                              "".join(json.dumps(e, sort_keys=True) + "\n" for e in self.history))
        best = entry if is_best else previous
        logging.info("Dev evaluation at step %d: %s = %.6g (%s; best: %.6g at step %d)%s",
                     step, self.metric, value, "the best so far" if is_best
                     else "%d evaluation(s) without a better one" % since,
                     best["results"][self.metric], best["global_step"],
                     "; early stopping: %d evaluations without a better %s"
                     % (since, self.metric) if stop else "")
        return stop


def best_checkpoint_in(output_dir):
    """`output_dir/best/model.ckpt-<N>` of its history's best evaluation (what a run with
    --eval_every_steps evaluated and predicted with), if its files are there; else None.
    A loader's reading of a finished run's directory (`bert_tf.training.run_record`)."""
    return _best_prefix(output_dir, _read_history(os.path.join(str(output_dir), HISTORY_FILE)))


def _best_entry(history):
    marked = [entry for entry in history if entry.get("best")]
    return marked[-1] if marked else None


def _best_prefix(output_dir, history):
    entry = _best_entry(history)
    if entry is None:
        return None
    prefix = os.path.join(str(output_dir), BEST_DIR, "model.ckpt-%d" % int(entry["global_step"]))
    return prefix if fileio.exists(prefix + ".index") else None


def _read_history(path):
    """The evaluations of `eval_history.jsonl`, in order ([] without the file)."""
    if not fileio.exists(path):
        return []
    entries = []
    with fileio.open_file(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                int(entry["global_step"])
                dict(entry["results"])
            except (ValueError, KeyError, TypeError) as e:
                raise UserError("%s:%d is not an evaluation line of a bert_tf run (%s); move "
                                "it away to start the history anew" % (path, number, e))
            entries.append(entry)
    return entries


def _remove_checkpoint(prefix):
    """Removes a checkpoint's files (`<prefix>.index`, `<prefix>.data-*`)."""
    directory, name = os.path.split(prefix)
    for file_name in fileio.listdir(directory) or ():
        if file_name.startswith(name + "."):
            fileio.remove_quietly(os.path.join(directory, file_name))
