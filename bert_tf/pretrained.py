"""`from_pretrained`: a released or trained BERT in one call (new; the original took three flags).

The original's tools take the model as three flags (`--bert_config_file`,
`--init_checkpoint`, `--vocab_file`) plus `--do_lower_case`; `from_pretrained`
reads all of them from one path:

  config, model, tokenizer = bert_tf.from_pretrained("uncased_L-12_H-768_A-12")

  path                                  checkpoint               config and vocab
  uncased_L-12_H-768_A-12/ (a Google    bert_model.ckpt          bert_config.json, vocab.txt there
    release: no `checkpoint` file)
  uncased_L-12_H-768_A-12 (a release's  <cache>/<name>/          there (`bert_tf.releases`: downloaded
    name, no such path here)              bert_model.ckpt          and verified once)
  output_dir/ (run_classifier, ...)     its latest model.ckpt-N  there (a training run writes
                                          (best/'s with            them with bert_tf_run.json:
                                          --eval_every_steps)      head, labels, casing), or
                                                                 bert_config_file=, vocab_file=
  .../bert_model.ckpt, .../model.ckpt-N that prefix              its directory, or the same
                                                                 arguments
  a Hugging Face BERT directory         model.safetensors (or    config.json, vocab.txt (or
    (config.json, safetensors)            its shards)              tokenizer.json) there; casing
                                                                 from tokenizer_config.json

The load is strict (`bert_tf.modeling.checkpoint.load_checkpoint`): every variable of
the backbone (and of the pre-training heads) must be in the checkpoint with its
shape. A task head (classifier, SQuAD) that the checkpoint has is loaded (a
fine-tuned run gives back its fine-tuned model); one it lacks (a release)
starts from the original's initializer, ready to be fine-tuned, and the log
says so.
"""

import collections
import os
import re

import tensorflow as tf
from absl import logging

from bert_tf import releases
from bert_tf import tokenization
from bert_tf.tokenization import huggingface as hf_tokenizer
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.modeling import huggingface
from bert_tf.modeling.config import BertConfig
from bert_tf.tasks import registry
from bert_tf.tasks.task_model import PretrainedParts
from bert_tf.training import run_record

CONFIG_NAME = "bert_config.json"
VOCAB_NAME = "vocab.txt"
# The original's pattern for a release's name in a checkpoint path
# (`validate_case_matches_checkpoint`): the directory of `bert_model.ckpt`.
_RELEASE_NAME_RE = re.compile("^.*?([A-Za-z0-9_-]+)/bert_model.ckpt")


class Pretrained(collections.namedtuple("Pretrained", ["config", "model", "tokenizer"])):
    """What `from_pretrained` returns.

    Attributes:
      config: the `BertConfig` read from `bert_config.json`.
      model: a `BertModel`, or with a head a `BertPretrainer`, `BertFillMask`,
        `BertClassifier`, `BertSquad`, `SentenceEmbedder` or
        `BertMultipleChoice`, with the checkpoint's weights.
      tokenizer: the `FullTokenizer` of the vocab, with the model's casing.
    """

    __slots__ = ()


def infer_do_lower_case(init_checkpoint):
    """The casing a checkpoint's name implies; True when it says nothing.

    As the original's `validate_case_matches_checkpoint`, only a release's
    directory name counts (`.../<name>/bert_model.ckpt`): its cased models
    (`cased_L-12_H-768_A-12`, `cased_L-24_H-1024_A-16`,
    `multi_cased_L-12_H-768_A-12`) give False, its uncased ones True. Port
    note: any other release name with a `cased` part (`wwm_cased_L-24_H-1024_A-16`)
    also gives False, where the original's check stays silent; a name
    without one, or a training run's `model.ckpt-N`, gives True (the
    original's `--do_lower_case` default).
    """
    match = _RELEASE_NAME_RE.match(init_checkpoint or "")
    if match is None:
        return True
    return "cased" not in match.group(1).split("_")


def _file_beside(directory, name, argument, checkpoint_path):
    path = os.path.join(directory, name)
    if not tf.io.gfile.exists(path):
        raise UserError("%s: no %s in %s; pass %s= (the %s the checkpoint was trained with)"
                        % (checkpoint_path, name, directory or ".", argument, name))
    return path


def _recorded_run(path):
    """`run_record.model_files` of `path` when it is a training run's output_dir, else None."""
    path = os.fspath(path)
    if not isinstance(path, str) or not os.path.isdir(path):
        return None
    return run_record.model_files(path)


