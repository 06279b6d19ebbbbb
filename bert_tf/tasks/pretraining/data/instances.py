"""Instance creation: the original algorithm on token ids, with the original's random draws.

Ports, on token ids (P = pip bert-tensorflow 1.0.4, G = GitHub HEAD eedf571):
`create_training_instances`' document shuffle and dupe loop (P:204-215;
`generate`), `create_instances_from_document` (P:219-331),
`truncate_seq_pair` (P:391-406) and `create_masked_lm_predictions`
(P:338-388, G's whole-word masking included), all in `InstanceGenerator`.
One `random.Random` drives everything, with the original's calls in the
original's order; the RNG helpers inline `Random._randbelow` (checked against
`random.Random` at start-up; if they ever disagree, the stock methods are
used).
"""

import hashlib
import random

from absl import logging

from bert_tf.tasks.pretraining.data import records


# --------------------------------------------------------------------------
# Random numbers: exactly `random.Random`'s, with less call overhead.
# --------------------------------------------------------------------------

def _inline_randbelow(getrandbits, n):
    """`Random._randbelow_with_getrandbits(n)` of CPython 3.8-3.13."""
    k = n.bit_length()
    r = getrandbits(k)
    while r >= n:
        r = getrandbits(k)
    return r


def _check_inline_rng():
    """True if the inlined helpers reproduce this Python's `random.Random`."""
    for seed in (0, 12345):
        a, b = random.Random(seed), random.Random(seed)
        for n in (1, 2, 3, 7, 64, 65, 1000, 30522):
            if a.randint(5, 5 + n - 1) != 5 + _inline_randbelow(b.getrandbits, n):
                return False
        steps = _shuffle_steps(64)
        for n in (0, 1, 2, 5, 33, 64, 130):
            x, y = list(range(n)), list(range(n))
            a.shuffle(x)
            _shuffle_with(b.getrandbits, y)
            a.shuffle(x)
            _shuffle_with(b.getrandbits, y, steps)
            if x != y:
                return False
        if a.random() != b.random():
            return False
    return True


def _shuffle_with(getrandbits, x, steps=None):
    """`Random.shuffle(x)` of CPython 3.8-3.13 for a given `getrandbits`.

    `steps`, if given, is `_shuffle_steps(m)` for some m >= len(x): the
    (i, i + 1, (i + 1).bit_length()) triples precomputed.
    """
    if steps is None or len(x) > len(steps) + 1:
        for i in range(len(x) - 1, 0, -1):
            n = i + 1
            k = n.bit_length()
            j = getrandbits(k)
            while j >= n:
                j = getrandbits(k)
            x[i], x[j] = x[j], x[i]
        return
    for i, n, k in steps[len(steps) + 1 - len(x):]:
        j = getrandbits(k)
        while j >= n:
            j = getrandbits(k)
        x[i], x[j] = x[j], x[i]


def _shuffle_steps(max_len):
    """[(i, i + 1, (i + 1).bit_length()) for i = max_len - 1 down to 1]."""
    return [(i, i + 1, (i + 1).bit_length()) for i in range(max_len - 1, 0, -1)]


_INLINE_RNG_OK = None


def inline_rng_ok():
    global _INLINE_RNG_OK  # a cache of a fact about this Python, not state
    if _INLINE_RNG_OK is None:
        _INLINE_RNG_OK = _check_inline_rng()
        if not _INLINE_RNG_OK:
            logging.warning("random.Random differs from the inlined helpers on this "
                            "Python; using the slower stock methods.")
    return _INLINE_RNG_OK


def shard_seed(random_seed, shard_index):
    """The seed of shard `shard_index` in sharded mode (a 64-bit int)."""
    digest = hashlib.sha256(b"bert_tf.create_pretraining_data:%d:%d"
                            % (random_seed, shard_index)).digest()
    return int.from_bytes(digest[:8], "little")


# --------------------------------------------------------------------------
# Instance creation: the original algorithm on token ids.
# --------------------------------------------------------------------------

