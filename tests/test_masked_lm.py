"""Tests for bert_tf/tasks/masked_lm/ and bert-run-mlm: domain-adaptive masked-LM training.

* The masking rule, drawn on the fly: over many rows each row gets the
  original's count (min(max_predictions_per_seq, max(1, round(len *
  masked_lm_prob)))), never [CLS], [SEP] or padding, positions ascending and
  labelled with the row's own tokens, about 80% [MASK] / 10% kept / 10%
  random, the other tokens untouched; whole-word masking takes a word's "##"
  pieces with it, or none of them; one (seed, epoch, row) gives one mask,
  another epoch or seed another; each epoch's order is a permutation.
* The text rows: consecutive text packed into [CLS] ... [SEP] rows, the
  last short one kept.
* The tool trains in this process on a predictable synthetic text: the
  held-out masked-LM accuracy rises far above chance; the output_dir alone
  is a fill-mask model (bert-fill-mask's run fills the [MASK] with the right
  token); the checkpoint is Google's (bert/*, cls/*), the next-sentence head
  and the pooler as the init checkpoint held them.
* A run stopped between two saves (as kill -9 stops it), then the same
  command: it resumes from the last checkpoint and ends with the weights of
  the run never stopped, bit for bit (--seed, dropout on, whole-word masks).
* From a Hugging Face directory (`save_pretrained(format="huggingface")`:
  config.json, model.safetensors): the run starts from its weights, its
  first step's loss and checkpoint those of the same run from the Google
  checkpoint of the same model.
* Keras: `BertMaskedLM.fit` on `MaskedLMData.dataset` (an epoch a few
  steps of the endless dataset) lowers the loss; `save_pretrained` writes
  Google's format, which `from_pretrained(head="fill_mask")` reads back.
* Bad input: one line naming the flag or file, nothing written (on the
  command line, a missing file is exit status 2 before TensorFlow loads:
  tests/test_cli.py).
"""

import json
import os

import numpy as np
import pytest
import tensorflow as tf

from bert_tf.modeling import checkpoint
from bert_tf.tasks.masked_lm import data_masking as masking
from bert_tf.tasks.masked_lm import data_text_rows as text_rows
from bert_tf.tasks.masked_lm.data import MaskedLMData
from tests.test_exact_resume import _Killed
from tests.test_exact_resume import _differences
from tests.test_exact_resume import _stop_after
from tests.test_pretraining import one_layer_config
from tests.test_pretraining import tiny_config
from tests.test_pretraining import write_config
from tests.test_pretraining import write_init_checkpoint
from tests.tools import toolrun

CLS, SEP, MASK = 2, 3, 4
VOCAB_WORDS = 60


