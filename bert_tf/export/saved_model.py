"""SavedModels for TF Serving that take raw text (new: the original exported no SavedModel).

`export_saved_model` rebuilds a classifier (any task of run_classifier's
registry) or the bare encoder from a Google-format checkpoint, in float32
(or, with `mixed_precision="bf16"`, computing in bfloat16: the same
signatures, float32 variables and float32 outputs), and
writes `export_dir/<version>/` (TF Serving's model base-path layout) with a
`tf.Module` holding the model's variables, the exact tokenizer as core TF ops
(`GraphTokenizer`), the vocab as an asset (`assets/vocab.txt`) and these
signatures:

  classifier (num_labels = len(processor.get_labels())):
    serving_default  text_a, text_b: string [batch]  (text_b "" = one segment)
                     -> probabilities float32 [batch, num_labels], label string [batch]
    serve_text_a     text_a: string [batch] -> the same
    serve_features   input_ids, input_mask, segment_ids: int32 [batch, max_seq_length]
                     -> the same
    serve_examples   examples: string [batch] (serialized tf.train.Example in
                     run_classifier's record schema) -> the same
    (regression, sts-b: `score` float32 [batch] instead of probabilities/label;
    multi_label=True: `probabilities` the per-label sigmoid, `predictions`
    int32 [batch, num_labels] multi-hot at the threshold, `label` string
    [batch] the labels over the threshold, comma-separated;
    doc_stride=N, long documents: serving_default and serve_text_a take
    text_a alone, cut each text into run_squad's doc-stride windows, run the
    model on every window and return one row per text from the mean of its
    windows' logits; serve_features and serve_examples score rows as given)

  fill_mask (task_name "fill_mask"; `bert_tf.tasks.pretraining.serving`, any release):
    serving_default  text_a: string [batch] with "[MASK]"s -> token_ids int32, token_strings
                     string, scores float32 [batch, masks, top_k] (the best tokens per
                     [MASK], best first, as `BertFillMask.fill_mask`), mask_positions
                     int32 [batch, masks], num_masks int32 [batch]
    serve_text_a     the same
    serve_text       text: the same (the input's name before)

  encoder (task_name "encoder"):
    serving_default  text_a, text_b -> pooled_output [batch, H],
                     sequence_output [batch, S, H], encoder_outputs [batch, L, S, H]
                     (every layer, stacked), input_mask int32 [batch, S]
    serve_text_a     text_a -> the same
    serve_features   input_ids, input_mask, segment_ids -> pooled_output,
                     sequence_output, encoder_outputs

  embeddings (task_name "embeddings": a sentence embedder, `bert_tf.tasks.embeddings.model`):
    serving_default  text_a: string [batch] -> embeddings float32 [batch, H]
                     (pooling over the real tokens, normalized or not: the
                     checkpoint directory's embedding_config.json, or the
                     `pooling` / `normalize` arguments)
    serve_text_a     the same
    serve_features   input_ids, input_mask, segment_ids -> embeddings

  multiple_choice (task_name "multiple_choice": bert-run-multiple-choice's checkpoints):
    serving_default  context, start: string [batch], endings: string [batch, num_choices]
                     (any number of choices; choice i is the pair (context, start + " " +
                     ending i), start "" = the ending alone) -> probabilities float32
                     [batch, num_choices], predictions int32 [batch] (the chosen index)
    serve_features   input_ids, input_mask, segment_ids: int32 [batch, num_choices,
                     max_seq_length] -> the same

The text signatures give exactly the features `run_classifier.py` builds
(`FullTokenizer` + `build_pair_features`), so their probabilities are those of
`run_classifier.py --do_predict` for the same text of at most `max_text_bytes`
bytes; a longer text is answered as its first `max_text_bytes` bytes
(`graph_tokenizer.cut_texts`), which bounds each text's work and memory, and
its windows where every token is read (doc_stride, squad, ner). The
SavedModel holds no Keras object: it loads and answers where only
`tensorflow` is installed (stock TF Serving). The module also keeps `do_lower_case`, `max_seq_length`
and (classifier) `labels` as variables, and `vocab_file` as the asset.

  path = export_saved_model("mrpc", config, "vocab.txt", True,
                            "mrpc_output/", "/models/mrpc", max_seq_length=128)
  # /models/mrpc/<timestamp>/saved_model.pb, variables/, assets/vocab.txt

  ner (task_name "ner": a checkpoint of bert-run-ner, its labels.txt beside it;
  `bert_tf.tasks.token_classification.serving`):
    serving_default  text_a: string [batch] -> words, labels string [batch, words],
                     word_start, word_end int32 (character offsets), num_words;
                     entity_types, entity_texts string [batch, entities],
                     entity_start, entity_end int32, num_entities (conlleval's chunks);
                     sentences longer than max_seq_length in doc_stride windows,
                     at most max_windows (64) a text: a longer text is answered as
                     its first words that fit in them
    serve_text_a     the same
    serve_text       text: the same (the input's name before)

Every export of text takes it as `text_a` (a pair's second text `text_b`),
the original's InputExample names: each has `serve_text_a`, and its
`serving_default` takes `text_a` (squad's and multiple_choice's take their
task's own texts).

Each kind is one `ExportKind` of `bert_tf.export.kinds.EXPORTS` (its model,
its checkpoint head, its flags, its serving module: each task's in its folder,
`bert_tf/tasks/<task>/serving.py`, the encoder's in `bert_tf.export.kinds`),
read here with no branch per kind.
`format="tfhub"` dispatches to `bert_tf.export.hub.export_tfhub`, `format="onnx"`
(the `serve_features` signature as an ONNX model) to `bert_tf.export.onnx`, and
`quantize="int8"` to `bert_tf.export.quantize.export_int8` (a LiteRT model,
features in), or with `format="onnx"` to `bert_tf.export.onnx.quantize_int8`
(the ONNX model in int8, by ONNX Runtime's `quantize_dynamic`).
"""

