"""Where each document's random draws start, without generating its instances.

Sharded mode runs the original algorithm on a shard with one
`random.Random`: the document shuffle, then one `instances_from_document`
per (dupe pass, document) -- a *unit* -- and the final instance shuffle, all
drawing from the same Mersenne Twister stream. A unit's draws depend on the
draws before it, so the units of one shard can run in parallel only if each
worker knows where in the stream its first unit starts. `RngPlanner` finds
out: it replays the units' control flow on segment lengths only, counting the
32-bit words each draw consumes (`random()` takes 2, `getrandbits(k <= 32)`
1, `randint` / `shuffle` one per try of their rejection loops, as CPython's
`random` module does), and a worker then starts a `random.Random` at that
word (`state_at`) and generates its units exactly as one process would.

The planner's expensive part, the masking of each instance (a shuffle of up
to max_seq_length candidates and the 80/10/10 draws), is a fixed pattern of
"retry until below a threshold" steps, so it runs as one regular expression
over the top 16 bits of each word (a str of code points): thresholds of
these draws are multiples of 2**16, or else their one ambiguous code point
matches nothing and that instance is counted word by word instead.

Whole-word masking (whose candidates depend on the tokens) is not planned.
"""

import array
import bisect
import fractions
import re

import numpy as np

_CHUNK_WORDS = 1 << 16
_BLOCK_STEPS = 8


def _random_bounds(p):
    """Words w1 with `random() < p` for sure, and for sure not, as [0, accept_end) and [reject_start, 2**32).

    random() is N / 2**53 with N = (w1 >> 5) * 2**26 + (w2 >> 6): for x = w1 >> 5,
    N < p * 2**53 for every w2 if x * 2**26 + 2**26 - 1 < p * 2**53, for none if
    x * 2**26 >= p * 2**53.
    """
    bound = fractions.Fraction(p) * 2 ** 53
    accept_x = int((bound - 2 ** 26 + 1) / 2 ** 26)  # about the largest x accepted for sure
    while accept_x >= 0 and accept_x * 2 ** 26 + 2 ** 26 - 1 >= bound:
        accept_x -= 1
    while (accept_x + 1) * 2 ** 26 + 2 ** 26 - 1 < bound:
        accept_x += 1
    reject_x = max(int(bound / 2 ** 26) - 1, 0)
    while reject_x * 2 ** 26 < bound:
        reject_x += 1
    return (accept_x + 1) << 5, reject_x << 5


class _Alphabet(object):
    """Maps each 32-bit word to a code: the interval between consecutive boundaries it is in.

    Every threshold of the patterns is a boundary, so "word < t" is a range of
    codes; with max_seq_length up to 256 there are fewer than 256 codes, one
    Latin-1 character per word.
    """

    def __init__(self, boundaries):
        bounds = sorted(set(boundaries) | {0})
        if len(bounds) > 0xD000:
            raise ValueError("too many thresholds for one alphabet")
        self._bounds = np.array(bounds, np.uint64)
        self._index = {b: i for i, b in enumerate(bounds)}
        # By the top 16 bits: the code, and whether a boundary splits the bucket.
        tops = np.arange(1 << 16, dtype=np.uint64) << np.uint64(16)
        self._by_top = (np.searchsorted(self._bounds, tops, side="right") - 1).astype(np.uint32)
        self._split = np.zeros(1 << 16, bool)
        for b in bounds:
            if b & 0xFFFF:
                self._split[b >> 16] = True

    def code(self, boundary):
        return self._index[boundary]

    def encode(self, words):
        """A str of one code per word of the uint32 array `words`."""
        tops = words >> 16
        codes = self._by_top[tops]
        split = np.flatnonzero(self._split[tops])
        if len(split):
            codes[split] = np.searchsorted(self._bounds, words[split].astype(np.uint64),
                                           side="right") - 1
        if len(self._bounds) <= 256:
            return codes.astype(np.uint8).tobytes().decode("latin-1")
        return codes.astype("<u4").tobytes().decode("utf-32-le")

    @property
    def size(self):
        return len(self._bounds)


def _cls(lo, hi):
    """The regex character class body of the codes [lo, hi] ('' if empty)."""
    if lo > hi:
        return ""

    def char(c):
        return "\\x%02x" % c if c < 256 else "\\u%04x" % c
    return char(lo) if lo == hi else "%s-%s" % (char(lo), char(hi))


