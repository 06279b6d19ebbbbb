r"""Extract pre-computed feature vectors from BERT (the original's `extract_features.py`).

  bert-extract-features \
    --input_file=input.txt --output_file=output.jsonl \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
    --layers=-1,-2,-3,-4 --max_seq_length=128 --batch_size=8 \
    [--mixed_precision=bf16]

Each input line is `text_a` or `text_a ||| text_b`; each output line is the
original's JSON (`linex_index`, `features` -> `token`, `layers` -> `index`,
`values`). `--mixed_precision=bf16` computes in bfloat16 (new; the values
are still written as float32 numbers, within about 1e-1 of float32's).

Also `python -m bert_tf.tools.extract_features`; in a clone, `python tools/extract_features.py`.
"""

from absl import app
from absl import flags
from absl import logging

from bert_tf.runs import cli

flags.DEFINE_string("input_file", None, "")
flags.DEFINE_string("output_file", None, "")
flags.DEFINE_string("layers", "-1,-2,-3,-4", "")
flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_integer(
    "max_seq_length", 128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Sequences longer than this will be truncated, and sequences shorter "
    "than this will be padded.")
flags.DEFINE_string(
    "init_checkpoint", None,
    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
flags.DEFINE_integer("batch_size", 32, "Batch size for predictions.")
flags.DEFINE_enum("mixed_precision", None, ["bf16", "fp16"],
                  "Compute the forward pass in bfloat16 (bf16) or float16 (fp16); "
                  "variables stay float32, LayerNorm and softmax run in float32, and the "
                  "JSON values are written as float32 numbers. Default: float32.")
# Accepted so that the original command lines keep working; they change
# nothing here (the one-hot lookup gives the same numbers as the gather).
flags.DEFINE_bool("use_tpu", False, "Whether to use TPU or GPU/CPU.")
flags.DEFINE_string("master", None, "If using a TPU, the address of the master.")
flags.DEFINE_integer("num_tpu_cores", 8,
                     "Accepted for the original's command lines; ignored (extract_features "
                     "runs on the local device).")
flags.DEFINE_bool("use_one_hot_embeddings", False,
                  "If True, tf.one_hot will be used for embedding lookups, otherwise "
                  "tf.nn.embedding_lookup will be used. On TPUs, this should be True "
                  "since it is much faster.")

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments.")
    if FLAGS.use_tpu:
        logging.warning("--use_tpu: TPUs are reached through tf.distribute in bert_tf; "
                        "extract_features runs on the local device.")
    from bert_tf.runs.extract_features import extract_features
    extract_features(
        FLAGS.input_file, FLAGS.output_file, FLAGS.bert_config_file, FLAGS.init_checkpoint,
        FLAGS.vocab_file, layers=FLAGS.layers, max_seq_length=FLAGS.max_seq_length,
        do_lower_case=FLAGS.do_lower_case, batch_size=FLAGS.batch_size,
        mixed_precision=FLAGS.mixed_precision)


def main():
    """The command line: `bert-extract-features`."""
    flags.mark_flag_as_required("input_file")
    flags.mark_flag_as_required("vocab_file")
    flags.mark_flag_as_required("bert_config_file")
    flags.mark_flag_as_required("init_checkpoint")
    flags.mark_flag_as_required("output_file")
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
