"""A Hugging Face BERT directory's tokenizer: its vocab and its `tokenizer_config.json` (new).

Hugging Face's `BertTokenizer` keeps the original's WordPiece vocab as
`vocab.txt` (read by `bert_tf.tokenization.vocab.load_vocab`, which also
takes the directory, or its `tokenizer.json` when that is all there is) and
its settings in `tokenizer_config.json`. What the `FullTokenizer` can honour:

  * `do_lower_case` (lower-case and strip accents, the original's one switch);
  * `strip_accents`: honoured when it is null or equal to `do_lower_case`
    (the original strips accents exactly when it lower-cases);
  * `tokenize_chinese_chars`: honoured when true (the original always
    splits CJK characters);
  * the special tokens: honoured when they are BERT's (`[UNK]`, `[CLS]`,
    `[SEP]`, `[PAD]`, `[MASK]`).

A setting it cannot honour is logged in one line (`unsupported_settings`),
and the FullTokenizer's own rule is used.

Pure Python: no TensorFlow.
"""

import json
import os

from absl import logging

from bert_tf.errors import UserError

TOKENIZER_CONFIG = "tokenizer_config.json"
SPECIAL_TOKENS_MAP = "special_tokens_map.json"
# Hugging Face's special-token keys and BERT's tokens, the only ones the FullTokenizer knows.
SPECIAL_TOKENS = (("unk_token", "[UNK]"), ("sep_token", "[SEP]"), ("pad_token", "[PAD]"),
                  ("cls_token", "[CLS]"), ("mask_token", "[MASK]"))


def read_tokenizer_config(directory):
    """The directory's tokenizer_config.json as a dict ({} when there is none)."""
    if not directory or "://" in os.fspath(directory):
        return {}
    path = os.path.join(directory, TOKENIZER_CONFIG)
    if not os.path.isfile(path):
        return {}
    return read_json_object(path)


def read_json_object(path):
    """A local JSON file holding an object (a dict): config.json, tokenizer_config.json.

    Raises:
      UserError: naming `path`: not valid JSON, or not an object.
    """
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except ValueError as e:
        raise UserError("%s: not valid JSON (%s)" % (path, e))
    if not isinstance(data, dict):
        raise UserError("%s: expected a JSON object" % path)
    return data


def unsupported_settings(settings, do_lower_case):
    """What of a tokenizer_config.json the FullTokenizer cannot honour, one line each."""
    lines = []
    strip_accents = settings.get("strip_accents")
    if strip_accents is not None and bool(strip_accents) != bool(do_lower_case):
        lines.append("strip_accents=%s with do_lower_case=%s: the FullTokenizer strips "
                     "accents exactly when it lower-cases" % (strip_accents, do_lower_case))
    if settings.get("tokenize_chinese_chars", True) is False:
        lines.append("tokenize_chinese_chars=false: the FullTokenizer always splits CJK "
                     "characters")
    for key, token in SPECIAL_TOKENS:
        value = settings.get(key, token)
        if isinstance(value, dict):  # an AddedToken
            value = value.get("content", token)
        if value != token:
            lines.append("%s=%r: the FullTokenizer uses %s" % (key, value, token))
    return lines


def do_lower_case_of(directory, default=True):
    """(`do_lower_case`, the settings) of a directory's tokenizer_config.json.

    Logs one line for each setting the FullTokenizer cannot honour.
    """
    settings = read_tokenizer_config(directory)
    do_lower_case = settings.get("do_lower_case", default)
    for line in unsupported_settings(settings, do_lower_case):
        logging.warning("%s: %s", os.path.join(directory, TOKENIZER_CONFIG), line)
    return bool(do_lower_case), settings


def tokenizer_config(do_lower_case, model_max_length):
    """The tokenizer_config.json Hugging Face's BertTokenizer reads (bert_tf's rules)."""
    settings = {"tokenizer_class": "BertTokenizer", "do_lower_case": bool(do_lower_case),
                "do_basic_tokenize": True, "never_split": None, "strip_accents": None,
                "tokenize_chinese_chars": True, "model_max_length": int(model_max_length),
                "clean_up_tokenization_spaces": True}
    settings.update(SPECIAL_TOKENS)
    return settings


def special_tokens_map():
    return dict(SPECIAL_TOKENS)
