"""The masked-LM head's best tokens for each [MASK] of texts, as JSON lines (new; `bert-fill-mask`).

What `tools/fill_mask.py` calls (`fill_mask`): the model is loaded as
`bert_tf.from_pretrained(init_checkpoint, head="fill_mask")` loads it (a
release directory, a run's output_dir, a checkpoint prefix, a release's name
or a Hugging Face directory; strictly, with the pre-training heads), every
text is tokenized and checked before the model runs (a [MASK] in each, no
text longer than max_seq_length), and the answers of `BertFillMask.fill_mask`
are written to `output_file` all at once, one JSON object per text:

  {"index": 0, "text": "The capital of France is [MASK].",
   "masks": [[{"score": 0.41, "token": 3000, "token_str": "paris",
               "sequence": "the capital of france is paris."}, ...]]}

`masks` holds one list per [MASK] (in text order) of `top_k` answers, best
first, even for one [MASK] (the Python method returns a flat list then, as
Hugging Face's pipeline).
"""

import json

import tensorflow as tf

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf.errors import UserError
from bert_tf.pretrained import from_pretrained
from bert_tf.pretrained import pretrained_config

# The texts whose best answers are logged as results.
LOGGED_TEXTS = 5


def read_texts(input_file):
    """(texts, names): the non-blank lines of `input_file`, each named by its line number."""
    if not tf.io.gfile.exists(input_file):
        raise UserError("--input_file=%s: no such file" % input_file)
    texts, names = [], []
    with tf.io.gfile.GFile(input_file, "rb") as f:
        for number, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise UserError("line %d of --input_file=%s is not UTF-8 (%s)"
                                % (number, input_file, e.reason)) from None
            if line.strip():
                texts.append(line)
                names.append("line %d of --input_file=%s" % (number, input_file))
    if not texts:
        raise UserError("--input_file=%s has no text (one text with [MASK] per line)"
                        % input_file)
    return texts, names


def _per_mask(answers):
    """A text's answers as a list per [MASK] (the Python method's one-[MASK] list, wrapped)."""
    return [answers] if answers and isinstance(answers[0], dict) else answers


def fill_mask(init_checkpoint, output_file, input_file=None, text=None, bert_config_file=None,
              vocab_file=None, do_lower_case=None, max_seq_length=128, top_k=5, batch_size=32):
    """Writes the `top_k` best tokens for every [MASK] of the texts to `output_file` (JSON lines).

    Every input is checked before the model runs, and nothing is written
    when one is wrong.

    Args:
      init_checkpoint: the model: a release directory, a run's output_dir, a
        checkpoint prefix, a release's name or a Hugging Face directory (as
        `bert_tf.from_pretrained`), with its pre-training heads.
      output_file: the JSON lines file to write (see the module docstring).
      input_file: a text file, one text with [MASK]s per line (blank lines
        are skipped); or
      text: one text with [MASK]s. Exactly one of the two.
      bert_config_file, vocab_file: when they are not beside the checkpoint.
      do_lower_case: the tokenizer's casing; None: from the release's name
        (or a Hugging Face directory's tokenizer_config.json).
      max_seq_length: the longest text in tokens, [CLS] and [SEP] included; a
        longer text is an error (it is never truncated: that could drop a
        [MASK]).
      top_k: the answers per [MASK].
      batch_size: texts per model call.

    Returns:
      The number of lines written.

    Raises:
      UserError: one line naming the flag, file or line at fault.
    """
    if (input_file is None) == (text is None):
        raise UserError("pass exactly one of --input_file (one text per line) and --text")
    for flag, value in (("top_k", top_k), ("batch_size", batch_size),
                        ("max_seq_length", max_seq_length)):
        if value < 1:
            raise UserError("--%s=%d: must be a positive integer" % (flag, value))
    if max_seq_length < 3:
        raise UserError("--max_seq_length=%d is too short for [CLS] [MASK] [SEP]"
                        % max_seq_length)
    fileio.check_writable(output_file, "output_file", directory=False)
    if text is not None:
        texts, names = [text], ["--text"]
    else:
        texts, names = read_texts(input_file)
    pretrained_config(init_checkpoint, bert_config_file).check_max_seq_length(
        max_seq_length, bert_config_file or "the checkpoint's config")
    _, model, _ = from_pretrained(init_checkpoint, head="fill_mask", do_lower_case=do_lower_case,
                                  bert_config_file=bert_config_file, vocab_file=vocab_file)
    model.max_seq_length, model.batch_size = max_seq_length, batch_size
    model.encode_masked(texts, names)  # every text checked before the model runs
    # One run per output file: a second one on it refuses while this one lives.
    with locks.OutputLock(output_file, "fill_mask", flag="output_file", is_file=True):
        answers = model.fill_mask(texts, top_k=top_k)
        with fileio.atomic_write(output_file, "w") as writer:
            for i, (t, a) in enumerate(zip(texts, answers)):
                writer.write(json.dumps({"index": i, "text": t, "masks": _per_mask(a)},
                                        ensure_ascii=False) + "\n")
    for i, (t, a) in enumerate(zip(texts[:LOGGED_TEXTS], answers)):
        best = "; ".join(", ".join("%s %.3f" % (x["token_str"], x["score"]) for x in mask)
                         for mask in _per_mask(a))
        logs.result("%s -> %s", t, best)
    logs.result("Wrote %d lines to %s", len(texts), output_file)
    return len(texts)
