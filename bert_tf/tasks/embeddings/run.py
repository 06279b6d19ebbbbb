"""Sentence embeddings fine-tuned on pairs, and texts embedded to a .npy (new; `bert-run-embeddings`).

What `tools/run_embeddings.py` calls (`run_embeddings`). Training reads a
two-column TSV (`anchor<TAB>positive`, one pair a line), fine-tunes a
`bert_tf.tasks.embeddings.model.SentenceEmbedder` with Keras `fit` on in-batch
negatives (each anchor against every positive of its batch,
sentence-transformers' MultipleNegativesRankingLoss, scale 20) and writes
`output_dir` as a Google-format directory (`bert_config.json`, `vocab.txt`,
`bert_model.ckpt.*`) with `embedding_config.json` (pooling, normalization,
max_seq_length), which `bert_tf.from_pretrained(output_dir, head="embeddings")`
reads back. Encoding reads one text a line and writes their embeddings as a
float32 [lines, hidden_size] `.npy`, in the file's order.
"""

import math
import os

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
import numpy as np
import tensorflow as tf
from absl import logging

from bert_tf import fileio
from bert_tf import logs
from bert_tf import item_progress
from bert_tf.tasks.embeddings.data import read_lines
from bert_tf.tasks.embeddings.data import read_pairs
from bert_tf.errors import UserError
from bert_tf.item_progress import ItemProgress
from bert_tf.pretrained import from_pretrained
from bert_tf.training.optimization import create_optimizer
from bert_tf.training.schedule import Schedule

# run_embeddings' schedule: sentence-transformers' learning rate and one epoch; 32 texts a
# batch when encoding.
SCHEDULE = Schedule(predict_batch_size=32, learning_rate=2e-5, num_train_epochs=1.0)


class StepProgress(keras.callbacks.Callback):
    """Keras fit's steps as progress lines (`ItemProgress`: count, rate, ETA, the loss)."""

    def __init__(self, total):
        super().__init__()
        self.progress = ItemProgress("training", total=total, unit="steps")

    def on_train_batch_begin(self, batch, logs=None):
        if batch == 0:
            item_progress.log_tracing(self.progress.what)

    def on_train_batch_end(self, batch, logs=None):
        self.progress.add(1, detail="loss %.4f" % float((logs or {}).get("loss", 0.0)))

    def on_train_end(self, logs=None):
        self.progress.finish()


