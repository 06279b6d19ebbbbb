"""Writing: records round-robin over TFRecord files, exact mode's record buffer, progress.

The writing half of the original's `write_instance_to_example_files`
(P:92-162, P = pip bert-tensorflow 1.0.4) and `main`'s "Writing to output
files" log (P:430-432). TFRecord files are written by
`tfrecord.TFRecordWriter` (NumPy CRC32C), byte-identical to
`tf.io.TFRecordWriter`'s: with local files the process never imports
TensorFlow.
"""

import array
import bisect
import os
import tempfile
import time

from absl import logging

from bert_tf import fileio
from bert_tf import logs
from bert_tf.data import tfrecord
from bert_tf.tasks.pretraining.data import records

NUM_LOGGED_EXAMPLES = 20
_PROGRESS_SECONDS = 10.0


# --------------------------------------------------------------------------
# Buffering (exact mode) and writing.
# --------------------------------------------------------------------------

class RecordBuffer(object):
    """Append-only store of serialized records with random access.

    Keeps records in memory up to `max_memory_bytes`, then moves whole chunks
    to a temporary spill file in `spill_dir`, so exact mode's final shuffle
    needs about 8 bytes of memory per instance beyond the budget.
    """

    _CHUNK_BYTES = 32 << 20

    def __init__(self, max_memory_bytes, spill_dir):
        self._max_memory = max_memory_bytes
        self._spill_dir = spill_dir
        self._offsets = array.array("Q", [0])
        self._chunks = []          # sealed in-memory chunks (bytes)
        self._chunk_starts = []    # global offset of each sealed chunk
        self._current = bytearray()
        self._current_start = 0
        self._memory = 0
        self._spill = None
        self._spilled = 0          # bytes [0, _spilled) are in the spill file

    def __len__(self):
        return len(self._offsets) - 1

    def append(self, record):
        self._current += record
        self._offsets.append(self._offsets[-1] + len(record))
        if len(self._current) >= self._CHUNK_BYTES:
            self._seal()

    def _seal(self):
        chunk = bytes(self._current)
        self._chunks.append(chunk)
        self._chunk_starts.append(self._current_start)
        self._current_start += len(chunk)
        self._current = bytearray()
        self._memory += len(chunk)
        while self._memory > self._max_memory and self._chunks:
            oldest = self._chunks.pop(0)
            self._chunk_starts.pop(0)
            if self._spill is None:
                self._spill = tempfile.TemporaryFile(
                    prefix="create_pretraining_data-", dir=self._spill_dir)
            self._spill.write(oldest)
            self._spilled += len(oldest)
            self._memory -= len(oldest)

    @property
    def spilled_bytes(self):
        return self._spilled

    def get(self, index):
        start, end = self._offsets[index], self._offsets[index + 1]
        if start >= self._current_start:
            return bytes(self._current[start - self._current_start:end - self._current_start])
        if start >= self._spilled:
            c = bisect.bisect_right(self._chunk_starts, start) - 1
            base = self._chunk_starts[c]
            return self._chunks[c][start - base:end - base]
        if self._spill is not None:
            self._spill.flush()
        return os.pread(self._spill.fileno(), end - start, start)

    def close(self):
        if self._spill is not None:
            self._spill.close()
            self._spill = None
        self._chunks = []
        self._current = bytearray()


class RoundRobinWriter(object):
    """Writes records round-robin over TFRecord files, atomically.

    Each output is written to `<name>.tmp-<pid>` and renamed when `close()`
    succeeds; `abort()` removes the temporaries. The first 20 records are
    logged as the original logs its first 20 instances. The files are
    `tf.io.TFRecordWriter`'s bytes (`tfrecord.TFRecordWriter`); TensorFlow is
    imported only for a "://" path.
    """

    def __init__(self, output_files, vocab_info):
        self._vocab_info = vocab_info
        self.output_files = list(output_files)
        # Port note: written under a temporary name and renamed at the end, so
        # a failed or interrupted run leaves no partial output (the original
        # leaves whatever it had written).
        self._tmp_files = [fileio.temporary_name(f) for f in self.output_files]
        self._writers = []
        try:
            for f, tmp in zip(self.output_files, self._tmp_files):
                parent = os.path.dirname(f)
                # Port note: a missing output directory is created.
                if parent and not fileio.exists(parent):
                    fileio.makedirs(parent)
                self._writers.append(tfrecord.TFRecordWriter(tmp, name=f))
        except Exception:
            self.abort()
            raise
        self._writer_index = 0
        self.total_written = 0

    def write(self, record):
        self._writers[self._writer_index].write(record)
        self._writer_index = (self._writer_index + 1) % len(self._writers)
        if self.total_written < NUM_LOGGED_EXAMPLES:
            self._log_example(record)
        self.total_written += 1

    def write_framed(self, framed, lengths):
        """Writes records that `tfrecord.frame_records` framed, in order.

        Args:
          framed: bytes, the framed records back to back.
          lengths: sequence of int, the framed length of each (16 + its data).
        """
        view = memoryview(framed)
        num_files = len(self._writers)
        offset = 0
        for length in lengths[:max(0, NUM_LOGGED_EXAMPLES - self.total_written)]:
            # The record is the framed bytes minus length, its CRC and the data's CRC.
            self._log_example(bytes(view[offset + 12:offset + length - 4]))
            offset += length
        if num_files == 1:
            self._writers[0].write_framed(framed)
        else:
            parts = [[] for _ in range(num_files)]
            index = self._writer_index
            offset = 0
            for length in lengths:
                parts[index].append(view[offset:offset + length])
                offset += length
                index = index + 1 if index + 1 < num_files else 0
            for writer, part in zip(self._writers, parts):
                if part:
                    writer.write_framed(b"".join(part))
        self._writer_index = (self._writer_index + len(lengths)) % num_files
        self.total_written += len(lengths)

    def _log_example(self, record):
        records.log_example(record, self._vocab_info)

    def close(self):
        for writer in self._writers:
            writer.close()
        self._writers = []
        for tmp, final in zip(self._tmp_files, self.output_files):
            fileio.rename(tmp, final)
        logs.result("Wrote %d total instances", self.total_written)

    def abort(self):
        for writer in self._writers:
            try:
                writer.close()
            except Exception:  # pylint: disable=broad-except
                pass
        self._writers = []
        for tmp in self._tmp_files:
            fileio.remove_quietly(tmp)


def log_outputs(output_files):
    """`main`'s list of the output files (P:430-432)."""
    logging.info("*** Writing to output files ***")
    for output_file in output_files:
        logging.info("  %s", output_file)


# --------------------------------------------------------------------------
# Progress logging.
# --------------------------------------------------------------------------

class Progress(object):
    """Logs rate and ETA every few seconds."""

    def __init__(self, what, total=None):
        self._what = what
        self._total = total
        self._start = time.perf_counter()
        self._last = self._start

    def update(self, done, extra=""):
        now = time.perf_counter()
        if now - self._last < _PROGRESS_SECONDS:
            return
        self._last = now
        rate = done / max(now - self._start, 1e-9)
        if self._total:
            eta = (self._total - done) / rate if rate > 0 else float("inf")
            logging.info("%s: %d/%d (%.1f%%), %.0f/s, ETA %.0fs%s", self._what, done,
                         self._total, 100.0 * done / self._total, rate, eta, extra)
        else:
            logging.info("%s: %d, %.0f/s%s", self._what, done, rate, extra)