def _locate(path, bert_config_file):
    """(checkpoint_path, hf_directory, directory, bert_config_file) of `from_pretrained`'s path."""
    resolved = releases.resolve(path)
    if isinstance(resolved, str) and resolved and not releases.is_local(resolved):
        raise releases.nowhere_error(resolved)
    checkpoint_path = checkpoint_lib.resolve_checkpoint(resolved, flag=None)
    hf_directory = huggingface.is_hf_directory(checkpoint_path)
    directory = checkpoint_path if hf_directory else os.path.dirname(checkpoint_path)
    if bert_config_file is None:
        bert_config_file = _file_beside(
            directory, huggingface.CONFIG_NAME if hf_directory else CONFIG_NAME,
            "bert_config_file", checkpoint_path)
    return checkpoint_path, hf_directory, directory, bert_config_file


def pretrained_config(path, bert_config_file=None):
    """The `BertConfig` `from_pretrained(path, bert_config_file=...)` would build, no weights read.

    For checks that should come before a model is loaded (a tool's
    --max_seq_length against the position embeddings).
    """
    return BertConfig.from_json_file(os.fspath(_locate(path, bert_config_file)[3]))


def from_pretrained(path, head=None, num_labels=None, do_lower_case=None,
                    bert_config_file=None, vocab_file=None, strict=True, pooling=None,
                    normalize=None, max_seq_length=None):
    """Loads a BERT checkpoint with its config and tokenizer in one call.

    Args:
      path: a Google release directory (`bert_config.json`, `vocab.txt`,
        `bert_model.ckpt.*`), a training run's `output_dir` (its latest
        `model.ckpt-N`), a checkpoint prefix, a Hugging Face BERT directory
        (`config.json`, `model.safetensors` or its shards, `vocab.txt`,
        `tokenizer_config.json`; `docs/huggingface.md`), or the name of a release
        (`bert_tf.releases.RELEASES`) where no path of that name exists: it is
        downloaded and verified once, then read from the cache
        (`$BERT_TF_CACHE`, default `~/.cache/bert_tf`; `BERT_TF_OFFLINE=1`
        uses only the cache). A training run's output_dir holds its
        `bert_tf_run.json` (`bert_tf.training.run_record`): the head (when
        `head` is None), the casing, the labels and the windows come from
        it, its checkpoint is best/'s where the run kept one
        (--eval_every_steps), and bert_config_file=, vocab_file=,
        do_lower_case= and num_labels= given must agree with it.
      head: which model to build and load:
        None: the backbone, `BertModel` (outputs `sequence_output`,
          `pooled_output`, ...); the checkpoint's heads are left out (a
          training run's output_dir: the head of its recorded task; the
          backbone is then the model's `.bert`);
        "pretraining": `BertPretrainer`, the backbone with the masked-LM and
          next-sentence heads (`cls/*`, in every release);
        "fill_mask": `BertFillMask`, the same model and heads with the
          tokenizer: `fill_mask(text)` and `next_sentence_probability(a, b)`;
        "classifier": `BertClassifier` (the original `run_classifier` head);
        "squad": `BertSquad` (the original `run_squad` head);
        "embeddings": `SentenceEmbedder` (the backbone with a pooling, no
          head variables; raw text in, one vector per text: `encode`,
          `similarity`);
        "multiple_choice": `BertMultipleChoice` (the classifier's head with
          one label, a score per choice; bert-run-multiple-choice's), which
          takes raw text too (its preprocessor: `max_seq_length`, default a
          training run's, else 128).
        "token_classification": `BertTokenClassifier` (named entities: the
          classifier head on every token; its labels from the `labels.txt`
          beside the checkpoint, which bert-run-ner writes: `predict_words`,
          `predict_entities`).
        A task head that the checkpoint lacks starts from its initializer.
      num_labels: the classifier's number of labels (1: regression). Taken
        from the checkpoint's head when it has one (token_classification:
        from labels.txt first); needed otherwise.
      do_lower_case: lower-case and strip accents in the tokenizer. None
        infers it from the release's directory name (`infer_do_lower_case`);
        a value that contradicts it raises the original's error.
      bert_config_file: the model's `bert_config.json`, when it is not next
        to the checkpoint (a training run's `output_dir` may not hold one).
      vocab_file: the model's `vocab.txt`, likewise.
      strict: False loads the variables the checkpoint shares with the model
        and leaves the rest as initialized (the original's `init_checkpoint`).
      pooling, normalize, max_seq_length: head="embeddings" only: "cls",
        "mean" or "max"; L2-normalize the vectors; the length texts are
        truncated to (in WordPiece tokens, [CLS] and [SEP] included). None:
        the directory's `embedding_config.json` (written by the embedder's
        `save_pretrained`), else "mean", False, 128. `max_seq_length` is
        head="multiple_choice"'s too (each choice's length; None: 128).

    Returns:
      `Pretrained(config, model, tokenizer)`, a named tuple.

    Raises:
      UserError: one line naming the path, file or argument at fault: a
        name that is no path here and no release (`bert-base-uncased`: what
        it is not, the releases, how to read a Hugging Face model), no
        checkpoint, an unreadable or incomplete one, a missing
        `bert_config.json` or `vocab.txt`, a vocab that does not fit
        `vocab_size` (larger, or smaller by `tokenization.vocab.PADDING_ROWS`
        or more: `check_vocab`) or without `[CLS]`/`[SEP]`/`[UNK]`, a casing
        that contradicts the release's name, an unknown head.

    Example:

      config, model, tokenizer = bert_tf.from_pretrained("uncased_L-12_H-768_A-12")
      tokens = ["[CLS]"] + tokenizer.tokenize("Hello, world!") + ["[SEP]"]
      ids = tf.constant([tokenizer.convert_tokens_to_ids(tokens)])
      pooled = model(ids, training=False)["pooled_output"]        # [1, 768]

      # Fine-tuning from a release: a fresh 3-way classifier on the backbone.
      _, classifier, _ = bert_tf.from_pretrained(
          "uncased_L-12_H-768_A-12", head="classifier", num_labels=3)
      # A run_classifier output_dir is its fine-tuned classifier.
      _, classifier, _ = bert_tf.from_pretrained("mrpc_output/")
    """
    run = _recorded_run(path)
    recorded = run["record"] if run else None
    if recorded is not None:
        run_directory = os.fspath(path)
        if head is None:
            head = recorded.get("task")
            if not registry.is_task(head):
                raise UserError("%s holds a %s run (%s), whose model from_pretrained does not "
                                "build" % (run_directory, recorded.get("tool"),
                                           run_record.RECORD_FILE))
        run_record.check_files_agree(run, run_directory, bert_config_file, vocab_file,
                                     flag=False)
        run_record.check_agrees(recorded, run_directory, "do_lower_case", do_lower_case,
                                flag=False)
        if head == recorded.get("task"):
            run_record.check_agrees(recorded, run_directory, "num_labels", num_labels,
                                    flag=False)
        if do_lower_case is None and recorded.get("do_lower_case") is not None:
            do_lower_case = bool(recorded["do_lower_case"])
        if run["vocab_file"] and vocab_file is None:
            vocab_file = run["vocab_file"]
        if run["best"]:
            # The checkpoint the run's own evaluation and prediction used.
            path = run["best"]
            if bert_config_file is None:
                bert_config_file = run["bert_config_file"]
    cls = registry.model_class(head)
    options = {"num_labels": num_labels, "pooling": pooling, "normalize": normalize,
               "max_seq_length": max_seq_length}
    for key, value in options.items():
        if value is not None and key not in cls.pretrained_options:
            raise UserError("%s=%r is for head=%s only (head=%r)" % (
                key, value, " or ".join(repr(n) for n, c in registry.TASKS.items()
                                        if key in c.pretrained_options), head))
    if num_labels is not None and (isinstance(num_labels, bool) or not isinstance(num_labels, int)
                                   or num_labels < 1):
        raise UserError("num_labels=%r: must be a positive integer" % (num_labels,))
    checkpoint_path, hf_directory, directory, bert_config_file = _locate(path, bert_config_file)
    config = BertConfig.from_json_file(os.fspath(bert_config_file))
    if vocab_file is None:
        vocab_file = directory if hf_directory else _file_beside(
            directory, VOCAB_NAME, "vocab_file", checkpoint_path)
    vocab_file = os.fspath(vocab_file)
    tokenization.check_vocab(vocab_file, config, bert_config_file=bert_config_file)

    if do_lower_case is None and hf_directory:
        do_lower_case, _ = hf_tokenizer.do_lower_case_of(directory)
        logging.info("do_lower_case=%s (from %s's tokenizer_config.json)", do_lower_case,
                     directory)
    elif do_lower_case is None:
        do_lower_case = infer_do_lower_case(checkpoint_path)
        logging.info("do_lower_case=%s (from the checkpoint path %s)", do_lower_case,
                     checkpoint_path)
    elif recorded is None:
        tokenization.validate_case_matches_checkpoint(do_lower_case, checkpoint_path)
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=bool(do_lower_case))

    model = cls.from_parts(PretrainedParts(
        config, checkpoint_path, directory, vocab_file, bool(do_lower_case), tokenizer, recorded,
        {k: v for k, v in options.items() if v is not None}))
    report = checkpoint_lib.load_checkpoint(model, checkpoint_path, strict=strict, flag=None,
                                            allow_missing_heads=registry.fresh_head(head))
    model.vocab_file, model.do_lower_case = vocab_file, bool(do_lower_case)  # save_pretrained's
    fresh = [n for n in report.uninitialized if checkpoint_lib.is_head_variable(n)]
    if registry.fresh_head(head) and fresh:
        logging.info("The %s head is not in %s: it starts from its initializer (%s), "
                     "to be fine-tuned", head, checkpoint_path, ", ".join(fresh))
    return Pretrained(config, model, tokenizer)
