r"""Exports a BERT checkpoint as a SavedModel for TF Serving that takes raw text.

  bert-export-saved-model \
    --task_name=MRPC --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True \
    --init_checkpoint=/tmp/mrpc_output/ --max_seq_length=128 \
    --export_dir=/models/mrpc

writes `/models/mrpc/<version>/` (saved_model.pb, variables/, assets/vocab.txt;
`--version` defaults to the time in seconds), TF Serving's model base-path
layout:

  tensorflow_model_server --rest_api_port=8501 --model_name=mrpc \
    --model_base_path=/models/mrpc

Tasks: every task of run_classifier.py (signatures `serving_default` text_a +
text_b -> probabilities + label, `serve_text_a`, `serve_features`,
`serve_examples`; sts-b returns `score`), `encoder` (pooled_output,
sequence_output, encoder_outputs) and `squad`. `--format=tfhub` (task
encoder) writes `<version>/preprocessor/` and `<version>/encoder/` instead.
The model is rebuilt in float32 whatever precision it was trained in; the
answers equal `run_classifier.py --do_predict`'s for the same text.
`--mixed_precision=bf16` exports one that computes in bfloat16 instead (the
same signatures, float32 outputs; faster where bf16 matmuls are, answers
within bf16's ~3 significant digits of float32's).

Also `python -m bert_tf.tools.export_saved_model`; in a clone, `python tools/export_saved_model.py`.
"""

from absl import app
from absl import flags

from bert_tf.runs import cli

flags.DEFINE_string(
    "task_name", None,
    "The task of the checkpoint: a task of run_classifier.py (cola, mnli, mrpc, "
    "xnli, sst-2, qnli, qqp, rte, wnli, sts-b, ...), squad, or encoder (the "
    "bare BERT encoder).")
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
flags.DEFINE_string(
    "init_checkpoint", None,
    "The checkpoint to export: a prefix (model.ckpt-N), or a directory (its "
    "latest model.ckpt-N, or a Google release directory's bert_model.ckpt).")
flags.DEFINE_integer(
    "max_seq_length", 128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded.")
flags.DEFINE_string(
    "export_dir", None,
    "The model base path: the SavedModel is written to export_dir/<version>/.")
flags.DEFINE_integer(
    "version", None,
    "The version directory's number (TF Serving serves the highest). "
    "Default: the current time in seconds. An existing version is never overwritten.")
flags.DEFINE_enum("format", "saved_model", ["saved_model", "tfhub"],
                  "saved_model: TF Serving signatures; tfhub: TF Hub's BERT format "
                  "(preprocessor/ and encoder/; task_name=encoder).")
flags.DEFINE_enum("mixed_precision", None, ["bf16", "fp16"],
                  "Export a model that computes in bfloat16 (bf16) or float16 (fp16): "
                  "the same signatures, float32 variables and float32 outputs (within "
                  "about 1e-2 of float32's probabilities). Default: float32, whatever "
                  "precision the checkpoint was trained in. Every task and --format.")
## SQuAD (task_name=squad): the flags of run_squad.py.
flags.DEFINE_integer(
    "doc_stride", 128,
    "When splitting up a long document into chunks, how much stride to "
    "take between chunks.")
flags.DEFINE_integer(
    "max_query_length", 64,
    "The maximum number of tokens for the question. Questions longer than "
    "this will be truncated to this length.")
flags.DEFINE_integer(
    "n_best_size", 20,
    "The total number of n-best predictions to generate in the "
    "nbest_predictions.json output file.")
flags.DEFINE_integer(
    "max_answer_length", 30,
    "The maximum length of an answer that can be generated. This is needed "
    "because the start and end predictions are not conditioned on one another.")

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    from bert_tf.export.saved_model import export_saved_model
    export_saved_model(
        FLAGS.task_name, FLAGS.bert_config_file, FLAGS.vocab_file, FLAGS.do_lower_case,
        FLAGS.init_checkpoint, FLAGS.export_dir, max_seq_length=FLAGS.max_seq_length,
        version=FLAGS.version, fmt=FLAGS.format, doc_stride=FLAGS.doc_stride,
        max_query_length=FLAGS.max_query_length, n_best_size=FLAGS.n_best_size,
        max_answer_length=FLAGS.max_answer_length, mixed_precision=FLAGS.mixed_precision)


def main():
    """The command line: `bert-export-saved-model`."""
    flags.mark_flags_as_required(["task_name", "bert_config_file", "vocab_file",
                                  "init_checkpoint", "export_dir"])
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
