r"""Sentence embeddings: fine-tune BERT on pairs with in-batch negatives, embed a text file (new).

  bert-run-embeddings --do_train=true --train_file=pairs.tsv \
    --init_checkpoint=$BERT_BASE_DIR --pooling=mean --normalize=true \
    --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 \
    --num_train_epochs=1.0 --output_dir=embedder/

  bert-run-embeddings --do_encode=true --init_checkpoint=embedder/ \
    --input_file=sentences.txt --output_file=sentences.npy

--train_file holds one pair a line, `anchor<TAB>positive` (a question and
its answer, a sentence and its paraphrase). Each anchor learns to pick its
own positive among all the positives of its batch (sentence-transformers'
MultipleNegativesRankingLoss: cross-entropy over 20 x the cosines), so a
larger --train_batch_size gives more negatives; two pairs with the same
positive in one batch count as wrong answers. --output_dir gets a
Google-format directory (bert_config.json, vocab.txt, bert_model.ckpt.*)
and embedding_config.json (pooling, normalize, max_seq_length), which
`bert_tf.from_pretrained(output_dir, head="embeddings")` and --do_encode read
back.

--do_encode writes the embedding of each line of --input_file, in order, as
a float32 NumPy array [lines, hidden_size] (`numpy.load`). Texts longer than
--max_seq_length - 2 WordPiece tokens are truncated.

--init_checkpoint is any model `from_pretrained` reads: a release directory
or name, a checkpoint prefix, a run's output_dir, a Hugging Face BERT
directory (all-MiniLM-L6-v2: --pooling=mean --normalize=true).

Also `python -m bert_tf.tools.run_embeddings`; in a clone,
`python tools/run_embeddings.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

_POOLINGS = ["cls", "mean", "max"]

FLAGS = (
    groups.with_help(groups.BERT_CONFIG_FILE,
                     "The config json file of the model, when it is not beside "
                     "--init_checkpoint."),
    groups.with_help(groups.VOCAB_FILE, "The model's vocab.txt, when it is not beside "
                                        "--init_checkpoint."),
    groups.with_help(groups.INIT_CHECKPOINT,
                     "The model to start from (a release directory or name, a checkpoint, an "
                     "output_dir, a Hugging Face BERT directory) or, with only --do_encode, "
                     "to encode with."),
    groups.with_default(groups.with_help(
        groups.DO_LOWER_CASE, "Whether to lower case the input text. Default: what the model "
                              "says (a release's name, tokenizer_config.json), else True."),
        None),
    groups.string("train_file", None, "Pairs to train on: anchor<TAB>positive, one a line."),
    groups.string("input_file", None, "Texts to encode (--do_encode), one a line."),
    groups.string("output_file", None,
                  "The .npy --do_encode writes: float32 [lines, hidden_size]."),
    groups.with_help(groups.OUTPUT_DIR,
                     "The directory of the fine-tuned embedder (--do_train); it must not "
                     "exist or be empty, unless --overwrite."),
    groups.DO_TRAIN,
    groups.boolean("do_encode", False, "Whether to write the embeddings of --input_file."),
    groups.with_default(groups.with_help(
        groups.MAX_SEQ_LENGTH,
        "The maximum total input sequence length after WordPiece tokenization. Longer texts "
        "are truncated. Default: the model's embedding_config.json, else 128."), None),
    groups.enum("pooling", None, _POOLINGS,
                "How a text's token vectors become one: cls (the [CLS] token), mean or max "
                "over the real tokens. Default: the model's embedding_config.json, else mean."),
    groups.boolean("normalize", None,
                   "Whether to L2-normalize the embeddings. Default: the model's "
                   "embedding_config.json, else False."),
    groups.TRAIN_BATCH_SIZE,
    groups.with_default(groups.with_help(groups.PREDICT_BATCH_SIZE,
                                         "Texts per batch for --do_encode."), 32),
    groups.with_default(groups.LEARNING_RATE, 2e-5),
    groups.with_default(groups.NUM_TRAIN_EPOCHS, 1.0),
    groups.WARMUP_PROPORTION,
    groups.boolean("overwrite", False, "Replace a non-empty --output_dir."),
)


def read_files_first(values, positional):
    """The pairs and texts the run reads, read before TensorFlow loads: a bad file is one
    line at once, not after TensorFlow's start (run_embeddings reads them again)."""
    from bert_tf.tasks.embeddings import data as embedding_data
    embedding_data.read_inputs(values["do_train"], values["train_file"], values["do_encode"],
                               values["input_file"])
    return positional


def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.tasks.embeddings.run import run_embeddings
    return run_embeddings


TOOL = cli.Tool(__name__, function, FLAGS, required=("init_checkpoint",),
                prepare=read_files_first)


def main(argv=None):
    """The command line: `bert-run-embeddings`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
