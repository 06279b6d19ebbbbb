"""A small SQuAD-layout task of real English for the SQuAD tests (the demo corpus's paragraphs)."""

import json
import random
import re

from bert_tf import fileio
from bert_tf.data import demo_corpus


def write_squad_task(path, num_questions=400, seed=12345, version_2_with_negative=False,
                     first_paragraph=0):
    """Writes a small real-text reading-comprehension set in SQuAD's JSON layout.

    Each context is a paragraph of the pydoc corpus; each question is one of
    its sentences with a word replaced by "what" ("The for statement is used
    to iterate over the elements of what ?"), answered by that word at its
    character offset. With `version_2_with_negative`, every third question
    comes from another paragraph and has no answer (`is_impossible`).

    Args:
      path: the JSON file to write (atomically).
      num_questions: int, questions in all.
      seed: int; the same seed writes the same file.
      version_2_with_negative: bool, SQuAD 2.0 (unanswerable questions).
      first_paragraph: int, the first paragraph used (so two calls can
        write a train and a dev set from different text).

    Returns:
      The number of questions written.
    """
    rng = random.Random(seed)
    word = re.compile(r"[A-Za-z]{4,}")
    paragraphs = [p for p in demo_corpus.pydoc_documents("paragraph")
                  if 2 <= len(p) <= 8 and all(len(s.split()) <= 40 for s in p)]
    paragraphs = paragraphs[first_paragraph:]
    data, count, index = [], 0, 0
    while count < num_questions and index < len(paragraphs):
        sentences = paragraphs[index]
        index += 1
        context = " ".join(sentences)
        qas = []
        for s_index, sentence in enumerate(sentences):
            if count + len(qas) >= num_questions:
                break
            qid = "q%05d" % (count + len(qas))
            if version_2_with_negative and (count + len(qas)) % 3 == 2:
                other = paragraphs[rng.randrange(len(paragraphs))]
                candidates = [m for s in other for m in word.finditer(s)]
                if other is sentences or not candidates:
                    continue
                match = rng.choice(candidates)
                source = match.string
                question = source[:match.start()] + "what" + source[match.end():]
                qas.append({"id": qid, "question": question, "answers": [],
                            "is_impossible": True})
                continue
            matches = list(word.finditer(sentence))
            if not matches:
                continue
            match = rng.choice(matches)
            question = sentence[:match.start()] + "what" + sentence[match.end():]
            start = len(" ".join(sentences[:s_index])) + (1 if s_index else 0) + match.start()
            assert context[start:start + len(match.group())] == match.group()
            qa = {"id": qid, "question": question,
                  "answers": [{"text": match.group(), "answer_start": start}]}
            if version_2_with_negative:
                qa["is_impossible"] = False
            qas.append(qa)
        if qas:
            data.append({"title": "pydoc-%d" % index,
                         "paragraphs": [{"context": context, "qas": qas}]})
            count += len(qas)
    dataset = {"version": "v2.0" if version_2_with_negative else "1.1", "data": data}
    fileio.write_text(path, json.dumps(dataset, indent=1) + "\n")
    return count
