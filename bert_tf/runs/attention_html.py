"""Attention weights as one self-contained HTML page of SVG heat maps (no TensorFlow).

What `bert_tf.runs.show_attention` writes: for every layer, the average of
its heads and then each head, as a heat map whose row is the query token (the
one attending) and whose column is the key token (the one attended to); each
row sums to 1. Every cell is an SVG square whose `<title>` (the browser's
tooltip) gives the two tokens and the weight. The raw weights are embedded as
JSON in `<script type="application/json" id="attention-data">`.

The page needs nothing but a browser: no network, no script, no external
style sheet or font.
"""

import html
import json
import math

import numpy as np

# The cells' colour (weight 1); weight 0 is the white background. The heads'
# average gets its own colour, so that it is not taken for a head.
HEAD_COLOUR = "#08306b"
AVERAGE_COLOUR = "#67000d"
SPECIAL_TOKENS = ("[CLS]", "[SEP]", "[PAD]", "[MASK]", "[UNK]")
# Longer labels are cut (with "…") on the axes; the tooltips give them whole.
MAX_LABEL_CHARS = 16

_STYLE = """
body{font:14px sans-serif;margin:16px;color:#222}
h1{font-size:20px;margin:0 0 6px}
h2{font-size:16px;margin:18px 0 4px}
p{margin:4px 0}
.meta{color:#555}
.tokens span{display:inline-block;margin:1px 2px;padding:0 3px;border:1px solid #ddd;
border-radius:3px}
.tokens span.b{background:#eef4ff}
.tokens small{color:#999}
nav a{margin-right:8px}
.layer{display:flex;flex-wrap:wrap;gap:10px;align-items:flex-start}
figure{margin:0}
figcaption{font-size:12px;text-align:center;color:#333}
svg text{font:11px sans-serif;fill:#222}
svg text.sp{font-weight:bold;fill:#b00}
.m path:hover{stroke:#000;stroke-width:.1}
""".strip()


def _number(value, digits):
    """`0.42` -> ".42", `1.0` -> "1", `0.0` -> "0": compact SVG attribute values."""
    text = ("%%.%df" % digits) % value
    text = text.rstrip("0").rstrip(".") if "." in text else text
    if text.startswith("0."):
        text = text[1:]
    return text or "0"


def _label(token):
    if len(token) > MAX_LABEL_CHARS:
        return token[:MAX_LABEL_CHARS - 1] + "\u2026"
    return token


def _label_width(label):
    """About how wide `label` is, in ems: wide (CJK) characters 1, the others 0.62."""
    return sum(1.0 if ord(c) >= 0x2E80 else 0.62 for c in label)


def estimated_size(num_tokens, num_panels):
    """About how many bytes `render_html` writes for `num_panels` heat maps of `num_tokens`."""
    return num_panels * (num_tokens * num_tokens * 85 + num_tokens * 150 + 400)


def _text_class(token):
    return ' class="sp"' if token in SPECIAL_TOKENS else ""


