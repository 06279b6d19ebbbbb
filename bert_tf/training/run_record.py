"""The run record: what a training run's output_dir holds beside its checkpoints (new).

The original's output_dir held checkpoints alone: loading, exporting or
converting the model it trained took `--bert_config_file`, `--vocab_file`,
`--do_lower_case` and the labels again, and a rerun into it with other
training flags quietly changed nothing. A bert_tf training run (the
fine-tuning runs and run_pretraining, with `do_train`) writes, before its
first step, under temporary names then renamed:

  output_dir/bert_config.json   a copy of --bert_config_file (a Hugging Face
                                config.json, or its directory: the BertConfig
                                it reads as, in the original's format)
  output_dir/vocab.txt          a copy of --vocab_file (fine-tuning; a Hugging
                                Face directory: its vocab, one token a line)
  output_dir/bert_tf_run.json   the record (`RECORD_FILE`):
      format            1
      tool              the run that trained: "run_classifier", "run_ner", ...
      task              the `from_pretrained` head of its model: "classifier",
                        "token_classification", "squad", "multiple_choice",
                        "pretraining" (run_pretraining's and run_mlm's), ("hub_classifier":
                        a TF Hub encoder's)
      labels            the label list (classifier, token_classification), else null
      num_labels        the head's outputs (1: regression), else null
      do_lower_case     the tokenizer's casing (null: the run had no tokenizer)
      max_seq_length    the length of every record
      doc_stride        the windows' stride where the task windows, else null
      training_flags    {flag: value}: `TRAINING_FLAGS`' values of the run
      data              {flag: value}: the data it read (recorded, not compared)

so `bert_tf.from_pretrained(output_dir)`, bert-export-saved-model,
bert-convert-checkpoint and bert-fill-mask take the directory alone
(`model_files`).

A rerun into the same output_dir with `do_train` (`RunRecord.check`):

* with the same training flags (and the same config and vocab contents)
  resumes, as before; a finished run is not trained again;
* with another value of a training flag is refused, in one line naming the
  flag, the value given and the value recorded, and how to start a new run:
  a new --output_dir, or --overwrite_output_dir (new), which removes the
  earlier run's files (`clear_run`) before training from the start;
* into an output_dir whose record has no checkpoint yet (a run stopped
  before its first save) writes the record anew;
* into an output_dir of checkpoints without a record (written before the
  record existed) resumes unchecked, and writes no record.

The data's paths (--data_dir, --input_file, --train_file) are recorded but not
compared: a moved directory holds the same data.

Pure Python (no TF): the runs write the record; `bert_tf.pretrained` and the
tools read it through `read_record` and `model_files`, with plain paths.
"""

import json
import os

from absl import logging

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.modeling import huggingface
from bert_tf.modeling.config import BertConfig
from bert_tf.tokenization import vocab as vocab_lib
from bert_tf.training import dev_eval

RECORD_FILE = "bert_tf_run.json"
CONFIG_FILE = "bert_config.json"
VOCAB_FILE = "vocab.txt"
FORMAT = 1

# The flags that decide the weights a run trains (compared on a rerun). A flag
# not listed does not: do_eval, do_predict, eval/predict batch sizes,
# save_checkpoints_steps, iterations_per_loop, the strategy and devices,
# use_xla, num_accumulation_steps and gradient_checkpointing (the same
# update), trim_padding (the same gradients), log_steps, verbosity,
# multi_label_threshold (a decision threshold at prediction), the data's paths.
TRAINING_FLAGS = (
    # The start and the schedule.
    "init_checkpoint", "bert_hub_module_handle", "task_name", "train_batch_size",
    "learning_rate", "num_train_epochs", "warmup_proportion", "num_train_steps",
    "num_warmup_steps",
    # What a record holds.
    "do_lower_case", "max_seq_length", "doc_stride", "max_query_length",
    "max_predictions_per_seq", "multi_label", "version_2_with_negative",
    # How rows are masked (run_mlm, which masks on the fly).
    "masked_lm_prob", "do_whole_word_mask",
    # How it trains: ScaleOut's fields that change the result.
    "seed", "optimizer_type", "mixed_precision", "bucket_by_length",
    # When it stops and which checkpoint is the run's (DevEval).
    "eval_every_steps", "best_metric", "early_stopping_patience",
)

