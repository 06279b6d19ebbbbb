"""The tools' runner: their flags parsed, one call into the library, one line per mistake.

A tool is a module of `bert_tf.tools`: its docstring (its `--help`), the
flags it takes (`bert_tf.tools.flag_groups`) and the library function it
calls, declared as one `Tool`:

  def function():
      from bert_tf.tasks.classifier.run import run_classifier
      return run_classifier

  TOOL = cli.Tool(__name__, function, flag_groups.MODEL + flag_groups.CLASSIFIER,
                  required=("vocab_file", "bert_config_file") + flag_groups.CLASSIFIER_REQUIRED)

The call is derived, not written out: each keyword argument of the function
gets the flag of its name; an argument whose default is an option group
(`bert_tf.options`: `ScaleOut`, `DevEval`, `Schedule`) gets the group built
from the flags of its fields (a field the tool has no flag for keeps the
default group's value). `Tool.check` says which flags reach no argument, or
default to another value than theirs (a test holds every tool to none).

Each tool parses into its own `absl.flags.FlagValues` (absl's logging flags,
`--verbosity` / `-v` among them, are shared), so a process may run any
number of tools, one after another (`Tool.run(argv)` returns the function's
result and raises `UserError`, for tests and programs). `Tool.main(argv)` is
the command line:

  * `--help` (`-?`, `--helpshort`) prints the docstring, the tool's flags
    and what each `--verbosity` shows, `--helpfull` absl's logging flags
    too; exit 0.
  * A flag absl cannot parse, a missing required flag, an unknown flag, a
    stray argument or a `UserError` from the library: `error: <one line>`,
    exit 2, no traceback.
  * A preemption notice while training (SIGTERM, a first Ctrl-C;
    `bert_tf.training.preemption`): the trainer has written its checkpoint;
    exit 75. A second Ctrl-C: exit 130. A lost worker of a multi-worker
    job: one line, exit 69.
  * Before the call (and so before TensorFlow loads) the logs are set up
    (`bert_tf.tools.tf_logs`): the settings, progress and results without
    TensorFlow's internals; `--verbosity=1` adds the original's dumps of the
    first examples and the trainable variables, and TensorFlow's lines;
    `--verbosity=-1` keeps warnings, errors and the results.

This module imports no TensorFlow.
"""

import dataclasses
import inspect
import os
import sys

from absl import flags
from absl import logging

from bert_tf.errors import UserError
from bert_tf.tools import tf_logs

_HELP_FLAGS = ("-?", "--help", "--helpshort", "--helpfull", "--helpxml")
# absl's Python logging flags: every tool takes them (`--verbosity=1`, `-v 1`, ...).
_LOGGING_MODULE = "absl.logging"
# The key of a tool's own flags in its FlagValues (whatever `__name__` the tool runs as).
_TOOL_FLAGS = "tool"
_DEFINE = {
    "string": flags.DEFINE_string,
    "integer": flags.DEFINE_integer,
    "float": flags.DEFINE_float,
    "bool": flags.DEFINE_bool,
}


