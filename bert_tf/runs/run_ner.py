"""BERT fine-tuning on named entities (CoNLL-2003), in run_classifier's manner (new; BERT paper §5.3).

`run_ner(...)` is what `tools/run_ner.py` calls with its flags: it checks
every input before any TensorFlow op (the casing against the checkpoint's
name, the config against the vocab and the checkpoint's variables, the
CoNLL files and their labels), makes the strategy, then trains, evaluates
and predicts a `TokenClassificationTask` with a `Trainer`, writing in
`output_dir`: `labels.txt` (the training labels, "O" first), `train.tf_record`,
`eval.tf_record`, `predict.tf_record`, `model.ckpt-<step>`, `eval_results.txt`
(eval_loss, eval_accuracy, conlleval's precision, recall and f1, loss,
global_step), `eval_predictions.txt` and `test_predictions.txt` (conlleval's
input: `word gold predicted` a line, a blank line between sentences). A run
that fails before training, evaluation or prediction produce anything
leaves `output_dir` as it found it (`fileio.InputFiles`).
"""

import os

from bert_tf import fileio
from bert_tf import locks
from bert_tf import logs
from bert_tf import releases
from bert_tf import tokenization
from bert_tf.data import input_pipeline
from bert_tf.data import ner_data
from bert_tf.errors import UserError
from bert_tf.modeling.config import BertConfig
from bert_tf.runs import finetuning
from bert_tf.tasks.token_classification import TokenClassificationTask
from bert_tf.training import distribute
from bert_tf.training import output_dir as output_dir_lib
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.trainer import Trainer


def _label_list(output_dir, init_checkpoint, train_sentences, train_file):
    """The run's labels: the training file's, else the `labels.txt` of output_dir or of
    init_checkpoint's directory (a trained model's)."""
    saved = os.path.join(output_dir, ner_data.LABELS_FILE)
    if train_sentences is not None:
        labels = ner_data.get_labels(train_sentences)
        if fileio.exists(saved) and ner_data.read_labels(saved) != labels:
            raise UserError("%s holds other labels than %s (%s): use a new --output_dir"
                            % (saved, train_file, " ".join(labels)))
        return labels
    candidates = [saved]
    if init_checkpoint:
        directory = (init_checkpoint if fileio.isdir(init_checkpoint)
                     else os.path.dirname(init_checkpoint))
        candidates.append(os.path.join(directory, ner_data.LABELS_FILE))
    for path in candidates:
        if fileio.exists(path):
            return ner_data.read_labels(path)
    raise UserError("no %s in --output_dir=%s%s: train first (--do_train), whose labels it holds"
                    % (ner_data.LABELS_FILE, output_dir,
                       " or beside --init_checkpoint" if init_checkpoint else ""))


