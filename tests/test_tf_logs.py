"""bert_tf.tools.tf_logs: a tool's stderr holds bert_tf's progress and errors, not TensorFlow's."""

import logging
import os
import re
import subprocess
import sys

import pytest

from bert_tf.tools import tf_logs
from tests.conftest import TINY_CONFIG, write_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# What TensorFlow 2.21 writes on a CPU-only machine, and what a tool's user must still see.
BEFORE_INIT = (b"WARNING: All log messages before absl::InitializeLog() is called are written "
               b"to STDERR\n")
ONEDNN_ON = (b"I0000 00:00:1796212248.377252   28245 port.cc:153] oneDNN custom operations are "
             b"on. You may see slightly different numerical results.\n")
NO_DRIVER = (b"I0000 00:00:1796212248.378546   28245 cudart_stub.cc:31] Could not find cuda "
             b"drivers on your machine, GPU will not be used.\n")
CUINIT = (b"E0000 00:00:1796212250.628064   28245 cuda_platform.cc:52] failed call to cuInit: "
          b"INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)\n")
ONEDNN_INT64 = (b"E0000 00:00:1796212453.024997   30922 util.cc:131] oneDNN supports DT_INT64 "
                b"only on platforms with AVX-512. Falling back to the default Eigen-based "
                b"implementation if present.\n")
LOOP_OPTIMIZER = (b"W0000 00:00:1796212453.1   30922 loop_optimizer.cc:934] Skipping loop "
                  b"optimization for Merge node with control input: cond/AssertGuard/branch\n")
LATER_INFO = (b"I1202 12:00:10.459134   30922 service.cc:153] XLA service initialized for "
              b"platform Host\n")
DROPPED = [BEFORE_INIT, ONEDNN_ON, NO_DRIVER, CUINIT, ONEDNN_INT64, LOOP_OPTIMIZER, LATER_INFO]

OURS_INFO = (b"I1202 11:59:38.558253 140486258068352 item_progress.py:148] extract_features: "
             b"2/2 examples, 3.05 examples/s, elapsed 1s, done\n")
PY_WARNING = b"W1202 11:59:38.5 140486258068352 extract_features.py:70] --use_tpu: ignored\n"
CPP_ERROR = (b"E0000 00:00:1796212250.628064   28245 op_kernel.cc:1830] OP_REQUIRES failed at "
             b"save_restore_v2_ops.cc:156 : NOT_FOUND: model.ckpt.index\n")
CPP_FATAL = b"F0000 00:00:1796212250.6   28245 logging.cc:1] Check failed: x\n"
TRACEBACK = (b"Traceback (most recent call last):\n"
             b'  File "tools/run_squad.py", line 3, in <module>\n'
             b"ValueError: Infinity\n")
ERROR_LINE = b"error: --init_checkpoint=x: no such checkpoint\n"
KEPT = [OURS_INFO, PY_WARNING, CPP_ERROR, CPP_FATAL, TRACEBACK, ERROR_LINE,
        b"Epoch 1/3\n", b"I\n", b"\n", b"W: a user's own line\n"]


# ------------------------------------------------------------ the line filter


@pytest.mark.parametrize("line", DROPPED)
def test_tensorflows_lines_are_dropped(line):
    lines = tf_logs.LineFilter()
    assert lines.feed(NO_DRIVER + line) == b""


@pytest.mark.parametrize("line", KEPT)
def test_our_lines_python_warnings_and_real_errors_are_kept(line):
    assert tf_logs.LineFilter().feed(line) == line


def test_cuinit_failing_is_kept_where_a_driver_exists_and_gpus_are_asked_for():
    assert tf_logs.LineFilter().feed(CUINIT) == CUINIT
    assert tf_logs.LineFilter(gpus_hidden=True).feed(CUINIT) == b""


def test_a_mixed_stream_in_pieces_of_any_size_keeps_exactly_our_bytes():
    stream = b"".join(DROPPED[:3] + KEPT[:4] + DROPPED[3:] + KEPT[4:])
    expected = b"".join(KEPT)
    for size in (1, 7, 64, len(stream)):
        lines = tf_logs.LineFilter()
        out = b"".join(lines.feed(stream[i:i + size]) for i in range(0, len(stream), size))
        assert out + lines.flush() == expected, size


def test_a_partial_line_passes_at_once_and_a_long_line_whole():
    lines = tf_logs.LineFilter()
    assert lines.feed(b"Downloading 10%") == b"Downloading 10%"  # no newline yet
    assert lines.feed(b"\rDownloading 20%") == b"\rDownloading 20%"
    assert lines.feed(b"\n") == b"\n"
    # Longer than a pipe's buffer (64 KiB), in the pieces a pipe gives.
    long_line = b"x" * 300000 + b"\n"
    out = b"".join(lines.feed(long_line[i:i + 65536]) for i in range(0, len(long_line), 65536))
    assert out == long_line
    long_info = OURS_INFO[:-1] + b" " + b"y" * 300000 + b"\n"
    out = b"".join(lines.feed(long_info[i:i + 65536]) for i in range(0, len(long_info), 65536))
    assert out == long_info
    # A start that could still be a TensorFlow line waits; flush passes it on as it is.
    assert lines.feed(b"I12") == b""
    assert lines.waiting()
    assert lines.flush() == b"I12"
    assert lines.feed(b"34 more\n") == b"34 more\n"