import contextlib
import os
import shutil
import tempfile
import time

import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.tasks.classifier import data_processors as classifier_processors
from bert_tf.tasks.token_classification import data as ner_data
from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.export import hub
from bert_tf.export import kinds
from bert_tf.export.kinds import CLASSIFIER
from bert_tf.export.kinds import EXPORTS
from bert_tf.export.kinds import ServingSettings
from bert_tf.tasks.token_classification import serving as ner_export
from bert_tf.export import onnx as onnx_export
from bert_tf.export import quantize as quantize_lib
from bert_tf.item_progress import PhaseLog
from bert_tf.modeling import checkpoint as checkpoint_lib
from bert_tf.modeling import precision
from bert_tf.modeling.config import BertConfig
from bert_tf.tasks.embeddings import model as embeddings
from bert_tf.tasks import registry
from bert_tf.tasks.classifier.model import check_threshold
from bert_tf.tokenization import graph_tokenizer
from bert_tf.tokenization.graph_tokenizer import GraphTokenizer
from bert_tf.training import run_record

FORMATS = ("saved_model", "tfhub", onnx_export.FORMAT)
# The feature rows' length when --max_seq_length is not given (an embedder: its own).
DEFAULT_MAX_SEQ_LENGTH = 128
VOCAB_ASSET = "vocab.txt"


# ---------------------------------------------------------------------------
# Inputs: the task, the checkpoint, the model rebuilt for inference
# ---------------------------------------------------------------------------


