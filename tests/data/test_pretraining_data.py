"""bert_tf.tasks.pretraining.data against the original create_pretraining_data.py.

The original (pip bert-tensorflow 1.0.4, and a re-statement of GitHub HEAD's
whole-word masking) runs in one oracle process for all configurations; our
records must equal its records (deterministically re-serialized, see
`canonical_records`) one for one, in order, in every output file.
"""

import os
import random

import numpy as np
import pytest
import tensorflow as tf
from absl import logging

from bert_tf import tokenization
from bert_tf.data import text_files
from bert_tf.tasks.pretraining import data as pd
from bert_tf.errors import UserError
from tests.data import pretraining_testlib as lib

# (name, flags) compared with the original; "wwm" names run the HEAD re-statement.
CONFIGS = [
    # Defaults (128/20), several inputs incl. a glob, three outputs (round-robin).
    ("default_3_outputs", dict(input="all", outputs=3, dupe_factor=2)),
    # Short sequences everywhere: heavy truncation and short targets.
    ("seq32_short", dict(input="all", outputs=1, max_seq_length=32, max_predictions_per_seq=5,
                         short_seq_prob=0.9, dupe_factor=3, random_seed=7, masked_lm_prob=0.2)),
    # Cased tokenization of a lower-case vocab: many [UNK]s.
    ("seq64_cased", dict(input="all", outputs=2, max_seq_length=64, max_predictions_per_seq=10,
                         do_lower_case=False, random_seed=1, dupe_factor=2)),
    # The smallest sequence that holds an instance; one prediction each.
    ("seq5", dict(input="a", outputs=1, max_seq_length=5, max_predictions_per_seq=1,
                  dupe_factor=1, random_seed=3)),
    # Everything masked (num_to_predict capped by the sequence, not by P).
    ("mask_all", dict(input="topics", outputs=1, max_seq_length=48, max_predictions_per_seq=60,
                      masked_lm_prob=1.0, dupe_factor=2, random_seed=11)),
    # Whole-word masking (GitHub HEAD), two settings.
    ("wwm_default", dict(input="all", outputs=2, dupe_factor=2, do_whole_word_mask=True)),
    ("wwm_seq32", dict(input="all", outputs=1, max_seq_length=32, max_predictions_per_seq=4,
                       do_whole_word_mask=True, short_seq_prob=0.5, random_seed=5,
                       dupe_factor=2)),
]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("pretraining_data"))


@pytest.fixture(scope="module")
def corpus(workdir):
    paths = lib.write_corpus(workdir)
    files = pd.expand_input_patterns(paths["all"].split(","))
    paths["vocab"] = lib.write_vocab(files, os.path.join(workdir, "vocab.txt"))
    return paths


def _flags(corpus, workdir, name, cfg, who):
    out_dir = os.path.join(workdir, name, who)
    os.makedirs(out_dir, exist_ok=True)
    outputs = [os.path.join(out_dir, "out%d.tfrecord" % i) for i in range(cfg["outputs"])]
    flags = {"input_file": corpus[cfg["input"]], "output_file": ",".join(outputs),
             "vocab_file": corpus["vocab"]}
    for key in ("max_seq_length", "max_predictions_per_seq", "random_seed", "dupe_factor",
                "masked_lm_prob", "short_seq_prob", "do_lower_case", "do_whole_word_mask"):
        if key in cfg:
            flags[key] = cfg[key]
    return flags, outputs


def _flag_list(flags):
    return ["--%s=%s" % (k, v) for k, v in flags.items()]


def _run_ours(flags, **kwargs):
    tokenizer = tokenization.FullTokenizer(flags["vocab_file"], flags.get("do_lower_case", True))
    options = {k: flags[k] for k in ("max_seq_length", "max_predictions_per_seq", "random_seed",
                                     "dupe_factor", "masked_lm_prob", "short_seq_prob",
                                     "do_whole_word_mask") if k in flags}
    options.update(kwargs)
    return pd.create_pretraining_data(
        pd.expand_input_patterns(flags["input_file"].split(",")),
        flags["output_file"].split(","), tokenizer, vocab_file=flags["vocab_file"], **options)


