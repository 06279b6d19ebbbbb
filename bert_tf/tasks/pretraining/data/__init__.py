"""Masked-LM / next-sentence pre-training data: the original algorithm, fast.

A port of Google's `create_pretraining_data.py` (P = pip bert-tensorflow
1.0.4, G = GitHub HEAD eedf571) that writes the same instances in the same
order, plus a sharded multi-process mode (see `create.py` for the modes).
One module per job, each readable beside the original function it ports:

  create     the entry point, `create_pretraining_data` (the original's
             `main`), and exact mode.
  checks     what both drivers check first: the original's flags, the input
             and output files, the output names.
  (`bert_tf.data.text_files`, which the vocab learner shares: input files
  as the original reads them, `tf.gfile` lines, one stream, blank lines
  between documents, `--input_file`'s globs, and sharded mode's shards as
  byte ranges.)
  tokens     documents as token ids, tokenized with a per-chunk cache
             (`create_training_instances`' reading loop), and `VocabInfo`.
  instances  the algorithm on token ids, with the original's random draws:
             the dupe loop, `create_instances_from_document`,
             `truncate_seq_pair`, `create_masked_lm_predictions`.
  records    `tf.train.Example` bytes by hand (the original's seven
             features), and the log of an instance.
  writing    round-robin TFRecord output (`write_instance_to_example_files`),
             exact mode's record buffer, progress logging.
  workers    sharded mode: shards generated in worker processes.
  rng_plan   where each unit's random draws start, so that workers can share
             a shard.
  beam       sharded mode on Apache Beam (imports apache_beam; not imported
             here).

No module here imports TensorFlow (but for a "://" path) except `beam`.
"""

from bert_tf.tasks.pretraining.data.checks import output_file_names
from bert_tf.tasks.pretraining.data.checks import validate_options
from bert_tf.tasks.pretraining.data.create import create_pretraining_data
from bert_tf.data.text_files import default_documents_per_shard
from bert_tf.data.text_files import expand_input_patterns
