"""create_pretraining_data on Apache Beam: the sharded mode's files, on DirectRunner.

The planning pieces (byte ranges of the input) need no Beam and always run;
the pipeline tests are skipped where apache-beam is not installed. Most runs
use DirectRunner in-process; one runs the tool with worker processes.
"""

import os
import random
import sys

import pytest

from bert_tf import tokenization
from bert_tf.data import text_files
from bert_tf.tasks.pretraining import data as pd
from bert_tf.errors import UserError
from tests.data import pretraining_testlib as lib
from tests.tools import toolrun

TOOL = os.path.join(toolrun.REPO_ROOT, "tools", "create_pretraining_data.py")
SMALL = dict(max_seq_length=64, max_predictions_per_seq=10, dupe_factor=2)


@pytest.fixture(scope="module")
def bp():
    pytest.importorskip("apache_beam")
    from bert_tf.tasks.pretraining.data import beam  # pylint: disable=g-import-not-at-top
    return beam


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return str(tmp_path_factory.mktemp("beam_pipeline"))


@pytest.fixture(scope="module")
def corpus(workdir):
    paths = lib.write_corpus(workdir)
    paths["files"] = pd.expand_input_patterns(paths["all"].split(","))
    paths["vocab"] = lib.write_vocab(paths["files"], os.path.join(workdir, "vocab.txt"))
    return paths


@pytest.fixture(scope="module")
def many_files(workdir):
    """30 files cut at random lines of the corpus: documents cross file boundaries.

    A cut falls inside a document, on a blank line, or between two blank
    lines; some files end without a newline, one with "\\r\\n" lines.
    """
    text = "\n\n".join("\n".join(d) for d in pd_documents())
    lines = text.split("\n")
    rng = random.Random(3)
    cuts = sorted(rng.sample(range(1, len(lines)), 29))
    directory = os.path.join(workdir, "many")
    os.makedirs(directory)
    files = []
    for i, (lo, hi) in enumerate(zip([0] + cuts, cuts + [len(lines)])):
        chunk = "\n".join(lines[lo:hi])
        if i % 4:
            chunk += "\n"
        if i == 5:
            chunk = chunk.replace("\n", "\r\n")
        path = os.path.join(directory, "part-%02d.txt" % i)
        with open(path, "w", encoding="utf-8", newline="") as f:
            f.write(chunk if chunk.strip() else "text\n")
        files.append(path)
    return files


def pd_documents():
    from bert_tf.data import demo_corpus  # pylint: disable=g-import-not-at-top
    return list(demo_corpus.pydoc_documents("paragraph"))[:300]


def _outputs(workdir, name, count):
    directory = os.path.join(workdir, name)
    os.makedirs(directory, exist_ok=True)
    return [os.path.join(directory, "out%d.tfrecord" % i) for i in range(count)]


def _sharded(corpus, files, outputs, num_workers=2, **kwargs):
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    return pd.create_pretraining_data(files, outputs, tokenizer, vocab_file=corpus["vocab"],
                                      num_workers=num_workers, **kwargs)


def _read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


# ---------------------------------------------------------------------------
# Planning: byte ranges instead of documents (no Beam needed).
# ---------------------------------------------------------------------------

def test_iter_lines_at_reads_any_range_of_lines(tmp_path, monkeypatch):
    """Any [start, end) between line starts reads exactly those lines of `iter_lines`."""
    monkeypatch.setattr(text_files, "_READ_BLOCK_BYTES", 5)  # lines cross read blocks
    cases = {
        "crlf": b"one\r\ntwo lines\r\n\r\nthree\r\n",
        "lone_cr": b"a\rb\nc\n\r\nlast",
        "trailing_cr": b"x\ny\n\r",
        "bad_utf8": b"caf\xc3\n\xff\xfeword\nok\n",
        "blank_runs": b"\n\n  \n\tdoc\n\n\n",
    }
    for name, data in cases.items():
        path = str(tmp_path / name)
        with open(path, "wb") as f:
            f.write(data)
        whole = list(text_files.iter_lines_at(path))
        assert [line for _, line in whole] == list(text_files.iter_lines(path)), name
        starts = [offset for offset, _ in whole] + [None]
        for (offset, line), stop in zip(whole, starts[1:]):
            raw = data[offset:stop]
            assert raw.replace(b"\r", b"").decode("utf-8", "ignore") == line, name
        for i in range(len(starts)):
            for j in range(i + 1, len(starts)):
                got = list(text_files.iter_lines_at(path, None, starts[i], starts[j]))
                assert got == whole[i:j], (name, starts[i], starts[j])


