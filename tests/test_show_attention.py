"""tools/show_attention.py: every layer's and head's attention as one self-contained HTML page.

The tool's run calls it in this process (`toolrun.run_tool`: the flags parsed
and the library called as the command line does); the command line itself
runs as a user runs it for the exit status and stderr of a mistake.
"""

import html
import json
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from bert_tf.runs import attention_html
from tests.conftest import TINY_CONFIG, write_config

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TOOL = os.path.join(REPO, "tools", "show_attention.py")
SVG = "{http://www.w3.org/2000/svg}"
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", ".", ",", "<", ">", "/", "&",
         "the", "bank", "by", "river", "was", "flood", "##ed", "water", "rose", "script"]
CELL = re.compile(r"M(\d+) (\d+)h1v1h-1z$")
TITLE = re.compile(r"^(.*) \u2192 (.*): (-?\d+\.\d{4})$")


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


def parse_page(text):
    """{svg id: {"rows", "columns": labels, "cells": {(row, col): (query, key, value)},
    "opacity": {(row, col): float}}}, and the data block's JSON."""
    panels = {}
    for markup in re.findall(r"<svg\b.*?</svg>", text, re.S):
        svg = ET.fromstring(markup)  # each heat map is well-formed XML on its own
        rows = [t.text for t in svg.iter(SVG + "text") if t.get("text-anchor") == "end"]
        columns = [t.text for t in svg.iter(SVG + "text") if "rotate(-90)" in
                   (t.get("transform") or "")]
        cells, opacity = {}, {}
        for path in svg.iter(SVG + "path"):
            column, row = (int(x) for x in CELL.match(path.get("d")).groups())
            query, key, value = TITLE.match(path.find(SVG + "title").text).groups()
            cells[row, column] = (query, key, float(value))
            opacity[row, column] = float(path.get("fill-opacity", "0"))
        panels[svg.get("id")] = {"rows": rows, "columns": columns, "cells": cells,
                                 "opacity": opacity}
    block = re.search(r'<script type="application/json" id="attention-data">(.*?)</script>',
                      text, re.S)
    return panels, json.loads(block.group(1))


def check_panel(panel, tokens, weights):
    """The heat map shows `weights` [n, n] (row = query) over `tokens`, every cell."""
    n = len(tokens)
    assert panel["rows"] == tokens and panel["columns"] == tokens
    assert sorted(panel["cells"]) == [(i, j) for i in range(n) for j in range(n)]
    for (i, j), (query, key, value) in panel["cells"].items():
        assert (query, key) == (tokens[i], tokens[j])
        assert abs(value - weights[i, j]) <= 0.5e-4 + 1e-7, (i, j, value, weights[i, j])
        assert abs(panel["opacity"][i, j] - weights[i, j]) <= 0.005 + 1e-7


# ------------------------------------------------------------------ the page


def test_page_shows_every_layer_and_head_with_its_values():
    rng = np.random.RandomState(0)
    tokens = ["[CLS]", "the", "bank", "</script>", "a&b", "[SEP]", "water", "[SEP]"]
    n = len(tokens)
    attentions = _softmax(rng.randn(3, 4, n, n) * 3)
    attentions[0, 0, 0] = [1.0] + [0.0] * (n - 1)
    attentions[0, 0, 1, :2] = [2.5e-9, 1.0 - 2.5e-9]
    info = {"text_a": "the bank </script><!-- a&b", "num_hidden_layers": 3}
    page = attention_html.render_html(tokens, attentions, "the bank </script>", "3 layers",
                                      segment_ids=[0] * 6 + [1] * 2, info=info)
    panels, data = parse_page(page)
    assert len(panels) == 3 * (1 + 4)
    for layer in range(3):
        check_panel(panels["layer-%d-average" % layer], tokens,
                    attentions[layer].astype(np.float64).mean(0))
        for head in range(4):
            check_panel(panels["layer-%d-head-%d" % (layer, head)], tokens,
                        attentions[layer, head])
    # The raw weights: every float32 exactly, and the texts intact.
    assert data["tokens"] == tokens
    assert data["text_a"] == info["text_a"] and data["num_hidden_layers"] == 3
    assert data["heads"] == [[0, 1, 2, 3]] * 3
    np.testing.assert_array_equal(np.asarray(data["attentions"], np.float32), attentions)
    # Escaped wherever a token or the text could end an element early.
    assert page.count("</script>") == 1 and "<!--" not in page
    assert "<h1>the bank &lt;/script&gt;</h1>" in page
    # [CLS] and [SEP] are labelled (bold, coloured) on both axes of every map.
    assert page.count('class="sp">[CLS]</text>') == 2 * 15
    assert page.count('class="sp">[SEP]</text>') == 4 * 15


