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

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

# Accepted so that the original command lines keep working; they change
# nothing here (the one-hot lookup gives the same numbers as the gather).
_LOCAL_DEVICE = "extract_features runs on the local device"

FLAGS = (
    groups.string("input_file", None, ""),
    groups.string("output_file", None, ""),
    groups.string("layers", "-1,-2,-3,-4", ""),
    groups.BERT_CONFIG_FILE,
    groups.MAX_SEQ_LENGTH,
    groups.INIT_CHECKPOINT,
    groups.VOCAB_FILE,
    groups.DO_LOWER_CASE,
    groups.integer("batch_size", 32, "Batch size for predictions."),
    groups.enum("mixed_precision", None, ["bf16", "fp16"],
                "Compute the forward pass in bfloat16 (bf16) or float16 (fp16); "
                "variables stay float32, LayerNorm and softmax run in float32, and the "
                "JSON values are written as float32 numbers. Default: float32."),
    groups.boolean("use_tpu", False, "Whether to use TPU or GPU/CPU.",
                   ignored="--use_tpu: TPUs are reached through tf.distribute in bert_tf; "
                           + _LOCAL_DEVICE + "."),
    groups.string("master", None, "If using a TPU, the address of the master.",
                  ignored="--master is ignored: " + _LOCAL_DEVICE),
    groups.integer("num_tpu_cores", 8,
                   "Accepted for the original's command lines; ignored (extract_features "
                   "runs on the local device).",
                   ignored="--num_tpu_cores is ignored: " + _LOCAL_DEVICE),
    groups.boolean("use_one_hot_embeddings", False,
                   "If True, tf.one_hot will be used for embedding lookups, otherwise "
                   "tf.nn.embedding_lookup will be used. On TPUs, this should be True "
                   "since it is much faster.",
                   ignored="--use_one_hot_embeddings changes nothing here: the lookup "
                           "gives the same numbers"),
)

def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.runs.extract_features import extract_features
    return extract_features


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("input_file", "vocab_file", "bert_config_file", "init_checkpoint",
                          "output_file"))


def main(argv=None):
    """The command line: `bert-extract-features`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
