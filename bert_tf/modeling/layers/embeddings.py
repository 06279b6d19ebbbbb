"""BERT embeddings (original: `embedding_lookup` + `embedding_postprocessor`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops
import tensorflow as tf

from bert_tf.errors import UserError
from bert_tf.modeling.layers.dropout import Dropout
from bert_tf.modeling.layers.initializers import create_initializer
from bert_tf.modeling.layers.initializers import float32_variables_dtype
from bert_tf.modeling.layers.initializers import layer_norm
# The word table's swap (set_word_embeddings); the pre-training head's bias
# imports it from here too.
from bert_tf.modeling.layers.surgery import replace_weight



def gather_rows(table, ids):
    """`table[ids]` read from the variable itself (`ResourceGather`): [*ids.shape, width].

    `keras.ops.take` reads the whole table into a tensor first (`ReadVariableOp`,
    then `GatherV2`), which costs about as much as the rest of a short forward
    pass on CPU (a 30,522 x 384 table: 10 ms of a 30 ms batch of one); gathering
    from the variable reads only the rows asked for. The numbers are the same
    (a gather copies rows); negative ids count from the end, as `ops.take`'s.
    """
    ids = ops.convert_to_tensor(ids)
    ids = tf.where(ids < 0, ids + ops.cast(ops.shape(table)[0], ids.dtype), ids)
    return tf.gather(getattr(table, "value", table), ids)

@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbeddings(keras.layers.Layer):
    """Word + token type + position embeddings, LayerNorm, dropout; TF1 scope `embeddings`.

    Checkpoint variables:
      word_embeddings [vocab_size, hidden_size]
      token_type_embeddings [type_vocab_size, hidden_size]
      position_embeddings [max_position_embeddings, hidden_size]
      LayerNorm/beta [hidden_size], LayerNorm/gamma [hidden_size]

    Call args:
      input_ids: int32 Tensor of shape [batch_size, seq_length] (or None with
        `inputs_embeds`).
      token_type_ids: (optional) int32 Tensor of shape [batch_size, seq_length];
        defaults to all zeros.
      training: Python bool; dropout is applied only when True.
      inputs_embeds: (optional, instead of `input_ids`) float Tensor of shape
        [batch_size, seq_length, hidden_size]: the word embeddings themselves,
        in place of the lookup (new, as Hugging Face's `inputs_embeds`).
      position_ids: (optional) int Tensor of shape [batch_size, seq_length] or
        [seq_length]: the rows of `position_embeddings` to add. Default: 0 ..
        seq_length - 1, the original's (the table's first seq_length rows).

    Returns:
      (embedding_output, word_embedding_output), both float Tensors of shape
      [batch_size, seq_length, hidden_size]; the first is after the adds,
      LayerNorm and dropout, the second is the word lookup alone (or
      `inputs_embeds`).

    Raises:
      UserError: both or neither of `input_ids` and `inputs_embeds`, or an
        `inputs_embeds` whose shape is not [batch_size, seq_length, hidden_size].
    """

    def __init__(self, vocab_size, hidden_size=768, type_vocab_size=16,
                 max_position_embeddings=512, hidden_dropout_prob=0.1,
                 initializer_range=0.02, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = float32_variables_dtype()  # float32 tables, see initializers
        super().__init__(**kwargs)
        # This scope's arguments, for get_config (written out per layer: see layers/__init__.py).
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.type_vocab_size = type_vocab_size
        self.max_position_embeddings = max_position_embeddings
        self.hidden_dropout_prob = hidden_dropout_prob
        self.initializer_range = initializer_range
        self.layer_norm = layer_norm("LayerNorm")
        self.dropout = Dropout(hidden_dropout_prob)
        # Under mixed precision the lookups read the float32 tables and only
        # the looked-up rows are cast (as keras.layers.Embedding does), rather
        # than casting the whole [vocab_size, hidden_size] table every call.
        # (Inside a model built under an inference policy, Keras 3.15 enters
        # the autocast scope here regardless and the table is cast: about 1%
        # of a BERT-base forward pass.)
        self.autocast = False

    def build(self, input_shape=None):
        init = create_initializer(self.initializer_range)
        # Created in the original's order.
        self.word_embeddings = self.add_weight(
            name="word_embeddings", shape=(self.vocab_size, self.hidden_size), initializer=init)
        self.token_type_embeddings = self.add_weight(
            name="token_type_embeddings", shape=(self.type_vocab_size, self.hidden_size),
            initializer=init)
        self.position_embeddings = self.add_weight(
            name="position_embeddings", shape=(self.max_position_embeddings, self.hidden_size),
            initializer=init)
        self.layer_norm.build((None, None, self.hidden_size))
        self.built = True

    def call(self, input_ids=None, token_type_ids=None, training=None, inputs_embeds=None,
             position_ids=None):
        if (input_ids is None) == (inputs_embeds is None):
            raise call_error("pass exactly one of input_ids and inputs_embeds, got %s"
                             % ("both" if input_ids is not None else "neither"))
        if inputs_embeds is not None:
            inputs_embeds = ops.convert_to_tensor(inputs_embeds)
            self.check_inputs_embeds(inputs_embeds)
            ids_shape = ops.shape(inputs_embeds)[:2]
            seq_length = inputs_embeds.shape[1]
        else:
            seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                "The sequence length (%d) cannot be greater than max_position_embeddings (%d)"
                % (seq_length, self.max_position_embeddings))
        if inputs_embeds is None:
            word_embedding_output = gather_rows(self.word_embeddings, input_ids)  # [B, S, D]
        else:
            word_embedding_output = ops.cast(inputs_embeds, self.word_embeddings.dtype)
        if token_type_ids is None:
            token_type_ids = (ops.zeros_like(input_ids) if input_ids is not None
                              else ops.zeros(ids_shape, "int32"))
        # The original looks token types up as one_hot @ table (so an id >=
        # type_vocab_size gives a zero embedding rather than an error); so do we.
        token_type_one_hot = ops.one_hot(token_type_ids, self.type_vocab_size,
                                         dtype=self.word_embeddings.dtype)  # [B, S, type_vocab]
        output = word_embedding_output + ops.matmul(token_type_one_hot, self.token_type_embeddings)
        if position_ids is None:
            if seq_length is None:
                seq_length = ops.shape(word_embedding_output)[1]
            # Positions are always 0..seq_length-1, padding or not.
            position = ops.slice(self.position_embeddings, (0, 0), (seq_length, self.hidden_size))
            output = output + ops.expand_dims(position, 0)  # [B, S, D] + [1, S, D]
        else:
            position = ops.take(self.position_embeddings, position_ids, axis=0)
            if len(position.shape) == 2:
                position = ops.expand_dims(position, 0)  # [S, D] -> [1, S, D]
            output = output + position
        output = self.layer_norm(output)
        output = self.dropout(output, training=training)
        return output, ops.cast(word_embedding_output, self.compute_dtype)

    def check_inputs_embeds(self, inputs_embeds):
        """Raises `UserError` unless `inputs_embeds` is [batch_size, seq_length, hidden_size]."""
        shape = tuple(inputs_embeds.shape)
        if len(shape) != 3 or shape[-1] not in (None, self.hidden_size):
            raise call_error(
                "inputs_embeds: expected shape [batch_size, seq_length, %d] (hidden_size %d), "
                "got %s" % (self.hidden_size, self.hidden_size,
                            [None if d is None else int(d) for d in shape]))

    def set_word_embeddings(self, table):
        """Replaces `word_embeddings` by `table` [new_vocab_size, hidden_size] (any vocab size).

        The new variable keeps the old one's path (`.../embeddings/word_embeddings`,
        its TF1 name) and its place among the layer's weights; `vocab_size` follows.
        """
        table = ops.convert_to_tensor(table)
        shape = tuple(table.shape)
        if len(shape) != 2 or shape[1] != self.hidden_size or not shape[0]:
            raise UserError(
                "set_input_embeddings: expected a table of shape [vocab_size, %d] "
                "(hidden_size %d), got %s" % (self.hidden_size, self.hidden_size, list(shape)))
        replace_weight(self, "word_embeddings", table)
        self.vocab_size = int(shape[0])

    def compute_output_shape(self, input_ids_shape=None, token_type_ids_shape=None,
                             inputs_embeds_shape=None, position_ids_shape=None):
        if input_ids_shape is None:
            input_ids_shape = tuple(inputs_embeds_shape)[:2]
        shape = tuple(input_ids_shape) + (self.hidden_size,)
        return shape, shape

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "type_vocab_size": self.type_vocab_size,
            "max_position_embeddings": self.max_position_embeddings,
            "hidden_dropout_prob": self.hidden_dropout_prob,
            "initializer_range": self.initializer_range,
        })
        return config


def call_error(message):
    """A `UserError` raised inside a Keras `call`, kept one line (Keras adds the call's
    arguments to any other error it sees pass through a layer)."""
    error = UserError(message)
    error._keras_call_info_injected = True  # pylint: disable=protected-access
    return error
