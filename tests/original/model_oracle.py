"""Oracle: the original `modeling.BertModel` (and pre-training heads) in TF1 graph mode.

Usage:
  python -m tests.original.model_oracle save CONFIG INPUTS_NPZ CKPT_PREFIX OUT_NPZ SEED [heads] [optimizer]
      Builds the original graph with random weights (seeded), saves it with
      `tf.train.Saver` (a real Google-format checkpoint: with `heads`, the
      `cls/*` variables too; with `optimizer`, `adam_m`/`adam_v` and
      `global_step` as the original `create_optimizer` makes them), runs the
      inputs and writes every output to OUT_NPZ.
  python -m tests.original.model_oracle restore CONFIG INPUTS_NPZ CKPT_PREFIX OUT_NPZ [heads]
      Builds the same graph, restores CKPT_PREFIX with `tf.train.Saver` (every
      graph variable must be in it), runs the inputs and writes the outputs.

INPUTS_NPZ holds input_ids, input_mask, token_type_ids and, with heads,
masked_lm_positions, masked_lm_ids, masked_lm_weights, next_sentence_labels.
With `attentions` (either mode), OUT_NPZ also holds `attention_probs_<i>`: the
graph's `bert/encoder/layer_<i>/attention/self/Softmax` tensor, fetched by name.
"""

from tests.original import shim  # noqa: F401  (must come first)

import sys

import numpy as np
from bert import modeling
from bert import optimization
from bert import run_pretraining

tf = shim.tf1


def _build(config_file, inputs, heads, attentions=False):
    config = modeling.BertConfig.from_json_file(config_file)
    ph = {k: tf.constant(v) for k, v in inputs.items()}
    model = modeling.BertModel(
        config=config, is_training=False, input_ids=ph["input_ids"],
        input_mask=ph["input_mask"], token_type_ids=ph["token_type_ids"],
        use_one_hot_embeddings=False)
    fetches = {
        "sequence_output": model.get_sequence_output(),
        "pooled_output": model.get_pooled_output(),
        "embedding_output": model.get_embedding_output(),
        "word_embedding_output": model.get_word_embedding_output(),
    }
    for i, layer in enumerate(model.get_all_encoder_layers()):
        fetches["layer_%d" % i] = layer
        if attentions:
            fetches["attention_probs_%d" % i] = tf.get_default_graph().get_tensor_by_name(
                "bert/encoder/layer_%d/attention/self/Softmax:0" % i)
    loss = None
    if heads:
        (mlm_loss, mlm_example_loss, mlm_log_probs) = run_pretraining.get_masked_lm_output(
            config, model.get_sequence_output(), model.get_embedding_table(),
            ph["masked_lm_positions"], ph["masked_lm_ids"], ph["masked_lm_weights"])
        (nsp_loss, nsp_example_loss, nsp_log_probs) = run_pretraining.get_next_sentence_output(
            config, model.get_pooled_output(), ph["next_sentence_labels"])
        fetches.update({
            "masked_lm_loss": mlm_loss, "masked_lm_example_loss": mlm_example_loss,
            "masked_lm_log_probs": mlm_log_probs, "next_sentence_loss": nsp_loss,
            "next_sentence_example_loss": nsp_example_loss,
            "next_sentence_log_probs": nsp_log_probs,
        })
        loss = mlm_loss + nsp_loss
    return fetches, loss


def main(argv):
    mode = argv[1]
    if mode == "save":
        config_file, inputs_npz, ckpt_prefix, out_npz, seed = argv[2:7]
        flags = set(argv[7:])
        tf.set_random_seed(int(seed))
    elif mode == "restore":
        config_file, inputs_npz, ckpt_prefix, out_npz = argv[2:6]
        flags = set(argv[6:])
    else:
        raise SystemExit("unknown mode %s" % mode)
    inputs = dict(np.load(inputs_npz))
    heads = "heads" in flags
    fetches, loss = _build(config_file, inputs, heads, "attentions" in flags)
    if mode == "save" and "optimizer" in flags:
        # Creates adam_m/adam_v slots and global_step exactly as the original.
        optimization.create_optimizer(loss, 1e-4, 10, 1, False)
    saver = tf.train.Saver(tf.global_variables())
    with tf.Session() as sess:
        if mode == "save":
            sess.run(tf.global_variables_initializer())
            saver.save(sess, ckpt_prefix, write_meta_graph=False)
        else:
            saver.restore(sess, ckpt_prefix)
        values = sess.run(fetches)
    np.savez(out_npz, **values)


if __name__ == "__main__":
    main(sys.argv)
