"""Runs the original `bert.tokenization` (pip 1.0.4) and writes its output as JSON.

Simple form (one vocab, one text file):

  python -m tests.original.tokenizer_oracle VOCAB TEXTS DO_LOWER_CASE OUT [PRESERVE]

Batch form (one process, so TensorFlow is imported once):

  python -m tests.original.tokenizer_oracle --jobs JOBS_JSON OUT

TEXTS has one JSON value per line: a string, or {"bytes_b64": "..."} for a
bytes input. DO_LOWER_CASE / PRESERVE are "true"/"false" (PRESERVE sets the
absl flag --preserve_unused_tokens). JOBS_JSON is a list of jobs:

  {"kind": "tokenize", "vocab_file", "texts_file", "do_lower_case",
   "preserve_unused_tokens", "steps", "parts"}
                              -> {"vocab": [[token, id], ...],
                                  "full": [[token, ...] per text],
                                  "ids": [[id, ...] or null per text],
                                  "basic": [...], "wordpiece": [...],
                                  "steps": [{step name: output} per text]
                                  (only with "steps": true)}
                                 "parts" (default all four) limits the
                                 outputs to some of full/ids/basic/wordpiece
  {"kind": "chars"}           -> {name: [[first, last], ...]} code-point ranges
                                 where each original predicate is True
  {"kind": "case", "cases": [[do_lower_case, init_checkpoint], ...]}
                              -> [error message or null, ...]
  {"kind": "bench", "vocab_file", "texts_file", "do_lower_case", "repeats"}
                              -> {"seconds": [...], "num_tokens": n,
                                  "num_chars": n}  (FullTokenizer, fresh
                                  tokenizer per repeat)

The simple form writes the "tokenize" result. OUT of the batch form holds the
list of job results.
"""

from tests.original import shim  # noqa: F401  (must come first)

import base64  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

from absl import flags  # noqa: E402
from bert import tokenization  # noqa: E402

from tests.original import code_point_ranges  # noqa: E402


_PARTS = ("full", "ids", "basic", "wordpiece")


def _bool(value):
    if isinstance(value, bool):
        return value
    return str(value).lower() in ("1", "true", "yes")


def read_texts(texts_file):
    texts = []
    with open(texts_file, encoding="utf-8") as f:
        for line in f:
            value = json.loads(line)
            if isinstance(value, dict):
                value = base64.b64decode(value["bytes_b64"])
            texts.append(value)
    return texts


def run_tokenize(vocab_file, texts_file, do_lower_case, preserve_unused_tokens,
                 steps=False, parts=_PARTS):
    flags.FLAGS.preserve_unused_tokens = _bool(preserve_unused_tokens)
    do_lower_case = _bool(do_lower_case)
    texts = read_texts(texts_file)
    full = tokenization.FullTokenizer(vocab_file, do_lower_case=do_lower_case)
    basic = tokenization.BasicTokenizer(do_lower_case=do_lower_case,
                                        vocab=full.vocab)
    wordpiece = tokenization.WordpieceTokenizer(vocab=full.vocab)
    result = {"vocab": list(full.vocab.items())}
    result.update((part, []) for part in parts)
    for text in texts:
        if "full" in parts or "ids" in parts:
            tokens = full.tokenize(text)
        if "full" in parts:
            result["full"].append(tokens)
        if "ids" in parts:
            try:
                result["ids"].append(full.convert_tokens_to_ids(tokens))
            except KeyError:
                result["ids"].append(None)
        if "basic" in parts:
            result["basic"].append(basic.tokenize(text))
        if "wordpiece" in parts:
            result["wordpiece"].append(wordpiece.tokenize(text))
        if steps:
            # The BasicTokenizer's private steps, each on the raw text.
            unicode_text = tokenization.convert_to_unicode(text)
            result.setdefault("steps", []).append({
                "clean_text": basic._clean_text(unicode_text),
                "tokenize_chinese_chars":
                    basic._tokenize_chinese_chars(unicode_text),
                "run_strip_accents":
                    basic._run_strip_accents(unicode_text.lower()),
                "run_split_on_punc": basic._run_split_on_punc(unicode_text),
                "whitespace_tokenize":
                    tokenization.whitespace_tokenize(unicode_text),
            })
    return result


def run_chars():
    chinese = tokenization.BasicTokenizer()._is_chinese_char
    return {
        "whitespace": code_point_ranges(lambda cp: tokenization._is_whitespace(chr(cp))),
        "control": code_point_ranges(lambda cp: tokenization._is_control(chr(cp))),
        "punctuation": code_point_ranges(lambda cp: tokenization._is_punctuation(chr(cp))),
        "chinese": code_point_ranges(chinese),
    }


def run_case(cases):
    out = []
    for do_lower_case, init_checkpoint in cases:
        try:
            tokenization.validate_case_matches_checkpoint(do_lower_case,
                                                          init_checkpoint)
            out.append(None)
        except ValueError as e:
            out.append(str(e))
    return out


def run_bench(vocab_file, texts_file, do_lower_case, repeats):
    flags.FLAGS.preserve_unused_tokens = False
    texts = read_texts(texts_file)
    seconds = []
    num_tokens = 0
    for _ in range(int(repeats)):
        tokenizer = tokenization.FullTokenizer(vocab_file,
                                               do_lower_case=_bool(do_lower_case))
        start = time.perf_counter()
        num_tokens = 0
        for text in texts:
            num_tokens += len(tokenizer.tokenize(text))
        seconds.append(time.perf_counter() - start)
    return {"seconds": seconds, "num_tokens": num_tokens,
            "num_chars": sum(len(t) for t in texts)}


def run_job(job):
    kind = job["kind"]
    if kind == "tokenize":
        return run_tokenize(job["vocab_file"], job["texts_file"],
                            job["do_lower_case"],
                            job.get("preserve_unused_tokens", False),
                            job.get("steps", False),
                            tuple(job.get("parts", _PARTS)))
    if kind == "chars":
        return run_chars()
    if kind == "case":
        return run_case(job["cases"])
    if kind == "bench":
        return run_bench(job["vocab_file"], job["texts_file"],
                         job["do_lower_case"], job.get("repeats", 1))
    raise ValueError("unknown job kind %r" % kind)


def main(argv):
    if len(argv) == 3 and argv[0] == "--jobs":
        with open(argv[1], encoding="utf-8") as f:
            jobs = json.load(f)
        result = [run_job(job) for job in jobs]
        out = argv[2]
    elif len(argv) in (4, 5):
        preserve = argv[4] if len(argv) == 5 else False
        result = run_tokenize(argv[0], argv[1], argv[2], preserve)
        out = argv[3]
    else:
        raise SystemExit(__doc__)
    with open(out, "w", encoding="utf-8") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main(sys.argv[1:])
