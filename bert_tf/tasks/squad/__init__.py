"""run_squad's task: extractive question answering (SQuAD v1.1 and v2.0).

  data              run_squad's examples, features and records
  data_predictions  the answers from the logits: the n-best, predictions.json
  data_evaluate     the official SQuAD v1.1 / v2.0 scores
  model             BertSquad, the span loss, SquadTask
  run               run_squad (bert-run-squad)
  serving           the question-answering SavedModel's module
"""
