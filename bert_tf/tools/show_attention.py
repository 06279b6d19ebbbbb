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

from absl import app
from absl import flags

from bert_tf.runs import cli

flags.DEFINE_string(
    "bert_config_file", None,
    "The config json file corresponding to the pre-trained BERT model. "
    "This specifies the model architecture.")
flags.DEFINE_string("vocab_file", None,
                    "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_string(
    "init_checkpoint", None,
    "Initial checkpoint (usually from a pre-trained BERT model).")
flags.DEFINE_bool(
    "do_lower_case", True,
    "Whether to lower case the input text. Should be True for uncased "
    "models and False for cased models.")
flags.DEFINE_string("text_a", None, "The text whose attention is shown.")
flags.DEFINE_string("text_b", None,
                    "(Optional) a second text: the pair [CLS] text_a [SEP] text_b [SEP].")
flags.DEFINE_string("output_file", None,
                    "The HTML file to write (.html): every layer's and head's attention.")
flags.DEFINE_integer(
    "max_seq_length", 128,
    "The maximum total input sequence length after WordPiece tokenization. "
    "Longer texts are truncated (with a warning).")

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments.")
    from bert_tf.runs.show_attention import show_attention
    show_attention(
        FLAGS.text_a, FLAGS.output_file, FLAGS.bert_config_file, FLAGS.init_checkpoint,
        FLAGS.vocab_file, text_b=FLAGS.text_b, do_lower_case=FLAGS.do_lower_case,
        max_seq_length=FLAGS.max_seq_length)


def main():
    """The command line: `bert-show-attention`.

    A missing flag is checked by the run (one `error: --<flag> is required`
    line), not by absl's required flags.
    """
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
