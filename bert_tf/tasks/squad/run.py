"""BERT fine-tuning and prediction on SQuAD 1.1 and 2.0, as the original `run_squad.py` ran it.

`run_squad(...)` is what `tools/run_squad.py` calls with its flags: it checks
the flags as the original's `validate_flags_or_throw` did (in its order, as
one-line errors), the vocab, the config against the checkpoint's variables
and the SQuAD files before any TensorFlow op, makes the strategy, then trains
and predicts a `SquadTask` with a `Trainer`, writing the original's files in
`output_dir`: `train.tf_record`, `eval.tf_record`, `model.ckpt-<step>`,
`predictions.json`, `nbest_predictions.json` (and `null_odds.json` for SQuAD
2.0). New: when the predict file has answers, the predictions are scored with
the official EM/F1. A run that fails before training or prediction produce
anything leaves `output_dir` as it found it (`fileio.InputFiles`).
"""

import os
import random
import tempfile

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.data import input_pipeline
from bert_tf.tasks.squad import data as squad_data
from bert_tf.tasks.squad import data_evaluate as squad_evaluate
from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.modeling.config import BertConfig
from bert_tf.runs import finetuning
from bert_tf.tasks.squad.model import BertSquad
from bert_tf.training import distribute
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule
from bert_tf.training.trainer import Trainer


def validate_flags_or_throw(bert_config, bert_config_file, do_lower_case, init_checkpoint,
                            do_train, train_file, do_predict, predict_file, max_seq_length,
                            max_query_length, doc_stride, n_best_size, max_answer_length,
                            predict_batch_size):
    """The original's checks, in its order, as one-line errors."""
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    if not do_train and not do_predict:
        raise UserError("At least one of `do_train` or `do_predict` must be True.")
    if do_train and not train_file:
        raise UserError("If `do_train` is True, then `train_file` must be specified.")
    if do_predict and not predict_file:
        raise UserError("If `do_predict` is True, then `predict_file` must be specified.")
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    if max_seq_length <= max_query_length + 3:
        raise UserError(
            "The max_seq_length (%d) must be greater than max_query_length (%d) + 3"
            % (max_seq_length, max_query_length))
    text_windows.check_doc_stride(doc_stride)
    for flag, value in (("n_best_size", n_best_size),
                        ("max_answer_length", max_answer_length),
                        ("predict_batch_size", predict_batch_size)):
        if value < 1:
            raise UserError("--%s must be positive, got %d" % (flag, value))


