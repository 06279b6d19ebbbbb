"""The scale-out options every training run shares (new: the original had a TPU or one device).

`ScaleOut` holds what the training tools' new flags say (`--distribution_strategy`,
`--num_gpus`, `--use_xla`, `--mixed_precision`, `--num_accumulation_steps`,
`--optimizer_type`, `--log_steps`, `--gradient_checkpointing`, `--seed`, `--trim_padding`,
`--bucket_by_length`) and the original's
TPU flags (`--use_tpu`, `--tpu_name`, `--tpu_zone`, `--gcp_project`, `--master`,
`--num_tpu_cores`), and makes what they ask for: the `tf.distribute.Strategy`
(`create_strategy`, before any TensorFlow op runs: MultiWorkerMirroredStrategy
needs that), the arguments of the `Trainer` under it and of its `train`, and
the model options of the config (`configure_model`). The runs
(`bert_tf.runs`) take one; each field is a flag of the training tools
(`bert_tf.options`: declared here once, with its help).

  scale_out = ScaleOut(distribution_strategy="mirrored", num_gpus=8, mixed_precision="bf16")
  strategy = scale_out.create_strategy()
  trainer = Trainer(strategy, lambda: BertClassifier(config, 2), "/tmp/output",
                    **scale_out.trainer_options())
  trainer.train(..., **scale_out.train_options())
"""

import dataclasses
from typing import Optional

from absl import logging

from bert_tf.errors import UserError
from bert_tf.options import option

# The Estimator logged the loss every 100 steps on CPU/GPU (--log_steps).
LOG_STEPS = 100


