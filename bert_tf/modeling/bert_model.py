"""The BERT backbone (original: `modeling.BertModel`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops

from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.layers.embeddings import BertEmbeddings
from bert_tf.modeling.layers.masks import attention_mask_adder
from bert_tf.modeling.layers.transformer import BertEncoder
from bert_tf.modeling.layers.transformer import BertPooler


@keras.saving.register_keras_serializable(package="bert_tf")
class BertModel(keras.Model):
    """BERT model ("Bidirectional Encoder Representations from Transformers").

    Every variable's `path` is its name in Google's checkpoints
    (`bert/embeddings/word_embeddings`,
    `bert/encoder/layer_0/attention/self/query/kernel`, `bert/pooler/dense/bias`,
    ...), so `bert_tf.modeling.checkpoint` loads and saves them by name. The weights are
    created by the constructor, so a checkpoint can be loaded before any call.

    Args:
      config: `BertConfig` instance.
      name: the root scope; "bert" as in every released checkpoint.

    Call args:
      input_ids: int32 Tensor of shape [batch_size, seq_length].
      input_mask: (optional) int32 Tensor of shape [batch_size, seq_length];
        1 for real tokens, 0 for padding. Defaults to all ones.
      token_type_ids: (optional) int32 Tensor of shape [batch_size, seq_length].
        Defaults to all zeros.
      training: Python bool. The original switches dropout off by zeroing the
        probabilities in a copy of the config when `is_training=False`; here
        dropout runs only when `training=True`.

    Returns:
      A dict:
        sequence_output: float Tensor [batch_size, seq_length, hidden_size],
          the final encoder layer.
        pooled_output: float Tensor [batch_size, hidden_size].
        all_encoder_layers: list of `num_hidden_layers` float Tensors
          [batch_size, seq_length, hidden_size] (the embedding output excluded).
        embedding_output: float Tensor [batch_size, seq_length, hidden_size],
          after the adds, LayerNorm and dropout.
        word_embedding_output: float Tensor [batch_size, seq_length,
          hidden_size], the word lookup alone.

    Example:
      ```python
      config = BertConfig.from_json_file("uncased_L-12_H-768_A-12/bert_config.json")
      model = BertModel(config)
      bert_tf.modeling.checkpoint.load_checkpoint(model, "uncased_L-12_H-768_A-12/bert_model.ckpt")
      outputs = model(input_ids, input_mask=input_mask, token_type_ids=segment_ids)
      pooled = outputs["pooled_output"]
      ```
    """

    def __init__(self, config, name="bert", **kwargs):
        super().__init__(name=name, **kwargs)
        if isinstance(config, dict):
            config = BertConfig.from_dict(config)
        config.validate()
        self.config = config
        self.embeddings = BertEmbeddings(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            type_vocab_size=config.type_vocab_size,
            max_position_embeddings=config.max_position_embeddings,
            hidden_dropout_prob=config.hidden_dropout_prob,
            initializer_range=config.initializer_range, name="embeddings")
        self.encoder = BertEncoder(
            hidden_size=config.hidden_size, num_hidden_layers=config.num_hidden_layers,
            num_attention_heads=config.num_attention_heads,
            intermediate_size=config.intermediate_size, hidden_act=config.hidden_act,
            hidden_dropout_prob=config.hidden_dropout_prob,
            attention_probs_dropout_prob=config.attention_probs_dropout_prob,
            initializer_range=config.initializer_range, name="encoder")
        self.pooler = BertPooler(hidden_size=config.hidden_size,
                                 initializer_range=config.initializer_range, name="pooler")
        self.build()

    def build(self, input_shape=None):
        if self.built:
            return
        self.embeddings.build((None, None))
        self.encoder.build((None, None, self.config.hidden_size))
        self.pooler.build((None, None, self.config.hidden_size))
        self.built = True

    @property
    def embedding_table(self):
        """The `word_embeddings` variable [vocab_size, hidden_size] (the MLM head ties to it)."""
        return self.embeddings.word_embeddings

    def get_embedding_table(self):
        """The original's accessor: the `word_embeddings` variable."""
        return self.embedding_table

    def call(self, input_ids, input_mask=None, token_type_ids=None, training=None):
        input_ids = ops.convert_to_tensor(input_ids)
        if input_mask is None:
            input_mask = ops.ones_like(input_ids)
        if token_type_ids is None:
            token_type_ids = ops.zeros_like(input_ids)
        embedding_output, word_embedding_output = self.embeddings(
            input_ids, token_type_ids, training=training)
        # `(1.0 - mask) * -10000.0`, broadcast over heads and query positions.
        adder = attention_mask_adder(input_mask)
        all_encoder_layers = self.encoder(embedding_output, adder, training=training)
        sequence_output = all_encoder_layers[-1]
        pooled_output = self.pooler(sequence_output)
        return {
            "sequence_output": sequence_output,
            "pooled_output": pooled_output,
            "all_encoder_layers": all_encoder_layers,
            "embedding_output": embedding_output,
            "word_embedding_output": word_embedding_output,
        }

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        return config
