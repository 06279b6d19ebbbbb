r"""What each part of a packed fine-tuning step costs: the step against itself without a part.

  .venv/bin/python bench/step_parts_bench.py [--quick] [--rounds=15]
      [--mean_length=30 --max_seq_length=128 --batch_size=32]

bench/finetune_speed_bench.py times whole fine-tuning runs against Hugging
Face's; this one asks where a step's time goes, and so how much faster the
step could get without changing its numbers. One process builds the encoder
of all-MiniLM-L6-v2's shape (6 layers, hidden 384, 12 heads, intermediate
1536, GELU's erf form; random weights, which cost what trained ones cost)
several times, one variant each, traces each variant's step (forward and
backward: the loss is the sum of squares of the last layer at the real
tokens, the gradients those of every variable; no optimizer update), and
times the variants in turns, round after round, so that a slower minute of
the machine falls on all of them:

  step            the training step as the tools run it: the batch cut after
                  its longest row, the encoder on the real tokens alone
                  (`bert_tf.modeling.padding.padding_skipped`);
  op-by-op gradients  `step` with GELU and LayerNorm differentiated by
                  TensorFlow op by op, as before their gradients were
                  written out (`bert_tf.modeling.activations.training_form`,
                  `bert_tf.modeling.layers.initializers`): the same numbers;
  rows            the same batch at the same cut without packing: every
                  position of every row up to the longest computed, as a
                  model that pads each batch to its longest row does;
  no GELU         `step` with the GELU of the intermediate layer left out;
  no LayerNorm    `step` with each LayerNorm replaced by its gamma and beta alone;
  no dropout      `step` with every dropout left out (the identity);
  none of the 3   `step` with all three left out.

The last four compute other numbers than BERT: they are not models, they
bound what a faster GELU, LayerNorm or dropout could save (each at most
its whole cost). The batch's lengths are drawn from a gamma distribution
of mean --mean_length (seeded; WNUT-16's tweets are about 30 WordPieces,
PIQA's pairs about 27), at most --max_seq_length.

The table gives, per variant, the median ms per step over the rounds with
their spread, the ratio of the median to `step`'s, and the ms per 1,000
positions computed (the real tokens for the packed variants, every position
up to the longest for `rows`).
"""

import contextlib
import os
import sys
import time

BENCH = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(BENCH)
sys.path.insert(0, BENCH)
sys.path.insert(0, REPO)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import benchlib  # noqa: E402

MODES = {"quick": dict(rounds=4, calls=2), "full": dict(rounds=15, calls=3)}
VARIANTS = ("step", "op-by-op gradients", "rows", "no GELU", "no LayerNorm", "no dropout",
            "none of the 3")
LEFT_OUT = {"no GELU": ("gelu",), "no LayerNorm": ("layer_norm",), "no dropout": ("dropout",),
            "none of the 3": ("gelu", "layer_norm", "dropout"),
            "op-by-op gradients": ("written_out_gradients",)}
# all-MiniLM-L6-v2's shape (its config.json), GELU's erf form as its "gelu".
CONFIG = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
              intermediate_size=1536, hidden_act="gelu_exact", max_position_embeddings=512)


def parse_args(argv=None):
    parser = benchlib.ArgumentParser(prog="step_parts_bench.py",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="%(rounds)d rounds x %(calls)d "
                        "steps per variant" % MODES["quick"])
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--calls", type=int, default=None, help="timed steps per variant and round")
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--mean_length", type=float, default=30.0,
                        help="the rows' mean length in WordPieces, [CLS] and [SEP] included")
    parser.add_argument("--max_seq_length", type=int, default=128)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    benchlib.apply_mode(args, MODES, ("rounds", "calls", "batch_size", "max_seq_length"), parser)
    if not 3 <= args.mean_length <= args.max_seq_length:
        parser.error("--mean_length=%s: must be between 3 and --max_seq_length" % args.mean_length)
    return args


def batch(args):
    """The features of one batch: lengths from a gamma of mean --mean_length, cut after the longest."""
    import numpy as np
    import tensorflow as tf
    from bert_tf.modeling import padding
    rng = np.random.default_rng(args.seed)
    lengths = np.clip(np.rint(rng.gamma(4.0, args.mean_length / 4.0, size=args.batch_size)),
                      3, args.max_seq_length).astype(np.int64)
    mask = (np.arange(args.max_seq_length)[None, :] < lengths[:, None]).astype(np.int32)
    cut = padding.numpy_attended_length(mask, padding.TRAINING_LENGTH_MULTIPLE)
    mask = mask[:, :cut]
    ids = rng.integers(1000, CONFIG["vocab_size"], size=mask.shape).astype(np.int32) * mask
    return {"input_ids": tf.constant(ids), "input_mask": tf.constant(mask),
            "token_type_ids": tf.zeros_like(tf.constant(ids))}