class Tool(object):
    """One command line: its flags and the library function it calls.

    Args:
      module: the tool's module name (`__name__`): its docstring is `--help`'s text.
      function: `fn()` that imports and returns the library function the tool
        calls (imported when the tool runs, so `--help` and a mistake in
        the flags load no TensorFlow).
      flag_list: the `flag_groups.Flag`s the tool takes (names unique).
      required: names of flags that must be given.
      positional: None (the tool takes no positional argument) or the name
        of the function's argument that receives the list of them.
      report: `fn(result, values)`, called with the function's result (print
        what a user reads on stdout).
      argv_rewrite: `fn(argv) -> argv`, before parsing (other spellings).
      prepare: `fn(values, positional) -> positional`, after parsing and
        before the call (checks beyond one flag's; may raise `UserError`).
    """

    def __init__(self, module, function, flag_list, required=(), positional=None, report=None,
                 argv_rewrite=None, prepare=None):
        self.module = module
        self._function = function
        self.flags = tuple(flag_list)
        names = [flag.name for flag in self.flags]
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError("%s defines --%s twice" % (module, ", --".join(duplicates)))
        unknown = sorted(set(required) - set(names))
        if unknown:
            raise ValueError("%s requires flags it does not define: %s" % (module, unknown))
        self.required = tuple(required)
        self.positional = positional
        self.report = report
        self.argv_rewrite = argv_rewrite
        self.prepare = prepare

    # ---------------------------------------------------------------- flags

    def flag_values(self):
        """A new `absl.flags.FlagValues` with the tool's flags and absl's logging flags."""
        flag_values = flags.FlagValues()
        for flag in self.flags:
            kwargs = {"flag_values": flag_values, "module_name": _TOOL_FLAGS}
            if flag.kind == "enum":
                flags.DEFINE_enum(flag.name, flag.default, list(flag.enum_values), flag.help,
                                  **kwargs)
                continue
            if flag.lower_bound is not None:
                kwargs["lower_bound"] = flag.lower_bound
            _DEFINE[flag.kind](flag.name, flag.default, flag.help, **kwargs)
        for flag in flags.FLAGS.flags_by_module_dict().get(_LOGGING_MODULE, ()):
            if flag.name not in flag_values:
                flag_values[flag.name] = flag
                flag_values.register_flag_by_module(_LOGGING_MODULE, flag)
        return flag_values

    def help_text(self, full=False):
        """`--help`'s text: the docstring, the flags, the log levels (`full`: absl's logging
        flags too)."""
        flag_values = self.flag_values()
        doc = (sys.modules[self.module].__doc__ or "").strip()
        text = [doc, "", "flags:", flag_values.module_help(_TOOL_FLAGS).split("\n", 2)[-1],
                "", tf_logs.LEVELS]
        if full:
            text += ["", flag_values.module_help(_LOGGING_MODULE)]
        return "\n".join(text).rstrip() + "\n"

    def parse(self, argv):
        """(`{flag name: value}`, positional arguments, `{flag name: given}`) of `argv`.

        Raises:
          UserError: a flag absl cannot parse, an unknown or missing flag, a
            positional argument the tool does not take.
        """
        flag_values = self.flag_values()
        try:
            rest = flag_values(list(argv))
        except flags.Error as e:
            raise UserError(str(e).splitlines()[0]) from None
        missing = [name for name in self.required if flag_values[name].value in (None, "")]
        if missing:
            raise UserError("--%s is required" % missing[0])
        values = {flag.name: flag_values[flag.name].value for flag in self.flags}
        present = {flag.name: bool(flag_values[flag.name].present) for flag in self.flags}
        positional = rest[1:]
        if positional and self.positional is None:
            raise UserError("Too many command-line arguments: %s" % " ".join(positional))
        return values, positional, present

    # ---------------------------------------------------------------- the call

    def function(self):
        """The library function the tool calls."""
        return self._function()

    def call_arguments(self, values, positional=()):
        """The function's keyword arguments from the flags' values (see the module docstring)."""
        arguments = {}
        for parameter in inspect.signature(self.function()).parameters.values():
            name = parameter.name
            if name == self.positional:
                arguments[name] = list(positional)
            elif name in values and not self._ignored(name):
                arguments[name] = values[name]
            elif dataclasses.is_dataclass(parameter.default):
                # The argument's default group, with the fields the tool has flags for.
                arguments[name] = dataclasses.replace(
                    parameter.default, **{field.name: values[field.name]
                                          for field in dataclasses.fields(parameter.default)
                                          if field.name in values})
        return arguments

    def _ignored(self, name):
        return any(flag.name == name and flag.ignored for flag in self.flags)

    def check(self):
        """What does not match between the flags and the function (a list; [] is right).

        A flag that reaches no argument, an argument without a default that
        no flag gives, and a flag whose default is not the argument's (for
        a field of an option group: not the field's in the argument's
        default group).
        """
        used = set()
        problems = []
        by_name = {flag.name: flag for flag in self.flags}
        for parameter in inspect.signature(self.function()).parameters.values():
            if parameter.name == self.positional:
                continue
            if dataclasses.is_dataclass(parameter.default):
                for field in dataclasses.fields(parameter.default):
                    used.add(field.name)
                    value = getattr(parameter.default, field.name)
                    if field.name in by_name and by_name[field.name].default != value:
                        problems.append("--%s defaults to %r, argument %s.%s to %r" % (
                            field.name, by_name[field.name].default, parameter.name,
                            field.name, value))
            elif parameter.name in by_name:
                used.add(parameter.name)
                default = by_name[parameter.name].default
                if parameter.default is not inspect.Parameter.empty and (
                        parameter.default != default):
                    problems.append("--%s defaults to %r, argument %s to %r" % (
                        parameter.name, default, parameter.name, parameter.default))
            elif parameter.default is inspect.Parameter.empty:
                problems.append("argument %s has no flag" % parameter.name)
        problems += ["--%s reaches no argument" % flag.name for flag in self.flags
                     if flag.name not in used and not flag.ignored]
        return problems

    def run(self, argv):
        """Parses `argv` (argv[0] is the program) and calls the function: its result.

        Raises:
          UserError: a mistake in the flags or the inputs (one line).
        """
        if self.argv_rewrite is not None:
            argv = self.argv_rewrite(list(argv))
        return self._call(*self.parse(argv))

    def _call(self, values, positional, present):
        for flag in self.flags:
            if flag.ignored and present[flag.name]:
                logging.warning("%s", flag.ignored)
        if self.prepare is not None:
            positional = self.prepare(values, positional)
        result = self.function()(**self.call_arguments(values, positional))
        if self.report is not None:
            self.report(result, values)
        return result

    # ---------------------------------------------------------------- the command line

    def main(self, argv=None):
        """A process's command line (`bert-<tool>`, `python -m bert_tf.tools.<tool>`).

        Returns the exit status (0, or 2 for a mistake in the flags); after
        TensorFlow has loaded, a failure ends the process at once with its
        status (`os._exit`: none of TensorFlow's exit-time noise). Programs
        and tests call `run`.
        """
        argv = list(sys.argv if argv is None else argv)
        if self.argv_rewrite is not None:
            argv = self.argv_rewrite(argv)
        asked = _asks_for_help(argv[1:])
        if asked:
            sys.stdout.write(self.help_text(full=asked == "--helpfull"))
            sys.stdout.flush()
            return 0
        logging.use_absl_handler()
        try:
            parsed = self.parse(argv)
        except UserError as e:
            return _fail(e, None)
        flags.FLAGS.mark_as_parsed()  # absl's logging reads its flags through FLAGS
        verbosity = flags.FLAGS["verbosity"]
        stderr_filter = tf_logs.configure(verbosity.value if verbosity.present else None)
        try:
            self._call(*parsed)
        except UserError as e:
            return _fail(e, stderr_filter)
        except (SystemExit, KeyboardInterrupt) as e:
            return _stopped(e, stderr_filter)
        except Exception as e:  # pylint: disable=broad-except
            return _lost_worker(e, stderr_filter)
        return 0


