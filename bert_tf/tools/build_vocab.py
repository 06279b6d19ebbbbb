r"""Learn a WordPiece vocab.txt from a corpus (nothing to download).

  bert-build-vocab --input_file=corpus.txt --vocab_file=vocab.txt \
    --vocab_size=8000 --do_lower_case=True

Words are split with bert_tf's BasicTokenizer (the original's rules, with the
same --do_lower_case as the tokenizer that will use the vocab), and the pieces
are learned with tensorflow-text's WordPiece learner. The file starts with
[PAD], [UNK], [CLS], [SEP], [MASK] (and --num_unused_tokens [unusedN]); it is
written atomically.

Also `python -m bert_tf.tools.build_vocab`; in a clone, `python tools/build_vocab.py`.
"""

from absl import app
from absl import flags

from bert_tf.runs import cli

flags.DEFINE_string("input_file", None,
                    "Input raw text file (or comma-separated list of files and globs), "
                    "in create_pretraining_data's format.")
flags.DEFINE_string("vocab_file", None, "The vocab.txt to write.")
flags.DEFINE_string("output_file", None, "Alias of --vocab_file.")
flags.DEFINE_integer("vocab_size", 30522,
                     "Largest vocabulary size (reserved tokens included). The learner "
                     "aims for [vocab_size * (1 - slack_ratio), vocab_size]; a small "
                     "corpus gives fewer tokens.")
flags.DEFINE_bool("do_lower_case", True,
                  "Lower-case and strip accents before counting words. Must match the "
                  "--do_lower_case the vocab will be used with.")
flags.DEFINE_integer("num_unused_tokens", 0,
                     "Number of [unusedN] tokens after [PAD] [UNK] [CLS] [SEP] [MASK].")
flags.DEFINE_integer("lower_thresh", 10,
                     "Lowest count threshold the learner's binary search may use: pieces "
                     "seen fewer times never enter the vocab (lower it for small corpora).")
flags.DEFINE_integer("num_iterations", 4, "Learner iterations.")
flags.DEFINE_integer("max_token_length", 50, "Longest word (in characters) counted.")
flags.DEFINE_integer("max_unique_chars", 1000,
                     "Alphabet size: words with rarer characters are not counted.")
flags.DEFINE_float("slack_ratio", 0.05, "Acceptable shortfall from --vocab_size.")
flags.DEFINE_integer("max_lines", None, "Read at most this many non-blank lines.")

FLAGS = flags.FLAGS


def run(argv):
    """absl's main: the run the parsed flags ask for."""
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments: %s" % " ".join(argv[1:]))
    from bert_tf.data import vocab
    from bert_tf.errors import UserError

    if not FLAGS.input_file:
        raise UserError("--input_file is required")
    if FLAGS.vocab_file and FLAGS.output_file and FLAGS.vocab_file != FLAGS.output_file:
        raise UserError("--vocab_file and --output_file differ; give one of them")
    output_file = FLAGS.vocab_file or FLAGS.output_file
    if not output_file:
        raise UserError("--vocab_file is required")
    if FLAGS.num_unused_tokens < 0:
        raise UserError("--num_unused_tokens=%d must be >= 0" % FLAGS.num_unused_tokens)
    if FLAGS.lower_thresh < 1:
        raise UserError("--lower_thresh=%d must be >= 1" % FLAGS.lower_thresh)
    vocab.build_vocab_from_patterns(
        FLAGS.input_file.split(","), output_file, vocab_size=FLAGS.vocab_size,
        do_lower_case=FLAGS.do_lower_case, num_unused_tokens=FLAGS.num_unused_tokens,
        max_lines=FLAGS.max_lines, lower_thresh=FLAGS.lower_thresh,
        num_iterations=FLAGS.num_iterations, max_token_length=FLAGS.max_token_length,
        max_unique_chars=FLAGS.max_unique_chars, slack_ratio=FLAGS.slack_ratio)


def main():
    """The command line: `bert-build-vocab`."""
    cli.run(run, __name__)


if __name__ == "__main__":
    main()