def run_ner(data_dir, bert_config_file, vocab_file, output_dir, init_checkpoint=None,
            do_lower_case=True, max_seq_length=128, doc_stride=64, do_train=False,
            do_eval=False, do_predict=False, train_batch_size=32, eval_batch_size=8,
            predict_batch_size=8, learning_rate=5e-5, num_train_epochs=3.0,
            warmup_proportion=0.1, save_checkpoints_steps=1000, iterations_per_loop=1000,
            scale_out=ScaleOut(), dev_eval=DevEval()):
    """Trains, evaluates and predicts named entities (see the module docstring).

    Args:
      data_dir: holds train.txt, dev.txt and test.txt (CoNLL-2003's layout).
      bert_config_file, vocab_file, output_dir, init_checkpoint and the rest:
        run_classifier's flags.
      doc_stride: a sentence longer than max_seq_length - 2 WordPiece tokens
        is cut into windows that start every doc_stride tokens; each word is
        labelled in the window where it has the most context.
      scale_out: a `ScaleOut` (strategy, XLA, precision, accumulation, ...).
      dev_eval: a `DevEval`: evaluation on dev.txt while training, the best
        checkpoint (by f1), early stopping.

    Returns:
      dict with the eval results (key "eval") and the predicted labels per
      sentence ("predict") for what ran.

    Raises:
      UserError: one line naming the flag, file (and line) or variable at fault.
    """
    # A release's name (uncased_L-12_H-768_A-12) is its file in the cache.
    bert_config_file = releases.resolve_file(bert_config_file, "bert_config_file")
    vocab_file = releases.resolve_file(vocab_file, "vocab_file")
    init_checkpoint = releases.resolve_file(init_checkpoint, "init_checkpoint")
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    if not do_train and not do_eval and not do_predict:
        raise UserError("At least one of `do_train`, `do_eval` or `do_predict' must be True.")
    if doc_stride < 1:
        raise UserError("--doc_stride must be positive, got %d" % doc_stride)
    if max_seq_length < 3:
        raise UserError("--max_seq_length=%d is too short for [CLS] a word [SEP]"
                        % max_seq_length)
    dev_eval.check()
    fileio.check_writable(output_dir, "output_dir")
    bert_config = BertConfig.from_json_file(bert_config_file)
    scale_out.configure_model(bert_config)  # --gradient_checkpointing
    bert_config.check_max_seq_length(max_seq_length, bert_config_file)
    tokenization.check_vocab(vocab_file, bert_config, bert_config_file)

    # Read every input before any TensorFlow op, so a bad file fails fast.
    paths = {split: os.path.join(data_dir or "", name) for split, name in ner_data.FILES.items()}
    sentences = {}
    if do_train:
        sentences["train"] = ner_data.read_conll(paths["train"])
    label_list = _label_list(output_dir, init_checkpoint, sentences.get("train"),
                             paths["train"])
    if do_eval or (dev_eval.enabled and do_train):
        sentences["dev"] = ner_data.read_conll(paths["dev"])
    if do_predict:
        sentences["test"] = ner_data.read_conll(paths["test"])
    for split in ("dev", "test"):
        if split in sentences:
            ner_data.check_labels(sentences[split], label_list, paths[split])
    # The config against the checkpoint (its index alone), before anything is written.
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="classifier", num_labels=len(label_list))
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    features = {split: ner_data.convert_sentences(split_sentences, label_list, tokenizer,
                                                  max_seq_length, doc_stride)
                for split, split_sentences in sentences.items()}

    # A failure before training, evaluation or prediction produce anything
    # removes the files this run wrote (and output_dir, if it made it). The
    # lock (the chief's) keeps a second run off output_dir while this one lives.
    with fileio.InputFiles(output_dir) as inputs, locks.OutputLock(
            output_dir, "run_ner", enabled=distribute.will_be_chief(scale_out.strategy_name())):
        # The strategy comes before any TensorFlow op (MultiWorkerMirroredStrategy).
        strategy = scale_out.create_strategy()
        task = TokenClassificationTask(bert_config, len(label_list), labels=label_list)
        trainer = Trainer(strategy, task, output_dir, **scale_out.trainer_options())
        inputs.enabled = trainer.is_chief
        labels_file = os.path.join(output_dir, ner_data.LABELS_FILE)
        if do_train and trainer.is_chief and not fileio.exists(labels_file):
            ner_data.write_labels(inputs.add(labels_file), label_list)

        spec = ner_data.name_to_features(max_seq_length)
        limits = finetuning.record_limits(task, max_seq_length, num_labels=len(label_list))
        limits["label_mask"] = (2, None)
        data = {}

        def finite_input(split, name, batch_size, title):
            """`name` written once, and a FiniteInput over it, logged as the original logs."""
            if split not in data:
                path = inputs.add(os.path.join(output_dir, name))
                ner_data.write_features(features[split], path)
                data[split] = input_pipeline.finite_records_input(
                    path, spec, len(features[split]), batch_size, limits=limits)
                finetuning.log_run(title, num_sentences=len(sentences[split]),
                                   num_windows=len(features[split]), batch_size=batch_size)
            return data[split]

        def word_labels(split, batch_size, title):
            """The predicted label of every word of `split`, per sentence."""
            outputs = trainer.predict(finite_input(split, "%s.tf_record" % (
                "eval" if split == "dev" else "predict"), batch_size, title),
                init_checkpoint=init_checkpoint)
            ids = ner_data.word_predictions(features[split], outputs["predictions"],
                                            len(sentences[split]))
            return [[label_list[i] for i in sentence] for sentence in ids]

        keeper = None
        if do_train:
            if dev_eval.enabled:
                eval_data = finite_input("dev", "eval.tf_record", eval_batch_size,
                                         "Running evaluation")
                keeper = finetuning.best_checkpoint(
                    trainer, dev_eval, lambda step: trainer.evaluate(eval_data, eval_batch_size))
            num_train_steps, num_warmup_steps = finetuning.train_schedule(
                len(features["train"]), train_batch_size, num_train_epochs, warmup_proportion)
            train_file = inputs.add(os.path.join(output_dir, "train.tf_record"))
            ner_data.write_features(features["train"], train_file)
            finetuning.log_run("Running training", num_sentences=len(sentences["train"]),
                               num_windows=len(features["train"]), batch_size=train_batch_size,
                               num_steps=num_train_steps)
            finetuning.train_on_records(trainer, train_file, spec, limits, train_batch_size,
                                        num_train_steps, learning_rate, num_warmup_steps,
                                        save_checkpoints_steps, iterations_per_loop, scale_out,
                                        init_checkpoint=init_checkpoint, keeper=keeper)
        finetuning.use_best_checkpoint(trainer, dev_eval, keeper)

        results = {}
        if do_eval:
            eval_results = trainer.evaluate(
                finite_input("dev", "eval.tf_record", eval_batch_size, "Running evaluation"),
                eval_batch_size, init_checkpoint=init_checkpoint)
            predicted = word_labels("dev", eval_batch_size, "Running evaluation")
            if trainer.is_chief:
                output_dir_lib.write_eval_results(eval_results,
                                                  os.path.join(output_dir, "eval_results.txt"))
                path = os.path.join(output_dir, "eval_predictions.txt")
                fileio.write_text(path, ner_data.format_predictions(sentences["dev"], predicted))
                logs.result("Wrote the labels of %d sentences to %s", len(predicted), path)
            results["eval"] = eval_results

        if do_predict:
            predicted = word_labels("test", predict_batch_size, "Running prediction")
            if trainer.is_chief:
                path = os.path.join(output_dir, "test_predictions.txt")
                fileio.write_text(path, ner_data.format_predictions(sentences["test"], predicted))
                logs.result("Wrote the labels of %d sentences to %s", len(predicted), path)
            results["predict"] = predicted
        return results
