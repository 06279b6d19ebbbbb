"""The model: the original `modeling.py` as Keras 3 layers, its heads and its checkpoints.

  config       BertConfig: the 11 keys of bert_config.json.
  activations  gelu (the original's tanh form), gelu_exact, get_activation.
  layers/      one module per TF1 scope family (embeddings, attention,
               transformer, masks, initializers, dense, dropout).
  bert_model   BertModel, a keras.Model named "bert".
  heads        the heads under `cls` (masked LM, next sentence, SQuAD) and
               the classifier's unscoped output_weights / output_bias.
  checkpoint   Google-format checkpoints: the one map between Keras variables
               and TF1 names, heads included.
  precision    the mixed-precision dtype policies models are built under.

Every variable's path is its name in Google's checkpoints
(`bert/encoder/layer_0/attention/self/query/kernel`). Importing this package
imports nothing; `bert_tf.modeling.config` stays free of TensorFlow.
"""
