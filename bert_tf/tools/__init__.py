"""The command lines: one module per tool, its --help text, its flags and `main()`.

Each `bert_tf.tools.<name>` holds the original's absl flags (same names,
defaults and help) and makes one call into `bert_tf.runs` or the library.
`pip install` makes them console scripts (`bert-run-classifier`,
`bert-create-pretraining-data`, ...; `bert-<name>` with dashes), and
`python -m bert_tf.tools.<name>` runs the same `main()`. In a clone,
`python tools/<name>.py` runs it on the clone's own bert_tf.

This package imports nothing at import: a tool's flags are defined when its
module is imported, so the tools are imported one at a time, as `__main__`'s.
"""
