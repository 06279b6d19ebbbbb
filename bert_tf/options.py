"""Option groups: a dataclass whose fields the tools offer as flags of the same names.

A run that takes a group of options (`bert_tf.training.scale_out.ScaleOut`,
`bert_tf.training.dev_eval.DevEval`, `bert_tf.training.schedule.Schedule`)
takes it as one frozen dataclass. Each
field is declared once, here in the library, with its default and its help
text (`option`); the tools (`bert_tf.tools.flag_groups.options`) turn every
field into an absl flag of the field's name and type, and build the
dataclass back from the parsed values. Adding a field adds the flag to every
tool whose run takes the group. The library itself reads no flags.
"""

import dataclasses


def option(default, help, **flag_kwargs):  # pylint: disable=redefined-builtin
    """A dataclass field that the tools offer as a flag.

    Args:
      default: the default value (None, a bool, int, float or str).
      help: the flag's help text.
      **flag_kwargs: more about the flag: `enum_values` (a list: the flag takes
        one of them), `lower_bound` (an int flag's smallest value).
    """
    return dataclasses.field(default=default, metadata=dict(flag_kwargs, help=help))


def option_fields(group):
    """The fields of an option group (a dataclass or an instance of one), in order."""
    return [field for field in dataclasses.fields(group) if "help" in field.metadata]
