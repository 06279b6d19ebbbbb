"""Shared test set-up: Keras on TensorFlow, quiet logs, seeds, tiny configs."""

import os
import sys

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
# No test downloads a release by accident; tests/test_releases.py serves its own on loopback.
os.environ.setdefault("BERT_TF_OFFLINE", "1")

import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "original: compares against Google's original BERT code (bert-tensorflow), run in its own process")
    config.addinivalue_line(
        "markers", "slow: over about 4 s on 2 cores (a training run, an export, a tool's "
        "process), a process killed or started on purpose, a cluster, an install, an "
        "exhaustive sweep (make test runs it; make test-fast does not)")


# The files that take longest (half a minute or more on 2 cores), longest first: `make
# test` hands whole files to its test processes as they free up, so a long file left
# for the end would keep one process busy while the others have nothing to do.
LONGEST_FIRST = ("tests/test_exact_resume.py", "tests/test_lost_worker.py",
                 "tests/test_readme.py", "tests/test_keras_models.py",
                 "tests/test_graph_tokenizer.py", "tests/test_preemption.py",
                 "tests/test_distribute.py", "tests/test_export_hostile.py",
                 "tests/test_embeddings.py", "tests/test_training.py",
                 "tests/test_keras_inputs.py", "tests/test_export_onnx.py",
                 "tests/test_export_int8.py", "tests/test_export.py",
                 "tests/tools/test_run_classifier_tool.py", "tests/test_dev_eval.py",
                 "tests/test_export_hub.py", "tests/test_export_squad.py",
                 "tests/test_classifier_tfhub.py", "tests/data/test_beam_pipeline.py",
                 "tests/test_pretraining.py", "tests/test_ner.py",
                 "tests/test_broken_checkpoint.py", "tests/tools/test_run_pretraining_tool.py",
                 "tests/data/test_record_checks.py", "tests/test_multi_label.py",
                 "tests/test_fill_mask.py", "tests/test_tokenization.py",
                 "tests/tools/test_export_saved_model_tool.py", "tests/test_recompute.py",
                 "tests/test_original_model.py", "tests/test_huggingface.py")


def pytest_collection_modifyitems(config, items):
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}

    def file_rank(item):
        path = os.path.relpath(str(item.fspath), str(config.rootpath)).replace(os.sep, "/")
        return rank.get(path, len(rank))
    items.sort(key=file_rank)  # stable: each file's own order is kept

# Grappler's passes that rewrite a graph without changing what it computes
# take about a tenth of a test process's time (a tiny model's step functions
# are traced, optimized and run once or twice). The test processes turn them
# off, and so do the replica processes they start; arithmetic optimization and
# the remapper (its fusions change float results) stay on, so the numbers are
# those users get. The tools' processes that tests start, and the demo, run
# every pass.
TEST_PROCESS_GRAPPLER_OFF = ("layout_optimizer", "constant_folding", "shape_optimization",
                             "loop_optimization", "dependency_optimization",
                             "pin_to_host_optimization", "implementation_selector",
                             "debug_stripper", "scoped_allocator_optimization")


def turn_off_grappler_rewrites():
    import tensorflow as tf
    tf.config.optimizer.set_experimental_options(
        {name: False for name in TEST_PROCESS_GRAPPLER_OFF})


def pytest_collection_finish(session):
    import gc
    import sys
    if "tensorflow" in sys.modules:  # some test file imported it
        turn_off_grappler_rewrites()
    # The objects of the imports (TensorFlow, Keras, bert_tf, the test modules) live as
    # long as the process: out of the collector's sight, each full collection during a
    # trace scans a fraction of the heap (about 6-9% less CPU on the training tests).
    gc.collect()
    gc.freeze()


import json  # noqa: E402

import numpy as np  # noqa: E402

# The original BertModelTester's sizes (batch 13, seq 7, vocab 99, hidden 32,
# 4 heads, intermediate 37), with 2 layers.
TINY_CONFIG = {
    "vocab_size": 99, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
    "intermediate_size": 37, "hidden_act": "gelu", "hidden_dropout_prob": 0.1,
    "attention_probs_dropout_prob": 0.1, "max_position_embeddings": 64, "type_vocab_size": 2,
    "initializer_range": 0.2,
}


