"""conlleval's entity-level scores (`bert_tf.tasks.token_classification.data_conlleval`) against seqeval's, the reference scorer.

seqeval's default mode follows conlleval; both are held to the same counts
on many random sentences of BIO and IOBES tags, malformed ones included (an
I- without its B-, an E- after O, types that change inside a chunk), and on
the predictions that bert-run-ner writes (tests/test_ner.py, with the run it
trains).
"""

import warnings

import numpy as np
import pytest

from bert_tf.tasks.token_classification import data_conlleval as conlleval
from tests.seqeval_reference import import_seqeval

seqeval_metrics, get_entities = import_seqeval()

TYPES = ("PER", "LOC", "ORG")


def _random_sentences(rng, prefixes, num_sentences):
    labels = ["O"] + ["%s-%s" % (p, t) for p in prefixes for t in TYPES]
    return [[labels[i] for i in rng.randint(len(labels), size=rng.randint(1, 12))]
            for _ in range(num_sentences)]


def seqeval_scores(gold, predicted):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # seqeval warns on 0 / 0
        return {"precision": seqeval_metrics.precision_score(gold, predicted),
                "recall": seqeval_metrics.recall_score(gold, predicted),
                "f1": seqeval_metrics.f1_score(gold, predicted),
                "accuracy": seqeval_metrics.accuracy_score(gold, predicted)}


@pytest.mark.parametrize("prefixes", [("B", "I"), ("B", "I", "E", "S")], ids=["BIO", "IOBES"])
def test_scores_equal_seqeval_on_random_tags(prefixes):
    rng = np.random.RandomState(len(prefixes))
    for _ in range(300):
        gold = _random_sentences(rng, prefixes, rng.randint(1, 6))
        # Predictions: the gold labels with some changed, so some chunks match.
        predicted = [[label if rng.rand() < 0.7 else rng.choice(sentence) for label in sentence]
                     for sentence in gold]
        for sentence in gold:
            assert conlleval.get_chunks(sentence) == [
                (t, s, e) for t, s, e in get_entities(sentence)], sentence
        ours = conlleval.evaluate(gold, predicted)
        theirs = seqeval_scores(gold, predicted)
        for key in ("precision", "recall", "f1", "accuracy"):
            assert ours[key] == pytest.approx(theirs[key], abs=1e-12), (key, gold, predicted)


def test_malformed_chunks_count_as_conlleval_counts_them():
    # An I- without its B- starts a chunk; a type change inside one starts another;
    # a sentence boundary ends a chunk.
    assert conlleval.get_chunks(["I-PER", "I-PER", "O", "B-LOC", "I-ORG"]) == [
        ("PER", 0, 1), ("LOC", 3, 3), ("ORG", 4, 4)]
    assert conlleval.get_chunks(["B-PER", "I-PER"]) == [("PER", 0, 1)]
    scores = conlleval.evaluate([["B-PER", "I-PER"], ["I-PER"]], [["B-PER", "I-PER"], ["O"]])
    assert scores["precision"] == 1.0 and scores["recall"] == 0.5
    assert scores["f1"] == pytest.approx(2 / 3)
    assert conlleval.evaluate([["O"]], [["O"]])["f1"] == 0.0  # no chunk: 0, not 0 / 0


def test_the_exports_graph_chunks_are_conllevals():
    # bert_tf.tasks.token_classification.serving's chunk rules in TF ops, on random BIO / IOBES label ids.
    import tensorflow as tf
    from bert_tf.tasks.token_classification import serving as ner
    rng = np.random.RandomState(7)
    labels = ["O"] + ["%s-%s" % (p, t) for p in "BIES" for t in TYPES]
    tags, types = zip(*(conlleval.split_label(label) for label in labels))
    type_names = sorted(set(types))
    tag_codes = np.array([ner._TAG_CODES[t] for t in tags])  # pylint: disable=protected-access
    type_ids = np.array([type_names.index(t) for t in types])
    for _ in range(50):
        ids = rng.randint(len(labels), size=rng.randint(1, 15))
        padded = np.concatenate([ids, [0]])  # a final "O" ends the last chunk
        tag, chunk_type = tag_codes[padded], type_ids[padded]
        prev_tag, prev_type = np.concatenate([[0], tag[:-1]]), np.concatenate([[0], chunk_type[:-1]])
        start, end = ner.chunk_flags(*(tf.constant(v) for v in (tag, chunk_type, prev_tag,
                                                                 prev_type)))
        starts, ends = np.flatnonzero(start.numpy()), np.flatnonzero(end.numpy()) - 1
        chunks = [(type_names[type_ids[ids[e]]], s, e) for s, e in zip(starts, ends)]
        assert chunks == conlleval.get_chunks([labels[i] for i in ids]), ids