@pytest.fixture(scope="module")
def original_results(corpus, workdir):
    """Runs every CONFIGS entry through the original, once for the module."""
    runs = []
    for name, cfg in CONFIGS:
        flags, outputs = _flags(corpus, workdir, name, cfg, "original")
        mode = "pip"
        if "wwm" in name:
            mode = "wwm_head"
        runs.append((mode, _flag_list(flags)))
    # The HEAD re-statement with WWM off must equal pip (checks the re-statement).
    flags, _ = _flags(corpus, workdir, "head_wwm_off", dict(input="all", outputs=1,
                                                            dupe_factor=1), "original")
    runs.append(("wwm_head", _flag_list(flags)))
    flags, _ = _flags(corpus, workdir, "pip_wwm_off", dict(input="all", outputs=1,
                                                           dupe_factor=1), "original")
    runs.append(("pip", _flag_list(flags)))
    results = lib.run_original(workdir, runs)
    return dict(zip([n for n, _ in CONFIGS] + ["head_wwm_off", "pip_wwm_off"], results))


@pytest.mark.original
@pytest.mark.parametrize("name,cfg", CONFIGS, ids=[n for n, _ in CONFIGS])
def test_records_equal_original(name, cfg, corpus, workdir, original_results):
    original_flags, original_outputs = _flags(corpus, workdir, name, cfg, "original")
    flags, outputs = _flags(corpus, workdir, name, cfg, "ours")
    # The examples' dumps are DEBUG lines (the original's INFO: the tools' --verbosity=1).
    with lib.absl_log_lines(logging.DEBUG) as log_lines:
        stats = _run_ours(flags)
    original_log, original_stats = original_results[name]
    assert stats["instances"] == original_stats["instances"] > 0
    for ours_file, original_file in zip(outputs, original_outputs):
        ours = lib.read_records(ours_file)
        theirs = lib.canonical_records(original_file)
        assert len(ours) == len(theirs)
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, "record %d of %s differs:\nours %s\noriginal %s" % (
                i, ours_file, lib.decode(a), lib.decode(b))
        # Byte for byte: the original's file with its records re-serialized
        # deterministically is our file.
        canonical_file = original_file + ".canonical"
        with tf.io.TFRecordWriter(canonical_file) as w:
            for record in theirs:
                w.write(record)
        with open(ours_file, "rb") as f1, open(canonical_file, "rb") as f2:
            assert f1.read() == f2.read()
    # The first 20 examples are logged exactly as the original logs them.
    assert lib.example_log_lines(log_lines) == lib.example_log_lines(original_log)
    assert len(lib.example_log_lines(original_log)) == 1 + 9 * min(20, stats["instances"])


@pytest.mark.original
def test_head_restatement_without_wwm_equals_pip(original_results, workdir):
    """The oracle's HEAD re-statement with WWM off gives pip's output (spec §4.5)."""
    head = lib.read_records(os.path.join(workdir, "head_wwm_off", "original", "out0.tfrecord"))
    pip = lib.read_records(os.path.join(workdir, "pip_wwm_off", "original", "out0.tfrecord"))
    canon = lambda rs: [tf.train.Example.FromString(r).SerializeToString(deterministic=True)
                        for r in rs]
    assert len(head) > 100 and canon(head) == canon(pip)


