"""run_pretraining's task: the masked-LM and next-sentence heads, and filling masks.

  model             BertPretrainer, the masked-LM and next-sentence losses,
                    PretrainingTask; BertFillMask (the heads at inference, with the tokenizer)
  run               run_pretraining (bert-run-pretraining)
  run_create_data   create_pretraining_data (bert-create-pretraining-data)
  run_fill_mask     fill_mask (bert-fill-mask)
  serving           the fill-mask SavedModel's module

The records' machinery (the original create_pretraining_data, exact, sharded, on
Beam) is its package `bert_tf.tasks.pretraining.data`; the reading of text
files, which the vocab learner shares, is `bert_tf.data.text_files`.
"""
