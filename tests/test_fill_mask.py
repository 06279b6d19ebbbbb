"""Fill-mask and next-sentence prediction from the pre-training heads: BertFillMask, bert-fill-mask.

* The scores are the softmax of the masked-LM logits at each [MASK] (the
  model's own logits, computed here directly), best first, `top_k` of them;
  `token_str` and `sequence` as Hugging Face's fill-mask pipeline writes them;
  one [MASK], several, a list of texts (in batches); [MASK] in raw text is
  the [MASK] id whatever the casing and the punctuation around it.
* The next-sentence probability is the softmax of `cls/seq_relationship`'s
  logits, index 0 ("is next", as `get_next_sentence_output`'s labels).
* Each mistake is one line; a text longer than max_seq_length is refused,
  never truncated.
* A config's vocab_size larger than vocab.txt (ids without a token, made
  the likeliest here): only the vocab's tokens are answers, from `fill_mask`
  and from the export's signature.
* The tool writes the same answers as JSON lines, atomically; bad input
  writes nothing.
* (`original`) The scores equal the original `get_masked_lm_output`'s
  softmax on a checkpoint the original code wrote.
"""

import json
import os
import shutil
import subprocess
import sys

import keras
import numpy as np
import pytest
import tensorflow as tf

import bert_tf
from bert_tf import BertConfig
from bert_tf.errors import UserError
from bert_tf.modeling import checkpoint
from bert_tf.models import BertFillMask
from bert_tf.models import BertPretrainer
from tests.conftest import TINY_CONFIG
from tests.conftest import write_config
from tests.original import run_oracle
from tests.tolerances import LAYER_ATOL
from tests.tolerances import MODEL_ATOL
from tests.tools import toolrun

WORDS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "on", "mat",
         "a", "ran", "home", ".", ",", "!", "##s", "##ing", "it", "was", "late", "he", "went",
         "to", "store", "bought", "milk"]
# TINY_CONFIG's vocab_size: every id is a token.
VOCAB = WORDS + ["[unused%d]" % i for i in range(TINY_CONFIG["vocab_size"] - len(WORDS))]
MASK_ID = VOCAB.index("[MASK]")


def make_release(directory, ckpt_source=None, seed=5):
    """A Google-style release directory (bert_config.json, vocab.txt, bert_model.ckpt.*)."""
    os.makedirs(directory)
    write_config(os.path.join(directory, "bert_config.json"), TINY_CONFIG)
    with open(os.path.join(directory, "vocab.txt"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in VOCAB))
    prefix = os.path.join(directory, "bert_model.ckpt")
    if ckpt_source is None:
        keras.utils.set_random_seed(seed)
        checkpoint.save_checkpoint(BertPretrainer(BertConfig.from_dict(dict(TINY_CONFIG))),
                                   prefix, update_state=False)
    else:
        for suffix in (".index", ".data-00000-of-00001"):
            shutil.copy(ckpt_source + suffix, prefix + suffix)
    return str(directory)


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return make_release(str(tmp_path_factory.mktemp("fill") / "tiny_bert"))


@pytest.fixture(scope="module")
def model(release):
    return bert_tf.from_pretrained(release, head="fill_mask").model


