"""A small real-English corpus that every CPython installation carries.

`pydoc_data.topics.topics` holds the text of the Python reference manual's
help topics (about 80 topics, 460 KB). `write_pydoc_corpus` turns it into the
input format of `create_pretraining_data`: one sentence per line and a blank
line between documents. It needs no download, so demos and tests can run
anywhere.
"""

import re

from bert_tf import fileio
from bert_tf.errors import UserError

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
