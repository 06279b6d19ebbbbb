"""Sharded mode with fewer shards than workers: the workers share a shard (rng_plan)."""

import os
import random
import re

import pytest

from bert_tf import tokenization
from bert_tf.data import text_files
from bert_tf.tasks.pretraining import data as pd
from bert_tf.tasks.pretraining.data import rng_plan
from bert_tf.data import tfrecord
from tests.data import pretraining_testlib as lib

# (max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob, seed, dupe_factor)
PLAN_CONFIGS = {
    "default": (128, 20, 0.15, 0.1, 12345, 2),
    "seq32_short": (32, 5, 0.2, 0.9, 7, 3),
    "seq5": (5, 1, 0.15, 0.1, 3, 2),
    "mask_all": (48, 60, 1.0, 0.1, 11, 2),
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("shard_split"))
    paths = lib.write_corpus(d)
    files = pd.expand_input_patterns(paths["all"].split(","))
    paths["files"] = files
    paths["vocab"] = lib.write_vocab(files, os.path.join(d, "vocab.txt"))
    # The same vocab padded to BERT's 30522 entries: a random replacement's
    # threshold that is not a multiple of 2**16.
    with open(paths["vocab"]) as f:
        tokens = f.read().split()
    paths["vocab_30522"] = os.path.join(d, "vocab_30522.txt")
    with open(paths["vocab_30522"], "w") as f:
        f.write("\n".join(tokens + ["[unused%d]" % i for i in range(30522 - len(tokens))]) + "\n")
    paths["dir"] = d
    return paths


def _raw_documents(corpus):
    return list(text_files.iter_raw_documents(corpus["files"]))


def _check_plan(corpus, vocab_file, config):
    max_seq, max_pred, mlp, ssp, seed, dupe = config
    tokenizer = tokenization.FullTokenizer(vocab_file)
    vocab_info = pd.tokens.VocabInfo(tokenizer, vocab_file)
    documents = pd.tokens.tokenize_documents(
        _raw_documents(corpus), pd.tokens.CachedTokenizer(tokenizer))
    rng = random.Random(seed)
    generator = pd.instances.InstanceGenerator(rng, vocab_info, None, max_seq, max_pred, mlp, ssp)
    generator.shuffle_documents(documents)
    copy = random.Random()
    copy.setstate(rng.getstate())
    planner = rng_plan.RngPlanner(copy, documents, max_seq, max_pred, mlp, ssp,
                                  len(vocab_info.vocab_ids))
    instances = []
    for unit in range(dupe * len(documents)):
        generator.instances_from_document(documents, unit % len(documents), instances.append)
        planner.plan_document(unit % len(documents))
        assert planner.instances == len(instances), unit
        assert planner.state_at(planner.position) == rng.getstate(), unit
    assert len(instances) > 50


@pytest.mark.parametrize("name", sorted(PLAN_CONFIGS))
def test_planner_follows_the_generator_unit_by_unit(corpus, name):
    _check_plan(corpus, corpus["vocab"], PLAN_CONFIGS[name])


def test_planner_with_a_30522_token_vocab(corpus):
    _check_plan(corpus, corpus["vocab_30522"], PLAN_CONFIGS["default"])


def test_planner_word_by_word_path(corpus, monkeypatch):
    """Where no pattern matches (an undecided code), the word-by-word count is the same."""
    never = re.compile("(?!)")
    monkeypatch.setattr(rng_plan.RngPlanner, "_compile_shuffle", lambda self, a, b: never)
    monkeypatch.setattr(rng_plan.RngPlanner, "_compile_tokens", lambda self, count: never)
    _check_plan(corpus, corpus["vocab"], PLAN_CONFIGS["seq32_short"])


