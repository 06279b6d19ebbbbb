#!/usr/bin/env bash
# What `make demo` runs: the main job end to end on bundled defaults, from a
# real English corpus that every Python installation carries
# (pydoc_data.topics) to features extracted from a model pre-trained on it.
#
#   corpus -> vocab.txt -> pre-training TFRecords -> a short pre-training run
#   (Google-format checkpoint + eval_results.txt) -> extract_features JSON lines
#   -> run_classifier fine-tuning on a sentence-pair task made from the same
#   text (MRPC's file layout and flags) -> its eval_results.txt -> a SavedModel
#   for TF Serving (raw text in) that answers a request
#
# Usage: bash tools/demo.sh PYTHON OUTPUT_DIR
set -euo pipefail
PY=${1:-python3}
OUT=${2:-demo_output}
cd "$(dirname "$0")/.."
export KERAS_BACKEND=tensorflow TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}" PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
rm -rf "$OUT"
mkdir -p "$OUT"

step() { printf '\n=== %s\n' "$*"; }

# The last step loads the SavedModel with plain TensorFlow, as TF Serving would (no
# bert_tf, so not the tools' log filter): its start-up lines are hidden the same way,
# unless TF_CPP_MIN_LOG_LEVEL asks for them.
quiet_tf() {
  if [ "$TF_CPP_MIN_LOG_LEVEL" -ge 2 ] 2>/dev/null; then
    grep -vE '^(WARNING: All log messages before absl::InitializeLog|[IW][0-9]{4} [0-9:. ]+ +[0-9]+ [A-Za-z0-9_]+\.cc:[0-9]+\]|E[0-9]{4} .*(cuInit|only on platforms with AVX-512))' >&2 || true
  else
    cat >&2
  fi
}

step "1/7 corpus: Python's own documentation (pydoc_data.topics), one sentence per line"
"$PY" -c "from bert_tf.data.demo_corpus import write_pydoc_corpus as w; print('%d documents, %d sentences' % w('$OUT/corpus.txt'))"

step "2/7 vocab.txt: WordPiece learned from the corpus"
"$PY" tools/build_vocab.py --input_file="$OUT/corpus.txt" --vocab_file="$OUT/vocab.txt" \
  --vocab_size=2000 --lower_thresh=2
echo "$(wc -l < "$OUT/vocab.txt") tokens in $OUT/vocab.txt"

step "3/7 create_pretraining_data (the original's flags and output)"
"$PY" tools/create_pretraining_data.py --input_file="$OUT/corpus.txt" \
  --output_file="$OUT/tf_examples.tfrecord" --vocab_file="$OUT/vocab.txt" \
  --do_lower_case=True --max_seq_length=128 --max_predictions_per_seq=20 \
  --masked_lm_prob=0.15 --random_seed=12345 --dupe_factor=5

step "4/7 run_pretraining: a tiny BERT (2 layers, hidden 128), Google-format checkpoints"
"$PY" -c "from bert_tf.data.demo_corpus import write_demo_config as w; print('$OUT/bert_config.json: vocab_size %d, the tokens of vocab.txt' % w('configs/uncased_L-2_H-128_A-2.json', '$OUT/vocab.txt', '$OUT/bert_config.json'))"
"$PY" tools/run_pretraining.py --input_file="$OUT/tf_examples.tfrecord" \
  --output_dir="$OUT/pretraining_output" --do_train=True --do_eval=True \
  --bert_config_file="$OUT/bert_config.json" --train_batch_size=32 \
  --max_seq_length=128 --max_predictions_per_seq=20 --num_train_steps=400 \
  --num_warmup_steps=40 --learning_rate=2e-4 --save_checkpoints_steps=200 \
  --iterations_per_loop=100 --max_eval_steps=10 --vocab_file="$OUT/vocab.txt" --do_lower_case=True
echo "--- $OUT/pretraining_output/eval_results.txt"
cat "$OUT/pretraining_output/eval_results.txt"

step "5/7 extract_features, show_attention and fill_mask from the pre-trained checkpoint"
cat > "$OUT/input.txt" <<'TXT'
The for statement is used to iterate over the elements of a sequence.
Who writes the loop ? ||| The else clause is executed when the loop terminates.
TXT
"$PY" tools/extract_features.py --input_file="$OUT/input.txt" \
  --output_file="$OUT/features.jsonl" --vocab_file="$OUT/vocab.txt" \
  --bert_config_file="$OUT/bert_config.json" \
  --init_checkpoint="$OUT/pretraining_output/model.ckpt-400" --layers=-1,-2 \
  --max_seq_length=64 --batch_size=8
