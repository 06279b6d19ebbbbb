"""The BERT backbone (original: `modeling.BertModel`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops

from bert_tf.errors import UserError
from bert_tf.modeling.config import BertConfig
from bert_tf.modeling.layers.embeddings import BertEmbeddings
from bert_tf.modeling.layers.embeddings import call_error
from bert_tf.modeling.layers.initializers import create_initializer
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
      gradient_checkpointing: recompute each encoder layer's activations in the
        backward pass (less memory, about one more forward pass of compute; the
        same gradients, dropout masks included). None (the default):
        `config.gradient_checkpointing` (False unless set). See also the
        `gradient_checkpointing` property.

    Call args:
      input_ids: int32 Tensor of shape [batch_size, seq_length] (or None with
        `inputs_embeds`).
      input_mask: (optional) int32 Tensor of shape [batch_size, seq_length];
        1 for real tokens, 0 for padding. Defaults to all ones.
      token_type_ids: (optional) int32 Tensor of shape [batch_size, seq_length].
        Defaults to all zeros.
      training: Python bool. The original switches dropout off by zeroing the
        probabilities in a copy of the config when `is_training=False`; here
        dropout runs only when `training=True`.
      head_mask: (optional) float Tensor of shape [num_hidden_layers,
        num_attention_heads], or [num_attention_heads] for every layer: each
        head's attention probabilities are multiplied by its factor after the
        attention dropout (as Hugging Face's BERT): 1 keeps a head, 0 silences
        it. Head indices are the original ones, also on a pruned model (the
        pruned heads' factors are dropped). A wrong static shape is a `UserError`.
      output_attentions: Python bool; adds `attentions` to the outputs.
      inputs_embeds: (optional, instead of `input_ids`) float Tensor [batch_size,
        seq_length, hidden_size]: the word embeddings, in place of the
        `word_embeddings` lookup; the token type and position embeddings,
        LayerNorm and dropout follow as for `input_ids`. Exactly one of
        `input_ids` and `inputs_embeds` (else a one-line `UserError`).
      position_ids: (optional) int Tensor [batch_size, seq_length] or
        [seq_length]: the `position_embeddings` rows to add. Default: 0 ..
        seq_length - 1 (the original's).

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
        attentions: (only with `output_attentions=True`) a list of
          `num_hidden_layers` float32 Tensors [batch_size, heads, seq_length,
          seq_length]: each layer's attention probabilities, after the
          -10000.0 mask adder and the softmax, before dropout and `head_mask`
          (the original graph's `bert/encoder/layer_<i>/attention/self/Softmax`).
          A pruned layer has only its kept heads, in their original order.

    Pruning: `prune_heads({layer: [heads]})` removes heads for good (see there);
    `config.pruned_heads` records them, so a model built from that config has
    the smaller shapes and loads the pruned model's checkpoints.

    Example:
      ```python
      config = BertConfig.from_json_file("uncased_L-12_H-768_A-12/bert_config.json")
      model = BertModel(config)
      bert_tf.modeling.checkpoint.load_checkpoint(model, "uncased_L-12_H-768_A-12/bert_model.ckpt")
      outputs = model(input_ids, input_mask=input_mask, token_type_ids=segment_ids)
      pooled = outputs["pooled_output"]
      ```
    """

    # Its registration (`bert_tf.tasks.registry`): `from_pretrained`'s head=None.
    task_name = None
    hf_architecture = "BertModel"
    pretrained_options = ()

    @classmethod
    def from_parts(cls, parts):
        """The backbone `from_pretrained` builds from `parts` (`PretrainedParts`), no weights read."""
        return cls(parts.config)

    def __init__(self, config, name="bert", gradient_checkpointing=None, **kwargs):
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
            initializer_range=config.initializer_range, pruned_heads=config.pruned_heads,
            name="encoder")
        self.pooler = BertPooler(hidden_size=config.hidden_size,
                                 initializer_range=config.initializer_range, name="pooler")
        if gradient_checkpointing is None:
            gradient_checkpointing = config.gradient_checkpointing
        self.encoder.gradient_checkpointing = gradient_checkpointing
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

    def get_input_embeddings(self):
        """Hugging Face's accessor: the `bert/embeddings/word_embeddings` variable."""
        return self.embeddings.word_embeddings

    def set_input_embeddings(self, new_table):
        """Replaces the word embeddings by `new_table` [new_vocab_size, hidden_size].

        `new_table` is a NumPy array or Tensor of any vocabulary size; the new
        variable is still `bert/embeddings/word_embeddings` (Google's checkpoints
        keep loading), and `config.vocab_size` becomes its vocabulary size, so
        `bert_tf.modeling.checkpoint.save_checkpoint` writes the new shape and a
        `BertModel` of the config loads it. Replace before `compile` (or before
        tracing the model in a `tf.function`): an optimizer or a trace made
        earlier holds the old variable. A model with a head tied to the table
        (`BertPretrainer`) resizes with its own `resize_token_embeddings`.

        Raises:
          UserError: `new_table` is not [vocab_size, hidden_size].
        """
        self.embeddings.set_word_embeddings(new_table)
        self.config.vocab_size = self.embeddings.vocab_size
        self._forget_traces()
        return self.embeddings.word_embeddings

    def resize_token_embeddings(self, new_vocab_size):
        """The word embeddings resized to `new_vocab_size` rows (Hugging Face's name).

        The first min(old, new) rows are kept; new rows are drawn as the
        original initializes the table (truncated normal, stddev
        `initializer_range`). See `set_input_embeddings`. Returns the new variable.
        """
        if isinstance(new_vocab_size, bool) or not isinstance(new_vocab_size, int) \
                or new_vocab_size <= 0:
            raise UserError("resize_token_embeddings: new_vocab_size must be a positive "
                            "integer, got %r" % (new_vocab_size,))
        old = self.embeddings.word_embeddings
        old_vocab_size = int(old.shape[0])
        if new_vocab_size <= old_vocab_size:
            table = old[:new_vocab_size]
        else:
            new_rows = create_initializer(self.config.initializer_range)(
                (new_vocab_size - old_vocab_size, self.config.hidden_size), dtype=old.dtype)
            table = ops.concatenate([ops.convert_to_tensor(old), new_rows], axis=0)
        return self.set_input_embeddings(table)

    @property
    def gradient_checkpointing(self):
        """Whether each encoder layer is recomputed in the backward pass (settable).

        Set it before `compile` (or before tracing a training step): a step
        traced before keeps what it traced.
        """
        return self.encoder.gradient_checkpointing

    @gradient_checkpointing.setter
    def gradient_checkpointing(self, value):
        self.encoder.gradient_checkpointing = bool(value)
        self._forget_traces()

    def gradient_checkpointing_enable(self):
        """Hugging Face's name for `gradient_checkpointing = True`."""
        self.gradient_checkpointing = True

    def gradient_checkpointing_disable(self):
        """Hugging Face's name for `gradient_checkpointing = False`."""
        self.gradient_checkpointing = False

    def _forget_traces(self):
        # Keras' own compiled functions traced the old variables or options.
        for attr in ("train_function", "test_function", "predict_function"):
            if getattr(self, attr, None) is not None:
                setattr(self, attr, None)

    def prune_heads(self, heads_to_prune):
        """Removes attention heads, shrinking their layers' variables.

        Args:
          heads_to_prune: {layer index: list of head indices}. Indices are the
            original head numbers, also after an earlier prune.

        Each pruned head's columns of `attention/self/{query,key,value}/kernel`
        and `bias` go, and its rows of `attention/output/dense/kernel`; the
        outputs are those of the unpruned model with `head_mask` 0 on those
        heads. `config.pruned_heads` records every pruned head, so the model's
        checkpoints (`bert_tf.modeling.checkpoint`), `.keras` files and
        SavedModel exports keep the smaller shapes. Prune before `compile` or
        before tracing the model in a `tf.function`: an optimizer or a trace
        made earlier still holds the old variables.

        Raises:
          UserError: a layer or head out of range, a head already pruned, or
            every head of a layer (at least one must stay).
        """
        if not isinstance(heads_to_prune, dict):
            raise UserError("prune_heads: expected {layer index: [head indices]}, got %r"
                            % (heads_to_prune,))
        num_layers, num_heads = self.config.num_hidden_layers, self.config.num_attention_heads
        pruned = self.config.pruned_heads
        plan = {}
        for layer, heads in heads_to_prune.items():
            if isinstance(layer, bool) or not isinstance(layer, int) or not 0 <= layer < num_layers:
                raise UserError("prune_heads: layer %r is not in [0, %d)" % (layer, num_layers))
            heads = [heads] if isinstance(heads, int) else list(heads)
            for head in heads:
                if isinstance(head, bool) or not isinstance(head, int) or not 0 <= head < num_heads:
                    raise UserError("prune_heads: layer %d head %r is not in [0, %d)"
                                    % (layer, head, num_heads))
                if head in pruned.get(layer, ()):
                    raise UserError("prune_heads: layer %d head %d is already pruned"
                                    % (layer, head))
            heads = sorted(set(heads))
            if len(set(pruned.get(layer, ())) | set(heads)) >= num_heads:
                raise UserError("prune_heads: layer %d would lose all its %d heads (at least "
                                "one must stay)" % (layer, num_heads))
            if heads:
                plan[layer] = heads
        for layer, heads in sorted(plan.items()):
            self.encoder.layers[layer].attention.prune_heads(heads)
            pruned[layer] = sorted(set(pruned.get(layer, ())) | set(heads))
        self.config.pruned_heads = pruned
        self._forget_traces()

    def _layer_head_masks(self, head_mask):
        """`head_mask` checked and split into one [kept heads] vector per layer."""
        num_layers, num_heads = self.config.num_hidden_layers, self.config.num_attention_heads
        head_mask = ops.cast(ops.convert_to_tensor(head_mask), "float32")
        shape = tuple(head_mask.shape)
        if not ((len(shape) == 1 and shape[0] in (None, num_heads)) or
                (len(shape) == 2 and shape[0] in (None, num_layers)
                 and shape[1] in (None, num_heads))):
            raise call_error(
                "head_mask: expected shape [%d, %d] (num_hidden_layers, num_attention_heads) "
                "or [%d], got %s" % (num_layers, num_heads, num_heads,
                                     [None if d is None else int(d) for d in shape]))
        masks = []
        for i, layer in enumerate(self.encoder.layers):
            row = head_mask if len(shape) == 1 else head_mask[i]
            kept = layer.attention.self_attention.kept_heads
            if len(kept) != num_heads:
                row = ops.take(row, kept, axis=0)
            masks.append(row)
        return masks

    def call(self, input_ids=None, input_mask=None, token_type_ids=None, training=None,
             head_mask=None, output_attentions=False, inputs_embeds=None, position_ids=None):
        if (input_ids is None) == (inputs_embeds is None):
            raise call_error("BertModel: pass exactly one of input_ids and inputs_embeds, got %s"
                             % ("both" if input_ids is not None else "neither"))
        if inputs_embeds is None:
            input_ids = ops.convert_to_tensor(input_ids)
            if input_mask is None:
                input_mask = ops.ones_like(input_ids)
            if token_type_ids is None:
                token_type_ids = ops.zeros_like(input_ids)
        else:
            inputs_embeds = ops.convert_to_tensor(inputs_embeds)
            self.embeddings.check_inputs_embeds(inputs_embeds)
            batch_and_length = ops.shape(inputs_embeds)[:2]
            if input_mask is None:
                input_mask = ops.ones(batch_and_length, "int32")
            if token_type_ids is None:
                token_type_ids = ops.zeros(batch_and_length, "int32")
        if inputs_embeds is None and position_ids is None:
            embedding_output, word_embedding_output = self.embeddings(
                input_ids, token_type_ids, training=training)
        else:
            embedding_output, word_embedding_output = self.embeddings(
                input_ids, token_type_ids, training=training, inputs_embeds=inputs_embeds,
                position_ids=position_ids)
        # `(1.0 - mask) * -10000.0`, broadcast over heads and query positions.
        adder = attention_mask_adder(input_mask)
        if head_mask is None and not output_attentions:
            all_encoder_layers = self.encoder(embedding_output, adder, training=training)
        else:
            all_encoder_layers = self.encoder(
                embedding_output, adder, training=training,
                head_mask=None if head_mask is None else self._layer_head_masks(head_mask),
                output_attentions=output_attentions)
        if output_attentions:
            all_encoder_layers, attentions = all_encoder_layers
        sequence_output = all_encoder_layers[-1]
        pooled_output = self.pooler(sequence_output)
        outputs = {
            "sequence_output": sequence_output,
            "pooled_output": pooled_output,
            "all_encoder_layers": all_encoder_layers,
            "embedding_output": embedding_output,
            "word_embedding_output": word_embedding_output,
        }
        if output_attentions:
            outputs["attentions"] = attentions
        return outputs

    def save_pretrained(self, directory, format="google", vocab_file=None,  # pylint: disable=redefined-builtin
                        do_lower_case=None, overwrite=False):
        """Writes the model as a directory `bert_tf.from_pretrained` reads back.

        `format="google"` (the default): `bert_config.json`, `vocab.txt`,
        `bert_model.ckpt.*`, as Google's releases (the original code restores
        it). `format="huggingface"`: `config.json`, `model.safetensors`,
        `vocab.txt`, `tokenizer_config.json`, `special_tokens_map.json`, a
        Hugging Face `BertModel`. The vocab is the one `from_pretrained`
        loaded, or `vocab_file=`. See `bert_tf.modeling.checkpoint.save_pretrained`.
        """
        from bert_tf.modeling import checkpoint  # pylint: disable=g-import-not-at-top
        return checkpoint.save_pretrained(self, directory, self.config, format=format,
                                          vocab_file=vocab_file, do_lower_case=do_lower_case,
                                          overwrite=overwrite)

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        if self.gradient_checkpointing != self.config.gradient_checkpointing:
            config["gradient_checkpointing"] = self.gradient_checkpointing
        return config
