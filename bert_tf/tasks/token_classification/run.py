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
from bert_tf import logs
from bert_tf import tokenization
from bert_tf.tasks.token_classification import data as ner_data
from bert_tf.data import text_windows
from bert_tf.errors import UserError
from bert_tf.runs import finetuning
from bert_tf.tasks.token_classification.model import BertTokenClassifier
from bert_tf.training.dev_eval import DevEval
from bert_tf.training.scale_out import ScaleOut
from bert_tf.training.schedule import Schedule


def _label_list(output_dir, init_checkpoint, train_sentences, train_file, overwrite=False):
    """The run's labels: the training file's, else the `labels.txt` of output_dir or of
    init_checkpoint's directory (a trained model's). `overwrite`: output_dir's
    run is to be removed (--overwrite_output_dir)."""
    saved = os.path.join(output_dir, ner_data.LABELS_FILE)
    if train_sentences is not None:
        labels = ner_data.get_labels(train_sentences)
        if not overwrite and fileio.exists(saved) and ner_data.read_labels(saved) != labels:
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
            do_lower_case=True, max_seq_length=128, doc_stride=text_windows.DOC_STRIDES["ner"],
            do_train=False, do_eval=False, do_predict=False, schedule=Schedule(),
            scale_out=ScaleOut(), dev_eval=DevEval(), overwrite_output_dir=False):
    """Trains, evaluates and predicts named entities (see the module docstring).

    Args:
      data_dir: holds train.txt, dev.txt and test.txt (CoNLL-2003's layout).
      bert_config_file, vocab_file, output_dir, init_checkpoint and the rest:
        run_classifier's flags.
      doc_stride: a sentence longer than max_seq_length - 2 WordPiece tokens
        is cut into windows that start every doc_stride tokens; each word is
        labelled in the window where it has the most context.
      schedule: a `Schedule` (batch sizes, learning rate, epochs, warm-up,
        checkpoint cadence): run_classifier's.
      scale_out: a `ScaleOut` (strategy, XLA, precision, accumulation, ...).
      dev_eval: a `DevEval`: evaluation on dev.txt while training, the best
        checkpoint (by f1), early stopping.
      overwrite_output_dir: run_classifier's (new).

    Returns:
      dict with the eval results (key "eval") and the predicted labels per
      sentence ("predict") for what ran.

    Raises:
      UserError: one line naming the flag, file (and line) or variable at fault.
    """
    bert_config_file, vocab_file, init_checkpoint = finetuning.check_run_flags(
        bert_config_file, vocab_file, init_checkpoint, do_lower_case, do_train, do_eval,
        do_predict)
    text_windows.check_doc_stride(doc_stride)
    if max_seq_length < 3:
        raise UserError("--max_seq_length=%d is too short for [CLS] a word [SEP]"
                        % max_seq_length)
    bert_config = finetuning.read_bert_config(bert_config_file, vocab_file, output_dir,
                                              max_seq_length, scale_out, dev_eval)

    # Read every input before any TensorFlow op, so a bad file fails fast.
    paths = {split: os.path.join(data_dir or "", name) for split, name in ner_data.FILES.items()}
    sentences = ner_data.read_splits(data_dir, do_train, do_eval, do_predict,
                                     dev_while_training=dev_eval.enabled)
    label_list = _label_list(output_dir, init_checkpoint, sentences.get("train"),
                             paths["train"], overwrite_output_dir and do_train)
    for split in ("dev", "test"):
        if split in sentences:
            ner_data.check_labels(sentences[split], label_list, paths[split])
    # A rerun against the run output_dir holds, before anything is written.
    record = finetuning.run_record(
        output_dir, "run_ner", "token_classification", do_train, overwrite_output_dir,
        scale_out, dev_eval, schedule, dict(init_checkpoint=init_checkpoint,
                                            do_lower_case=do_lower_case,
                                            max_seq_length=max_seq_length,
                                            doc_stride=doc_stride),
        bert_config_file=bert_config_file, vocab_file=vocab_file, labels=label_list,
        num_labels=len(label_list), do_lower_case=do_lower_case, max_seq_length=max_seq_length,
        doc_stride=doc_stride, data={"data_dir": data_dir})
    # The config against the checkpoint (its index alone), before anything is written.
    finetuning.check_start_checkpoint(bert_config, output_dir, init_checkpoint,
                                      head="classifier", num_labels=len(label_list),
                                      overwrite_output_dir=overwrite_output_dir)
    tokenizer = tokenization.FullTokenizer(vocab_file=vocab_file, do_lower_case=do_lower_case)
    # The course's splits: "eval" is dev.txt, "predict" test.txt.
    sentences = {_SPLITS.get(split, split): split_sentences
                 for split, split_sentences in sentences.items()}
    features = {split: ner_data.convert_sentences(split_sentences, label_list, tokenizer,
                                                  max_seq_length, doc_stride)
                for split, split_sentences in sentences.items()}
    return finetuning.train_evaluate_predict(
        lambda: BertTokenClassifier(bert_config, len(label_list), labels=label_list),
        _NerRecords(sentences, features, label_list, max_seq_length, do_train),
        output_dir, "run_ner", scale_out, schedule=schedule, init_checkpoint=init_checkpoint,
        dev_eval=dev_eval, do_eval=do_eval, run_record=record)


# The course's name of each CoNLL split, and the file of each one's predicted labels.
_SPLITS = {"dev": "eval", "test": "predict"}
_PREDICTIONS_FILES = {"eval": "eval_predictions.txt", "predict": "test_predictions.txt"}


class _NerRecords(finetuning.Records):
    """The windows of the sentences (`ner_data`), `labels.txt` and the predicted labels.

    `examples`: the sentences of each split, `features` their windows.
    """

    predicts_eval = True  # eval_predictions.txt

    def __init__(self, sentences, features, label_list, max_seq_length, do_train):
        super().__init__(sentences)
        self.features = features
        self.label_list = label_list
        self.max_seq_length = max_seq_length
        self.do_train = do_train

    def begin(self, trainer, inputs, output_dir):
        labels_file = os.path.join(output_dir, ner_data.LABELS_FILE)
        if self.do_train and trainer.is_chief and not fileio.exists(labels_file):
            ner_data.write_labels(inputs.add(labels_file), self.label_list)

    def spec(self):
        return ner_data.name_to_features(self.max_seq_length)

    def limits(self, task):
        limits = finetuning.record_limits(task, self.max_seq_length,
                                          num_labels=len(self.label_list))
        limits["label_mask"] = (2, None)
        return limits

    def write(self, split, path):
        ner_data.write_features(self.features[split], path)
        return len(self.features[split])

    def log_fields(self, split, num_records, num_padding=None):
        return {"num_sentences": len(self.examples[split]), "num_windows": num_records}

    def outputs(self, split, predictions):
        """The predicted label of every word of `split`, per sentence."""
        ids = ner_data.word_predictions(self.features[split], predictions["predictions"],
                                        len(self.examples[split]))
        return [[self.label_list[i] for i in sentence] for sentence in ids]

    def write_outputs(self, split, outputs, output_dir):
        path = os.path.join(output_dir, _PREDICTIONS_FILES[split])
        fileio.write_text(path, ner_data.format_predictions(self.examples[split], outputs))
        logs.result("Wrote the labels of %d sentences to %s", len(outputs), path)