def panel_geometry(num_tokens, tokens=None):
    """(cell, font, margin): the pixel size of a cell and of the labels, and the label margin.

    Cells shrink from 14 px as the sequence grows (a panel stays about 350 px
    wide at most); the margin holds the longest label at that font size.
    """
    cell = 14 if num_tokens <= 24 else max(4, 336 // num_tokens)
    font = min(11, max(6, cell - 2))
    longest = max([_label_width(_label(t)) for t in (tokens or [])] + [5 * 0.62])
    margin = int(math.ceil(longest * font)) + 6
    return cell, font, margin


def heatmap_svg(tokens, weights, caption, colour=HEAD_COLOUR, element_id=None):
    """One heat map as an `<svg>` element (a str).

    Args:
      tokens: list of n str, the row (query) and column (key) labels.
      weights: array-like [n, n], row i the weights token i gives each token.
      caption: str, the SVG's accessible name (`aria-label`).
      colour: the fill of a cell of weight 1 (its opacity is the weight).
      element_id: (optional) the `id` attribute.

    Returns:
      The SVG markup: labels on the left (queries) and on top (keys, rotated
      a quarter turn), then per cell, row by row, a unit square
      `<path d="M<column> <row>h1v1h-1z">` (in a group scaled to the cell size)
      whose `<title>` is `"query → key: 0.1234"`.
    """
    weights = np.asarray(weights, dtype=np.float64)
    n = len(tokens)
    if weights.shape != (n, n):
        raise ValueError("weights of shape %s for %d tokens" % (weights.shape, n))
    cell, font, margin = panel_geometry(n, tokens)
    size = margin + n * cell + 1
    escaped = [html.escape(t) for t in tokens]
    labels = [html.escape(_label(t)) for t in tokens]
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" role="img" '
           'aria-label="%s"%s>' % (size, size, html.escape(caption),
                                   ' id="%s"' % element_id if element_id else "")]
    style = "" if font == 11 else ' style="font-size:%dpx"' % font
    for i, token in enumerate(tokens):  # rows: the queries
        out.append('<text x="%d" y="%s" text-anchor="end" dy=".35em"%s%s>%s</text>' % (
            margin - 3, _number(margin + (i + 0.5) * cell, 1), _text_class(token), style,
            labels[i]))
    for j, token in enumerate(tokens):  # columns: the keys, read bottom to top
        out.append('<text transform="translate(%s,%d) rotate(-90)" dy=".35em"%s%s>%s</text>' % (
            _number(margin + (j + 0.5) * cell, 1), margin - 3, _text_class(token), style,
            labels[j]))
    out.append('<g transform="translate(%d,%d) scale(%d)">' % (margin, margin, cell))
    out.append('<rect width="%d" height="%d" fill="#fff" stroke="#bbb" stroke-width="%s"/>'
               % (n, n, _number(1.0 / cell, 3)))
    # Cells are transparent unless they say otherwise: most weights are near 0.
    out.append('<g class="m" fill="%s" fill-opacity="0">' % colour)
    for i in range(n):
        for j in range(n):
            value = weights[i, j]
            opacity = _number(min(max(value, 0.0), 1.0), 2)
            # A unit square at column j, row i (a path is shorter markup than a rect).
            out.append('<path d="M%d %dh1v1h-1z"%s><title>%s \u2192 %s: %.4f</title></path>'
                       % (j, i, ' fill-opacity="%s"' % opacity if opacity != "0" else "",
                          escaped[i], escaped[j], value))
    out.append("</g></g></svg>")
    return "".join(out)


def float32_json(array):
    """A nested JSON list of `array`'s values, each the shortest decimal of its float32.

    `np.float32(json.loads(text))` gives back exactly the float32 values.
    """
    array = np.asarray(array, dtype=np.float32)
    if array.ndim == 0:
        return str(array[()]) if np.isfinite(array) else "null"
    return "[" + ",".join(float32_json(part) for part in array) + "]"


def _script_json(text):
    # Inside <script>, "</script>" (or "<!--") in a token would end the block early.
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def attention_json(tokens, attentions, head_indices, info):
    """The data block's JSON: `info`'s keys, `tokens`, `heads` and `attentions`.

    `attentions[layer][k][query][key]` is the weight of head `heads[layer][k]`
    (every head unless the model was pruned), each value the shortest decimal
    of its float32.
    """
    data = dict(info)
    data["tokens"] = list(tokens)
    data["heads"] = [list(heads) for heads in head_indices]
    head = json.dumps(data, ensure_ascii=True, sort_keys=True)
    return _script_json(head[:-1] + ', "attentions": [' +
                        ",".join(float32_json(layer) for layer in attentions) + "]}")