@pytest.mark.parametrize("documents_per_shard", [1, 7, 40, 10 ** 6])
def test_planned_shards_hold_the_sharded_modes_documents(corpus, documents_per_shard):
    files = corpus["files"]
    expected = list(pd.workers._iter_shards(files, documents_per_shard, None))
    planned = list(text_files.plan_shards(files, documents_per_shard))
    assert [k for k, _ in planned] == [k for k, _ in expected]
    for (k, segments), (_, documents) in zip(planned, expected):
        assert text_files.read_shard_documents(segments) == documents, k
    if documents_per_shard == 40:
        # The b_*.txt glob: b_1.txt's last document continues in b_2.txt.
        crossing = [s for _, s in planned if len(s) > 1]
        assert crossing and all(s[0][2] is None and s[-1][1] == 0 for s in crossing)


def test_planned_shards_across_many_files(many_files):
    planned = list(text_files.plan_shards(many_files, 9))
    expected = list(pd.workers._iter_shards(many_files, 9, None))
    assert len(planned) == len(expected) > 10
    assert sum(len(s) > 1 for _, s in planned) > 5
    for (_, segments), (_, documents) in zip(planned, expected):
        assert text_files.read_shard_documents(segments) == documents


def test_planning_counts_bad_utf8_and_rejects_an_empty_file(tmp_path):
    bad = str(tmp_path / "bad.txt")
    with open(bad, "wb") as f:
        f.write(b"good line\n\nbad \xff line\nand \xc3\n")
    stats, reference = text_files.DecodeStats(), text_files.DecodeStats()
    list(text_files.plan_shards([bad], 1, stats))
    list(text_files.iter_raw_documents([bad], reference))
    assert (stats.bad_lines, stats.first_bad) == (reference.bad_lines, reference.first_bad) \
        == (2, (bad, 3))
    empty = str(tmp_path / "empty.txt")
    with open(empty, "w") as f:
        f.write("\n \t\n")
    with pytest.raises(UserError, match="empty.txt has no text"):
        list(text_files.plan_shards([bad, empty], 1))


def test_output_file_names():
    assert pd.output_file_names("a,b") == ["a", "b"]
    assert pd.output_file_names("gs://b/d/tf.tfrecord", 3) == [
        "gs://b/d/tf.tfrecord-%05d-of-00003" % i for i in range(3)]
    with pytest.raises(UserError, match="--num_output_files=-1"):
        pd.output_file_names("a", -1)
    with pytest.raises(UserError, match="give one name"):
        pd.output_file_names("a,b", 2)


# ---------------------------------------------------------------------------
# The pipeline on DirectRunner (in-process).
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("name,num_outputs,kwargs", [
    ("three_outputs", 3, dict(SMALL, documents_per_shard=40)),
    # No --documents_per_shard: both take the size from the corpus (64 here).
    ("default_shards", 2, dict(SMALL)),
    ("wwm_small_shards", 4, dict(max_seq_length=32, max_predictions_per_seq=5, dupe_factor=1,
                                 short_seq_prob=0.5, random_seed=5, do_whole_word_mask=True,
                                 documents_per_shard=7)),
])
@pytest.mark.slow
def test_beam_writes_the_sharded_modes_files(bp, corpus, workdir, name, num_outputs, kwargs):
    """Every output file equals sharded mode's (--num_workers=2) byte for byte."""
    sharded = _outputs(workdir, name + "_sharded", num_outputs)
    beam = _outputs(workdir, name + "_beam", num_outputs)
    expected = _sharded(corpus, corpus["files"], sharded, **kwargs)
    got = bp.create_pretraining_data_beam(corpus["files"], beam, corpus["vocab"], **kwargs)
    assert expected["shards"] > 3
    for key in ("instances", "documents", "shards"):
        assert got[key] == expected[key], key
    for ours, theirs in zip(beam, sharded):
        records = lib.read_records(ours)
        assert records and records == lib.read_records(theirs), ours
        assert _read_bytes(ours) == _read_bytes(theirs), ours
    assert sorted(os.listdir(os.path.dirname(beam[0]))) == sorted(
        os.path.basename(p) for p in beam)