def _one(cls):
    return "[%s]" % cls if cls else "(?!)"


def _star(cls):
    return "[%s]*" % cls if cls else ""


class RngPlanner(object):
    """Counts the words of `random.Random` that each unit of a shard consumes.

    Args:
      rng: a `random.Random` in the state right after the shard's document
        shuffle (only read).
      documents: the shard's documents after the shuffle (lists of token-id
        segments, none empty); only their lengths are read.
      max_seq_length, max_predictions_per_seq, masked_lm_prob, short_seq_prob:
        the original's flags.
      vocab_size: int, the number of vocab entries (the random replacement's
        range).
    """

    def __init__(self, rng, documents, max_seq_length, max_predictions_per_seq,
                 masked_lm_prob, short_seq_prob, vocab_size):
        self._source = _Mt19937Words(rng)
        self._sums = []
        for document in documents:
            prefix = [0]
            for segment in document:
                prefix.append(prefix[-1] + len(segment))
            self._sums.append(prefix)
        self._max_num_tokens = max_seq_length - 3
        self._short_seq_prob = short_seq_prob
        self._vocab_size = vocab_size
        # By the number of candidates (tokens - 3); never more than the candidates.
        self._num_to_predict = [
            min(max_predictions_per_seq, max(1, int(round((c + 3) * masked_lm_prob))), c)
            for c in range(max_seq_length - 2)]
        self._margin = 8 * (max_seq_length + 4 * max_predictions_per_seq) + 1024
        # The thresholds: shuffle steps, random() < 0.8 and < 0.5, the vocab draw.
        self._step_threshold = {n: n << (32 - n.bit_length()) for n in range(2, max_seq_length)}
        self._vocab_threshold = vocab_size << (32 - vocab_size.bit_length())
        self._r08 = _random_bounds(0.8)
        self._r05 = _random_bounds(0.5)
        self._alphabet = _Alphabet(list(self._step_threshold.values()) +
                                   [self._vocab_threshold] + list(self._r08) + list(self._r05))
        self._token = None
        self._partial_patterns = {}
        self._shuffle_patterns = {}
        self._token_patterns = {}
        self._snapshots = []   # (position, state) at the start of each chunk
        self._words = array.array("I")
        self._codes = ""
        self._base = 0         # the stream position of self._words[0]
        self._end = 0          # the stream position after the last word drawn
        self.position = 0      # the next word the units would draw
        self.instances = 0     # instances the units planned so far make

    # -- the word stream --
    def _fill(self, need):
        """Makes words [position, position + need) available."""
        if self.position + need <= self._end:
            return
        keep = min(self.position, self._end) - self._base
        words = self._words[keep:]
        codes = [self._codes[keep:]]
        self._base += keep
        while self._base + len(words) < self.position + need:
            self._snapshots.append((self._end, self._source.snapshot()))
            raw = self._source.words(_CHUNK_WORDS)
            chunk = array.array("I")
            chunk.frombytes(raw.tobytes())
            if chunk.itemsize != 4:
                raise RuntimeError("array('I') is not 32-bit on this platform")
            words += chunk
            codes.append(self._alphabet.encode(raw))
            self._end += _CHUNK_WORDS
        codes = "".join(codes)
        if self.position > self._base:  # a jump past the words drawn so far
            keep = self.position - self._base
            words = words[keep:]
            codes = codes[keep:]
            self._base = self.position
        self._words = words
        self._codes = codes

    def _word(self):
        position = self.position
        if position >= self._end:
            self._fill(1)
        self.position = position + 1
        return self._words[position - self._base]

    def _random(self):
        position = self.position
        if position + 2 > self._end:
            self._fill(2)
        words = self._words
        index = position - self._base
        self.position = position + 2
        return (((words[index] >> 5) * 67108864.0 + (words[index + 1] >> 6))
                * (1.0 / 9007199254740992.0))

    def _randint(self, a, b):
        n = b - a + 1
        shift = 32 - n.bit_length()
        position = self.position
        if position >= self._end:
            self._fill(1)
        r = self._words[position - self._base] >> shift
        self.position = position + 1
        while r >= n:
            r = self._word() >> shift
        return a + r

    def state_at(self, position):
        """A `random.Random` state (for `setstate`) at word `position` (>= 0) of the stream."""
        import random  # pylint: disable=g-import-not-at-top
        if not self._snapshots:
            self._fill(1)
        start, state = self._snapshots[0]
        for snapshot in self._snapshots:
            if snapshot[0] > position:
                break
            start, state = snapshot
        rng = random.Random()
        rng.setstate(_Mt19937Words.python_state(state))
        advance_words(rng, position - start)
        return rng.getstate()

    def word_at(self, position):
        """The word at `position`, one at or after the current position."""
        self._fill(position - self.position + 1)
        return self._words[position - self._base]

    # -- the units --
    def plan_document(self, document_index):
        """Consumes the words of `instances_from_document(all_documents, document_index)`.

        The same control flow on segment lengths, with prefix sums: a chunk
        ends at the first segment that brings it to the target length (or at
        the document's end), found by bisection instead of segment by segment.
        """
        sums = self._sums
        prefix = sums[document_index]  # prefix[j] = tokens in segments [0, j)
        max_num_tokens = self._max_num_tokens
        num_documents = len(sums)
        randint = self._randint
        random_ = self._random
        target_seq_length = max_num_tokens
        if random_() < self._short_seq_prob:
            target_seq_length = randint(2, max_num_tokens)
        document_length = len(prefix) - 1
        i = 0
        while i < document_length:
            # The chunk is segments [i, last]: current_length >= target or the end.
            last = bisect.bisect_left(prefix, prefix[i] + target_seq_length, i + 1) - 1
            if last >= document_length:
                last = document_length - 1
            num_segments = last - i + 1
            a_end = 1
            if num_segments >= 2:
                a_end = randint(1, num_segments - 1)
            len_a = prefix[i + a_end] - prefix[i]
            if num_segments == 1 or random_() < 0.5:
                target_b_length = target_seq_length - len_a
                # The draws of instances.py's loop, replayed on segment lengths
                # alone (written twice on purpose: there they build the tokens,
                # inlined for speed, and must stay the original's).
                for _ in range(10):
                    random_document_index = randint(0, num_documents - 1)
                    if random_document_index != document_index:
                        break
                other = sums[random_document_index]
                random_start = randint(0, len(other) - 2)
                # Segments from random_start until tokens_b >= target_b_length.
                stop = bisect.bisect_left(other, other[random_start] + target_b_length,
                                          random_start + 1)
                if stop >= len(other):
                    stop = len(other) - 1
                len_b = other[stop] - other[random_start]
                last -= num_segments - a_end  # the unused segments are "put back"
            else:
                len_b = prefix[last + 1] - prefix[i] - len_a
            # truncate_seq_pair: one random() (2 words) per token cut; which
            # list is cut depends on the lengths only.
            excess = len_a + len_b - max_num_tokens
            if excess > 0:
                self.position += 2 * excess
                len_a, len_b = _truncated_lengths(len_a, len_b, excess)
            self._plan_masking(len_a + len_b)
            self.instances += 1
            i = last + 1

    def _plan_masking(self, num_candidates):
        """The candidate shuffle and the 80/10/10 draws of one instance.

        The shuffle's steps draw randbelow(n) for n = num_candidates .. 2: the
        steps down to n0 = 1 + a multiple of the block size with one pattern
        per num_candidates, the rest with one pattern per n0 (so few long
        patterns are compiled), then the draws of the masked tokens.
        """
        if self.position + self._margin > self._end:
            self._fill(self._margin)
        codes = self._codes
        base = self._base
        n = num_candidates
        low = n - (n - 1) % _BLOCK_STEPS  # the first step of the first whole block
        if n > low:
            pattern = self._partial_patterns.get(n)
            if pattern is None:
                pattern = self._partial_patterns[n] = self._compile_shuffle(n, low)
            match = pattern.match(codes, self.position - base)
            if match is not None:
                self.position = base + match.end()
                n = low
        if n == low and n > 1:
            pattern = self._shuffle_patterns.get(n)
            if pattern is None:
                pattern = self._shuffle_patterns[n] = self._compile_shuffle(n, 1)
            match = pattern.match(codes, self.position - base)
            if match is not None:
                self.position = base + match.end()
                n = 1
        if n > 1:  # an undecided code, or a very long run of retries
            randint = self._randint
            while n > 1:
                randint(0, n - 1)
                n -= 1
            self._fill(self._margin)
            codes = self._codes
            base = self._base
        num_to_predict = self._num_to_predict[num_candidates]
        pattern = self._token_patterns.get(num_to_predict)
        if pattern is None:
            pattern = self._token_patterns[num_to_predict] = self._compile_tokens(num_to_predict)
        match = pattern.match(codes, self.position - base)
        if match is not None:
            self.position = base + match.end()
            return
        for _ in range(num_to_predict):
            if self._random() < 0.8:
                continue
            if self._random() < 0.5:
                continue
            self._randint(0, self._vocab_size - 1)

    def _below(self, threshold):
        """(accept, reject) classes of `word < threshold`."""
        code = self._alphabet.code(threshold)
        return _cls(0, code - 1), _cls(code, self._alphabet.size - 1)

    def _random_classes(self, bounds):
        """(accept, reject) classes of random() < p's first word; the words between match neither."""
        accept_end, reject_start = bounds
        return (_cls(0, self._alphabet.code(accept_end) - 1),
                _cls(self._alphabet.code(reject_start), self._alphabet.size - 1))

    def _compile_shuffle(self, first, stop):
        parts = []
        for n in range(first, stop, -1):
            accept, reject = self._below(self._step_threshold[n])
            parts.append(_star(reject) + _one(accept))
        return re.compile("".join(parts), re.DOTALL)

    def _compile_tokens(self, count):
        if self._token is None:
            a08, r08 = self._random_classes(self._r08)
            a05, r05 = self._random_classes(self._r05)
            av, rv = self._below(self._vocab_threshold)
            # 80% [MASK] (random() < 0.8: 2 words), else 10% keep (random() < 0.5:
            # 2 more), else a random vocab entry (one word per try).
            self._token = "(?:%s.|%s.(?:%s.|%s.%s%s))" % (
                _one(a08), _one(r08), _one(a05), _one(r05), _star(rv), _one(av))
        return re.compile(self._token * count, re.DOTALL)