def task_spec(task_name, data_dir=None):
    """(kind, labels, is_regression) of a task: a kind of `EXPORTS` by its name, or
    CLASSIFIER for a classifier task's name (`classifier_processors.PROCESSORS`).

    `data_dir`: where a task that reads its labels from data (`multilabel`) finds them.

    Raises:
      UserError: an unknown task, listing the known ones.
    """
    key = (task_name or "").lower()
    if key in EXPORTS and key != CLASSIFIER:
        return key, None, False
    if key not in classifier_processors.PROCESSORS:
        raise UserError("Task not found: %s (known: %s, %s)" % (
            key, ", ".join(classifier_processors.PROCESSORS),
            ", ".join(kind for kind in EXPORTS if kind != CLASSIFIER)))
    processor = classifier_processors.get_processor(key)
    if hasattr(processor, "read_labels"):
        if not data_dir:
            raise UserError("--task_name=%s reads its labels from --data_dir (labels.txt or "
                            "train.tsv): pass --data_dir" % key)
        processor.read_labels(data_dir)
    labels = [str(label) for label in processor.get_labels()]
    return CLASSIFIER, labels, processor.is_regression


def recorded_run(init_checkpoint, task_name=None, bert_config_file=None, vocab_file=None,
                 do_lower_case=None, max_seq_length=None, doc_stride=None):
    """The export's settings from a training run's output_dir (`run_record`), or None.

    When `init_checkpoint` is an output_dir with a `bert_tf_run.json`, the
    flags left out come from it: the task, the config and vocab beside the
    checkpoints, the casing, max_seq_length, doc_stride, the labels, and the
    checkpoint (best/'s with --eval_every_steps, else the newest). A flag
    given must agree with the record: the task (or encoder / embeddings: the
    backbone of any run), the config's and the vocab's contents, the casing,
    max_seq_length and doc_stride. A checkpoint prefix (model.ckpt-N) is
    read without the record.

    Returns:
      None, or a dict of the export's arguments: task_name, bert_config_file,
      vocab_file, do_lower_case, max_seq_length, doc_stride, init_checkpoint,
      labels, multi_label.

    Raises:
      UserError: a flag that disagrees with the record, in one line naming
        the flag, the given and the recorded value.
    """
    if not init_checkpoint or not os.path.isdir(str(init_checkpoint)):
        return None
    run = run_record.model_files(init_checkpoint)
    if run is None:
        return None
    record, directory = run["record"], str(init_checkpoint)
    tool = record.get("tool")
    flags = record["training_flags"]
    # The kind that serves the run's task (a classifier: its --task_name).
    task = record.get("task")
    recorded_task = (flags.get("task_name") if task == CLASSIFIER else next(
        (kind for kind, export in EXPORTS.items() if task and export.task == task), None))
    if recorded_task is None:
        raise UserError("--init_checkpoint=%s holds a %s run (%s), which this export does not "
                        "read: pass a checkpoint prefix with its flags" % (directory, tool,
                                                                           run_record.RECORD_FILE))
    if task_name is None:
        task_name = recorded_task
    elif (task_name.lower() != recorded_task.lower()
          and not _serves_the_backbone(task_name.lower())):
        raise UserError("--task_name=%s: --init_checkpoint=%s holds a %s run of task %s (%s); "
                        "leave --task_name out to use it" % (task_name, directory, tool,
                                                             recorded_task,
                                                             run_record.RECORD_FILE))
    run_record.check_files_agree(
        run, "--init_checkpoint=%s" % directory,
        None if bert_config_file is None or isinstance(bert_config_file, BertConfig)
        else releases.resolve_file(bert_config_file, "bert_config_file"),
        None if vocab_file is None else releases.resolve_file(vocab_file, "vocab_file"))
    for flag, given in (("do_lower_case", do_lower_case), ("max_seq_length", max_seq_length),
                        ("doc_stride", doc_stride)):
        run_record.check_agrees(record, directory, flag, given)
    task_run = task_name.lower() == recorded_task.lower()
    return {
        "task_name": task_name,
        "bert_config_file": bert_config_file or run["bert_config_file"],
        "vocab_file": vocab_file or run["vocab_file"],
        "do_lower_case": (do_lower_case if do_lower_case is not None
                          else record.get("do_lower_case")),
        "max_seq_length": max_seq_length or record.get("max_seq_length"),
        "doc_stride": (doc_stride if doc_stride is not None
                       else record.get("doc_stride") if task_run else None),
        "init_checkpoint": run["best"] or directory,
        "labels": record.get("labels") if task_run else None,
        "multi_label": bool(flags.get("multi_label")) and task_run,
    }


