"""Learn a WordPiece `vocab.txt` from a text corpus.

Words are counted with *our* `BasicTokenizer` (the original's rules: clean,
CJK spacing, lower-case + accent stripping when `do_lower_case`, punctuation
splitting), so the vocabulary is learned on exactly the words `FullTokenizer`
will later split into pieces. The pieces are learned by tensorflow-text's
WordPiece learner (`tensorflow_text.tools.wordpiece_vocab.
wordpiece_tokenizer_learner_lib.learn`, the algorithm behind
`bert_vocab_from_dataset`), which is pure Python. `bert_vocab_from_dataset`
itself is not used because it splits words with tf-text's `BasicTokenizer`,
whose lower-casing (NFKC case folding) differs from the original's.

The file starts with the reserved tokens [PAD], [UNK], [CLS], [SEP], [MASK]
(ids 0-4) and then `num_unused_tokens` `[unusedN]` tokens, followed by the
single characters (sorted) and the learned pieces (most frequent first), as
the learner orders them. Everything is sorted deterministically, so the same
corpus and options give the same file.
"""

import collections
import os
import time

from absl import logging

from bert_tf import fileio
from bert_tf import logs
from bert_tf.errors import UserError
from bert_tf.tokenization.full_tokenizer import SPECIAL_TOKENS

# The reserved tokens every BERT vocab starts with: the tokenizer's special tokens.
RESERVED_TOKENS = SPECIAL_TOKENS


def reserved_tokens(num_unused_tokens=0):
    """[PAD], [UNK], [CLS], [SEP], [MASK], then [unused0] ... [unusedN-1]."""
    return list(RESERVED_TOKENS) + ["[unused%d]" % i for i in range(num_unused_tokens)]


def count_words(input_files, do_lower_case=True, max_lines=None):
    """Counts the words `BasicTokenizer(do_lower_case)` produces on the corpus.

    Lines are read as `create_pretraining_data` reads them; blank lines are
    skipped. Each " "-separated chunk is tokenized once (the same argument as
    `CachedTokenizer`).

    Args:
      input_files: list of str text files.
      do_lower_case: bool, as for the tokenizer that will use the vocab.
      max_lines: int or None; read at most this many non-blank lines.

    Returns:
      A `collections.Counter` word -> count.
    """
    from bert_tf import tokenization  # pylint: disable=g-import-not-at-top
    from bert_tf.data import text_files  # pylint: disable=g-import-not-at-top

    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case)
    chunk_counts = collections.Counter()
    lines = 0
    for input_file in input_files:
        for line in text_files.iter_lines(input_file):
            line = line.strip()
            if not line:
                continue
            chunk_counts.update(line.split(" "))
            lines += 1
            if max_lines is not None and lines >= max_lines:
                break
        if max_lines is not None and lines >= max_lines:
            break
    counts = collections.Counter()
    for chunk, n in chunk_counts.items():
        for word in basic.tokenize(chunk):
            counts[word] += n
    return counts


def learn_vocab(word_counts, vocab_size, num_unused_tokens=0, lower_thresh=10,
                upper_thresh=10 ** 7, num_iterations=4, max_token_length=50,
                max_unique_chars=1000, slack_ratio=0.05, max_input_tokens=5 * 10 ** 6):
    """Learns WordPiece tokens with tensorflow-text's learner.

    Args:
      word_counts: mapping word -> count (e.g. from `count_words`).
      vocab_size: int, the largest vocabulary size (reserved included). The
        learner aims for [vocab_size * (1 - slack_ratio), vocab_size]; a small
        corpus can give fewer tokens, and if the learner overshoots, the
        rarest multi-character pieces are dropped (see `_fit`).
      num_unused_tokens: int, `[unusedN]` tokens after the five reserved ones.
      lower_thresh: passed to `wordpiece_tokenizer_learner_lib.learn` (see
        there), as are upper_thresh, num_iterations, max_token_length,
        max_unique_chars, slack_ratio and max_input_tokens.

    Returns:
      A list of str tokens, the reserved tokens first.
    """
    from tensorflow_text.tools.wordpiece_vocab import (  # pylint: disable=g-import-not-at-top
        wordpiece_tokenizer_learner_lib as learner)

    reserved = reserved_tokens(num_unused_tokens)
    if vocab_size <= len(reserved):
        raise UserError("--vocab_size=%d leaves no room beyond the %d reserved tokens"
                        % (vocab_size, len(reserved)))
    if not word_counts:
        raise UserError("the corpus has no words to learn a vocabulary from")
    # The learner's result depends on the order of its input: sort by count,
    # then by word, so the same counts always give the same vocabulary.
    ordered = sorted(word_counts.items(), key=lambda item: (-item[1], item[0]))
    vocab = learner.learn(
        ordered, vocab_size, reserved, upper_thresh=upper_thresh,
        lower_thresh=lower_thresh, num_iterations=num_iterations,
        max_input_tokens=max_input_tokens, max_token_length=max_token_length,
        max_unique_chars=max_unique_chars, slack_ratio=slack_ratio,
        include_joiner_token=True, joiner="##")
    return _fit(list(vocab), vocab_size, len(reserved))


