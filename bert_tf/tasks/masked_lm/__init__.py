"""Domain-adaptive masked-LM training (new; bert-run-mlm): one task, in one folder.

The step taken before fine-tuning on one's own domain: Google's pre-training
model trained further, on the masked-LM loss alone, on raw domain text, with
masks drawn anew each epoch (the original masks once, in the records).

  data_text_rows  raw text (the original's pre-training text format) -> token
                  ids, packed into `[CLS] tokens [SEP]` rows (Hugging Face's
                  group_texts)
  data_masking    the original's masking rule (80/10/10, max_predictions_per_seq,
                  whole-word masking), drawn by stateless random ops keyed on
                  (seed, epoch, row)
  data            `MaskedLMData`: the rows as tf.data with those masks, for the
                  `Trainer` and for Keras `fit`
  model           `BertMaskedLM` (`BertPretrainer`'s variables and checkpoints),
                  `MaskedLMTask` (the masked-LM loss alone)
  run             `run_mlm` (the tool `bert-run-mlm`)

"""
