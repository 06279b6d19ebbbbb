"""The runs every task shares, and the tools' runs that are no task's.

A task's own run is in its folder (`bert_tf/tasks/<task>/run*`: run_classifier,
run_ner, run_squad, run_pretraining, ...).

  finetuning                 what the fine-tuning runs share: their course on a
                             `Schedule`, the record datasets, the best checkpoint,
                             test_results.tsv, the classifier runs' course
  extract_features           extract_features (bert-extract-features)
  show_attention             show_attention (bert-show-attention)

Each run takes its tool's flags as keyword arguments of the same names (the
option groups as one dataclass each: `bert_tf.training.scale_out.ScaleOut`,
`bert_tf.training.dev_eval.DevEval`, `bert_tf.training.schedule.Schedule`),
checks its inputs before any work, and writes the original's output files.
The tools (`bert_tf.tools`) parse the flags and make the call; nothing here
reads a flag.
"""
