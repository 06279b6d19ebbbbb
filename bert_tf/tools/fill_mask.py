r"""Fill in [MASK]s with the masked-LM head of a released BERT (new).

  bert-fill-mask --init_checkpoint=$BERT_BASE_DIR \
    --input_file=masked.txt --output_file=fill_mask.jsonl --top_k=5

  bert-fill-mask --init_checkpoint=uncased_L-12_H-768_A-12 \
    --text="The capital of France is [MASK]." --output_file=paris.jsonl

Each line of --input_file is a text with one or more [MASK]s; each output
line is `{"index", "text", "masks"}`, `masks` a list per [MASK] of the
--top_k best tokens (`score`, `token`, `token_str`, `sequence`, as Hugging
Face's fill-mask pipeline gives them). The model is Google's own masked-LM
head (`cls/predictions/*`, in every release). A text without [MASK], or
longer than --max_seq_length tokens, is one line of error, and nothing is
written.

Also `python -m bert_tf.tools.fill_mask`; in a clone, `python tools/fill_mask.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (
    groups.with_help(groups.INIT_CHECKPOINT,
                     "The model: a release directory, a checkpoint prefix, a run's output_dir, "
                     "a release's name or a Hugging Face directory (with the masked-LM head)."),
    groups.string("input_file", None, "Texts with [MASK], one per line."),
    groups.string("text", None, "One text with [MASK] (instead of --input_file)."),
    groups.string("output_file", None,
                  "The JSON lines to write: one line per text, the best tokens per [MASK]."),
    groups.with_help(groups.BERT_CONFIG_FILE,
                     "The config json file corresponding to the pre-trained BERT model, when "
                     "it is not beside the checkpoint."),
    groups.with_help(groups.VOCAB_FILE,
                     "The vocabulary file that the BERT model was trained on, when it is not "
                     "beside the checkpoint."),
    groups.boolean("do_lower_case", None,
                   "Whether to lower case the input text. Default: from the release's name "
                   "(or a Hugging Face directory's tokenizer_config.json)."),
    groups.with_help(groups.MAX_SEQ_LENGTH,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "A longer text is an error (it is not truncated, which could drop a "
                     "[MASK])."),
    groups.TOP_K,
    groups.integer("batch_size", 32, "Batch size for predictions.", lower_bound=1),
)


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.pretraining.run_fill_mask import fill_mask
    return fill_mask


TOOL = cli.Tool(__name__, function, FLAGS, required=("init_checkpoint", "output_file"))


def main(argv=None):
    """The command line: `bert-fill-mask`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
