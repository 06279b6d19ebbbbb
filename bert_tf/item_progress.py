"""Progress lines for long counted work (examples, features, batches): count, rate, ETA.

`ItemProgress` logs, through absl at INFO,

  `<what>: <done>/<total> <unit>, <rate> <unit>/s, elapsed <time>, ETA <time>`

at most every `every` items or every `seconds` (10 s by default), whichever
comes first, and a last line, ending in `done`, when the count reaches
`total` or the work ends (`finish`, or leaving the `with` block). Without a
total the lines carry no ETA. A run's phases without a count (an export's
checkpoint, trace, save) get one line each from `PhaseLog`, and the first
call of a compiled step, which traces it, one line before it (`log_tracing`).

Pure Python and absl: the data modules, which stand below training, use it
as the trainer does.
"""

import math
import time

from absl import logging

# A line at least this often while the count moves (read when a progress starts).
PROGRESS_SECONDS = 10.0

_DEFAULT = object()


def format_duration(seconds):
    """`3725` -> `"1h02m05s"`; None or inf -> `"?"`."""
    if seconds is None or not math.isfinite(seconds):
        return "?"
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return "%dh%02dm%02ds" % (hours, minutes, seconds)
    if minutes:
        return "%dm%02ds" % (minutes, seconds)
    return "%ds" % seconds


def _phase_duration(seconds):
    """Tenths of a second below a minute (a phase is often short), else `format_duration`."""
    return "%.1fs" % seconds if seconds < 59.95 else format_duration(seconds)


def format_rate(rate):
    """Three significant digits below 100 (`0.0412`, `12.3`), whole numbers above (`3941`)."""
    return "%.0f" % rate if rate >= 100 else "%.3g" % rate


class ItemProgress(object):
    """Logs the progress of `total` items (see the module docstring).

    Args:
      what: the line's prefix: what is being counted into or done (a file
        name, "evaluation").
      total: int, the number of items, or None when unknown (no ETA).
      unit: the items' plural name ("examples", "batches").
      every: log when the count has grown by this many since the last line
        (None: by time only).
      seconds: log when this many seconds have passed since the last line
        (default `PROGRESS_SECONDS`; None: by count only).
      clock: `() -> seconds`, for tests; `time.monotonic` by default.

    Example:
      with ItemProgress("train.tf_record", len(examples), "examples") as progress:
          for example in examples:
              ...
              progress.add()
    """

    def __init__(self, what, total=None, unit="items", every=None, seconds=_DEFAULT,
                 clock=time.monotonic):
        if every is not None and every < 1:
            raise ValueError("every must be positive, got %r" % (every,))
        self.what = what
        self.total = None if total is None else int(total)
        self.unit = unit
        self.every = every
        self.seconds = PROGRESS_SECONDS if seconds is _DEFAULT else seconds
        self._clock = clock
        self.start_time = clock()
        self.done = 0
        self.finished = False
        self._logged_done = 0
        self._logged_time = self.start_time

    @property
    def elapsed(self):
        return self._clock() - self.start_time

    def add(self, count=1, detail=None):
        """Counts `count` more items; see `update`."""
        return self.update(self.done + count, detail)

    def update(self, done, detail=None):
        """Sets the count to `done` and logs a line if one is due.

        Args:
          done: the number of items done so far.
          detail: optional text shown after the count, e.g. "1234 features".

        Returns:
          bool, whether a line was logged.
        """
        self.done = int(done)
        if self.finished:
            return False
        if self.total is not None and self.done >= self.total:
            return self.finish(detail)
        now = self._clock()
        due = ((self.every is not None and self.done - self._logged_done >= self.every)
               or (self.seconds is not None and now - self._logged_time >= self.seconds))
        if not due:
            return False
        self._log(now, detail, last=False)
        return True

    def finish(self, detail=None):
        """Logs the last line (once): the count, the average rate, `done`."""
        if self.finished:
            return False
        self.finished = True
        self._log(self._clock(), detail, last=True)
        return True

    def line(self, now, detail=None, last=False):
        """The progress line at clock time `now` (without logging it)."""
        elapsed = now - self.start_time
        rate = self.done / elapsed if elapsed > 0 else float("inf")
        count = ("%d/%d" % (self.done, self.total) if self.total is not None
                 else "%d" % self.done)
        text = "%s: %s %s%s, %s %s/s, elapsed %s" % (
            self.what, count, self.unit, " (%s)" % detail if detail else "",
            format_rate(rate) if math.isfinite(rate) else "?", self.unit,
            format_duration(elapsed))
        if last:
            return text + ", done"
        if self.total is not None:
            remaining = (self.total - self.done) / rate if rate > 0 else None
            text += ", ETA %s" % format_duration(remaining)
        return text

    def _log(self, now, detail, last):
        self._logged_done = self.done
        self._logged_time = now
        logging.info("%s", self.line(now, detail, last))

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.finish()
        return False


def log_tracing(what):
    """One line before the first call of a compiled step: `<what>: tracing the step (...)`.

    TensorFlow traces (and with XLA compiles) a `tf.function` on its first
    call: seconds to minutes in which no step ends and no progress line is
    due, so the wait is said before it.
    """
    logging.info("%s: tracing the step (its first call builds the graph; the next progress "
                 "line comes after it)", what)


class PhaseLog(object):
    """One line per phase of a run without a count: `<what>: <phase> (<time>, elapsed <time>)`.

    Example:
      phases = PhaseLog("export")
      model = load_model(...)
      phases.done("checkpoint %s loaded", prefix)
    """

    def __init__(self, what, clock=time.monotonic):
        self.what = what
        self._clock = clock
        self.start_time = self._last = clock()

    def done(self, message, *args):
        """Logs that the phase `message % args` ended, with its time and the run's."""
        now = self._clock()
        logging.info("%s: %s (%s, elapsed %s)", self.what, message % args if args else message,
                     _phase_duration(now - self._last), _phase_duration(now - self.start_time))
        self._last = now
