r"""Convert a BERT between Google's checkpoint format and a Hugging Face directory (new).

  bert-convert-checkpoint --from=google --to=huggingface \
    --input=$BERT_BASE_DIR --output_dir=bert_hf

  bert-convert-checkpoint --from=huggingface --to=google \
    --input=bert_hf --output_dir=bert_google

Google's format: `bert_config.json`, `vocab.txt`, `bert_model.ckpt.*` (a
release directory, a checkpoint prefix or a run's output_dir as --input; a
release's name too). Hugging Face's: `config.json`, `model.safetensors` (or
its shards), `vocab.txt`, `tokenizer_config.json`. The backbone and its head
(pre-training, classifier or SQuAD) are converted bit for bit, by the name map
of `bert_tf.modeling.huggingface`; a missing or unexpected tensor is one
line naming it, and nothing is written then. A `pytorch_model.bin` is never
unpickled: convert it to safetensors in transformers first.

Also `python -m bert_tf.tools.convert_checkpoint`; in a clone,
`python tools/convert_checkpoint.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

_FORMATS = ["google", "huggingface"]
# `--from` is a Python keyword: the flags are --from_format / --to_format, and
# --from / --to are their spellings on the command line.
_SPELLINGS = {"--from": "--from_format", "--to": "--to_format"}

FLAGS = (
    groups.enum("from_format", None, _FORMATS, "The input's format (spelled --from too)."),
    groups.enum("to_format", None, _FORMATS, "The output's format (spelled --to too)."),
    groups.string("input", None,
                  "The model to convert: a Google release directory, checkpoint prefix, "
                  "output_dir or release name (--from=google), or a Hugging Face BERT "
                  "directory (--from=huggingface)."),
    groups.string("output_dir", None,
                  "The directory to write (it must not exist or be empty, unless "
                  "--overwrite)."),
    groups.with_help(groups.BERT_CONFIG_FILE,
                     "The input's config, when it is not beside the input "
                     "(bert_config.json, or a Hugging Face config.json)."),
    groups.with_help(groups.VOCAB_FILE, "The input's vocab.txt, when it is not beside it."),
    groups.boolean("do_lower_case", None,
                   "The casing written to tokenizer_config.json. Default: the input's "
                   "tokenizer_config.json, else True."),
    groups.boolean("overwrite", False, "Replace a non-empty --output_dir."),
)


def spellings(argv):
    """`--from=X` / `--to=X` (and `--from X`) as the flags' names."""
    out = []
    for arg in argv:
        name, eq, value = arg.partition("=")
        out.append(_SPELLINGS[name] + eq + value if name in _SPELLINGS else arg)
    return out


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.runs.convert_checkpoint import convert_checkpoint
    return convert_checkpoint


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("from_format", "to_format", "input", "output_dir"),
                argv_rewrite=spellings)


def main(argv=None):
    """The command line: `bert-convert-checkpoint`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