def _synthetic_rows(num_rows, seq_length, rng, piece_rate=0.0):
    """Rows of random ids 5..VOCAB_WORDS-1, of random lengths, some "##" pieces."""
    lists, pieces = [], []
    for _ in range(num_rows):
        n = int(rng.randint(seq_length // 2, seq_length - 1))
        lists.append(rng.randint(5, VOCAB_WORDS, n - 2).tolist())
        pieces.append((rng.rand(n - 2) < piece_rate).tolist())
    ids = np.zeros([num_rows, seq_length], np.int32)
    lengths = np.zeros([num_rows], np.int32)
    is_piece = np.zeros([num_rows, seq_length], bool)
    for r, (tokens, flags) in enumerate(zip(lists, pieces)):
        n = len(tokens) + 2
        ids[r, :n] = [CLS] + tokens + [SEP]
        is_piece[r, 1:n - 1] = flags
        lengths[r] = n
    return text_rows.Rows(ids, lengths, is_piece, int(lengths.sum() - 2 * num_rows))


def _masked(data, epochs, indices):
    """The features of rows `indices` in `epochs` (arrays), as NumPy, stacked."""
    pairs = tf.data.Dataset.from_tensor_slices(
        (tf.constant(epochs, tf.int64), tf.constant(indices, tf.int32)))
    batch = next(iter(data.with_masks(pairs).batch(len(indices))))
    return {k: v.numpy() for k, v in batch.items()}


def test_masking_follows_the_original_rule_and_is_keyed_on_seed_epoch_and_row():
    rows = _synthetic_rows(400, 48, np.random.RandomState(0))
    data = MaskedLMData(rows, VOCAB_WORDS, MASK, CLS, SEP, masked_lm_prob=0.15,
                        max_predictions_per_seq=6, seed=11)
    indices = np.arange(len(rows))
    # Epoch 0, epoch 0 again (rows in reverse), epoch 1: one dataset.
    n_rows = len(rows)
    both = _masked(data, np.repeat([0, 0, 1], n_rows),
                   np.concatenate([indices, indices[::-1], indices]))
    out = {k: v[:n_rows] for k, v in both.items()}
    again = {k: v[n_rows:2 * n_rows] for k, v in both.items()}
    epoch_1 = {k: v[2 * n_rows:] for k, v in both.items()}
    chosen = kept = replaced_by_mask = 0
    for r in indices:
        n = rows.lengths[r]
        weights = out["masked_lm_weights"][r]
        count = int(weights.sum())
        assert count == min(6, max(1, round(n * 0.15)))  # the original's count (half to even)
        assert list(weights) == [1.0] * count + [0.0] * (6 - count)
        positions = out["masked_lm_positions"][r][:count]
        assert list(positions) == sorted(set(positions))
        assert positions.min() >= 1 and positions.max() <= n - 2  # never [CLS], [SEP], padding
        assert (out["masked_lm_positions"][r][count:] == 0).all()
        assert (out["masked_lm_ids"][r][:count] == rows.input_ids[r, positions]).all()
        others = np.setdiff1d(np.arange(48), positions)
        assert (out["input_ids"][r, others] == rows.input_ids[r, others]).all()
        assert (out["input_mask"][r] == (np.arange(48) < n)).all()
        new = out["input_ids"][r, positions]
        chosen += count
        replaced_by_mask += int((new == MASK).sum())
        kept += int((new == rows.input_ids[r, positions]).sum())
    # 80% [MASK], 10% kept (+ the random draws that hit the same token), 10% random.
    assert abs(replaced_by_mask / chosen - 0.8) < 0.03, replaced_by_mask / chosen
    assert abs(kept / chosen - (0.1 + 0.1 / VOCAB_WORDS)) < 0.025, kept / chosen
    # Keyed on (seed, epoch, row): the same again; another epoch or seed, other masks.
    assert (again["masked_lm_positions"][::-1] == out["masked_lm_positions"]).all()
    assert (again["input_ids"][::-1] == out["input_ids"]).all()
    other_seed = MaskedLMData(rows, VOCAB_WORDS, MASK, CLS, SEP, max_predictions_per_seq=6,
                              seed=12)
    for other in (epoch_1, _masked(other_seed, np.zeros_like(indices), indices)):
        same = (other["masked_lm_positions"] == out["masked_lm_positions"]).all(axis=1)
        assert same.mean() < 0.1
    # Each epoch's rows: a permutation, another one each epoch.
    key = masking.base_key(11)
    orders = [masking.epoch_order(key, e, len(rows)).numpy() for e in (0, 1)]
    assert sorted(orders[0]) == list(indices) and (orders[0] != orders[1]).any()
    # The training examples: epoch 0's rows in its order, with their masks.
    first = next(iter(data.examples().batch(5)))["input_ids"].numpy()
    assert (first == out["input_ids"][orders[0][:5]]).all()


def test_whole_word_masking_takes_every_piece_of_a_word():
    rows = _synthetic_rows(300, 48, np.random.RandomState(1), piece_rate=0.5)
    data = MaskedLMData(rows, VOCAB_WORDS, MASK, CLS, SEP, masked_lm_prob=0.2,
                        max_predictions_per_seq=8, do_whole_word_mask=True, seed=5)
    indices = np.arange(len(rows))
    out = _masked(data, np.full_like(indices, 3), indices)
    multi = 0
    for r in indices:
        n = rows.lengths[r]
        target = min(8, max(1, round(n * 0.2)))
        count = int(out["masked_lm_weights"][r].sum())
        assert 1 <= count <= target
        chosen = set(out["masked_lm_positions"][r][:count].tolist())
        word = np.cumsum(~rows.is_piece[r, 1:n - 1])  # word of each token (1..n-2)
        for w in set(word[[p - 1 for p in chosen]]):
            members = {int(p) + 1 for p in np.flatnonzero(word == w)}
            assert members <= chosen, (r, members, chosen)
            multi += len(members) > 1
    assert multi > 50  # words of several pieces were masked


def test_text_is_packed_into_rows_and_the_last_short_row_kept(tmp_path):
    rows = text_rows.pack_rows([[10, 11, 12], [13, 14], [], [15, 16, 17, 18]], 6, CLS, SEP)
    assert rows.input_ids.tolist() == [[CLS, 10, 11, 12, 13, SEP], [CLS, 14, 15, 16, 17, SEP],
                                       [CLS, 18, SEP, 0, 0, 0]]
    assert rows.lengths.tolist() == [6, 6, 3] and rows.num_tokens == 9


# ----------------------------------------------------------------- the tool

# A predictable text: each document one word (some tokens "##s" plurals), one row each.
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota",
         "kappa", "lambda", "mu"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS + ["##s"]
STEPS = 48 * 40 // 16  # rows / train_batch_size * num_train_epochs


def _one_word_documents(num_documents, seed):
    """Documents of one word, 30 tokens each (a row of max_seq_length 32)."""
    rng = np.random.RandomState(seed)
    documents = []
    for word in rng.choice(WORDS, num_documents):
        tokens, count = [], 0
        while count < 30:
            plural = count < 29 and rng.rand() < 0.2
            tokens.append(word + "s" if plural else word)
            count += 2 if plural else 1
        documents.append(" ".join(tokens[:15]) + "\n" + " ".join(tokens[15:]) + "\n")
    return "\n".join(documents)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("run_mlm")
    (tmp / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    (tmp / "train.txt").write_text(_one_word_documents(48, 0))
    (tmp / "held_out.txt").write_text(_one_word_documents(12, 1))
    config = one_layer_config(dropout=0.1, vocab_size=len(VOCAB))
    return {"tmp": tmp, "vocab": str(tmp / "vocab.txt"), "train": str(tmp / "train.txt"),
            "eval": str(tmp / "held_out.txt"),
            "config": write_config(config, str(tmp / "bert_config.json")),
            "init": write_init_checkpoint(config, str(tmp / "init" / "bert_model.ckpt"))}


def _flags(files, output_dir, **overrides):
    values = {"input_file": files["train"], "vocab_file": files["vocab"],
              "bert_config_file": files["config"], "init_checkpoint": files["init"],
              "output_dir": output_dir, "do_train": "true", "max_seq_length": 32,
              "max_predictions_per_seq": 5, "do_whole_word_mask": "true",
              "train_batch_size": 16, "learning_rate": 2e-3, "num_train_epochs": 40.0,
              "warmup_proportion": 0.1, "seed": 7, "save_checkpoints_steps": 10,
              "iterations_per_loop": 50}
    values.update(overrides)
    return ["--%s=%s" % (k, v) for k, v in values.items() if v is not None]


@pytest.fixture(scope="module")
def trained(files):
    """The uninterrupted run (--seed=7, dropout on), evaluated on the held-out text."""
    output_dir = str(files["tmp"] / "trained")
    result, log = toolrun.run_tool("run_mlm", _flags(
        files, output_dir, do_eval="true", eval_file=files["eval"], eval_batch_size=8))
    return {"output_dir": output_dir, "result": result, "log": log}


@pytest.mark.slow
def test_trains_far_above_chance_and_the_output_dir_is_a_fill_mask_model(files, trained):
    from bert_tf.tasks.pretraining.run_fill_mask import fill_mask
    output_dir, result, log = trained["output_dir"], trained["result"], trained["log"]
    assert "***** Running training *****" in log and "steps/s" in log
    accuracy = result["eval"]["masked_lm_accuracy"]
    assert accuracy > 0.6, accuracy  # chance: 1 / 18
    with open(os.path.join(output_dir, "eval_results.txt")) as f:
        keys = [line.split(" = ")[0] for line in f.read().splitlines()]
    assert keys == ["global_step", "loss", "masked_lm_accuracy", "masked_lm_loss"]
    with open(os.path.join(output_dir, "bert_tf_run.json")) as f:
        record = json.load(f)
    assert record["tool"] == "run_mlm" and record["task"] == "pretraining"
    assert record["training_flags"]["do_whole_word_mask"] is True
    assert {n for n in os.listdir(output_dir) if not n.startswith(("model.ckpt", "events."))} == {
        "bert_config.json", "bert_tf_run.json", "checkpoint", "eval", "eval_results.txt",
        "vocab.txt"}
    # Google's checkpoint: the next-sentence head and the pooler as the init held them.
    final = checkpoint.read_checkpoint(os.path.join(output_dir, "model.ckpt-%d" % STEPS))
    init = checkpoint.read_checkpoint(files["init"])
    assert "cls/predictions/output_bias" in final
    for name in ("cls/seq_relationship/output_weights", "bert/pooler/dense/kernel"):
        assert (final[name] == init[name]).all(), name
    assert not (final["bert/embeddings/word_embeddings"]
                == init["bert/embeddings/word_embeddings"]).all()
    # The directory alone is a fill-mask model (bert-fill-mask's run, from_pretrained's load).
    answers_file = str(files["tmp"] / "answers.jsonl")
    fill_mask(output_dir, answers_file, text="kappa kappa kappas [MASK] kappa kappa", top_k=1,
              max_seq_length=32)
    with open(answers_file) as f:
        answer = json.loads(f.readline())
    assert answer["masks"][0][0]["token_str"] == "kappa"
    # bert-export-saved-model --init_checkpoint=output_dir: the fill-mask export.
    from bert_tf.export.saved_model import recorded_run
    assert recorded_run(output_dir)["task_name"] == "fill_mask"
    # Without head=, the recorded task's model: the pre-training model.
    from bert_tf import from_pretrained
    from bert_tf.tasks.pretraining.model import BertPretrainer
    assert type(from_pretrained(output_dir).model) is BertPretrainer
    # A rerun with another masking rule is refused in one line (the rule is recorded).
    refused = toolrun.user_errors_here("run_mlm", [("other rule", _flags(
        files, output_dir, masked_lm_prob=0.2))])["other rule"]
    assert refused.startswith("--masked_lm_prob=0.2: --output_dir=%s holds a run trained with "
                              "--masked_lm_prob=0.15" % output_dir), refused


@pytest.mark.slow
def test_killed_between_saves_then_the_same_command_ends_at_the_uninterrupted_runs_weights(
        files, trained, monkeypatch):
    # As kill -9 stops it: at a step between two saves, nothing saved there
    # (tests/test_exact_resume.py's stand-in, in this process: a tool's own
    # process and a test process differ in Grappler's passes, so weights are
    # compared within one process).
    from bert_tf.tasks.masked_lm import run as run_mlm
    trainer_class = run_mlm.Trainer

    def killed_trainer(*args, **kwargs):
        trainer = trainer_class(*args, **kwargs)
        _stop_after(trainer, 23, after_save=False)
        return trainer
    killed = files["tmp"] / "killed"
    flags = _flags(files, str(killed))
    monkeypatch.setattr(run_mlm, "Trainer", killed_trainer)
    with pytest.raises(_Killed):
        toolrun.run_tool("run_mlm", flags)
    monkeypatch.undo()
    assert tf.train.latest_checkpoint(str(killed)) == str(killed / "model.ckpt-20")
    _, log = toolrun.run_tool("run_mlm", flags)
    assert "Resuming from %s" % (killed / "model.ckpt-20") in log
    name = "model.ckpt-%d" % STEPS
    a = checkpoint.read_checkpoint(str(killed / name))
    b = checkpoint.read_checkpoint(os.path.join(trained["output_dir"], name))
    assert _differences(a, b) == []


@pytest.mark.slow
def test_starts_from_a_hugging_face_directory_as_from_its_google_checkpoint(files, tmp_path):
    """--init_checkpoint a Hugging Face directory: one step from its weights ends where the
    same step from the Google checkpoint of the same model ends (loss and weights)."""
    import keras
    from bert_tf.tasks.pretraining.model import BertPretrainer
    keras.utils.set_random_seed(5)
    model = BertPretrainer(tiny_config(vocab_size=len(VOCAB)))  # 2 layers, hidden 32
    google = model.save_pretrained(str(tmp_path / "google"), vocab_file=files["vocab"])
    hf = model.save_pretrained(str(tmp_path / "hf"), format="huggingface",
                               vocab_file=files["vocab"], do_lower_case=True)
    names = os.listdir(hf)  # transformers' files, no Google checkpoint
    assert {"config.json", "model.safetensors"} <= set(names), names
    assert not any(n.startswith("bert_model.ckpt") for n in names), names
    runs = {}
    for name, init in (("google", os.path.join(google, "bert_model.ckpt")), ("hf", hf)):
        output_dir = str(tmp_path / name / "output")
        # 48 rows / 16 a batch * 0.34 epochs: one step, saved. The Hugging Face run names
        # the directory alone, for its config and vocab too (docs/huggingface.md).
        flags = _flags(files, output_dir, init_checkpoint=init, num_train_epochs=0.34,
                       bert_config_file=os.path.join(google, "bert_config.json"))
        if name == "hf":
            flags = [f for f in flags if not f.startswith(("--bert_config_file=",
                                                           "--vocab_file="))]
            flags += ["--bert_config_file=" + hf, "--vocab_file=" + hf]
        result, log = toolrun.run_tool("run_mlm", flags)
        assert "Resuming" not in log
        runs[name] = {"losses": [float(x) for r in result["history"] for x in r["losses"]],
                      "weights": checkpoint.read_checkpoint(
                          os.path.join(output_dir, "model.ckpt-1"))}
    assert len(runs["hf"]["losses"]) == 1
    # The output directory holds the model's config and vocab as Google's files, the same
    # as the Google run's; the same command again finds the finished run, refusing nothing.
    for kept in ("bert_config.json", "vocab.txt"):
        with open(os.path.join(str(tmp_path / "hf" / "output"), kept)) as a, \
                open(os.path.join(str(tmp_path / "google" / "output"), kept)) as b:
            a, b = a.read(), b.read()
        assert (json.loads(a) == json.loads(b)) if kept.endswith(".json") else a == b, kept
    _, log = toolrun.run_tool("run_mlm", flags)
    assert "refus" not in log.lower()
    assert runs["hf"]["losses"] == runs["google"]["losses"]
    assert _differences(runs["hf"]["weights"], runs["google"]["weights"]) == []
    # Both moved off the start, from the same start.
    start = checkpoint.read_checkpoint(os.path.join(google, "bert_model.ckpt"))
    assert not (runs["hf"]["weights"]["bert/embeddings/word_embeddings"]
                == start["bert/embeddings/word_embeddings"]).all()


@pytest.mark.slow
def test_keras_fit_on_the_dataset_lowers_the_loss_and_saves_googles_format(files, tmp_path):
    from bert_tf import from_pretrained
    from bert_tf.tasks.masked_lm.model import BertMaskedLM
    from bert_tf.training.optimization import create_optimizer
    data = MaskedLMData.from_text(files["train"], files["vocab"], max_seq_length=32,
                                  max_predictions_per_seq=5, seed=3)
    assert data.num_rows == 48 and data.steps_per_epoch(16) == 3
    model = BertMaskedLM(one_layer_config(vocab_size=len(VOCAB)))
    model.compile(optimizer=create_optimizer(5e-3, 24, 3))
    history = model.fit(data.dataset(16), epochs=8, steps_per_epoch=3, verbose=0)
    losses = history.history["loss"]
    assert losses[-1] < 0.7 * losses[0], losses
    assert history.history["masked_lm_accuracy"][-1] > 0.2
    # Google's format: from_pretrained reads it back as a fill-mask model.
    model.save_pretrained(str(tmp_path / "saved"), vocab_file=files["vocab"],
                          do_lower_case=True)
    loaded = from_pretrained(str(tmp_path / "saved"), head="fill_mask").model
    batch = next(iter(data.dataset(4)))
    np.testing.assert_allclose(loaded(batch)["masked_lm_logits"],
                               model(batch)["masked_lm_logits"], rtol=1e-5, atol=1e-5)


def test_bad_input_is_one_line_and_writes_nothing(files):
    tmp = files["tmp"]
    (tmp / "latin1.txt").write_bytes("caf\xe9 alpha\n".encode("latin-1"))
    (tmp / "blank.txt").write_text("\n\n")
    no_mask = tmp / "no_mask_vocab.txt"
    no_mask.write_text("\n".join(t for t in VOCAB if t != "[MASK]") + "\n")
    output = str(tmp / "bad_output")
    cases = [
        ("no file", _flags(files, output, input_file=str(tmp / "missing.txt"))),
        ("not utf-8", _flags(files, output, input_file=str(tmp / "latin1.txt"))),
        ("no text", _flags(files, output, input_file=str(tmp / "blank.txt"))),
        ("no eval file", _flags(files, output, do_eval="true")),
        ("bad prob", _flags(files, output, masked_lm_prob=1.5)),
        ("too many predictions", _flags(files, output, max_predictions_per_seq=31)),
        ("no [MASK]", _flags(files, output, vocab_file=str(no_mask))),
        ("no step", _flags(files, output, num_train_epochs=0.01)),
        ("bucketed", _flags(files, output, bucket_by_length="true")),
    ]
    errors = toolrun.user_errors_here("run_mlm", cases)
    expected = {
        "no file": "missing.txt",
        "not utf-8": "line 1 of --input_file=%s is not UTF-8" % (tmp / "latin1.txt"),
        "no text": "has no text",
        "no eval file": "--eval_file is required with --do_eval",
        "bad prob": "--masked_lm_prob=1.5",
        "too many predictions": "--max_predictions_per_seq=31",
        "no [MASK]": "has no [MASK] token",
        "no step": "gives no training step",
        "bucketed": "--bucket_by_length: ",
    }
    for case, fragment in expected.items():
        assert errors[case] is not None and fragment in errors[case], (case, errors[case])
        assert "\n" not in errors[case]
    assert not os.path.exists(output)
