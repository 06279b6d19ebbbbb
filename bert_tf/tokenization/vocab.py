"""The vocab file: reading it as the original does, checking it against a config, looking up.

From the original `tokenization.py` (PyPI `bert-tensorflow==1.0.4`):
`load_vocab` (token -> id, with the original's line handling: "\\r" bytes
dropped, each line stripped, a repeated line skipped), `convert_by_vocab`,
`convert_tokens_to_ids`, `convert_ids_to_tokens`; and `check_vocab`, the one
check of a vocab against a model's `vocab_size` and BERT's special tokens
that the tools, `from_pretrained` and every export make.

Pure Python: no TensorFlow import unless the vocab path is a remote URL
(`gs://...`), which is read with `tf.io.gfile`. `bert_tf.tokenization` and
`bert_tf.tokenization.full_tokenizer` export these names too.
"""

import collections
import json
import os

from bert_tf.errors import UserError

# A Hugging Face directory's vocab: vocab.txt, else tokenizer.json's WordPiece vocab.
_VOCAB_NAME = "vocab.txt"
_TOKENIZER_JSON = "tokenizer.json"


def vocab_path(path):
    """The file a vocab path names: a directory gives its vocab.txt, else its tokenizer.json.

    A file (vocab.txt, tokenizer.json, or a remote path) is returned as is.
    """
    path = os.fspath(path)
    if "://" in path or not os.path.isdir(path):
        return path
    for name in (_VOCAB_NAME, _TOKENIZER_JSON):
        candidate = os.path.join(path, name)
        if os.path.isfile(candidate):
            return candidate
    raise UserError("vocab_file %s: a directory without %s or %s" % (path, _VOCAB_NAME,
                                                                    _TOKENIZER_JSON))


def is_tokenizer_json(path):
    return os.path.basename(os.fspath(path)) == _TOKENIZER_JSON


def tokenizer_json_vocab(text, path):
    """The tokens of a tokenizer.json's WordPiece model, in id order."""
    try:
        model = json.loads(text)["model"]
        vocab = model["vocab"]
    except (ValueError, KeyError, TypeError):
        raise UserError("vocab_file %s: not a tokenizer.json with a model vocab" % path)
    if model.get("type") not in (None, "WordPiece") or not isinstance(vocab, dict):
        raise UserError("vocab_file %s: the tokenizer's model is %s, not WordPiece"
                        % (path, model.get("type")))
    by_id = sorted((i, token) for token, i in vocab.items())
    if [i for i, _ in by_id] != list(range(len(by_id))):
        raise UserError("vocab_file %s: the WordPiece ids are not 0..%d" % (path, len(by_id) - 1))
    return [token for _, token in by_id]


def _read_vocab_text(vocab_file):
    """Returns the vocab file's text, with line handling as `tf.gfile.GFile`."""
    path = os.fspath(vocab_file)
    try:
        if "://" in path:
            import tensorflow as tf  # pylint: disable=g-import-not-at-top
            try:
                if not tf.io.gfile.exists(path):
                    raise UserError("vocab_file %s does not exist" % path)
                with tf.io.gfile.GFile(path, "rb") as reader:
                    data = reader.read()
            except tf.errors.OpError as e:
                raise UserError("vocab_file %s cannot be read: %s"
                                % (path, e.message.splitlines()[0]))
        else:
            with open(path, "rb") as reader:
                data = reader.read()
    except UserError:
        raise
    except (OSError, IOError) as e:
        raise UserError("vocab_file %s cannot be read: %s"
                        % (path, getattr(e, "strerror", None) or e))
    # The original reads lines with TF's buffered `readline`, which splits on
    # "\n" only and silently drops every "\r" byte (so "a\rb" is "ab").
    data = data.replace(b"\r", b"")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        # Port note: the original raises the bare UnicodeDecodeError.
        raise UserError("vocab_file %s is not valid utf-8 (line %d)"
                        % (path, data.count(b"\n", 0, e.start) + 1))


def load_vocab(vocab_file):
    """Loads a vocabulary file (one token per line) into an OrderedDict.

    Each line is `str.strip()`ped (a blank line is the token ""). Ids count the
    distinct tokens in file order; a repeated line is skipped, so the first
    occurrence keeps its id.

    Port note: this is pip's (bert-tensorflow 1.0.4) rule. GitHub HEAD gives
    every line its own id and lets a later duplicate overwrite the earlier
    one's. The two agree on every vocab without duplicate lines (all released
    ones).

    A Hugging Face BERT directory gives its `vocab.txt`, or, when that is
    all it has, its `tokenizer.json`'s WordPiece vocab (in id order).

    Args:
      vocab_file: path of the vocab file (a local path, or a URL such as
        gs://... that `tf.io.gfile` can read), a Hugging Face directory or
        its tokenizer.json.

    Returns:
      collections.OrderedDict mapping token (str) -> id (int).

    Raises:
      UserError: if the file is missing, unreadable or not utf-8.
    """
    vocab_file = vocab_path(vocab_file)
    if is_tokenizer_json(vocab_file):
        tokens = tokenizer_json_vocab(_read_vocab_text(vocab_file), vocab_file)
        return collections.OrderedDict((token, i) for i, token in enumerate(tokens))
    lines = _read_vocab_text(vocab_file).split("\n")
    if lines[-1] == "":
        # Text after the last "\n" is a line only if it is not empty.
        lines.pop()
    vocab = collections.OrderedDict()
    for line in lines:
        token = line.strip()
        if token not in vocab:
            vocab[token] = len(vocab)
    return vocab