def test_random_bounds_are_exact():
    """Words below the accept end give random() < p whatever the second word; above, never."""
    for p in (0.8, 0.5, 0.1, 0.15):
        accept_end, reject_start = rng_plan._random_bounds(p)  # pylint: disable=protected-access
        assert accept_end <= reject_start <= accept_end + 64

        def value(w1, w2):
            return ((w1 >> 5) * 67108864.0 + (w2 >> 6)) * (1.0 / 9007199254740992.0)

        for w2 in (0, 2 ** 32 - 1):
            assert value(accept_end - 1, w2) < p
            assert not value(reject_start, w2) < p


@pytest.mark.parametrize("num_workers", [2, 3])
def test_split_shard_equals_generate_shard(corpus, num_workers):
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    vocab_info = pd.tokens.VocabInfo(tokenizer)
    options = dict(max_seq_length=64, max_predictions_per_seq=10, random_seed=5, dupe_factor=3,
                   masked_lm_prob=0.15, short_seq_prob=0.1, do_whole_word_mask=False)
    raw = _raw_documents(corpus)
    num_documents, records = pd.workers.generate_shard(4, raw,
                                                       pd.tokens.CachedTokenizer(tokenizer),
                                                       vocab_info, options)
    split_documents, framed, lengths = pd.workers.generate_shard_split(
        4, raw, pd.tokens.CachedTokenizer(tokenizer), vocab_info, options, num_workers)
    assert split_documents == num_documents
    assert list(lengths) == [len(r) + 16 for r in records]
    assert framed == tfrecord.frame_records(records)


def test_fewer_shards_than_workers_gives_the_same_files(corpus):
    """--num_workers only changes who does the work, also when workers share shards."""
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    out = os.path.join(corpus["dir"], "few_shards")
    os.makedirs(out, exist_ok=True)
    results = {}
    for workers in (1, 3):
        files = [os.path.join(out, "w%d_%d.tfrecord" % (workers, i)) for i in range(3)]
        stats = pd.create_pretraining_data(corpus["files"], files, tokenizer, dupe_factor=2,
                                           max_seq_length=64, max_predictions_per_seq=10,
                                           num_workers=workers, documents_per_shard=150)
        assert stats["shards"] == 2
        results[workers] = [lib.read_records(f) for f in files]
    assert results[1] == results[3]
    assert sum(len(r) for r in results[1]) > 100


@pytest.mark.parametrize("documents_per_shard", [40, 10 ** 6])
def test_workers_hand_over_through_files_that_are_removed(corpus, tmp_path,
                                                          documents_per_shard):
    # Two workers (several shards, and one shard they share) hand their records
    # to the writing process through files beside the output: the records are
    # those of one worker, and nothing is left beside the output.
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    records = {}
    for workers in (1, 2):
        out = tmp_path / ("w%d" % workers)
        out.mkdir()
        stats = pd.create_pretraining_data(
            corpus["files"], [str(out / "data.tfrecord")], tokenizer, dupe_factor=2,
            max_seq_length=64, max_predictions_per_seq=10, num_workers=workers,
            documents_per_shard=documents_per_shard)
        assert sorted(os.listdir(out)) == ["data.tfrecord"]
        records[workers] = lib.read_records(str(out / "data.tfrecord"))
    assert (stats["shards"] == 1) == (documents_per_shard > 1000)
    assert records[1] == records[2] and len(records[1]) > 100


def test_a_failing_worker_leaves_nothing_beside_the_output(corpus, tmp_path, monkeypatch):
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    real = pd.workers.generate_shard

    def fails_on_shard_2(shard_index, *args):
        if shard_index == 2:
            raise RuntimeError("shard 2 failed")
        return real(shard_index, *args)

    monkeypatch.setattr(pd.workers, "generate_shard", fails_on_shard_2)  # the forked workers see it
    with pytest.raises(RuntimeError, match="shard 2 failed"):
        pd.create_pretraining_data(corpus["files"], [str(tmp_path / "data.tfrecord")],
                                   tokenizer, dupe_factor=2, max_seq_length=64,
                                   max_predictions_per_seq=10, num_workers=2,
                                   documents_per_shard=20)
    assert os.listdir(tmp_path) == []