def test_the_filter_on_the_descriptor_loses_nothing_at_exit(tmp_path):
    """A real pipe on fd 2: TensorFlow's lines go, ours (a long one, a partial last line, the
    traceback of an uncaught exception) come out byte for byte."""
    script = tmp_path / "child.py"
    script.write_text(
        "import os, sys\n"
        "from bert_tf.tools import tf_logs\n"
        "tf_logs.StderrFilter()\n"
        "os.write(2, %r)\n"
        "sys.stderr.write('x' * 200000 + '\\n')\n"
        "os.write(2, %r)\n"
        "sys.stderr.write('no newline at the end; ')\n"
        "raise ValueError('the bug')\n" % (BEFORE_INIT + NO_DRIVER + CUINIT, OURS_INFO))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 1
    assert proc.stderr.startswith(b"x" * 200000 + b"\n" + OURS_INFO + b"no newline at the end; ")
    assert proc.stderr.endswith(b"ValueError: the bug\n")
    assert b"cuInit" not in proc.stderr and b"absl::InitializeLog" not in proc.stderr


def test_tensorflows_python_info_records_are_dropped_ours_kept():
    log_filter = tf_logs.PythonLogFilter()

    def record(name, path, level=logging.INFO):
        return logging.LogRecord(name, level, path, 1, "message", None, None)

    # site-packages, where absl (and TensorFlow, Keras) are installed.
    site = os.path.dirname(os.path.dirname(os.path.dirname(tf_logs.absl_logging.__file__)))
    tf_file = os.path.join(site, "tensorflow", "python", "saved_model", "builder_impl.py")
    keras_file = os.path.join(site, "keras", "src", "saving", "saving_lib.py")
    ours = os.path.join(REPO, "bert_tf", "export", "saved_model.py")
    assert not log_filter.filter(record("tensorflow", tf_file))
    assert not log_filter.filter(record("absl", keras_file))
    assert not log_filter.filter(record("absl", tf_file))
    assert log_filter.filter(record("absl", ours))
    assert log_filter.filter(record("tensorflow", tf_file, logging.WARNING))


def test_verbosity_minus_1_keeps_warnings_errors_and_results():
    from absl import logging as absl_logging
    from bert_tf import logs
    ours = os.path.join(REPO, "bert_tf", "training", "output_dir.py")
    progress = logging.LogRecord("absl", logging.INFO, ours, 1, "step 2/2", None, None)
    result = logging.LogRecord("absl", logging.INFO, ours, 1, "  eval_loss = 0.69", None, None)
    setattr(result, logs.RESULT, True)
    warning = logging.LogRecord("absl", logging.WARNING, ours, 1, "careful", None, None)
    quiet = tf_logs.PythonLogFilter(logging.WARNING)
    assert [quiet.filter(r) for r in (progress, result, warning)] == [False, True, True]
    assert [tf_logs.PythonLogFilter().filter(r) for r in (progress, result, warning)] == [
        True, True, True]

    # configure(-1): absl stays at INFO (results are INFO records), the filter decides.
    handler = logging.Handler()
    old_verbosity = absl_logging.get_verbosity()
    try:
        assert tf_logs.configure(-1, environ={"TF_CPP_MIN_LOG_LEVEL": "1"},
                                 absl_handler=handler) is None
        assert absl_logging.get_verbosity() == absl_logging.INFO
        assert [f.level for f in handler.filters] == [logging.WARNING]
        tf_logs.configure(None, environ={"TF_CPP_MIN_LOG_LEVEL": "1"}, absl_handler=handler)
        assert [f.level for f in handler.filters] == [None]
    finally:
        absl_logging.set_verbosity(old_verbosity)


# ------------------------------------------------------------ a tool, as a user runs it


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A tiny config, vocab and checkpoint (bert_tf's), and one input line."""
    from bert_tf import BertConfig, BertModel
    from bert_tf.modeling import checkpoint
    d = tmp_path_factory.mktemp("tf_logs")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "loop", "ends", "."]
    (d / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    config = dict(TINY_CONFIG, vocab_size=len(vocab))
    write_config(d / "bert_config.json", config)
    checkpoint.save_checkpoint(BertModel(BertConfig.from_dict(config)),
                               str(d / "bert_model.ckpt"), update_state=False)
    (d / "input.txt").write_text("the loop ends .\n", encoding="utf-8")
    return d


def _extract_features(d, *extra):
    env = dict(os.environ, PYTHONPATH=REPO, CUDA_VISIBLE_DEVICES="")
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)  # as a user's shell has it
    args = ["--input_file=%s" % (d / "input.txt"), "--output_file=%s" % (d / "out.jsonl"),
            "--vocab_file=%s" % (d / "vocab.txt"), "--bert_config_file=%s" % (d / "bert_config.json"),
            "--init_checkpoint=%s" % (d / "bert_model.ckpt"), "--max_seq_length=8",
            "--batch_size=1"] + list(extra)
    return subprocess.run([sys.executable, os.path.join(REPO, "tools", "extract_features.py")]
                          + args, capture_output=True, text=True, env=env, timeout=300)