# Rows of a word embedding table that no token of its vocab uses: checkpoints
# whose vocab_size is rounded up to a multiple of 8 (NVIDIA's) or of 128
# (Megatron's) for faster matrix multiplies. A vocab short of vocab_size by
# PADDING_ROWS or more is another model's (Google's releases have a token for
# every row).
PADDING_ROWS = 128


def vocab_size_mismatch(num_tokens, vocab_size):
    """How a vocab of `num_tokens` tokens misses a model's `vocab_size`, or None if it fits.

    It fits with `vocab_size` tokens, or up to `PADDING_ROWS - 1` fewer (a
    padded table). Returns "more than vocab_size N" or "fewer than
    vocab_size N" otherwise: the one rule of `check_vocab` and of the models'
    preprocessors (`check_preprocessor`).
    """
    if num_tokens > vocab_size:
        return "more than vocab_size %d" % vocab_size
    if num_tokens + PADDING_ROWS <= vocab_size:
        return "fewer than vocab_size %d" % vocab_size
    return None


def check_vocab(vocab_file, config, bert_config_file="bert_config_file"):
    """Reads the vocab; it must fit the config's `vocab_size` and hold the special tokens.

    A vocab with more tokens than the model has embeddings would give ids the
    model cannot embed (an error on CPU, silent garbage on GPU/TPU). One with
    far fewer (`PADDING_ROWS` or more) is another model's vocab: its ids
    would pick the wrong rows and every output would be wrong without a word
    (a model trained with a vocab short of its `vocab_size`: pad the vocab
    with `[unusedN]` lines). One without `[CLS]`, `[SEP]` or `[UNK]` cannot
    build BERT's inputs.

    Args:
      vocab_file: path of the vocab file (`--vocab_file`).
      config: a `BertConfig` (anything with `.vocab_size`).
      bert_config_file: how to name the config in the error (its path or flag).

    Returns:
      int, the number of tokens.

    Raises:
      UserError: one line naming both files and both numbers, or the missing
        token.
    """
    vocab = load_vocab(vocab_file)
    mismatch = vocab_size_mismatch(len(vocab), config.vocab_size)
    if mismatch:
        raise UserError("--vocab_file=%s has %d tokens, %s of %s (the vocab is not the "
                        "checkpoint's%s)"
                        % (vocab_file, len(vocab), mismatch, bert_config_file,
                           "" if len(vocab) > config.vocab_size else
                           "; a model trained with it: pad it with [unusedN] lines to %d "
                           "tokens" % config.vocab_size))
    for token in ("[UNK]", "[CLS]", "[SEP]"):
        if token not in vocab:
            raise UserError("--vocab_file=%s has no %s token" % (vocab_file, token))
    return len(vocab)


def convert_by_vocab(vocab, items):
    """Converts a sequence of [tokens|ids] using the vocab.

    Raises:
      KeyError: naming the first item that is not in `vocab` (as the original,
        which has no [UNK] fallback at this level).
    """
    try:
        return [vocab[item] for item in items]
    except KeyError:
        for item in items:
            if item not in vocab:
                # Port note: the original's KeyError carries only the item.
                raise KeyError("%r is not in the vocabulary" % (item,))
        raise


def convert_tokens_to_ids(vocab, tokens):
    """Maps tokens (str) to ids (int) with `vocab`; KeyError on an unknown token."""
    return convert_by_vocab(vocab, tokens)


class UnknownIdError(UserError, KeyError):
    """An id outside the vocabulary: one line naming it and the vocab's size.

    A `UserError`, and a `KeyError` as the original's lookup raised.
    """

    __str__ = Exception.__str__  # the message, not KeyError's repr of it


def convert_ids_to_tokens(inv_vocab, ids):
    """Maps ids (int) to tokens (str) with `inv_vocab` (id -> token).

    Raises:
      UnknownIdError: (a KeyError) naming the first id outside the vocab and its size.
    """
    ids = list(ids)
    try:
        return [inv_vocab[i] for i in ids]
    except KeyError:
        unknown = next(i for i in ids if i not in inv_vocab)
        raise UnknownIdError("id %s is not in the vocabulary (%d tokens: ids 0 to %d)"
                             % (unknown, len(inv_vocab), len(inv_vocab) - 1)) from None
