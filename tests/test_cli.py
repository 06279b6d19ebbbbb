"""bert_tf.tools.cli: a tool's flags, the call derived from them, and the command line's answers.

* The call: each flag is the keyword argument of its name; an option group
  (`ScaleOut`, `DevEval`, `Schedule`) is built from the flags of its fields,
  on the argument's default group (a tool may give a field its own default,
  and the argument's group then holds it; a field without a flag keeps the
  group's value); a flag the original accepts and that does nothing here
  warns when given and reaches no argument.
* Mistakes in the flags (unknown, missing, unparsable, a stray argument) are
  a `UserError` (one line) from `Tool.run`, and from the command line one
  `error: ...` line and exit status 2 (absl printed `FATAL Flags parsing
  error` and usage, and exited 1).
* Two tools in one process, one after the other: each parses into its own
  flags (absl's global FLAGS would refuse the second definition of a name).
"""

import dataclasses
import os
import subprocess
import sys

import pytest

from bert_tf.errors import UserError
from bert_tf.options import option
from bert_tf.tools import cli
from bert_tf.tools import flag_groups

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@dataclasses.dataclass(frozen=True)
class _Group(object):
    size: int = option(3, "A size.", lower_bound=1)
    mode: str = option("a", "A mode.", enum_values=["a", "b"])


def _function(name, count=2, group=_Group()):
    return {"name": name, "count": count, "group": group}


FLAGS = (flag_groups.string("name", None, "A name."),
         flag_groups.integer("count", 2, "A count."),
         flag_groups.string("old", None, "Accepted, ignored.", ignored="--old is ignored here"),
         ) + flag_groups.options(_Group)
TOOL = cli.Tool(__name__, lambda: _function, FLAGS, required=("name",))


def test_the_call_is_derived_from_the_flags(caplog):
    result = TOOL.run(["tool", "--name=x", "--count=5", "--size=7", "--mode=b"])
    assert result == {"name": "x", "count": 5, "group": _Group(size=7, mode="b")}
    assert TOOL.run(["tool", "--name=y"])["group"] == _Group()
    caplog.clear()
    assert TOOL.run(["tool", "--name=x", "--old=1"])["name"] == "x"
    assert "--old is ignored here" in caplog.text
    assert TOOL.check() == []


def test_check_finds_what_does_not_match():
    def function(name, count=3, other=None, required_without_flag=None):  # noqa: ARG001
        return None

    def required(name, needs_a_flag):  # noqa: ARG001
        return None
    assert cli.Tool(__name__, lambda: function, FLAGS).check() == [
        "--count defaults to 2, argument count to 3", "--size reaches no argument",
        "--mode reaches no argument"]
    assert cli.Tool(__name__, lambda: required, FLAGS).check() == [
        "argument needs_a_flag has no flag", "--count reaches no argument",
        "--size reaches no argument", "--mode reaches no argument"]


def test_a_group_argument_with_its_own_defaults_is_built_on_them():
    own = _Group(size=5, mode="b")

    def function(name, group=own):
        return group
    # A tool's default for a field (size) and a field it has no flag for (mode).
    flags = (FLAGS[0], flag_groups.with_default(flag_groups.options(_Group)[0], 5))
    tool = cli.Tool(__name__, lambda: function, flags)
    assert tool.check() == []
    assert tool.run(["tool", "--name=x"]) == own
    assert tool.run(["tool", "--name=x", "--size=9"]) == _Group(size=9, mode="b")
    # The group's default for a field is not the flag's: found.
    assert cli.Tool(__name__, lambda: function, FLAGS[:1] + flag_groups.options(_Group)).check() \
        == ["--size defaults to 3, argument group.size to 5",
            "--mode defaults to 'a', argument group.mode to 'b'"]


def test_the_schedule_flags_are_the_originals():
    """Each field of `Schedule` is the original run_classifier.py's flag: its name, default and
    help; the fine-tuning tools that take the group offer every field."""
    from bert_tf.training.schedule import Schedule
    by_name = {flag.name: flag for flag in flag_groups.options(Schedule)}
    assert {name: (flag.kind, flag.default) for name, flag in by_name.items()} == {
        "train_batch_size": ("integer", 32), "eval_batch_size": ("integer", 8),
        "predict_batch_size": ("integer", 8), "learning_rate": ("float", 5e-5),
        "num_train_epochs": ("float", 3.0), "warmup_proportion": ("float", 0.1),
        "save_checkpoints_steps": ("integer", 1000), "iterations_per_loop": ("integer", 1000)}
    assert by_name["learning_rate"].help == "The initial learning rate for Adam."
    assert set(flag_groups.SCHEDULE) <= set(flag_groups.FINETUNING)


@pytest.mark.parametrize("argv, message", [
    (["--count=2"], "--name is required"),
    (["--name="], "--name is required"),
    (["--name=x", "--nmae=y"], "Unknown command line flag 'nmae'"),
    (["--name=x", "--count=two"], "flag --count=two: invalid literal for int()"),
    (["--name=x", "--size=0"], "flag --size=0: 0 is not a positive integer"),
    (["--name=x", "--mode=c"], "flag --mode=c: value should be one of <a|b>"),
    (["--name=x", "stray"], "Too many command-line arguments: stray"),
])
def test_flag_mistakes_are_one_line_user_errors(argv, message):
    with pytest.raises(UserError) as error:
        TOOL.run(["tool"] + argv)
    assert str(error.value).startswith(message) and "\n" not in str(error.value)