_CPP_LINE = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:[\d.]+\s+\d+ [^\s:]+\.(cc|h|cpp):\d+\]", re.M)


def _assert_no_tensorflow_lines(stderr):
    assert "absl::InitializeLog" not in stderr, stderr
    assert _CPP_LINE.search(stderr) is None, stderr
    assert "cuInit" not in stderr and "oneDNN" not in stderr, stderr


@pytest.mark.slow
def test_a_tools_stderr_is_bert_tfs_progress_without_tensorflows_lines(model_dir):
    proc = _extract_features(model_dir, "--layers=-1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    _assert_no_tensorflow_lines(proc.stderr)
    assert re.search(r"extract_features.py:\d+\] Wrote 1 lines to ", proc.stderr), proc.stderr
    assert "extract_features: 1/1 examples" in proc.stderr
    # The first call traces the model: said before it.
    assert (proc.stderr.index("extract_features: tracing the step (its first call builds")
            < proc.stderr.index("extract_features: 1/1 examples")), proc.stderr
    assert "*** Example ***" not in proc.stderr  # the original's dumps: --verbosity=1


@pytest.mark.slow
def test_verbosity_minus_1_prints_the_result_alone(model_dir):
    proc = _extract_features(model_dir, "--layers=-1", "--verbosity=-1")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert re.search(r"extract_features.py:\d+\] Wrote 1 lines to .*out.jsonl$", lines[0]), lines


@pytest.mark.slow
def test_a_user_error_after_tensorflow_loads_is_the_last_line(model_dir):
    proc = _extract_features(model_dir, "--layers=-5")  # checked after TensorFlow loaded
    assert proc.returncode == 2, proc.stderr[-3000:]
    _assert_no_tensorflow_lines(proc.stderr)
    assert proc.stderr.splitlines()[-1].startswith("error: --layers=-5: layer -5 does not exist")


@pytest.mark.slow
def test_verbosity_1_brings_tensorflows_lines_back(model_dir):
    proc = _extract_features(model_dir, "--layers=-5", "--verbosity=1")
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "absl::InitializeLog" in proc.stderr
    assert _CPP_LINE.search(proc.stderr) is not None, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("error: --layers=-5: layer -5 does not exist")


@pytest.mark.parametrize("given, want", [(None, "2"), ("0", "0")])
def test_importing_bert_tf_turns_tensorflows_cpp_warnings_off_unless_asked(given, want):
    """A Python program gets TF_CPP_MIN_LOG_LEVEL=2 by default; a user's own value stays."""
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    if given is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = given
    result = subprocess.run(
        [sys.executable, "-c", "import os, sys, bert_tf; "
         "print(os.environ['TF_CPP_MIN_LOG_LEVEL'], 'tensorflow' in sys.modules)"],
        env=env, capture_output=True, text=True, timeout=60)
    assert result.stdout.split() == [want, "False"], result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("given", [None, "2", "0"])
def test_a_program_that_imports_bert_tf_sees_no_tensorflow_start_up_lines(given):
    """TensorFlow starts in `bert_tf._backend` through the tools' line filter: no start-up
    notes, no "no CUDA driver" line, no cuInit failure on a machine without a GPU; the
    program's own stderr passes, and TF_CPP_MIN_LOG_LEVEL=0 brings TensorFlow's lines back."""
    env = dict(os.environ, PYTHONPATH=REPO)
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)
    env.pop("CUDA_VISIBLE_DEVICES", None)  # as a user's machine: cuInit tried, and failed
    if given is not None:
        env["TF_CPP_MIN_LOG_LEVEL"] = given
    result = subprocess.run(
        [sys.executable, "-c", "import sys, threading, bert_tf\n"
         "config = bert_tf.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=1, "
         "num_attention_heads=4, intermediate_size=37)\n"
         "model = bert_tf.BertModel(config)\n"
         "import numpy as np\n"
         "print(tuple(model(np.array([[5, 6, 7]]))['pooled_output'].shape))\n"
         "print([t.name for t in threading.enumerate()])\n"
         "sys.stderr.write('ours\\n')\n"],
        env=env, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["(1, 32)", "['MainThread']"]  # the filter is gone
    if given == "0":
        assert "absl::InitializeLog" in result.stderr, result.stderr
        return
    assert result.stderr == "ours\n"