"$PY" - "$OUT/features.jsonl" <<'PYEOF'
import json, sys
for line in open(sys.argv[1]):
    record = json.loads(line)
    tokens = [f["token"] for f in record["features"]]
    first = record["features"][0]["layers"][0]
    print("line %d: %d tokens: %s" % (record["linex_index"], len(tokens), " ".join(tokens)))
    print("  [CLS] layer %d: [%s, ...] (%d values)" % (
        first["index"], ", ".join("%.6f" % v for v in first["values"][:4]), len(first["values"])))
PYEOF
"$PY" tools/show_attention.py --text_a="The bank by the river was flooded" \
  --output_file="$OUT/attention.html" --vocab_file="$OUT/vocab.txt" \
  --bert_config_file="$OUT/bert_config.json" \
  --init_checkpoint="$OUT/pretraining_output/model.ckpt-400"
echo "--- $OUT/attention.html: every layer's and head's attention, open it in a browser"
# The masked-LM head pre-training trained, at inference: the best words for a [MASK].
# The output directory is the model: its config, vocab and casing are beside the checkpoints.
"$PY" tools/fill_mask.py --text="The for statement is used to [MASK] over a list." \
  --output_file="$OUT/fill_mask.jsonl" --top_k=5 --init_checkpoint="$OUT/pretraining_output"
echo "--- $OUT/fill_mask.jsonl: the five best tokens and their scores (a 2-layer model pre-trained for 400 steps mostly guesses common tokens)"
step "6/7 run_classifier: fine-tune the pre-trained model on a sentence-pair task (MRPC layout)"
"$PY" -c "from bert_tf.data.demo_corpus import write_sentence_pair_task as w; print('examples per file:', w('$OUT/pairs'))"
"$PY" tools/run_classifier.py --task_name=MRPC --do_train=true --do_eval=true \
  --do_predict=true --data_dir="$OUT/pairs" --vocab_file="$OUT/vocab.txt" \
  --bert_config_file="$OUT/bert_config.json" \
  --init_checkpoint="$OUT/pretraining_output/model.ckpt-400" --max_seq_length=64 \
  --train_batch_size=32 --learning_rate=2e-4 --num_train_epochs=3.0 \
  --output_dir="$OUT/classifier_output" --log_steps=75
echo "--- $OUT/classifier_output/eval_results.txt"
cat "$OUT/classifier_output/eval_results.txt"
echo "--- $OUT/classifier_output/test_results.tsv: $(wc -l < "$OUT/classifier_output/test_results.tsv") lines, the first:"
head -1 "$OUT/classifier_output/test_results.tsv"
step "7/7 export_saved_model: the fine-tuned classifier for TF Serving, raw text in"
"$PY" tools/export_saved_model.py --task_name=MRPC --bert_config_file="$OUT/bert_config.json" \
  --vocab_file="$OUT/vocab.txt" --init_checkpoint="$OUT/classifier_output" \
  --max_seq_length=64 --export_dir="$OUT/serving/mrpc" --version=1
# Loaded as TF Serving loads it: plain TensorFlow, no bert_tf, no Keras, no tensorflow-text.
"$PY" - "$OUT/serving/mrpc/1" 2> >(quiet_tf) <<'PYEOF'
import sys
for name in ("bert_tf", "keras", "tensorflow_text"):
    sys.modules[name] = None
import tensorflow as tf
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
pairs = [("The for statement is used to iterate over the elements of a sequence.",
          "The statement is used to iterate over the elements of a sequence."),
         ("The for statement is used to iterate over the elements of a sequence.",
          "Names listed in a global statement must not be defined as formal parameters.")]
out = serve(text_a=tf.constant([a for a, _ in pairs]), text_b=tf.constant([b for _, b in pairs]))
print("(label 1 = sentence 2 rewords sentence 1; a 2-layer model pre-trained for 400 steps errs often)")
for (a, b), label, p in zip(pairs, out["label"].numpy(), out["probabilities"].numpy()):
    print("label %s (p = %.3f): %r / %r" % (label.decode(), p.max(), a, b))
PYEOF
printf '\nDemo done: everything is in %s/\n' "$OUT"
