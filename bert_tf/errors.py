"""Errors for user mistakes: bad flags, files, configs and checkpoints.

A `UserError` carries a one-line message that names the file, flag, feature or
variable at fault. The tools print it without a traceback and exit non-zero
(see `bert_tf.tools.cli`); library code raises it wherever the cause is the
caller's input rather than a bug.
"""


class UserError(ValueError):
    """A mistake in the user's input; the message is one line and names the culprit."""