@pytest.mark.original
def test_non_utf8_bytes_are_dropped(corpus, workdir):
    """Port note: invalid UTF-8 is dropped; the original stops with UnicodeDecodeError.

    Our output on a file with invalid bytes equals the original's output on
    the same file without them.
    """
    with open(corpus["a"], "rb") as f:
        clean = f.read()
    lines = clean.split(b"\n")
    dirty_lines = list(lines)
    for i in range(0, len(lines), 7):
        if lines[i]:
            dirty_lines[i] = lines[i][:3] + b"\xff" + lines[i][3:] + b"\xc3"
    dirty_path = os.path.join(workdir, "dirty.txt")
    with open(dirty_path, "wb") as f:
        f.write(b"\n".join(dirty_lines))
    out_dir = os.path.join(workdir, "utf8")
    os.makedirs(out_dir, exist_ok=True)
    common = ["--vocab_file=" + corpus["vocab"], "--dupe_factor=1", "--max_seq_length=64",
              "--max_predictions_per_seq=10"]
    lib.run_original(out_dir, [("pip", common + ["--input_file=" + corpus["a"],
                                                  "--output_file=" + out_dir + "/orig.tfrecord"])])
    with pytest.raises(AssertionError, match="UnicodeDecodeError"):
        lib.run_original(out_dir, [("pip", common + ["--input_file=" + dirty_path,
                                                      "--output_file=" + out_dir + "/x.tfrecord"])])
    flags = {"input_file": dirty_path, "output_file": out_dir + "/ours.tfrecord",
             "vocab_file": corpus["vocab"], "dupe_factor": 1, "max_seq_length": 64,
             "max_predictions_per_seq": 10}
    _run_ours(flags)
    ours = lib.read_records(out_dir + "/ours.tfrecord")
    assert ours and ours == lib.canonical_records(out_dir + "/orig.tfrecord")


# ---------------------------------------------------------------------------
# Pieces, checked in-process.
# ---------------------------------------------------------------------------


def test_serializer_equals_protobuf_deterministic():
    rng = random.Random(0)
    for max_seq_length, max_pred, max_id in ((5, 1, 30), (32, 5, 200), (128, 20, 30521),
                                             (64, 80, 3 * 10 ** 6)):
        serializer = pd.records.ExampleSerializer(max_seq_length, max_pred, max_id)
        for _ in range(40):
            len_a = rng.randint(1, max_seq_length - 4)
            len_b = rng.randint(1, max_seq_length - 3 - len_a)
            n = len_a + len_b + 3
            ids = [rng.randint(0, max_id) for _ in range(n)]
            k = rng.randint(0, min(max_pred, n))
            positions = sorted(rng.sample(range(n), k))
            masked_ids = [rng.randint(0, max_id) for _ in range(k)]
            is_random_next = rng.random() < 0.5
            features = {
                "input_ids": ids + [0] * (max_seq_length - n),
                "input_mask": [1] * n + [0] * (max_seq_length - n),
                "segment_ids": [0] * (len_a + 2) + [1] * (len_b + 1) + [0] * (max_seq_length - n),
                "masked_lm_positions": positions + [0] * (max_pred - k),
                "masked_lm_ids": masked_ids + [0] * (max_pred - k),
                "next_sentence_labels": [1 if is_random_next else 0],
            }
            feature = {name: tf.train.Feature(int64_list=tf.train.Int64List(value=v))
                       for name, v in features.items()}
            feature["masked_lm_weights"] = tf.train.Feature(
                float_list=tf.train.FloatList(value=[1.0] * k + [0.0] * (max_pred - k)))
            expected = tf.train.Example(features=tf.train.Features(feature=feature)
                                        ).SerializeToString(deterministic=True)
            got = serializer.serialize(ids, len_a, len_b, positions, masked_ids, is_random_next)
            assert got == expected


def test_inline_rng_reproduces_random():
    assert pd.instances._check_inline_rng()
    gen = pd.instances.InstanceGenerator(random.Random(42), _TinyVocab(), None, 64, 10, 0.15, 0.1)
    ref = random.Random(42)
    for n in list(range(0, 70)) + [1000]:
        x, y = list(range(n)), list(range(n))
        gen.shuffle(x)
        ref.shuffle(y)
        assert x == y
        assert gen._randint(0, n) == ref.randint(0, n)
        assert gen._randint(3, 3 + n) == ref.randint(3, 3 + n)
    assert gen.rng.random() == ref.random()


