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

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (
    groups.string("input_file", None,
                  "Input raw text file (or comma-separated list of files and globs), "
                  "in create_pretraining_data's format."),
    groups.string("vocab_file", None, "The vocab.txt to write."),
    groups.string("output_file", None, "Alias of --vocab_file."),
    groups.integer("vocab_size", 30522,
                   "Largest vocabulary size (reserved tokens included). The learner "
                   "aims for [vocab_size * (1 - slack_ratio), vocab_size]; a small "
                   "corpus gives fewer tokens."),
    groups.boolean("do_lower_case", True,
                   "Lower-case and strip accents before counting words. Must match the "
                   "--do_lower_case the vocab will be used with."),
    groups.integer("num_unused_tokens", 0,
                   "Number of [unusedN] tokens after [PAD] [UNK] [CLS] [SEP] [MASK]."),
    groups.integer("lower_thresh", 10,
                   "Lowest count threshold the learner's binary search may use: pieces "
                   "seen fewer times never enter the vocab (lower it for small corpora)."),
    groups.integer("num_iterations", 4, "Learner iterations."),
    groups.integer("max_token_length", 50, "Longest word (in characters) counted."),
    groups.integer("max_unique_chars", 1000,
                   "Alphabet size: words with rarer characters are not counted."),
    groups.float_("slack_ratio", 0.05, "Acceptable shortfall from --vocab_size."),
    groups.integer("max_lines", None, "Read at most this many non-blank lines."),
)

def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.data.vocab import build_vocab_file
    return build_vocab_file


TOOL = cli.Tool(__name__, function, FLAGS, required=("input_file",))


def main(argv=None):
    """The command line: `bert-build-vocab`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
