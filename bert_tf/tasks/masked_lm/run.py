"""Domain-adaptive masked-LM training on raw text (new; `bert-run-mlm`).

`run_mlm(...)` is what `bert_tf/tools/run_mlm.py` calls with its flags. It
trains Google's pre-training model further on one's own text, masked-LM
loss alone, masks drawn anew each epoch by the original's rule
(`bert_tf.tasks.masked_lm`), from any checkpoint `--init_checkpoint` takes (a
release, a Hugging Face directory, a run's output_dir), and writes
`output_dir/model.ckpt-<step>` in Google's format (`bert/*`, `cls/*`), and
first bert_config.json, vocab.txt and bert_tf_run.json (task "pretraining"):
`bert-fill-mask --init_checkpoint=output_dir`, `bert_tf.from_pretrained(output_dir,
head="fill_mask")` and the fine-tuning tools' --init_checkpoint take the
directory alone. With `do_eval`, `eval_results.txt` holds the masked-LM
accuracy and loss on `eval_file` (every row once, epoch 0's masks). A rerun
resumes from the latest checkpoint; with --seed it ends at the weights of
a run never stopped. A run that fails before it trains or evaluates leaves
output_dir as it found it.
"""

import os

from absl import logging

from bert_tf import fileio
from bert_tf import locks
from bert_tf import tokenization
from bert_tf.errors import UserError
from bert_tf.runs import finetuning
from bert_tf.tasks.masked_lm.data import MaskedLMData
from bert_tf.tasks.masked_lm.data import check_rule
from bert_tf.tasks.masked_lm.model import BertMaskedLM
from bert_tf.training import distribute
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.output_dir import write_eval_results
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule
from bert_tf.training.trainer import Trainer

# The masks of evaluation without --seed (the original create_pretraining_data's random_seed).
EVAL_SEED = 12345


def run_mlm(vocab_file, bert_config_file, output_dir, input_file=None, init_checkpoint=None,
            do_lower_case=True, max_seq_length=128, max_predictions_per_seq=20,
            masked_lm_prob=0.15, do_whole_word_mask=False, do_train=False, do_eval=False,
            eval_file=None, schedule=Schedule(), scale_out=ScaleOut(),
            overwrite_output_dir=False):
    """Trains (and/or evaluates) a masked LM on raw text; see the module docstring.

    Args:
      vocab_file, bert_config_file, init_checkpoint, do_lower_case: the model
        (as the fine-tuning tools').
      output_dir: the run's directory.
      input_file: the training text (a file, a glob, or a comma-separated
        list): UTF-8, one sentence a line, a blank line between documents.
      max_seq_length: the rows' length ([CLS] and [SEP] included).
      max_predictions_per_seq, masked_lm_prob, do_whole_word_mask: the
        original create_pretraining_data's masking rule.
      do_train, do_eval: train on input_file; evaluate on eval_file.
      eval_file: the held-out text, in input_file's format.
      schedule: a `Schedule`, the fine-tuning tools' (num_train_steps = rows /
        train_batch_size * num_train_epochs; its predict_batch_size unused).
      scale_out: a `ScaleOut` (strategy, precision, XLA, accumulation, seed, ...).
      overwrite_output_dir: with do_train, start anew in an output_dir that holds a run.

    Returns:
      dict: "history" (`Trainer.train`'s, when training ran), "eval" (when
      evaluation ran), "num_rows" (the training rows).

    Raises:
      UserError: one line naming the flag or file at fault, before anything
        is written.
    """
    if not do_train and not do_eval:
        raise UserError("At least one of `do_train` or `do_eval` must be True.")
    if do_train and not input_file:
        raise UserError("--input_file is required with --do_train (the training text)")
    if do_eval and not eval_file:
        raise UserError("--eval_file is required with --do_eval (the held-out text)")
    if scale_out.bucket_by_length:
        raise UserError("--bucket_by_length: bert-run-mlm's rows are packed text, every one "
                        "full but the last: there is nothing to bucket")
    bert_config_file, vocab_file, init_checkpoint = finetuning.check_run_flags(
        bert_config_file, vocab_file, init_checkpoint, do_lower_case, do_train, do_eval, False)
    bert_config = finetuning.read_bert_config(bert_config_file, vocab_file, output_dir,
                                              max_seq_length, scale_out, DevEval())
    check_rule(masked_lm_prob, max_predictions_per_seq, max_seq_length)
    record = finetuning.run_record(
        output_dir, "run_mlm", "pretraining", do_train, overwrite_output_dir, scale_out, None,
        schedule,
        dict(init_checkpoint=init_checkpoint, do_lower_case=do_lower_case,
             max_seq_length=max_seq_length, max_predictions_per_seq=max_predictions_per_seq,
             masked_lm_prob=masked_lm_prob, do_whole_word_mask=do_whole_word_mask),
        bert_config_file=bert_config_file, vocab_file=vocab_file, do_lower_case=do_lower_case,
        max_seq_length=max_seq_length, data={"input_file": input_file, "eval_file": eval_file})
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="pretraining",
                                      overwrite_output_dir=overwrite_output_dir)

    # The text, tokenized once, before anything is written.
    tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    rule = dict(masked_lm_prob=masked_lm_prob, max_predictions_per_seq=max_predictions_per_seq,
                do_whole_word_mask=do_whole_word_mask)
    train_data = eval_data = None
    if do_train:
        train_data = MaskedLMData.from_text(input_file, vocab_file, do_lower_case,
                                            max_seq_length, "input_file", tokenizer,
                                            seed=scale_out.seed, **rule)
        num_train_steps, num_warmup_steps = schedule.train_steps(train_data.num_rows)
    if do_eval:
        eval_data = MaskedLMData.from_text(
            eval_file, vocab_file, do_lower_case, max_seq_length, "eval_file", tokenizer,
            seed=EVAL_SEED if scale_out.seed is None else scale_out.seed, **rule)

    # A failure before training or evaluation produce anything removes
    # output_dir if this run made it; the lock keeps a second run off it.
    with fileio.InputFiles(output_dir) as inputs, locks.OutputLock(
            output_dir, "run_mlm", enabled=distribute.will_be_chief(scale_out.strategy_name())):
        # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
        strategy = scale_out.create_strategy()
        trainer = Trainer(strategy, lambda: BertMaskedLM(bert_config), output_dir,
                          **scale_out.trainer_options())
        inputs.enabled = trainer.is_chief
        finetuning.begin_run_record(record, output_dir, inputs, trainer.is_chief)
        results = {}
        if do_train:
            results["num_rows"] = train_data.num_rows
            finetuning.log_run("Running training", num_rows=train_data.num_rows,
                               num_tokens=train_data.rows.num_tokens,
                               batch_size=schedule.train_batch_size, num_steps=num_train_steps)
            results["history"] = trainer.train(
                train_data.train_dataset_fn(schedule.train_batch_size), schedule.train_batch_size,
                num_train_steps, schedule.learning_rate, num_warmup_steps,
                init_checkpoint=init_checkpoint,
                afterwards="evaluating its model" if do_eval else None,
                **dict(schedule.train_options(), **scale_out.train_options()))
        if do_eval:
            finetuning.log_run("Running evaluation", num_rows=eval_data.num_rows,
                               batch_size=schedule.eval_batch_size)
            results["eval"] = trainer.evaluate(eval_data.finite_input(schedule.eval_batch_size),
                                               schedule.eval_batch_size,
                                               init_checkpoint=init_checkpoint)
            if trainer.is_chief:
                write_eval_results(results["eval"], os.path.join(output_dir, "eval_results.txt"))
        logging.info("Done: %s", output_dir)
        return results