# Configurations that draw through every RNG helper: document and candidate
# shuffles, randint for short targets, the A/B split and random documents, and
# the random-word replacement (per piece and whole-word; "mask_all" masks every
# token, so it draws many replacement words).
FALLBACK_CONFIGS = ["seq32_short", "mask_all", "wwm_seq32"]


def _force_stock_rng(monkeypatch):
    """As on a Python whose random.Random the inlined helpers do not reproduce."""
    monkeypatch.setattr(pd.instances, "_INLINE_RNG_OK", None)
    monkeypatch.setattr(pd.instances, "_check_inline_rng", lambda: False)


def _run_with_stock_rng(flags, monkeypatch):
    try:
        with lib.absl_log_lines() as log_lines:
            _force_stock_rng(monkeypatch)
            stats = _run_ours(flags)
    finally:
        monkeypatch.undo()
    assert any("using the slower stock methods" in line for line in log_lines), log_lines
    return stats


@pytest.mark.parametrize("name", FALLBACK_CONFIGS)
def test_stock_random_fallback_equals_the_inlined_path(name, corpus, workdir, monkeypatch):
    """The fallback (stock `rng.randint` / `rng.shuffle`) writes the inlined path's records."""
    if not pd.instances.inline_rng_ok():
        pytest.skip("the inlined helpers do not reproduce this Python's random.Random")
    cfg = dict(CONFIGS)[name]
    inline_flags, inline_outputs = _flags(corpus, workdir, name, cfg, "ours_inline_rng")
    _run_ours(inline_flags)
    flags, outputs = _flags(corpus, workdir, name, cfg, "ours_stock_rng")
    stats = _run_with_stock_rng(flags, monkeypatch)
    assert stats["instances"] > 100
    for stock_file, inline_file in zip(outputs, inline_outputs):
        stock, inline = lib.read_records(stock_file), lib.read_records(inline_file)
        assert len(stock) == len(inline), (
            "%s: the stock-random fallback wrote %d records, the inlined path %d"
            % (stock_file, len(stock), len(inline)))
        for i, (a, b) in enumerate(zip(stock, inline)):
            assert a == b, ("record %d differs between the stock-random fallback and the "
                            "inlined path:\nfallback %s\ninlined %s"
                            % (i, lib.decode(a), lib.decode(b)))


@pytest.mark.original
@pytest.mark.parametrize("name", FALLBACK_CONFIGS)
def test_stock_random_fallback_equals_original(name, corpus, workdir, original_results,
                                               monkeypatch):
    cfg = dict(CONFIGS)[name]
    flags, outputs = _flags(corpus, workdir, name, cfg, "ours_stock_rng_vs_original")
    _run_with_stock_rng(flags, monkeypatch)
    _, original_outputs = _flags(corpus, workdir, name, cfg, "original")
    for ours_file, original_file in zip(outputs, original_outputs):
        ours, theirs = lib.read_records(ours_file), lib.canonical_records(original_file)
        assert len(ours) == len(theirs), (
            "%s: the stock-random fallback wrote %d records, the original %d"
            % (ours_file, len(ours), len(theirs)))
        for i, (a, b) in enumerate(zip(ours, theirs)):
            assert a == b, ("record %d of the stock-random fallback differs from the "
                            "original's:\nfallback %s\noriginal %s"
                            % (i, lib.decode(a), lib.decode(b)))


class _TinyVocab(object):
    """A VocabInfo stand-in: ids 0..9, [CLS]=1, [SEP]=2, [MASK]=3, "##" pieces 7-9."""
    vocab_ids = list(range(10))
    cls_id, sep_id, mask_id = 1, 2, 3
    is_subword = bytearray([0, 0, 0, 0, 0, 0, 0, 1, 1, 1])
    max_id = 9