class _Mt19937Words(object):
    """The 32-bit words a `random.Random` would draw next, made by NumPy's MT19937.

    CPython's `random.Random` is MT19937 with 32-bit outputs; NumPy's
    `MT19937` bit generator, set to the same 624 words and position, gives
    the same outputs (`random_raw`), about 3x faster than
    `getrandbits(32 * n)` and its int-to-bytes conversion.

    Args:
      rng: a `random.Random` (its state is read, not advanced).
    """

    def __init__(self, rng):
        version, internal, _ = rng.getstate()
        if version != 3 or len(internal) != 625:
            raise ValueError("not a Mersenne Twister state of random.Random")
        self._generator = np.random.MT19937()
        self._generator.state = {"bit_generator": "MT19937",
                                 "state": {"key": np.array(internal[:624], np.uint32),
                                           "pos": internal[624]}}

    def words(self, count):
        """The next `count` words, a little-endian uint32 array."""
        return self._generator.random_raw(count).astype("<u4")

    def snapshot(self):
        """The state before the next word, for `python_state`."""
        state = self._generator.state["state"]
        return state["key"].copy(), int(state["pos"])

    @staticmethod
    def python_state(snapshot):
        """A `snapshot` as a `random.Random.setstate` argument."""
        key, pos = snapshot
        return 3, tuple(int(k) for k in key) + (pos,), None


def _truncated_lengths(len_a, len_b, excess):
    """The lengths after `truncate_seq_pair` cut `excess` tokens (the longer list, ties B)."""
    if len_a > len_b:
        steps = min(len_a - len_b, excess)
        len_a -= steps
    else:
        steps = min(len_b - len_a + 1, excess)
        len_b -= steps
    rest = excess - steps
    if rest:
        # Now they alternate, starting with the list that is not shorter (B on a tie).
        first_b = len_a == len_b
        half, odd = divmod(rest, 2)
        len_a -= half + (odd if not first_b else 0)
        len_b -= half + (odd if first_b else 0)
    return len_a, len_b


def advance_words(rng, count):
    """Draws and drops `count` 32-bit words of `rng` (a `random.Random`)."""
    while count > 0:
        step = min(count, _CHUNK_WORDS)
        rng.getrandbits(32 * step)
        count -= step