def make_inputs(batch_size=3, seq_length=9, vocab_size=99, type_vocab_size=2,
                max_predictions=4, seed=0):
    """Random model inputs with ragged padding and pre-training labels."""
    rng = np.random.RandomState(seed)
    lengths = [seq_length] + list(rng.randint(2, seq_length + 1, size=batch_size - 1))
    input_mask = np.array([[1] * n + [0] * (seq_length - n) for n in lengths], np.int32)
    return {
        "input_ids": rng.randint(0, vocab_size, (batch_size, seq_length)).astype(np.int32),
        "input_mask": input_mask,
        "token_type_ids": rng.randint(0, type_vocab_size, (batch_size, seq_length)).astype(np.int32),
        "masked_lm_positions": rng.randint(0, seq_length, (batch_size, max_predictions)).astype(np.int32),
        "masked_lm_ids": rng.randint(0, vocab_size, (batch_size, max_predictions)).astype(np.int32),
        "masked_lm_weights": (rng.rand(batch_size, max_predictions) < 0.7).astype(np.float32),
        "next_sentence_labels": rng.randint(0, 2, (batch_size, 1)).astype(np.int32),
    }


def write_config(path, config_dict):
    with open(path, "w") as f:
        json.dump(config_dict, f)
    return str(path)


@pytest.fixture(autouse=True, scope="module")
def op_determinism_stays_in_its_module():
    """A tool run in the test's process with --seed turns TensorFlow's op determinism on for
    the process (`ScaleOut.create_strategy`); it is turned off again after the module, so
    a later module's Keras `jit_compile` (which determinism disables) is its own."""
    before = "tensorflow" in sys.modules and _op_determinism_enabled()
    yield
    if "tensorflow" in sys.modules and not before and _op_determinism_enabled():
        from tensorflow.python.framework import config as tf_config  # pylint: disable=g-import-not-at-top
        tf_config.disable_op_determinism()


def _op_determinism_enabled():
    from tensorflow.python.framework import config as tf_config  # pylint: disable=g-import-not-at-top
    return tf_config.is_op_determinism_enabled()


@pytest.fixture
def tiny_config():
    from bert_tf import BertConfig
    return BertConfig.from_dict(dict(TINY_CONFIG))


@pytest.fixture(scope="session")
def original_checkpoint(tmp_path_factory):
    """A Google-format checkpoint written by the original code (tf.train.Saver).

    Holds the backbone, the pre-training heads `cls/*`, the Adam slots and
    `global_step`, like a pre-training checkpoint. Returns a dict with
    `config` (json path), `ckpt` (prefix), `inputs` (dict) and `outputs`
    (the original's outputs on `inputs`).
    """
    from tests.original import run_oracle
    d = tmp_path_factory.mktemp("original_ckpt")
    config = write_config(d / "bert_config.json", TINY_CONFIG)
    inputs = make_inputs()
    np.savez(d / "inputs.npz", **inputs)
    ckpt = str(d / "bert_model.ckpt")
    run_oracle("model_oracle", "save", config, d / "inputs.npz", ckpt, d / "outputs.npz", 7,
               "heads", "optimizer")
    return {"config": config, "ckpt": ckpt, "inputs": inputs, "dir": str(d),
            "outputs": dict(np.load(d / "outputs.npz"))}


def _absl_caplog(caplog, level):
    import logging as std_logging
    from absl import logging as absl_logging
    old_verbosity = absl_logging.get_verbosity()
    absl_logging.set_verbosity(getattr(absl_logging, level))
    caplog.set_level(getattr(std_logging, level))
    caplog.set_level(getattr(std_logging, level), logger="absl")
    yield caplog
    absl_logging.set_verbosity(old_verbosity)


@pytest.fixture
def info_logs(caplog):
    """caplog at INFO for absl's logger too (another test may have set its verbosity)."""
    yield from _absl_caplog(caplog, "INFO")


@pytest.fixture
def debug_logs(caplog):
    """caplog at DEBUG (the original's dumps: the first examples, the trainable variables)."""
    yield from _absl_caplog(caplog, "DEBUG")