def test_cached_tokenizer_equals_tokenizer(corpus):
    tokenizer = tokenization.FullTokenizer(corpus["vocab"], do_lower_case=True)
    cased = tokenization.FullTokenizer(corpus["vocab"], do_lower_case=False)
    lines = []
    for name in ("a", "topics", "edge"):
        lines.extend(text_files.iter_lines(corpus[name]))
    lines += ["  leading and trailing  ", "tab\tseparated\x1cfile\x1dsep", "ΣΑΣ ΟΔΟΣ σ",
              "x\u3000y\u2003z", "\u535a\u63a8zz", "a" * 250 + " b", "", " ", "İstanbul ǅ ß",
              "e\u0301t\u00e9 \u00e9t\u00e9", "don't e-mail 3.14 $5", "x\x00y\ufffdz"]
    for tok in (tokenizer, cased):
        cached = pd.tokens.CachedTokenizer(tok, max_entries=50)  # small: exercises eviction
        for line in lines:
            line = line.strip()
            assert cached.line_to_ids(line) == tok.convert_tokens_to_ids(tok.tokenize(line)), line


def test_iter_lines_matches_tf_gfile(tmp_path):
    """Line splitting as the original's tf.gfile.GFile(..., "r").readline()."""
    cases = [b"a\nb\r\nc\rd\n\r\n\n  \nlast", b"x\n\r", b"", b"\r\r\n\r", b"only\n",
             "\u00e9\u535a\n\u2028\n".encode("utf-8")]
    for i, data in enumerate(cases):
        path = str(tmp_path / ("f%d.txt" % i))
        with open(path, "wb") as f:
            f.write(data)
        expected = []
        with tf.io.gfile.GFile(path, "r") as reader:
            while True:
                line = reader.readline()
                if not line:
                    break
                expected.append(line)
        assert list(text_files.iter_lines(path)) == expected, data


def test_whole_word_masking_masks_whole_words(corpus, workdir):
    """Hand-checked invariants of WWM (G:346-406) on our raw instances."""
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    info = pd.tokens.VocabInfo(tokenizer)
    documents = pd.tokens.read_documents(pd.expand_input_patterns(corpus["all"].split(",")),
                                         pd.tokens.CachedTokenizer(tokenizer))
    instances = []
    gen = pd.instances.InstanceGenerator(random.Random(3), info, None, 64, 8, 0.15, 0.1,
                                         do_whole_word_mask=True)
    pd.instances.generate(gen, documents, 1, instances.append)
    groups_masked = 0
    for tokens, len_a, len_b, positions, labels, _ in instances:
        original = list(tokens)
        for p, label in zip(positions, labels):
            original[p] = label
        n = len_a + len_b + 3
        num_to_predict = min(8, max(1, int(round(n * 0.15))))
        assert len(positions) <= num_to_predict
        # Words: a "##" piece continues the previous non-special token's word.
        words = []
        for i in range(1, n - 1):
            if i == len_a + 1:
                continue
            if words and info.is_subword[original[i]]:
                words[-1].append(i)
            else:
                words.append([i])
        masked = set(positions)
        for word in words:
            inside = [i in masked for i in word]
            assert all(inside) or not any(inside), (word, positions)
            if all(inside) and len(word) > 1:
                groups_masked += 1
        # Unmasked positions are untouched, [CLS]/[SEP] never masked.
        assert 0 not in masked and len_a + 1 not in masked and n - 1 not in masked
    assert groups_masked > 20  # multi-piece words were masked as a whole


