"""Multiple choice (SWAG; bert-run-multiple-choice): a score per choice.

  data              SWAG's rows, the choices' records
  model             BertMultipleChoice, MultipleChoiceTask
  run               run_multiple_choice (bert-run-multiple-choice)
  serving           MultipleChoiceServingModule: the multiple-choice SavedModel
"""
