"""Entity-level precision, recall and F1 as CoNLL's `conlleval` script computes them (no TF).

A chunk (an entity) is a run of words with one type; where it starts and
ends follows conlleval's rules on each word's tag and type (a label
`B-PER` is tag `B`, type `PER`; a label without "-" is a tag of no type):

  * BIO / IOB1: a chunk starts at `B-`, and at `I-` after `O` or after a
    word of another type (an `I-` without its `B-` is a chunk, as
    conlleval counts it); it ends before `B-`, `O` or another type.
  * IOBES: `S-` is a chunk of one word, `E-` ends its chunk; an `E-` or
    `I-` after `E-`, `S-` or `O` starts one. These are the `S-`/`E-` rules
    of seqeval's conlleval port (its default mode); conlleval.pl itself
    knows no `S-`, and joins `E-X B-X` into one chunk.

A sentence boundary ends every chunk. A predicted chunk is correct when a
gold chunk has its type, start and end. precision = correct / predicted,
recall = correct / gold, f1 = 2 p r / (p + r), each 0 when its denominator
is 0 (conlleval prints them as percentages; here they are fractions, as
run_classifier's eval_accuracy). tests/test_ner_metrics.py holds them to
seqeval's on random tag sequences.
"""


def split_label(label):
    """(tag, type) of a label, as conlleval splits it: "B-PER" -> ("B", "PER"), "O" -> ("O", "")."""
    tag, _, chunk_type = label.partition("-")
    return tag, chunk_type


def _end_of_chunk(prev_tag, tag, prev_type, chunk_type):
    if prev_tag in ("E", "S"):
        return True
    if prev_tag in ("B", "I") and tag in ("B", "S", "O"):
        return True
    return prev_tag not in ("O", ".") and prev_type != chunk_type


def _start_of_chunk(prev_tag, tag, prev_type, chunk_type):
    if tag in ("B", "S"):
        return True
    if prev_tag in ("E", "S", "O") and tag in ("E", "I"):
        return True
    return tag not in ("O", ".") and prev_type != chunk_type


def get_chunks(labels):
    """[(type, first word, last word)] of one sentence's labels, in order."""
    chunks = []
    prev_tag, prev_type, start = "O", "", 0
    for i, label in enumerate(list(labels) + ["O"]):  # a final "O" ends the last chunk
        tag, chunk_type = split_label(label)
        if _end_of_chunk(prev_tag, tag, prev_type, chunk_type):
            chunks.append((prev_type, start, i - 1))
        if _start_of_chunk(prev_tag, tag, prev_type, chunk_type):
            start = i
        prev_tag, prev_type = tag, chunk_type
    return chunks


def _ratio(numerator, denominator):
    return numerator / denominator if denominator else 0.0


def evaluate(gold_sentences, predicted_sentences):
    """conlleval's overall scores of predicted labels against gold ones.

    Args:
      gold_sentences, predicted_sentences: lists of sentences, each a list
        of label strings (the same lengths, sentence by sentence).

    Returns:
      dict of float: precision, recall, f1 (entities) and accuracy (words
      whose predicted label is the gold one).
    """
    correct = predicted = gold = words = right = 0
    for gold_labels, predicted_labels in zip(gold_sentences, predicted_sentences):
        if len(gold_labels) != len(predicted_labels):
            raise ValueError("a sentence of %d gold labels has %d predicted ones"
                             % (len(gold_labels), len(predicted_labels)))
        gold_chunks = set(get_chunks(gold_labels))
        predicted_chunks = set(get_chunks(predicted_labels))
        correct += len(gold_chunks & predicted_chunks)
        predicted += len(predicted_chunks)
        gold += len(gold_chunks)
        words += len(gold_labels)
        right += sum(g == p for g, p in zip(gold_labels, predicted_labels))
    precision, recall = _ratio(correct, predicted), _ratio(correct, gold)
    return {"precision": precision, "recall": recall,
            "f1": _ratio(2 * precision * recall, precision + recall),
            "accuracy": _ratio(right, words)}
