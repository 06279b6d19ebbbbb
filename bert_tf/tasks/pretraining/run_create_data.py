"""What `tools/create_pretraining_data.py` runs (the original's `main`), from its flag values.

The library half of `tools/create_pretraining_data.py`: the checks of its
flag values, the output file names, the input patterns, the tokenizer, and
then `bert_tf.tasks.pretraining.data.create_pretraining_data` (exact or sharded
mode) or, with a Beam runner, `bert_tf.tasks.pretraining.data.beam`. Imports
neither TensorFlow nor Apache Beam until a "://" path or a runner needs it.
"""

import logging as std_logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.tasks.pretraining.data import checks
from bert_tf.tasks.pretraining.data import create
from bert_tf.data import text_files
from bert_tf.errors import UserError


def create_pretraining_data(input_file, output_file, vocab_file, do_lower_case=True,
                            do_whole_word_mask=False, max_seq_length=128,
                            max_predictions_per_seq=20, random_seed=12345, dupe_factor=10,
                            masked_lm_prob=0.15, short_seq_prob=0.1, num_workers=1,
                            documents_per_shard=0, num_output_files=0, runner=None,
                            beam_args=(), record_buffer_mb=256):
    """Creates pre-training TFRecords as `tools/create_pretraining_data.py` does.

    Args:
      input_file: str, the original's comma-separated files and globs, read in
        order as one stream.
      output_file: str, the original's comma-separated output files, or (with
        `num_output_files`) their prefix.
      vocab_file, do_lower_case: the `FullTokenizer`.
      do_whole_word_mask, max_seq_length, max_predictions_per_seq,
        random_seed, dupe_factor, masked_lm_prob, short_seq_prob: the
        original flags.
      num_workers, documents_per_shard: see
        `bert_tf.tasks.pretraining.data.create_pretraining_data`.
      num_output_files: int; N > 0 = the N files `<output_file>-0000k-of-0000N`.
      runner: str or None; a Beam runner (DirectRunner, DataflowRunner, ...)
        runs sharded mode on Apache Beam.
      beam_args: list of str, Beam's own pipeline options (with `runner`).
      record_buffer_mb: int, exact mode's in-memory budget (MB) for the
        serialized instances before they spill to a temporary file.

    Returns:
      The stats dict of `create_pretraining_data` (or of the Beam run).

    Raises:
      UserError: bad flag values, inputs or vocab; no output file is left
        behind.
    """
    if beam_args and not runner:
        raise UserError("Too many command-line arguments: %s (Beam's pipeline options after a "
                        "-- go with --runner)" % " ".join(beam_args))
    checks.validate_options(max_seq_length, max_predictions_per_seq, dupe_factor,
                            masked_lm_prob, short_seq_prob, num_workers, documents_per_shard)
    if record_buffer_mb < 0:
        raise UserError("--record_buffer_mb=%d must be >= 0" % record_buffer_mb)
    if runner and num_workers > 1:
        raise UserError("--num_workers=%d is sharded mode's process count; with --runner=%s "
                        "the runner's options set the workers (DirectRunner: -- "
                        "--direct_running_mode=multi_processing --direct_num_workers=%d)"
                        % (num_workers, runner, num_workers))
    output_files = checks.output_file_names(output_file, num_output_files)
    for name in output_files:
        if name:  # an empty name gets its own error below
            fileio.check_writable(name, "output_file", directory=False)
    # A release's name (uncased_L-12_H-768_A-12) is its vocab.txt in the cache.
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    input_files = text_files.expand_input_patterns(input_file.split(","))
    # One run per output: a second one on the same files refuses while this
    # one lives (the lock is `<first output file>.lock`; runs writing other
    # files of one directory, shard by shard, do not wait for each other).
    with locks.OutputLock(output_files[0], "create_pretraining_data", flag="output_file",
                          is_file=True, enabled=all(output_files)):
        if runner:
            return _run_on_beam(
                input_files, output_files, vocab_file, do_lower_case=do_lower_case,
                max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
                random_seed=random_seed, dupe_factor=dupe_factor, masked_lm_prob=masked_lm_prob,
                short_seq_prob=short_seq_prob, do_whole_word_mask=do_whole_word_mask,
                documents_per_shard=documents_per_shard, runner=runner, beam_args=beam_args)
        tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file,
                                               do_lower_case=do_lower_case)
        return create.create_pretraining_data(
            input_files, output_files, tokenizer, vocab_file=vocab_file,
            max_seq_length=max_seq_length,
            max_predictions_per_seq=max_predictions_per_seq,
            random_seed=random_seed, dupe_factor=dupe_factor,
            masked_lm_prob=masked_lm_prob, short_seq_prob=short_seq_prob,
            do_whole_word_mask=do_whole_word_mask, num_workers=num_workers,
            documents_per_shard=documents_per_shard,
            record_buffer_bytes=record_buffer_mb << 20)


def _run_on_beam(input_files, output_files, vocab_file, runner, **kwargs):
    try:
        from bert_tf.tasks.pretraining.data import beam  # pylint: disable=g-import-not-at-top
    except ImportError as e:
        if not (e.name or "").startswith("apache_beam"):
            raise
        raise UserError("--runner=%s needs Apache Beam: pip install 'bert_tf[beam]'"
                        % runner) from None
    # DirectRunner's worker processes log to this stderr themselves; their
    # logs also come back through the runner, once more each.
    std_logging.getLogger("apache_beam.runners.portability.local_job_service").setLevel(
        std_logging.WARNING)
    return beam.create_pretraining_data_beam(input_files, output_files, vocab_file,
                                             runner=runner, **kwargs)
