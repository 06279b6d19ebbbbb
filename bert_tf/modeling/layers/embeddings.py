"""BERT embeddings (original: `embedding_lookup` + `embedding_postprocessor`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops

from bert_tf.modeling.layers.dropout import Dropout
from bert_tf.modeling.layers.initializers import create_initializer
from bert_tf.modeling.layers.initializers import float32_variables_dtype
from bert_tf.modeling.layers.initializers import layer_norm


@keras.saving.register_keras_serializable(package="bert_tf")
class BertEmbeddings(keras.layers.Layer):
    """Word + token type + position embeddings, LayerNorm, dropout; TF1 scope `embeddings`.

    Checkpoint variables:
      word_embeddings [vocab_size, hidden_size]
      token_type_embeddings [type_vocab_size, hidden_size]
      position_embeddings [max_position_embeddings, hidden_size]
      LayerNorm/beta [hidden_size], LayerNorm/gamma [hidden_size]

    Call args:
      input_ids: int32 Tensor of shape [batch_size, seq_length].
      token_type_ids: int32 Tensor of shape [batch_size, seq_length].
      training: Python bool; dropout is applied only when True.

    Returns:
      (embedding_output, word_embedding_output), both float Tensors of shape
      [batch_size, seq_length, hidden_size]; the first is after the adds,
      LayerNorm and dropout, the second is the word lookup alone.
    """

    def __init__(self, vocab_size, hidden_size=768, type_vocab_size=16,
                 max_position_embeddings=512, hidden_dropout_prob=0.1,
                 initializer_range=0.02, **kwargs):
        if kwargs.get("dtype") is None:
            kwargs["dtype"] = float32_variables_dtype()  # float32 tables, see initializers
        super().__init__(**kwargs)
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

    def call(self, input_ids, token_type_ids, training=None):
        seq_length = input_ids.shape[1]
        if seq_length is not None and seq_length > self.max_position_embeddings:
            raise ValueError(
                "The sequence length (%d) cannot be greater than max_position_embeddings (%d)"
                % (seq_length, self.max_position_embeddings))
        word_embedding_output = ops.take(self.word_embeddings, input_ids, axis=0)  # [B, S, D]
        # The original looks token types up as one_hot @ table (so an id >=
        # type_vocab_size gives a zero embedding rather than an error); so do we.
        token_type_one_hot = ops.one_hot(token_type_ids, self.type_vocab_size,
                                         dtype=self.word_embeddings.dtype)  # [B, S, type_vocab]
        output = word_embedding_output + ops.matmul(token_type_one_hot, self.token_type_embeddings)
        if seq_length is None:
            seq_length = ops.shape(input_ids)[1]
        # Positions are always 0..seq_length-1, padding or not.
        position = ops.slice(self.position_embeddings, (0, 0), (seq_length, self.hidden_size))
        output = output + ops.expand_dims(position, 0)  # [B, S, D] + [1, S, D]
        output = self.layer_norm(output)
        output = self.dropout(output, training=training)
        return output, ops.cast(word_embedding_output, self.compute_dtype)

    def compute_output_shape(self, input_ids_shape, token_type_ids_shape=None):
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
