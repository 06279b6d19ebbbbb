"""run_classifier's task: sentence and sentence-pair classification, regression, multi-label.

  data              run_classifier's examples, TSV reading, convert_single_example, records
  data_processors   the processors (GLUE, XNLI, multilabel) and their registry (--task_name)
  model             BertClassifier, the classification / regression / multi-label losses,
                    ClassifierTask
  model_hub         HubClassifier (`hub_classifier`) and its HubClassifierTask: the
                    classifier on a TF Hub encoder
  run               run_classifier (bert-run-classifier)
  run_hub           run_classifier_with_tfhub (bert-run-classifier-with-tfhub)
  serving           ClassifierServingModule: the classifier's SavedModel
"""
