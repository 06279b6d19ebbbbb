"""The runs behind the tools: the library function each command line calls.

  run_pretraining            run_pretraining (bert-run-pretraining)
  run_classifier             run_classifier (bert-run-classifier)
  run_classifier_with_tfhub  run_classifier_with_tfhub (bert-run-classifier-with-tfhub)
  run_squad                  run_squad (bert-run-squad)
  finetuning                 what the fine-tuning runs share: their course on a
                             `Schedule`, the record datasets, the best checkpoint,
                             test_results.tsv, the classifier runs' course
  extract_features           extract_features (bert-extract-features)
  create_pretraining_data    create_pretraining_data (bert-create-pretraining-data)
  show_attention             show_attention (bert-show-attention)

Each run takes its tool's flags as keyword arguments of the same names (the
option groups as one dataclass each: `bert_tf.training.scale_out.ScaleOut`,
`bert_tf.training.dev_eval.DevEval`, `bert_tf.training.schedule.Schedule`),
checks its inputs before any work, and writes the original's output files.
The tools (`bert_tf.tools`) parse the flags and make the call; nothing here
reads a flag.
"""
