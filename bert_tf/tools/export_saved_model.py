r"""Exports a BERT checkpoint as a SavedModel for TF Serving that takes raw text.

  bert-export-saved-model \
    --task_name=MRPC --bert_config_file=$BERT_BASE_DIR/bert_config.json \
    --vocab_file=$BERT_BASE_DIR/vocab.txt --do_lower_case=True \
    --init_checkpoint=/tmp/mrpc_output/ --max_seq_length=128 \
    --export_dir=/models/mrpc

(or, from a training run's output_dir, which holds its config, vocab and
bert_tf_run.json: `bert-export-saved-model --init_checkpoint=/tmp/mrpc_output/
--export_dir=/models/mrpc`) writes `/models/mrpc/<version>/` (saved_model.pb,
variables/, assets/vocab.txt; `--version` defaults to the time in seconds), TF
Serving's model base-path layout:

  tensorflow_model_server --rest_api_port=8501 --model_name=mrpc \
    --model_base_path=/models/mrpc

Tasks: every task of run_classifier.py (signatures `serving_default` text_a +
text_b -> probabilities + label, `serve_text_a`, `serve_features`,
`serve_examples`; sts-b returns `score`; with `--doc_stride`, text_a alone, long
texts cut into windows whose logits are averaged per text), `encoder` (pooled_output,
sequence_output, encoder_outputs), `embeddings` (text_a -> one vector per
text, `--pooling`, `--normalize`: what bert-run-embeddings trained; a plain
TensorFlow process serves it), `squad`, `fill_mask` (text with [MASK]s
-> the --top_k best tokens per [MASK], their strings and scores; any
release), `multiple_choice` (context, start and endings -> a probability
per choice and the chosen index; what bert-run-multiple-choice trained) and
`ner` (bert-run-ner's checkpoint and labels.txt: text -> a label per word and
the entities with their character offsets). `--format=tfhub` (task
encoder) writes `<version>/preprocessor/` and `<version>/encoder/` instead;
`--format=onnx` (a classifier task, encoder, embeddings, multiple_choice;
`pip install bert_tf[onnx]`) writes `<version>/model.onnx` (the features
signature: input_ids, input_mask, segment_ids in, the numeric outputs out),
`vocab.txt`, `labels.txt` and `bert_tf_onnx.json` for ONNX Runtime.
The model is rebuilt in float32 whatever precision it was trained in; the
answers equal `run_classifier.py --do_predict`'s for the same text.
`--mixed_precision=bf16` exports one that computes in bfloat16 instead (the
same signatures, float32 outputs; faster where bf16 matmuls are, answers
within bf16's ~3 significant digits of float32's). `--quantize=int8` (a
classifier, encoder or embeddings) writes a LiteRT model with int8 weights
instead: `<version>/model.tflite` (signature serve_features: ids in, the
float32 outputs of the SavedModel's serve_features out), `vocab.txt` and
`export_config.json` (task, max_seq_length, do_lower_case, labels);
`bert_tf.export.quantize.Int8Model` tokenizes and runs it. `--format=onnx
--quantize=int8` writes the ONNX export with model.onnx in int8 instead,
quantized by ONNX Runtime's own dynamic quantization (int8 weights with a
scale per output channel; onnxruntime needed: `pip install bert_tf[onnx]`).

Also `python -m bert_tf.tools.export_saved_model`; in a clone, `python tools/export_saved_model.py`.
"""

import sys

from bert_tf.tools import cli
from bert_tf.tools import flag_groups as groups

