"""Sentence embeddings (bert-run-embeddings): pooled sentence vectors, cosine.

  data              the (anchor, positive) pairs and their records
  model             SentenceEmbedder, the in-batch-negatives loss, EmbeddingsTask
  run               run_embeddings (bert-run-embeddings)
  serving           EmbeddingsServingModule: the embedder's SavedModel
"""