class InstanceGenerator(object):
    """Creates serialized instances from documents, with the original's RNG calls.

    Args:
      rng: a `random.Random`, used exactly as the original uses its `rng`.
      vocab_info: a `tokens.VocabInfo`.
      serializer: a `records.ExampleSerializer`, or None to emit raw tuples.
      max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob,
        do_whole_word_mask: the original's flags.
    """

    def __init__(self, rng, vocab_info, serializer, max_seq_length,
                 max_predictions_per_seq, masked_lm_prob, short_seq_prob,
                 do_whole_word_mask=False):
        self.rng = rng
        self._random = rng.random
        self._getrandbits = rng.getrandbits
        self._inline = inline_rng_ok()
        self._vocab_info = vocab_info
        self._serializer = serializer
        self.max_seq_length = max_seq_length
        self._max_num_tokens = max_seq_length - 3
        self._short_seq_prob = short_seq_prob
        self._do_whole_word_mask = do_whole_word_mask
        self._num_to_predict = [
            min(max_predictions_per_seq, max(1, int(round(n * masked_lm_prob))))
            for n in range(max_seq_length + 1)]
        self._positions = list(range(max_seq_length + 1))
        self._steps = _shuffle_steps(max_seq_length)

    # -- RNG helpers (identical draws to rng.randint / rng.shuffle) --
    def _randint(self, a, b):
        if not self._inline:
            return self.rng.randint(a, b)
        n = b - a + 1
        k = n.bit_length()
        getrandbits = self._getrandbits
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        return a + r

    def shuffle(self, x):
        """`rng.shuffle(x)`."""
        if self._inline:
            _shuffle_with(self._getrandbits, x, self._steps)
        else:
            self.rng.shuffle(x)

    def shuffle_documents(self, all_documents):
        self.shuffle(all_documents)

    def instances_from_document(self, all_documents, document_index, emit):
        """`create_instances_from_document` (P:219-331 [G:223-335]).

        Calls `emit(record)` for each instance, where record is the serialized
        Example (or, without a serializer, the tuple (input_ids, len_a, len_b,
        masked_lm_positions, masked_lm_ids, is_random_next)).
        """
        document = all_documents[document_index]
        random_ = self._random
        randint = self._randint
        max_num_tokens = self._max_num_tokens
        num_documents = len(all_documents)

        target_seq_length = max_num_tokens
        if random_() < self._short_seq_prob:
            target_seq_length = randint(2, max_num_tokens)

        current_chunk = []
        current_length = 0
        i = 0
        document_length = len(document)
        while i < document_length:
            segment = document[i]
            current_chunk.append(segment)
            current_length += len(segment)
            if i == document_length - 1 or current_length >= target_seq_length:
                num_segments = len(current_chunk)
                a_end = 1
                if num_segments >= 2:
                    a_end = randint(1, num_segments - 1)
                tokens_a = []
                for j in range(a_end):
                    tokens_a += current_chunk[j]
                tokens_b = []
                if num_segments == 1 or random_() < 0.5:
                    is_random_next = True
                    target_b_length = target_seq_length - len(tokens_a)
                    # rng_plan.py replays these same draws (without building the
                    # tokens) to find where a document's draws start; written twice
                    # on purpose: inlined here, the draws are the original's, in its
                    # order, at full speed.
                    for _ in range(10):
                        random_document_index = randint(0, num_documents - 1)
                        if random_document_index != document_index:
                            break
                    random_document = all_documents[random_document_index]
                    random_start = randint(0, len(random_document) - 1)
                    for j in range(random_start, len(random_document)):
                        tokens_b += random_document[j]
                        if len(tokens_b) >= target_b_length:
                            break
                    # The unused segments are "put back".
                    i -= num_segments - a_end
                else:
                    is_random_next = False
                    for j in range(a_end, num_segments):
                        tokens_b += current_chunk[j]

                # truncate_seq_pair (P:391-406), on index ranges: while too
                # long, cut the longer list (ties -> tokens_b), at the front or
                # the back by one rng.random() each.
                a_lo, a_hi = 0, len(tokens_a)
                b_lo, b_hi = 0, len(tokens_b)
                while (a_hi - a_lo) + (b_hi - b_lo) > max_num_tokens:
                    if a_hi - a_lo > b_hi - b_lo:
                        if random_() < 0.5:
                            a_lo += 1
                        else:
                            a_hi -= 1
                    else:
                        if random_() < 0.5:
                            b_lo += 1
                        else:
                            b_hi -= 1
                if a_lo or a_hi != len(tokens_a):
                    tokens_a = tokens_a[a_lo:a_hi]
                if b_lo or b_hi != len(tokens_b):
                    tokens_b = tokens_b[b_lo:b_hi]
                assert tokens_a and tokens_b
                emit(self._masked_instance(tokens_a, tokens_b, is_random_next))
                current_chunk = []
                current_length = 0
            i += 1

    def _masked_instance(self, tokens_a, tokens_b, is_random_next):
        """Builds [CLS] A [SEP] B [SEP] and runs create_masked_lm_predictions."""
        info = self._vocab_info
        len_a, len_b = len(tokens_a), len(tokens_b)
        tokens = [info.cls_id]
        tokens += tokens_a
        tokens.append(info.sep_id)
        tokens += tokens_b
        tokens.append(info.sep_id)
        num_tokens = len_a + len_b + 3
        num_to_predict = self._num_to_predict[num_tokens]
        random_ = self._random
        getrandbits = self._getrandbits
        inline = self._inline
        vocab_ids = info.vocab_ids
        vocab_size = len(vocab_ids)
        vocab_bits = vocab_size.bit_length()
        mask_id = info.mask_id
        masked = []  # (position, original id)

        def mask(index):
            # 80% [MASK], 10% keep, 10% a random vocab entry (any of them,
            # [PAD] and [unused*] included), drawn per token as the original.
            masked.append((index, tokens[index]))
            if random_() < 0.8:
                tokens[index] = mask_id
            elif random_() < 0.5:
                pass  # keep the original token
            else:
                if inline:  # rng.randint(0, vocab_size - 1), inlined
                    r = getrandbits(vocab_bits)
                    while r >= vocab_size:
                        r = getrandbits(vocab_bits)
                else:
                    r = self.rng.randint(0, vocab_size - 1)
                tokens[index] = vocab_ids[r]

        if not self._do_whole_word_mask:
            positions = self._positions
            cand_indexes = positions[1:len_a + 1] + positions[len_a + 2:num_tokens - 1]
            self.shuffle(cand_indexes)
            chosen = cand_indexes[:num_to_predict]
            # The positions are distinct, so the original ids can be read
            # before any is replaced; the draws stay in the shuffled order.
            masked_lm_positions = sorted(chosen)
            masked_lm_ids = [tokens[i] for i in masked_lm_positions]
            if inline:
                for index in chosen:
                    # mask(index), inlined (the hottest loop).
                    if random_() < 0.8:
                        tokens[index] = mask_id
                    elif random_() >= 0.5:
                        r = getrandbits(vocab_bits)
                        while r >= vocab_size:
                            r = getrandbits(vocab_bits)
                        tokens[index] = vocab_ids[r]
            else:
                for index in chosen:
                    mask(index)
        else:
            # G:346-406: a "##" piece joins the previous candidate group;
            # [CLS]/[SEP] are skipped without closing the group.
            is_subword = info.is_subword
            cand_indexes = []
            for index in range(1, num_tokens - 1):
                if index == len_a + 1:
                    continue
                if cand_indexes and is_subword[tokens[index]]:
                    cand_indexes[-1].append(index)
                else:
                    cand_indexes.append([index])
            self.shuffle(cand_indexes)
            # Groups are disjoint, so the original's "any index covered" test
            # never fires; only the size test can skip a group.
            count = 0
            for index_set in cand_indexes:
                if count >= num_to_predict:
                    break
                if count + len(index_set) > num_to_predict:
                    continue
                for index in index_set:
                    mask(index)
                    count += 1
            masked.sort()
            masked_lm_positions = [m[0] for m in masked]
            masked_lm_ids = [m[1] for m in masked]
        if self._serializer is None:
            return (tokens, len_a, len_b, masked_lm_positions, masked_lm_ids, is_random_next)
        return self._serializer.serialize(tokens, len_a, len_b, masked_lm_positions,
                                          masked_lm_ids, is_random_next)


def generate(generator, all_documents, dupe_factor, emit, progress=None):
    """The document shuffle and the dupe loop of `create_training_instances`."""
    generator.shuffle_documents(all_documents)
    num_documents = len(all_documents)
    done = 0
    for _ in range(dupe_factor):
        for document_index in range(num_documents):
            generator.instances_from_document(all_documents, document_index, emit)
            done += 1
            if progress is not None and not done % 256:
                progress(done)


def new_generator(rng, vocab_info, o):
    """The `InstanceGenerator` of the options `o` (the original flags), serializing."""
    return InstanceGenerator(
        rng, vocab_info, records.ExampleSerializer(o["max_seq_length"],
                                                   o["max_predictions_per_seq"],
                                                   vocab_info.max_id),
        o["max_seq_length"], o["max_predictions_per_seq"], o["masked_lm_prob"],
        o["short_seq_prob"], o["do_whole_word_mask"])
