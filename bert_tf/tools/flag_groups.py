"""Every flag of the tools, defined once, in the groups the tools share.

A flag is a `Flag` (its kind, name, default and help: the original's, for
the original's flags); a tool lists the groups and flags it takes
(`bert_tf.tools.cli.Tool`), and its run receives each value as the keyword
argument of the same name. The option groups of the library
(`bert_tf.training.scale_out.ScaleOut`, `bert_tf.training.dev_eval.DevEval`,
`bert_tf.training.schedule.Schedule`) are flags too: `options(group)` makes
one flag per field, from the field's own default and help
(`bert_tf.options.option`), so a field added there is a flag of every tool
whose run takes the group.

`with_default` / `with_help` give one tool its own default or help for a
shared flag (run_squad's `max_seq_length` is 384, as the original's); for a
field of an option group, the tool's function then takes the group with that
default (run_embeddings: `schedule=Schedule(learning_rate=2e-5, ...)`).
"""

import dataclasses
import typing

from bert_tf.data import text_windows
from bert_tf.options import option_fields
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule


@dataclasses.dataclass(frozen=True)
class Flag(object):
    """One absl flag.

    Attributes:
      kind: "string", "integer", "float", "bool" or "enum".
      name, default, help: absl's.
      enum_values: the values an "enum" flag takes.
      lower_bound: an "integer" flag's smallest value (None: any).
      ignored: None, or the warning a tool logs when the flag is given: the
        flag is accepted for the original's command lines and does nothing
        here (its value goes to no run).
    """

    kind: str
    name: str
    default: object
    help: str
    enum_values: tuple = ()
    lower_bound: typing.Optional[int] = None
    ignored: typing.Optional[str] = None


def string(name, default, help, **kwargs):  # pylint: disable=redefined-builtin
    return Flag("string", name, default, help, **kwargs)


def integer(name, default, help, **kwargs):  # pylint: disable=redefined-builtin
    return Flag("integer", name, default, help, **kwargs)


def float_(name, default, help, **kwargs):  # pylint: disable=redefined-builtin
    return Flag("float", name, default, help, **kwargs)


def boolean(name, default, help, **kwargs):  # pylint: disable=redefined-builtin
    return Flag("bool", name, default, help, **kwargs)


def enum(name, default, enum_values, help, **kwargs):  # pylint: disable=redefined-builtin
    return Flag("enum", name, default, help, enum_values=tuple(enum_values), **kwargs)


def with_default(flag, default):
    """`flag` with another default (one tool's)."""
    return dataclasses.replace(flag, default=default)


def with_help(flag, help):  # pylint: disable=redefined-builtin
    """`flag` with another help text (one tool's)."""
    return dataclasses.replace(flag, help=help)


_KINDS = {bool: "bool", int: "integer", float: "float", str: "string"}


def options(group):
    """The flags of an option group (`bert_tf.options`): one per field, in field order."""
    result = []
    for field in option_fields(group):
        annotation = field.type
        if typing.get_origin(annotation) is typing.Union:  # Optional[X]
            annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
        metadata = field.metadata
        kind = "enum" if metadata.get("enum_values") else _KINDS[annotation]
        result.append(Flag(kind, field.name, field.default, metadata["help"],
                           enum_values=tuple(metadata.get("enum_values", ())),
                           lower_bound=metadata.get("lower_bound")))
    return tuple(result)


# ------------------------------------------------------------------ the model

BERT_CONFIG_FILE = string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
VOCAB_FILE = string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
INIT_CHECKPOINT = string("init_checkpoint", None,
                         "Initial checkpoint (usually from a pre-trained BERT model).")
