"""What every served model's `tf.Module` starts with (the classifier's, the encoder's, ...).

`ModelServingModule` holds a loaded Keras model out of the SavedModel's
object graph, whose variables go in instead (as Keras's `ExportArchive`
does: `tf.saved_model.save` would otherwise trace the Keras model's own
default signature), the `GraphTokenizer`, and `do_lower_case` and
`max_seq_length` as variables a server can read. The SQuAD module, which
keeps Python ints instead, holds its model with `Untracked` alone.
"""

import tensorflow as tf


class Untracked(object):
    """A plain holder (not trackable): `tf.Module` does not track `value`."""

    def __init__(self, value):
        self.value = value


class ModelServingModule(tf.Module):
    """A loaded model's variables, its `GraphTokenizer` and its settings as variables.

    Args:
      model: a Keras model whose variables are loaded (float32 or an inference
        policy).
      tokenizer: `GraphTokenizer` of the model's vocab.
      max_seq_length: int, the length of every feature row.
      name: the `tf.Module` name.
    """

    def __init__(self, model, tokenizer, max_seq_length, name=None):
        super().__init__(name=name)
        self._keras = Untracked(model)
        # The tf.Variables behind the Keras variables: the SavedModel's variables/.
        self.model_variables = [v.value for v in model.weights]
        self.tokenizer = tokenizer
        self.max_seq_length = tf.Variable(int(max_seq_length), trainable=False,
                                          name="max_seq_length")
        self.do_lower_case = tf.Variable(bool(tokenizer.do_lower_case), trainable=False,
                                         name="do_lower_case")
        self._seq_length = int(max_seq_length)

    @property
    def model(self):
        return self._keras.value