def test_beam_on_many_files_crossing_documents(bp, corpus, workdir, many_files):
    sharded = _outputs(workdir, "many_sharded", 2)
    beam = _outputs(workdir, "many_beam", 2)
    _sharded(corpus, many_files, sharded, documents_per_shard=9, **SMALL)
    stats = bp.create_pretraining_data_beam(many_files, beam, corpus["vocab"],
                                            documents_per_shard=9, **SMALL)
    assert stats["shards"] > 10
    for ours, theirs in zip(beam, sharded):
        assert lib.read_records(ours) == lib.read_records(theirs)


def test_beam_one_shard_is_the_exact_algorithm(bp, corpus, workdir):
    """With one shard, Beam writes exact mode's files for seed shard_seed(seed, 0)."""
    beam = _outputs(workdir, "one_shard_beam", 2)
    exact = _outputs(workdir, "one_shard_exact", 2)
    tokenizer = tokenization.FullTokenizer(corpus["vocab"])
    pd.create_pretraining_data(corpus["files"], exact, tokenizer,
                               random_seed=pd.instances.shard_seed(17, 0), **SMALL)
    stats = bp.create_pretraining_data_beam(corpus["files"], beam, corpus["vocab"],
                                            random_seed=17, documents_per_shard=10 ** 6, **SMALL)
    assert stats["shards"] == 1
    for ours, theirs in zip(beam, exact):
        assert _read_bytes(ours) == _read_bytes(theirs)


@pytest.mark.original
def test_beam_one_shard_equals_the_original(bp, corpus, workdir):
    """One shard = the original's output for --random_seed=shard_seed(seed, 0)."""
    beam = _outputs(workdir, "original_beam", 2)
    original = _outputs(workdir, "original_original", 2)
    patterns = [corpus["a"], corpus["b_glob"]]
    bp.create_pretraining_data_beam(pd.expand_input_patterns(patterns), beam, corpus["vocab"],
                                    random_seed=23, documents_per_shard=10 ** 6, **SMALL)
    flags = ["--input_file=" + ",".join(patterns), "--output_file=" + ",".join(original),
             "--vocab_file=" + corpus["vocab"], "--random_seed=%d" % pd.instances.shard_seed(23, 0)]
    flags += ["--%s=%s" % (k, v) for k, v in SMALL.items()]
    lib.run_original(os.path.dirname(original[0]), [("pip", flags)])
    for ours, theirs in zip(beam, original):
        records = lib.read_records(ours)
        assert records and records == lib.canonical_records(theirs)


def test_beam_drops_invalid_utf8_with_the_warning(bp, corpus, workdir):
    with open(corpus["a"], "rb") as f:
        lines = f.read().split(b"\n")
    for i in range(0, len(lines), 7):
        if lines[i]:
            lines[i] = lines[i][:3] + b"\xff" + lines[i][3:]
    dirty = os.path.join(workdir, "dirty.txt")
    with open(dirty, "wb") as f:
        f.write(b"\n".join(lines))
    sharded = _outputs(workdir, "utf8_sharded", 1)
    beam = _outputs(workdir, "utf8_beam", 1)
    warnings = {}
    for who, run in (("sharded", lambda: _sharded(corpus, [dirty], sharded, num_workers=1,
                                                  documents_per_shard=30, **SMALL)),
                     ("beam", lambda: bp.create_pretraining_data_beam(
                         [dirty], beam, corpus["vocab"], documents_per_shard=30, **SMALL))):
        with lib.absl_log_lines() as log_lines:
            run()
        warnings[who] = [l for l in log_lines if "not valid UTF-8" in l]
    assert len(warnings["beam"]) == 1 and warnings["beam"] == warnings["sharded"]
    assert "(first: %s line 1)" % dirty in warnings["beam"][0]
    assert lib.read_records(beam[0]) == lib.read_records(sharded[0])