def render_html(tokens, attentions, title, description="", segment_ids=None, notes=(),
                info=None, head_indices=None):
    """The whole page (a str): a heat map per layer for the heads' average and for each head.

    Args:
      tokens: list of n str WordPiece tokens (`[CLS] ... [SEP]`), no padding.
      attentions: one array-like per layer, [num_heads, n, n], of attention
        probabilities `[head][query][key]` (an array [layers, heads, n, n]
        will do).
      title: str, the page's heading (the text shown).
      description: str, a line under the heading (the model's shape).
      segment_ids: (optional) list of n ints; tokens of segment 1 are shaded
        in the token list.
      notes: str lines shown under the description (a truncation, say).
      info: (optional) dict of JSON values written into the data block with
        `tokens`, `heads` and `attentions` (the texts, the model's shape).
      head_indices: (optional) per layer, the head number of each entry of
        that layer's array (a pruned model keeps some of its heads);
        default 0, 1, ...

    Returns:
      The HTML text. Each heat map is an `<svg>` with id `layer-<l>-head-<h>`
      or `layer-<l>-average`; the data block is
      `<script type="application/json" id="attention-data">`.
    """
    n = len(tokens)
    attentions = [np.asarray(layer, dtype=np.float32) for layer in attentions]
    for layer, weights in enumerate(attentions):
        if weights.ndim != 3 or weights.shape[1:] != (n, n):
            raise ValueError("layer %d: attentions of shape %s for %d tokens: expected "
                             "[heads, %d, %d]" % (layer, weights.shape, n, n, n))
    if head_indices is None:
        head_indices = [list(range(weights.shape[0])) for weights in attentions]
    head_indices = [list(heads) for heads in head_indices]
    if [len(heads) for heads in head_indices] != [w.shape[0] for w in attentions]:
        raise ValueError("head_indices %s do not match the attentions' heads %s"
                         % (head_indices, [w.shape[0] for w in attentions]))
    segment_ids = list(segment_ids) if segment_ids is not None else [0] * n
    out = ['<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
           "<title>Attention: %s</title>" % html.escape(title),
           "<style>%s</style></head><body>" % _STYLE,
           "<h1>%s</h1>" % html.escape(title)]
    if description:
        out.append('<p class="meta">%s</p>' % html.escape(description))
    for note in notes:
        out.append('<p class="meta"><b>%s</b></p>' % html.escape(note))
    out.append('<p class="tokens">%s</p>' % "".join(
        '<span%s>%s<small>%d</small></span>' % (' class="b"' if segment_ids[i] else "",
                                                html.escape(t), i)
        for i, t in enumerate(tokens)))
    out.append('<p class="meta">Each heat map: row = the token attending (query), column = '
               'the token attended to (key); the darker the cell, the larger the weight '
               '(0 white, 1 darkest); each row sums to 1. Hover a cell for its value.</p>')
    out.append("<nav>%s</nav>" % "".join(
        '<a href="#layer-%d">layer %d</a>' % (l, l) for l in range(len(attentions))))
    for layer, weights in enumerate(attentions):
        heads = head_indices[layer]
        out.append('<h2 id="layer-%d">Layer %d</h2><div class="layer">' % (layer, layer))
        panels = [("average of the %d heads" % len(heads), "layer-%d-average" % layer,
                   weights.astype(np.float64).mean(axis=0), AVERAGE_COLOUR)]
        panels += [("head %d" % head, "layer-%d-head-%d" % (layer, head), weights[k],
                    HEAD_COLOUR) for k, head in enumerate(heads)]
        for caption, element_id, matrix, colour in panels:
            out.append("<figure>%s<figcaption>%s</figcaption></figure>" % (
                heatmap_svg(tokens, matrix, "layer %d, %s" % (layer, caption), colour,
                            element_id),
                html.escape(caption)))
        out.append("</div>")
    out.append('<script type="application/json" id="attention-data">%s</script>' %
               attention_json(tokens, attentions, head_indices, info or {}))
    out.append("</body></html>\n")
    return "\n".join(out)