DO_LOWER_CASE = boolean(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
MAX_SEQ_LENGTH = integer(
    "max_seq_length", 128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded.")
OUTPUT_DIR = string("output_dir", None,
                    "The output directory where the model checkpoints will be written.")
# New: a training run into an output_dir that holds another run's checkpoints.
OVERWRITE_OUTPUT_DIR = boolean(
    "overwrite_output_dir", False,
    "New: start a new run in --output_dir, removing the run it holds (its checkpoints, "
    "bert_tf_run.json and results). Without it a rerun with the recorded training flags "
    "resumes (a finished run is not trained again), and one with other training flags is "
    "refused.")

# fill-mask (bert-fill-mask, bert-export-saved-model --task_name=fill_mask).
TOP_K = integer("top_k", 5, "The best tokens to give per [MASK].", lower_bound=1)

# A pre-trained BERT: its config, vocabulary, checkpoint and casing.
MODEL = (BERT_CONFIG_FILE, VOCAB_FILE, INIT_CHECKPOINT, DO_LOWER_CASE)

# ------------------------------------------------------------------ training

DO_TRAIN = boolean("do_train", False, "Whether to run training.")
DO_EVAL = boolean("do_eval", False, "Whether to run eval on the dev set.")
DO_PREDICT = boolean("do_predict", False,
                     "Whether to run the model in inference mode on the test set.")
# The schedule of a fine-tuning run (the original's run_classifier / run_squad flags): one
# flag per field of `Schedule`. Each is also named here, for the tools that take some of
# them (run_squad, run_embeddings, run_pretraining), some with a default or help of their own.
SCHEDULE = options(Schedule)
_SCHEDULE = {flag.name: flag for flag in SCHEDULE}
TRAIN_BATCH_SIZE = _SCHEDULE["train_batch_size"]
EVAL_BATCH_SIZE = _SCHEDULE["eval_batch_size"]
PREDICT_BATCH_SIZE = _SCHEDULE["predict_batch_size"]
LEARNING_RATE = _SCHEDULE["learning_rate"]
NUM_TRAIN_EPOCHS = _SCHEDULE["num_train_epochs"]
WARMUP_PROPORTION = _SCHEDULE["warmup_proportion"]
SAVE_CHECKPOINTS_STEPS = _SCHEDULE["save_checkpoints_steps"]
ITERATIONS_PER_LOOP = _SCHEDULE["iterations_per_loop"]
TPU_JOB_NAME = string("tpu_job_name", None,
                      "Name of TPU worker, if anything other than 'tpu_worker'",
                      ignored="--tpu_job_name is ignored: TPUStrategy finds the TPU workers "
                              "itself")

# The schedule's flags but the batch sizes (run_squad names its own two).
FINETUNING_SCHEDULE = tuple(flag for flag in SCHEDULE if flag not in (
    TRAIN_BATCH_SIZE, EVAL_BATCH_SIZE, PREDICT_BATCH_SIZE))
# Where a training run runs (the original's TPU flags) and how (new: strategy,
# precision, XLA, accumulation, optimizer, logging, recomputation, seed).
SCALE_OUT = options(ScaleOut) + (TPU_JOB_NAME,)
# New: evaluation on the dev set while training, the best checkpoint, early stopping.
DEV_EVAL = options(DevEval)

# ------------------------------------------------------------------ run_classifier

DATA_DIR = string("data_dir", None,
                  "The input data dir. Should contain the .tsv files (or other data files) "
                  "for the task.")
TASK_NAME = string("task_name", None, "The name of the task to train.")

# What a fine-tuning tool does (train, eval, predict) and how: the flags that
# follow --max_seq_length (and run_ner's --doc_stride) in run_classifier,
# run_classifier_with_tfhub, run_ner and run_multiple_choice.
FINETUNING = ((DO_TRAIN, DO_EVAL, DO_PREDICT) + SCHEDULE + SCALE_OUT + DEV_EVAL
              + (OVERWRITE_OUTPUT_DIR,))
# Both classifier tools' flags beyond their model's (run_classifier: MODEL;
# run_classifier_with_tfhub: --bert_hub_module_handle).
CLASSIFIER = (DATA_DIR, TASK_NAME, OUTPUT_DIR, MAX_SEQ_LENGTH) + FINETUNING
CLASSIFIER_REQUIRED = ("data_dir", "task_name", "output_dir")
# The required flags of the fine-tuning tools on a pre-trained BERT without a
# --task_name (run_ner, run_multiple_choice).
FINETUNING_REQUIRED = ("vocab_file", "bert_config_file", "data_dir", "output_dir")
# New (run_classifier): multi-label classification.
MULTI_LABEL = (
    boolean("multi_label", False,
            "Multi-label classification: the label column holds a comma-separated list of "
            "labels; a sigmoid per label and binary cross-entropy; eval_results.txt has "
            "micro/macro F1, micro precision/recall and exact_match; test_results.tsv one "
            "probability column per label. --task_name=multilabel reads a generic TSV "
            "(text_a[, text_b], labels; labels.txt or train.tsv gives the label set)."),
    float_("multi_label_threshold", 0.5,
           "With --multi_label: a label is predicted when its probability is at least this."),
)

# ------------------------------------------------------------------ run_squad

DOC_STRIDE = integer("doc_stride", text_windows.DOC_STRIDES["squad"],
                     "When splitting up a long document into chunks, how much stride to "
                     "take between chunks.")
# The doc-stride windows of run_squad's features (run_squad, export_saved_model).
SQUAD_WINDOWS = (
    DOC_STRIDE,
    integer("max_query_length", 64,
            "The maximum number of tokens for the question. Questions longer than "
            "this will be truncated to this length."),
)
# run_ner's stride (each task's default: bert_tf.data.text_windows.DOC_STRIDES).
NER_DOC_STRIDE = with_default(DOC_STRIDE, text_windows.DOC_STRIDES["ner"])
# How run_squad's answers are picked (run_squad, export_saved_model).
SQUAD_ANSWERS = (
    integer("n_best_size", 20,
            "The total number of n-best predictions to generate in the "
            "nbest_predictions.json output file."),
    integer("max_answer_length", 30,
            "The maximum length of an answer that can be generated. This is needed "
            "because the start and end predictions are not conditioned on one another."),
)

# New (run_classifier): long documents cut into run_squad's windows (none by default).
CLASSIFIER_DOC_STRIDE = with_help(
    with_default(DOC_STRIDE, text_windows.DOC_STRIDES["classifier"]),
    DOC_STRIDE.help + " New for classification: a text_a longer than --max_seq_length - 2 "
    "tokens is cut into windows that start every --doc_stride tokens, each a record; "
    "evaluation and prediction average each document's windows' logits. Single-text "
    "tasks only. Unset: texts are truncated, as the original.")
