"""The attention weights of one text, as an HTML page (new; `tools/show_attention.py`).

What `tools/show_attention.py` calls (`show_attention`): the config, vocab and
checkpoint are checked and loaded as extract_features loads them (strictly),
the text is tokenized as the original's tools tokenize it (`[CLS] a [SEP]` or
`[CLS] a [SEP] b [SEP]`), the model is run once, and every layer's attention
probabilities are drawn by `bert_tf.runs.attention_html` into one HTML file.
"""

import numpy as np
from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling.config import BertConfig
from bert_tf.runs import attention_html
from bert_tf.runs.extract_features import load_model
from bert_tf.tokenization import pair_features

HTML_SUFFIXES = (".html", ".htm")
# A page larger than this is written with a warning (BERT-base on 16 tokens: about 4 MB).
LARGE_PAGE_BYTES = 50 * 2**20


def attention_weights(model, input_ids, input_mask=None, token_type_ids=None):
    """Every layer's attention probabilities for one sequence, as float32 NumPy arrays.

    Args:
      model: a `BertModel`.
      input_ids, input_mask, token_type_ids: lists (or 1-D arrays) of ints of
        one sequence.

    Returns:
      A list of `num_hidden_layers` float32 arrays [heads, seq_length,
      seq_length], `[head][query][key]`: `outputs["attentions"]` of
      `model(..., output_attentions=True)`, after the mask and the softmax
      (a pruned layer has fewer heads).
    """
    input_ids = np.asarray([input_ids], dtype=np.int32)
    input_mask = (np.ones_like(input_ids) if input_mask is None
                  else np.asarray([input_mask], dtype=np.int32))
    token_type_ids = (np.zeros_like(input_ids) if token_type_ids is None
                      else np.asarray([token_type_ids], dtype=np.int32))
    outputs = model(input_ids, input_mask=input_mask, token_type_ids=token_type_ids,
                    training=False, output_attentions=True)
    return [np.asarray(layer, dtype=np.float32)[0] for layer in outputs["attentions"]]


def kept_heads(bert_config):
    """Per layer, the (original) numbers of the heads the model has: all but the pruned."""
    pruned = getattr(bert_config, "pruned_heads", None) or {}
    return [[h for h in range(bert_config.num_attention_heads) if h not in pruned.get(layer, ())]
            for layer in range(bert_config.num_hidden_layers)]


def _check_arguments(text_a, output_file, bert_config_file, init_checkpoint, vocab_file,
                     max_seq_length):
    for flag, value in (("bert_config_file", bert_config_file), ("vocab_file", vocab_file),
                        ("init_checkpoint", init_checkpoint), ("output_file", output_file)):
        if not value:
            raise UserError("--%s is required" % flag)
    if text_a is None:
        raise UserError("--text_a is required (the text whose attention is shown)")
    if not text_a.strip():
        raise UserError("--text_a=%r: no text (the text whose attention is shown)" % text_a)
    if not str(output_file).lower().endswith(HTML_SUFFIXES):
        raise UserError("--output_file=%s: must end in .html (one self-contained HTML page "
                        "is written)" % output_file)
    if max_seq_length < 3:
        raise UserError("--max_seq_length=%d: must be at least 3 ([CLS], a token, [SEP])"
                        % max_seq_length)


def tokenize(tokenizer, text_a, text_b, max_seq_length):
    """(`PairFeatures` without the padding, list of notes): the tool's one example.

    As the original's tools: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, the
    longer text cut first when the pair does not fit in `max_seq_length`; a
    cut is logged as a warning and returned as a note for the page.

    Raises:
      UserError: `text_a` has no token.
    """
    tokens_a = tokenizer.tokenize(text_a)
    if not tokens_a:
        raise UserError("--text_a=%r: no token in it (the tokenizer drops every character)"
                        % text_a)
    tokens_b = tokenizer.tokenize(text_b) if text_b else None
    if text_b and not tokens_b:
        raise UserError("--text_b=%r: no token in it (the tokenizer drops every character)"
                        % text_b)
    if tokens_b and max_seq_length < 5:
        raise UserError("--max_seq_length=%d: a pair needs at least 5 ([CLS] a [SEP] b [SEP])"
                        % max_seq_length)
    wanted = len(tokens_a) + (len(tokens_b) + 3 if tokens_b else 2)
    pair = pair_features.build_pair_features(tokens_a, tokens_b, max_seq_length, tokenizer)
    n = len(pair.tokens)
    pair = pair_features.PairFeatures(pair.tokens, pair.input_ids[:n], pair.input_mask[:n],
                                      pair.segment_ids[:n])
    notes = []
    if wanted > max_seq_length:
        notes.append("The text has %d tokens with [CLS] and [SEP], more than "
                     "--max_seq_length=%d: cut to %d, as the original's tools cut it."
                     % (wanted, max_seq_length, n))
        logging.warning("%s", notes[-1])
    return pair, notes