def test_page_needs_nothing_from_outside():
    tokens = ["[CLS]", "x", "[SEP]"]
    page = attention_html.render_html(tokens, _softmax(np.zeros((2, 2, 3, 3))), "x")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    without_namespace = page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    for needle in ("http:", "https:", "//", "src=", "<link", "@import", "url(", "<script>",
                   "<script src"):
        assert needle not in without_namespace, needle
    # The one script element is data, not code.
    assert re.findall(r"<script[^>]*>", page) == [
        '<script type="application/json" id="attention-data">']


def test_pruned_layers_show_the_heads_they_kept():
    tokens = ["[CLS]", "a", "b", "[SEP]"]
    layers = [_softmax(np.random.RandomState(1).randn(4, 4, 4)),
              _softmax(np.random.RandomState(2).randn(2, 4, 4))]
    page = attention_html.render_html(tokens, layers, "a b",
                                      head_indices=[[0, 1, 2, 3], [1, 3]])
    panels, data = parse_page(page)
    assert sorted(panels) == sorted(["layer-0-average", "layer-1-average"] +
                                    ["layer-0-head-%d" % h for h in range(4)] +
                                    ["layer-1-head-1", "layer-1-head-3"])
    check_panel(panels["layer-1-head-3"], tokens, layers[1][1])
    assert data["heads"] == [[0, 1, 2, 3], [1, 3]]
    assert "average of the 2 heads" in page
    with pytest.raises(ValueError):
        attention_html.render_html(tokens, layers, "a b", head_indices=[[0, 1, 2, 3], [1]])
    with pytest.raises(ValueError):
        attention_html.render_html(tokens[:3], layers, "a b")


def test_bert_base_page_stays_small():
    """12 layers x 12 heads on 16 tokens: about 4 MB at most, written in well under a second."""
    tokens = ["[CLS]"] + ["tok%d" % i for i in range(14)] + ["[SEP]"]
    attentions = _softmax(np.random.RandomState(3).randn(12, 12, 16, 16) * 4)
    page = attention_html.render_html(tokens, attentions, "sixteen tokens")
    size = len(page.encode("utf-8"))
    assert size < 4.5e6
    # What the run's warning about a large page estimates beforehand.
    assert 0.8 < attention_html.estimated_size(16, 12 * 13) / size < 1.25
    assert page.count("<svg") == 12 * 13


# ------------------------------------------------------------------ the run


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """A tiny model's config, vocab and checkpoint, written as a release directory."""
    from bert_tf.modeling import checkpoint
    from bert_tf.modeling.bert_model import BertModel
    from bert_tf.modeling.config import BertConfig
    d = tmp_path_factory.mktemp("show_attention")
    (d / "vocab.txt").write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    config = write_config(d / "bert_config.json", dict(TINY_CONFIG, vocab_size=len(VOCAB)))
    ckpt = checkpoint.save_checkpoint(BertModel(BertConfig.from_json_file(config)),
                                      str(d / "bert_model.ckpt"))
    return {"dir": d, "vocab": str(d / "vocab.txt"), "config": config, "ckpt": ckpt}


def _model_attentions(s, input_ids, segment_ids, pad_to):
    """The model's attention probabilities on the input padded to `pad_to`, cut back to it."""
    from bert_tf.modeling.config import BertConfig
    from bert_tf.runs.extract_features import load_model
    model = load_model(BertConfig.from_json_file(s["config"]), s["ckpt"])
    n = len(input_ids)
    pad = [0] * (pad_to - n)
    outputs = model(np.asarray([list(input_ids) + pad], np.int32),
                    input_mask=np.asarray([[1] * n + pad], np.int32),
                    token_type_ids=np.asarray([list(segment_ids) + pad], np.int32),
                    training=False, output_attentions=True)
    assert len(outputs["attentions"]) == TINY_CONFIG["num_hidden_layers"]
    return np.stack([np.asarray(a)[0, :, :n, :n] for a in outputs["attentions"]])