def _leftovers(directory):
    return sorted(f for f in os.listdir(directory) if "tmp" in f)


def test_beam_bad_input_leaves_the_old_outputs(bp, corpus, workdir):
    """A worker's UserError: one line, no output replaced, no temporary file left."""
    outputs = _outputs(workdir, "bad_input", 2)
    for path in outputs:
        with open(path, "w") as f:
            f.write("an earlier run's file\n")
    empty = os.path.join(workdir, "empty.txt")
    with open(empty, "w") as f:
        f.write("\n   \n")
    with pytest.raises(UserError, match="empty.txt has no text"):
        bp.create_pretraining_data_beam([corpus["a"], empty], outputs, corpus["vocab"], **SMALL)
    # A vocab without [UNK], and the only unknown word in the corpus's last
    # shard: earlier shards are written before the worker fails.
    no_unk = os.path.join(workdir, "vocab_no_unk.txt")
    with open(corpus["vocab"]) as f:
        tokens = [t for t in f.read().split("\n") if t and t != "[UNK]"]
    with open(no_unk, "w") as f:
        f.write("\n".join(tokens) + "\n")
    with pytest.raises(UserError, match=r"no token \[UNK\].*%s" % lib.UNKNOWN_CHAR):
        bp.create_pretraining_data_beam(corpus["files"], outputs, no_unk,
                                        documents_per_shard=20, **SMALL)
    for path in outputs:
        assert _read_bytes(path) == b"an earlier run's file\n"
    assert _leftovers(os.path.dirname(outputs[0])) == []


def test_beam_crashing_worker_leaves_no_output(bp, corpus, workdir, monkeypatch):
    """A worker that dies mid-way (not a UserError): no file under the final names."""
    outputs = _outputs(workdir, "crash", 3)
    real = pd.workers.generate_shard
    done = []

    def crash_on_shard_3(shard_index, *args):
        if shard_index == 3:
            raise RuntimeError("worker lost on shard 3")
        done.append(shard_index)
        return real(shard_index, *args)

    monkeypatch.setattr(pd.workers, "generate_shard", crash_on_shard_3)
    with pytest.raises(Exception, match="worker lost on shard 3"):
        bp.create_pretraining_data_beam(corpus["files"], outputs, corpus["vocab"],
                                        documents_per_shard=20, **SMALL)
    assert done  # some shards were written before the failure
    assert os.listdir(os.path.dirname(outputs[0])) == []


def test_beam_options_are_checked_before_the_pipeline(bp):
    options, runner = bp.pipeline_options(
        "DirectRunner", ["--direct_num_workers=3", "--direct_running_mode=multi_threading"])
    assert options.get_all_options()["direct_num_workers"] == 3
    assert type(runner).__name__ == "FnApiRunner"
    # The cluster runners' options (as in docs/pretraining.md) parse; nothing is contacted.
    for name, args in (
            ("DataflowRunner", ["--project=p", "--region=us-central1",
                                "--temp_location=gs://b/tmp", "--extra_package=dist/b.whl",
                                "--max_num_workers=50"]),
            ("FlinkRunner", ["--flink_master=host:8081", "--parallelism=16",
                             "--environment_type=DOCKER", "--environment_config=image"]),
            ("SparkRunner", ["--spark_master_url=spark://host:7077"])):
        options, runner = bp.pipeline_options(name, args)
        assert runner is None and options.get_all_options()["runner"] == name
    cases = [
        ("NoSuchRunner", [], "--runner=NoSuchRunner is not an Apache Beam runner"),
        ("DirectRunner", ["--direct_num_worker=2"],
         "--direct_num_worker is not an Apache Beam pipeline option"),
        ("DirectRunner", ["--direct_running_mode=fast"],
         "Beam pipeline option: argument --direct_running_mode: invalid choice: 'fast'"),
        ("DirectRunner", ["--runner=FlinkRunner"], "give the runner as --runner=NAME"),
    ]
    for runner, args, message in cases:
        with pytest.raises(UserError) as e:
            bp.pipeline_options(runner, args)
        assert str(e.value).startswith(message) and "\n" not in str(e.value)