def run_embeddings(init_checkpoint, output_dir=None, train_file=None, input_file=None,
                   output_file=None, do_train=False, do_encode=False, bert_config_file=None,
                   vocab_file=None, do_lower_case=None, max_seq_length=None, pooling=None,
                   normalize=None, schedule=SCHEDULE, overwrite=False):
    """Fine-tunes a sentence embedder on pairs and/or writes the embeddings of a text file.

    Args:
      init_checkpoint: the model to start from (`from_pretrained`'s path: a
        release directory or name, a checkpoint prefix, an output_dir, a
        Hugging Face directory, a directory this function wrote).
      output_dir: (do_train) the directory of the fine-tuned embedder; it must
        not exist or be empty, unless `overwrite`.
      train_file: (do_train) the pairs, `anchor<TAB>positive` a line.
      input_file: (do_encode) the texts, one a line.
      output_file: (do_encode) the `.npy` to write: float32 [lines, hidden_size].
      do_train, do_encode: what to run (training first; encoding then uses
        the fine-tuned embedder).
      bert_config_file, vocab_file, do_lower_case: as `from_pretrained`'s
        (None: beside the checkpoint, and the casing it implies).
      max_seq_length, pooling, normalize: as `from_pretrained`'s with
        head="embeddings" (None: the model's `embedding_config.json`, else
        128, "mean", False). Texts longer than max_seq_length - 2 WordPiece
        tokens are truncated.
      schedule: a `Schedule` (default: `SCHEDULE`, learning_rate 2e-5, one
        epoch, predict_batch_size 32). Its train_batch_size: pairs per step
        (each anchor's in-batch negatives are the other train_batch_size - 1
        positives); predict_batch_size: texts per forward pass when
        encoding; learning_rate, num_train_epochs, warmup_proportion: the
        original's schedule (AdamWeightDecay, linear warmup then decay), with
        the steps rounded up (at least one). Its eval_batch_size,
        save_checkpoints_steps and iterations_per_loop are unused (Keras
        `fit`, one save at the end).
      overwrite: replace a non-empty output_dir.

    Returns:
      {"output_dir": ..., "output_file": ..., "loss": the mean training loss}
      for what ran.

    Raises:
      UserError: one line naming the flag, file or line at fault, before
        anything is written.
    """
    if not (do_train or do_encode):
        raise UserError("At least one of `do_train` or `do_encode` must be True.")
    if do_train:
        for flag, value in (("train_file", train_file), ("output_dir", output_dir)):
            if not value:
                raise UserError("--do_train needs --%s" % flag)
        fileio.check_writable(output_dir, "output_dir")
        if os.path.isdir(output_dir) and os.listdir(output_dir) and not overwrite:
            raise UserError("--output_dir=%s is not empty; pass --overwrite to replace it"
                            % output_dir)
        if schedule.train_batch_size < 1:
            raise UserError("--train_batch_size=%d: must be at least 1"
                            % schedule.train_batch_size)
        if schedule.num_train_epochs <= 0:
            raise UserError("--num_train_epochs=%s: must be positive" % schedule.num_train_epochs)
    if do_encode:
        for flag, value in (("input_file", input_file), ("output_file", output_file)):
            if not value:
                raise UserError("--do_encode needs --%s" % flag)
        fileio.check_writable(output_file, "output_file", directory=False)
    pairs = read_pairs(train_file) if do_train else None
    texts = read_lines(input_file) if do_encode else None

    _, embedder, _ = from_pretrained(init_checkpoint, head="embeddings",
                                     do_lower_case=do_lower_case,
                                     bert_config_file=bert_config_file, vocab_file=vocab_file,
                                     pooling=pooling, normalize=normalize,
                                     max_seq_length=max_seq_length)
    logging.info("Embedder: pooling=%s normalize=%s max_seq_length=%d (%s)", embedder.pooling,
                 embedder.normalize, embedder.preprocessor.max_seq_length, init_checkpoint)
    result = {}
    if do_train:
        result.update(_train(embedder, pairs, output_dir, schedule, overwrite))
    if do_encode:
        vectors = embedder.encode(texts, batch_size=schedule.predict_batch_size)
        with fileio.atomic_write(output_file, mode="wb", encoding=None) as f:
            np.save(f, vectors)
        logs.result("Wrote %d embeddings of %d dimensions to %s", vectors.shape[0],
                    vectors.shape[1], output_file)
        result["output_file"] = output_file
    return result


def _train(embedder, pairs, output_dir, schedule, overwrite):
    """Keras fit on in-batch negatives, then the embedder saved to output_dir."""
    batch_size = schedule.train_batch_size
    num_train_steps = max(1, int(math.ceil(len(pairs) / batch_size * schedule.num_train_epochs)))
    num_warmup_steps = int(num_train_steps * schedule.warmup_proportion)
    logging.info("***** Running training *****")
    logging.info("  Num pairs = %d", len(pairs))
    logging.info("  Batch size = %d", batch_size)
    logging.info("  Num steps = %d", num_train_steps)
    anchors = [a for a, _ in pairs]
    positives = [p for _, p in pairs]
    dataset = (tf.data.Dataset.from_tensor_slices((anchors, positives))
               .shuffle(len(pairs), seed=12345, reshuffle_each_iteration=True)
               .repeat().batch(batch_size))
    embedder.compile(optimizer=create_optimizer(schedule.learning_rate, num_train_steps,
                                                num_warmup_steps))
    history = embedder.fit(dataset, steps_per_epoch=num_train_steps, epochs=1, verbose=0,
                           callbacks=[StepProgress(num_train_steps)])
    loss = float(history.history["loss"][-1])  # the mean over the steps
    embedder.save_pretrained(output_dir, overwrite=overwrite)
    logs.result("Trained on %d pairs (%d steps, mean loss %.4f); wrote %s", len(pairs),
                num_train_steps, loss, output_dir)
    return {"output_dir": output_dir, "loss": loss}