# What a rerun with --overwrite_output_dir removes: a run's own files (names,
# and prefixes of names); anything else in output_dir stays.
_RUN_FILES = (RECORD_FILE, CONFIG_FILE, VOCAB_FILE, "checkpoint", "labels.txt",
              "eval_results.txt", "eval_history.jsonl", "test_results.tsv",
              "eval_predictions.txt", "test_predictions.txt", "predictions.json",
              "nbest_predictions.json", "null_odds.json", "train.tf_record",
              "eval.tf_record", "predict.tf_record")
_RUN_PREFIXES = ("model.ckpt-", "events.out.tfevents.")
_RUN_DIRECTORIES = ("best", "eval")

_NEW_RUN = ("start a new run in a new --output_dir, or pass --overwrite_output_dir (which "
            "removes this run's checkpoints and files)")


def _normalized(value):
    """`value` as the record's JSON gives it back (a float stays a float, a tuple a list)."""
    return json.loads(json.dumps(value))


def _flag_value(value):
    """A flag's value as a command line writes it."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def read_record(directory):
    """The record (a dict) of `directory`'s `bert_tf_run.json`, or None without one.

    Raises:
      UserError: the file is there but is not a bert_tf run record.
    """
    path = os.path.join(str(directory), RECORD_FILE)
    if not fileio.exists(path):
        return None
    try:
        with fileio.open_file(path) as f:
            record = json.load(f)
        if not isinstance(record, dict) or not isinstance(record.get("training_flags"), dict):
            raise ValueError("no training_flags")
    except ValueError as e:
        raise UserError("%s is not a bert_tf run record (%s); move it away to use the "
                        "directory without it" % (path, e))
    return record


def _read_bytes(path):
    with fileio.open_file(path, "rb") as f:
        return f.read()


def config_bytes(bert_config_file):
    """What output_dir's bert_config.json holds for `--bert_config_file`.

    A Google bert_config.json: its bytes. A Hugging Face config.json, or the
    directory that holds it: the `BertConfig` it reads as, in the original's
    format (bert_tf's activation names), so the copy reads back as the same
    config wherever a bert_config.json is read.
    """
    path = os.fspath(bert_config_file)
    if not huggingface.is_hf_directory(path):
        data = _read_bytes(path)
        try:
            if not huggingface.is_hf_config(json.loads(data)):
                return data
        except ValueError:
            return data
    return BertConfig.from_json_file(path).to_json_string().encode("utf-8")


def vocab_bytes(vocab_file):
    """What output_dir's vocab.txt holds for `--vocab_file`: a vocab file's bytes; for a
    Hugging Face directory or tokenizer.json, its vocab (`vocab.load_vocab`), a token a line."""
    path = vocab_lib.vocab_path(vocab_file)
    if not vocab_lib.is_tokenizer_json(path):
        return _read_bytes(path)
    return "".join(token + "\n" for token in vocab_lib.load_vocab(path)).encode("utf-8")


def _same_config(given, recorded):
    try:
        return json.loads(config_bytes(given)) == json.loads(_read_bytes(recorded))
    except ValueError:
        return False


class RunRecord(object):
    """The record a training run writes in its output_dir, and the check of a rerun against it.

    Args:
      output_dir: the run's directory.
      tool: the run's name ("run_classifier", "run_ner", ...).
      task: the `from_pretrained` head of its model.
      training_flags: {flag: value} of the run, `TRAINING_FLAGS` among them
        (others are ignored).
      bert_config_file, vocab_file: the files to copy beside the checkpoints
        (None: none to copy).
      labels: the label list, or None; num_labels: the head's outputs.
      do_lower_case, max_seq_length, doc_stride: the tokenizer's casing and
        the records' length and windows (None where the run has none).
      data: {flag: path} of the data the run reads (recorded, not compared).
      overwrite_output_dir: whether an earlier run in output_dir is removed
        (`clear_run`) instead of being resumed.
    """

    def __init__(self, output_dir, tool, task, training_flags, bert_config_file=None,
                 vocab_file=None, labels=None, num_labels=None, do_lower_case=None,
                 max_seq_length=None, doc_stride=None, data=None, overwrite_output_dir=False):
        self.output_dir = str(output_dir)
        self.tool = tool
        self.task = task
        self.bert_config_file = bert_config_file
        self.vocab_file = vocab_file
        self.overwrite_output_dir = bool(overwrite_output_dir)
        flags = {k: v for k, v in training_flags.items() if k in TRAINING_FLAGS}
        if flags.get("init_checkpoint") and not fileio.is_remote(flags["init_checkpoint"]):
            flags["init_checkpoint"] = os.path.abspath(flags["init_checkpoint"])
        self.record = _normalized({
            "format": FORMAT,
            "tool": tool,
            "task": task,
            "labels": list(labels) if labels is not None else None,
            "num_labels": num_labels,
            "do_lower_case": do_lower_case,
            "max_seq_length": max_seq_length,
            "doc_stride": doc_stride,
            "training_flags": flags,
            "data": dict(data or {}),
        })
        self.write_files = True

    @property
    def path(self):
        return os.path.join(self.output_dir, RECORD_FILE)

    def check(self, latest_checkpoint):
        """Refuses a rerun whose training flags are not the recorded run's; before any write.

        Args:
          latest_checkpoint: output_dir's newest checkpoint, or None.

        Raises:
          UserError: one line naming the flag (or file), the value given and
            the recorded one, and how to start a new run.
        """
        if self.overwrite_output_dir:
            return
        recorded = read_record(self.output_dir)
        if recorded is None:
            if latest_checkpoint:
                # Trained before runs kept a record: resumed unchecked, as before.
                logging.info("%s holds checkpoints without %s: resuming it unchecked, and "
                             "writing no record", self.output_dir, RECORD_FILE)
                self.write_files = False
            return
        if not latest_checkpoint:
            return  # stopped before its first save: nothing trained to keep
        if recorded.get("tool") != self.tool:
            raise UserError("--output_dir=%s holds a %s run (%s), not a %s run: %s"
                            % (self.output_dir, recorded.get("tool"), RECORD_FILE, self.tool,
                               _NEW_RUN))
        given, kept = self.record["training_flags"], recorded["training_flags"]
        for flag in TRAINING_FLAGS:
            if flag == "init_checkpoint" and given.get(flag) is None:
                continue  # a resumed run starts from output_dir: leaving it out changes nothing
            if flag in given and given[flag] != kept.get(flag):
                raise UserError(
                    "--%s=%s: --output_dir=%s holds a run trained with --%s=%s (%s); rerun with "
                    "its flags to resume it, or %s"
                    % (flag, _flag_value(given[flag]), self.output_dir, flag,
                       _flag_value(kept.get(flag)), RECORD_FILE, _NEW_RUN))
        for flag, path, name, same in (
                ("bert_config_file", self.bert_config_file, CONFIG_FILE, _same_config),
                ("vocab_file", self.vocab_file, VOCAB_FILE,
                 lambda a, b: vocab_bytes(a) == _read_bytes(b))):
            kept_path = os.path.join(self.output_dir, name)
            if path and fileio.exists(kept_path) and not same(path, kept_path):
                raise UserError("--%s=%s is not the run's %s in --output_dir=%s; rerun with its "
                                "files to resume it, or %s"
                                % (flag, path, name, self.output_dir, _NEW_RUN))
        self.write_files = False  # the same run: its files stay as written

    def write(self, inputs=None):
        """Writes bert_config.json, vocab.txt and the record in output_dir (each atomically).

        `inputs`: the run's `fileio.InputFiles`, which removes them if the run
        fails before it produces anything. Nothing is written for a resumed
        run (its files are there) or one without a record to keep.
        """
        if not self.write_files:
            return
        add = inputs.add if inputs is not None else (lambda p: p)
        fileio.makedirs(self.output_dir)
        for source, name, contents in ((self.bert_config_file, CONFIG_FILE, config_bytes),
                                       (self.vocab_file, VOCAB_FILE, vocab_bytes)):
            if source:
                target = os.path.join(self.output_dir, name)
                if os.path.abspath(str(source)) != os.path.abspath(target):
                    data = contents(source)
                    with fileio.atomic_write(add(target), "wb") as f:
                        f.write(data)
        fileio.write_text(add(self.path), json.dumps(self.record, indent=2, sort_keys=True)
                          + "\n")


def clear_run(output_dir):
    """Removes an earlier run's files from `output_dir` (--overwrite_output_dir); returns them.

    Its checkpoints, the `checkpoint` state file, the record and its copies,
    the records it wrote, its results and summaries, best/ and eval/ (their
    files); other entries stay.
    """
    removed = []
    names = fileio.listdir(output_dir) or set()
    for name in sorted(names):
        path = os.path.join(str(output_dir), name)
        if name in _RUN_DIRECTORIES and fileio.isdir(path):
            for inner in sorted(fileio.listdir(path) or ()):
                if inner in _RUN_FILES or inner.startswith(_RUN_PREFIXES):
                    fileio.remove_quietly(os.path.join(path, inner))
                    removed.append(os.path.join(name, inner))
        elif name in _RUN_FILES or name.startswith(_RUN_PREFIXES):
            fileio.remove_quietly(path)
            removed.append(name)
    if removed:
        logging.info("--overwrite_output_dir: removed the earlier run's files in %s: %s",
                     output_dir, ", ".join(removed))
    return removed


def model_files(directory):
    """What a loader reads from a training run's output_dir, or None if it holds no record.

    Returns:
      None, or a dict: "record" (the record), "bert_config_file",
      "vocab_file" (None where the run copied none), and "best" (the
      checkpoint prefix under best/ that the run's evaluation and prediction
      used, with --eval_every_steps; else None: the newest checkpoint).
    """
    record = read_record(directory)
    if record is None:
        return None
    directory = str(directory)
    vocab = os.path.join(directory, VOCAB_FILE)
    best = None
    if (record["training_flags"].get("eval_every_steps") or 0) > 0:
        best = dev_eval.best_checkpoint_in(directory)
    return {"record": record, "bert_config_file": os.path.join(directory, CONFIG_FILE),
            "vocab_file": vocab if fileio.exists(vocab) else None, "best": best}


def check_files_agree(run, where, bert_config_file, vocab_file, flag=True):
    """Refuses a config or vocab file given with a recorded directory that is not the run's
    own copy beside its checkpoints (byte for byte).

    Args:
      run: `model_files`' dict; where: how to name the directory in the error.
      bert_config_file, vocab_file: the paths given (None: not given).
      flag: name them as flags (`--x=v`) or arguments (`x='v'`).

    Raises:
      UserError: one line naming the argument, the directory and the run's file.
    """
    for argument, given, kept in (("bert_config_file", bert_config_file,
                                   run["bert_config_file"]),
                                  ("vocab_file", vocab_file, run["vocab_file"])):
        if given is None or kept is None or not fileio.exists(kept):
            continue
        given = os.fspath(given)
        if _read_bytes(given) != _read_bytes(kept):
            name = "--" + argument if flag else argument
            shown = "%s=%s" % (name, given) if flag else "%s=%r" % (name, given)
            raise UserError("%s: %s holds the run's own %s, which differs; leave %s out to "
                            "use it" % (shown, where, os.path.basename(kept), name))


def check_agrees(record, directory, argument, given, recorded_key=None, flag=True):
    """Refuses an argument given with a recorded directory that contradicts the record.

    Args:
      record: `read_record`'s dict; directory: its output_dir.
      argument: the argument's (or flag's) name; given: its value (None:
        not given, nothing to check).
      recorded_key: the record's key (default: `argument`).
      flag: name it as a flag (`--x=v`) or an argument (`x=v`).

    Raises:
      UserError: one line naming the argument, the given and the recorded value.
    """
    if given is None:
        return
    recorded = record.get(recorded_key or argument)
    if recorded is None or _normalized(given) == recorded:
        return
    shown = ("--%s=%s" % (argument, _flag_value(given)) if flag
             else "%s=%r" % (argument, given))
    raise UserError("%s: %s holds a run recorded with %s=%s (%s); leave it out to use the "
                    "recorded one" % (shown, directory, recorded_key or argument,
                                      _flag_value(recorded), RECORD_FILE))
