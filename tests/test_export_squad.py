"""SquadServingModule: run_squad's predict path as one core-TF graph.

The reference is the Python port: read_squad_examples + convert_examples_to_features
+ the same model on the features + write_predictions (predictions.json,
nbest_predictions.json). Checked:
  * answers and scores of a random tiny BertSquad on real text (several
    doc-stride windows per context) and on edge contexts;
  * a fake model with coarse logits (many exact ties), so the candidate
    order and tie-breaking are the original's;
  * get_final_text alone on many spans of every context;
  * a SavedModel in a fresh process where tensorflow_text, keras and bert_tf
    cannot be imported; batch of one == batch of many.
"""

import collections
import json

import numpy as np
import pytest
import tensorflow as tf

from bert_tf import tokenization
from bert_tf.tasks.squad import data as squad_data
from bert_tf.tasks.squad import data_predictions as squad_predictions
from bert_tf.data import squad_windows
from bert_tf.tasks.squad.serving import SquadServingModule
from bert_tf.tokenization.graph_tokenizer import GraphTokenizer
from tests.data.test_squad_data import _write_vocab
from tests import bare_tf
from tests.squad_task import write_squad_task
from tests.squad_reference import check_is_max_context

MAX_SEQ_LENGTH = 64
DOC_STRIDE = 16
MAX_QUERY_LENGTH = 24
N_BEST_SIZE = 20
MAX_ANSWER_LENGTH = 30

# Contexts that stress the text mapping: punctuation inside words, accents,
# CJK, [UNK] words, control and odd whitespace characters, U+202F, and a
# context with no words at all.
EDGE_CONTEXTS = [
    ("Who lived (1895-1943)?", "Johann Strauß lived (1895-1943). He wrote \u201cthe blue\u201d "
     "waltz, e.g. op.314; his son's works—many—were lost. Caf\u00e9 na\u00efve r\u00e9sum\u00e9."),
    ("What is \u535a?", "The char \u535a\u7269\u9986 is CJK; so is x\u535ay. "
     "A\tB\r\nC\u202fD E\u00a0F tab\u0001ctl zero\u200bwidth ~weird~ *stars* `tick`."),
    ("Which sigma?", "\u039f\u0394\u039f\u03a3 \u039f\u0394\u039f\u03a3. "
     "ABC\u0301D \u0130stanbul don't (nested (parens)) [brackets] \"quoted\"."),
    ("Nothing here?", "   \t "),
    ("Long word?", "a" * 230 + " then,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z end."),
]


def _squad_json(path, num_questions):
    write_squad_task(path, num_questions)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    data["data"].append({"title": "edges", "paragraphs": [
        {"context": context, "qas": [{"id": "edge%d" % i, "question": question, "answers": []}]}
        for i, (question, context) in enumerate(EDGE_CONTEXTS)]})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    paragraphs = [(p["context"], [(qa["question"], None, None) for qa in p["qas"]])
                  for entry in data["data"] for p in entry["paragraphs"]]
    pairs = [(qa["question"], p["context"]) for entry in data["data"]
             for p in entry["paragraphs"] for qa in p["qas"]]
    return paragraphs, pairs


class _FakeModel(tf.Module):
    """Coarse deterministic logits (few distinct values: many exact ties)."""

    def __call__(self, features, training=False):
        ids = tf.cast(features["input_ids"], tf.int32)
        pos = tf.range(tf.shape(ids)[1])[None, :]
        start = tf.cast((ids * 7 + pos * 3) % 5, tf.float32) * 0.5
        end = tf.cast((ids * 5 + pos * 2 + features["segment_ids"]) % 4, tf.float32) * 0.5
        return {"start_logits": start, "end_logits": end}


@pytest.fixture(scope="module")
def squad_task(tmp_path_factory):
    d = tmp_path_factory.mktemp("export_squad")
    input_file = str(d / "dev.json")
    paragraphs, pairs = _squad_json(input_file, 36)
    vocab = _write_vocab(d / "vocab.txt", paragraphs)
    return collections.namedtuple("Task", "dir input_file vocab pairs")(d, input_file, vocab, pairs)


