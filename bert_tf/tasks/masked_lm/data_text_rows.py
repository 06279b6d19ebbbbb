"""Raw text -> the rows a masked-LM run trains on: token ids, packed, no masks yet (no TF).

The input is the original pre-training text format (`create_pretraining_data`'s
`--input_file`): UTF-8 text, one sentence (or paragraph) a line, a blank line
between documents. Every line is tokenized once with the `FullTokenizer`.

Packing, as Hugging Face's `run_mlm.py` `group_texts` does: the tokens of all
lines of all files, in file and line order, are concatenated and cut into
pieces of `max_seq_length - 2` tokens, each row `[CLS] piece [SEP]`. Rows
cross sentence and document boundaries (consecutive text is packed; a
document boundary is not marked), and a word may be cut between two rows.
Unlike `group_texts`, the last, shorter piece is kept (a padded row) rather
than dropped, so a small file still gives a row. Every row is one segment
(segment_ids 0); there is no next-sentence task.

`Rows` holds them as NumPy arrays: `input_ids` [num_rows, max_seq_length]
(0-padded), `lengths` [num_rows] and `is_piece` [num_rows, max_seq_length]
(the token is a "##" continuation of the word before it: whole-word masking
keeps a word's pieces together).
"""

import numpy as np

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress

CLS = "[CLS]"
SEP = "[SEP]"
MASK = "[MASK]"


class Rows(object):
    """The packed rows of a text corpus (see the module docstring).

    Attributes:
      input_ids: int32 [num_rows, max_seq_length], `[CLS] tokens [SEP]` then 0s.
      lengths: int32 [num_rows], the tokens of each row with [CLS] and [SEP].
      is_piece: bool [num_rows, max_seq_length], a "##" WordPiece continuation.
      num_tokens: the text's tokens (without [CLS] / [SEP]).
    """

    def __init__(self, input_ids, lengths, is_piece, num_tokens):
        self.input_ids = input_ids
        self.lengths = lengths
        self.is_piece = is_piece
        self.num_tokens = int(num_tokens)

    def __len__(self):
        return int(self.input_ids.shape[0])


def read_lines(input_file, flag="input_file"):
    """[(path, line number, text)] of every line of `input_file`'s files (blank lines skipped).

    Args:
      input_file: a file name, a glob, or several, comma-separated.
      flag: the flag named in errors.

    Raises:
      UserError: a pattern that matches no file, a file that is not UTF-8
        (naming the file and line), files with no text at all.
    """
    files = fileio.expand_files(input_file, flag)
    lines = []
    for path in files:
        with fileio.open_file(path, "rb") as f:
            for number, raw in enumerate(f, 1):
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as e:
                    raise UserError("line %d of --%s=%s is not UTF-8 (%s)"
                                    % (number, flag, path, e.reason)) from None
                if text.strip():
                    lines.append((path, number, text.strip()))
    if not lines:
        raise UserError("--%s=%s has no text (UTF-8 lines, a blank line between documents)"
                        % (flag, input_file))
    return lines


def check_vocab_tokens(tokenizer, vocab_file):
    """The special tokens a masked-LM row needs are in the vocab; returns their ids."""
    missing = [t for t in (CLS, SEP, MASK) if t not in tokenizer.vocab]
    if missing:
        raise UserError("--vocab_file=%s has no %s token" % (vocab_file, missing[0]))
    return {t: tokenizer.vocab[t] for t in (CLS, SEP, MASK)}


def pack_rows(token_lists, max_seq_length, cls_id, sep_id, piece_flags=None):
    """`Rows` of token-id lists concatenated and cut into `[CLS] piece [SEP]` rows.

    Args:
      token_lists: lists of token ids, in text order.
      max_seq_length: the row length (at least 3).
      cls_id, sep_id: the ids of [CLS] and [SEP].
      piece_flags: lists of bools alongside `token_lists` ("##" pieces), or None.
    """
    if max_seq_length < 3:
        raise UserError("--max_seq_length=%d is too short for [CLS] a token [SEP]"
                        % max_seq_length)
    ids = np.fromiter((i for tokens in token_lists for i in tokens), np.int32)
    pieces = (np.zeros(ids.shape, bool) if piece_flags is None else
              np.fromiter((p for flags in piece_flags for p in flags), bool, count=ids.size))
    width = max_seq_length - 2
    num_rows = max(1, -(-ids.size // width))
    input_ids = np.zeros([num_rows, max_seq_length], np.int32)
    is_piece = np.zeros([num_rows, max_seq_length], bool)
    lengths = np.zeros([num_rows], np.int32)
    for r in range(num_rows):
        chunk = ids[r * width:(r + 1) * width]
        n = chunk.size
        input_ids[r, 0] = cls_id
        input_ids[r, 1:n + 1] = chunk
        input_ids[r, n + 1] = sep_id
        is_piece[r, 1:n + 1] = pieces[r * width:(r + 1) * width]
        lengths[r] = n + 2
    return Rows(input_ids, lengths, is_piece, ids.size)


def text_rows(input_file, tokenizer, max_seq_length, flag="input_file", vocab_file=None):
    """The `Rows` of `input_file`'s text, tokenized once with `tokenizer` (a `FullTokenizer`).

    Raises:
      UserError: `read_lines`' errors; a vocab without [CLS], [SEP] or [MASK].
    """
    special = check_vocab_tokens(tokenizer, vocab_file or "the vocab")
    token_lists, piece_flags = [], []
    lines = read_lines(input_file, flag)
    # A domain corpus tokenizes for minutes: a progress line every 10 s, with a rate and an ETA.
    with ItemProgress("tokenizing --%s" % flag, len(lines), "lines") as progress:
        for _, _, text in lines:
            tokens = tokenizer.tokenize(text)
            token_lists.append(tokenizer.convert_tokens_to_ids(tokens))
            piece_flags.append([t.startswith("##") for t in tokens])
            progress.add()
    rows = pack_rows(token_lists, max_seq_length, special[CLS], special[SEP], piece_flags)
    if not rows.num_tokens:
        raise UserError("--%s=%s has no tokens in this vocab" % (flag, input_file))
    return rows