def _asks_for_help(args):
    """The help flag in `args` (those before a `--`), or None."""
    for arg in args:
        if arg == "--":
            return None
        name, _, value = arg.partition("=")
        if name in _HELP_FLAGS and value.lower() not in ("false", "f", "0"):
            return name
    return None


def _fail(error, stderr_filter):
    """A `UserError`: `error: <its first line>`, exit 2 (at once: no TensorFlow atexit noise)."""
    message = str(error).splitlines()[0] if str(error) else type(error).__name__
    if stderr_filter is not None:
        stderr_filter.close()  # what TensorFlow wrote first, then the error line
    sys.stderr.write("error: %s\n" % message)
    sys.stderr.flush()
    if stderr_filter is None and "tensorflow" not in sys.modules:
        return 2
    os._exit(2)  # pylint: disable=protected-access


def _stopped(error, stderr_filter):
    """A preemption notice (exit 75) or a second Ctrl-C (130) while training; else re-raised."""
    preemption = sys.modules.get("bert_tf.training.preemption")
    if preemption is None:
        raise error
    if isinstance(error, preemption.Preempted):
        status = preemption.PREEMPTED_EXIT_STATUS
    elif isinstance(error, KeyboardInterrupt):
        status = preemption.INTERRUPTED_EXIT_STATUS
    else:
        raise error
    if stderr_filter is not None:
        stderr_filter.close()
    if status == preemption.INTERRUPTED_EXIT_STATUS:
        sys.stderr.write("interrupted (SIGINT): stopped without a checkpoint\n")
    sys.stderr.flush()
    os._exit(status)  # pylint: disable=protected-access


def _lost_worker(error, stderr_filter):
    """A lost worker of a multi-worker job (TF_CONFIG): one line, exit 69; else re-raised."""
    lost_worker = sys.modules.get("bert_tf.training.lost_worker")
    lost = lost_worker and lost_worker.as_lost_worker(
        error, *lost_worker.cluster_of(tf_config=os.environ.get("TF_CONFIG")))
    if not lost:
        raise error
    if stderr_filter is not None:
        stderr_filter.close()
    sys.stderr.write("error: %s\n" % lost)
    sys.stderr.flush()
    os._exit(lost_worker.EXIT_STATUS)  # at once: TensorFlow's exit would wait for it