@dataclasses.dataclass(frozen=True)
class ScaleOut(object):
    """Where a training run runs and how (the defaults: one device, float32, no XLA).

    Attributes (the flags of the same names):
      distribution_strategy: None | "off" | "one_device" | "mirrored" |
        "multi_worker_mirrored" | "tpu"; None picks from the others (see
        `strategy_name`).
      num_gpus: GPUs per worker; None (or -1): every visible GPU; 0: the CPU.
      use_tpu, tpu_name, tpu_zone, gcp_project, master, num_tpu_cores: the
        original's TPU flags.
      use_xla: compile each replica's training step with XLA.
      mixed_precision: None | "bf16" | "fp16".
      num_accumulation_steps: micro-batches per replica and update.
      optimizer_type: "adamw" (the original's) | "lamb".
      log_steps: log progress and write summaries at least this often.
      gradient_checkpointing: recompute each encoder layer's activations in the
        backward pass (`BertModel`'s option; see `configure_model`).
      heartbeat_timeout: multi_worker_mirrored: seconds without a heartbeat
        after which a worker counts as lost.
      trim_padding: run each batch cut after its longest row (`Trainer`'s).
      bucket_by_length: training batches of similar lengths (the runs'
        training input pipelines, `input_pipeline.bucket_by_length`).
      seed: None (unseeded, as the original) or an int >= 0: a reproducible
        run that resumes exactly. The initial weights, the input order and
        the dropout masks follow from it (`Trainer`'s `seed`; the runs pass it
        to their training input pipelines), and `create_strategy`
        turns on TensorFlow's op determinism. Two runs with one seed write the
        same checkpoints; a run killed at any point and run again ends with
        the checkpoint of a run never stopped (float32 or bf16; fp16's loss
        scale is not in the checkpoint).
    """

    # The original's TPU flags (same names, types, defaults and help).
    use_tpu: bool = option(False, "Whether to use TPU or GPU/CPU.")
    tpu_name: Optional[str] = option(
        None,
        "The Cloud TPU to use for training. This should be either the name "
        "used when creating the Cloud TPU, or a grpc://ip.address.of.tpu:8470 "
        "url.")
    tpu_zone: Optional[str] = option(
        None,
        "[Optional] GCE zone where the Cloud TPU is located in. If not "
        "specified, we will attempt to automatically detect the GCE project from "
        "metadata.")
    gcp_project: Optional[str] = option(
        None,
        "[Optional] Project name for the Cloud TPU-enabled project. If not "
        "specified, we will attempt to automatically detect the GCE project from "
        "metadata.")
    master: Optional[str] = option(None, "[Optional] TensorFlow master URL.")
    num_tpu_cores: int = option(
        8,
        "Only used if `use_tpu` is True. Accepted for the original's command lines and "
        "ignored with a warning: the TPU strategy uses every core of the TPU.")
    # New (beyond the original).
    distribution_strategy: Optional[str] = option(
        None,
        "tf.distribute strategy. Default: tpu with --use_tpu, mirrored with "
        "--num_gpus > 1, one_device with --num_gpus=1, else off.",
        enum_values=["off", "one_device", "mirrored", "multi_worker_mirrored", "tpu"])
    num_gpus: Optional[int] = option(
        None,
        "GPUs per worker (mirrored / one_device). Default (or -1): every visible GPU; "
        "0: the CPU. The devices used are logged.")
    use_xla: bool = option(False, "Compile each replica's training step with XLA.")
    mixed_precision: Optional[str] = option(
        None,
        "Mixed precision: bf16 (TPU, Ampere+ GPUs) or fp16 (with dynamic "
        "loss scaling). Variables stay float32; LayerNorm, softmax and the "
        "losses run in float32. Default: float32.",
        enum_values=["bf16", "fp16"])
    num_accumulation_steps: int = option(
        1,
        "Split each replica's share of --train_batch_size into this many "
        "micro-batches and accumulate their gradients: the same update as the "
        "whole batch with less memory. --train_batch_size stays the batch of "
        "one update.")
    optimizer_type: str = option(
        "adamw", "adamw: the original AdamWeightDecayOptimizer; lamb: LAMB.",
        enum_values=["adamw", "lamb"])
    log_steps: int = option(
        LOG_STEPS,
        "Log progress (steps/s, examples/s, ETA) and write summaries at "
        "least every this many steps (and at least every 10 s on one worker).")
    gradient_checkpointing: bool = option(
        False,
        "Recompute each Transformer layer's activations in the backward pass "
        "instead of keeping them: less memory (a larger batch or a longer "
        "sequence), about a third more compute per step; the same gradients.")
    seed: Optional[int] = option(
        None,
        "A reproducible run that resumes exactly: the initial weights, the training "
        "input's order and the dropout masks follow from this seed, and TensorFlow's op "
        "determinism is on. Two runs with one seed write the same checkpoints, and a "
        "run killed at any point and started again with the same command ends with the "
        "same checkpoint as a run never stopped. Default: unseeded, as the original.",
        lower_bound=0)

    trim_padding: bool = option(
        True,
        "No work on padding: training, evaluation and prediction run each batch cut after "
        "its longest row (rounded up to a multiple of 8 positions) and the encoder on its "
        "real tokens alone, with the numbers of whole rows within float32 rounding. False: "
        "every row at --max_seq_length, as the original. Rows stay whole with --use_xla and "
        "on TPU (fixed shapes), and in run_squad (its loss reads every position).")
    bucket_by_length: bool = option(
        False,
        "Training batches of rows of similar lengths, so each is cut short "
        "(--trim_padding): the records of 50 batches in the original's order are sorted "
        "by length and cut into batches, which are then shuffled (with --seed, "
        "reproducibly, and a resumed run continues exactly). Default: the original's order.")

    heartbeat_timeout: float = option(
        10.0,
        "multi_worker_mirrored: seconds without a heartbeat after which a worker counts "
        "as lost and the run stops (TensorFlow's default, 10). Raise it on machines so "
        "loaded that a live worker can miss its beat.")

    def __post_init__(self):
        if self.bucket_by_length and not self.trim_padding:
            raise UserError("--bucket_by_length groups rows of similar lengths for the cut of "
                            "--trim_padding; with --trim_padding=false every row is whole: "
                            "drop one of the two")
        if self.bucket_by_length and (self.use_xla or self.use_tpu
                                      or self.distribution_strategy == "tpu"):
            raise UserError("--bucket_by_length: with %s every row stays whole (fixed shapes), "
                            "so batches of similar lengths save nothing"
                            % ("--use_xla" if self.use_xla else "a TPU"))

    def strategy_name(self):
        """The strategy asked for: tpu with --use_tpu, mirrored with --num_gpus > 1, one_device
        with --num_gpus=1, else off (unless --distribution_strategy names one)."""
        if self.use_tpu:
            if self.distribution_strategy not in (None, "tpu"):
                raise UserError("--use_tpu=True contradicts --distribution_strategy=%s"
                                % self.distribution_strategy)
            return "tpu"
        if self.distribution_strategy:
            return self.distribution_strategy
        if self.num_gpus is not None and self.num_gpus > 1:
            return "mirrored"
        if self.num_gpus == 1:
            return "one_device"
        return "off"

    def create_strategy(self):
        """The `tf.distribute.Strategy` (call it before any TensorFlow op runs).

        With a `seed`, TensorFlow's op determinism is turned on first (for the
        process: `tf.config.experimental.enable_op_determinism`), so every op
        gives the same bits on every run, and TensorFlow's global seed is set
        to it (`tf.random.set_seed`).
        """
        # TensorFlow loads here, not when the options are made (the tools' --help).
        import tensorflow as tf  # pylint: disable=g-import-not-at-top
        from bert_tf.training import distribute  # pylint: disable=g-import-not-at-top
        if self.seed is not None:
            if isinstance(self.seed, bool) or int(self.seed) < 0:
                raise UserError("--seed must be a non-negative integer, got %r" % (self.seed,))
            tf.config.experimental.enable_op_determinism()
            # A random op without a seed of its own then draws from this one (op
            # determinism refuses an unseeded random op).
            tf.random.set_seed(self.seed)
            logging.info("--seed=%d: initial weights, input order and dropout masks follow "
                         "from it; op determinism is on", self.seed)
            if self.mixed_precision == "fp16":
                logging.warning("--seed with --mixed_precision=fp16: the dynamic loss scale is "
                                "not in the checkpoint, so a resumed run is not exact (use "
                                "float32 or bf16 for exact resume)")
        strategy = distribute.get_strategy(
            self.strategy_name(), num_gpus=self.num_gpus, tpu=self.tpu_name,
            tpu_zone=self.tpu_zone, gcp_project=self.gcp_project, master=self.master,
            heartbeat_timeout=self.heartbeat_timeout)
        if self.use_tpu and self.num_tpu_cores != strategy.num_replicas_in_sync:
            # Port note: TPUStrategy uses every core of the TPU it connects to.
            logging.warning("--num_tpu_cores=%d is ignored: the TPU has %d cores, all used",
                            self.num_tpu_cores, strategy.num_replicas_in_sync)
        return strategy

    def trainer_options(self):
        """The keyword arguments of `Trainer` these options set (precision, XLA, logging)."""
        return {"mixed_precision": self.mixed_precision, "use_xla": self.use_xla,
                "log_steps": self.log_steps, "seed": self.seed,
                "trim_padding": self.trim_padding}

    def configure_model(self, bert_config):
        """`bert_config` with the model options these flags set (`gradient_checkpointing`)."""
        bert_config.gradient_checkpointing = self.gradient_checkpointing
        if self.gradient_checkpointing:
            logging.info("Each encoder layer is recomputed in the backward pass "
                         "(--gradient_checkpointing)")
        return bert_config

    def train_options(self):
        """The keyword arguments of `Trainer.train` these options set."""
        return {"num_accumulation_steps": self.num_accumulation_steps,
                "optimizer_type": self.optimizer_type}
