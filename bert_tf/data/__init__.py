"""Pre-training data: corpus -> vocab -> TFRecords -> tf.data.

Modules (import the one you need; this package imports nothing heavy):
  demo_corpus        a real-English demo corpus from `pydoc_data.topics`.
  vocab              learn a WordPiece vocab.txt (tensorflow-text's learner).
  pretraining_data   the original `create_pretraining_data`, exact and fast,
                     plus a sharded multi-process mode.
  input_pipeline     the original `input_fn` as a tf.data pipeline.
"""
