"""The runs behind the tools: what each of `tools/*.py` calls once its flags are parsed.

  run_pretraining          run_pretraining (tools/run_pretraining.py)
  run_classifier           run_classifier (tools/run_classifier.py)
  run_squad                run_squad (tools/run_squad.py)
  finetuning               what the two fine-tuning runs share: the schedule,
                           the record datasets, test_results.tsv
  extract_features         extract_features (tools/extract_features.py)
  create_pretraining_data  create_pretraining_data (tools/create_pretraining_data.py)
  cli                      the tools' runner (one-line errors) and shared flags

Each run takes the tool's flags as keyword arguments of the same names (the
scale-out flags as one `bert_tf.training.scale_out.ScaleOut`), checks its
inputs before any work, and writes the original's output files.
"""
