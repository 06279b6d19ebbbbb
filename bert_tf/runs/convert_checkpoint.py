"""A BERT directory converted between Google's and Hugging Face's formats (new; `bert-convert-checkpoint`).

What `tools/convert_checkpoint.py` calls (`convert_checkpoint`). The tensors
are read by the one name map (`bert_tf.modeling.checkpoint` for a Google
checkpoint, `bert_tf.modeling.huggingface` for a Hugging Face directory),
checked strictly against the config (a missing, unexpected or wrong-shaped
tensor is one line naming it), and written in the other format with no Keras
model in between: every value is copied bit for bit (Google -> Hugging Face
-> Google gives back every variable exactly). A Google checkpoint's optimizer
state (`adam_m`, `adam_v`, `global_step`) is left out, with a log line.
"""

import os

from absl import logging

from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.modeling import huggingface
from bert_tf.modeling.config import BertConfig
from bert_tf.tasks import registry
from bert_tf.tokenization import huggingface as hf_tokenizer
from bert_tf.training import run_record

FORMATS = checkpoint.SAVE_FORMATS


def _head_of(names):
    heads = sorted({checkpoint.head_of(n) for n in names} - {None})
    if len(heads) > 1:
        raise UserError("the checkpoint holds %s heads: a directory holds at most one"
                        % " and ".join(heads))
    return heads[0] if heads else None


def convert_checkpoint(input, output_dir, from_format, to_format, bert_config_file=None,  # pylint: disable=redefined-builtin
                       vocab_file=None, do_lower_case=None, overwrite=False):
    """Converts a BERT directory (or checkpoint) from one format to the other.

    Args:
      input: "google": a release directory, a checkpoint prefix or an
        output_dir (its latest checkpoint; a training run's, with its
        bert_tf_run.json: its best/ checkpoint with --eval_every_steps, and
        its casing), or a release's name;
        "huggingface": a Hugging Face BERT directory.
      output_dir: the directory to write (it must not exist or be empty,
        unless `overwrite`); written under a temporary name, then renamed.
      from_format, to_format: "google" or "huggingface".
      bert_config_file, vocab_file: when not beside the input (a Google
        checkpoint's directory holds bert_config.json and vocab.txt).
      do_lower_case: the casing written to tokenizer_config.json (None: the
        input's tokenizer_config.json, else True).
      overwrite: replace a non-empty output_dir.

    Returns:
      `output_dir`.

    Raises:
      UserError: one line naming the file, flag or tensor at fault; nothing
        is written then.
    """
    for flag, value in (("from", from_format), ("to", to_format)):
        if value not in FORMATS:
            raise UserError("--%s=%s: one of %s" % (flag, value, ", ".join(FORMATS)))
    input = releases.resolve_file(input, "init_checkpoint") if from_format == "google" else input
    is_hf = huggingface.is_hf_directory(input)
    if from_format == "huggingface" and not is_hf:
        raise UserError("--input=%s: not a Hugging Face BERT directory (no config.json or "
                        "model.safetensors)" % input)
    if from_format == "google" and is_hf:
        raise UserError("--input=%s: a Hugging Face directory; pass --from=huggingface" % input)
    architecture = labels = None
    run = (run_record.model_files(input) if from_format == "google" and os.path.isdir(str(input))
           else None)
    if run is not None:
        # A training run's output_dir: its own config, vocab and casing, unless given alike.
        record = run["record"]
        run_record.check_files_agree(run, "--input=%s" % input, bert_config_file, vocab_file)
        run_record.check_agrees(record, input, "do_lower_case", do_lower_case)
        bert_config_file = bert_config_file or run["bert_config_file"]
        vocab_file = vocab_file or run["vocab_file"]
        if do_lower_case is None:
            do_lower_case = record.get("do_lower_case")
        input = run["best"] or input
        if registry.is_task(record.get("task")):  # the run's model's own class
            architecture = registry.hf_architecture(record["task"])
            labels = record.get("labels")
    path = checkpoint.resolve_checkpoint(input, flag="input")
    directory = path if is_hf else os.path.dirname(path)
    if bert_config_file is None:
        bert_config_file = os.path.join(directory, huggingface.CONFIG_NAME if is_hf
                                        else "bert_config.json")
    config = BertConfig.from_json_file(bert_config_file)
    if vocab_file is None:
        vocab_file = directory if is_hf else os.path.join(directory, "vocab.txt")
    tokenization.check_vocab(vocab_file, config, bert_config_file)
    if do_lower_case is None:
        do_lower_case = hf_tokenizer.do_lower_case_of(directory)[0] if is_hf else True

    shapes = checkpoint.list_checkpoint_variables(path, flag="input")
    skipped = [n for n in shapes if checkpoint.is_optimizer_variable(n)]
    names = [n for n in shapes if n not in skipped]
    head = _head_of(names)
    num_labels = checkpoint.classifier_num_labels(shapes) if head == "classifier" else None
    checkpoint.check_checkpoint_fits(config, path, flag="input", head=head,
                                     num_labels=num_labels)
    expected = checkpoint.expected_tf1_variables(config, head=head, num_labels=num_labels)
    unexpected = [n for n in names if n not in expected]
    if unexpected:
        raise UserError("--input=%s: variable %s has no place in a BERT of %s"
                        % (path, unexpected[0], bert_config_file))
    missing = [n for n in expected if n not in shapes]
    if missing:
        logging.warning("--input=%s has no %s (%d tensor(s)): the output has none either",
                        path, missing[0], len(missing))
    if skipped:
        logging.info("Optimizer state not converted: %d variables", len(skipped))
    reader, _ = checkpoint.open_checkpoint(path, flag="input")
    values = checkpoint.read_tensors(reader, names, path, flag="input")
    tokens = list(tokenization.load_vocab(vocab_file))
    checkpoint.write_pretrained_directory(output_dir, values, config, tokens, do_lower_case,
                                          format=to_format, overwrite=overwrite,
                                          architecture=architecture, labels=labels)
    logs.result("Wrote %d tensors of %s (%s) to %s (%s)", len(values), path, from_format,
                output_dir, to_format)
    return output_dir