@pytest.fixture(scope="module")
def model(squad_task):
    import keras
    from bert_tf.tasks.squad.model import BertSquad
    from tests.test_pretraining import tiny_config
    keras.utils.set_random_seed(3)
    vocab_size = len(tokenization.load_vocab(squad_task.vocab))
    config = tiny_config(vocab_size=vocab_size, max_position_embeddings=MAX_SEQ_LENGTH,
                         initializer_range=1.0)
    model = BertSquad(config)
    zeros = np.zeros([1, MAX_SEQ_LENGTH], np.int32)
    model({"input_ids": zeros, "input_mask": zeros, "segment_ids": zeros})
    return model


@pytest.fixture(scope="module")
def real_module(squad_task, model):
    return make_module(squad_task, model)


@pytest.fixture(scope="module")
def fake_module(squad_task):
    return make_module(squad_task, _FakeModel())


def reference_predictions(task, model, tmp_path, do_lower_case=True, n_best_size=N_BEST_SIZE,
                          max_answer_length=MAX_ANSWER_LENGTH):
    """write_predictions' answers and top n-best scores, and the features per example."""
    full = tokenization.FullTokenizer(task.vocab, do_lower_case=do_lower_case)
    examples = squad_data.read_squad_examples(task.input_file, is_training=False)
    features = []
    squad_data.convert_examples_to_features(examples, full, MAX_SEQ_LENGTH, DOC_STRIDE,
                                            MAX_QUERY_LENGTH, False, features.append)
    batch = {k: tf.constant([getattr(f, k) for f in features], tf.int32)
             for k in ("input_ids", "input_mask", "segment_ids")}
    out = model(batch, training=False)
    results = [squad_predictions.RawResult(f.unique_id, s, e) for f, s, e in zip(
        features, np.asarray(out["start_logits"]), np.asarray(out["end_logits"]))]
    nbest_file = str(tmp_path / "nbest.json")
    predictions = squad_predictions.write_predictions(
        examples, features, results, n_best_size, max_answer_length, do_lower_case,
        str(tmp_path / "predictions.json"), nbest_file, None)
    with open(nbest_file, encoding="utf-8") as f:
        nbest = json.load(f)
    windows = collections.Counter(f.example_index for f in features)
    return ([predictions[e.qas_id] for e in examples],
            [nbest[e.qas_id][0]["start_logit"] + nbest[e.qas_id][0]["end_logit"]
             for e in examples],
            [windows[i] for i in range(len(examples))])


def make_module(task, model, do_lower_case=True, **overrides):
    kwargs = dict(max_seq_length=MAX_SEQ_LENGTH, doc_stride=DOC_STRIDE,
                  max_query_length=MAX_QUERY_LENGTH, n_best_size=N_BEST_SIZE,
                  max_answer_length=MAX_ANSWER_LENGTH)
    kwargs.update(overrides)
    return SquadServingModule(model, GraphTokenizer(task.vocab, do_lower_case=do_lower_case),
                              **kwargs)


def serve(module, pairs):
    out = module.serving_default(
        question=tf.constant([q.encode("utf-8") for q, _ in pairs], tf.string),
        context=tf.constant([c.encode("utf-8") for _, c in pairs], tf.string))
    return {k: v.numpy() for k, v in out.items()}


def _decode(answers):
    return [a.decode("utf-8") for a in answers]


def _match_report(got, want, pairs):
    bad = [(i, g, w) for i, (g, w) in enumerate(zip(got, want)) if g != w]
    return "%d/%d match; first mismatches: %r" % (len(got) - len(bad), len(got), bad[:5])


@pytest.mark.slow
def test_matches_write_predictions(squad_task, model, real_module, tmp_path):
    want, want_score, want_windows = reference_predictions(squad_task, model, tmp_path)
    assert max(want_windows) >= 3  # long contexts span several windows
    out = serve(real_module, squad_task.pairs)
    got = _decode(out["answer"])
    assert got == want, _match_report(got, want, squad_task.pairs)
    np.testing.assert_allclose(out["score"], want_score, atol=1e-5, rtol=0)
    assert out["num_windows"].tolist() == want_windows
    assert "empty" in got  # the context without words
    assert any(a for a in got if a not in ("empty",))
    n = len(squad_task.pairs)
    max_windows = max(want_windows)
    assert out["start_logits"].shape == (n, max_windows, MAX_SEQ_LENGTH)
    assert out["end_logits"].shape == (n, max_windows, MAX_SEQ_LENGTH)
    for i, w in enumerate(want_windows):
        assert not out["start_logits"][i, w:].any()
        if out["window"][i] >= 0:
            s, e, k = out["start_index"][i], out["end_index"][i], out["window"][i]
            assert out["score"][i] == pytest.approx(
                float(out["start_logits"][i, k, s]) + float(out["end_logits"][i, k, e]), abs=1e-5)
        else:
            assert got[i] == "empty"


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case,n_best,max_answer",
                         [(True, N_BEST_SIZE, MAX_ANSWER_LENGTH), (False, 3, 4)])