def check_checkpoint(checkpoint_prefix, config, kind, num_labels=None,
                     bert_config_file="bert_config_file", task_name=None):
    """Every variable the model needs is in the checkpoint with its shape (read, not loaded).

    Raises:
      UserError: one line naming the first missing or wrong-shaped variable
        (a missing head says which run writes it).
    """
    # Unreadable or corrupt files are one-line errors of the checkpoint module.
    shapes = checkpoint_lib.list_checkpoint_variables(checkpoint_prefix)
    export = EXPORTS[kind]
    expected = checkpoint_lib.expected_tf1_variables(config, head=export.head,
                                                     num_labels=num_labels)
    for name, shape in expected.items():
        if name not in shapes:
            if checkpoint_lib.head_of(name) in _HEAD_NAMES:
                raise UserError(
                    "--init_checkpoint=%s has no %s head (variable %s is missing): export a "
                    "checkpoint that %s" % (checkpoint_prefix,
                                            _HEAD_NAMES[checkpoint_lib.head_of(name)], name,
                                            export.trained_by.replace("%s", str(task_name))))
            raise UserError("--init_checkpoint=%s: variable %s (shape %s) is missing from the "
                            "checkpoint" % (checkpoint_prefix, name, list(shape)))
        if tuple(shapes[name]) != tuple(shape):
            raise UserError(
                "--init_checkpoint=%s: variable %s has shape %s in the checkpoint but %s "
                "from %s%s" % (checkpoint_prefix, name, list(shapes[name]), list(shape),
                               bert_config_file,
                               " and task %s" % task_name
                               if checkpoint_lib.head_of(name) == CLASSIFIER else ""))


def load_model(kind, config, checkpoint_prefix, num_labels=None, mixed_precision=None,
               multi_label=False):
    """The model of `kind` with every variable from the checkpoint (strict).

    Built in float32 (whatever the process's policy is), or for inference in
    `mixed_precision` ("bf16" | "fp16"): the matmuls in bfloat16 / float16,
    the encoder's dense weights stored so (`precision.inference_policy`),
    LayerNorm, embeddings and heads in float32.
    """
    with precision.inference_policy(mixed_precision):
        export = EXPORTS[kind]
        model = export.model(registry.model_class(export.task), config, num_labels, multi_label)
    checkpoint_lib.load_checkpoint(model, checkpoint_prefix, strict=True)
    stored = {"bf16": "bfloat16", "fp16": "float16"}.get(mixed_precision, "float32")
    for v in model.weights:
        if v.dtype not in ("float32", stored):
            raise AssertionError("%s is %s, not float32 or %s" % (v.path, v.dtype, stored))
    return model


# The checkpoint heads, as a missing one is named.
_HEAD_NAMES = {"classifier": "classifier", "squad": "SQuAD", "pretraining": "pre-training"}


def _serves_the_backbone(kind):
    """Whether an export kind serves the backbone alone (any run's model exports as it)."""
    return kind in EXPORTS and EXPORTS[kind].head is None


def _takers(option):
    """The kinds that take an export flag, as a message names them."""
    return " or ".join("a classifier task" if kind == CLASSIFIER else "--task_name=" + kind
                       for kind, export in EXPORTS.items() if option in export.options)


# ---------------------------------------------------------------------------
# Writing export_dir/<version>/
# ---------------------------------------------------------------------------


def version_dir(export_dir, version):
    """`export_dir/<version>`; refuses a version that is there already."""
    version = int(version)
    if version <= 0:
        raise UserError("--version must be a positive integer (TF Serving's version "
                        "directories are numbers), got %d" % version)
    path = os.path.join(export_dir, str(version))
    if tf.io.gfile.exists(path):
        raise UserError("%s exists already: pass another --version (versions are never "
                        "overwritten)" % path)
    return path


