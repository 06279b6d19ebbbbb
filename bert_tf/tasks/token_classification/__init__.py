"""Named entities (bert-run-ner): a label for each word's first sub-token.

  data              CoNLL-2003 reading, the windows, records, labels.txt
  data_conlleval    conlleval's entity-level precision, recall and f1
  model             BertTokenClassifier, the masked token loss, TokenClassificationTask
  run               run_ner (bert-run-ner)
  serving           the named-entity SavedModel's module (raw text in, entities out)
"""