def test_without_wwm_generator_equals_wwm_code_on_single_pieces(corpus):
    """With WWM off, the per-piece path equals the WWM path when no token is "##"."""
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    info = pd.tokens.VocabInfo(tokenizer)
    no_pieces = pd.tokens.VocabInfo(tokenizer)
    no_pieces.is_subword = bytearray(len(info.is_subword))
    documents = pd.tokens.read_documents([corpus["a"]], pd.tokens.CachedTokenizer(tokenizer))
    outs = []
    for vocab_info, wwm in ((info, False), (no_pieces, True)):
        out = []
        gen = pd.instances.InstanceGenerator(random.Random(9), vocab_info, None, 48, 6, 0.15,
                                             0.3, do_whole_word_mask=wwm)
        pd.instances.generate(gen, [list(d) for d in documents], 1, out.append)
        outs.append(out)
    assert outs[0] == outs[1] and len(outs[0]) > 50


def test_sharded_mode_is_independent_of_num_workers(corpus, workdir):
    out = os.path.join(workdir, "sharded")
    os.makedirs(out, exist_ok=True)
    records = {}
    for workers in (1, 2):
        files = [os.path.join(out, "w%d_%d.tfrecord" % (workers, i)) for i in range(2)]
        flags = {"input_file": corpus["all"], "output_file": ",".join(files),
                 "vocab_file": corpus["vocab"], "dupe_factor": 2, "max_seq_length": 64,
                 "max_predictions_per_seq": 10}
        stats = _run_ours(flags, num_workers=workers, documents_per_shard=40)
        assert stats["mode"] == "sharded" and stats["shards"] > 3
        records[workers] = [lib.read_records(f) for f in files]
    assert records[1] == records[2]