def test_page_holds_the_models_attention(setup, tmp_path):
    from bert_tf import tokenization
    from bert_tf.runs.show_attention import show_attention
    s = setup
    output = str(tmp_path / "out" / "attention.html")
    tokens = show_attention("The bank by the river was flooded.", output, s["config"],
                            s["ckpt"], s["vocab"], text_b="The water rose",
                            max_seq_length=24)
    expected = ["[CLS]", "the", "bank", "by", "the", "river", "was", "flood", "##ed", ".",
                "[SEP]", "the", "water", "rose", "[SEP]"]
    assert tokens == expected
    assert os.listdir(tmp_path / "out") == ["attention.html"]  # no temporary file, no lock
    with open(output, encoding="utf-8") as f:
        page = f.read()
    panels, data = parse_page(page)
    segment_ids = [0] * 11 + [1] * 4
    assert data["tokens"] == expected and data["segment_ids"] == segment_ids
    assert data["text_b"] == "The water rose"
    assert (data["num_hidden_layers"], data["num_attention_heads"], data["hidden_size"]) == (
        2, 4, 32)
    # The weights of the model run as the original's tools run it: padded to
    # max_seq_length, the padding masked.
    tokenizer = tokenization.FullTokenizer(s["vocab"], do_lower_case=True)
    model = _model_attentions(s, tokenizer.convert_tokens_to_ids(expected), segment_ids, 24)
    ours = np.asarray(data["attentions"], np.float32)
    assert ours.shape == (2, 4, 15, 15)
    np.testing.assert_allclose(ours, model, rtol=0, atol=1e-6)
    np.testing.assert_allclose(ours.sum(-1), 1.0, atol=1e-5)
    assert len(panels) == 2 * 5
    for layer in range(2):
        check_panel(panels["layer-%d-average" % layer], expected, model[layer].mean(0))
        for head in range(4):
            check_panel(panels["layer-%d-head-%d" % (layer, head)], expected,
                        model[layer, head])
    assert "2 layers, 4 heads, hidden size 32" in page
    assert "<h1>The bank by the river was flooded. | The water rose</h1>" in page


def test_a_text_longer_than_max_seq_length_is_cut_with_a_note(setup, tmp_path):
    from bert_tf.runs.show_attention import show_attention
    s = setup
    output = str(tmp_path / "attention.html")
    tokens = show_attention("the river " * 10, output, s["config"], s["ckpt"], s["vocab"],
                            max_seq_length=8)
    assert tokens == ["[CLS]"] + ["the", "river"] * 3 + ["[SEP]"]
    with open(output, encoding="utf-8") as f:
        page = f.read()
    assert ("The text has 22 tokens with [CLS] and [SEP], more than --max_seq_length=8: "
            "cut to 8") in html.unescape(page)
    assert parse_page(page)[1]["tokens"] == tokens


def _flags(s, output, **overrides):
    flags = {"bert_config_file": s["config"], "vocab_file": s["vocab"],
             "init_checkpoint": s["ckpt"], "text_a": "The bank by the river was flooded",
             "output_file": output, "max_seq_length": "32"}
    flags.update(overrides)
    return ["--%s=%s" % kv for kv in flags.items() if kv[1] is not None]


@pytest.fixture(scope="module")
def tool_page(setup, tmp_path_factory):
    """The tool run in this process: (its log text, path of the page)."""
    from tests.tools import toolrun
    output = str(tmp_path_factory.mktemp("tool") / "attention.html")
    _, log = toolrun.run_tool("show_attention", _flags(setup, output))
    return log, output


