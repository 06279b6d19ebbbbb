r"""Show BERT's attention on a text: one self-contained HTML page of heat maps (new).

  bert-show-attention \
    --text_a="The bank by the river was flooded" [--text_b="..."] \
    --output_file=attention.html \
    --vocab_file=$BERT_BASE_DIR/vocab.txt \
    --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --init_checkpoint=$BERT_BASE_DIR/bert_model.ckpt \
    --max_seq_length=128

For every layer, the average of its heads and then each head, as a heat map:
row = the token attending (query), column = the token attended to (key),
each cell's tooltip its weight. The page needs no network and no server; the
weights are also in it as JSON (`<script type="application/json"
id="attention-data">`: `attentions[layer][head][query][key]`, `tokens`).

Also `python -m bert_tf.tools.show_attention`; in a clone, `python tools/show_attention.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = groups.MODEL + (
    groups.string("text_a", None, "The text whose attention is shown."),
    groups.string("text_b", None,
                  "(Optional) a second text: the pair [CLS] text_a [SEP] text_b [SEP]."),
    groups.string("output_file", None,
                  "The HTML file to write (.html): every layer's and head's attention."),
    groups.with_help(groups.MAX_SEQ_LENGTH,
                     "The maximum total input sequence length after WordPiece tokenization. "
                     "Longer texts are truncated (with a warning)."),
)

def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.runs.show_attention import show_attention
    return show_attention


TOOL = cli.Tool(__name__, function, FLAGS)


def main(argv=None):
    """The command line: `bert-show-attention` (the run checks its own required flags)."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