def _fit(vocab, vocab_size, num_reserved):
    """Drops the rarest multi-character pieces until `len(vocab) <= vocab_size`.

    The learner's binary search can stop above `vocab_size` (on small corpora
    its count threshold bottoms out). The reserved tokens, every single
    character and every "##" + character stay, so every word the learner saw
    can still be split into pieces; the learner lists the other pieces most
    frequent first, so the last ones go.
    """
    if len(vocab) <= vocab_size:
        return vocab
    def essential(index, token):
        return (index < num_reserved or len(token) == 1 or
                (token.startswith("##") and len(token) == 3))
    num_essential = sum(1 for i, t in enumerate(vocab) if essential(i, t))
    if num_essential > vocab_size:
        raise UserError("--vocab_size=%d is too small: the reserved tokens and the "
                        "corpus's characters (with their ## forms) already need %d"
                        % (vocab_size, num_essential))
    to_drop = len(vocab) - vocab_size
    keep = [True] * len(vocab)
    for index in range(len(vocab) - 1, -1, -1):
        if not to_drop:
            break
        if not essential(index, vocab[index]):
            keep[index] = False
            to_drop -= 1
    logging.info("The learner gave %d tokens; dropped the %d rarest pieces to fit "
                 "--vocab_size=%d", len(vocab), len(vocab) - vocab_size, vocab_size)
    return [t for t, k in zip(vocab, keep) if k]


def write_vocab(tokens, output_file):
    """Writes one token per line to `output_file`, atomically."""
    for token in tokens:
        if not token or token != token.strip() or "\n" in token:
            raise ValueError("token %r cannot be written to a vocab file" % (token,))
    with fileio.atomic_write(output_file, "w", newline="\n") as f:
        for token in tokens:
            f.write(token + "\n")


def build_vocab(input_files, output_file, vocab_size=30522, do_lower_case=True,
                num_unused_tokens=0, max_lines=None, **learn_kwargs):
    """Counts words, learns a WordPiece vocabulary and writes it.

    Args:
      input_files: list of str text files (see `count_words`).
      output_file: str, the vocab.txt to write (atomically).
      vocab_size, num_unused_tokens, **learn_kwargs: see `learn_vocab`.
      do_lower_case: bool, see `count_words`.
      max_lines: int or None, see `count_words`.

    Returns:
      The list of tokens written.
    """
    start = time.perf_counter()
    counts = count_words(input_files, do_lower_case, max_lines)
    logging.info("Counted %d distinct words (%d in all) in %.1fs", len(counts),
                 sum(counts.values()), time.perf_counter() - start)
    tokens = learn_vocab(counts, vocab_size, num_unused_tokens, **learn_kwargs)
    write_vocab(tokens, output_file)
    logs.result("Wrote %d tokens to %s in %.1fs", len(tokens), output_file,
                time.perf_counter() - start)
    return tokens


def build_vocab_file(input_file, vocab_file=None, output_file=None, vocab_size=30522,
                     do_lower_case=True, num_unused_tokens=0, lower_thresh=10,
                     num_iterations=4, max_token_length=50, max_unique_chars=1000,
                     slack_ratio=0.05, max_lines=None):
    """What `bert-build-vocab` runs: its flags as arguments (`--output_file`: `--vocab_file`'s alias).

    Args:
      input_file: str, comma-separated file names and globs.
      vocab_file (or output_file): the vocab.txt to write.
      The rest: `build_vocab`'s.

    Returns:
      The list of tokens written.

    Raises:
      UserError: one line naming the flag at fault.
    """
    if not input_file:
        raise UserError("--input_file is required")
    if vocab_file and output_file and vocab_file != output_file:
        raise UserError("--vocab_file and --output_file differ; give one of them")
    vocab_file = vocab_file or output_file
    if not vocab_file:
        raise UserError("--vocab_file is required")
    if num_unused_tokens < 0:
        raise UserError("--num_unused_tokens=%d must be >= 0" % num_unused_tokens)
    if lower_thresh < 1:
        raise UserError("--lower_thresh=%d must be >= 1" % lower_thresh)
    return build_vocab_from_patterns(
        input_file.split(","), vocab_file, vocab_size=vocab_size, do_lower_case=do_lower_case,
        num_unused_tokens=num_unused_tokens, max_lines=max_lines, lower_thresh=lower_thresh,
        num_iterations=num_iterations, max_token_length=max_token_length,
        max_unique_chars=max_unique_chars, slack_ratio=slack_ratio)


def build_vocab_from_patterns(input_patterns, output_file, **kwargs):
    """`build_vocab` on `--input_file`'s names and globs, once `output_file` is known writable.

    What `tools/build_vocab.py` runs: the directory of `output_file` must
    exist and the file be writable (checked before the corpus is read), and
    the input patterns are expanded as `create_pretraining_data` expands
    them (`expand_input_patterns`: a pattern that matches nothing is an
    error).

    Args:
      input_patterns: list of str file names and globs.
      output_file: str, the vocab.txt to write (atomically).
      **kwargs: the other arguments of `build_vocab`.

    Returns:
      The list of tokens written.
    """
    from bert_tf.data import text_files  # pylint: disable=g-import-not-at-top

    parent = os.path.dirname(os.path.abspath(output_file))
    if not fileio.is_remote(output_file) and not os.path.isdir(parent):
        raise UserError("--vocab_file: directory %s does not exist" % parent)
    fileio.check_writable(output_file, "vocab_file", directory=False)
    input_files = text_files.expand_input_patterns(input_patterns)
    return build_vocab(input_files, output_file, **kwargs)