def test_ties_follow_the_original_order(squad_task, fake_module, tmp_path, do_lower_case,
                                       n_best, max_answer):
    """Coarse logits: the best span is decided by the original's candidate order."""
    fake = _FakeModel()
    want, want_score, _ = reference_predictions(squad_task, fake, tmp_path, do_lower_case,
                                                n_best, max_answer)
    if do_lower_case and (n_best, max_answer) == (N_BEST_SIZE, MAX_ANSWER_LENGTH):
        module = fake_module
    else:
        module = make_module(squad_task, fake, do_lower_case, n_best_size=n_best,
                             max_answer_length=max_answer)
    out = serve(module, squad_task.pairs)
    got = _decode(out["answer"])
    assert got == want, _match_report(got, want, squad_task.pairs)
    np.testing.assert_allclose(out["score"], want_score, atol=1e-5, rtol=0)
    # The fake logits do tie: several candidates share the best score.
    assert len(set(np.round(out["score"], 3))) < len(out["score"]) // 2


@pytest.mark.slow
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_final_text_matches_get_final_text(squad_task, do_lower_case):
    """get_final_text on many WordPiece spans of every context."""
    full = tokenization.FullTokenizer(squad_task.vocab, do_lower_case=do_lower_case)
    examples = squad_data.read_squad_examples(squad_task.input_file, is_training=False)
    rng = np.random.RandomState(0)
    preds, origs, want = [], [], []
    seen = set()
    for example in examples:
        if id(example.doc_tokens) in seen:
            continue
        seen.add(id(example.doc_tokens))
        doc = squad_data._TokenizedDoc(example.doc_tokens, full)
        n = len(doc.all_doc_tokens)
        spans = [(i, i) for i in range(n)]  # every single token
        for _ in range(n // 2):  # spans of up to MAX_ANSWER_LENGTH tokens
            a = rng.randint(0, n)
            spans.append((a, min(n - 1, a + rng.randint(0, MAX_ANSWER_LENGTH))))
        for a, b in spans:
            tok_text = " ".join(doc.all_doc_tokens[a:b + 1])
            tok_text = tok_text.replace(" ##", "").replace("##", "")
            tok_text = " ".join(tok_text.strip().split())
            orig_text = " ".join(example.doc_tokens[doc.tok_to_orig_index[a]:
                                                    doc.tok_to_orig_index[b] + 1])
            preds.append(tok_text)
            origs.append(orig_text)
            want.append(squad_predictions.get_final_text(tok_text, orig_text, do_lower_case))
    # Texts get_final_text falls back on, or that need a later occurrence.
    extra = [("", "abc"), ("", ""), ("x", ""), ("b", "a-b-b"), ("zz", "a b"),
             ("ab", "a b"), ("a b", "ab"), ("johann", "Johann's"), ("1943", "(1895-1943)."),
             ("[UNK]", "[UNK]"), ("s", "'s")]
    for p, o in extra:
        preds.append(p)
        origs.append(o)
        want.append(squad_predictions.get_final_text(p, o, do_lower_case))
    module = SquadServingModule(_FakeModel(), GraphTokenizer(squad_task.vocab, do_lower_case),
                                max_seq_length=MAX_SEQ_LENGTH, doc_stride=DOC_STRIDE,
                                max_query_length=MAX_QUERY_LENGTH)
    final = tf.function(module._final_text, autograph=False)
    got = _decode(final(tf.constant([p.encode("utf-8") for p in preds]),
                        tf.constant([o.encode("utf-8") for o in origs])).numpy())
    assert len(got) > 500
    assert got == want, _match_report(got, want, list(zip(preds, origs)))
    # The alignment both trims (a sub-span of orig_text) and falls back.
    assert sum(g != o for g, o in zip(got, origs)) > 10
    assert sum(g == o for g, o in zip(got, origs)) > 10


def test_doc_windows_match_convert_examples_to_features():
    """Spans and max-context flags for many (tokens, max_tokens_for_doc, stride)."""
    cases = [(t, m, stride) for t in (0, 1, 2, 5, 17, 40, 63) for m in (1, 2, 3, 7, 16, 40)
             for stride in (1, 2, 3, 5, 16, 128)]
    for stride in sorted({c[2] for c in cases}):
        batch = [c for c in cases if c[2] == stride]
        out = squad_windows.doc_windows(tf.constant([c[0] for c in batch]),
                                         tf.constant([c[1] for c in batch]), stride)
        num_windows, f_example, _, f_start, f_length, is_max = [x.numpy() for x in out]
        f = 0
        for i, (t, m, _) in enumerate(batch):
            spans = squad_windows.doc_spans(t, m, stride)
            assert num_windows[i] == len(spans), (t, m, stride)
            for k, span in enumerate(spans):
                assert (f_example[f], f_start[f], f_length[f]) == (i, span.start, span.length)
                want = [check_is_max_context(spans, k, span.start + d)
                        for d in range(span.length)]
                assert is_max[f, :span.length].tolist() == want, (t, m, stride, k)
                assert not is_max[f, span.length:].any()
                f += 1
        assert f == len(f_example)


@pytest.mark.slow
def test_saved_model_in_bare_process(squad_task, real_module, tmp_path):
    module = real_module
    export = str(tmp_path / "saved")
    tf.saved_model.save(module, export, signatures={"serving_default": module.serving_default})
    pairs = squad_task.pairs
    want = serve(module, pairs)
    texts_file = tmp_path / "pairs.json"
    texts_file.write_text(json.dumps(pairs), encoding="utf-8")
    loader = bare_tf.PRELUDE + r'''
import json
pairs = json.load(open(sys.argv[2], encoding="utf-8"))
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]

def run(batch):
    out = serve(question=tf.constant([q.encode("utf-8") for q, _ in batch]),
                context=tf.constant([c.encode("utf-8") for _, c in batch]))
    return {"answer": [a.decode("utf-8") for a in out["answer"].numpy()],
            "score": out["score"].numpy().tolist(),
            "num_windows": out["num_windows"].numpy().tolist()}

result = {"many": run(pairs), "one": [run([p]) for p in pairs[-12:]]}
result["modules"] = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
json.dump(result, open(sys.argv[3], "w"))
'''
    bare_tf.run_script(loader, [export, texts_file, tmp_path / "out.json"], tmp_path)
    result = json.loads((tmp_path / "out.json").read_text())
    assert result["modules"] == []
    assert result["many"]["answer"] == _decode(want["answer"])
    np.testing.assert_allclose(result["many"]["score"], want["score"], atol=1e-5, rtol=0)
    # Batch of one == batch of many (the last 12: the edge contexts and the
    # longest real ones).
    many = {k: v[-12:] for k, v in result["many"].items()}
    assert [r["answer"][0] for r in result["one"]] == many["answer"]
    np.testing.assert_allclose([r["score"][0] for r in result["one"]], many["score"],
                               atol=1e-5, rtol=0)
    assert [r["num_windows"][0] for r in result["one"]] == many["num_windows"]


def test_empty_batch_and_flags(squad_task, fake_module):
    module = fake_module
    out = serve(module, [])
    assert out["answer"].shape == (0,)
    assert out["start_logits"].shape == (0, 0, MAX_SEQ_LENGTH)
    out = serve(module, [("Anything?", " \t\u202f"), ("", "")])  # no windows at all
    assert _decode(out["answer"]) == ["empty", "empty"]
    assert out["score"].tolist() == [0.0, 0.0]
    assert out["num_windows"].tolist() == [0, 0]
    assert out["window"].tolist() == [-1, -1]
    assert out["start_logits"].shape == (2, 0, MAX_SEQ_LENGTH)
    from bert_tf.errors import UserError
    with pytest.raises(UserError, match="max_query_length"):
        make_module(squad_task, _FakeModel(), max_query_length=MAX_SEQ_LENGTH - 3)
