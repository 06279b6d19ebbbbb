"""The checks both drivers (`create`, `beam`) make before any work.

The original's flags (`validate_options`: values with which no instance can
be made), the input and output files (`check_files`), and the output names
that `--output_file` and `--num_output_files` give (`output_file_names`).
"""

import os

from bert_tf.errors import UserError


def validate_options(max_seq_length, max_predictions_per_seq, dupe_factor,
                     masked_lm_prob, short_seq_prob, num_workers=1,
                     documents_per_shard=0):
    """Raises UserError for flag values with which no instance can be made.

    Port note: the original fails later (an AssertionError or a ValueError from
    `randint` for max_seq_length < 5) or writes degenerate files (empty masked
    features for max_predictions_per_seq = 0, no instances for dupe_factor = 0).
    """
    if max_seq_length < 5:
        raise UserError("--max_seq_length=%d cannot hold an instance: it needs "
                        "[CLS] A [SEP] B [SEP] with A and B non-empty, so at least 5"
                        % max_seq_length)
    if max_predictions_per_seq < 1:
        raise UserError("--max_predictions_per_seq=%d cannot hold an instance's "
                        "masked tokens (every instance masks at least 1)"
                        % max_predictions_per_seq)
    if dupe_factor < 1:
        raise UserError("--dupe_factor=%d must be >= 1" % dupe_factor)
    if not 0.0 <= masked_lm_prob <= 1.0:
        raise UserError("--masked_lm_prob=%r must be in [0, 1]" % masked_lm_prob)
    if not 0.0 <= short_seq_prob <= 1.0:
        raise UserError("--short_seq_prob=%r must be in [0, 1]" % short_seq_prob)
    if num_workers < 1:
        raise UserError("--num_workers=%d must be >= 1" % num_workers)
    if documents_per_shard < 0:
        raise UserError("--documents_per_shard=%d must be >= 0" % documents_per_shard)


def check_files(input_files, output_files):
    """Raises UserError for output names that cannot be written or inputs that are missing.

    Returns:
      `output_files` as a list.
    """
    output_files = list(output_files)
    if not output_files or not all(output_files):
        raise UserError("--output_file: empty output file name in %r" % (",".join(output_files),))
    # Port note: the original opens two writers on a repeated file name.
    if len(set(output_files)) != len(output_files):
        raise UserError("--output_file lists the same file twice: %s" % ",".join(output_files))
    for name in input_files:
        if not os.path.exists(name) and "://" not in name:
            raise UserError("--input_file: %s does not exist" % name)
    return output_files


def output_file_names(output_file, num_output_files=0):
    """The output files that `--output_file` and `--num_output_files` name.

    Args:
      output_file: str, the original's comma-separated list of files, or
        (with `num_output_files`) one name used as a prefix.
      num_output_files: int; 0 = the comma-separated list; N > 0 = the N
        files `<output_file>-00000-of-0000N` .. `-0000(N-1)-of-0000N`.

    Returns:
      A list of str.
    """
    if num_output_files < 0:
        raise UserError("--num_output_files=%d must be >= 0" % num_output_files)
    # The original splits --output_file on "," without stripping.
    if not num_output_files:
        return output_file.split(",")
    if "," in output_file:
        raise UserError("--output_file=%s: with --num_output_files, give one name (the "
                        "files' prefix), not a comma-separated list" % output_file)
    return ["%s-%05d-of-%05d" % (output_file, i, num_output_files)
            for i in range(num_output_files)]