def direct_probabilities(model, tokens, positions):
    """Softmax of the model's own masked-LM logits at `positions` of `tokens`: [P, vocab]."""
    ids = np.array([[VOCAB.index(t) for t in tokens]], np.int32)
    logits = model({"input_ids": ids, "input_mask": np.ones_like(ids),
                    "segment_ids": np.zeros_like(ids),
                    "masked_lm_positions": np.array([positions], np.int32)},
                   training=False)["masked_lm_logits"][0]
    logits = np.asarray(logits, np.float64)
    e = np.exp(logits - logits.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def decode(tokens):
    """Hugging Face's WordPiece decoder on tokens: spaces between, `##` joined, no space before
    . , ! ?"""
    text = ""
    for i, t in enumerate(tokens):
        text += t[2:] if (i and t.startswith("##")) else (" " + t if i else t)
    for p in (".", ",", "!", "?"):
        text = text.replace(" " + p, p)
    return text


# ---------------------------------------------------------------------------
# fill_mask
# ---------------------------------------------------------------------------


def test_from_pretrained_gives_the_pretrainer_with_its_tokenizer(release, model):
    assert type(model) is BertFillMask and isinstance(model, BertPretrainer)
    pretrainer = bert_tf.from_pretrained(release, head="pretraining").model
    ours = {checkpoint.tf1_name(v): v.numpy() for v in model.weights}
    theirs = {checkpoint.tf1_name(v): v.numpy() for v in pretrainer.weights}
    assert sorted(ours) == sorted(theirs)
    for name in ours:
        np.testing.assert_array_equal(ours[name], theirs[name], err_msg=name)
    assert model.tokenizer.vocab == bert_tf.from_pretrained(release).tokenizer.vocab
    assert model.max_seq_length == TINY_CONFIG["max_position_embeddings"]


def test_one_mask_scores_are_the_softmax_of_the_masked_lm_logits(model):
    answers = model.fill_mask("The cat [MASK] on the mat.", top_k=7)
    tokens = ["[CLS]", "the", "cat", "[MASK]", "on", "the", "mat", ".", "[SEP]"]
    probs = direct_probabilities(model, tokens, [3])[0]
    assert isinstance(answers, list) and len(answers) == 7
    assert [a["token"] for a in answers] == list(np.argsort(-probs, kind="stable")[:7])
    scores = [a["score"] for a in answers]
    assert scores == sorted(scores, reverse=True)
    for a in answers:
        assert sorted(a) == ["score", "sequence", "token", "token_str"]
        assert type(a["score"]) is float and type(a["token"]) is int
        np.testing.assert_allclose(a["score"], probs[a["token"]], atol=LAYER_ATOL, rtol=1e-4,
                                   err_msg=a["token_str"])
        assert a["token_str"] == VOCAB[a["token"]]
        # One [MASK]: the sequence without the special tokens (a special token
        # predicted for it is dropped too, as Hugging Face's pipeline does).
        filled = [a["token_str"] if t == "[MASK]" else t for t in tokens]
        assert a["sequence"] == decode([t for t in filled if t not in (
            "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")])
    # Every token of the vocab, and they sum to 1.
    everything = model.fill_mask("The cat [MASK] on the mat.", top_k=10 ** 6)
    assert len(everything) == len(VOCAB)
    np.testing.assert_allclose(sum(a["score"] for a in everything), 1.0, atol=1e-5)


def test_wordpieces_are_joined_in_the_sequence(model):
    # "cats" is cat ##s; a "##" answer joins the word before it.
    answers = model.fill_mask("cats [MASK] home", top_k=len(VOCAB))
    by_token = {a["token_str"]: a for a in answers}
    assert by_token["##ing"]["sequence"] == "catsing home"
    assert by_token["ran"]["sequence"] == "cats ran home"
    assert by_token["!"]["sequence"] == "cats! home"


def test_several_masks_give_a_list_per_mask_with_the_other_masks_shown(model):
    answers = model.fill_mask("The [MASK] sat on the [MASK].", top_k=3)
    tokens = ["[CLS]", "the", "[MASK]", "sat", "on", "the", "[MASK]", ".", "[SEP]"]
    probs = direct_probabilities(model, tokens, [2, 6])
    assert len(answers) == 2 and all(len(a) == 3 for a in answers)
    for m, (position, mask_answers) in enumerate(zip([2, 6], answers)):
        assert [a["token"] for a in mask_answers] == list(
            np.argsort(-probs[m], kind="stable")[:3])
        for a in mask_answers:
            np.testing.assert_allclose(a["score"], probs[m][a["token"]], atol=LAYER_ATOL,
                                       rtol=1e-4)
            filled = list(tokens)
            filled[position] = a["token_str"]
            assert a["sequence"] == decode(filled)  # [CLS], [SEP] and the other [MASK] kept
            assert a["sequence"].startswith("[CLS] the ") and a["sequence"].endswith(" [SEP]")


def test_a_list_of_texts_in_batches_gives_each_texts_answers(model):
    texts = ["The cat [MASK] on the mat.", "[MASK] dog ran [MASK]", "he went to the [MASK]!"]
    batched = model.fill_mask(texts, top_k=4)
    assert len(batched) == 3
    assert isinstance(batched[0][0], dict) and isinstance(batched[1][0], list)
    alone = [model.fill_mask(t, top_k=4) for t in texts]
    model.batch_size = 2  # two model calls, padded differently
    try:
        two_batches = model.fill_mask(texts, top_k=4)
    finally:
        model.batch_size = 32
    for got in (batched, two_batches):
        for g, a in zip(got, alone):
            flat_g = g if isinstance(g[0], dict) else sum(g, [])
            flat_a = a if isinstance(a[0], dict) else sum(a, [])
            assert [x["token"] for x in flat_g] == [x["token"] for x in flat_a]
            assert [x["sequence"] for x in flat_g] == [x["sequence"] for x in flat_a]
            np.testing.assert_allclose([x["score"] for x in flat_g],
                                       [x["score"] for x in flat_a], atol=1e-6)
    assert model.fill_mask([], top_k=2) == []


def _larger_vocab_size_model(tmp_path, extra=8):
    """A BertFillMask whose config has `extra` ids past vocab.txt's, the likeliest answers.

    Built directly (no `from_pretrained`), so it holds whatever that makes of
    such a pair; what it answers is tested here.
    """
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("".join(t + "\n" for t in VOCAB), encoding="utf-8")
    keras.utils.set_random_seed(5)
    config = BertConfig.from_dict(dict(TINY_CONFIG, vocab_size=len(VOCAB) + extra))
    model = BertFillMask(config, vocab_file=str(vocab_file), max_seq_length=16)
    bias = model.cls.masked_lm.output_bias
    bias.assign(np.where(np.arange(bias.shape[0]) >= len(VOCAB), 30.0, 0.0))
    return model, str(vocab_file)


def test_answers_are_tokens_of_the_vocab_when_the_config_has_more_ids(tmp_path):
    model, _ = _larger_vocab_size_model(tmp_path)
    tokens = ["[CLS]", "the", "cat", "[MASK]", "on", "the", "mat", ".", "[SEP]"]
    probs = direct_probabilities(model, tokens, [3])[0]
    assert probs.shape == (len(VOCAB) + 8,) and probs.argmax() >= len(VOCAB)
    answers = model.fill_mask("The cat [MASK] on the mat.", top_k=5)
    assert [a["token"] for a in answers] == list(
        np.argsort(-probs[:len(VOCAB)], kind="stable")[:5])
    assert all(a["token_str"] == VOCAB[a["token"]] for a in answers)
    # top_k past the vocab: every token of the vocab, none past it.
    everything = model.fill_mask(["[MASK] dog ran [MASK]!"], top_k=10 ** 6)[0]
    for per_mask in everything:
        assert sorted(a["token"] for a in per_mask) == list(range(len(VOCAB)))


def test_the_served_answers_are_tokens_of_the_vocab_when_the_config_has_more_ids(tmp_path):
    from bert_tf.tasks.pretraining.serving import FillMaskServingModule
    from bert_tf.tokenization.graph_tokenizer import GraphTokenizer
    model, vocab_file = _larger_vocab_size_model(tmp_path)
    want = model.fill_mask(["The cat [MASK] on the mat.", "[MASK] dog ran [MASK]!"], top_k=4)
    module = FillMaskServingModule(model, GraphTokenizer(vocab_file, True), VOCAB, 16,
                                   top_k=len(VOCAB) + 8)
    got = module.serving_default(tf.constant(["The cat [MASK] on the mat.",
                                              "[MASK] dog ran [MASK]!"]))
    token_ids = got["token_ids"].numpy()
    assert token_ids.shape == (2, 2, len(VOCAB))  # top_k: at most the vocab's tokens
    assert token_ids.max() < len(VOCAB)
    assert sorted(token_ids[1, 0]) == list(range(len(VOCAB)))
    assert token_ids[0, 0, :4].tolist() == [a["token"] for a in want[0]]
    assert token_ids[1, 1, :4].tolist() == [a["token"] for a in want[1][1]]
    assert got["token_strings"].numpy()[0, 0, 0].decode() == want[0][0]["token_str"]


def test_mask_in_raw_text_is_the_mask_token(model):
    rows, single = model.encode_masked(["cats[MASK].", "THE [MASK] [MASK]", "[MASK]"])
    assert not single
    assert [VOCAB[i] for i in rows[0]["input_ids"]] == [
        "[CLS]", "cat", "##s", "[MASK]", ".", "[SEP]"]
    assert rows[0]["masked_lm_positions"] == [3]
    assert rows[1]["masked_lm_positions"] == [2, 3]
    assert rows[2]["input_ids"] == [VOCAB.index("[CLS]"), MASK_ID, VOCAB.index("[SEP]")]
    # The plain tokenizer splits it (the original's rules); fill_mask does not.
    assert model.tokenizer.tokenize("[MASK]") != ["[MASK]"]


@pytest.mark.parametrize("call, message", [
    (lambda m: m.fill_mask("the cat sat"), r"^the text has no \[MASK\] to fill: 'the cat sat'$"),
    (lambda m: m.fill_mask(["a [MASK]", "the [mask]"]),
     r"^text 1 has no \[MASK\] to fill: 'the \[mask\]'$"),
    (lambda m: m.fill_mask("the [MASK] " + "cat " * 70),
     r"^the text is 74 tokens with \[CLS\] and \[SEP\], more than max_seq_length=64 \(not "
     r"truncated, which could drop a \[MASK\]\): 'the \[MASK\] cat cat"),
    (lambda m: m.fill_mask("a [MASK]", top_k=0), r"^top_k=0: must be a positive integer$"),
    (lambda m: m.fill_mask(3), r"^text must be a str or a list of str, not a int$"),
    (lambda m: m.fill_mask(["a [MASK]", None]), r"^text\[1\] is a NoneType, not a str$"),
    (lambda m: m.next_sentence_probability("a", ["b"]),
     r"^text_a and text_b must both be a str or both lists of str$"),
    (lambda m: m.next_sentence_probability(["a"], ["b", "c"]),
     r"^text_a has 1 texts but text_b has 2$"),
    (lambda m: BertFillMask(m.config).tokenizer, r"^BertFillMask has no vocab_file"),
    (lambda m: BertFillMask(m.config, max_seq_length=65),
     r"^--max_seq_length=65: Cannot use sequence length 65"),
])
def test_mistakes_are_one_line(model, call, message):
    with pytest.raises(UserError, match=message) as e:
        call(model)
    assert "\n" not in str(e.value)


def test_keras_config_round_trip(model):
    clone = BertFillMask.from_config(model.get_config())
    assert (clone.vocab_file, clone.do_lower_case, clone.max_seq_length, clone.batch_size) == (
        model.vocab_file, model.do_lower_case, model.max_seq_length, model.batch_size)
    assert clone.config.to_dict() == model.config.to_dict()


def test_save_pretrained_and_a_keras_file_give_back_the_same_answers(model, tmp_path):
    text, a, b = "the [MASK] sat on the [MASK].", "the cat sat", "it was late"
    want = model.fill_mask(text, top_k=3), model.next_sentence_probability(a, b)
    model.save_pretrained(tmp_path / "saved_uncased")
    assert {"bert_config.json", "vocab.txt", "bert_model.ckpt.index"} <= set(
        os.listdir(tmp_path / "saved_uncased"))  # read back strictly, the cls/* heads included
    again = bert_tf.from_pretrained(str(tmp_path / "saved_uncased"), head="fill_mask").model
    model.save(tmp_path / "fill_mask.keras")
    loaded = keras.models.load_model(tmp_path / "fill_mask.keras")
    for other in (again, loaded):
        assert isinstance(other, BertFillMask)
        got = other.fill_mask(text, top_k=3), other.next_sentence_probability(a, b)
        assert [[x["token_str"] for x in m] for m in got[0]] == [
            [x["token_str"] for x in m] for m in want[0]]
        np.testing.assert_allclose([[x["score"] for x in m] for m in got[0]],
                                   [[x["score"] for x in m] for m in want[0]], rtol=1e-5)
        np.testing.assert_allclose(got[1], want[1], rtol=1e-5)


# ---------------------------------------------------------------------------
# next_sentence_probability
# ---------------------------------------------------------------------------


def test_next_sentence_probability_is_the_softmax_of_the_is_next_logit(model):
    pairs = [("he went to the store.", "he bought milk."), ("the cat sat", "it was late"),
             ("a dog", "ran home " * 40)]  # the last one truncated as the original
    probability = model.next_sentence_probability(*pairs[0])
    assert type(probability) is float
    got = model.next_sentence_probability([a for a, _ in pairs], [b for _, b in pairs])
    assert len(got) == 3 and got[0] == pytest.approx(probability, abs=1e-6)
    for (a, b), p in zip(pairs, got):
        features = model.tokenizer.encode(a, b, max_seq_length=model.max_seq_length)
        feed = {k: np.array([v], np.int32) for k, v in features.items()}
        feed["masked_lm_positions"] = np.zeros([1, 1], np.int32)
        logits = np.asarray(model(feed, training=False)["next_sentence_logits"][0], np.float64)
        expected = np.exp(logits[0]) / np.exp(logits).sum()  # label 0: "is next"
        np.testing.assert_allclose(p, expected, atol=LAYER_ATOL, rtol=1e-4, err_msg=a)


# ---------------------------------------------------------------------------
# bert-fill-mask
# ---------------------------------------------------------------------------


def test_the_tool_writes_the_answers_as_json_lines(release, model, tmp_path):
    lines = ["The cat [MASK] on the mat.", "", "[MASK] dog ran [MASK]"]
    input_file = tmp_path / "masked.txt"
    input_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output_file = tmp_path / "out" / "answers.jsonl"
    count, log = toolrun.run_tool("fill_mask", [
        "--init_checkpoint=" + release, "--input_file=%s" % input_file,
        "--output_file=%s" % output_file, "--top_k=3", "--max_seq_length=32",
        "--batch_size=1"])
    assert count == 2
    rows = [json.loads(line) for line in output_file.read_text(encoding="utf-8").splitlines()]
    expected = model.fill_mask([lines[0], lines[2]], top_k=3)
    assert [r["index"] for r in rows] == [0, 1]
    assert [r["text"] for r in rows] == [lines[0], lines[2]]
    assert len(rows[0]["masks"]) == 1 and len(rows[1]["masks"]) == 2
    for row, answers in zip(rows, [[expected[0]], expected[1]]):
        for got_mask, want_mask in zip(row["masks"], answers):
            assert [a["token"] for a in got_mask] == [a["token"] for a in want_mask]
            assert [a["sequence"] for a in got_mask] == [a["sequence"] for a in want_mask]
            np.testing.assert_allclose([a["score"] for a in got_mask],
                                       [a["score"] for a in want_mask], atol=1e-6)
    assert "Wrote 2 lines to %s" % output_file in log
    assert os.listdir(output_file.parent) == ["answers.jsonl"]  # no temporary file left

    # --text: one line.
    count, _ = toolrun.run_tool("fill_mask", [
        "--init_checkpoint=" + release, "--text=the [MASK] sat.", "--max_seq_length=64",
        "--output_file=%s" % (tmp_path / "one.jsonl")])
    row = json.loads((tmp_path / "one.jsonl").read_text(encoding="utf-8"))
    assert count == 1 and row["text"] == "the [MASK] sat." and len(row["masks"][0]) == 5


def test_the_tools_bad_input_is_one_line_and_writes_nothing(release, tmp_path):
    no_mask = tmp_path / "no_mask.txt"
    no_mask.write_text("the [MASK] sat\n\nthe cat sat\n", encoding="utf-8")
    out = tmp_path / "out.jsonl"
    base = ["--init_checkpoint=" + release, "--output_file=%s" % out, "--max_seq_length=64"]
    errors = toolrun.user_errors_here("fill_mask", [
        ("no mask", base + ["--input_file=%s" % no_mask]),
        ("both", base + ["--input_file=%s" % no_mask, "--text=a [MASK]"]),
        ("neither", base),
        ("too long", base[:2] + ["--text=the [MASK] cat cat cat", "--max_seq_length=5"]),
        ("missing file", base + ["--input_file=%s" % (tmp_path / "nope.txt")]),
    ])
    assert errors == {
        "no mask": "line 3 of --input_file=%s has no [MASK] to fill: 'the cat sat'" % no_mask,
        "both": "pass exactly one of --input_file (one text per line) and --text",
        "neither": "pass exactly one of --input_file (one text per line) and --text",
        "too long": "--text is 7 tokens with [CLS] and [SEP], more than max_seq_length=5 (not "
                    "truncated, which could drop a [MASK]): 'the [MASK] cat cat cat'",
        "missing file": "--input_file=%s: no such file" % (tmp_path / "nope.txt"),
    }
    assert not out.exists() and os.listdir(tmp_path) == ["no_mask.txt"]


def test_the_tool_checks_max_seq_length_before_it_loads_the_model(release, tmp_path,
                                                                  monkeypatch):
    from bert_tf.tasks.pretraining import run_fill_mask as run

    def no_load(*args, **kwargs):
        raise AssertionError("the model was loaded before --max_seq_length was checked")

    monkeypatch.setattr(run, "from_pretrained", no_load)
    longest = TINY_CONFIG["max_position_embeddings"]
    base = ["--init_checkpoint=" + release, "--output_file=%s" % (tmp_path / "out.jsonl"),
            "--text=the [MASK] sat."]
    errors = toolrun.user_errors_here("fill_mask", [
        ("past the positions", base + ["--max_seq_length=%d" % (longest + 1)]),
        ("too short", base + ["--max_seq_length=2"]),
    ])
    assert errors["past the positions"].startswith(
        "--max_seq_length=%d: Cannot use sequence length %d" % (longest + 1, longest + 1))
    assert errors["too short"] == "--max_seq_length=2 is too short for [CLS] [MASK] [SEP]"
    assert os.listdir(tmp_path) == []


HEAD_SOURCES = ("Google's released checkpoints, a run_pretraining output_dir, a Hugging Face "
                "BertForPreTraining")


def test_a_checkpoint_without_the_masked_lm_head_says_so(release, tmp_path):
    """An encoder alone (a fine-tuned run's, a BertModel's) names the head, not its variables."""
    values = checkpoint.read_checkpoint(os.path.join(release, "bert_model.ckpt"))

    def without(name, drop):
        directory = make_release(str(tmp_path / name), ckpt_source=os.path.join(release,
                                                                              "bert_model.ckpt"))
        prefix = os.path.join(directory, "bert_model.ckpt")
        checkpoint.write_checkpoint(prefix, {n: v for n, v in values.items()
                                             if not n.startswith(drop)}, update_state=False)
        return directory

    encoder = without("encoder", "cls/")
    out = tmp_path / "out.jsonl"
    errors = toolrun.user_errors_here("fill_mask", [
        ("encoder", ["--init_checkpoint=" + encoder, "--text=the [MASK] sat.",
                     "--output_file=%s" % out, "--max_seq_length=64"])])
    assert errors["encoder"] == (
        "%s: the checkpoint has no masked-LM head (cls/predictions/*) and no next-sentence "
        "head (cls/seq_relationship/*), which the model needs; they are in %s or "
        "BertForMaskedLM directory" % (os.path.join(encoder, "bert_model.ckpt"), HEAD_SOURCES))
    assert not out.exists()
    no_nsp = without("no_nsp", "cls/seq_relationship/")
    with pytest.raises(UserError) as e:
        bert_tf.from_pretrained(no_nsp, head="pretraining")
    assert str(e.value) == (
        "%s: the checkpoint has no next-sentence head (cls/seq_relationship/*), which the model "
        "needs; it is in %s directory" % (os.path.join(no_nsp, "bert_model.ckpt"), HEAD_SOURCES))
    # Part of a head: its first missing variable, as any other.
    partial = without("partial", "cls/predictions/output_bias")
    with pytest.raises(UserError, match=r"variable cls/predictions/output_bias \(shape \[99\]\) "
                                        r"is missing from the checkpoint$"):
        bert_tf.from_pretrained(partial, head="fill_mask")


def test_the_command_line_help_and_a_bad_flag():
    script = os.path.join(toolrun.REPO_ROOT, "tools", "fill_mask.py")
    code, out, err = toolrun.run([sys.executable, script, "--help"], timeout=120)
    assert code == 0 and "--top_k" in out and "--init_checkpoint" in out and err == ""
    code, out, err = toolrun.run([sys.executable, script, "--top_k=0", "--text=a [MASK]",
                                  "--init_checkpoint=x", "--output_file=o.jsonl"], timeout=120)
    assert code == 2 and err.count("\n") == 1 and err.startswith("error: flag --top_k=0"), err


# ---------------------------------------------------------------------------
# The original
# ---------------------------------------------------------------------------


@pytest.mark.original
def test_scores_are_the_originals_masked_lm_softmax(original_checkpoint, tmp_path):
    """On a checkpoint the original code wrote: the fill-mask scores equal the softmax of
    `run_pretraining.get_masked_lm_output`'s log-probs at the same [MASK] positions, and the
    next-sentence probability `get_next_sentence_output`'s class 0."""
    release = make_release(str(tmp_path / "original_release"), original_checkpoint["ckpt"])
    model = bert_tf.from_pretrained(release, head="fill_mask").model
    texts = ["The cat [MASK] on the mat.", "[MASK] dog ran [MASK]!", "he went to the [MASK]"]
    answers = model.fill_mask(texts, top_k=len(VOCAB))
    rows, _ = model.encode_masked(texts)
    length = max(len(r["input_ids"]) for r in rows)
    masks = max(len(r["masked_lm_positions"]) for r in rows)
    inputs = {k: np.zeros([len(rows), n], np.int32) for k, n in (
        ("input_ids", length), ("input_mask", length), ("token_type_ids", length),
        ("masked_lm_positions", masks), ("masked_lm_ids", masks))}
    inputs["masked_lm_weights"] = np.zeros([len(rows), masks], np.float32)
    inputs["next_sentence_labels"] = np.zeros([len(rows), 1], np.int32)
    for b, r in enumerate(rows):
        inputs["input_ids"][b, :len(r["input_ids"])] = r["input_ids"]
        inputs["input_mask"][b, :len(r["input_ids"])] = 1
        inputs["masked_lm_positions"][b, :len(r["masked_lm_positions"])] = r["masked_lm_positions"]
    np.savez(tmp_path / "inputs.npz", **inputs)
    run_oracle("model_oracle", "restore", original_checkpoint["config"], tmp_path / "inputs.npz",
               original_checkpoint["ckpt"], tmp_path / "outputs.npz", "heads")
    theirs = np.exp(np.load(tmp_path / "outputs.npz")["masked_lm_log_probs"]).reshape(
        len(rows), masks, -1)  # [B, masks, vocab]
    for b, (r, a) in enumerate(zip(rows, answers)):
        per_mask = [a] if isinstance(a[0], dict) else a
        assert len(per_mask) == len(r["masked_lm_positions"])
        for m, mask_answers in enumerate(per_mask):
            ours = np.zeros(len(VOCAB))
            for x in mask_answers:
                ours[x["token"]] = x["score"]
            np.testing.assert_allclose(ours, theirs[b, m], atol=MODEL_ATOL,
                                       err_msg="text %d, [MASK] %d" % (b, m))

    # Next sentence: the same pairs through the original's graph.
    pairs = [("he went to the store.", "he bought milk."), ("the cat sat", "it was late")]
    ours = model.next_sentence_probability([a for a, _ in pairs], [b for _, b in pairs])
    features = model.tokenizer([a for a, _ in pairs], [b for _, b in pairs], padding=True,
                               truncation=True, max_length=model.max_seq_length,
                               return_tensors="np")
    n, s = features["input_ids"].shape
    nsp_inputs = {"input_ids": features["input_ids"], "input_mask": features["input_mask"],
                  "token_type_ids": features["segment_ids"],
                  "masked_lm_positions": np.zeros([n, 1], np.int32),
                  "masked_lm_ids": np.zeros([n, 1], np.int32),
                  "masked_lm_weights": np.zeros([n, 1], np.float32),
                  "next_sentence_labels": np.zeros([n, 1], np.int32)}
    np.savez(tmp_path / "nsp.npz", **nsp_inputs)
    run_oracle("model_oracle", "restore", original_checkpoint["config"], tmp_path / "nsp.npz",
               original_checkpoint["ckpt"], tmp_path / "nsp_out.npz", "heads")
    theirs = np.exp(np.load(tmp_path / "nsp_out.npz")["next_sentence_log_probs"])[:, 0]
    np.testing.assert_allclose(ours, theirs, atol=MODEL_ATOL, err_msg="next_sentence")


# ---------------------------------------------------------------------------
# The export
# ---------------------------------------------------------------------------

_BARE_FILL_MASK = r'''
import json
out = tf.saved_model.load(sys.argv[1]).signatures["serving_default"](
    text_a=tf.constant(json.load(open(sys.argv[2], encoding="utf-8"))))
result = {k: v.numpy().tolist() for k, v in out.items()}
result["token_strings"] = [[[s.decode("utf-8") for s in k] for k in m]
                           for m in result["token_strings"]]
result["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
json.dump(result, open(sys.argv[3], "w"))
'''


@pytest.mark.slow
def test_the_export_answers_as_fill_mask_in_a_plain_tensorflow_process(release, model,
                                                                       tmp_path):
    from bert_tf.export.saved_model import export_saved_model
    from tests import bare_tf
    path = export_saved_model("fill_mask", os.path.join(release, "bert_config.json"),
                              os.path.join(release, "vocab.txt"), True, release,
                              str(tmp_path / "export"), max_seq_length=16, version=1, top_k=4)
    texts = ["The cat [MASK] on the mat.", "[MASK] dog ran [MASK]!", "cats[MASK].",
             "THE [MASK] sat", "no mask here", "[MASK] " + "cat " * 20 + "[MASK]"]
    with open(tmp_path / "texts.json", "w", encoding="utf-8") as f:
        json.dump(texts, f)
    bare_tf.run_script(bare_tf.PRELUDE + _BARE_FILL_MASK,
                       [path, tmp_path / "texts.json", tmp_path / "out.json"], tmp_path)
    with open(tmp_path / "out.json", encoding="utf-8") as f:
        got = json.load(f)
    assert got.pop("modules") == []  # tensorflow only: no bert_tf, Keras or tensorflow_text
    assert got["num_masks"] == [1, 2, 1, 1, 0, 1]  # the last text's second [MASK] is cut off
    width = 2
    assert np.array(got["token_ids"]).shape == (len(texts), width, 4)
    model.max_seq_length = 16
    try:
        expected = model.fill_mask(texts[:4], top_k=4)
        rows, _ = model.encode_masked(texts[:4])
        # The text cut at 16 tokens: its first [MASK] as fill_mask answers it alone.
        cut = model.fill_mask("[MASK] " + "cat " * 13, top_k=4)
    finally:
        model.max_seq_length = TINY_CONFIG["max_position_embeddings"]
    expected = [a if isinstance(a[0], list) else [a] for a in expected] + [[], [cut]]
    positions = [r["masked_lm_positions"] for r in rows] + [[], [1]]
    for b, (masks, want_positions) in enumerate(zip(expected, positions)):
        assert got["mask_positions"][b] == want_positions + [-1] * (width - len(want_positions))
        for m in range(width):
            if m >= len(masks):
                assert got["token_ids"][b][m] == [-1] * 4 and got["scores"][b][m] == [0.0] * 4
                assert got["token_strings"][b][m] == [""] * 4
                continue
            assert got["token_ids"][b][m] == [a["token"] for a in masks[m]], (b, m)
            assert got["token_strings"][b][m] == [a["token_str"] for a in masks[m]]
            np.testing.assert_allclose(got["scores"][b][m], [a["score"] for a in masks[m]],
                                       atol=1e-6, err_msg="text %d, [MASK] %d" % (b, m))
