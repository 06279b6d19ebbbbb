"""A TF Hub BERT encoder written by TF Model Garden's exporter, from a Google-format checkpoint.

Runs in the peers' own virtual environment (`bench/setup_peers.sh` makes
bench/.peers: tf-models-official beside the project's TensorFlow), never in
the project's:

  TF_USE_LEGACY_KERAS=1 bench/.peers/bin/python tests/model_garden_export_tfhub.py \
      --bert_config_file=bert_config.json --init_checkpoint=bert_model.ckpt \
      --vocab_file=vocab.txt --do_lower_case=true --export_path=out/encoder

The two steps of Model Garden's own recipe for a Google checkpoint
(official/nlp/docs/tfhub.md): `tf2_bert_encoder_checkpoint_converter`
turns the TF1 checkpoint into an object-based one for its `BertEncoder`, and
`export_tfhub_lib.export_model` writes the encoder SavedModel (`vocab_file`
asset and `do_lower_case` variable included), as `export_tfhub
--export_type=model` does.
"""

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")

import tensorflow as tf  # noqa: E402
from official.legacy.bert import configs  # noqa: E402
from official.nlp.tools import export_tfhub_lib  # noqa: E402
from official.nlp.tools import tf2_bert_encoder_checkpoint_converter as converter  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bert_config_file", required=True)
    parser.add_argument("--init_checkpoint", required=True)
    parser.add_argument("--vocab_file", required=True)
    parser.add_argument("--do_lower_case", default="true")
    parser.add_argument("--export_path", required=True)
    args = parser.parse_args()
    bert_config = configs.BertConfig.from_json_file(args.bert_config_file)
    v2_checkpoint = os.path.join(os.path.dirname(os.path.abspath(args.export_path)),
                                 "model_garden_v2", "encoder.ckpt")
    converter.convert_checkpoint(bert_config, v2_checkpoint, args.init_checkpoint,
                                 checkpoint_model_name="encoder", converted_model="encoder")
    # tf.train.Checkpoint.save numbers its prefix (encoder.ckpt-1).
    v2_checkpoint = tf.train.latest_checkpoint(os.path.dirname(v2_checkpoint))
    export_tfhub_lib.export_model(
        args.export_path, bert_config=bert_config, model_checkpoint_path=v2_checkpoint,
        with_mlm=False, vocab_file=args.vocab_file,
        do_lower_case=args.do_lower_case.lower() in ("1", "true", "yes"))
    print("exported", args.export_path)


if __name__ == "__main__":
    main()