def test_num_workers_alone_shards_a_small_corpus_by_its_size(corpus, workdir):
    """--num_workers=N without --documents_per_shard: D from the corpus, never from N."""
    out = os.path.join(workdir, "default_shards")
    os.makedirs(out, exist_ok=True)
    files = pd.expand_input_patterns(corpus["all"].split(","))
    documents = sum(1 for _ in text_files.iter_raw_documents(files))
    default = pd.default_documents_per_shard(files)
    assert 4 * 64 > documents > 64 and default == 64  # a small corpus: shards of 64
    records = {}
    for workers, shard in ((2, 0), (3, 0), (1, default)):
        flags = {"input_file": corpus["all"], "output_file": "%s/w%d.tfrecord" % (out, workers),
                 "vocab_file": corpus["vocab"], "dupe_factor": 2, "max_seq_length": 64,
                 "max_predictions_per_seq": 10}
        stats = _run_ours(flags, num_workers=workers, documents_per_shard=shard)
        assert stats["mode"] == "sharded"
        assert stats["shards"] == -(-documents // 64)
        records[workers] = lib.read_records(flags["output_file"])
    assert records[2] == records[3] == records[1] and len(records[2]) > 100


def test_count_documents_sees_the_documents_sharded_mode_reads(tmp_path, monkeypatch):
    """The count behind the default shard size: iter_raw_documents' boundaries exactly.

    Blank means blank once decoded (undecodable bytes dropped) and stripped:
    Unicode spaces, \\x1c-\\x1f and a last line of "\\r"s included; files are
    one stream; lines cross read blocks.
    """
    pieces = [b"a", b"x y", b" ", b"\t", b"\r", b"\n", b"\n\n", b"\x0b", b"\x1c", b"\x00",
              b"\xc2\xa0", b"\xe3\x80\x80", b"\xe2\x80\xa8", b"\xc2\x85", b"\x85", b"\xff",
              b"\xc3\xa9"]
    rnd = random.Random(0)
    checked = 0
    for trial in range(400):
        files = []
        for k in range(rnd.randint(1, 3)):
            path = tmp_path / ("t%d_%d.txt" % (trial, k))
            path.write_bytes(b"".join(rnd.choice(pieces) for _ in range(rnd.randint(1, 40))))
            files.append(str(path))
        monkeypatch.setattr(text_files, "_READ_BLOCK_BYTES", rnd.choice([1, 2, 5, 1 << 16]))
        try:
            expected = sum(1 for _ in text_files.iter_raw_documents(files))
        except UserError:  # a file of blank lines only: the reading pass says so
            continue
        assert text_files.count_documents(files) == expected, [open(f, "rb").read() for f in files]
        limit = rnd.randint(1, 4)
        assert text_files.count_documents(files, limit) == min(limit, expected)
        checked += expected > 1
    assert checked > 100


def test_default_shard_size_is_a_16th_of_a_small_corpus(tmp_path, monkeypatch):
    def corpus(num_documents):
        path = tmp_path / ("c%d.txt" % num_documents)
        path.write_text("".join("line %d.\nmore.\n\n" % i for i in range(num_documents)))
        return [str(path)]
    assert pd.default_documents_per_shard(corpus(10)) == 64
    assert pd.default_documents_per_shard(corpus(1030)) == 65   # ceil(1030 / 16)
    assert pd.default_documents_per_shard(corpus(3000)) == 188
    # At 16 shards of DEFAULT_DOCUMENTS_PER_SHARD the count stops: that size.
    monkeypatch.setattr(text_files, "DEFAULT_DOCUMENTS_PER_SHARD", 100)
    assert pd.default_documents_per_shard(corpus(1500)) == 94
    assert pd.default_documents_per_shard(corpus(3000)) == 100
    assert pd.default_documents_per_shard(corpus(3000) + ["/no/such/file"]) == 100


def test_one_shard_is_the_exact_algorithm_with_the_shard_seed(corpus, workdir):
    """A shard runs the original algorithm with seed shard_seed(random_seed, k)."""
    out = os.path.join(workdir, "one_shard")
    os.makedirs(out, exist_ok=True)
    base = {"input_file": corpus["all"], "vocab_file": corpus["vocab"], "dupe_factor": 2,
            "max_seq_length": 64, "max_predictions_per_seq": 10, "random_seed": 17}
    sharded = dict(base, output_file=out + "/sharded.tfrecord")
    stats = _run_ours(sharded, documents_per_shard=10 ** 6)
    assert stats["shards"] == 1
    exact = dict(base, output_file=out + "/exact.tfrecord",
                 random_seed=pd.instances.shard_seed(17, 0))
    _run_ours(exact)
    assert lib.read_records(out + "/sharded.tfrecord") == lib.read_records(out + "/exact.tfrecord")
    # ... and differs from exact mode with the plain seed (documented difference).
    plain = dict(base, output_file=out + "/plain.tfrecord")
    _run_ours(plain)
    assert lib.read_records(out + "/plain.tfrecord") != lib.read_records(out + "/exact.tfrecord")


def test_spilled_buffer_gives_the_same_output(corpus, workdir, monkeypatch):
    out = os.path.join(workdir, "spill")
    os.makedirs(out, exist_ok=True)
    base = {"input_file": corpus["all"], "vocab_file": corpus["vocab"], "dupe_factor": 2}
    _run_ours(dict(base, output_file=out + "/mem.tfrecord"))
    monkeypatch.setattr(pd.writing.RecordBuffer, "_CHUNK_BYTES", 4096)
    _run_ours(dict(base, output_file=out + "/spill.tfrecord"), record_buffer_bytes=10000)
    assert lib.read_records(out + "/mem.tfrecord") == lib.read_records(out + "/spill.tfrecord")
    assert not [f for f in os.listdir(out) if "tmp" in f]


def test_record_buffer_spills_and_reads_back(tmp_path, monkeypatch):
    monkeypatch.setattr(pd.writing.RecordBuffer, "_CHUNK_BYTES", 100)
    buf = pd.writing.RecordBuffer(250, str(tmp_path))
    records = [bytes([i % 256]) * (1 + i % 37) for i in range(300)]
    for r in records:
        buf.append(r)
    assert buf.spilled_bytes > 0
    order = list(range(300))
    random.Random(1).shuffle(order)
    assert [buf.get(i) for i in order] == [records[i] for i in order]
    buf.close()


def test_bad_input_raises_user_error_and_leaves_nothing(corpus, tmp_path):
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    out = str(tmp_path / "out.tfrecord")
    good = [corpus["a"]]
    cases = [
        (dict(max_seq_length=4), "max_seq_length=4"),
        (dict(max_predictions_per_seq=0), "max_predictions_per_seq=0"),
        (dict(dupe_factor=0), "dupe_factor=0"),
        (dict(masked_lm_prob=1.5), "masked_lm_prob"),
    ]
    for kwargs, match in cases:
        with pytest.raises(UserError, match=match):
            pd.create_pretraining_data(good, [out], tokenizer, **kwargs)
    empty = str(tmp_path / "empty.txt")
    open(empty, "w").write("\n\n  \n")
    with pytest.raises(UserError, match="empty.txt has no text"):
        pd.create_pretraining_data([empty], [out], tokenizer)
    with pytest.raises(UserError, match="empty.txt has no text"):
        pd.create_pretraining_data([empty], [out], tokenizer, documents_per_shard=5)
    with pytest.raises(UserError, match="does not exist"):
        pd.create_pretraining_data([str(tmp_path / "missing.txt")], [out], tokenizer)
    with pytest.raises(UserError, match="matches no file"):
        pd.expand_input_patterns([str(tmp_path / "nothing*.txt")])
    no_mask = str(tmp_path / "vocab_no_mask.txt")
    with open(corpus["vocab"]) as f:
        tokens = [t for t in f.read().split("\n") if t and t != "[MASK]"]
    open(no_mask, "w").write("\n".join(tokens) + "\n")
    with pytest.raises(UserError, match=r"no \[MASK\] token"):
        pd.create_pretraining_data(good, [out], tokenization.FullTokenizer(no_mask),
                                   vocab_file=no_mask)
    no_unk = str(tmp_path / "vocab_no_unk.txt")
    open(no_unk, "w").write("\n".join(t for t in tokens + ["[MASK]"] if t != "[UNK]") + "\n")
    with pytest.raises(UserError, match=r"no token .*\[UNK\]"):
        pd.create_pretraining_data([corpus["edge"]], [out], tokenization.FullTokenizer(no_unk),
                                   vocab_file=no_unk)
    assert not [f for f in os.listdir(str(tmp_path)) if f.startswith("out")]


def test_interrupted_write_leaves_no_file(corpus, tmp_path, monkeypatch):
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    out = str(tmp_path / "out.tfrecord")
    calls = {"n": 0}
    original_write = pd.writing.RoundRobinWriter.write

    def failing_write(self, record):
        calls["n"] += 1
        if calls["n"] == 50:
            raise KeyboardInterrupt()
        return original_write(self, record)

    monkeypatch.setattr(pd.writing.RoundRobinWriter, "write", failing_write)
    with pytest.raises(KeyboardInterrupt):
        pd.create_pretraining_data([corpus["a"]], [out], tokenizer, dupe_factor=1)
    assert os.listdir(str(tmp_path)) == []


def test_documents_and_instances_in_memory_are_ids(corpus):
    """Documents are tuples of ids; the instance counts follow the document shuffle."""
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    docs = pd.tokens.read_documents([corpus["edge"]], pd.tokens.CachedTokenizer(tokenizer))
    # The edge file: a whitespace-only line splits it into two documents;
    # the control-character line adds no segment.
    assert [len(d) for d in docs] == [4, 3]
    unk = tokenizer.vocab["[UNK]"]
    assert unk in docs[1][0]
    hello = tokenizer.convert_tokens_to_ids(tokenizer.tokenize("The hello line"))
    assert list(docs[0][1][:len(hello)]) == hello
    assert all(isinstance(seg, tuple) and seg for d in docs for seg in d)
    assert np.all([isinstance(i, int) for d in docs for s in d for i in s])