@contextlib.contextmanager
def left_out(parts):
    """Within: the model's GELU, LayerNorm and/or dropout are left out where built or traced
    (or, "written_out_gradients", GELU and LayerNorm differentiated op by op)."""
    import keras
    from bert_tf.modeling import activations
    from bert_tf.modeling.layers import dropout as dropout_lib
    from bert_tf.modeling.layers import initializers
    gelus = (activations.gelu, activations.gelu_exact)
    saved = (activations.gelu_exact, dropout_lib.dropout, initializers.BertLayerNorm.call,
             [gelu.training_form for gelu in gelus])
    if "written_out_gradients" in parts:
        for gelu in gelus:
            gelu.training_form = gelu
        initializers.BertLayerNorm.call = (
            lambda layer, x, training=None: keras.layers.LayerNormalization.call(layer, x))
    if "gelu" in parts:
        activations.gelu_exact = lambda x: x
    if "layer_norm" in parts:
        initializers.BertLayerNorm.call = (
            lambda layer, x, training=None: x * layer.gamma + layer.beta)
    if "dropout" in parts:
        dropout_lib.dropout = lambda inputs, rate, seed: inputs
    try:
        yield
    finally:
        activations.gelu_exact, dropout_lib.dropout, initializers.BertLayerNorm.call, forms = saved
        for gelu, form in zip(gelus, forms):
            gelu.training_form = form


def traced_step(variant, features):
    """The variant's step as a traced `tf.function` of no arguments (traced here, in its context)."""
    import tensorflow as tf
    from bert_tf.modeling import padding
    from bert_tf.modeling.bert_model import BertModel
    from bert_tf.modeling.config import BertConfig
    with left_out(LEFT_OUT.get(variant, ())):
        model = BertModel(BertConfig(**CONFIG))
        packed = padding.padding_skipped(model) if variant != "rows" else contextlib.nullcontext()

        @tf.function
        def step():
            with packed, tf.GradientTape() as tape:
                outputs = model(features["input_ids"], input_mask=features["input_mask"],
                                token_type_ids=features["token_type_ids"], training=True)
                real = tf.cast(features["input_mask"], tf.float32)[:, :, None]
                loss = tf.reduce_sum(tf.square(outputs["sequence_output"]) * real)
            return loss, tape.gradient(loss, model.trainable_variables)

        step()[0].numpy()
        step()[0].numpy()
    return step


def main(argv=None):
    args = parse_args(argv)
    import tensorflow as tf
    tf.get_logger().setLevel("ERROR")  # one tf.function per variant is the point, not a retrace
    features = batch(args)
    mask = features["input_mask"].numpy()
    tokens, positions = int(mask.sum()), int(mask.size)
    print("batch %d, lengths mean %.1f, longest %d: %d tokens, %d positions up to the cut"
          % (args.batch_size, mask.sum(1).mean(), mask.shape[1], tokens, positions), flush=True)
    steps = {}
    for variant in VARIANTS:
        steps[variant] = traced_step(variant, features)
        print("traced: %s" % variant, flush=True)
    times = {variant: [] for variant in VARIANTS}
    for round_index in range(args.rounds):
        for variant in benchlib.alternating_order(list(VARIANTS), round_index):
            start = time.perf_counter()
            for _ in range(args.calls):
                loss = steps[variant]()[0]
            loss.numpy()
            times[variant].append((time.perf_counter() - start) / args.calls * 1e3)
        print("round %d/%d: %s" % (round_index + 1, args.rounds, ", ".join(
            "%s %.0f ms" % (v, times[v][-1]) for v in VARIANTS)), flush=True)
    base = benchlib.median(times["step"])
    rows = []
    for variant in VARIANTS:
        median = benchlib.median(times[variant])
        computed = positions if variant == "rows" else tokens
        rows.append([variant, benchlib.format_number(median, 0),
                     benchlib.format_spread(min(times[variant]), max(times[variant]), 0),
                     benchlib.format_ratio(median / base),
                     benchlib.format_number(median / computed * 1e3, 0)])
    print()
    print(benchlib.markdown_table(
        ["variant", "ms per step (median)", "spread", "vs step", "ms per 1,000 positions"], rows))


if __name__ == "__main__":
    main()
