"""A small real-English corpus that every CPython installation carries.

`pydoc_data.topics.topics` holds the text of the Python reference manual's
help topics (about 80 topics, 460 KB). `write_pydoc_corpus` turns it into the
input format of `create_pretraining_data`: one sentence per line and a blank
line between documents. It needs no download, so demos and tests can run
anywhere. `write_demo_config` writes the demo's `bert_config.json`, its
`vocab_size` the number of tokens of the vocab the demo learned.
"""

import json
import re

from bert_tf import fileio
from bert_tf.errors import UserError
from bert_tf.tokenization.vocab import load_vocab

# A sentence ends at ".", "!" or "?" (optionally followed by a closing quote or
# bracket) that is followed by white space and then an upper-case letter, a
# digit or an opening quote/bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]?\s+(?=[A-Z0-9\"'(\[*])")
# Heading underlines in the reST-like help text: "*****", "=====", "-----".
_RULE = re.compile(r"^\s*([*=\-~^+#])\1{2,}\s*$")


def _paragraphs(text):
    """Splits a help topic into paragraphs (lists of stripped lines)."""
    paragraph = []
    for line in text.splitlines():
        if not line.strip():
            if paragraph:
                yield paragraph
            paragraph = []
        elif not _RULE.match(line):
            paragraph.append(line.strip())
    if paragraph:
        yield paragraph


def split_sentences(paragraph_text):
    """Splits a paragraph into sentences with a simple punctuation rule.

    Args:
      paragraph_text: str, one paragraph with its lines joined by spaces.

    Returns:
      A list of non-empty sentences (str).
    """
    text = " ".join(paragraph_text.split())
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def pydoc_documents(document_unit="topic", max_docs=None):
    """Yields documents (lists of sentences) from `pydoc_data.topics`.

    Args:
      document_unit: "topic" (one document per help topic) or "paragraph" (one
        document per paragraph: many short documents).
      max_docs: int or None; stop after this many documents.

    Yields:
      Lists of sentences (str), each list non-empty. Topics are visited in
      sorted key order, so the output is the same on every run.
    """
    if document_unit not in ("topic", "paragraph"):
        raise UserError("document_unit must be 'topic' or 'paragraph', not %r"
                        % (document_unit,))
    from pydoc_data import topics  # pylint: disable=g-import-not-at-top

    count = 0
    for key in sorted(topics.topics):
        document = []
        for paragraph in _paragraphs(topics.topics[key]):
            sentences = split_sentences(" ".join(paragraph))
            if document_unit == "paragraph":
                if sentences:
                    yield sentences
                    count += 1
                    if max_docs is not None and count >= max_docs:
                        return
            else:
                document.extend(sentences)
        if document_unit == "topic" and document:
            yield document
            count += 1
            if max_docs is not None and count >= max_docs:
                return


def write_pydoc_corpus(path, max_docs=None, document_unit="topic", repeat=1):
    """Writes the pydoc corpus as one sentence per line, documents blank-separated.

    Args:
      path: str, the output text file (written atomically).
      max_docs: int or None; at most this many documents per repetition.
      document_unit: "topic" or "paragraph", see `pydoc_documents`.
      repeat: int >= 1; write the corpus this many times (for benchmarks that
        need a bigger corpus; repetition `r > 0` prefixes every sentence with
        "r " so the copies are not byte-identical documents).

    Returns:
      (num_documents, num_sentences) written.
    """
    if repeat < 1:
        raise UserError("repeat must be >= 1, not %d" % repeat)
    documents = list(pydoc_documents(document_unit, max_docs))
    num_documents = num_sentences = 0
    with fileio.atomic_write(path, "w") as f:
        for r in range(repeat):
            prefix = "" if r == 0 else "%d " % r
            for document in documents:
                if num_documents:
                    f.write("\n")
                for sentence in document:
                    f.write(prefix + sentence + "\n")
                num_documents += 1
                num_sentences += len(document)
    return num_documents, num_sentences


def write_demo_config(base_config_file, vocab_file, output_file):
    """Writes `base_config_file`'s architecture with `vocab_file`'s number of tokens.

    A learned vocab may hold fewer tokens than `build_vocab`'s `vocab_size`
    asked for; with the config's `vocab_size` its own, every id the model
    predicts is a token of the vocab. Returns that `vocab_size`. (Plain JSON:
    no TensorFlow loads.)
    """
    with open(base_config_file, encoding="utf-8") as f:
        values = json.load(f)
    values["vocab_size"] = len(load_vocab(vocab_file))
    fileio.write_text(output_file, json.dumps(values, indent=2, sort_keys=True) + "\n")
    return values["vocab_size"]


# Split sizes of the demo sentence-pair task (examples per file).
PAIR_TASK_SIZES = (("train.tsv", 2400), ("dev.tsv", 400), ("test.tsv", 400))


def _perturb(sentence, rng, drop=0.25):
    """A near copy of `sentence`: about `drop` of its words deleted, two neighbours swapped."""
    words = sentence.split()
    kept = [w for w in words if rng.random() >= drop] or words[:1]
    if len(kept) > 2:
        i = rng.randrange(len(kept) - 1)
        kept[i], kept[i + 1] = kept[i + 1], kept[i]
    return " ".join(kept)


def write_sentence_pair_task(data_dir, sizes=PAIR_TASK_SIZES, seed=12345, max_words=40):
    """Writes a small real-text paraphrase task in MRPC's TSV layout.

    "Is sentence 2 a rewording of sentence 1?": label 1 when sentence 2 is
    sentence 1 with about a quarter of its words deleted and two neighbouring
    words swapped, 0 when it is another sentence of the same help topic of
    the pydoc corpus (similar words, other meaning), half and half. The files
    have MRPC's columns (`Quality`, `#1 ID`, `#2 ID`, `#1 String`,
    `#2 String`), so `run_classifier.py --task_name=MRPC --data_dir=<data_dir>`
    reads them unchanged. Topics are split between the files (no topic is in
    two), so dev and test measure what a model learned, not what it memorized.

    Args:
      data_dir: the directory for train.tsv, dev.tsv and test.tsv.
      sizes: ((file name, number of examples), ...).
      seed: int; the same seed writes the same files.
      max_words: sentences longer than this many words are left out.

    Returns:
      {file name: number of examples}.
    """
    import random  # pylint: disable=g-import-not-at-top
    rng = random.Random(seed)
    topics = []
    for document in pydoc_documents("topic"):
        sentences = [s for s in document if 4 <= len(s.split()) <= max_words]
        if len(sentences) >= 4:
            topics.append(sentences)
    rng.shuffle(topics)
    total = sum(n for _, n in sizes)
    counts = {}
    start = 0
    for index, (name, size) in enumerate(sizes):
        # Each file gets a share of the topics in proportion to its size.
        end = len(topics) if index == len(sizes) - 1 else (
            start + max(2, int(round(len(topics) * size / float(total)))))
        own, start = topics[start:end], end
        rows = ["Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"]
        for i in range(size):
            sentences = own[rng.randrange(len(own))]
            j = rng.randrange(len(sentences))
            first = sentences[j]
            if i % 2 == 0:
                label, second = 1, _perturb(first, rng)
            else:
                k = rng.randrange(len(sentences) - 1)
                label, second = 0, _perturb(sentences[k + (k >= j)], rng)
            rows.append("%d\t%d\t%d\t%s\t%s\n" % (label, 2 * i, 2 * i + 1, first, second))
        fileio.write_text("%s/%s" % (data_dir, name), "".join(rows))
        counts[name] = size
    return counts