def test_a_tool_defines_a_flag_once():
    with pytest.raises(ValueError, match="defines --name twice"):
        cli.Tool(__name__, lambda: _function, FLAGS + (flag_groups.string("name", "", ""),))
    with pytest.raises(ValueError, match="requires flags it does not define"):
        cli.Tool(__name__, lambda: _function, FLAGS, required=("nope",))


def test_two_tools_run_in_one_process_with_flags_of_one_name():
    from bert_tf.tools import build_vocab
    from bert_tf.tools import run_classifier
    # Both define --vocab_file and --do_lower_case; each parses its own.
    for tool in (run_classifier, build_vocab, run_classifier):
        values, _, _ = tool.TOOL.parse(["t", "--vocab_file=v.txt", "--bert_config_file=c",
                                        "--task_name=t", "--data_dir=d", "--output_dir=o"]
                                       if tool is run_classifier else
                                       ["t", "--vocab_file=v.txt", "--input_file=x"])
        assert values["vocab_file"] == "v.txt"


def test_help_lists_the_tools_flags_and_absl_logging_ones_with_helpfull():
    from bert_tf.tools import run_squad
    from bert_tf.tools import tf_logs
    text = run_squad.TOOL.help_text()
    assert text.startswith(run_squad.__doc__.strip().splitlines()[0])
    assert "\n  --eval_every_steps:" in text and "\n  --max_seq_length:" in text
    assert "(default: '384')" in text and "--verbosity: Logging verbosity" not in text
    assert "--verbosity: Logging verbosity" in run_squad.TOOL.help_text(full=True)
    # What each log level shows, at the end of every tool's --help.
    assert text.endswith(tf_logs.LEVELS + "\n")
    assert "  -1: warnings, errors and the results" in text and "   1: also the original's" in text


def test_the_command_line_prints_one_error_line_and_exits_2():
    """A flag mistake, for real: `error: ...`, exit 2, no traceback, no absl FATAL lines."""
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tools", "run_classifier.py"),
                           "--task_name=MRPC", "--data_dir=d", "--vocab_file=v",
                           "--bert_config_file=c", "--output_dir=o", "--max_seq_length=abc"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr == ("error: flag --max_seq_length=abc: invalid literal for int() with "
                           "base 10: 'abc'\n")
    proc = subprocess.run([sys.executable, os.path.join(REPO_ROOT, "tools", "build_vocab.py"),
                           "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "--vocab_size" in proc.stdout and proc.stderr == ""


@pytest.mark.parametrize("tool, flags, error", [
    ("run_squad", ["--do_train", "--train_file={tmp}/train-v1.1.json"],
     "error: --train_file={tmp}/train-v1.1.json: no such file"),
    ("run_squad", ["--do_predict", "--predict_file={tmp}/dev-v1.1.json"],
     "error: --predict_file={tmp}/dev-v1.1.json: no such file"),
    ("run_multiple_choice", ["--do_train", "--do_eval", "--data_dir={tmp}"],
     "error: --data_dir={tmp}: no val.csv or dev.csv (the multiple-choice task reads "
     "train.csv, val.csv or dev.csv, and test.csv)"),
    ("run_pretraining", ["--do_train", "--input_file={tmp}/train.csv,{tmp}/*.tfrecord"],
     "error: --input_file: '{tmp}/*.tfrecord' matches no file"),
    ("run_mlm", ["--do_train", "--input_file={tmp}/train.csv", "--do_eval",
                 "--eval_file={tmp}/held_out*.txt"],
     "error: --eval_file: '{tmp}/held_out*.txt' matches no file"),
])
def test_a_missing_input_file_is_one_line_before_tensorflow_loads(tmp_path, tool, flags, error):
    """The training tools check their input files exist before they import the run (and
    TensorFlow with it): a missing one is one line in a fraction of a second, nothing made."""
    (tmp_path / "train.csv").write_text("")  # the multiple-choice run's train split is there
    code = ("import sys, importlib\ntool = importlib.import_module('bert_tf.tools.' + sys.argv[1])\n"
            "rc = tool.main([sys.argv[1]] + sys.argv[2:])\n"
            "print(rc, 'tensorflow' in sys.modules)\n")
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2")
    # --verbosity=1: no stderr filter, so main returns its status (TensorFlow not loaded).
    result = subprocess.run(
        [sys.executable, "-c", code, tool, "--verbosity=1", "--vocab_file=vocab.txt",
         "--bert_config_file=bert_config.json", "--output_dir=%s" % (tmp_path / "out")]
        + [flag.format(tmp=tmp_path) for flag in flags],
        cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert result.stdout.split() == ["2", "False"], (result.stdout, result.stderr[-3000:])
    assert result.stderr.splitlines()[-1] == error.format(tmp=tmp_path)
    assert not (tmp_path / "out").exists()