def run_squad(bert_config_file, vocab_file, output_dir, train_file=None, predict_file=None,
              init_checkpoint=None, do_lower_case=True, max_seq_length=384,
              doc_stride=text_windows.DOC_STRIDES["squad"],
              max_query_length=64, do_train=False, do_predict=False, schedule=Schedule(),
              n_best_size=20, max_answer_length=30, verbose_logging=False,
              version_2_with_negative=False, null_score_diff_threshold=0.0,
              scale_out=ScaleOut(), dev_eval=DevEval(), overwrite_output_dir=False):
    """Trains and predicts as the original `run_squad.main` did.

    Args:
      bert_config_file, vocab_file, output_dir, train_file, predict_file and
        the rest: the original's flags.
      schedule: a `Schedule`, the original's flags of the batch sizes, the
        learning rate, the epochs, the warm-up and the checkpoint cadence
        (`eval_batch_size` is unused: evaluation is a prediction).
      scale_out: a `ScaleOut`, the new flags (strategy, XLA, precision,
        accumulation, optimizer, logging).
      dev_eval: a `DevEval`: with `eval_every_steps`, training scores the
        predictions of `predict_file` (which must hold answers) every that
        many steps, keeps the best checkpoint (`output_dir/best/`), which
        `do_predict` then uses, and may stop early.
      overwrite_output_dir: bool (new): run_classifier's.

    Returns:
      dict: "predictions" ({qas_id: text}) and "scores" (EM/F1, when the
      predict file has answers), for what ran.

    Raises:
      UserError: one line naming the flag, file or variable at fault.
    """
    # A release's name (uncased_L-12_H-768_A-12) is its file in the cache.
    bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    bert_config = BertConfig.from_json_file(bert_config_file)
    scale_out.configure_model(bert_config)  # --gradient_checkpointing
    validate_flags_or_throw(bert_config, bert_config_file, do_lower_case, init_checkpoint,
                            do_train, train_file, do_predict, predict_file, max_seq_length,
                            max_query_length, doc_stride, n_best_size, max_answer_length,
                            schedule.predict_batch_size)
    dev_eval.check()
    if scale_out.bucket_by_length:
        raise UserError("--bucket_by_length: run_squad keeps every row whole (the original's "
                        "span loss reads every position, padding included), so batches of "
                        "similar lengths save nothing")
    if dev_eval.enabled and do_train and not (predict_file and squad_evaluate.has_answers(
            predict_file)):
        raise UserError("--eval_every_steps scores --predict_file while training: give a "
                        "--predict_file with answers (a dev set, e.g. dev-v1.1.json)")
    fileio.check_writable(output_dir, "output_dir")
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)
    # A rerun against the run output_dir holds, before anything is written.
    record = finetuning.run_record(
        output_dir, "run_squad", "squad", do_train, overwrite_output_dir, scale_out, dev_eval,
        schedule, dict(init_checkpoint=init_checkpoint, do_lower_case=do_lower_case,
                       max_seq_length=max_seq_length, doc_stride=doc_stride,
                       max_query_length=max_query_length,
                       version_2_with_negative=version_2_with_negative),
        bert_config_file=bert_config_file, vocab_file=vocab_file,
        do_lower_case=do_lower_case, max_seq_length=max_seq_length, doc_stride=doc_stride,
        data={"train_file": train_file})
    # The config against the checkpoint (its index alone), before anything is written.
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint, head="squad",
                                      overwrite_output_dir=overwrite_output_dir)
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    # Read the inputs before any TensorFlow op, so a bad file fails fast.
    train_examples = predict_examples = None
    if do_train:
        train_examples = squad_data.read_squad_examples(
            train_file, is_training=True, version_2_with_negative=version_2_with_negative)
        if not train_examples:
            raise UserError("--train_file=%s: no training examples (no question in its data)"
                            % train_file)
    if do_predict or (dev_eval.enabled and do_train):
        predict_examples = squad_data.read_squad_examples(
            predict_file, is_training=False, version_2_with_negative=version_2_with_negative)

    # A failure before training or prediction produce anything removes the
    # records this run wrote (and output_dir, if it made it). The lock (the
    # chief's) keeps a second run off output_dir while this one lives.
    with fileio.InputFiles(output_dir) as inputs, locks.OutputLock(
            output_dir, "run_squad", enabled=distribute.will_be_chief(scale_out.strategy_name())):
        # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
        strategy = scale_out.create_strategy()
        trainer = Trainer(strategy, lambda: BertSquad(bert_config), output_dir,
                          **scale_out.trainer_options())
        inputs.enabled = trainer.is_chief
        finetuning.begin_run_record(record, output_dir, inputs, trainer.is_chief)

        results = {}
        limits = finetuning.record_limits(trainer.task, max_seq_length)
        predict_data = {}

        def predict_input():
            """eval.tf_record and its FiniteInput (written once, when first needed)."""
            if not predict_data:
                eval_file = inputs.add(os.path.join(output_dir, "eval.tf_record"))
                eval_features = []
                with squad_data.FeatureWriter(eval_file, is_training=False) as writer:
                    def append_feature(feature):
                        eval_features.append(feature)
                        writer.process_feature(feature)
                    squad_data.convert_examples_to_features(
                        predict_examples, tokenizer, max_seq_length, doc_stride,
                        max_query_length, is_training=False, output_fn=append_feature)
                finetuning.log_run("Running predictions", num_orig_examples=len(predict_examples),
                                   num_split_examples=len(eval_features),
                                   batch_size=schedule.predict_batch_size)
                spec = squad_data.name_to_features(max_seq_length, is_training=False)
                predict_data["features"] = eval_features
                predict_data["input"] = input_pipeline.finite_records_input(
                    eval_file, spec, len(eval_features), schedule.predict_batch_size,
                    limits=limits)
            return predict_data["input"], predict_data["features"]

        def predict_and_score(directory):
            """predictions.json, nbest_predictions.json (null_odds.json) in `directory`, scored.

            Returns {"predictions": ..., "scores": the official EM/F1 when the
            predict file has answers}.
            """
            data, eval_features = predict_input()
            outputs = trainer.predict(data, init_checkpoint=init_checkpoint)
            all_results = [
                squad_data.RawResult(unique_id=int(unique_id), start_logits=start, end_logits=end)
                for unique_id, start, end in zip(outputs["unique_ids"], outputs["start_logits"],
                                                 outputs["end_logits"])]
            paths = [os.path.join(directory, name) for name in
                     ("predictions.json", "nbest_predictions.json", "null_odds.json")]
            found = {"predictions": squad_data.write_predictions(
                predict_examples, eval_features, all_results, n_best_size, max_answer_length,
                do_lower_case, *paths, version_2_with_negative=version_2_with_negative,
                null_score_diff_threshold=null_score_diff_threshold,
                verbose_logging=verbose_logging)}
            if predict_file and squad_evaluate.has_answers(predict_file):
                # New: the official EM/F1 when the predict file has answers.
                found["scores"] = squad_evaluate.evaluate_file(
                    predict_file, paths[0],
                    na_prob_file=paths[2] if version_2_with_negative else None,
                    version_2_with_negative=version_2_with_negative)
            return found

        def dev_scores(step):
            """While training (`DevEval`): the EM/F1 of predict_file, on every worker alike."""
            with tempfile.TemporaryDirectory(prefix="bert_tf_squad_eval_") as directory:
                return predict_and_score(directory)["scores"]

        keeper = None
        if train_examples is not None:
            if dev_eval.enabled:
                predict_input()
                keeper = finetuning.best_checkpoint(trainer, dev_eval, dev_scores)
            num_train_steps, num_warmup_steps = schedule.train_steps(len(train_examples))
            # Pre-shuffle the input to avoid having to make a very large shuffle
            # buffer in the `input_fn`.
            train_examples = list(train_examples)
            random.Random(12345).shuffle(train_examples)
            train_file = inputs.add(os.path.join(output_dir, "train.tf_record"))
            with squad_data.FeatureWriter(train_file, is_training=True) as writer:
                squad_data.convert_examples_to_features(
                    train_examples, tokenizer, max_seq_length, doc_stride, max_query_length,
                    is_training=True, output_fn=writer.process_feature)
            finetuning.log_run("Running training", num_orig_examples=len(train_examples),
                               num_split_examples=writer.num_features,
                               batch_size=schedule.train_batch_size, num_steps=num_train_steps)
            spec = squad_data.name_to_features(max_seq_length, is_training=True)
            finetuning.train_on_records(
                trainer, train_file, spec, limits, num_train_steps, num_warmup_steps, scale_out,
                schedule=schedule, init_checkpoint=init_checkpoint, keeper=keeper,
                afterwards="predicting with its model" if do_predict else None)
        finetuning.use_best_checkpoint(trainer, dev_eval, keeper)

        if do_predict:
            predict_input()
            if trainer.is_chief:
                results.update(predict_and_score(output_dir))
                logs.result("Wrote %d predictions to %s", len(results["predictions"]),
                            os.path.join(output_dir, "predictions.json"))
            else:
                trainer.predict(predict_input()[0], init_checkpoint=init_checkpoint)
        return results