FLAGS = (
    groups.string(
        "task_name", None,
        "The task of the checkpoint: a task of run_classifier.py (cola, mnli, mrpc, "
        "xnli, sst-2, qnli, qqp, rte, wnli, sts-b, ...), squad, encoder (the "
        "bare BERT encoder), embeddings (one vector per text: --pooling, --normalize), "
        "fill_mask (the pre-training masked-LM head: the best tokens for each [MASK] "
        "of a text; any release), multiple_choice (bert-run-multiple-choice's), or ner "
        "(a bert-run-ner checkpoint: a label per word and the entities with their "
        "character offsets; --doc_stride windows)."),
    groups.BERT_CONFIG_FILE,
    groups.VOCAB_FILE,
    groups.with_default(groups.with_help(
        groups.DO_LOWER_CASE, groups.DO_LOWER_CASE.help
        + " Default: a training run's, from its output_dir's bert_tf_run.json; else True."),
        None),
    groups.with_help(groups.INIT_CHECKPOINT,
                     "The checkpoint to export: a prefix (model.ckpt-N), or a directory (its "
                     "latest model.ckpt-N, or a Google release directory's bert_model.ckpt). "
                     "A training run's output_dir is the model: its bert_tf_run.json gives "
                     "--task_name, --bert_config_file, --vocab_file, --do_lower_case, "
                     "--max_seq_length, --doc_stride and the labels (flags given must agree "
                     "with it), and its best/ checkpoint with --eval_every_steps."),
    groups.with_default(groups.with_help(
        groups.MAX_SEQ_LENGTH,
        "The maximum total input sequence length after WordPiece tokenization: longer "
        "texts are truncated, shorter ones padded. Default: 128; for "
        "--task_name=embeddings, the length the embedder was saved with "
        "(embedding_config.json, sentence-transformers' files), else 128."), None),
    groups.string("export_dir", None,
                  "The model base path: the SavedModel is written to export_dir/<version>/."),
    groups.integer("version", None,
                   "The version directory's number (TF Serving serves the highest). "
                   "Default: the current time in seconds. An existing version is never "
                   "overwritten."),
    groups.enum("format", "saved_model", ["saved_model", "tfhub", "onnx"],
                "saved_model: TF Serving signatures; tfhub: TF Hub's BERT format "
                "(preprocessor/ and encoder/; task_name=encoder); onnx: the features "
                "signature as model.onnx for ONNX Runtime (ids in: tokenize with "
                "FullTokenizer), with vocab.txt, labels.txt and bert_tf_onnx.json (a "
                "classifier task, encoder, embeddings or multiple_choice; pip install "
                "bert_tf[onnx]); with --quantize=int8, in int8."),
    groups.enum("mixed_precision", None, ["bf16", "fp16"],
                "Export a model that computes in bfloat16 (bf16) or float16 (fp16): "
                "the same signatures, float32 variables and float32 outputs (within "
                "about 1e-2 of float32's probabilities). Default: float32, whatever "
                "precision the checkpoint was trained in. Every task; --format "
                "saved_model and tfhub."),
    groups.enum("quantize", None, ["int8"],
                "int8: export a classifier, encoder or embeddings as a LiteRT model with "
                "int8 weights for CPUs (<version>/model.tflite, vocab.txt, "
                "export_config.json; features in, the tokenizer outside): 2-2.8x as fast "
                "as float32 on a 2-core AVX-512 Xeon (all-MiniLM-L6-v2's size). With "
                "--format=onnx (also multiple_choice): model.onnx in int8 for ONNX Runtime, "
                "quantized by ONNX Runtime's quantize_dynamic (int8 weights, a scale per "
                "output channel), beside the same files as the float32 ONNX export "
                "(onnxruntime needed). Not with --format=tfhub, --mixed_precision or "
                "--doc_stride. Default: none."),
    groups.with_help(groups.TOP_K, "task_name=fill_mask: the best tokens returned per [MASK]."),
    groups.enum("pooling", None, ["cls", "mean", "max"],
                "task_name=embeddings: how a text's token vectors become one (the [CLS] "
                "token, or the mean or max over its real tokens). Default: the checkpoint "
                "directory's embedding_config.json (bert-run-embeddings), else mean."),
    groups.boolean("normalize", None,
                   "task_name=embeddings: whether to L2-normalize the embeddings. Default: "
                   "the checkpoint directory's embedding_config.json, else False."),
    groups.with_help(groups.MULTI_LABEL[0],
                     "A classifier that run_classifier.py trained with --multi_label: the "
                     "signatures return per-label probabilities (sigmoid), `predictions` "
                     "(multi-hot) and `label` (the labels over the threshold, comma-separated)."),
    groups.MULTI_LABEL[1],
    groups.string("data_dir", None,
                  "task_name=multilabel: the data dir whose labels.txt (else train.tsv) gives "
                  "the labels, as run_classifier.py read them."),
    groups.integer("max_text_bytes", 65536,
                   "The text signatures read each text up to this many bytes (cut back to a "
                   "character boundary) before tokenizing: a text within it gets exactly its "
                   "features, a longer one those of its first max_text_bytes bytes; it bounds "
                   "each text's time, memory and (--doc_stride, squad, ner) windows. Not "
                   "applied to --format=tfhub."),
    groups.integer("max_windows", None,
                   "task_name=ner: the most windows of one text the model runs on (each "
                   "--max_seq_length tokens, --doc_stride apart); a text of more sub-tokens "
                   "is answered as its first words that fit in them (num_words says how "
                   "many). It bounds a request's cost at its batch times max_windows "
                   "windows. Default: 64."),
    # SQuAD (task_name=squad): the flags of run_squad.py; --doc_stride for ner and a
    # classifier too.
    groups.with_help(
        groups.CLASSIFIER_DOC_STRIDE,
        groups.DOC_STRIDE.help + " Unset: the training run's (--init_checkpoint a run's "
        "output_dir), else the stride the task trains with: squad 128 (run_squad's), ner 64 "
        "(bert-run-ner's), a classifier none. A classifier task "
        "(single texts): when set, serving_default takes text_a alone, cuts each text "
        "longer than --max_seq_length - 2 tokens into windows that start every "
        "--doc_stride tokens and returns one row per text from the mean of its windows' "
        "logits, as run_classifier.py --doc_stride predicts."),
) + groups.SQUAD_WINDOWS[1:] + groups.SQUAD_ANSWERS

def function():
    """The library function this tool calls (imported when it runs)."""
    from bert_tf.export.saved_model import export_saved_model
    return export_saved_model


TOOL = cli.Tool(__name__, function, FLAGS,
                required=("init_checkpoint", "export_dir"))


def main(argv=None):
    """The command line: `bert-export-saved-model`."""
    return TOOL.main(argv)


if __name__ == "__main__":
    sys.exit(main())
