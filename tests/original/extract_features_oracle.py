"""Oracle: the original `extract_features.py` output for an input file.

Usage:
  python -m tests.original.extract_features_oracle CONFIG VOCAB CKPT INPUT OUTPUT LAYERS MAX_SEQ DO_LOWER

Uses the original's `read_examples`, `convert_examples_to_features`,
`BertModel` (is_training=False) and `init_from_checkpoint`. The Estimator is
gone in TF 2.21, so the prediction loop and the JSON writing of the original
`main` (lines 380-410) are re-stated here with a `tf.Session`.
"""

from tests.original import shim  # noqa: F401  (must come first)

import codecs
import collections
import json
import sys

import numpy as np
from bert import extract_features
from bert import modeling
from bert import tokenization

tf = shim.tf1


def main(argv):
    config_file, vocab, ckpt, input_file, output_file, layers, max_seq, do_lower = argv[1:9]
    layer_indexes = [int(x) for x in layers.split(",")]
    seq_length = int(max_seq)
    config = modeling.BertConfig.from_json_file(config_file)
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab, do_lower_case=do_lower == "true")
    examples = extract_features.read_examples(input_file)
    features = extract_features.convert_examples_to_features(examples, seq_length, tokenizer)

    input_ids = tf.placeholder(tf.int32, [None, seq_length])
    input_mask = tf.placeholder(tf.int32, [None, seq_length])
    input_type_ids = tf.placeholder(tf.int32, [None, seq_length])
    model = modeling.BertModel(config=config, is_training=False, input_ids=input_ids,
                               input_mask=input_mask, token_type_ids=input_type_ids,
                               use_one_hot_embeddings=False)
    tvars = tf.trainable_variables()
    assignment_map, _ = modeling.get_assignment_map_from_checkpoint(tvars, ckpt)
    tf.train.init_from_checkpoint(ckpt, assignment_map)
    all_layers = model.get_all_encoder_layers()
    fetches = [all_layers[i] for i in layer_indexes]
    with tf.Session() as sess, codecs.getwriter("utf-8")(tf.gfile.Open(output_file, "w")) as writer:
        sess.run(tf.global_variables_initializer())
        for begin in range(0, len(features), 4):
            batch = features[begin:begin + 4]
            values = sess.run(fetches, {
                input_ids: np.array([f.input_ids for f in batch]),
                input_mask: np.array([f.input_mask for f in batch]),
                input_type_ids: np.array([f.input_type_ids for f in batch]),
            })
            for k, feature in enumerate(batch):
                output_json = collections.OrderedDict()
                output_json["linex_index"] = feature.unique_id
                all_features = []
                for (i, token) in enumerate(feature.tokens):
                    layer_list = []
                    for (j, layer_index) in enumerate(layer_indexes):
                        layer_output = values[j][k]
                        entry = collections.OrderedDict()
                        entry["index"] = layer_index
                        entry["values"] = [round(float(x), 6) for x in layer_output[i:(i + 1)].flat]
                        layer_list.append(entry)
                    token_features = collections.OrderedDict()
                    token_features["token"] = token
                    token_features["layers"] = layer_list
                    all_features.append(token_features)
                output_json["features"] = all_features
                writer.write(json.dumps(output_json) + "\n")


if __name__ == "__main__":
    main(sys.argv)
