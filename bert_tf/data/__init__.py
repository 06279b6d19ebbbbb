"""The data machinery every task shares: text in, TFRecords out, tf.data pipelines back in.

Each task's own readers and records are in its folder (`bert_tf/tasks/<task>/data*`).

  demo_corpus       real English from `pydoc_data.topics`: a pre-training
                    corpus, a sentence-pair task (MRPC's layout).
  vocab             learn a WordPiece vocab.txt (tensorflow-text's learner).
  text_files        text files as the original reads them: lines, documents,
                    shards as byte ranges (create_pretraining_data's, in
                    `bert_tf/tasks/pretraining/data/`, and the vocab learner's).
  tfrecord          TFRecord files without TensorFlow (tf.io.TFRecordWriter's bytes).
  squad_windows     run_squad's doc-stride windows, in Python and as graph ops (the
                    classifier's and the named-entity windows too).
  text_windows      a long text in those windows; the one stride rule and default per task.
  input_pipeline    the original input_fns as tf.data, with every record checked.
  record_checks     the records against the model: the first ones of each file, every
                    one inside tf.data, a bad one named in one line.
  finite_input      every eval / predict example exactly once on any number of replicas.

The text modules (all but input_pipeline, record_checks and finite_input)
import neither TensorFlow nor Keras; TensorFlow is loaded
only for `gs://` paths and by the functions that write or parse TFRecords
with it.
"""