def show_attention(text_a, output_file, bert_config_file, init_checkpoint, vocab_file,
                   text_b=None, do_lower_case=True, max_seq_length=128):
    """Writes `output_file`, an HTML page of every layer's and head's attention on the text.

    Every input is checked before the model is built: the flags are given,
    the output file can be written and is `.html`, the config fits the vocab
    and the checkpoint (its index alone), the text has tokens. The page is
    written atomically (temporary name, then rename); see
    `bert_tf.runs.attention_html.render_html` for what it holds.

    Args:
      text_a: str, the text (or the first of a pair).
      output_file: path of the `.html` file to write.
      bert_config_file, init_checkpoint, vocab_file, do_lower_case,
        max_seq_length: as extract_features' flags; a text of more than
        `max_seq_length` tokens (with `[CLS]` and `[SEP]`) is cut with a
        warning, as the original's tools cut it.
      text_b: (optional) str, the second text of a pair (segment 1).

    Returns:
      The list of tokens shown.

    Raises:
      UserError: one line naming the flag or file at fault.
    """
    _check_arguments(text_a, output_file, bert_config_file, init_checkpoint, vocab_file,
                     max_seq_length)
    fileio.check_writable(output_file, "output_file", directory=False)
    bert_config = BertConfig.from_json_file(bert_config_file)
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
    checkpoint.check_checkpoint_fits(bert_config, init_checkpoint, flag="init_checkpoint")
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    pair, notes = tokenize(tokenizer, text_a, text_b, max_seq_length)
    logging.info("tokens: %s", " ".join(tokenization.printable_text(t) for t in pair.tokens))
    heads = kept_heads(bert_config)
    size = attention_html.estimated_size(len(pair.tokens), sum(len(h) + 1 for h in heads))
    if size > LARGE_PAGE_BYTES:
        logging.warning("%d tokens: the page will hold about %d MB (a cell per pair of tokens, "
                        "per head); a browser may be slow to open it. A shorter text (or "
                        "--max_seq_length) makes it smaller.", len(pair.tokens), size // 2**20)
    # One run per output file: a second one on it refuses while this one lives.
    with locks.OutputLock(output_file, "show_attention", flag="output_file", is_file=True):
        model = load_model(bert_config, init_checkpoint)
        attentions = attention_weights(model, pair.input_ids, pair.input_mask, pair.segment_ids)
        if [len(h) for h in heads] != [a.shape[0] for a in attentions]:
            heads = [list(range(a.shape[0])) for a in attentions]
        title = text_a if not text_b else "%s | %s" % (text_a, text_b)
        description = ("%d layers, %d heads, hidden size %d (%s); checkpoint %s; "
                       "%d tokens; do_lower_case=%s" % (
                           bert_config.num_hidden_layers, bert_config.num_attention_heads,
                           bert_config.hidden_size, bert_config_file, init_checkpoint,
                           len(pair.tokens), do_lower_case))
        info = {"text_a": text_a, "text_b": text_b, "segment_ids": list(pair.segment_ids),
                "num_hidden_layers": bert_config.num_hidden_layers,
                "num_attention_heads": bert_config.num_attention_heads,
                "hidden_size": bert_config.hidden_size,
                "bert_config_file": str(bert_config_file),
                "init_checkpoint": str(init_checkpoint), "do_lower_case": bool(do_lower_case),
                "max_seq_length": max_seq_length}
        page = attention_html.render_html(pair.tokens, attentions, title, description,
                                          segment_ids=pair.segment_ids, notes=notes, info=info,
                                          head_indices=heads)
        with fileio.atomic_write(output_file, "w", newline="") as writer:
            writer.write(page)
    logs.result("Wrote the attention of %d layers on %d tokens to %s (%d bytes)",
                len(attentions), len(pair.tokens), output_file, len(page.encode("utf-8")))
    return pair.tokens
