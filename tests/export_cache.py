"""The export tests' shared inputs: `write_task`'s files and one SavedModel per model kind.

tests/test_export.py, tests/test_export_hostile.py, tests/test_export_onnx.py
and tests/tools/test_export_saved_model_tool.py read the same task files (an
MRPC-layout task, its vocab, a tiny BERT as a pre-training checkpoint and
with a classifier head), and several of them export the same model kinds
from them (the classifier, the encoder, the embedder, multiple_choice). Each
is written once per test run, by the first test process that asks, and read
by every other one: `make test` runs the files in separate processes
(pytest-xdist, `--dist loadfile`), so an entry is built under an exclusive
lock file (`fcntl.flock`) in a directory the run's processes share (the parent
of this process's base temporary directory under xdist, the base temporary
directory itself otherwise) and marked done when whole.

Tests read these directories and never write into them: `task_files` gives
each caller its own `tmp` for what it writes.
"""

import contextlib
import fcntl
import os
import shutil

import numpy as np

_DONE = "done"

# The text signatures' settings of the kinds (tests/test_export_hostile.py's).
DOC_STRIDE = 16
MAX_QUERY_LENGTH = 8
NER_LABELS = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]

# kind: (task, the checkpoint (a write_task key, or a head written for the kind), kwargs).
# Random heads of unit-variance weights (their answers differ from text to text).
KINDS = {
    "classifier": ("MRPC", "finetuned", {}),
    "doc_stride": ("MRPC", "finetuned", {"doc_stride": DOC_STRIDE}),
    # From the release-like directory (bert_model.ckpt, no `checkpoint` file).
    "encoder": ("encoder", "init", {}),
    "embeddings": ("embeddings", "init", {}),
    "fill_mask": ("fill_mask", "init", {"top_k": 2}),
    "multiple_choice": ("multiple_choice", "head", {}),
    "squad": ("squad", "head", {"doc_stride": DOC_STRIDE, "max_query_length": MAX_QUERY_LENGTH}),
    "ner": ("ner", "head", {"doc_stride": DOC_STRIDE}),
}
# The head of each kind that needs one: (variable prefix, rows, seed).
_HEADS = {"multiple_choice": ("", 1, 7), "squad": ("cls/squad/", 2, 3),
          "ner": ("", len(NER_LABELS), 4)}


def shared_dir(tmp_path_factory):
    """The directory this run's test processes share."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # pytest-N/, above each worker's popen-gwK/
    path = os.path.join(str(base), "export_cache")
    os.makedirs(path, exist_ok=True)
    return path


@contextlib.contextmanager
def _locked(path, blocking=True):
    """Holds `path`.lock exclusively within; yields False if busy and not `blocking`."""
    with open(path + ".lock", "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _is_done(path):
    return os.path.exists(os.path.join(path, _DONE))


def _build(path, build):
    """Calls `build(path)` in a fresh directory `path` (the caller holds the lock)."""
    shutil.rmtree(path, ignore_errors=True)  # a build that failed half-way
    os.makedirs(path)
    try:
        build(path)
    except BaseException:
        shutil.rmtree(path, ignore_errors=True)
        raise
    open(os.path.join(path, _DONE), "w").close()


def built(tmp_path_factory, key, build):
    """The directory `key` of the shared directory, `build(directory)` called once per run."""
    path = os.path.join(shared_dir(tmp_path_factory), key)
    if not _is_done(path):
        with _locked(path):
            if not _is_done(path):
                _build(path, build)
    return path


def task_files(tmp_path_factory, name):
    """`tests.test_export.write_task`'s dict, the files written once per run.

    "tmp" is a fresh directory of the caller's (`mktemp(name)`): what a test writes.
    """
    from tests import test_export
    path = built(tmp_path_factory, "task", test_export.write_task)
    return dict(test_export.task_paths(path), tmp=str(tmp_path_factory.mktemp(name)))


def _write_head(files, kind, directory):
    """The pre-training checkpoint's encoder with a random head of `kind`: a prefix."""
    from bert_tf.tasks.token_classification import data as ner_data
    from bert_tf.modeling import checkpoint
    prefix, rows, seed = _HEADS[kind]
    rng = np.random.RandomState(seed)
    values = checkpoint.read_checkpoint(files["init_prefix"])
    values = {k: v for k, v in values.items() if not k.startswith("cls/")}
    values[prefix + "output_weights"] = rng.normal(
        0, 1, (rows, files["config"].hidden_size)).astype(np.float32)
    values[prefix + "output_bias"] = np.zeros([rows], np.float32)
    path = checkpoint.write_checkpoint(os.path.join(directory, "model.ckpt-1"), values)
    if kind == "ner":
        ner_data.write_labels(os.path.join(directory, ner_data.LABELS_FILE), NER_LABELS)
    return path


def _export_kind(tmp_path_factory, kind, directory):
    from bert_tf.export import saved_model as export
    from tests.test_export import SEQ_LENGTH
    files = task_files(tmp_path_factory, "export_cache_" + kind)
    task, init, kwargs = KINDS[kind]
    if init == "head":
        init = _write_head(files, kind, os.path.join(directory, "checkpoint"))
    else:
        init = files[init]
    export.export_saved_model(task, files["config"], files["vocab"], True, init,
                              os.path.join(directory, "export"), SEQ_LENGTH, version=1,
                              **kwargs)


def _version_dir(path):
    return os.path.join(path, "export", "1")


def saved_model(tmp_path_factory, kind):
    """The version directory of the SavedModel export of `kind` (a key of KINDS)."""
    return _version_dir(built(tmp_path_factory, "saved_model_" + kind,
                              lambda path: _export_kind(tmp_path_factory, kind, path)))


def head_checkpoint(tmp_path_factory, kind):
    """The checkpoint prefix `kind`'s export was made from (a head of _HEADS)."""
    saved_model(tmp_path_factory, kind)
    return os.path.join(shared_dir(tmp_path_factory), "saved_model_" + kind, "checkpoint",
                        "model.ckpt-1")


def saved_models(tmp_path_factory, kinds):
    """{kind: version directory} of `kinds`: those another process is building come last."""
    root = shared_dir(tmp_path_factory)
    for kind in kinds:
        path = os.path.join(root, "saved_model_" + kind)
        if _is_done(path):
            continue
        with _locked(path, blocking=False) as mine:
            if mine and not _is_done(path):
                _build(path, lambda p, kind=kind: _export_kind(tmp_path_factory, kind, p))
    return {kind: saved_model(tmp_path_factory, kind) for kind in kinds}
