"""Tests for tools/export_saved_model.py: its exports, files and errors.

The exports call the tool in this process (`toolrun.run_tool`: the flags
parsed and the library called as the command line does); the command line
itself runs as a user runs it for the exit status and stderr of a mistake.

Data: tests/test_export.py's `write_task` (an MRPC-layout task, its vocab, a
tiny BERT as a pre-training checkpoint and fine-tuned with a classifier head).

* Two exports into one model base path, side by side: the default version
  (the time in seconds) and `--version=7`; each is
  `export_dir/<version>/saved_model.pb`, `variables/`, `assets/vocab.txt`,
  and nothing else is left in export_dir (the temporary directory was
  renamed).
* The same `--version` again: a one-line `UserError` (the command line's
  `error: ...` line), the existing version untouched.
* Bad input: one-line `UserError`s naming the culprit, raised before
  anything is written (the cases run in this process); on the command line,
  exit 2 and no traceback.
"""

import os
import sys
import time

import pytest

from tests import export_cache
from tests.test_export import SEQ_LENGTH
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.tools import toolrun
from tests.tolerances import BF16_HIDDEN_ATOL

TOOL = os.path.join(toolrun.REPO_ROOT, "tools", "export_saved_model.py")
VERSION_FILES = ["assets/vocab.txt", "fingerprint.pb", "saved_model.pb",
                 "variables/variables.data-00000-of-00001", "variables/variables.index"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return export_cache.task_files(tmp_path_factory, "export_tool")


def _flags(files, export_dir, **overrides):
    values = {
        "task_name": "MRPC", "bert_config_file": files["config_file"],
        "vocab_file": files["vocab"], "do_lower_case": "true",
        "init_checkpoint": files["finetuned"], "max_seq_length": SEQ_LENGTH,
        "export_dir": str(export_dir),
    }
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


def _files_under(directory):
    found = []
    for root, _, names in os.walk(directory):
        found += [os.path.relpath(os.path.join(root, n), directory) for n in names]
    return sorted(found)


def _one_error_line(rc, err):
    assert rc == 2, err[-3000:]
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err[-3000:]
    return errors[0]


@pytest.fixture(scope="module")
def exported(files):
    """The default version and --version=7 of one model base path, exported side by side."""
    export_dir = os.path.join(files["tmp"], "models", "mrpc")
    start = int(time.time())
    logs = [toolrun.run_tool("export_saved_model", _flags(files, export_dir))[1],
            toolrun.run_tool("export_saved_model", _flags(
                files, export_dir, init_checkpoint=files["finetuned_prefix"], version=7))[1]]
    end = int(time.time())
    return {"dir": export_dir, "start": start, "end": end, "logs": logs}


@pytest.mark.slow
def test_version_layout(files, exported):
    export_dir = exported["dir"]
    versions = sorted(os.listdir(export_dir), key=int)  # only numbers: nothing half-written
    assert len(versions) == 2 and versions[0] == "7"
    assert exported["start"] <= int(versions[1]) <= exported["end"]  # default: the time
    with open(files["vocab"], "rb") as f:
        vocab = f.read()
    for version in versions:
        path = os.path.join(export_dir, version)
        assert _files_under(path) == VERSION_FILES, version
        with open(os.path.join(path, "assets", "vocab.txt"), "rb") as f:
            assert f.read() == vocab
    for version, log in zip(versions[::-1], exported["logs"]):
        assert "Exported MRPC from %s to %s" % (files["finetuned_prefix"], os.path.join(
            export_dir, version)) in log


@pytest.mark.slow
def test_existing_version_is_refused(files, exported):
    path = os.path.join(exported["dir"], "7")
    before = {name: os.stat(os.path.join(path, name)).st_mtime_ns for name in VERSION_FILES}
    # As the command line parses the flags (a UserError there: exit 2 and its one line,
    # test_bad_input_gives_one_line_errors_and_writes_nothing).
    message = toolrun.user_errors_here("export_saved_model", [
        ("again", _flags(files, exported["dir"], version=7))])["again"]
    assert message == ("%s exists already: pass another --version (versions are never "
                       "overwritten)" % path)
    assert {name: os.stat(os.path.join(path, name)).st_mtime_ns
            for name in VERSION_FILES} == before
    assert len(os.listdir(exported["dir"])) == 2


# ----------------------------------------------------------------- bad input


def _bad_input_cases(files):
    """(name, flag overrides, [expected parts of the one-line message])."""
    tmp = files["tmp"]
    big_vocab = os.path.join(tmp, "big_vocab.txt")
    with open(files["vocab"], encoding="utf-8") as f:
        tokens = f.read().splitlines()
    with open(big_vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(tokens + ["extra%d" % i for i in range(3)]) + "\n")
    config = files["config"]
    wide = write_config(tiny_config(vocab_size=config.vocab_size, hidden_size=64),
                        os.path.join(tmp, "wide_config.json"))
    missing = os.path.join(tmp, "nowhere", "model.ckpt-1")
    no_unk = toolrun.vocab_without(files["vocab"], os.path.join(tmp, "vocab_no_unk.txt"),
                                   "[UNK]")
    under_a_file, blocker = toolrun.path_under_a_file(os.path.join(tmp, "blocked"))
    return [
        ("vocab without [UNK]", {"vocab_file": no_unk},
         ["--vocab_file=%s has no [UNK] token" % no_unk]),
        ("export_dir under a file", {"export_dir_": under_a_file},
         ["--export_dir=%s: %s is a file, not a directory" % (under_a_file, blocker)]),
        ("unknown task", {"task_name": "SNLI"},
         ["Task not found: snli (known: cola, mnli, mrpc, xnli", "sts-b",
          "encoder, embeddings, multiple_choice, squad, ner, fill_mask)"]),
        ("pre-training checkpoint exported as a classifier",
         {"init_checkpoint": files["init"]},
         ["--init_checkpoint=%s has no classifier head (variable output_weights is missing): "
          "export a checkpoint that run_classifier.py fine-tuned on MRPC" % files["init_prefix"]]),
        ("vocab larger than vocab_size", {"vocab_file": big_vocab},
         ["--vocab_file=%s has %d tokens, more than vocab_size %d of %s"
          % (big_vocab, len(tokens) + 3, config.vocab_size, files["config_file"])]),
        ("missing checkpoint", {"init_checkpoint": missing},
         ["--init_checkpoint=%s: no checkpoint there (expected %s.index)" % (missing, missing)]),
        ("config of another shape", {"bert_config_file": wide},
         ["variable bert/embeddings/word_embeddings has shape [%d, 32] in the checkpoint but "
          "[%d, 64] from %s" % (config.vocab_size, config.vocab_size, wide)]),
        ("max_seq_length beyond max_position_embeddings", {"max_seq_length": 128},
         ["Cannot use sequence length 128 because the BERT model was only trained up to "
          "sequence length 64"]),
        ("tfhub of a classifier", {"format": "tfhub"},
         ["--format=tfhub exports the encoder: use --task_name=encoder, not MRPC"]),
        ("version 0", {"version": 0}, ["--version must be a positive integer"]),
    ]


@pytest.mark.slow
def test_bad_input_gives_one_line_errors_and_writes_nothing(files):
    cases = _bad_input_cases(files)
    export_dirs = [os.path.join(files["tmp"], "bad_%d" % i) for i in range(len(cases))]
    # "export_dir_" replaces the case's own export directory.
    argvs = [(name, _flags(files, overrides.get("export_dir_", export_dir),
                           **{k: v for k, v in overrides.items() if k != "export_dir_"}))
             for export_dir, (name, overrides, _) in zip(export_dirs, cases)]
    cli_dir = os.path.join(files["tmp"], "bad_cli")
    # The command line too (a child process, while the cases run here): the
    # pre-training checkpoint as a classifier.
    cli = toolrun.start([sys.executable, TOOL] + _flags(
        files, cli_dir, init_checkpoint=files["init"]))
    results = toolrun.user_errors_here("export_saved_model", argvs)
    cli_rc, _, cli_err = toolrun.finish(cli)
    for export_dir, (name, _, expected) in zip(export_dirs, cases):
        message = results[name]
        assert message is not None, "%s: no error" % name
        assert "\n" not in message, "%s: %r" % (name, message)
        for part in expected:
            assert part in message, "%s: %r" % (name, message)
        assert not os.path.exists(export_dir), name
    line = _one_error_line(cli_rc, cli_err)
    assert line.startswith("error: --init_checkpoint=%s has no classifier head"
                           % files["init_prefix"])
    assert not os.path.exists(cli_dir)


# ------------------------------------------------------------ mixed precision


@pytest.mark.slow
def test_mixed_precision_bf16_tfhub_encoder(files):
    """--mixed_precision=bf16 --format=tfhub: a bf16 encoder with float32 outputs."""
    import numpy as np
    import tensorflow as tf

    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.bert_model import BertModel

    export_dir = os.path.join(files["tmp"], "models", "hub_bf16")
    toolrun.run_tool("export_saved_model", _flags(
        files, export_dir, task_name="encoder", init_checkpoint=files["init"],
        format="tfhub", version=3, mixed_precision="bf16"))
    encoder = tf.saved_model.load(os.path.join(export_dir, "3", "encoder"))
    assert {v.dtype for v in encoder.variables} == {tf.bfloat16, tf.float32}
    rng = np.random.RandomState(0)
    ids = rng.randint(5, files["config"].vocab_size, (3, SEQ_LENGTH)).astype(np.int32)
    mask = np.ones_like(ids)
    mask[1, 10:] = 0
    types = np.zeros_like(ids)
    types[:, SEQ_LENGTH // 2:] = 1
    got = encoder({"input_word_ids": ids, "input_mask": mask, "input_type_ids": types})
    model = BertModel(files["config"])
    checkpoint.load_checkpoint(model, files["init_prefix"])
    want = model(ids, input_mask=mask, token_type_ids=types, training=False)
    for name in ("pooled_output", "sequence_output"):
        assert got[name].dtype == tf.float32, name
        diff = float(np.abs(got[name].numpy() - want[name].numpy()).max())
        assert 1e-3 < diff <= BF16_HIDDEN_ATOL, (name, diff)  # bf16: close, not float32's
