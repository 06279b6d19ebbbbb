"""Tokenization of documents: token ids per line, cached per chunk.

The tokenizing half of the original's `create_training_instances`
(P:187-203, P = pip bert-tensorflow 1.0.4): each line's `tokenizer.tokenize`,
kept as token ids (`CachedTokenizer`), and what instance creation needs from
the vocabulary (`VocabInfo`).
"""

from bert_tf.data import text_files
from bert_tf.errors import UserError


# --------------------------------------------------------------------------
# Tokenization.
# --------------------------------------------------------------------------

class VocabInfo(object):
    """What instance creation needs from a `FullTokenizer`'s vocabulary.

    Attributes:
      vocab: the tokenizer's `OrderedDict` token -> id.
      vocab_ids: list of ids in vocab order, so that the original's
        `vocab_words[k]` converts to `vocab_ids[k]`.
      cls_id, sep_id, mask_id: ids of "[CLS]", "[SEP]", "[MASK]".
      is_subword: bytearray indexed by id, 1 where the token starts with "##".
      inv_vocab: dict id -> token (for logging).
    """

    def __init__(self, tokenizer, vocab_file="vocab_file"):
        vocab = tokenizer.vocab
        missing = [t for t in ("[CLS]", "[SEP]", "[MASK]") if t not in vocab]
        if missing:
            raise UserError("%s has no %s token%s (create_pretraining_data needs "
                            "[CLS], [SEP] and [MASK])" % (
                                vocab_file, ", ".join(missing),
                                "s" if len(missing) > 1 else ""))
        self.vocab = vocab
        self.vocab_ids = list(vocab.values())
        self.cls_id = vocab["[CLS]"]
        self.sep_id = vocab["[SEP]"]
        self.mask_id = vocab["[MASK]"]
        max_id = max(self.vocab_ids)
        self.is_subword = bytearray(max_id + 1)
        self.inv_vocab = {}
        for token, token_id in vocab.items():
            if token.startswith("##"):
                self.is_subword[token_id] = 1
            self.inv_vocab[token_id] = token
        # With pip's `load_vocab` ids are unique; guard the id -> token map.
        for token_id in self.vocab_ids:
            if self.inv_vocab.get(token_id) is None:
                raise UserError("%s maps two tokens to id %d" % (vocab_file, token_id))
        self.max_id = max_id


class CachedTokenizer(object):
    """`FullTokenizer.tokenize` + `convert_tokens_to_ids`, cached per chunk.

    The original tokenizes each line. `BasicTokenizer` cleans characters one
    at a time, then splits on white space (" " is white space), and everything
    after that works per token, so a line's tokens are the concatenation of
    the tokens of its " "-separated chunks. Real text repeats its words, so
    caching the ids of each chunk makes tokenization several times faster
    without changing a single token (tests/data/test_pretraining_data.py
    checks this on the corpus and on edge cases).
    """

    def __init__(self, tokenizer, vocab_file="vocab_file", max_entries=1 << 20):
        self._tokenize = tokenizer.tokenize
        self._to_ids = tokenizer.convert_tokens_to_ids
        self._vocab = tokenizer.vocab
        self._vocab_file = vocab_file
        self._max_entries = max_entries
        self._cache = {}

    def line_to_ids(self, line):
        """Returns the list of token ids of `line` (a str)."""
        cache = self._cache
        ids = []
        for chunk in line.split(" "):
            piece = cache.get(chunk)
            if piece is None:
                piece = self._chunk_ids(chunk)
            ids += piece
        return ids

    def _chunk_ids(self, chunk):
        tokens = self._tokenize(chunk) if chunk else []
        try:
            piece = tuple(self._to_ids(tokens))
        except KeyError:
            # Port note: the original fails with a KeyError when it writes an
            # instance holding the token (e.g. "[UNK]" missing from the vocab).
            missing = [t for t in tokens if t not in self._vocab][:1] or ["?"]
            raise UserError("%s has no token %s, which the tokenizer produced for "
                            "the text %r" % (self._vocab_file, missing[0], chunk)) from None
        if len(self._cache) >= self._max_entries:
            self._cache.clear()
        self._cache[chunk] = piece
        return piece


def read_documents(input_files, cached_tokenizer, decode_stats=None, progress=None):
    """Reads and tokenizes documents exactly as `create_training_instances` does.

    Args:
      input_files: list of str file names, read in order as one stream.
      cached_tokenizer: a `CachedTokenizer`.
      decode_stats: optional `text_files.DecodeStats`.
      progress: optional callable(bytes_read) for progress logging.

    Returns:
      A list of documents; a document is a non-empty list of segments (one per
      input line with tokens), a segment a non-empty tuple of token ids.

    Raises:
      UserError: an input file holds no line with any token.
    """
    line_to_ids = cached_tokenizer.line_to_ids
    all_documents = [[]]
    bytes_read = 0  # characters, for progress logging only
    for input_file in input_files:
        lines_with_tokens = 0
        for line in text_files.iter_lines(input_file, decode_stats):
            bytes_read += len(line)
            line = line.strip()
            if not line:
                all_documents.append([])
                continue
            ids = line_to_ids(line)
            if ids:
                all_documents[-1].append(tuple(ids))
                lines_with_tokens += 1
            if progress is not None and not lines_with_tokens % 4096:
                progress(bytes_read)
        if not lines_with_tokens:
            # Port note: the original reads an empty file without a word.
            raise UserError("input file %s has no text (no line with a token)"
                            % input_file)
    return [d for d in all_documents if d]


def tokenize_documents(raw_documents, cached_tokenizer):
    """Documents of stripped lines -> documents of token-id segments (empty ones dropped)."""
    documents = []
    for raw in raw_documents:
        document = []
        for line in raw:
            ids = cached_tokenizer.line_to_ids(line)
            if ids:
                document.append(tuple(ids))
        if document:
            documents.append(document)
    return documents
