"""Fixed feature vectors from a pre-trained BERT (original: `extract_features.py`).

What `tools/extract_features.py` calls (`extract_features`), and its steps:
reading `text_a ||| text_b` lines, building features exactly as the original,
running the model and formatting the original JSON lines.
"""

import collections
import json
import re

import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress
from bert_tf.item_progress import log_tracing
from bert_tf.modeling import checkpoint
from bert_tf.modeling import padding
from bert_tf.modeling import precision
from bert_tf.modeling.bert_model import BertModel
from bert_tf.modeling.config import BertConfig
from bert_tf.tokenization import pair_features

InputExample = collections.namedtuple("InputExample", ["unique_id", "text_a", "text_b"])
InputFeatures = collections.namedtuple(
    "InputFeatures", ["unique_id", "tokens", "input_ids", "input_mask", "input_type_ids"])


def read_examples(input_file):
    """Reads one `InputExample` per line of `input_file`.

    As the original: each line is stripped; `a ||| b` (split at the last
    " ||| ") gives a pair; blank lines are kept (they become `[CLS] [SEP]`);
    `unique_id` is the 0-based line number; bytes that are not UTF-8 are dropped.
    An empty file is a `UserError` (the original wrote an empty output).
    """
    if not tf.io.gfile.exists(input_file):
        raise UserError("--input_file=%s: no such file" % input_file)
    examples = []
    with tf.io.gfile.GFile(input_file, "rb") as reader:
        data = reader.read()
    text = tokenization.convert_to_unicode(data)
    # The original reads with readline(), which splits on "\n" only.
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        # Port note: the original wrote an empty output file.
        raise UserError("--input_file=%s is empty: no line to extract features from" % input_file)
    for unique_id, line in enumerate(lines):
        line = line.strip()
        m = re.match(r"^(.*) \|\|\| (.*)$", line)
        if m is None:
            text_a, text_b = line, None
        else:
            text_a, text_b = m.group(1), m.group(2)
        examples.append(InputExample(unique_id=unique_id, text_a=text_a, text_b=text_b))
    return examples


def convert_examples_to_features(examples, seq_length, tokenizer, log_examples=5):
    """`InputExample`s -> `InputFeatures`, exactly as the original.

    `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, type ids 0 for the first
    segment and 1 for the second, zero padding to `seq_length`
    (`bert_tf.data.pair_features.build_pair_features`). The first `log_examples`
    are logged as the original logs them, at DEBUG (the original: INFO).
    """
    features = []
    progress = ItemProgress("features", len(examples), "examples")  # every 10 s, and the end
    for ex_index, example in enumerate(examples):
        tokens_a = tokenizer.tokenize(example.text_a)
        tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
        pair = pair_features.build_pair_features(tokens_a, tokens_b, seq_length, tokenizer)
        if ex_index < log_examples:
            logging.debug("*** Example ***")
            logging.debug("unique_id: %s", example.unique_id)
            logging.debug("tokens: %s", " ".join(tokenization.printable_text(x)
                                                 for x in pair.tokens))
            logging.debug("input_ids: %s", " ".join(str(x) for x in pair.input_ids))
            logging.debug("input_mask: %s", " ".join(str(x) for x in pair.input_mask))
            logging.debug("input_type_ids: %s", " ".join(str(x) for x in pair.segment_ids))
        features.append(InputFeatures(example.unique_id, pair.tokens, pair.input_ids,
                                      pair.input_mask, pair.segment_ids))
        progress.update(ex_index + 1)
    progress.finish()
    return features


def parse_layer_indexes(layers, num_hidden_layers):
    """`"-1,-2"` -> [-1, -2]; each must index the encoder's layer outputs."""
    try:
        indexes = [int(x) for x in layers.split(",")]
    except ValueError:
        raise UserError("--layers=%s: expected comma-separated integers" % layers)
    for index in indexes:
        if not -num_hidden_layers <= index < num_hidden_layers:
            raise UserError(
                "--layers=%s: layer %d does not exist (the model has %d layers: 0..%d or -%d..-1)"
                % (layers, index, num_hidden_layers, num_hidden_layers - 1, num_hidden_layers))
    return indexes


def load_model(bert_config, init_checkpoint, mixed_precision=None):
    """The `BertModel` of `bert_config` with every variable from `init_checkpoint` (strict).

    Args:
      bert_config: `BertConfig`.
      init_checkpoint: a checkpoint prefix.
      mixed_precision: None (float32), "bf16" or "fp16": the forward pass
        computes in bfloat16 / float16, with the encoder's dense weights
        stored in that dtype (`precision.dtype_policy(..., inference=True)`:
        the mixed policy's numbers). The process's dtype policy is left as it
        was.
    """
    with precision.dtype_policy(mixed_precision, inference=True):
        model = BertModel(bert_config)
    checkpoint.load_checkpoint(model, init_checkpoint, strict=True, flag="init_checkpoint")
    return model


