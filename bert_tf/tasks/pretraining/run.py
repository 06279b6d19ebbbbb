"""Masked-LM / next-sentence pre-training, as the original `run_pretraining.py` ran it.

`run_pretraining(...)` is what `tools/run_pretraining.py` calls with its flags:
it checks the inputs (the config against the checkpoint's variables, the
records against the config, before any step), makes the strategy, and trains
and/or evaluates a `PretrainingTask` with a `Trainer`, writing
`output_dir/model.ckpt-<step>` (Google's format) and, with `do_eval`,
`output_dir/eval_results.txt`. Run again, it resumes from the latest
checkpoint in `output_dir`. A run that fails before it trains or evaluates
removes `output_dir` if it made it.
"""

import os

import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.data import input_pipeline
from bert_tf.errors import UserError
from bert_tf.modeling.config import BertConfig
from bert_tf.runs import finetuning
from bert_tf.tasks.pretraining.model import BertPretrainer
from bert_tf.training import distribute
from bert_tf.training.output_dir import write_eval_results
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.trainer import Trainer


def run_pretraining(bert_config_file, input_file, output_dir, init_checkpoint=None,
                    max_seq_length=128, max_predictions_per_seq=20, do_train=False,
                    do_eval=False, train_batch_size=32, eval_batch_size=8, learning_rate=5e-5,
                    num_train_steps=100000, num_warmup_steps=10000,
                    save_checkpoints_steps=1000, iterations_per_loop=1000, max_eval_steps=100,
                    scale_out=ScaleOut(), overwrite_output_dir=False, vocab_file=None,
                    do_lower_case=None):
    """Trains and/or evaluates as the original `run_pretraining.main` did.

    Args:
      bert_config_file, input_file (comma-separated files and globs),
        output_dir, init_checkpoint and the rest: the original's flags.
      scale_out: a `ScaleOut`, the new flags (strategy, XLA, precision,
        accumulation, optimizer, logging).
      overwrite_output_dir: bool (new): with do_train, start anew in an
        output_dir that holds a run (`bert_tf.training.run_record`); without
        it, a rerun with other training flags is refused.
      vocab_file, do_lower_case (new, optional): the vocab the records were
        made with (`create_pretraining_data`'s) and its casing (default True):
        copied and recorded beside the checkpoints, so the output_dir alone
        is a model a tokenizer can feed (`bert-fill-mask
        --init_checkpoint=output_dir`). `vocab_file` is checked against the
        config's `vocab_size`.

    Returns:
      dict: "history" (`Trainer.train`'s, when training ran) and "eval" (the
      eval results, when evaluation ran).

    Raises:
      UserError: one line naming the flag, file or record at fault, before
        anything is written.
    """
    if not do_train and not do_eval:
        raise UserError("At least one of `do_train` or `do_eval` must be True.")
    fileio.check_writable(output_dir, "output_dir")

    # The strategy comes first: MultiWorkerMirroredStrategy must be created
    # before TensorFlow runs any op.
    strategy = scale_out.create_strategy()

    # A release's name (uncased_L-12_H-768_A-12) is its file in the cache.
    bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    bert_config = BertConfig.from_json_file(bert_config_file)
    scale_out.configure_model(bert_config)  # --gradient_checkpointing
    if vocab_file is None and do_lower_case is not None:
        raise UserError("--do_lower_case is the casing of --vocab_file: give both or neither")
    if vocab_file is not None:
        vocab_file = releases.resolve_file(vocab_file, "vocab_file")
        tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
        do_lower_case = True if do_lower_case is None else bool(do_lower_case)
    # A rerun against the run output_dir holds, before anything is written.
    record = finetuning.run_record(
        output_dir, "run_pretraining", "pretraining", do_train, overwrite_output_dir, scale_out,
        None, None, dict(init_checkpoint=init_checkpoint, max_seq_length=max_seq_length,
                   max_predictions_per_seq=max_predictions_per_seq,
                   train_batch_size=train_batch_size, learning_rate=learning_rate,
                   num_train_steps=num_train_steps, num_warmup_steps=num_warmup_steps),
        bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case,
        max_seq_length=max_seq_length, data={"input_file": input_file})
    # The config against the checkpoint (its index alone), before anything is written.
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="pretraining",
                                      overwrite_output_dir=overwrite_output_dir)
    input_files = input_pipeline.expand_files(fileio.split_comma_list(input_file))
    logging.info("*** Input Files ***")
    for name in input_files:
        logging.info("  %s", name)
    # The first records of each file now; every record as the pipeline reads it.
    input_pipeline.check_pretraining_records(input_files, bert_config, max_seq_length,
                                             max_predictions_per_seq)
    # A failure before training or evaluation produce anything removes
    # output_dir if this run made it. The lock (the chief's) keeps a second
    # run off output_dir while this one lives.
    with fileio.InputFiles(output_dir) as created, locks.OutputLock(
            output_dir, "run_pretraining", enabled=distribute.is_chief(strategy)):
        tf.io.gfile.makedirs(output_dir)

        trainer = Trainer(strategy, lambda: BertPretrainer(bert_config), output_dir,
                          **scale_out.trainer_options())
        created.enabled = trainer.is_chief
        finetuning.begin_run_record(record, output_dir, created, trainer.is_chief)

        def dataset_fn(batch_size, is_training):
            def fn(input_context):
                return input_pipeline.create_pretraining_dataset(
                    input_files, max_seq_length, max_predictions_per_seq,
                    input_context.get_per_replica_batch_size(batch_size), is_training,
                    input_context=input_context, check_files=False, config=bert_config,
                    seed=scale_out.seed if is_training else None,
                    bucket_by_length=scale_out.bucket_by_length)
            return fn

        results = {}
        if do_train:
            results["history"] = trainer.train(
                dataset_fn(train_batch_size, True), train_batch_size, num_train_steps,
                learning_rate, num_warmup_steps, init_checkpoint=init_checkpoint,
                save_checkpoints_steps=save_checkpoints_steps,
                iterations_per_loop=iterations_per_loop,
                afterwards="evaluating its model" if do_eval else None,
                **scale_out.train_options())

        if do_eval:
            results["eval"] = trainer.evaluate(dataset_fn(eval_batch_size, False), eval_batch_size,
                                               max_eval_steps, init_checkpoint=init_checkpoint)
            if trainer.is_chief:
                write_eval_results(results["eval"], os.path.join(output_dir, "eval_results.txt"))
        return results