# ---------------------------------------------------------------------------
# The tool.
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_tool_bad_flag_combinations(bp, corpus, tmp_path):
    """One line each, before any pipeline (nothing is created)."""
    out = tmp_path / "out"
    out.mkdir()
    base = ["--input_file=" + corpus["a"], "--vocab_file=" + corpus["vocab"],
            "--output_file=%s/x.tfrecord" % out]
    cases = [
        ("workers", base + ["--runner=DirectRunner", "--num_workers=2"],
         "--num_workers=2 is sharded mode's process count; with --runner=DirectRunner"),
        ("runner", base + ["--runner=NoSuchRunner"],
         "--runner=NoSuchRunner is not an Apache Beam runner"),
        ("seq", base + ["--runner=DirectRunner", "--max_seq_length=4"],
         "--max_seq_length=4 cannot hold an instance"),
        ("no_match", ["--input_file=%s/nope-*.txt" % tmp_path, "--vocab_file=" + corpus["vocab"],
                      "--output_file=%s/x.tfrecord" % out, "--runner=DirectRunner"],
         "--input_file: '%s/nope-*.txt' matches no file" % tmp_path),
        ("no_vocab", base[:1] + ["--vocab_file=%s/nv.txt" % tmp_path, base[2],
                                 "--runner=DirectRunner"], "vocab_file %s/nv.txt" % tmp_path),
        ("num_outputs", base[:2] + ["--output_file=%s/a,%s/b" % (out, out),
                                    "--num_output_files=2", "--runner=DirectRunner"],
         "--output_file=%s/a,%s/b: with --num_output_files, give one name" % (out, out)),
    ]
    results = toolrun.user_errors_here("create_pretraining_data", cases)
    for name, _, message in cases:
        assert results[name] is not None and results[name].startswith(message), (
            name, results[name])
        assert "\n" not in results[name]
    assert os.listdir(str(out)) == []


@pytest.mark.slow
def test_tool_on_direct_runner_worker_processes(bp, corpus, tmp_path):
    """`--runner=DirectRunner -- <Beam options>` with 2 worker processes = --num_workers=2."""
    flags = ["--input_file=" + corpus["all"], "--vocab_file=" + corpus["vocab"],
             "--max_seq_length=48", "--max_predictions_per_seq=6", "--dupe_factor=1",
             "--documents_per_shard=30", "--num_output_files=2"]
    sharded = toolrun.start([sys.executable, TOOL] + flags + [
        "--output_file=%s/sharded/tf.tfrecord" % tmp_path, "--num_workers=2"])
    beam = toolrun.start([sys.executable, TOOL] + flags + [
        "--output_file=%s/beam/tf.tfrecord" % tmp_path, "--runner=DirectRunner", "--",
        "--direct_running_mode=multi_processing", "--direct_num_workers=2"])
    bad = toolrun.start([sys.executable, TOOL] + flags + [
        "--output_file=%s/bad/tf.tfrecord" % tmp_path, "--runner=DirectRunner", "--",
        "--direct_running_mode=fast"])
    for proc in (sharded, beam):
        rc, _, err = toolrun.finish(proc)
        assert rc == 0, err[-3000:]
    assert "Wrote %d total instances" % sum(
        len(lib.read_records("%s/beam/tf.tfrecord-%05d-of-00002" % (tmp_path, i)))
        for i in range(2)) in err
    assert sorted(os.listdir(str(tmp_path / "beam"))) == [
        "tf.tfrecord-00000-of-00002", "tf.tfrecord-00001-of-00002"]
    for i in range(2):
        name = "tf.tfrecord-%05d-of-00002" % i
        assert _read_bytes(str(tmp_path / "beam" / name)) == _read_bytes(
            str(tmp_path / "sharded" / name))
    rc, _, err = toolrun.finish(bad)
    lines = [l for l in err.splitlines() if l.startswith("error:")]
    assert rc == 2 and "Traceback" not in err, err[-3000:]
    assert lines == ["error: Beam pipeline option: argument --direct_running_mode: invalid "
                     "choice: 'fast' (choose from 'in_memory', 'multi_threading', "
                     "'multi_processing')"]
    assert not os.path.exists(str(tmp_path / "bad"))
