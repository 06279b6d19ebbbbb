r"""Create masked-LM / next-sentence TFRecords (the original's `create_pretraining_data.py`).

  bert-create-pretraining-data \
    --input_file=corpus.txt --output_file=/tmp/tf_examples.tfrecord \
    --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True \
    --max_seq_length=128 --max_predictions_per_seq=20 --masked_lm_prob=0.15 \
    --random_seed=12345 --dupe_factor=5

Input: one sentence per line, a blank line between documents (several files
and globs, comma-separated, are read as one stream). Output: the original's
seven features, written round-robin over the comma-separated output files.

By default (exact mode) the same corpus, vocab, flags and seed give the same
instances in the same order as the original. `--num_workers=N` (N > 1) or
`--documents_per_shard=D` switch to sharded mode: shards of D documents each
get their own seed, run in N processes, and memory stays bounded; the output
then depends on the seed and D, never on N (see bert_tf/tasks/pretraining/data/create.py).
Without --documents_per_shard, D comes from the corpus: 10,000, or a 16th of a
corpus of fewer than 160,000 documents (at least 64), so that a small corpus
has shards for the workers too. With fewer shards than workers (a corpus of
fewer than 64 documents a worker), the N processes share each shard. Local
files are read and written without importing TensorFlow.

`--runner=DirectRunner|DataflowRunner|FlinkRunner|SparkRunner` runs sharded
mode on Apache Beam (`pip install bert_tf[beam]`) and writes the same files as
`--documents_per_shard=D` without it; Beam's own options follow a `--`:

  bert-create-pretraining-data --input_file='corpus/*.txt' \
    --output_file=data/tf_examples.tfrecord --num_output_files=16 \
    --vocab_file=vocab.txt --runner=DirectRunner \
    -- --direct_running_mode=multi_processing --direct_num_workers=8

Also `python -m bert_tf.tools.create_pretraining_data`; in a clone,
`python tools/create_pretraining_data.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (
    groups.string("input_file", None, "Input raw text file (or comma-separated list of files)."),
    groups.string("output_file", None,
                  "Output TF example file (or comma-separated list of files)."),
    groups.VOCAB_FILE,
    groups.DO_LOWER_CASE,
    groups.boolean("do_whole_word_mask", False,
                   "Whether to use whole word masking rather than per-WordPiece masking."),
    groups.integer("max_seq_length", 128, "Maximum sequence length."),
    groups.integer("max_predictions_per_seq", 20,
                   "Maximum number of masked LM predictions per sequence."),
    groups.integer("random_seed", 12345, "Random seed for data generation."),
    groups.integer("dupe_factor", 10,
                   "Number of times to duplicate the input data (with different masks)."),
    groups.float_("masked_lm_prob", 0.15, "Masked LM probability."),
    groups.float_("short_seq_prob", 0.1,
                  "Probability of creating sequences which are shorter than the "
                  "maximum length."),
    # Beyond the original.
    groups.integer(
        "num_workers", 1,
        "Worker processes. 1 (default) = exact mode, the original's output. "
        "N > 1 implies sharded mode (--documents_per_shard; by default 10000, or for "
        "a corpus of fewer than 160000 documents a 16th of them, at least 64)."),
    groups.integer(
        "documents_per_shard", 0,
        "0 (default) = exact mode: all documents in memory, the original's output. "
        "D > 0 = sharded mode: shards of D consecutive documents, each with its own "
        "seed derived from --random_seed, written in shard order; bounded memory."),
    groups.integer(
        "num_output_files", 0,
        "0 (default) = --output_file is the original's comma-separated list of "
        "files. N > 0 = write N files named <output_file>-00000-of-0000N, ..."),
    groups.string(
        "runner", None,
        "Run sharded mode on Apache Beam with this runner (DirectRunner, "
        "DataflowRunner, FlinkRunner, SparkRunner, ...): the same output files as "
        "--documents_per_shard without it. Beam's own pipeline options go after "
        "a --. Needs `pip install bert_tf[beam]`."),
    groups.integer(
        "record_buffer_mb", 256,
        "Exact mode keeps the serialized instances for the final shuffle in memory "
        "up to this many MB, then spills them to a temporary file next to the "
        "first output file."),
)

# Beam's own pipeline options (after a `--`) are the run's beam_args.
def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.pretraining.run_create_data import create_pretraining_data
    return create_pretraining_data


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("input_file", "output_file", "vocab_file"), positional="beam_args")


def main(argv=None):
    """The command line: `bert-create-pretraining-data`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