def predict_layers(model, features, layer_indexes, batch_size, jit_compile=False):
    """Runs the model over `features`; yields `(feature, [array [seq_length, hidden]])`.

    One float32 array per entry of `layer_indexes`, in that order, indexing
    `all_encoder_layers` (0 is the first Transformer layer, -1 the last);
    a mixed-precision model's outputs are cast to float32.
    """

    @tf.function(jit_compile=jit_compile, reduce_retracing=True)
    def _predict(input_ids, input_mask, input_type_ids):
        outputs = model(input_ids, input_mask, input_type_ids, training=False)
        all_layers = outputs["all_encoder_layers"]
        return [tf.cast(all_layers[i], tf.float32) for i in layer_indexes]

    # A line every 50 batches, and at least every 10 s.
    progress = ItemProgress("extract_features", len(features), "examples", every=50 * batch_size)
    if features:
        log_tracing(progress.what)  # the first call traces _predict
    for begin in range(0, len(features), batch_size):
        batch = features[begin:begin + batch_size]
        arrays = [np.asarray([getattr(f, key) for f in batch], dtype=np.int32)
                  for key in ("input_ids", "input_mask", "input_type_ids")]
        # No work on padding: the batch up to its longest row (the JSON reads real tokens only).
        length = padding.numpy_attended_length(arrays[1], padding.TRAINING_LENGTH_MULTIPLE)
        arrays = [array[:, :length] for array in arrays]
        layer_outputs = [out.numpy() for out in _predict(*arrays)]
        for k, feature in enumerate(batch):
            yield feature, [out[k] for out in layer_outputs]
        progress.update(begin + len(batch))
    progress.finish()


def feature_to_json(feature, layer_indexes, layer_values):
    """The original JSON line (without the newline) for one feature.

    `{"linex_index": id, "features": [{"token": t, "layers": [{"index": i,
    "values": [round(float(x), 6), ...]}, ...]}, ...]}`: one entry per real
    token, no padding; the key really is spelled `linex_index`.
    """
    output = collections.OrderedDict()
    output["linex_index"] = feature.unique_id
    all_features = []
    # `tolist()` of a float32 array gives the same Python floats as the
    # original's `float(x)`; Python's `round` then rounds them identically.
    rows = [np.asarray(values, dtype=np.float32).tolist() for values in layer_values]
    for i, token in enumerate(feature.tokens):
        all_layers = []
        for j, layer_index in enumerate(layer_indexes):
            layer = collections.OrderedDict()
            layer["index"] = layer_index
            layer["values"] = [round(x, 6) for x in rows[j][i]]
            all_layers.append(layer)
        token_features = collections.OrderedDict()
        token_features["token"] = token
        token_features["layers"] = all_layers
        all_features.append(token_features)
    output["features"] = all_features
    return json.dumps(output)


def write_features_jsonl(model, features, layer_indexes, batch_size, output_file):
    """Writes the original JSON-lines file, atomically (temporary name, then rename)."""
    count = 0
    with fileio.atomic_write(output_file, "w") as writer:
        for feature, values in predict_layers(model, features, layer_indexes, batch_size):
            writer.write(feature_to_json(feature, layer_indexes, values) + "\n")
            count += 1
    return count


def extract_features(input_file, output_file, bert_config_file, init_checkpoint, vocab_file,
                     layers="-1,-2,-3,-4", max_seq_length=128, do_lower_case=True,
                     batch_size=32, mixed_precision=None):
    """Writes the original's JSON lines for every line of `input_file` (the tool's run).

    Every input is checked before the model is built: the output file can be
    written, the config fits the vocab and the checkpoint, `layers` names
    existing layers.

    Args:
      input_file, output_file, bert_config_file, init_checkpoint, vocab_file,
        layers, max_seq_length, do_lower_case, batch_size: the original's flags.
      mixed_precision: None (float32), "bf16" or "fp16" (new).

    Returns:
      The number of lines written.

    Raises:
      UserError: one line naming the flag or file at fault.
    """
    fileio.check_writable(output_file, "output_file", directory=False)
    # A release's name (uncased_L-12_H-768_A-12) is its file in the cache.
    bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    bert_config = BertConfig.from_json_file(bert_config_file)
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
    # The config against the checkpoint (its index alone), before the input is read.
    checkpoint.check_checkpoint_fits(bert_config, init_checkpoint, flag="init_checkpoint")
    if max_seq_length < 2:
        raise UserError("--max_seq_length=%d: must be at least 2 ([CLS] and [SEP])"
                        % max_seq_length)
    if batch_size < 1:
        raise UserError("--batch_size=%d: must be positive" % batch_size)
    layer_indexes = parse_layer_indexes(layers, bert_config.num_hidden_layers)
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    examples = read_examples(input_file)
    features = convert_examples_to_features(examples, max_seq_length, tokenizer)
    # One run per output file: a second one on it refuses while this one lives.
    with locks.OutputLock(output_file, "extract_features", flag="output_file", is_file=True):
        model = load_model(bert_config, init_checkpoint, mixed_precision=mixed_precision)
        count = write_features_jsonl(model, features, layer_indexes, batch_size, output_file)
    logs.result("Wrote %d lines to %s", count, output_file)
    return count
