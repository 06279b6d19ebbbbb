"""A TF1 `tf.layers.dense` as one 2-D matmul (original: every `tf.layers.dense` in `modeling.py`)."""

from bert_tf import _backend  # noqa: F401  (KERAS_BACKEND=tensorflow before keras loads)
import keras
from keras import ops
import tensorflow as tf


@keras.saving.register_keras_serializable(package="bert_tf")
class BertDense(keras.layers.Dense):
    """`keras.layers.Dense` computed as `MatMul` + `BiasAdd` (+ activation) on 2-D operands.

    Same variables (`kernel` [in, out], `bias` [out]), initializers, config and
    numbers as `keras.layers.Dense`. Only the graph differs: `keras.layers.Dense`
    multiplies a [B, S, in] input through `Tensordot` (reshape, MatMul, reshape)
    and adds the bias after the reshape, which hides the MatMul + BiasAdd (+ GELU)
    pattern from Grappler's remapper. Here the leading dimensions are flattened
    first, so the remapper fuses MatMul, BiasAdd and the activation into one
    kernel (oneDNN on CPU, cuBLASLt's epilogue on GPU), as TF1's
    `tf.layers.dense` on the original's 2-D activations did.

    Port note: the original keeps every activation 2-D ([B*S, D],
    `reshape_to_matrix`) between layers; this layer flattens and restores the
    shape around each matmul instead, which costs two reshapes (no copies).
    """

    def call(self, inputs, training=None):
        kernel = ops.cast(self.kernel, self.compute_dtype)
        shape = tf.shape(inputs)
        flat = tf.reshape(inputs, (-1, self.kernel.shape[0])) if inputs.shape.rank != 2 else inputs
        outputs = tf.matmul(flat, kernel)
        if self.bias is not None:
            outputs = tf.nn.bias_add(outputs, ops.cast(self.bias, self.compute_dtype))
        if self.activation is not None:
            activation = self.activation
            if training:  # a GELU's derivative written out (`activations.training_form`)
                activation = getattr(activation, "training_form", activation)
            outputs = activation(outputs)
        if inputs.shape.rank != 2:
            outputs = tf.reshape(outputs, tf.concat([shape[:-1], [self.units]], 0))
        return outputs