def _remove_tree(path):
    try:
        if tf.io.gfile.exists(path):
            tf.io.gfile.rmtree(path)
    except (OSError, tf.errors.OpError):
        pass


@contextlib.contextmanager
def atomic_directory(final_dir):
    """Yields a temporary sibling of `final_dir`, renamed to it when the block ends.

    TF Serving polls the base path for numeric directories: the temporary
    name (`<version>.tmp-<pid>`) is not one, so a half-written export is never
    loaded. If the block raises, the temporary directory is removed.
    """
    tmp = fileio.temporary_name(final_dir)
    _remove_tree(tmp)
    fileio.makedirs(os.path.dirname(final_dir))
    try:
        yield tmp
        if tf.io.gfile.exists(final_dir):
            raise UserError("%s appeared while exporting: pass another --version" % final_dir)
        tf.io.gfile.rename(tmp, final_dir, overwrite=False)
    finally:
        _remove_tree(tmp)


def save_module(module, signatures, output_dir, vocab_file):
    """`tf.saved_model.save` with the vocab as `assets/vocab.txt`, whatever its file name."""
    staging = tempfile.mkdtemp(prefix="bert_export_vocab_")
    try:
        staged_vocab = os.path.join(staging, VOCAB_ASSET)
        tf.io.gfile.copy(vocab_file, staged_vocab, overwrite=True)
        module.vocab_file = tf.saved_model.Asset(staged_vocab)
        tf.saved_model.save(module, output_dir, signatures=signatures)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def export_saved_model(task_name=None, bert_config_file=None, vocab_file=None,
                       do_lower_case=None, init_checkpoint=None, export_dir=None,
                       max_seq_length=None, version=None, format="saved_model",  # pylint: disable=redefined-builtin
                       doc_stride=None, max_query_length=64, n_best_size=20,
                       max_answer_length=30, mixed_precision=None, top_k=5, pooling=None,
                       normalize=None, multi_label=False, multi_label_threshold=0.5,
                       data_dir=None, max_text_bytes=graph_tokenizer.DEFAULT_MAX_TEXT_BYTES,
                       quantize=None, max_windows=None):
    """Exports a checkpoint as `export_dir/<version>/` (see the module docstring).

    Every input is checked before anything is written: the export directory,
    the task, the vocab (against the config's vocab_size), the checkpoint
    (every variable the model needs, with the config's shapes) and the
    version directory.

    Args:
      task_name: a task of `classifier_processors.PROCESSORS`, "squad", "encoder" or
        "fill_mask" (the pre-training heads' masked LM: any release),
        "embeddings", "multiple_choice" or "ner" (a bert-run-ner checkpoint).
      bert_config_file: the path of a bert_config.json (or a release's name),
        or a `BertConfig`.
      vocab_file, do_lower_case: the tokenizer's (as `FullTokenizer`;
        do_lower_case None: True, as the original's flag).
      init_checkpoint: a checkpoint prefix, or a directory (its latest
        model.ckpt-N, or a Google release's bert_model.ckpt). A training
        run's output_dir (its `bert_tf_run.json`) gives what is left out of
        task_name, bert_config_file, vocab_file, do_lower_case,
        max_seq_length, doc_stride and the labels (`recorded_run`).
      export_dir: the model base path; the export is `export_dir/<version>/`.
      max_seq_length: int, the length of every feature row. None: 128, or
        for task "embeddings" the length the embedder was saved with (its
        directory's embedding_config.json or sentence-transformers files).
      version: positive int; default: the time in seconds.
      format: "saved_model", "tfhub" (task "encoder": `hub.export_tfhub`
        writes `<version>/preprocessor/` and `<version>/encoder/`), or "onnx"
        (a classifier task, "encoder", "embeddings" or "multiple_choice":
        `<version>/model.onnx` of serve_features, see `bert_tf.export.onnx`).
      doc_stride, max_query_length, n_best_size, max_answer_length: SQuAD's.
        doc_stride None: the training run's (a run's output_dir), else the
        task's training default (`text_windows.DOC_STRIDES`: squad 128, as
        run_squad; ner 64, as bert-run-ner; a classifier none). A classifier
        with `doc_stride` (new) serves long single texts: see
        `bert_tf.tasks.classifier.serving.ClassifierServingModule`.
      mixed_precision: None (float32), "bf16" or "fp16": the exported model
        computes in bfloat16 / float16 (float32 variables; the signatures
        and their float32 outputs are the same). Every format and task.
      top_k: fill_mask's answers per [MASK].
      pooling, normalize: task "embeddings" only: "cls", "mean" or "max";
        L2-normalize. None: the checkpoint directory's embedding_config.json
        (bert-run-embeddings writes it), else "mean" and False.
      multi_label, multi_label_threshold: a classifier trained with
        run_classifier's --multi_label, and its decision threshold.
      data_dir: where task "multilabel" reads its labels (labels.txt, else
        train.tsv).
      max_text_bytes: positive int, or None (no cap: trusted clients only):
        the text signatures read each text up to this many bytes (cut back to
        a character boundary) before tokenizing; a text within it gets
        exactly its features, a longer one those of its first max_text_bytes
        bytes. "tfhub": not applied (its `tokenize` returns every token).
      quantize: None, or "int8": a classifier, the encoder or the embedder
        as a LiteRT model with int8 weights, features in
        (`bert_tf.export.quantize`: model.tflite, vocab.txt,
        export_config.json in the version directory); with format "onnx"
        (those tasks and multiple_choice), model.onnx in int8 by ONNX
        Runtime's dynamic quantization, beside the float32 ONNX export's
        files (`bert_tf.export.onnx.quantize_int8`; onnxruntime needed).
      max_windows: task "ner" only: the most windows of one text the model
        runs on (None: `bert_tf.tasks.token_classification.serving.DEFAULT_MAX_WINDOWS`, 64); a
        longer text is answered as its first words that fit in them.

    Returns:
      str, the version directory written.

    Raises:
      UserError: one line naming the flag, file or variable at fault.
    """
    phases = PhaseLog("export")
    fileio.check_writable(export_dir, "export_dir")
    if not init_checkpoint:
        raise UserError("--init_checkpoint is required")
    recorded_labels = None
    run = recorded_run(init_checkpoint, task_name, bert_config_file, vocab_file, do_lower_case,
                       max_seq_length, doc_stride)
    if run is not None:
        task_name, bert_config_file, vocab_file = (run["task_name"], run["bert_config_file"],
                                                   run["vocab_file"])
        do_lower_case, max_seq_length, doc_stride = (run["do_lower_case"],
                                                     run["max_seq_length"], run["doc_stride"])
        init_checkpoint, recorded_labels = run["init_checkpoint"], run["labels"]
        multi_label = multi_label or run["multi_label"]
        logging.info("The export's flags from %s: --task_name=%s --max_seq_length=%s "
                     "--do_lower_case=%s%s", run_record.RECORD_FILE, task_name, max_seq_length,
                     do_lower_case, "" if doc_stride is None else " --doc_stride=%d" % doc_stride)
    for flag, value in (("task_name", task_name), ("bert_config_file", bert_config_file),
                        ("vocab_file", vocab_file)):
        if not value:
            raise UserError("--%s is required (unless --init_checkpoint is a training run's "
                            "output_dir, whose %s gives it)" % (flag, run_record.RECORD_FILE))
    if do_lower_case is None:
        do_lower_case = True
    # A release's name (uncased_L-12_H-768_A-12) is its file in the cache.
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    if isinstance(bert_config_file, BertConfig):
        config, bert_config_file = bert_config_file, "bert_config_file"
    else:
        bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
        config = BertConfig.from_json_file(bert_config_file)
    if format not in FORMATS:
        raise UserError("--format must be one of %s, got %r" % ("|".join(FORMATS), format))
    if recorded_labels is not None and task_name.lower() in classifier_processors.PROCESSORS:
        # The run's own labels (a task that reads them from data needs no --data_dir).
        kind, labels, is_regression = CLASSIFIER, [str(l) for l in recorded_labels], False
    else:
        kind, labels, is_regression = task_spec(task_name, data_dir)
    quantize_lib.check_quantize(quantize, kind, task_name, format, mixed_precision, doc_stride)
    if multi_label and ("multi_label" not in EXPORTS[kind].options or is_regression):
        raise UserError("--multi_label is for a classification task (not %s)" % task_name)
    if multi_label:
        check_threshold(multi_label_threshold, "--multi_label_threshold")
    if doc_stride is not None and "doc_stride" not in EXPORTS[kind].options:
        raise UserError("--doc_stride is for %s (not %s)" % (_takers("doc_stride"), task_name))
    if mixed_precision not in precision.MIXED_PRECISION:
        raise UserError("--mixed_precision must be one of bf16|fp16 (or empty), got %r"
                        % (mixed_precision,))
    if format == "tfhub" and "tfhub" not in EXPORTS[kind].options:
        raise UserError("--format=tfhub exports the encoder: use %s, not %s"
                        % (_takers("tfhub"), task_name))
    if format == onnx_export.FORMAT and not EXPORTS[kind].serve_features:
        raise UserError(
            "--format=onnx converts the features signature (ids in), which --task_name=%s "
            "has not: use %s, or --format=saved_model"
            % (task_name, kinds.listed(kinds.kinds_with("serve_features"), "a classifier task")))
    if format == onnx_export.FORMAT:
        onnx_export.check_request(doc_stride, mixed_precision, quantize)
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise UserError("--top_k=%r: must be a positive integer" % (top_k,))
    max_text_bytes = graph_tokenizer.check_max_text_bytes(max_text_bytes, "--max_text_bytes")
    if max_windows is not None and "max_windows" not in EXPORTS[kind].options:
        raise UserError("--max_windows is for %s (not %s)" % (_takers("max_windows"), task_name))
    if "max_windows" in EXPORTS[kind].options:
        max_windows = ner_export.check_max_windows(
            ner_export.DEFAULT_MAX_WINDOWS if max_windows is None else max_windows)
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    tokenization.check_vocab(vocab_file, config, bert_config_file)
    prefix = checkpoint_lib.resolve_checkpoint(init_checkpoint)
    if "labels_file" in EXPORTS[kind].options and recorded_labels is not None:
        labels = [str(label) for label in recorded_labels]
    elif "labels_file" in EXPORTS[kind].options:
        # The labels its run wrote beside its checkpoints.
        labels = ner_data.labels_beside(os.path.dirname(prefix))
        if labels is None:
            raise UserError("--task_name=%s: no %s beside --init_checkpoint=%s (%s writes it "
                            "to its output_dir)" % (kind, ner_data.LABELS_FILE, prefix,
                                                    EXPORTS[kind].trained_by.split()[0]))
    num_labels = EXPORTS[kind].num_labels or (
        None if labels is None else (1 if is_regression else len(labels)))
    if "pooling" in EXPORTS[kind].options:
        pooling, normalize, max_seq_length = embeddings.embedding_settings(
            os.path.dirname(prefix), pooling, normalize, max_seq_length)
    elif pooling is not None or normalize is not None:
        raise UserError("--pooling and --normalize are for %s only (not %s)"
                        % (_takers("pooling"), task_name))
    elif max_seq_length is None:
        max_seq_length = DEFAULT_MAX_SEQ_LENGTH
    config.check_max_seq_length(max_seq_length, bert_config_file)
    if max_seq_length < 3:
        raise UserError("--max_seq_length=%d is too short for [CLS] a [SEP] b [SEP]"
                        % max_seq_length)
    if "doc_stride" in EXPORTS[kind].options:
        # The run's own stride where its record gives it (recorded_run), else the
        # stride its task trains with (`text_windows.DOC_STRIDES`; a classifier: none).
        if doc_stride is None:
            doc_stride = text_windows.default_doc_stride(kind)
        doc_stride = text_windows.check_doc_stride(
            doc_stride, optional=text_windows.default_doc_stride(kind) is None)
    check_checkpoint(prefix, config, kind, num_labels, bert_config_file, task_name)
    final_dir = version_dir(export_dir, int(time.time()) if version is None else version)
    phases.done("inputs checked (task %s, checkpoint %s)", task_name, prefix)

    # One export per version: a second one of this version refuses while this one lives
    # (`<export_dir>/<version>.lock`, no number to TF Serving); other versions go side by side.
    with locks.OutputLock(final_dir, "export_saved_model", flag="version", is_file=True,
                          subject="--export_dir=%s --version=%s" % (
                              export_dir, os.path.basename(final_dir))):
        if format == "tfhub":
            with atomic_directory(final_dir) as tmp:
                hub.export_tfhub(config, vocab_file, do_lower_case, prefix, tmp, max_seq_length,
                                 mixed_precision=mixed_precision, phases=phases)
            phases.done("written to %s", final_dir)
            logs.result("Exported %s (TF Hub format) from %s to %s", task_name, prefix, final_dir)
            return final_dir

        model = load_model(kind, config, prefix, num_labels, mixed_precision,
                           multi_label=multi_label)
        phases.done("checkpoint loaded into the %s model", kind)
        if quantize and format != onnx_export.FORMAT:
            with atomic_directory(final_dir) as tmp:
                quantize_lib.export_int8(kind, task_name, model, vocab_file, do_lower_case,
                                         max_seq_length, tmp, labels, is_regression,
                                         multi_label, multi_label_threshold, pooling, normalize)
            phases.done("converted to int8 (LiteRT) and written to %s", final_dir)
            logs.result("Exported %s from %s to %s (int8: %s)", task_name, prefix, final_dir,
                        quantize_lib.MODEL_FILE)
            return final_dir
        tokenizer = GraphTokenizer(vocab_file, do_lower_case, max_text_bytes=max_text_bytes)
        module, signatures = EXPORTS[kind].serve(model, tokenizer, ServingSettings(
            labels, is_regression, max_seq_length, vocab_file, do_lower_case, multi_label,
            multi_label_threshold, doc_stride, top_k, max_windows, pooling, normalize,
            max_query_length, n_best_size, max_answer_length))
        if format == onnx_export.FORMAT:
            module.keep_padding()  # ONNX Runtime's clients send rows of their own length
        phases.done("serving module built (tokenizer tables, signatures %s)",
                    ", ".join(sorted(signatures)))
        with atomic_directory(final_dir) as tmp:
            if format == onnx_export.FORMAT:
                with tempfile.TemporaryDirectory(prefix="bert_export_onnx_") as saved:
                    save_module(module, signatures, saved, vocab_file)
                    phases.done("signatures traced and SavedModel saved")
                    onnx_export.convert_saved_model(saved, tmp, task_name, phases, quantize)
            else:
                # The save traces every signature (the model and the tokenizer in the graph).
                save_module(module, signatures, tmp, vocab_file)
                phases.done("signatures traced and SavedModel saved")
        phases.done("written to %s", final_dir)
        if format == onnx_export.FORMAT:
            logs.result("Exported %s from %s to %s (ONNX%s: %s, serve_features)", task_name,
                        prefix, final_dir, " " + quantize if quantize else "",
                        onnx_export.MODEL_FILE)
            return final_dir
        logs.result("Exported %s from %s to %s (signatures: %s; compute: %s)", task_name, prefix,
                    final_dir, ", ".join(sorted(signatures)),
                    precision.MIXED_PRECISION[mixed_precision] or "float32")
        return final_dir