def test_tool_writes_the_page(tool_page):
    log, output = tool_page
    assert "Traceback" not in log
    assert os.listdir(os.path.dirname(output)) == ["attention.html"]
    with open(output, encoding="utf-8") as f:
        panels, data = parse_page(f.read())
    tokens = ["[CLS]", "the", "bank", "by", "the", "river", "was", "flood", "##ed", "[SEP]"]
    assert data["tokens"] == tokens
    assert len(panels) == 2 * 5 and panels["layer-1-head-3"]["rows"] == tokens
    assert data["text_a"] == "The bank by the river was flooded" and data["text_b"] is None


@pytest.mark.slow
def test_bad_input_is_one_line(setup, tmp_path):
    from tests.tools import toolrun
    s = setup
    deeper = write_config(tmp_path / "deeper.json",
                          dict(TINY_CONFIG, num_hidden_layers=3, vocab_size=len(VOCAB)))
    output = str(tmp_path / "out" / "attention.html")
    cases = [
        ("no --text_a", _flags(s, output, text_a=None),
         "--text_a is required (the text whose attention is shown)"),
        ("empty --text_a", _flags(s, output, text_a=""),
         "--text_a='': no text (the text whose attention is shown)"),
        ("blank --text_a", _flags(s, output, text_a="   "),
         "--text_a='   ': no text (the text whose attention is shown)"),
        ("no --init_checkpoint", _flags(s, output, init_checkpoint=None),
         "--init_checkpoint is required"),
        ("no --output_file", _flags(s, None), "--output_file is required"),
        ("not .html", _flags(s, str(tmp_path / "attention.svg")),
         "--output_file=%s: must end in .html (one self-contained HTML page is written)"
         % (tmp_path / "attention.svg")),
        ("max_seq_length over the positions", _flags(s, output, max_seq_length="65"),
         "--max_seq_length=65: Cannot use sequence length 65 because the BERT model was "
         "only trained up to sequence length 64 (max_position_embeddings in %s)" % s["config"]),
    ]
    # A checkpoint that does not fit the config, as the user sees it: one line,
    # exit 2 (a child process, while the cases run here).
    cli = toolrun.start([sys.executable, TOOL] + _flags(s, output, bert_config_file=deeper))
    results = toolrun.user_errors_here("show_attention", cases)
    rc, _, err = toolrun.finish(cli)
    for name, _, expected in cases:
        assert results[name] == expected, (name, results[name])
    assert rc == 2, err[-3000:]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1 and "Traceback" not in err, err[-3000:]
    assert errors[0].startswith("error: --init_checkpoint=%s" % s["ckpt"])
    assert "bert/encoder/layer_2/" in errors[0] and "missing" in errors[0]
    assert not os.path.exists(os.path.dirname(output))


def _browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        if shutil.which(name):
            return shutil.which(name)
    return None


@pytest.mark.skipif(_browser() is None, reason="no headless browser (chromium) on PATH")
def test_a_browser_renders_the_page(tool_page, tmp_path):
    """Headless Chromium parses every heat map, keeps the data block, and paints the cells."""
    _, output = tool_page
    command = [_browser(), "--headless", "--no-sandbox", "--disable-gpu",
               "--user-data-dir=%s" % (tmp_path / "profile")]
    url = "file://" + os.path.abspath(output)
    dom = subprocess.run(command + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=120).stdout
    assert dom.count("<svg") == 2 * 5
    assert dom.count("<path") == 2 * 5 * 10 * 10
    with open(output, encoding="utf-8") as f:
        assert parse_page(dom)[1] == parse_page(f.read())[1]
    shot = str(tmp_path / "page.png")
    subprocess.run(command + ["--screenshot=%s" % shot, "--window-size=1200,900", url],
                   capture_output=True, timeout=120)
    image = pytest.importorskip("PIL.Image")
    pixels = np.asarray(image.open(shot).convert("RGB")).reshape(-1, 3).astype(int)
    # The heads' cells (dark blue, #08306b, over white) and the averages' (dark red).
    bluish = (pixels[:, 2] - pixels[:, 0] > 25) & (pixels[:, 2] < 250)
    reddish = (pixels[:, 0] - pixels[:, 2] > 15) & (pixels[:, 0] < 255)
    assert bluish.sum() > 1000 and reddish.sum() > 100
